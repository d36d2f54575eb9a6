#!/bin/sh
# perf: a sweep whose buffers cannot fit this host is refused before any
# rank starts, with the figure (issue 10 item 4); peak RSS per rank stays
# within 3 x the largest size + 64 MiB (measured with GNU time: the largest
# child's maximum resident set).
. "$(dirname "$0")/perf_lib.sh"

# 1. Against this host's own MemAvailable: 4 TiB per buffer cannot fit.
start=$(date +%s)
perf all_reduce -b 1M -e 4096G -np 2 --backend socket >"$TMP/big.out" 2>"$TMP/big.err"
st=$?
check "4 TiB sweep refused with status 6" [ "$st" -eq 6 ]
check "the refusal names the figure and MemAvailable" \
    grep -q 'needs 16.0 TiB of host memory on this host (2 local ranks x 2 buffers x 4.0 TiB for -e 4398046511104) but MemAvailable is ' "$TMP/big.err"
check "nothing on stdout, no rank started" [ ! -s "$TMP/big.out" ]
check "refused at once (< 5 s)" [ $(( $(date +%s) - start )) -lt 5 ]

# 2. A sysroot whose /proc/meminfo says 1 GiB is available: the figure is
#    ranks x buffers x -e, the scratch buffer counts for reduce_scatter,
#    -g ranks count as local ranks, and the advice is an -e that fits.
mkdir -p "$TMP/root/proc"
printf 'MemTotal:       33554432 kB\nMemFree:          524288 kB\nMemAvailable:    1048576 kB\n' \
    >"$TMP/root/proc/meminfo"
NCD_SYSROOT=$TMP/root perf all_reduce -b 1M -e 512M -g 2 --backend socket \
    >"$TMP/s1.out" 2>"$TMP/s1.err"
check "-g 2 x 2 x 512 MiB > 1 GiB: status 6" [ $? -eq 6 ]
check "message: 2.0 GiB = 2 local ranks x 2 buffers x 512.0 MiB, 1.0 GiB available, -e 256M fits" \
    grep -q 'needs 2.0 GiB .*(2 local ranks x 2 buffers x 512.0 MiB for -e 536870912) but MemAvailable is 1.0 GiB: lower -e (-e 256M fits)' "$TMP/s1.err"
NCD_SYSROOT=$TMP/root perf reduce_scatter -b 1M -e 256M -np 2 --backend socket \
    >/dev/null 2>"$TMP/s2.err"
check "reduce_scatter counts its scratch buffer: 2 x 3 x 256 MiB" \
    grep -q '(2 local ranks x 3 buffers x 256.0 MiB' "$TMP/s2.err"
NCD_SYSROOT=$TMP/root perf all_reduce -b 1M -e 128M -np 8 --backend socket \
    >/dev/null 2>"$TMP/s3.err"
check "-np 8: 8 local ranks" grep -q '(8 local ranks x 2 buffers x 128.0 MiB' "$TMP/s3.err"

# 3. A sweep that fits runs (real MemAvailable).
perf all_reduce -b 1M -e 1M -n 1 -np 2 --backend socket >"$TMP/ok.out" 2>&1
check "a sweep that fits runs" grep -qx '# Out of bounds values : 0 OK' "$TMP/ok.out"

# 4. Peak RSS per rank (-np: one rank per process) at 64 MiB, for a
#    collective without and ones with a scratch buffer (AddressSanitizer
#    builds fit too: shadow memory adds 1/8, ~236 MiB for alltoall).
TIME=/usr/bin/time
if [ ! -x $TIME ]; then
    bad "GNU time (/usr/bin/time) missing: scripts/install-deps.sh installs it"
else
    for c in all_reduce reduce_scatter all_gather alltoall; do
        $TIME -f %M -o "$TMP/rss" "$NCD_BIN" perf $c -b 64M -e 64M -n 1 -w 1 -np 2 \
            --backend socket >"$TMP/rss.out" 2>&1
        kib=$(tail -1 "$TMP/rss")
        check "$c 64 MiB: peak RSS ${kib} KiB <= 3 x 64 MiB + 64 MiB" \
            [ "$kib" -le $(( (3 * 64 + 64) * 1024 )) ]
    done
fi
finish
