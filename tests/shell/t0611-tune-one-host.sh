#!/bin/sh
# tune on one host (issue 10, item 10), -np 2 over loopback with the socket
# backend: the header says what is measured, candidates that cannot matter
# are skipped with the reason, labels are shown whole, the keep command
# goes through `env --write`, progress only on a terminal's stderr, and a
# signal gives "interrupted" without blaming any settings.
. "$(dirname "$0")/lib.sh"
command -v jq >/dev/null || skip_all "jq not installed"
T="env NCCL_SOCKET_IFNAME==lo $NCD_BIN tune --run-timeout 30"
PERF="-- all_reduce --backend socket -b 4K -e 16K -f 4 -n 2 -w 0 --peer-timeout 5"

L=$(printf 'label%.0s' $(seq 1 30))-end
test_expect_success 'the header says what is measured; what cannot matter is skipped, with the reason; labels whole; no progress off a terminal' "
    printf 'shm: NCCL_SHM_DISABLE=1\nlo: NCCL_SOCKET_IFNAME=lo\nthreads: NCCL_SOCKET_NTHREADS=2\n' >s.txt &&
    cp s.txt sl.txt && printf '%s: NCCL_NSOCKS_PERTHREAD=2\n' $L >>sl.txt &&
    $T -np 2 --reps 1 --candidates sl.txt --no-color $PERF >s.out 2>s.err &&
    grep -q '^Tune: 3 candidates x 1 run (2 more skipped) of' s.out &&
    grep -qx '  $L' s.out &&
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
        printf 'threads: NCCL_SOCKET_NTHREADS=2\n' >p.txt &&
        script -qec \"$T -np 2 --reps 2 --candidates p.txt --no-color $PERF >p.out\" p.tty >/dev/null 2>&1 &&
        grep -q 'tune: round 2 of 2, candidate 1 of 2 \[2/4, ' p.tty &&
        grep -q \"\$(printf '\r\033\\\\[K')\" p.tty &&
        ! grep -q \"\$(printf '\033')\" p.out && grep -q 'median GB/s' p.out
    "
else
    echo '# script(1) missing: the terminal progress case is not run'
fi
# SIGINT as a terminal sends it (to the process group), text; SIGTERM, JSON
interrupt() { # interrupt SIG: starts tune in its own process group, signals the group after 3 s
    printf 'a: NCCL_SOCKET_NTHREADS=2\nb: NCCL_NSOCKS_PERTHREAD=2\n' >i.txt && rm -f pg &&
    setsid sh -c "echo \$\$ >pg; exec env NCCL_SOCKET_IFNAME==lo $NCD_BIN tune --run-timeout 60 -np 2 --reps 20 --candidates i.txt --no-color $2 $PERF >i.out 2>i.err" &
    while [ ! -s pg ]; do sleep 0.1; done
    sleep 3 && pg=$(cat pg) && kill -"$1" -"$pg" || return 1
    st=0; wait $! || st=$?
    n=0; while ps -o pid= -g "$pg" >/dev/null; do # every rank gone
        n=$((n + 1)); [ $n -lt 40 ] || { ps -f -g "$pg"; return 1; }; sleep 0.05
    done
    return $st
}
test_expect_success 'SIGINT to the process group: "interrupted", exit 130, no settings chosen or blamed' "
    st=0; interrupt INT '' || st=\$?
    test \$st -eq 130 &&
    grep -Eq '^  Interrupted \(SIGINT\) after [0-9]+ of 60 runs: no settings chosen' i.out &&
    ! grep -q 'failed' i.out && ! grep -q '<- best' i.out && ! grep -q 'export NCCL' i.out
"
test_expect_success 'SIGTERM, --json: exit 143, .interrupted, no failure charged, no winner' "
    st=0; interrupt TERM --json || st=\$?
    test \$st -eq 143 &&
    jq -e '.interrupted == \"SIGTERM\" and .winner == null and .runs_planned == 60 and .runs_done < 60' i.out &&
    jq -e '[.candidates[].failed] == [0, 0, 0]' i.out &&
    jq -e '[.findings[].id] == [\"perf.config.tune-interrupted\"]' i.out
"
test_done
