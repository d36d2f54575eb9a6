#!/bin/sh
# The fuzz targets get coverage feedback from the library, not only from
# their own file: a libFuzzer binary reports how many 8-bit counters it
# loaded, and a target linked with an uninstrumented libncd has a few dozen
# (cmake/fuzz.cmake must instrument the objects libncd is made of).
# usage: instrumented.sh FUZZ_BINARY SEEDS_DIR
out=$("$1" -runs=0 "$2" 2>&1) || { echo "$out"; exit 1; }
n=$(printf '%s\n' "$out" | sed -n 's/.*(\([0-9]*\) inline 8-bit counters).*/\1/p' | head -n1)
echo "$(basename "$1"): ${n:-no} coverage counters"
[ "${n:-0}" -gt 1000 ]
