#!/bin/sh
# perf socket backend correctness: every collective x datatype x op x root
# at 1-8 ranks, odd sizes (1, 13, 169, 2197 bytes -> odd counts and empty
# blocks), unaligned buffers (-u), both algorithms, thread ranks and
# several sockets per peer with helper threads.
. "$(dirname "$0")/perf_lib.sh"

run() { # run "label" env... -- perf args...
    label=$1; shift
    out="$TMP/m.txt"
    env "$@" >"$out" 2>"$TMP/m.err"
    rc=$?
    p=$(parse_table "$out")
    if [ $rc -eq 0 ] && grep -qx '# Out of bounds values : 0 OK' "$out" &&
       echo "$p" | grep -q 'wrong=0 bad=0' && ! echo "$p" | grep -q 'rows=0 '; then
        ok "$label ($p)"
    else
        bad "$label rc=$rc ($p)"
        grep -v '^#' "$out" | awk 'NF==13 && ($9!=0 || $13!=0)' | head -5
        head -5 "$TMP/m.err"
    fi
}
SZ="-b 1 -e 2197 -f 13 -n 1 -w 0 -d all -o all -r -1"
for c in all_reduce all_gather reduce_scatter broadcast reduce alltoall sendrecv gather scatter hypercube; do
    for np in 1 2 3 5 8; do
        [ $c = hypercube ] && { [ $np = 3 ] || [ $np = 5 ]; } && continue
        run "$c np=$np" "$NCD_BIN" perf $c $SZ -np $np --backend socket
    done
    [ $c = hypercube ] && continue
    run "$c np=3 unaligned -u 3" "$NCD_BIN" perf $c $SZ -u 3 -np 3 --backend socket
    run "$c np=4 --algo direct" "$NCD_BIN" perf $c $SZ -np 4 --backend socket --algo direct
    run "$c np=2 x -t 2 x -g 2, 4 sockets/peer, 2 helper threads" \
        NCCL_SOCKET_NTHREADS=2 NCCL_NSOCKS_PERTHREAD=2 \
        "$NCD_BIN" perf $c $SZ -np 2 -t 2 -g 2 --backend socket
done
# Larger messages: several chunks per ring step (pipelining), both algos
for c in all_reduce reduce_scatter all_gather broadcast reduce; do
    run "$c 3 ranks 3 MiB+ pipelined" "$NCD_BIN" perf $c -b 3000001 -e 3000001 -n 1 -w 0 -d float -o sum -np 3 --backend socket
done
run "all_reduce bfloat16 avg 4 ranks 1 MiB, 3 sockets" NCCL_SOCKET_NTHREADS=3 \
    "$NCD_BIN" perf all_reduce -b 1M -e 1M -n 1 -w 0 -d bfloat16 -o avg -np 4 --backend socket
finish
