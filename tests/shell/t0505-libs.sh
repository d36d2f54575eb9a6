#!/bin/sh
# Every libnccl a process could load: versions from the file, the loader's
# pick, mixed versions, live: the loader's order and the file's version.
. "$NCD_SOURCE_DIR/tests/shell/node-lib.sh"
FAKE=${NCD_BUILD_DIR:?}/fake
[ -f "$FAKE/2.19.3/libnccl.so.2" ] && [ -f "$FAKE/2.21.5/libnccl.so.2" ] ||
    skip_all "stand-in libnccl builds missing"
R=$TEST_TMP/root

test_expect_success 'set up a tree with three copies of libnccl' '
    mkdir -p "$R/usr/lib/x86_64-linux-gnu" "$R/opt/nccl/lib" "$R/.ncd" \
             "$R/usr/local/lib/python3.10/dist-packages/nvidia/nccl/lib" &&
    cp "$FAKE/2.21.5/libnccl.so.2" "$R/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5" &&
    ln -s libnccl.so.2.21.5 "$R/usr/lib/x86_64-linux-gnu/libnccl.so.2" &&
    cp "$FAKE/2.19.3/libnccl.so.2" "$R/opt/nccl/lib/libnccl.so.2" &&
    cp "$FAKE/2.21.5/libnccl.so.2" "$R/usr/local/lib/python3.10/dist-packages/nvidia/nccl/lib/" &&
    printf "LD_LIBRARY_PATH=/opt/nccl/lib:/nonexistent\nFLAGS_nccl_dir=/opt/nccl/lib\n" >"$R/.ncd/env"
'
test_expect_success 'versions read from .rodata, LD_LIBRARY_PATH wins, mixed warned' '
    "$NCD_BIN" check --sysroot "$R" --json >"$TEST_TMP/j" ;
    findings_of <"$TEST_TMP/j" >"$TEST_TMP/f" &&
    grep -qx "warning lib.nccl.mixed-versions" "$TEST_TMP/f" &&
    grep -qx "ok lib.nccl.found" "$TEST_TMP/f" &&
    grep -q "libnccl.so.2 resolves to /opt/nccl/lib/libnccl.so.2 (NCCL 2.19.3, built for CUDA 12.2)" "$TEST_TMP/j" &&
    grep -q "\"origin\": \"site-packages\"" "$TEST_TMP/j" &&
    grep -q "\"version\": \"2.21.5\"" "$TEST_TMP/j"
'
test_expect_success 'Paddle FLAGS_nccl_dir without libnccl.so is an error' '
    grep -qx "error lib.nccl.flags-dir" "$TEST_TMP/f" &&
    ln -s libnccl.so.2 "$R/opt/nccl/lib/libnccl.so" &&
    "$NCD_BIN" check --sysroot "$R" --json | findings_of >"$TEST_TMP/f2" ;
    ! grep -q "lib.nccl.flags-dir" "$TEST_TMP/f2"
'
test_expect_success 'without LD_LIBRARY_PATH the system copy is the pick' '
    printf "HOME=/root\n" >"$R/.ncd/env" &&
    "$NCD_BIN" check --sysroot "$R" --json >"$TEST_TMP/j3" ;
    grep -q "resolves to /usr/lib/x86_64-linux-gnu/libnccl.so.2 (NCCL 2.21.5" "$TEST_TMP/j3"
'
test_expect_success 'live: the loader pick and its .rodata version, no dlopen' '
    LD_LIBRARY_PATH="$FAKE/2.19.3" "$NCD_BIN" check --json >"$TEST_TMP/live" ;
    grep -q "resolves to $FAKE/2.19.3/libnccl.so.2 (NCCL 2.19.3" "$TEST_TMP/live" &&
    grep -q "the dynamic loader.s search order (live)" "$TEST_TMP/live"
'
test_done
