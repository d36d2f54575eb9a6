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

now() { date +%s.%N; }
mbps() { awk -v b="$BYTES" -v s="$1" 'BEGIN { printf "%.0f", b / s / 1e6 }'; }

# warm the page cache so both read from memory
cat "$LOG" >/dev/null

t0=$(now)
GREP_COUNT=$(LC_ALL=C grep -c -E -f "$TMP/patterns.ere" "$LOG" || true)
t1=$(now)
GREP_S=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')

if [ -x /usr/bin/time ]; then
    t0=$(now)
    /usr/bin/time -v "$NCD_BIN" explain --json "$LOG" >"$TMP/out.json" 2>"$TMP/time.txt" || true
    t1=$(now)
    RSS_KB=$(awk -F: '/Maximum resident set size/ { gsub(/ /, "", $2); print $2 }' "$TMP/time.txt")
else
    t0=$(now)
    "$NCD_BIN" explain --json "$LOG" >"$TMP/out.json" || true
    t1=$(now)
    RSS_KB=unknown
fi
NCD_S=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')
FIRST=$(grep -m1 '"id"' "$TMP/out.json" | sed 's/.*"id": *"\([^"]*\)".*/\1/')

echo "log:          $BYTES bytes, $(wc -l <"$LOG") lines, $((NODES * 8)) ranks, $NPAT patterns"
echo "grep -c -E -f: $(mbps "$GREP_S") MB/s  ($GREP_S s, $GREP_COUNT matching lines; LC_ALL=C)"
echo "explain:       $(mbps "$NCD_S") MB/s  ($NCD_S s, whole run incl. facts, reasoning, JSON)"
awk -v g="$GREP_S" -v n="$NCD_S" 'BEGIN { printf "ratio:         explain is %.2fx grep'"'"'s speed\n", g / n }'
echo "peak RSS:      ${RSS_KB} kB"
echo "first finding: $FIRST"
