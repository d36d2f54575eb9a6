#!/bin/sh
# nccl-tests parity on the socket backend: alltoallv_perf and its
# NCCL_TESTS_ALLTOALLV_* variables (src/alltoallv.cu), -I/-K per-iteration
# columns and the JSON that nccl-tests' tools/analyze_perf_json.py reads
# (v2.19.6, commit a0b82b2: the keys and the consistency rule it checks are
# restated below; t0409-perf-analyze.sh runs the script itself), -G and -C in the
# header, the CPU oversubscription warning.  Warm-up over every size:
# t0406-perf-nccl.sh (it counts the calls the fake NCCL receives).
. "$(dirname "$0")/perf_lib.sh"
command -v jq >/dev/null || skip "jq not installed (scripts/install-deps.sh)"
S="--backend socket --peer-timeout 20"

# ---- alltoallv ------------------------------------------------------------
run_ok() { # run_ok "label" rows perf args...: exit 0, 0 wrong, every row sane
    label=$1; rows=$2; shift 2
    perf "$@" >"$TMP/a.out" 2>"$TMP/a.err"
    rc=$?
    p=$(parse_table "$TMP/a.out")
    if [ $rc -eq 0 ] && echo "$p" | grep -q "^rows=$rows wrong=0 bad=0" &&
       grep -qx '# Out of bounds values : 0 OK' "$TMP/a.out"; then
        ok "$label ($p)"
    else
        bad "$label rc=$rc ($p)"; head -5 "$TMP/a.err"
    fi
}
SZ="-b 1 -e 4099 -f 8 -n 2 -w 1 -d all"
for np in 1 2 4 3; do
    run_ok "alltoallv generated np=$np, every type" 50 alltoallv $SZ -np $np $S
done
# (the last run, 3 ranks) 4 KiB float: per peer (1024/3) & ~3 = 340, size 340 x 3 x 4;
# in-place is run but not checked (nccl-tests: N/A)
check "alltoallv: count and size columns as nccl-tests, in-place N/A" sh -c "
    grep -Eq '^ +4080 +340 +float +none +-1 .* 0 .* N/A\$' '$TMP/a.out'"
NCCL_TESTS_ALLTOALLV_SPREAD=0 run_ok "alltoallv spread 0 (uniform, self included)" 9 \
    alltoallv -b 8 -e 70000 -f 3 -n 1 -np 3 $S -d int32
NCCL_TESTS_ALLTOALLV_SPREAD=0.3 run_ok "alltoallv spread 0.3, 5 ranks" 9 \
    alltoallv -b 8 -e 70000 -f 3 -n 1 -np 5 $S

# matrix mode: nccl-tests' example matrix x 10, rounded down to 16 bytes
printf '100  200  150\n50   100  75\n300  150  200\n' >"$TMP/m3.txt"
export NCCL_TESTS_ALLTOALLV_MATRIX_FILE="$TMP/m3.txt" NCCL_TESTS_ALLTOALLV_MATRIX_SCALE=10
NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY=1 run_ok "alltoallv matrix, 3 ranks" 1 \
    alltoallv -b 8K -e 8K -n 2 -np 3 $S -d int8
check "matrix: size = the largest rank total (6480), count 0" sh -c "
    grep -Eq '^ +6480 +0 +int8 +none +-1 ' '$TMP/a.out'"
check "PRINT_SUMMARY: per side, per rank, before the row" sh -c "
    [ \$(grep -c '^# NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY: mode=matrix nranks=3 matrix_dim=3 scale=10.000 time_usec=' '$TMP/a.out') -eq 2 ] &&
    [ \$(grep -c '^#   rank=2 send_bytes=6480 recv_bytes=4224 alg_bw=' '$TMP/a.out') -eq 2 ] &&
    grep -B1 -E '^ +6480 ' '$TMP/a.out' | head -1 | grep -q '^#   rank=2 '"
fails_with() { # fails_with "label" status "message" perf args...
    label=$1; want=$2; msg=$3; shift 3
    st=0; perf "$@" >"$TMP/f.out" 2>"$TMP/f.err" || st=$?
    if [ $st -eq "$want" ] && grep -qF -- "$msg" "$TMP/f.err"; then ok "$label"
    else bad "$label (exit $st)"; cat "$TMP/f.err"; fi
}
fails_with "matrix smaller than the job: exit 1" 1 \
    "requested nranks (4) is larger than matrix size (3) in file $TMP/m3.txt." \
    alltoallv -b 8K -e 8K -np 4 $S
fails_with "matrix with -b != -e: exit 1" 1 \
    "-b and -e options must be set to the same value (e.g., -b 32M -e 32M)" \
    alltoallv -b 1K -e 8K -np 3 $S
fails_with "matrix beyond -e: exit 1, the size it needs" 1 \
    "maxBytes (-e) must be at least 6480 bytes as required by traffic matrix" \
    alltoallv -b 6K -e 6K -np 3 $S
printf '1 2\n3\n' >"$TMP/bad.txt"
NCCL_TESTS_ALLTOALLV_MATRIX_FILE="$TMP/bad.txt" fails_with "ragged matrix: exit 1" 1 \
    "Invalid alltoallv traffic matrix column count in file $TMP/bad.txt row 1. Expected 2 columns, got 1." \
    alltoallv -b 8K -e 8K -np 2 $S
NCCL_TESTS_ALLTOALLV_MATRIX_FILE="$TMP/none.txt" fails_with "missing matrix: exit 1" 1 \
    "Unable to open alltoallv traffic matrix file $TMP/none.txt." \
    alltoallv -b 8K -e 8K -np 2 $S
unset NCCL_TESTS_ALLTOALLV_MATRIX_FILE NCCL_TESTS_ALLTOALLV_MATRIX_SCALE
NCCL_TESTS_ALLTOALLV_MATRIX_FILE="$TMP/none.txt" run_ok "other collectives ignore the variables" 1 \
    alltoall -b 1K -e 1K -n 1 -np 2 $S

# ---- -I / -K: columns and the JSON tools/analyze_perf_json.py reads ------
# The script reads: version, config.iterations, config.aggregated_iterations,
# config.per_iter_skip, config.devices[].hostname; per result its size and
# <out_of_place|in_place>_per_iter.{min_us,max_us,avg_us,p99_us,cv_pct,
# times_us[],per_process_max_times_us[][]}, and checks that times_us is
# the largest of the process rows at every iteration (within 0.001).
schema='
  def num: type == "number";
  def close(a; b): (a - b) * (a - b) < 1e-6;
  .version == 3 and (.config.iterations | num) and
  (.config.aggregated_iterations | num) and (.config.per_iter_skip == $skip) and
  .config.per_iter_timing == "true" and
  (.config.devices | length >= $np and all(.[]; .hostname | type == "string")) and
  (.results | length > 0) and
  all(.results[]; (.size | num) and
    all(.out_of_place_per_iter, .in_place_per_iter;
      (.min_us | num) and (.max_us | num) and (.avg_us | num) and
      (.p99_us | num) and (.cv_pct | num) and .skipped_iterations == $skip and
      .min_us <= .avg_us and .avg_us <= .max_us and .p99_us <= .max_us and
      (.times_us | length == $iters and all(.[]; num)) and
      if $np > 1 then
        (.per_process_max_times_us | length == $np) as $ok | $ok and
        (. as $s | [range(0; $iters) as $i |
          close($s.times_us[$i]; [$s.per_process_max_times_us[][$i]] | max)] | all)
      else (has("per_process_max_times_us") | not) end))'
perf all_reduce -b 8 -e 64K -f 16 -n 6 -I 1 -K 1 -np 2 $S -J "$TMP/i.json" >"$TMP/i.out" 2>"$TMP/i.err"
rc=$?
check "-I -K -np 2: exit 0, 21 fields a row, the -I preamble line" sh -c "
    [ $rc -eq 0 ] && [ \$(grep -v '^#' '$TMP/i.out' | awk 'NF==21' | wc -l) -eq 4 ] &&
    grep -qx '# Per-Iteration Report: host clock timing; i_\\* uses max over process rows; summary skips first 1 iterations ' '$TMP/i.out'"
check "-J: every key analyze_perf_json.py reads, 2 process rows, consistent" \
    jq -e --argjson np 2 --argjson iters 6 --argjson skip 1 "$schema" "$TMP/i.json"
check "-I table figures are the JSON's (i_min of the first row)" sh -c "
    m=\$(jq -r '.results[0].out_of_place_per_iter.min_us' '$TMP/i.json') &&
    t=\$(grep -v '^#' '$TMP/i.out' | head -1 | awk '{print \$10}') &&
    awk -v a=\"\$m\" -v b=\"\$t\" 'BEGIN { d = a - b; exit !(d < 0.01 && d > -0.01 || b > 9999) }'"
perf all_reduce -b 8 -e 8 -n 3 -I 1 $S --json >"$TMP/j.json" 2>"$TMP/j.err"
check "--json, one process: no process rows (as nccl-tests without MPI)" \
    jq -e --argjson np 1 --argjson iters 3 --argjson skip 0 "$schema" "$TMP/j.json"
perf all_reduce -b 8 -e 8 -n 3 -K 1 $S >"$TMP/k.out" 2>"$TMP/k.err"
rc=$?
check "-K without -I: nccl-tests' message, disabled, runs" sh -c "
    [ $rc -eq 0 ] && grep -qx 'per-iteration skip (-K) requires per-iteration timing (-I 1). Disabling.' '$TMP/k.err' &&
    grep -q 'graph: 0 unalign: 0' '$TMP/k.out' && ! grep -q 'Per-Iteration' '$TMP/k.out'"

# ---- -G, -C, CPUs -------------------------------------------------------
perf all_reduce -b 8 -e 8 -n 2 -G 4 -C 1 $S -J "$TMP/c.json" >"$TMP/g.out" 2>"$TMP/g.err"
check "-G 4 on sockets: graph: 0 and why, nothing on stderr" sh -c "
    grep -q 'validation: 1 graph: 0 unalign: 0\$' '$TMP/g.out' &&
    grep -qx '# CUDA graph launches (-G 4): not applicable to the socket backend (host buffers, no CUDA stream to capture); graph: 0, every operation is issued on its own ' '$TMP/g.out' &&
    ! grep -q . '$TMP/g.err'"
check "-C: cputime columns, cpu_time in the JSON, said in the header" sh -c "
    grep -q '^#       size .* cputime   algbw   busbw  #wrong  cputime ' '$TMP/g.out' &&
    grep -q '^#  cputime (-C): host time to issue the operations' '$TMP/g.out' &&
    jq -e '.results[0].out_of_place.cpu_time | type == \"number\"' '$TMP/c.json' >/dev/null"
if command -v taskset >/dev/null && taskset -c 0 true 2>/dev/null; then
    taskset -c 0 "$NCD_BIN" perf all_reduce -b 8 -e 8 -n 1 -np 2 $S >"$TMP/t.out" 2>&1
    check "2 ranks on 1 CPU: the preamble warns" \
        grep -Eq '^#  Warning: 2 ranks on [^ ]+ share 1 CPU: ' "$TMP/t.out"
    taskset -c 0 "$NCD_BIN" perf all_reduce -b 8 -e 8 -n 1 -np 2 $S --json >"$TMP/t.json" 2>"$TMP/t.err"
    check "--json: the warning on stderr and in .warnings" sh -c "
        grep -q 'warning: 2 ranks on .* share 1 CPU' '$TMP/t.err' &&
        jq -e '.warnings[0] | test(\"share 1 CPU\")' '$TMP/t.json' >/dev/null"
    if taskset -c 0,1 true 2>/dev/null; then
        taskset -c 0,1 "$NCD_BIN" perf all_reduce -b 8 -e 8 -n 1 -np 2 $S >"$TMP/t2.out" 2>&1
        check "2 ranks on 2 CPUs: no warning" sh -c "! grep -q '^#  Warning' '$TMP/t2.out'"
    fi
else
    echo "# taskset cannot pin here: CPU warning checks skipped"
fi
finish
