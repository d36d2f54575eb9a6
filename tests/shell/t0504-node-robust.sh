#!/bin/sh
# Bad input loses nothing: garbage, empty files and symlink loops in a
# capture give findings or "unknown", never a crash (run under ASan by
# (.ncd/env is left intact: a corrupt one is refused with status 3 by
# the replay, which t0200 covers.)
# scripts/test.sh).
. "$NCD_SOURCE_DIR/tests/shell/node-lib.sh"
FIX=$NCD_SOURCE_DIR/tests/fixtures/sysroots

run_all() {
    for cmd in "check --json" "check" "topo" "topo --json"; do
        # shellcheck disable=SC2086
        "$NCD_BIN" $cmd --sysroot "$1" >"$TEST_TMP/o" 2>"$TEST_TMP/e"
        rc=$?
        [ $rc -le 2 ] || { echo "$cmd: status $rc"; cat "$TEST_TMP/e"; return 1; }
    done
    "$NCD_BIN" gather --sysroot "$1" -o "$TEST_TMP/re.tgz" >/dev/null || return 1
    "$NCD_BIN" check --sysroot "$TEST_TMP/re.tgz" --json >/dev/null
    [ $? -le 2 ]
}

for f in dgx-8gpu-4hca roce-cloud; do
    test_expect_success "$f with every file replaced by garbage" '
        rm -rf "$TEST_TMP/g" && cp -a "$FIX/'$f'" "$TEST_TMP/g" &&
        find "$TEST_TMP/g" -type f ! -name expected ! -path "*/.ncd/env" | while read -r x; do
            printf "0x\377\000garbage %s\n\n\n::::\t-1 99999999999999999999\n" "$x" >"$x"
        done &&
        run_all "$TEST_TMP/g"
    '
    test_expect_success "$f with every file empty" '
        rm -rf "$TEST_TMP/z" && cp -a "$FIX/'$f'" "$TEST_TMP/z" &&
        find "$TEST_TMP/z" -type f ! -name expected -exec sh -c ": >\"\$1\"" _ {} \; &&
        run_all "$TEST_TMP/z"
    '
done
test_expect_success 'symlink loops and dangling links in sysfs' '
    rm -rf "$TEST_TMP/l" && cp -a "$FIX/dgx-8gpu-4hca" "$TEST_TMP/l" &&
    ln -s loop2 "$TEST_TMP/l/sys/bus/pci/devices/loop1" &&
    ln -s loop1 "$TEST_TMP/l/sys/bus/pci/devices/loop2" &&
    ln -s ../../../nowhere "$TEST_TMP/l/sys/class/infiniband/mlx5_9" &&
    ln -s mlx5_7 "$TEST_TMP/l/sys/class/infiniband/mlx5_7" &&
    run_all "$TEST_TMP/l" &&
    "$NCD_BIN" check --sysroot "$TEST_TMP/l" --json | findings_of >"$TEST_TMP/f" ;
    grep -qx "error sys.pci.acs-redirect" "$TEST_TMP/f"
'
test_expect_success 'a huge GID table and a huge /proc/net/tcp stay bounded' '
    rm -rf "$TEST_TMP/h" && cp -a "$FIX/roce-cloud" "$TEST_TMP/h" &&
    g="$TEST_TMP/h/sys/devices/pci0000:00/0000:00:20.0/infiniband/mlx5_0/ports/1" &&
    i=4; while [ $i -lt 256 ]; do echo 0000:0000:0000:0000:0000:0000:0000:0000 >"$g/gids/$i"; i=$((i+1)); done &&
    awk "BEGIN { for (i = 0; i < 200000; i++) printf \"%6d: 0100007F:%04X 00000000:0000 0A\\n\", i, i % 65536 }" >"$TEST_TMP/h/proc/net/tcp" &&
    run_all "$TEST_TMP/h" &&
    "$NCD_BIN" check --sysroot "$TEST_TMP/h" --json >"$TEST_TMP/hj" ;
    grep -q "\"nccl_auto_gid_index\": 3" "$TEST_TMP/hj"
'
test_done
