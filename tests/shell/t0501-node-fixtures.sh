#!/bin/sh
# Node fixtures: every expected finding appears, no unlisted error.
. "$NCD_SOURCE_DIR/tests/shell/node-lib.sh"
FIX=$NCD_SOURCE_DIR/tests/fixtures/sysroots

check_fixture() {
    d=$FIX/$1
    "$NCD_BIN" check --sysroot "$d" --json >"$TEST_TMP/$1.json"
    rc=$?
    [ $rc -le 2 ] || { echo "exit status $rc"; return 1; }
    findings_of <"$TEST_TMP/$1.json" >"$TEST_TMP/$1.got"
    [ -s "$TEST_TMP/$1.got" ] || { echo "no findings parsed"; return 1; }
    ok=0
    while read -r line; do
        [ -n "$line" ] || continue
        grep -qx "$line" "$TEST_TMP/$1.got" || { echo "missing: $line"; ok=1; }
    done <"$d/expected"
    grep '^error ' "$TEST_TMP/$1.got" | while read -r line; do
        grep -qx "$line" "$d/expected" || { echo "unexpected: $line"; exit 1; }
    done || ok=1
    # exit status follows the worst finding
    if grep -q '^error ' "$d/expected"; then [ $rc -eq 2 ] || ok=1; fi
    return $ok
}

for f in dgx-8gpu-4hca roce-cloud docker-shm64m k8s-pod-gpu laptop-dgpu; do
    test_expect_success "fixture $f" "check_fixture $f"
done

test_expect_success 'text report names the /dev/shm formula and the Docker fix' '
    "$NCD_BIN" check --sysroot "$FIX/docker-shm64m" --color=never >"$TEST_TMP/t" ;
    grep -q "need = 4 x 3 pairs x 2 channels" "$TEST_TMP/t" &&
    grep -q -- "--shm-size=1g" "$TEST_TMP/t"
'
test_expect_success 'Kubernetes fix is an emptyDir with medium: Memory' '
    "$NCD_BIN" check --sysroot "$FIX/k8s-pod-gpu" --json >"$TEST_TMP/k" ;
    grep -q "medium: Memory" "$TEST_TMP/k"
'
test_expect_success 'RoCE: NCCL auto GID index 3 recorded in facts' '
    "$NCD_BIN" check --sysroot "$FIX/roce-cloud" --json >"$TEST_TMP/r" ;
    grep -q "\"nccl_auto_gid_index\": 3" "$TEST_TMP/r"
'
test_expect_success 'a forced GID index on a link-local entry is an error' '
    rm -rf "$TEST_TMP/rc" && cp -a "$FIX/roce-cloud" "$TEST_TMP/rc" &&
    echo NCCL_IB_GID_INDEX=1 >>"$TEST_TMP/rc/.ncd/env" &&
    "$NCD_BIN" check --sysroot "$TEST_TMP/rc" --json | findings_of >"$TEST_TMP/g" ;
    grep -qx "error net.ib.gid-index" "$TEST_TMP/g"
'
test_expect_success 'NCCL_IB_HCA matching nothing: silent socket fallback warned' '
    rm -rf "$TEST_TMP/d" && cp -a "$FIX/dgx-8gpu-4hca" "$TEST_TMP/d" &&
    sed -i "s/^NCCL_IB_HCA=.*/NCCL_IB_HCA==mlx5_9/" "$TEST_TMP/d/.ncd/env" &&
    "$NCD_BIN" check --sysroot "$TEST_TMP/d" --json | findings_of >"$TEST_TMP/h" ;
    grep -qx "warning net.ib.hca-no-match" "$TEST_TMP/h" &&
    ! grep -qx "ok net.ib.ok" "$TEST_TMP/h"
'
test_done
