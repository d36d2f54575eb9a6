#!/bin/sh
# bench/explain: throughput of `nccl-doctor explain` on a realistic NCCL INFO
# log, next to `grep -c -E -f <the same patterns>` on the same file, plus
# peak RSS.  Usage: bench/explain/run.sh [SIZE_MB (1024)] [NODES (64)]
# NCD_BIN: the binary to measure (default: a Release build in build-bench).
# The log goes to ${TMPDIR:-/tmp} and is deleted afterwards.
set -eu
cd "$(dirname "$0")/../.."
SIZE_MB=${1:-1024}
NODES=${2:-64}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ncd-bench-explain.XXXXXX")
trap 'rm -rf "$TMP"' EXIT INT TERM
if [ -z "${NCD_BIN:-}" ]; then
    cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DNCD_TESTS=OFF >/dev/null
    cmake --build build-bench -j2 --target nccl-doctor >/dev/null
    NCD_BIN=build-bench/nccl-doctor
fi
${CC:-cc} -O2 -o "$TMP/gen_log" bench/explain/gen_log.c
LOG=$TMP/nccl.log
"$TMP/gen_log" $((SIZE_MB * 1024 * 1024)) "$NODES" >"$LOG"
BYTES=$(wc -c <"$LOG")
"$NCD_BIN" explain --dump-patterns >"$TMP/patterns.ere"
NPAT=$(wc -l <"$TMP/patterns.ere")

mbps() { awk -v b="$BYTES" -v s="$1" 'BEGIN { if (s > 0) printf "%.0f", b / s / 1e6; else print "inf" }'; }

# warm the page cache so both read from memory
cat "$LOG" >/dev/null

# /usr/bin/time gives wall and CPU seconds (CPU time is what one core
# delivers even when other jobs share the machine) and peak RSS.
TIMEFMT='%e %U %S %M'
if [ ! -x /usr/bin/time ]; then
    echo "bench/explain: needs /usr/bin/time (package time)" >&2
    exit 1
fi
LC_ALL=C /usr/bin/time -f "$TIMEFMT" -o "$TMP/grep.time" \
    grep -c -E -f "$TMP/patterns.ere" "$LOG" >"$TMP/grep.count" || true
/usr/bin/time -f "$TIMEFMT" -o "$TMP/ncd.time" \
    "$NCD_BIN" explain --json "$LOG" >"$TMP/out.json" || true
read -r G_WALL G_USR G_SYS G_RSS <<EOF
$(tail -n1 "$TMP/grep.time")
EOF
read -r N_WALL N_USR N_SYS N_RSS <<EOF
$(tail -n1 "$TMP/ncd.time")
EOF
G_CPU=$(awk -v a="$G_USR" -v b="$G_SYS" 'BEGIN { print a + b }')
N_CPU=$(awk -v a="$N_USR" -v b="$N_SYS" 'BEGIN { print a + b }')
FIRST=$(grep -m1 '"id"' "$TMP/out.json" | sed 's/.*"id": *"\([^"]*\)".*/\1/')

echo "log:           $BYTES bytes, $(wc -l <"$LOG") lines, $((NODES * 8)) ranks, $NPAT patterns"
echo "grep -c -E -f: $(mbps "$G_WALL") MB/s wall, $(mbps "$G_CPU") MB/s per CPU second ($G_WALL s; $(cat "$TMP/grep.count") matching lines; LC_ALL=C)"
echo "explain:       $(mbps "$N_WALL") MB/s wall, $(mbps "$N_CPU") MB/s per CPU second ($N_WALL s; whole run: facts, rules, reasoning, JSON)"
awk -v g="$G_WALL" -v n="$N_WALL" -v gc="$G_CPU" -v nc="$N_CPU" 'BEGIN {
    printf "ratio:         explain is %.2fx grep (wall), %.2fx (CPU)\n", g / n, gc / nc }'
echo "peak RSS:      explain ${N_RSS} kB (grep ${G_RSS} kB)"
echo "first finding: $FIRST"
