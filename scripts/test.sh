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
st=0
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
    ctest --test-dir "$BUILD" --output-on-failure -j "$(nproc)" "$@" || st=$?
# A short, reproducible libFuzzer run (seed 1, NCD_FUZZ_RUNS inputs each,
# default 3000) of every fuzz target (cmake/fuzz.cmake: the explain line
# parser and rules loader, the rc-file editor, the perf/probe wire frames,
# NCCL variable values, probe results, the --sysroot tarball reader): a
# separate small clang build of the fuzz targets, which also builds and
# links nccl-doctor with clang (the library is compiled for the fuzz targets
# anyway, so this adds only the CLI), and runs its --help.  Skipped without
# clang, with extra ctest args, or with NCD_NO_FUZZ=1.
if [ $# -eq 0 ] && [ -z "${NCD_NO_FUZZ:-}" ] && command -v clang >/dev/null 2>&1; then
    FUZZ=${NCD_FUZZ_BUILD_DIR:-build-fuzz}
    CC=clang cmake -S . -B "$FUZZ" -DCMAKE_BUILD_TYPE=Debug -DNCD_FUZZ=ON \
          -DNCD_ASAN=ON -DNCD_UBSAN=ON \
          -DNCD_FUZZ_RUNS="${NCD_FUZZ_RUNS:-3000}" >/dev/null
    cmake --build "$FUZZ" -j "$(nproc)" --target fuzz nccl-doctor \
          >"$FUZZ/build.log" 2>&1 || { tail -40 "$FUZZ/build.log"; st=1; }
    "$FUZZ/nccl-doctor" --help >/dev/null ||
        { echo "clang-built nccl-doctor does not run"; st=1; }
    ctest --test-dir "$FUZZ" -L fuzz --output-on-failure || st=1
fi
# One build with clang without sanitizers, -Werror (clang must build and
# link the tool), whose binary runs explain under valgrind's memcheck
# (ctest -L valgrind; memcheck cannot run an ASan binary).  Skipped without
# clang, with extra ctest args, or with NCD_NO_CLANG=1.
if [ $# -eq 0 ] && [ -z "${NCD_NO_CLANG:-}" ] && command -v clang >/dev/null 2>&1; then
    CL=${NCD_CLANG_BUILD_DIR:-build-clang}
    # DWARF 4: the valgrind of Debian 12 cannot read clang's DWARF 5
    CC=clang cmake -S . -B "$CL" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
          -DCMAKE_C_FLAGS=-gdwarf-4 -DNCD_WERROR=ON >/dev/null
    cmake --build "$CL" -j "$(nproc)" --target nccl-doctor \
          >"$CL/build.log" 2>&1 || { tail -40 "$CL/build.log"; st=1; }
    ctest --test-dir "$CL" -L valgrind --output-on-failure || st=1
fi
exit $st
