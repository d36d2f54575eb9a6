#!/bin/sh
# nccl-tests' own tools/analyze_perf_json.py (tests/fixtures/nccl-tests/,
# v2.19.6, unmodified) reads `perf -I 1 -J` output as it reads nccl-tests':
# every section prints, the consistency check (times_us = max over the
# process rows) passes, its per-iteration table agrees with perf's i_*
# columns, and the node section groups the ranks by the JSON's hostnames.
# A tampered file makes the same check fail, so the oracle is live.
. "$(dirname "$0")/perf_lib.sh"
command -v python3 >/dev/null || skip "python3 not installed: cannot run nccl-tests' analyze_perf_json.py"
A="${NCD_SOURCE_DIR:?}/tests/fixtures/nccl-tests/analyze_perf_json.py"
[ -r "$A" ] || { echo "missing $A"; exit 1; }
S="--backend socket --peer-timeout 20"
an() { python3 "$A" "$@"; }

perf all_reduce -b 8 -e 64K -f 16 -n 6 -I 1 -K 1 -np 2 $S -J "$TMP/i.json" >"$TMP/i.out" 2>"$TMP/i.err"
check "perf -I 1 -K 1 -np 2 -J: exit 0" test $? -eq 0
an "$TMP/i.json" --all >"$TMP/a.txt" 2>"$TMP/a.err"
rc=$?
check "analyze_perf_json.py --all: exit 0, nothing on stderr" sh -c "
    [ $rc -eq 0 ] && ! grep -q . '$TMP/a.err'" || cat "$TMP/a.err"
check "overview: version 3, 4 results, 6 iterations, skip 1, 2 process rows" sh -c "
    grep -qx '  Version:    3' '$TMP/a.txt' && grep -qx '  Results:    4' '$TMP/a.txt' &&
    grep -qx '  Iterations: 6  (agg: 1)' '$TMP/a.txt' &&
    grep -qx '  Summary skip: 1 leading iterations' '$TMP/a.txt' &&
    grep -qx '  Process rows: 2' '$TMP/a.txt'"
check "consistency: times_us is the max over process rows (PASS)" \
    grep -qx 'Consistency (times_us == max over process rows, OOP): PASS' "$TMP/a.txt"
for s in 'PER-ITERATION STATS (OOP)' 'PER-PROCESS STRAGGLER ANALYSIS (OOP)' \
         'SPIKE ANALYSIS (>1.5x avg, OOP)' 'ITERATION 0 WARMUP IMPACT (RAW, OOP)' \
         'PER-NODE ANALYSIS (1 nodes, process-max rows, OOP)'; do
    check "section: $s" grep -qxF "$s" "$TMP/a.txt"
done

# The stats table (size avg i_min i_max p99 cv% spike) against perf's own
# i_min i_max i_p99 i_cv% columns (out-of-place 10-13, in-place 18-21).
agree() { # agree table.txt first-column-of-perf: every size, every figure
    awk -v col="$2" -v out="$TMP/i.out" '
    BEGIN { while ((getline l < out) > 0) { if (l ~ /^#/) continue
              if (split(l, f) < 21 || f[1] !~ /^[0-9]+$/) continue; for (k = 0; k < 4; k++) want[f[1], k] = f[col + k]; nsz++ } }
    /^-+$/ { on = 1; next }  on && NF == 0 { on = 0 }
    on && NF >= 7 { rows++; sub(/%$/, "", $6)
      for (k = 0; k < 4; k++) { d = $(3 + k) - want[$1, k]; if (d > 0.06 || d < -0.06 || want[$1, k] == "") bad++ } }
    END { exit !(rows == nsz && nsz == 4 && !bad) }' "$1"
}
awk '/^PER-ITERATION STATS/,/^$/' "$TMP/a.txt" | grep -v '^=' >"$TMP/st.txt"
check "stats table: 4 sizes, i_min/i_max/p99/cv% = perf's -I columns" agree "$TMP/st.txt" 10
an "$TMP/i.json" --in-place >"$TMP/ip.txt" 2>&1
awk '/^PER-ITERATION STATS/,/^$/' "$TMP/ip.txt" | grep -v '^=' >"$TMP/sti.txt"
check "--in-place: consistency PASS, table = perf's in-place -I columns" sh -c "
    grep -qx 'Consistency (times_us == max over process rows, IP): PASS' '$TMP/ip.txt'" 
check "--in-place table figures" agree "$TMP/sti.txt" 18
h=$(jq -r '.config.devices[0].hostname' "$TMP/i.json" 2>/dev/null || uname -n)
check "nodes: grouped by the JSON's hostname ($h), processes 0-1" \
    grep -qF "  Node 0 ($h, processes  0- 1):" "$TMP/a.txt"

# the oracle is live: one iteration made slower than every process row
python3 - "$TMP/i.json" "$TMP/t.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["results"][1]["out_of_place_per_iter"]["times_us"][2] += 5.0
json.dump(d, open(sys.argv[2], "w"))
PY
check "a tampered times_us fails the same check (FAIL (1/4))" sh -c "
    python3 '$A' '$TMP/t.json' | grep -qx 'Consistency (times_us == max over process rows, OOP): FAIL (1/4)'"

# one process: no process rows, as nccl-tests without MPI
perf all_reduce -b 8 -e 64K -f 16 -n 3 -I 1 $S --json >"$TMP/j.json" 2>"$TMP/j.err"
an "$TMP/j.json" --all >"$TMP/b.txt" 2>"$TMP/b.err"
rc=$?
check "one process: exit 0, 0 process rows, consistency N/A, 4-row table" sh -c "
    [ $rc -eq 0 ] && ! grep -q . '$TMP/b.err' && grep -qx '  Process rows: 0' '$TMP/b.txt' &&
    grep -qx 'Consistency (times_us == max over process rows, OOP): N/A (no process rows)' '$TMP/b.txt' &&
    [ \$(awk '/^PER-ITERATION STATS/,/^\$/' '$TMP/b.txt' | grep -cE '^ +[0-9]+ +[0-9.]+ ') -eq 4 ]"
finish
