#!/bin/sh
# perf: nccl-tests options, output format, exit statuses, JSON, symlinks.
. "$(dirname "$0")/perf_lib.sh"

# The issue's done-when command (reduced to -e 4M to stay fast here).
perf all_reduce -b 8 -e 4M -f 2 -np 2 --backend socket >"$TMP/ar.txt" 2>"$TMP/ar.err"
check "all_reduce -np 2 exits 0" [ $? -eq 0 ]
parse_table "$TMP/ar.txt" >"$TMP/ar.parse"
check "table parses as nccl-tests: 20 rows, 0 wrong, 0 malformed" \
    grep -q '^rows=20 wrong=0 bad=0 avg=[0-9.]' "$TMP/ar.parse"
check "footer: Out of bounds values : 0 OK" grep -qx '# Out of bounds values : 0 OK' "$TMP/ar.txt"
check "footer: Avg bus bandwidth line (Azure reads token 5)" \
    awk '/Avg bus bandwidth/ { if ($5 == ":" && $6+0 > 0) f=1 } END { exit !f }' "$TMP/ar.txt"
check "preamble: version, start, nThread lines" sh -c "
    sed -n 1p '$TMP/ar.txt' | grep -q '^# nccl-tests version 2.19.6 nccl-headers=0 nccl-library=0\$' &&
    grep -qx '# Collective test starting: all_reduce_perf' '$TMP/ar.txt' &&
    grep -qx '# nThread 1 nGpus 1 minBytes 8 maxBytes 4194304 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0' '$TMP/ar.txt'"
check "two device lines, rank 0 and 1" sh -c "
    grep -c '^#  Rank  [01] Group  0 Pid ' '$TMP/ar.txt' | grep -qx 2"
check "says which backend it used, and that it is not NCCL" \
    grep -q '^#  Backend: socket (--backend socket: TCP between the ranks, not NCCL, no GPU; over ' "$TMP/ar.txt"
# NCCL's path: the interface and address NCCL's Socket transport would use
# here (ifaces' prediction), on every device line and in the backend line
nccl_if=$("$NCD_BIN" ifaces --json 2>/dev/null | python3 -c '
import json, sys
print((json.load(sys.stdin)["nccl"]["socket"] or [""])[0])' 2>/dev/null)
nccl_path_shown() {
    [ -n "$nccl_if" ] &&
    [ "$(grep -c "^#  Rank  [01] Group  0 Pid .* socket $nccl_if [0-9a-f.:]*:[0-9]*\$" "$TMP/ar.txt")" -eq 2 ] &&
    grep -q "^#  Backend: socket .*over $nccl_if .*NCCL [0-9.]*'s Socket interface" "$TMP/ar.txt"
}
check "device lines show NCCL's Socket interface ($nccl_if) and its address" nccl_path_shown
check "header lines keep the trailing space" sh -c "
    grep -q '^#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong \$' '$TMP/ar.txt'"
check "last line is empty" sh -c "tail -n1 '$TMP/ar.txt' | grep -qx ''"
check "rank 1 prints nothing on stdout (one table)" sh -c "
    grep -c 'Collective test concluded' '$TMP/ar.txt' | grep -qx 1"
check "no progress noise on stderr when not a tty" [ ! -s "$TMP/ar.err" ]

# Symlinked name behaves like the nccl-tests binary
ln -s "$NCD_BIN" "$TMP/all_gather_perf"
"$TMP/all_gather_perf" -b 1K -e 8K -f 2 -g 2 --backend socket -d int32 >"$TMP/ag.txt" 2>&1
check "all_gather_perf symlink -g 2 runs 2 thread ranks" sh -c "
    grep -q 'Collective test starting: all_gather_perf' '$TMP/ag.txt' &&
    grep -c '^#  Rank' '$TMP/ag.txt' | grep -qx 2 &&
    grep -q '^ *1024 *128 *int32 *none *-1 ' '$TMP/ag.txt'"

# Options: long forms, -c 0 -> N/A, sendrecv in-place N/A, -C, -S
perf broadcast --minbytes 64 --maxbytes 64 --check 0 --root 1 -np 2 --backend socket >"$TMP/b.txt"
check "-c 0 prints N/A in both #wrong columns; root column shows 1" \
    grep -q '^ *64 *16 *float *none *1 .* N/A .* N/A$' "$TMP/b.txt"
perf sendrecv -b 64 -e 64 -np 2 --backend socket >"$TMP/sr.txt"
check "sendrecv: in-place #wrong is N/A, out-of-place checked" \
    grep -q '^ *64 *16 *float *sum *-1 .* 0 .* N/A$' "$TMP/sr.txt"
perf reduce -b 64 -e 64 -r -1 -np 3 --backend socket >"$TMP/r.txt"
check "-r -1 runs every root" sh -c "
    grep -v '^#' '$TMP/r.txt' | awk 'NF==13 {print \$5}' | tr '\n' ' ' | grep -qx '0 1 2 '"
perf all_reduce -b 64 -e 64 -C 1 -S 1 --backend socket >"$TMP/c.txt"
check "-C renames time to cputime, -S adds a timestamp column" sh -c "
    grep -q 'cputime   algbw' '$TMP/c.txt' && grep -q ' timestamp\$' '$TMP/c.txt' &&
    grep -Eq ' [0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}\$' '$TMP/c.txt'"
perf all_reduce -b 1K -e 1K -o all -d all --backend socket >"$TMP/all.txt"
check "-o all -d all: 10 types x 6 ops rows" sh -c "
    [ \$(grep -vc '^#' '$TMP/all.txt') -eq 61 ]"   # 60 rows + empty line

perf all_reduce -b 1M -e 4M -f 2 -np 2 --backend socket -M 1 >"$TMP/m.txt"
check "-M: memory line after 'Collective test concluded' (2 x 4 MiB buffers)" sh -c "
    grep -A1 'Collective test concluded' '$TMP/m.txt' |
    grep -q '^# GPU memory usage     : Initialization .* | User-Allocated 8.00 MB | Collective .* | Total  '"

# Exit statuses
perf all_reduce -b 1M -e 8 --backend socket >/dev/null 2>&1
check "min > max exits 255" [ $? -eq 255 ]
perf all_reduce -b 12Q --backend socket >/dev/null 2>&1
check "bad size exits 255" [ $? -eq 255 ]
perf all_reduce -Q 1 --backend socket >"$TMP/q.txt" 2>&1
check "unknown option: 'invalid option' and exit 6" sh -c "[ $? -eq 6 ] && grep -q \"invalid option 'Q'\" '$TMP/q.txt'"
perf nosuch_coll >/dev/null 2>&1
check "unknown collective exits 6" [ $? -eq 6 ]
perf all_reduce -o nosuch -b 8 -e 8 --backend socket >"$TMP/op.txt"
check "unknown op: nccl-tests message, defaults to sum" sh -c "
    grep -q '^invalid op nosuch, defaulting to sum .. \$' '$TMP/op.txt' && grep -q ' sum  ' '$TMP/op.txt'"
NCCL_TESTS_MIN_BW=100000 perf all_reduce -b 1K -e 1K -np 2 --backend socket >"$TMP/mb.txt"
check "NCCL_TESTS_MIN_BW not met: FAILED and exit 7" sh -c "
    [ $? -eq 7 ] && grep -q '^# Avg bus bandwidth    : [0-9.e+-]* FAILED\$' '$TMP/mb.txt'"
NCCL_TESTS_MIN_BW=0 perf all_reduce -b 1K -e 1K --backend socket >"$TMP/mb0.txt"
check "NCCL_TESTS_MIN_BW met: OK and exit 0" sh -c "
    [ $? -eq 0 ] && grep -q '^# Avg bus bandwidth    : [0-9.e+-]* OK\$' '$TMP/mb0.txt'"
perf hypercube -b 64 -e 64 -np 3 --backend socket >/dev/null 2>&1
check "hypercube on 3 ranks is refused (exit 6)" [ $? -eq 6 ]
perf all_reduce -d f8e4m3 -b 64 -e 64 --backend socket >/dev/null 2>&1
check "fp8 on the socket backend: not implemented (exit 5)" [ $? -eq 5 ]
perf all_reduce -b 8 -e 8 -np 2 --backend nccl --nccl-lib /nonexistent/libnccl.so.2 >"$TMP/nc.txt" 2>&1
check "--backend nccl without NCCL says where it looked and suggests socket" sh -c "
    [ $? -ne 0 ] && grep -q 'could not be loaded' '$TMP/nc.txt' && grep -q 'backend socket' '$TMP/nc.txt'"

# JSON (-J): keys, never overwrites, .json suffix only
( cd "$TMP" && perf all_reduce -b 8 -e 64 -f 2 -np 2 --backend socket -J out.json >j1.txt &&
  perf all_reduce -b 8 -e 64 -f 2 --backend socket -J out.json >j2.txt )
check "-J writes out.json, then out.json.0 (never overwrites)" sh -c "
    grep -qx '# Writing JSON output to out.json' '$TMP/j1.txt' &&
    grep -qx '# Writing JSON output to out.json.0' '$TMP/j2.txt' &&
    [ -s '$TMP/out.json' ] && [ -s '$TMP/out.json.0' ]"
if command -v python3 >/dev/null 2>&1; then
    check "JSON has nccl-tests' keys and 4 results" python3 - "$TMP/out.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
keys = ["version","start_time","args","env","nccl_version","backend","backend_info",
        "config","results",
        "out_of_bounds","average_bus_bandwidth","errors","end_time"]
assert list(d.keys()) == keys, list(d.keys())
assert d["version"] == 3
c = d["config"]
for k in ["nthreads","ngpus","minimum_bytes","maximum_bytes","step_factor",
          "warmup_iters","iterations","aggregated_iterations","validation",
          "graph","blocking_collectives","per_iter_timing","per_iter_skip",
          "parallel_init","devices"]:
    assert k in c, k
assert len(c["devices"]) == 2
r = d["results"]
assert [x["size"] for x in r] == [8, 16, 32, 64]
for x in r:
    assert x["root"] == "    -1"
    for side in ("out_of_place", "in_place"):
        assert set(x[side]) == {"time","alg_bw","bus_bw","nwrong"}
        assert x[side]["nwrong"] == 0
assert d["out_of_bounds"] == {"count": 0, "okay": "true"}
assert d["average_bus_bandwidth"]["okay"] == "unchecked"
assert d["backend"] == "socket" and d["backend_info"].startswith("socket (")
PY
fi
# -J in a hostile environment: only the variables that matter, redacted as
# gather redacts them; never a token, key or password
( cd "$TMP" && env HF_TOKEN=hf_LEAK1 AWS_SECRET_ACCESS_KEY=LEAK2 DB_PASSWORD=LEAK3 \
    NCCL_IB_TOKEN=LEAK4 CUDA_SECRET_KEY=LEAK5 OPENAI_API_KEY=LEAK6 \
    MASTER_ADDR=127.0.0.1 NCCL_DEBUG_FILE=https://bob:LEAK7@logs.example/x \
    TORCH_DIST_URL=tcp://LEAK8@10.0.0.1:23456 NCCL_SOCKET_NTHREADS=1 \
    SSH_AUTH_SOCK=/tmp/LEAK9 \
    "$NCD_BIN" perf all_reduce -b 8 -e 8 --backend socket -J hostile.json >/dev/null )
check "-J with secrets in the environment: none is written" sh -c "
    [ -s '$TMP/hostile.json' ] && ! grep -q LEAK '$TMP/hostile.json'"
if command -v python3 >/dev/null 2>&1; then
    check "-J env: NCCL_*/CUDA_*/launcher variables kept, URL credentials masked" python3 - "$TMP/hostile.json" <<'PY'
import json, sys
env = json.load(open(sys.argv[1]))["env"]
names = [e.split("=", 1)[0] for e in env]
assert "NCCL_SOCKET_NTHREADS=1" in env, env
assert "MASTER_ADDR=127.0.0.1" in env, env
assert "NCCL_DEBUG_FILE=https://<redacted>@logs.example/x" in env, env
assert "TORCH_DIST_URL=tcp://<redacted>@10.0.0.1:23456" in env, env
assert "NCCL_IB_TOKEN=<redacted>" in env and "CUDA_SECRET_KEY=<redacted>" in env, env
for n in ("HF_TOKEN", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "OPENAI_API_KEY", "SSH_AUTH_SOCK"):
    assert n not in names, n
PY
fi
perf all_reduce -b 8 -e 8 --backend socket -J "$TMP/x.txt" >/dev/null 2>&1
check "-J without .json is refused" [ $? -ne 0 ]
perf all_reduce -b 8 -e 8 --backend socket --json >"$TMP/j.json"
check "--json prints the document on stdout" sh -c "grep -q '\"results\"' '$TMP/j.json' && ! grep -q '^#' '$TMP/j.json'"
finish
