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
test_expect_success 'a container given one GPU is judged for one GPU, not the host count' '
    rm -rf "$TEST_TMP/one" && cp -a "$FIX/docker-shm64m" "$TEST_TMP/one" &&
    rm -f "$TEST_TMP/one/dev/nvidia1" "$TEST_TMP/one/dev/nvidia2" "$TEST_TMP/one/dev/nvidia3" &&
    "$NCD_BIN" check --sysroot "$TEST_TMP/one" --json | findings_of >"$TEST_TMP/o1" ;
    grep -qx "ok sys.shm.ok" "$TEST_TMP/o1" && ! grep -q "sys.shm.too-small" "$TEST_TMP/o1" &&
    rm -rf "$TEST_TMP/two" && cp -a "$FIX/docker-shm64m" "$TEST_TMP/two" &&
    echo NVIDIA_VISIBLE_DEVICES=GPU-aaaa,GPU-bbbb >>"$TEST_TMP/two/.ncd/env" &&
    "$NCD_BIN" check --sysroot "$TEST_TMP/two" --json >"$TEST_TMP/o2" ;
    grep -q "\"local_gpus\": 2" "$TEST_TMP/o2"
'
test_expect_success 'an IB and a RoCE port selected together are warned' '
    rm -rf "$TEST_TMP/mx" && cp -a "$FIX/dgx-8gpu-4hca" "$TEST_TMP/mx" &&
    echo Ethernet >"$(readlink -f "$TEST_TMP/mx/sys/class/infiniband/mlx5_3")/ports/1/link_layer" &&
    "$NCD_BIN" check --sysroot "$TEST_TMP/mx" --json | findings_of >"$TEST_TMP/m" ;
    grep -qx "warning net.ib.mixed-link-layer" "$TEST_TMP/m"
'
test_expect_success 'a Slurm job and a Podman container are recognised' '
    rm -rf "$TEST_TMP/sl" && cp -a "$FIX/laptop-dgpu" "$TEST_TMP/sl" &&
    echo SLURM_JOB_ID=4242 >>"$TEST_TMP/sl/.ncd/env" &&
    mkdir -p "$TEST_TMP/sl/run" && : >"$TEST_TMP/sl/run/.containerenv" &&
    "$NCD_BIN" check --sysroot "$TEST_TMP/sl" --json >"$TEST_TMP/s" ;
    findings_of <"$TEST_TMP/s" >"$TEST_TMP/sf" &&
    grep -qx "info sys.virt.slurm" "$TEST_TMP/sf" &&
    grep -qx "info sys.virt.container" "$TEST_TMP/sf" &&
    grep -q "\"runtime\": \"podman\"" "$TEST_TMP/s"
'
test_expect_success 'iptables-legacy tables are reported as not analysed' '
    rm -rf "$TEST_TMP/ipt" && cp -a "$FIX/roce-cloud" "$TEST_TMP/ipt" &&
    printf "filter\nnat\n" >"$TEST_TMP/ipt/proc/net/ip_tables_names" &&
    "$NCD_BIN" check --sysroot "$TEST_TMP/ipt" --json | findings_of >"$TEST_TMP/i" ;
    grep -qx "info net.firewall.iptables-legacy" "$TEST_TMP/i"
'
test_expect_success 'NCCL_IB_HCA: a typo and a missing port are named' '
    rm -rf "$TEST_TMP/ty" && cp -a "$FIX/dgx-8gpu-4hca" "$TEST_TMP/ty" &&
    sed -i "s/^NCCL_IB_HCA=.*/NCCL_IB_HCA=mlx5_0:1,mlx5_O,mlx5_1:2/" "$TEST_TMP/ty/.ncd/env" &&
    "$NCD_BIN" check --sysroot "$TEST_TMP/ty" --color=never >"$TEST_TMP/tyt" ;
    grep -q "token .mlx5_O. matches no RDMA device" "$TEST_TMP/tyt" &&
    grep -q "token .mlx5_1:2. matches no RDMA device" "$TEST_TMP/tyt" &&
    ! grep -q "token .mlx5_0:1. matches" "$TEST_TMP/tyt"
'
test_expect_success 'a provider config without its library is warned' '
    rm -rf "$TEST_TMP/pv" && cp -a "$FIX/dgx-8gpu-4hca" "$TEST_TMP/pv" &&
    rm "$TEST_TMP/pv/usr/lib/x86_64-linux-gnu/libibverbs/libmlx5-rdmav34.so" &&
    "$NCD_BIN" check --sysroot "$TEST_TMP/pv" --json | findings_of >"$TEST_TMP/pvf" ;
    grep -qx "warning net.ib.no-provider" "$TEST_TMP/pvf" &&
    "$NCD_BIN" check --sysroot "$FIX/dgx-8gpu-4hca" --json | findings_of >"$TEST_TMP/pvg" ;
    ! grep -q "net.ib.no-provider" "$TEST_TMP/pvg"
'
test_done
