#!/bin/sh
# tune on one host over loopback (-np 2, socket backend, tiny sweeps): the
# table, the JSON, candidate files, a candidate that fails, usage errors.
# The speed comparison itself: tests/netns/scenario-c-tune-speeds.sh.
. "$(dirname "$0")/lib.sh"
command -v jq >/dev/null || skip_all "jq not installed"
T="env NCCL_SOCKET_IFNAME==lo $NCD_BIN tune --run-timeout 30"
PERF="-- all_reduce --backend socket -b 4K -e 16K -f 4 -n 2 -w 0 --peer-timeout 5"

test_expect_success 'candidates file: every candidate runs R times, JSON envelope' "
    printf '# two candidates\nthreads: NCCL_SOCKET_NTHREADS=2 NCCL_NSOCKS_PERTHREAD=2\nNCCL_NSOCKS_PERTHREAD=3\n' >c.txt &&
    $T -np 2 --reps 2 --candidates c.txt --json $PERF >t.json &&
    jq -e '.tool == \"nccl-doctor\" and .repetitions == 2' t.json &&
    jq -e '[.candidates[].label] == [\"(current)\", \"threads\", \"NCCL_NSOCKS_PERTHREAD=3\"]' t.json &&
    { jq -e '[.candidates[].runs | length] == [2, 2, 2]' t.json ||
      { jq -c '.candidates[] | [.label, .failed, .error]' t.json; false; }; } &&
    jq -e '[.candidates[] | .median > 0 and .min <= .median and .median <= .max] | all' t.json &&
    jq -e '.candidates[0].ratio == 1' t.json &&
    jq -e '.candidates[1].env == {\"NCCL_SOCKET_NTHREADS\": \"2\", \"NCCL_NSOCKS_PERTHREAD\": \"2\"}' t.json &&
    jq -e '[.findings[] | select(.id == \"perf.config.tuned\")] | length == 1' t.json
"
test_expect_success 'text: table with spread and ratio, and a verdict' "
    $T -np 2 --reps 2 --candidates c.txt --no-color $PERF >t.txt &&
    grep -q 'median GB/s' t.txt && grep -q 'threads' t.txt &&
    grep -q '1.00x  (baseline)' t.txt &&
    (grep -q 'Keep the current settings.' t.txt || grep -q 'export NCCL_' t.txt)
"
test_expect_success 'a candidate that breaks the run is reported, the others still run' "
    printf 'broken: NCCL_SOCKET_IFNAME=nosuchif0\n' >b.txt &&
    $T -np 2 --reps 1 --candidates b.txt --json $PERF >b.json &&
    jq -e '.candidates[1].failed == 1 and (.candidates[1].error | test(\"nosuchif0\"))' b.json &&
    jq -e '.candidates[0].runs | length == 1' b.json &&
    jq -e '[.findings[] | select(.id == \"perf.config.candidate-failed\" and .severity == \"warning\")] | length == 1' b.json
"
test_expect_success 'the current settings failing is an error (exit 2)' "
    st=0; env NCCL_SOCKET_IFNAME=nosuchif0 $NCD_BIN tune --run-timeout 30 -np 2 --reps 1 --candidates b.txt --json $PERF >f.json || st=\$?
    test \$st -eq 2 &&
    jq -e '.candidates[0].failed == 1' f.json
"
test_expect_success 'default candidates from the node (sockets family)' "
    $T -np 2 --reps 1 --families sockets --json $PERF >d.json &&
    jq -e '[.candidates[].label] == [\"(current)\", \"NCCL_SOCKET_NTHREADS=2 NCCL_NSOCKS_PERTHREAD=2\", \"NCCL_SOCKET_NTHREADS=4 NCCL_NSOCKS_PERTHREAD=4\"]' d.json
"
test_expect_success 'bad input: exit 3 with a message' "
    printf 'NCCL_SOCKET_IFNAME\n' >bad.txt &&
    st=0; $T -np 2 --candidates bad.txt 2>e.txt || st=\$?; test \$st -eq 3 && grep -q 'line 1' e.txt &&
    st=0; $T -np 2 --candidates /nonexistent/c.txt 2>e.txt || st=\$?; test \$st -eq 3 && grep -q nonexistent e.txt &&
    st=0; $T --reps 0 2>e.txt || st=\$?; test \$st -eq 3 &&
    st=0; $T --families nope 2>e.txt || st=\$?; test \$st -eq 3 &&
    st=0; $T --metric best 2>e.txt || st=\$?; test \$st -eq 3 &&
    st=0; $T -np 2 -- all_reduce -np 2 2>e.txt || st=\$?; test \$st -eq 3 && grep -q 'to tune itself' e.txt &&
    st=0; $T stray 2>e.txt || st=\$?; test \$st -eq 3
"

# ---- issue 10, item 10: one host --------------------------------------
test_expect_success 'the header says what is measured; what cannot matter is skipped, with the reason' "
    printf 'shm: NCCL_SHM_DISABLE=1\nlo: NCCL_SOCKET_IFNAME=lo\nthreads: NCCL_SOCKET_NTHREADS=2\n' >s.txt &&
    $T -np 2 --reps 1 --candidates s.txt --no-color $PERF >s.out 2>s.err &&
    grep -q '^Tune: 2 candidates x 1 runs (2 more skipped) of' s.out &&
    grep -q '^Measured: TCP between the ranks on this host .*not NCCL.s GPU path' s.out &&
    grep -Eq '^  shm +- +- +-  skipped \[1\]\$' s.out &&
    grep -Eq '^  lo +- +- +-  skipped \[2\]\$' s.out &&
    grep -q '^  \[1\] not run: the socket backend does not use NCCL.s shared-memory transport' s.out &&
    grep -q '^  \[2\] not run: on one host every rank is local' s.out &&
    ! grep -q . s.err &&
    $T -np 2 --reps 1 --candidates s.txt --json $PERF >s.json &&
    jq -e '.measured.backend == \"socket\" and .measured.one_host == true and (.measured.text | test(\"not NCCL.s GPU path\"))' s.json &&
    jq -e '[.candidates[] | [.label, (.skipped != null), (.runs | length)]] == [[\"(current)\", false, 1], [\"shm\", true, 0], [\"lo\", true, 0], [\"threads\", false, 1]]' s.json &&
    jq -e '.runs_done == 2 and .runs_planned == 2 and .interrupted == null' s.json
"
test_expect_success 'a long label is shown whole' "
    L=\$(printf 'label%.0s' \$(seq 1 30)) &&
    printf '%s-end: NCCL_SOCKET_NTHREADS=2\n' \"\$L\" >l.txt &&
    $T -np 2 --reps 1 --candidates l.txt --no-color $PERF >l.out &&
    grep -qx \"  \$L-end\" l.out
"
# a value with a space, a quote and a dollar; an unset
cat >"$TEST_TMP/k.txt" <<'EOF'
odd: NCCL_SOCKET_NTHREADS=2 MY_TUNE_OPT="a b'c $d" -NCCL_NSOCKS_PERTHREAD
EOF
printf '%s' "a b'c \$d" >"$TEST_TMP/kopt"
printf '%s' "2|a b'c \$d|unset" >"$TEST_TMP/kwant"
test_expect_success 'the keep command writes what was measured, in env --write syntax' "
    $T -np 2 --reps 1 --candidates k.txt --json $PERF >k.json &&
    jq -e '.candidates[1].env | .NCCL_SOCKET_NTHREADS == \"2\" and .NCCL_NSOCKS_PERTHREAD == null' k.json &&
    jq -j '.candidates[1].env.MY_TUNE_OPT' k.json | cmp - kopt &&
    kc=\$(jq -r '.candidates[1].keep_command' k.json) &&
    case \"\$kc\" in 'nccl-doctor env --write ~/.bashrc '*) ;; *) false ;; esac &&
    eval \"env -u NCCL_SOCKET_IFNAME $NCD_BIN env --write \$PWD/krc \${kc#nccl-doctor env --write ~/.bashrc }\" 2>/dev/null &&
    NCCL_NSOCKS_PERTHREAD=9 sh -c '. ./krc; printf \"%s|%s|%s\" \"\$NCCL_SOCKET_NTHREADS\" \"\$MY_TUNE_OPT\" \"\${NCCL_NSOCKS_PERTHREAD-unset}\"' >kgot &&
    cmp kwant kgot
"
if command -v script >/dev/null; then
    test_expect_success 'progress on stderr when it is a terminal, never on stdout' "
        script -qec \"$T -np 2 --reps 2 --candidates c.txt --no-color $PERF >p.out\" p.tty >/dev/null 2>&1 &&
        grep -q 'tune: round 2 of 2, candidate 1 of 3 \[3/6, ' p.tty &&
        grep -q \"\$(printf '\r\033\\\\[K')\" p.tty &&
        ! grep -q \"\$(printf '\033')\" p.out && grep -q 'median GB/s' p.out &&
        $T -np 2 --reps 1 --candidates c.txt $PERF >np.out 2>np.err && ! grep -q . np.err
    "
else
    echo '# script(1) missing: the terminal progress case is not run'
fi
for s in INT:2 TERM:15; do
    test_expect_success "SIG${s%:*} to tune's process group: \"interrupted\", exit $((128 + ${s#*:})), no settings blamed" "
        printf 'a: NCCL_SOCKET_NTHREADS=2\nb: NCCL_NSOCKS_PERTHREAD=2\n' >i.txt &&
        setsid sh -c 'echo \$\$ >pg; exec env NCCL_SOCKET_IFNAME==lo $NCD_BIN tune --run-timeout 60 -np 2 --reps 20 --candidates i.txt --no-color $PERF >i.out 2>i.err' &
        while [ ! -s pg ]; do sleep 0.1; done
        sleep 3 && pg=\$(cat pg) && kill -${s%:*} -\$pg &&
        st=0; wait \$! || st=\$?
        test \$st -eq $((128 + ${s#*:})) &&
        grep -Eq '^  Interrupted \(SIG${s%:*}\) after [0-9]+ of 60 runs: no settings chosen' i.out &&
        ! grep -q 'failed' i.out && ! grep -q '<- best' i.out && ! grep -q 'export NCCL' i.out &&
        n=0; while ps -o pid= -g \$pg >/dev/null; do n=\$((n + 1)); [ \$n -lt 40 ] || { ps -f -g \$pg; false; }; sleep 0.05; done
    "
done
test_done
