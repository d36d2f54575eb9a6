#!/bin/sh
# perf launched by Open MPI's mpirun: rendezvous through MPI (the
# MPI-enabled build), and through the TCP root with the rank read from
# OMPI_COMM_WORLD_* (the plain build).  Skipped when mpirun is missing.
. "$(dirname "$0")/perf_lib.sh"
command -v mpirun >/dev/null || skip "mpirun (Open MPI) not installed"
MPIRUN="mpirun --oversubscribe --allow-run-as-root"
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1

MPIBIN=""
MPIBUILD=0
grep -q '^NCD_WITH_MPI:BOOL=ON' "${NCD_BUILD_DIR:-.}/CMakeCache.txt" 2>/dev/null && MPIBUILD=1
[ $MPIBUILD = 1 ] && MPIBIN=$NCD_BIN
[ -z "$MPIBIN" ] && for b in "${NCD_BUILD_DIR:-}/tests/nccl-doctor-mpi" "${NCD_BUILD_DIR:-}/nccl-doctor-mpi"; do
    [ -x "$b" ] && MPIBIN=$b && break
done
if [ -n "$MPIBIN" ]; then
    # Open MPI itself leaks at MPI_Finalize (dlopen'ed MCA components);
    # LeakSanitizer would turn that into exit status 1 in sanitizer builds.
    ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"; export ASAN_OPTIONS
    timeout 120 $MPIRUN -np 3 "$MPIBIN" perf all_reduce -b 8 -e 1M -f 8 -d all -o sum \
        --backend socket >"$TMP/m.out" 2>"$TMP/m.err"
    rc=$?
    parse_table "$TMP/m.out" >"$TMP/p"
    check "MPI rendezvous, 3 ranks: exit 0, all types correct ($(cat $TMP/p))" sh -c "
        [ $rc -eq 0 ] && grep -q '^rows=60 wrong=0 bad=0' '$TMP/p'"
    check "one table only (rank 0 prints)" sh -c "[ \$(grep -c 'Collective test concluded' '$TMP/m.out') -eq 1 ]"
    check "three device lines, local ranks 0-2 as devices" sh -c "
        grep -q '^#  Rank  2 Group  0 Pid .* device  2 ' '$TMP/m.out'"
    timeout 120 $MPIRUN -np 2 "$MPIBIN" perf reduce_scatter -b 1K -e 64K -f 4 -g 2 \
        --backend socket >"$TMP/g.out" 2>&1
    rc=$?
    check "MPI x -g 2 = 4 ranks (exit $rc)" sh -c "
        [ $rc -eq 0 ] && [ \$(grep -c '^#  Rank' '$TMP/g.out') -eq 4 ] &&
        grep -qx '# Out of bounds values : 0 OK' '$TMP/g.out'"
else
    echo "# no MPI-enabled build here: MPI rendezvous not tested"
fi

PORT=$((21000 + $$ % 9000))
timeout 120 $MPIRUN -np 2 -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT=$PORT \
    "$NCD_BIN" perf all_gather -b 8 -e 64K -f 8 --backend socket >"$TMP/t.out" 2>"$TMP/t.err"
rc=$?
check "plain build under mpirun: ranks from OMPI_COMM_WORLD_*, TCP root (exit $rc)" sh -c "
    [ $rc -eq 0 ] && [ \$(grep -c '^#  Rank' '$TMP/t.out') -eq 2 ] &&
    grep -qx '# Out of bounds values : 0 OK' '$TMP/t.out'"
if [ $MPIBUILD = 0 ]; then
    timeout 60 $MPIRUN -np 2 "$NCD_BIN" perf all_gather -b 8 -e 8 --backend socket >"$TMP/n.out" 2>"$TMP/n.err"
    check "plain build under mpirun without a rendezvous address: clear error" \
        grep -q 'started by Open MPI as rank [01] of 2, but there is no rendezvous address' "$TMP/n.err"
fi
finish
