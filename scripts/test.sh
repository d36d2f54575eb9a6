#!/bin/sh
# Builds nccl-doctor with AddressSanitizer and UBSan and runs the whole test
# suite with ctest.  Usage: scripts/test.sh [extra ctest args]
set -eu
cd "$(dirname "$0")/.."
sh scripts/install-deps.sh
BUILD=${NCD_TEST_BUILD_DIR:-build-test}
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Debug -DNCD_ASAN=ON -DNCD_UBSAN=ON \
      -DNCD_WERROR=ON >/dev/null
cmake --build "$BUILD" -j "$(nproc)"
# Leak checks on; keep going past the first failure so the report is whole.
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
    ctest --test-dir "$BUILD" --output-on-failure -j "$(nproc)" "$@"
