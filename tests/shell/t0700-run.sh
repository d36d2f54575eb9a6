#!/bin/sh
# nccl-doctor run -- CMD: exit status, pass-through and logs, signals,
# timeout, the log directory rules, the environment, secrets, --json.
# Children are small shell scripts; the real-NCCL cases are t0701.
. "$(dirname "$0")/lib.sh"
command -v jq >/dev/null || skip_all "jq is not installed"
R="$NCD_BIN run"

# Waits up to $2 tenths of a second for file $1 to exist and be non-empty.
wait_file() {
    i=0
    while [ ! -s "$1" ] && [ $i -lt "$2" ]; do sleep 0.1; i=$((i + 1)); done
    [ -s "$1" ]
}

test_expect_success 'exit status is the command'"'"'s own' '
    st=0; $R --logs d1 -- sh -c "exit 7" 2>err || st=$?
    [ $st -eq 7 ] && grep -q "sh exited with status 7" err &&
    $R --logs d1b -- true 2>err && grep -q "true exited with status 0" err
'

test_expect_success 'a command killed by a signal: 128 + n' '
    st=0; $R --logs d2 -- sh -c "kill -KILL \$\$" 2>err || st=$?
    [ $st -eq 137 ] && grep -q "was killed by signal 9" err
'

test_expect_success 'not found: 127; not executable: 126; nothing created' '
    st=0; $R --logs nf -- no-such-command-$$ 2>err || st=$?
    [ $st -eq 127 ] && grep -q "no-such-command-$$: command not found" err &&
    [ ! -e nf ] &&
    printf "echo x\n" >noexec.sh && chmod 644 noexec.sh && st=0 &&
    { $R --logs ne -- ./noexec.sh 2>err || st=$?; } &&
    [ $st -eq 126 ] && grep -q "Permission denied" err && [ ! -e ne ]
'

test_expect_success 'stdout and stderr pass through and are kept, in order' '
    $R --logs d3 -- sh -c "i=1; while [ \$i -le 3000 ]; do echo o\$i; echo e\$i >&2; i=\$((i+1)); done" >out 2>err &&
    seq 3000 | sed "s/^/o/" >want.o && seq 3000 | sed "s/^/e/" >want.e &&
    test_cmp want.o out && test_cmp want.o d3/stdout.log &&
    test_cmp want.e d3/stderr.log &&
    grep -v "^nccl-doctor run" err >err.child && test_cmp want.e err.child &&
    [ "$(stat -c %a d3)" = 700 ] && [ "$(stat -c %a d3/stdout.log)" = 600 ]
'

test_expect_success 'output is passed on at once, not when the command ends' '
    $R --logs d4 -- sh -c "echo ready; sleep 90" >out5 2>/dev/null &
    pid=$!
    got=0; wait_file out5 400 || got=$?
    running=0; kill -0 $pid 2>/dev/null && running=1
    kill -TERM $pid; wait $pid || :
    [ $got -eq 0 ] && [ $running -eq 1 ] && grep -qx ready out5
'

test_expect_success 'TERM, HUP and USR1 reach the command'"'"'s process group' '
    cat >trap.sh <<-\EOF &&
	trap "echo usr1 >>marks" USR1
	trap "echo hup >>marks" HUP
	trap "echo term >>marks; exit 42" TERM
	sleep 60 &
	echo $! >grandchild
	echo started >started
	while :; do sleep 0.1; done
	EOF
    $R --logs d5 -- sh trap.sh 2>err &
    pid=$!
    wait_file started 150 && wait_file grandchild 50 &&
    kill -USR1 $pid && sleep 0.5 && kill -HUP $pid && sleep 0.5 &&
    kill -TERM $pid; st=0; wait $pid || st=$?
    gc=$(cat grandchild)
    sleep 0.2
    [ $st -eq 42 ] && grep -qx usr1 marks && grep -qx hup marks &&
    grep -qx term marks && ! kill -0 "$gc" 2>/dev/null &&
    [ "$(jq .forwarded_signals d5/run.json)" -eq 3 ]
'

test_expect_success 'a forwarded TERM that kills the command: 143' '
    $R --logs d6 -- sh -c "echo started >started6; exec sleep 60" 2>err &
    pid=$!
    wait_file started6 150 && kill -TERM $pid; st=0; wait $pid || st=$?
    [ $st -eq 143 ] && grep -q "killed by signal 15 (Terminated), forwarded" err
'

test_expect_success '--timeout stops the group, exits 124 and explains' '
    start=$(date +%s)
    st=0; $R --timeout 1 --logs d7 -- sh -c "echo working; sleep 30" >out 2>err || st=$?
    end=$(date +%s)
    [ $st -eq 124 ] && [ $((end - start)) -lt 10 ] &&
    grep -q "was still running after --timeout 1 s" err &&
    grep -q "nccl-doctor explain:" err &&
    [ "$(jq -r .end d7/run.json)" = timed-out ] &&
    [ "$(jq .exit_status d7/run.json)" -eq 124 ]
'

test_expect_success '--timeout: a command that ignores TERM is killed 10 s later' '
    start=$(date +%s)
    st=0; $R --timeout 1 --logs d8 -- sh -c "trap \"\" TERM; sleep 60" 2>err || st=$?
    end=$(date +%s)
    [ $st -eq 124 ] && [ $((end - start)) -ge 10 ] && [ $((end - start)) -lt 20 ]
'

test_expect_success 'a non-empty --logs directory or a file is refused, untouched' '
    mkdir full && echo mine >full/stdout.log && echo x >afile &&
    st=0; $R --logs full -- true 2>err || st=$?
    [ $st -eq 125 ] && grep -q "is not empty" err &&
    [ "$(cat full/stdout.log)" = mine ] && [ "$(ls full)" = stdout.log ] &&
    st=0 && { $R --logs afile -- true 2>err || st=$?; } &&
    [ $st -eq 125 ] && grep -q "not a directory" err && [ "$(cat afile)" = x ] &&
    mkdir empty && $R --logs empty -- true 2>/dev/null && [ -f empty/run.json ] &&
    $R --logs new/deeper -- true 2>/dev/null && [ -f new/deeper/stdout.log ]
'

test_expect_success 'default directory: a fresh ./nccl-doctor-logs/<time>, never a taken one' '
    mkdir -p nccl-doctor-logs &&
    for s in 0 1 2 3; do
        t=$(date -d "+$s sec" +%Y%m%d-%H%M%S)
        mkdir -p nccl-doctor-logs/$t && echo keep >nccl-doctor-logs/$t/keep.txt
    done &&
    $R -- sh -c "echo new-run" >/dev/null 2>err &&
    d=$(sed -n "s/^nccl-doctor run: logs in //p" err | head -1) &&
    [ -d "$d" ] && grep -qx new-run "$d/stdout.log" && [ ! -e "$d/keep.txt" ] &&
    [ "$(cat nccl-doctor-logs/*/keep.txt | wc -l)" -eq 4 ] &&
    [ "$(stat -c %a "$d")" = 700 ]
'

test_expect_success 'NCCL variables set, user settings and the rest of the environment untouched' '
    env | sort >env.parent &&
    $R --logs d9 -- env >env.out 2>/dev/null && sort env.out >env.child &&
    grep -qx NCCL_DEBUG=INFO env.child &&
    grep -qx NCCL_DEBUG_SUBSYS=INIT,BOOTSTRAP,ENV,NET,GRAPH env.child &&
    grep -qx "NCCL_DEBUG_FILE=$TEST_TMP/d9/nccl.%h.%p.log" env.child &&
    ! grep -q "^TORCH" env.child &&
    grep -v "^NCCL_DEBUG" env.child >a && grep -v "^NCCL_DEBUG" env.parent >b &&
    test_cmp b a &&
    NCCL_DEBUG=WARN NCCL_DEBUG_SUBSYS=COLL $R --logs d10 -- env >env2 2>/dev/null &&
    grep -qx NCCL_DEBUG=WARN env2 && grep -qx NCCL_DEBUG_SUBSYS=COLL env2 &&
    [ "$(jq -c .env_kept d10/run.json)" = "[\"NCCL_DEBUG\",\"NCCL_DEBUG_SUBSYS\"]" ]
'

test_expect_success 'a PyTorch launcher gets the flight recorder; a user setting wins' '
    mkdir bin && printf "#!/bin/sh\nenv\n" >bin/torchrun && chmod +x bin/torchrun &&
    PATH="$TEST_TMP/bin:$PATH" $R --logs d11 -- torchrun --nproc-per-node 2 x.py >t.env 2>/dev/null &&
    grep -qx TORCH_FR_BUFFER_SIZE=2000 t.env &&
    grep -qx TORCH_NCCL_TRACE_BUFFER_SIZE=2000 t.env &&
    grep -qx TORCH_NCCL_DUMP_ON_TIMEOUT=1 t.env &&
    grep -qx "TORCH_FR_DUMP_TEMP_FILE=$TEST_TMP/d11/torch-fr-rank" t.env &&
    grep -qx "TORCH_NCCL_DEBUG_INFO_TEMP_FILE=$TEST_TMP/d11/torch-fr-rank" t.env &&
    [ "$(jq -r .launcher d11/run.json)" = torchrun ] &&
    TORCH_NCCL_TRACE_BUFFER_SIZE=0 PATH="$TEST_TMP/bin:$PATH" $R --logs d12 -- torchrun x.py >t2.env 2>/dev/null &&
    grep -qx TORCH_NCCL_TRACE_BUFFER_SIZE=0 t2.env && ! grep -q "^TORCH_FR_BUFFER_SIZE=" t2.env &&
    grep -qx TORCH_NCCL_DUMP_ON_TIMEOUT=1 t2.env
'

test_expect_success 'no secret reaches the log directory unless the command printed it' '
    SECRET_TOKEN=hunter2-$$ MY_PASSWORD=pw-$$ $R --logs d13 -- sh -c "echo hello" \
        --api-key=ak-$$ --password pw2-$$ HF_TOKEN=hf-$$ >/dev/null 2>&1 &&
    ! grep -rq -e hunter2-$$ -e pw-$$ -e ak-$$ -e pw2-$$ -e hf-$$ d13 &&
    jq -r ".command[]" d13/run.json >cmd &&
    grep -qx -- "--api-key=<redacted>" cmd && grep -qx "<redacted>" cmd &&
    grep -qx "HF_TOKEN=<redacted>" cmd &&
    SECRET_TOKEN=hunter3-$$ $R --logs d14 -- sh -c "echo \$SECRET_TOKEN" >/dev/null 2>&1 &&
    [ "$(grep -rl hunter3-$$ d14)" = d14/stdout.log ]
'

test_expect_success 'a reader that goes away does not stop the command or its log' '
    $R --logs d15 -- seq 200000 2>/dev/null | head -1 >first &&
    grep -qx 1 first && sleep 0.5 &&
    [ "$(wc -l <d15/stdout.log)" -eq 200000 ] &&
    [ "$(jq .exit_status d15/run.json)" -eq 0 ]
'

test_expect_success 'on failure explain names the cause with the log path' '
    st=0; $R --logs d16 -- sh -c "echo \"node1:1:1 [0] NCCL WARN Invalid NCCL_COMM_ID, please use format: <ipv4>:<port> or [<ipv6>]:<port> or <hostname>:<port>\" >&2; exit 1" 2>err || st=$?
    [ $st -eq 1 ] && grep -q "NCCL_COMM_ID has an invalid value  \[env.invalid\]" err &&
    grep -q "$TEST_TMP/d16/stderr.log:1:" err
'

test_expect_success '--json: explain'"'"'s envelope with the run on stdout only' '
    st=0; $R --json --logs d17 -- sh -c "echo to-stdout; exit 3" >doc 2>err || st=$?
    [ $st -eq 3 ] && jq -e ".run.exit_status == 3 and .run.end == \"exited\"" doc &&
    jq -e ".findings | type == \"array\"" doc && grep -qx to-stdout err &&
    ! grep -qx to-stdout doc
'

test_expect_success 'usage errors: 125' '
    st=0; $R 2>err || st=$?; [ $st -eq 125 ] && grep -q "give the command" err &&
    st=0; $R --timeout x -- true 2>err || st=$?; [ $st -eq 125 ] &&
    $NCD_BIN help run | grep -q "Exit status: CMD"
'

test_done
