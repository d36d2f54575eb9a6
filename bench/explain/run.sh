#!/bin/sh
# bench/explain: throughput of `nccl-doctor explain` on two realistic NCCL
# INFO log shapes, next to ripgrep and grep with the same patterns in the
# same run, plus 1 against 2 threads and peak RSS.
#   coll  init, then NCCL_DEBUG_SUBSYS=COLL lines (~200 B a line)
#   init  initialisation output only (~85 B a line: the short-line case)
# Usage: bench/explain/run.sh [SIZE_MB (256)] [NODES (64)] [REPS (3)]
# NCD_BIN: the binary to measure (default: a Release build in build-bench).
# Each command runs REPS times; the least CPU time (user + sys: what one
# core delivers even when other jobs share the machine) and the least wall
# time count.  Ratios above 1 mean explain is faster.  The 1 vs 2 threads
# wall ratio only means something on an idle machine: the load average is
# printed next to it; their runs take turns.  Logs go to ${TMPDIR:-/tmp}
# and are deleted.
set -eu
cd "$(dirname "$0")/../.."
SIZE_MB=${1:-256}
NODES=${2:-64}
REPS=${3:-3}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ncd-bench-explain.XXXXXX")
trap 'rm -rf "$TMP"' EXIT INT TERM
if [ -z "${NCD_BIN:-}" ]; then
    cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DNCD_TESTS=OFF >/dev/null
    cmake --build build-bench -j2 --target nccl-doctor >/dev/null
    NCD_BIN=build-bench/nccl-doctor
fi
for tool in rg grep /usr/bin/time; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "bench/explain: needs $tool (scripts/install-deps.sh installs it)" >&2
        exit 1
    fi
done
${CC:-cc} -O2 -o "$TMP/gen_log" bench/explain/gen_log.c
"$NCD_BIN" explain --dump-patterns >"$TMP/patterns.ere"
NPAT=$(wc -l <"$TMP/patterns.ere")

# best NAME CMD...: runs CMD REPS times (stdout to $TMP/NAME.out), leaves
# "wall cpu rss" of the fastest runs in $TMP/NAME.best
best() {
    name=$1
    shift
    : >"$TMP/$name.all"
    i=0
    while [ "$i" -lt "$REPS" ]; do
        LC_ALL=C /usr/bin/time -f '%e %U %S %M' -o "$TMP/$name.t" "$@" \
            >"$TMP/$name.out" || true
        tail -n1 "$TMP/$name.t" >>"$TMP/$name.all"
        i=$((i + 1))
    done
    awk 'NR == 1 || $1 < w { w = $1 } NR == 1 || $2 + $3 < c { c = $2 + $3 }
         $4 > m { m = $4 } END { printf "%.3f %.3f %d\n", w, c, m }' \
        "$TMP/$name.all" >"$TMP/$name.best"
}
# best2 NAME1 'CMD1' NAME2 'CMD2': as best, the two commands taking turns
# (1, 2, 1, 2, ...), so that both meet the same moments of a shared host
# (other guests make a run up to 2x slower for seconds at a time): their
# ratio compares like with like
best2() {
    : >"$TMP/$1.all"
    : >"$TMP/$3.all"
    i=0
    while [ "$i" -lt "$REPS" ]; do
        for k in 1 3; do
            eval "n=\$$k; c=\$$((k + 1))"
            LC_ALL=C /usr/bin/time -f '%e %U %S %M' -o "$TMP/$n.t" sh -c "exec $c" \
                >"$TMP/$n.out" || true
            tail -n1 "$TMP/$n.t" >>"$TMP/$n.all"
        done
        i=$((i + 1))
    done
    for n in "$1" "$3"; do
        awk 'NR == 1 || $1 < w { w = $1 } NR == 1 || $2 + $3 < c { c = $2 + $3 }
             $4 > m { m = $4 } END { printf "%.3f %.3f %d\n", w, c, m }' \
            "$TMP/$n.all" >"$TMP/$n.best"
    done
}
field() { cut -d' ' -f"$2" "$TMP/$1.best"; }
mbps() { awk -v b="$BYTES" -v s="$1" 'BEGIN { if (s > 0) printf "%.0f", b / s / 1e6; else print "inf" }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "inf" }'; }

# start-up: rules, patterns, an empty report
: >"$TMP/empty.log"
best empty "$NCD_BIN" explain --threads 1 "$TMP/empty.log"
echo "explain start-up (empty log): $(awk -v c="$(field empty 2)" 'BEGIN { printf "%.1f", c * 1000 }') ms CPU, $NPAT patterns"

for shape in coll init; do
    LOG=$TMP/$shape.log
    "$TMP/gen_log" $((SIZE_MB * 1024 * 1024)) "$NODES" "$shape" >"$LOG"
    BYTES=$(wc -c <"$LOG")
    LINES=$(wc -l <"$LOG")
    cat "$LOG" >/dev/null # page cache warm for everyone
    best rg rg -c -f "$TMP/patterns.ere" "$LOG"
    best grep grep -c -E -f "$TMP/patterns.ere" "$LOG"
    best2 ncd1 "'$NCD_BIN' explain --threads 1 --json '$LOG'" \
          ncd2 "'$NCD_BIN' explain --threads 2 --json '$LOG'"
    cp "$TMP/ncd1.out" "$TMP/ncd1.json"
    same=no
    cmp -s "$TMP/ncd1.json" "$TMP/ncd2.out" && same=yes
    echo
    echo "== $shape: $BYTES bytes, $LINES lines ($((BYTES / LINES)) B/line), $((NODES * 8)) ranks"
    printf '%-24s %7s MB/s per CPU s  %7s MB/s wall  %8s kB RSS\n' "rg -c -f" \
        "$(mbps "$(field rg 2)")" "$(mbps "$(field rg 1)")" "$(field rg 3)"
    printf '%-24s %7s MB/s per CPU s  %7s MB/s wall  %8s kB RSS\n' "grep -c -E -f (LC_ALL=C)" \
        "$(mbps "$(field grep 2)")" "$(mbps "$(field grep 1)")" "$(field grep 3)"
    printf '%-24s %7s MB/s per CPU s  %7s MB/s wall  %8s kB RSS\n' "explain, 1 thread" \
        "$(mbps "$(field ncd1 2)")" "$(mbps "$(field ncd1 1)")" "$(field ncd1 3)"
    printf '%-24s %7s MB/s per CPU s  %7s MB/s wall  %8s kB RSS\n' "explain, 2 threads" \
        "$(mbps "$(field ncd2 2)")" "$(mbps "$(field ncd2 1)")" "$(field ncd2 3)"
    echo "ratio per CPU second:    explain (1 thread) is $(ratio "$(field rg 2)" "$(field ncd1 2)")x rg, $(ratio "$(field grep 2)" "$(field ncd1 2)")x grep (matches: rg $(cat "$TMP/rg.out"), grep $(cat "$TMP/grep.out"))"
    echo "2 threads vs 1 (wall):   $(ratio "$(field ncd1 1)" "$(field ncd2 1)")x; same report: $same; load average $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
    echo "first finding:           $(grep -m1 '"id"' "$TMP/ncd1.json" | sed 's/.*"id": *"\([^"]*\)".*/\1/')"
    rm -f "$LOG"
done
