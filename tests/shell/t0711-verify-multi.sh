#!/bin/sh
# nccl-doctor verify across processes (-np, torchrun and Paddle launcher
# variables): the multi-node step and host:<name> steps, driven by the
# test-only libnccl/libcudart stand-ins (tests/perf/fake_*.c, ranks in
# several processes with FAKE_NCCL_XPROC).  t0710 has the node's steps.
. "$(dirname "$0")/lib.sh"
FAKE="${NCD_BUILD_DIR:-.}/tests/fakecuda"
FIX=$NCD_SOURCE_DIR/tests/fixtures/sysroots
[ -f "$FAKE/libnccl.so.2" ] || skip_all "fake NCCL not built ($FAKE)"
command -v jq >/dev/null || skip_all "jq not installed"

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

# step multi-node: -np forks processes that meet over TCP on this machine
export FAKE_NCCL_XPROC=1
test_expect_success 'multi-node under -np 2: the all_reduce with one GPU per process passes' '
    FAKE_CUDA_DEVICES=2 fv $CLEAN -np 2 &&
    [ "$(rc)" = 0 ] &&
    st multi-node | grep -q "^PASS probe not run (sysroot); all_reduce over 2 processes (one GPU each, -e 131072): results correct" &&
    [ "$(jq "[.steps[] | select(.name == \"multi-node\")] | length" "$TEST_TMP/j")" = 1 ]
'
test_expect_success 'multi-node: a wrong result across processes fails' '
    FAKE_CUDA_DEVICES=2 FAKE_NCCL_CORRUPT=1 fv $CLEAN -np 2 &&
    [ "$(rc)" = 2 ] &&
    st multi-node | grep -q "^FAIL across the nodes: all_reduce gave wrong results"
'
test_expect_success 'multi-node: a process without a GPU of its own is a SKIP that says which' '
    FAKE_CUDA_DEVICES=1 fv $CLEAN -np 2 &&
    st multi-node | grep -q "^SKIP all_reduce across the nodes not run: process 1 on .* has no usable GPU (local process 1 has no GPU of its own (1 visible))"
'
test_expect_success 'multi-node on this machine: probe runs between the processes' '
    LD_LIBRARY_PATH="$FAKE" FAKE_CUDA_DEVICES=2 timeout 120 "$NCD_BIN" verify -np 2 -b 64K -e 64K -n 1 --json >"$TEST_TMP/j" 2>"$TEST_TMP/err"
    ev multi-node | grep -q "^probe: 2 processes on 1 hosts" &&
    st multi-node | grep -Eq "^(PASS probe clean; all_reduce over 2 processes|FAIL probe: [0-9]+ error finding)"
'
# launched by torchrun / Paddle's launcher: their variables, two processes;
# with OTHER_HOST set, process 1 runs in its own UTS namespace under that
# host name (a second node as far as the job runner can tell)
two() { # two "env of process 0" "env of process 1" [verify args]
    e0=$1 e1=$2; shift 2
    env $e0 LD_LIBRARY_PATH="$FAKE" FAKE_CUDA_DEVICES=2 timeout 120 "$NCD_BIN" verify \
        -b 64K -e 64K -n 1 --json "$@" >"$TEST_TMP/j" 2>"$TEST_TMP/e0" &
    p=$!
    if [ -n "${OTHER_HOST-}" ]; then
        unshare --uts sh -c 'hostname "$0" && exec "$@"' "$OTHER_HOST" \
            env $e1 LD_LIBRARY_PATH="$FAKE" FAKE_CUDA_DEVICES=2 timeout 120 "$NCD_BIN" verify \
            -b 64K -e 64K -n 1 --json "$@" >"$TEST_TMP/j1" 2>"$TEST_TMP/e1"
    else
        env $e1 LD_LIBRARY_PATH="$FAKE" FAKE_CUDA_DEVICES=2 timeout 120 "$NCD_BIN" verify \
            -b 64K -e 64K -n 1 --json "$@" >"$TEST_TMP/j1" 2>"$TEST_TMP/e1"
    fi
    r1=$?
    wait $p
    echo "$? $r1" >"$TEST_TMP/rc"
}
# what the two processes said, when a case fails
said() {
    cat "$TEST_TMP/rc" "$TEST_TMP/e0" "$TEST_TMP/e1"
    jq -c "[.steps[] | .name + \"=\" + .status + \" \" + .reason]" "$TEST_TMP/j"
    false
}
P=$((23000 + $$ % 9000))
if unshare --uts true 2>/dev/null; then
OTHER_HOST=nodeb-$$
test_expect_success 'torchrun variables, two nodes (one a UTS namespace): host:<name>, then multi-node' '
    two "RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=$P" \
        "RANK=1 WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=$P" $CLEAN &&
    [ "$(rc)" = "0 0" ] && [ ! -s "$TEST_TMP/j1" ] &&
    jq -e "[.steps[].name] == [\"node\",\"gpu0\",\"gpu1\",\"topology\",\"all-gpus\",\"host:$OTHER_HOST\",\"multi-node\"]" "$TEST_TMP/j" &&
    st "host:$OTHER_HOST" | grep -q "^PASS all 5 steps passed or were skipped on $OTHER_HOST (process 1)" &&
    st multi-node | grep -q "^PASS probe not run (sysroot); all_reduce over 2 processes" || said
'
test_expect_success 'the other node'"'"'s failed steps come back as its host step' '
    two "RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=$((P + 1)) FAKE_NCCL_WAIT_S=3" \
        "RANK=1 WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=$((P + 1)) FAKE_NCCL_INIT_FAIL=1" $CLEAN &&
    [ "$(rc)" = "2 2" ] &&
    st multi-node | grep -q "^FAIL across the nodes: the all_reduce sweep stopped" &&
    st "host:$OTHER_HOST" | grep -q "^FAIL 3 of 5 steps failed on $OTHER_HOST (process 1): gpu0: ncclCommInitRank (1 rank) failed on GPU 0: " || said
'
unset OTHER_HOST
else
    echo "# unshare --uts not permitted here: the two-node cases are not run"
fi
Q=$((P + 2))
test_expect_success 'paddle.distributed.launch variables, two local processes' '
    two "PADDLE_TRAINER_ID=0 PADDLE_TRAINERS_NUM=2 PADDLE_LOCAL_RANK=0 PADDLE_TRAINER_ENDPOINTS=127.0.0.1:$Q,127.0.0.1:$((Q+1))" \
        "PADDLE_TRAINER_ID=1 PADDLE_TRAINERS_NUM=2 PADDLE_LOCAL_RANK=1 PADDLE_TRAINER_ENDPOINTS=127.0.0.1:$Q,127.0.0.1:$((Q+1))" $CLEAN &&
    [ "$(rc)" = "0 0" ] &&
    jq -e "[.steps[].name] == [\"node\",\"gpu0\",\"gpu1\",\"topology\",\"all-gpus\",\"multi-node\"]" "$TEST_TMP/j" &&
    st multi-node | grep -q "^PASS .*all_reduce over 2 processes (one GPU each" || said
'
unset FAKE_NCCL_XPROC

test_done
