#!/bin/sh
# nccl-doctor verify: every status of every step, driven by the test-only
# libnccl/libcudart stand-ins (tests/perf/fake_*.c) over recorded sysroots,
# and on this machine with whatever CUDA/NCCL it has (t0711: across
# processes).
. "$(dirname "$0")/lib.sh"
FAKE="${NCD_BUILD_DIR:-.}/tests/fakecuda"
FIX=$NCD_SOURCE_DIR/tests/fixtures/sysroots
[ -f "$FAKE/libnccl.so.2" ] || skip_all "fake NCCL not built ($FAKE)"
command -v jq >/dev/null || skip_all "jq not installed"

DGX="--sysroot $FIX/dgx-8gpu-4hca"
CLEAN="--sysroot $FIX/cloud-vm-ens5-docker"
A100=0000:13:00.0,0000:14:00.0

# verify with the stand-ins: small sweep; status in $TEST_TMP/rc
fv() {
    LD_LIBRARY_PATH="$FAKE" FAKE_CUDA_PCI=${FAKE_CUDA_PCI-$A100} \
        "$NCD_BIN" verify -b 64K -e 128K -n 1 --json "$@" >"$TEST_TMP/j" 2>"$TEST_TMP/err"
    echo $? >"$TEST_TMP/rc"
}
# st NAME: "STATUS reason" of step NAME
st() { jq -r --arg n "$1" '.steps[] | select(.name == $n) | .status + " " + .reason' "$TEST_TMP/j"; }
ev() { jq -r --arg n "$1" '.steps[] | select(.name == $n) | .evidence[]' "$TEST_TMP/j"; }
rc() { cat "$TEST_TMP/rc"; }

test_expect_success 'all steps pass on 2 stand-in GPUs: exit 0, steps[] with every field' '
    FAKE_CUDA_DEVICES=2 fv $CLEAN &&
    [ "$(rc)" = 0 ] &&
    jq -e "[.steps[].name] == [\"node\",\"gpu0\",\"gpu1\",\"topology\",\"all-gpus\"]" "$TEST_TMP/j" &&
    jq -e "all(.steps[]; .status == \"PASS\" and (.reason | length) > 0 and
           (.seconds | type) == \"number\" and (.evidence | type) == \"array\")" "$TEST_TMP/j" &&
    jq -e ".summary == (.summary + {passed: 5, failed: 0, skipped: 0, status: \"PASS\"})" "$TEST_TMP/j" &&
    st node | grep -q "^PASS no error finding" &&
    st gpu0 | grep -q "^PASS GPU 0 (Fake GPU 0.*): context, memory, a 1-rank communicator and an all_reduce work" &&
    ev gpu0 | grep -q "^all_reduce (sum) of 262144 floats: every element as expected" &&
    ev gpu0 | grep -q "^teardown: communicator, stream and buffers freed" &&
    st all-gpus | grep -q "^PASS results correct, best busbw [0-9.]* GB/s; not judged against the links: CUDA device 0 is not in this node.s PCI topology"
'
test_expect_success 'text form: one line per step, then the summary line' '
    LD_LIBRARY_PATH="$FAKE" FAKE_CUDA_DEVICES=2 "$NCD_BIN" verify $CLEAN -b 64K -e 64K -n 1 >"$TEST_TMP/t" &&
    grep -Eq "^\[PASS\] gpu1 +[0-9.]+ s  GPU 1 " "$TEST_TMP/t" &&
    grep -Eq "^verify: 5 passed, 0 failed, 0 skipped in [0-9.]+ s: PASS$" "$TEST_TMP/t"
'

# step node
test_expect_success 'node: an error finding of check fails it, exit 2' '
    FAKE_CUDA_DEVICES=2 fv $DGX &&
    [ "$(rc)" = 2 ] &&
    st node | grep -q "^FAIL 1 error finding (PCIe ACS redirects peer-to-peer traffic" &&
    ev node | grep -q "^error sys.pci.acs-redirect: "
'

# step gpu: the machine has no usable GPU, and says exactly why
test_expect_success 'no driver: gpu FAILs naming it, no GPU step passes, exit 2' '
    FAKE_CUDA_DEVICES=2 FAKE_CUDA_DRIVER=0 fv $CLEAN &&
    [ "$(rc)" = 2 ] &&
    st gpu | grep -q "^FAIL no driver: no NVIDIA driver is installed or loaded here (cudaDriverGetVersion reports none; .*cudaErrorInsufficientDriver (35)" &&
    st topology | grep -q "^SKIP peer access not checked: no usable GPU" &&
    st all-gpus | grep -q "^SKIP no usable GPU" &&
    jq -e ".summary.status == \"FAIL\" and .summary.passed == 1" "$TEST_TMP/j"
'
test_expect_success 'driver too old for the runtime: both CUDA versions named' '
    FAKE_CUDA_DEVICES=2 FAKE_CUDA_DRIVER=11080 fv $CLEAN &&
    [ "$(rc)" = 2 ] &&
    st gpu | grep -q "^FAIL driver too old: the NVIDIA driver supports CUDA 11.8, the CUDA runtime .*libcudart.so is CUDA 12.4"
'
test_expect_success 'no libcudart: where the loader looked' '
    FAKE_CUDA_DEVICES=2 fv $CLEAN --cudart-lib /nonexistent/libcudart.so &&
    [ "$(rc)" = 2 ] &&
    st gpu | grep -q "^FAIL no libcudart: .*/nonexistent/libcudart.so"
'
test_expect_success 'no libnccl: where the loader looked' '
    FAKE_CUDA_DEVICES=2 fv $CLEAN --nccl-lib /nonexistent/libnccl.so.2 &&
    [ "$(rc)" = 2 ] &&
    st gpu | grep -q "^FAIL no libnccl: .*/nonexistent/libnccl.so.2"
'
test_expect_success 'no device: CUDA_VISIBLE_DEVICES of this process named' '
    FAKE_CUDA_DEVICES=0 CUDA_VISIBLE_DEVICES=7 fv &&
    [ "$(rc)" = 2 ] &&
    st gpu | grep -q "^FAIL no GPU visible: .*CUDA_VISIBLE_DEVICES=.7. hides the others"
'

# step gpu<N>
test_expect_success 'gpu<N>: communicator init failure fails every card with NCCL.s error' '
    FAKE_CUDA_DEVICES=2 FAKE_NCCL_INIT_FAIL=1 fv $CLEAN &&
    [ "$(rc)" = 2 ] &&
    st gpu0 | grep -q "^FAIL ncclCommInitRank (1 rank) failed on GPU 0: " &&
    st gpu1 | grep -q "^FAIL ncclCommInitRank (1 rank) failed on GPU 1: " &&
    st all-gpus | grep -q "^FAIL "
'
test_expect_success 'gpu<N> and all-gpus: a wrong all_reduce result is caught' '
    FAKE_CUDA_DEVICES=2 FAKE_NCCL_CORRUPT=1 fv $CLEAN &&
    [ "$(rc)" = 2 ] &&
    st gpu0 | grep -q "^FAIL ncclAllReduce on GPU 0 gave a wrong result: 1 of 262144 elements differ (first at 0: " &&
    st all-gpus | grep -q "^FAIL all_reduce gave wrong results: [1-9][0-9]* wrong elements over the sweep"
'

# step topology
test_expect_success 'topology: peer access next to the path type, the matrix as evidence' '
    FAKE_CUDA_DEVICES=2 fv $DGX --min-ratio 0 &&
    st topology | grep -q "^PASS 2 GPUs: peer access wherever the path allows it" &&
    ev topology | grep -q "^GPU0-GPU1: NV12 peer access yes" &&
    ev topology | grep -Eq "^GPU0 +X +NV12 +NV12 "
'
test_expect_success 'topology: NVLink between two GPUs without peer access fails' '
    FAKE_CUDA_DEVICES=2 FAKE_CUDA_NO_PEER=1 fv $DGX --min-ratio 0 &&
    [ "$(rc)" = 2 ] &&
    st topology | grep -q "^FAIL GPU0 and GPU1 are NV apart, yet CUDA denies peer access" &&
    ev topology | grep -q "^GPU0-GPU1: NV12 peer access no"
'
test_expect_success 'topology: NODE path without peer access is no failure (PCIe P2P not expected)' '
    FAKE_CUDA_DEVICES=2 FAKE_CUDA_NO_PEER=1 FAKE_CUDA_PCI=0000:17:00.0,0000:3b:00.0 \
        fv --sysroot "$FIX/docker-shm64m" --min-ratio 0 &&
    st topology | grep -q "^PASS " &&
    ev topology | grep -q "^GPU0-GPU1: NODE peer access no"
'
test_expect_success 'topology: 1 GPU passes with no pair to check' '
    FAKE_CUDA_DEVICES=1 fv $DGX &&
    st topology | grep -q "^PASS 1 GPU: no pair to check"
'

# step all-gpus
test_expect_success 'all-gpus: busbw far below the NVLink expectation fails (slow link)' '
    FAKE_CUDA_DEVICES=2 FAKE_NCCL_DELAY_US=20000 fv $DGX &&
    [ "$(rc)" = 2 ] &&
    st all-gpus | grep -q "^FAIL best busbw [0-9.]* GB/s is [0-9.e-]*% of the 300.0 GB/s the slowest path should carry (GPU0-GPU1 NV12: 12 x NVLink 3 at 25 GB/s = 300.0 GB/s); under 50% fails" &&
    ev all-gpus | grep -q "^all_reduce float sum, -b 65536 -e 131072 -f 2 -n 1 over 2 GPUs"
'
test_expect_success 'all-gpus: judged against PCIe from sysfs (max_link_* in this capture)' '
    FAKE_CUDA_DEVICES=2 FAKE_CUDA_PCI=0000:17:00.0,0000:3b:00.0 fv --sysroot "$FIX/docker-shm64m" --min-ratio 0 &&
    st all-gpus | grep -q "^PASS results correct, best busbw [0-9.]* GB/s = [0-9.e-]*% of the 31.5 GB/s" &&
    ev all-gpus | grep -q "^slowest path: GPU0-GPU1 NODE: slowest link PCIe 4.0 x16 at 0000:17:00.0 (max link rate, 31.5 GB/s)"
'
test_expect_success 'all-gpus: sizes clamped to the free GPU memory, or FAIL when none fits' '
    FAKE_CUDA_DEVICES=2 FAKE_CUDA_MEM_MB=513 fv $CLEAN -b 64K -e 1G &&
    ev all-gpus | grep -q "^all_reduce float sum, -b 65536 -e 524288 -f 2 -n 1 over 2 GPUs, -e clamped to fit" &&
    FAKE_CUDA_DEVICES=2 FAKE_CUDA_MEM_MB=256 fv $CLEAN &&
    st all-gpus | grep -q "^FAIL not enough free GPU memory for the sweep: GPU 0 has 0.25 GiB free"
'
test_expect_success 'all-gpus: 1 GPU is a SKIP, never a pass' '
    FAKE_CUDA_DEVICES=1 fv $CLEAN &&
    [ "$(rc)" = 0 ] &&
    st all-gpus | grep -q "^SKIP 1 GPU visible: nothing to reduce across"
'

# usage
test_expect_success 'bad usage exits 3 with a message' '
    "$NCD_BIN" verify -b 1G -e 1M >/dev/null 2>"$TEST_TMP/e1"; [ $? -eq 3 ] &&
    grep -q "is larger than -e" "$TEST_TMP/e1" &&
    "$NCD_BIN" verify --min-ratio 2 >/dev/null 2>"$TEST_TMP/e2"; [ $? -eq 3 ] &&
    "$NCD_BIN" verify --full -b 1M >/dev/null 2>"$TEST_TMP/e3"; [ $? -eq 3 ] &&
    "$NCD_BIN" verify -n 0 >/dev/null 2>"$TEST_TMP/e4"; [ $? -eq 3 ]
'

# this machine, with its own CUDA/NCCL (or none): never a passed GPU step
test_expect_success 'this machine: --json lists the steps; no GPU, no passed GPU step, non-zero exit' '
    timeout 600 "$NCD_BIN" verify --json -b 1M -e 4M >"$TEST_TMP/j" 2>"$TEST_TMP/err"; r=$?
    jq -e ".steps | length >= 4" "$TEST_TMP/j" &&
    if jq -e "any(.steps[]; .name == \"gpu\")" "$TEST_TMP/j" >/dev/null; then
        [ $r -eq 2 ] &&
        st gpu | grep -Eq "^FAIL (no driver|driver too old|no libcudart|no libnccl|no GPU visible|CUDA error): " &&
        ! jq -e "any(.steps[]; (.name | test(\"^(gpu|topology|all-gpus)\")) and .status == \"PASS\")" "$TEST_TMP/j"
    else
        echo "# this machine has a usable GPU: $(jq -c "[.steps[] | .name + \"=\" + .status]" "$TEST_TMP/j")"
        [ $r -eq 0 ] || [ $r -eq 2 ]
    fi
'
test_done
