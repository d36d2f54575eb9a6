#!/bin/sh
# Builds nccl-doctor (release) and runs `nccl-doctor check` on this machine.
# Usage: scripts/check.sh [check options, e.g. --json]
set -eu
cd "$(dirname "$0")/.."
sh scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" >/dev/null
st=0
./build/nccl-doctor check "$@" || st=$?
# 0 no errors, 1 warnings (--strict), 2 errors found: all are diagnoses.
[ "$st" -le 2 ] || exit "$st"
