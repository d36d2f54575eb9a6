#!/bin/sh
# Ctrl-C (issue 10 item 3): SIGINT, SIGTERM or SIGHUP sent to the launcher,
# or to its whole process group as a terminal sends it, stops every local
# rank within 1 s, leaves no temporary file, and the launcher ends with
# 128 + the signal (130 for SIGINT, 143 for SIGTERM); the same for tune,
# which says "interrupted" and judges no setting.  Each run gets its own
# session (setsid), so the signals reach real process groups.
. "$(dirname "$0")/perf_lib.sh"
command -v setsid >/dev/null || skip "setsid (util-linux) not installed"
command -v ps >/dev/null || skip "ps (procps) not installed"

# pids of process group $1 except pids $2 (a comma list)
members() {
    ps -e -o pgid=,pid= | awk -v g="$1" -v x=",${2:-},"  '$1 == g && index(x, "," $2 ",") == 0 { print $2 }'
}
# how many of pids $1 (a space list) still run (neither gone nor zombie);
# shell builtins only, so that polling costs next to nothing
running() {
    c=0
    for p in $1; do
        line=
        { read -r line </proc/"$p"/stat; } 2>/dev/null || continue
        st=${line##*) }; st=${st%% *}
        [ "$st" = Z ] || [ "$st" = X ] || c=$((c+1))
    done
    echo $c
}
wait_for() { # wait_for FILE PATTERN SECONDS
    i=0
    while ! grep -q "$2" "$1" 2>/dev/null; do
        i=$((i+1)); [ $i -gt $(($3*10)) ] && return 1; sleep 0.1
    done
}
# ms since the epoch
now_ms() { date +%s%3N; }
# stop_within PIDS MS -> 0 when none of PIDS runs any more within MS;
# prints the ms it took
stop_within() {
    t0=$(now_ms)
    while [ "$(running "$1")" -gt 0 ]; do
        [ $(( $(now_ms) - t0 )) -gt "$2" ] && { echo "$(( $(now_ms) - t0 ))"; return 1; }
        sleep 0.01
    done
    echo "$(( $(now_ms) - t0 ))"
}
# A terminal's job: the signals a script's background job ignores are
# restored to their defaults (env --default-signal, coreutils 8.31)
env --default-signal=INT true 2>/dev/null || skip "env --default-signal (coreutils >= 8.31) is missing"
TERMJOB="env --default-signal=INT,TERM,HUP"

# run NAME SIGNAL TARGET(group|launcher) WANT_STATUS NPROC_ARGS...
run() {
    name=$1 sig=$2 target=$3 want=$4; shift 4
    ( cd "$TMP" && exec setsid $TERMJOB "$NCD_BIN" perf all_reduce -b 1M -e 1M \
        -n 1000000 --backend socket -J "$TMP/$name.json" "$@" \
        >"$TMP/$name.out" 2>"$TMP/$name.err" ) &
    P=$!
    wait_for "$TMP/$name.out" '^#  Backend' 20 || { bad "$name: did not start"; kill -9 -"$P" 2>/dev/null; return; }
    sleep 0.5
    g=$(ps -o pgid= -p "$P" | tr -d ' ')
    ranks=$(members "$g" "$P")
    nlive=$(( $(echo $ranks | wc -w) + 1 ))
    [ -n "$ranks" ] || ranks=$P # one process: its threads are the ranks
    if [ "$target" = group ]; then kill -"$sig" -"$g"; else kill -"$sig" "$P"; fi
    if ms=$(stop_within "$ranks" 1000); then
        ok "$name: SIG$sig to the $target: every rank gone in ${ms} ms (<= 1 s)"
    else
        bad "$name: SIG$sig to the $target: ranks still alive after ${ms} ms"
        ps -e -o pgid=,pid=,stat=,args= | awk -v g="$g" '$1 == g' | sed 's/^/#   /'
    fi
    if ms=$(stop_within "$P" 5000); then
        ok "$name: the launcher ended too ($nlive processes in all)"
    else
        bad "$name: the launcher still runs ${ms} ms after SIG$sig"
        kill -9 -"$g" 2>/dev/null
    fi
    wait "$P"; st=$?
    check "$name: exit status $st (want $want)" [ "$st" -eq "$want" ]
    # one line for the interruption, not "process N was killed by
    # signal" once per rank
    check "$name: one line says the run was interrupted" \
        sh -c "! grep -q 'killed by signal' '$TMP/$name.err' && test \$(grep -c 'interrupted by signal' '$TMP/$name.err') -le 1"
    check "$name: no temporary or partial -J file left" \
        sh -c "! ls '$TMP' | grep -q '^$name\\.json'"
}

run np-int-group INT group 130 -np 3
run np-term-launcher TERM launcher 143 -np 3
run np-hup-launcher HUP launcher 129 -np 2
run np-int-launcher INT launcher 130 -np 4
run single-int-group INT group 130
run single-term-launcher TERM launcher 143 -g 2

# tune: the signal to tune alone (not its group) stops the perf it runs
# (and that perf's ranks), no further run starts, and tune says so
( cd "$TMP" && NCCL_SOCKET_IFNAME==lo exec setsid $TERMJOB "$NCD_BIN" tune --run-timeout 60 \
    --reps 3 --backend socket -np 2 -- all_reduce -b 1M -e 1M -n 1000000 \
    >"$TMP/tune.out" 2>"$TMP/tune.err" ) &
P=$!
i=0; while [ "$(members "$P" | wc -l)" -lt 4 ] && [ $i -lt 200 ]; do i=$((i+1)); sleep 0.05; done
sleep 0.5
perf=$(ps -o pid= --ppid "$P" | tr -d ' ' | head -1)
ranks=$(members "$P" "$P,$perf")
nlive=$(( $(echo $ranks | wc -w) + 2 ))
kill -INT "$P"
if ms=$(stop_within "$ranks" 1000); then
    ok "tune: SIGINT to tune: perf's ranks gone in ${ms} ms (<= 1 s)"
else
    bad "tune: ranks alive ${ms} ms after SIGINT"
    ps -e -o pgid=,pid=,stat=,args= | awk -v g="$P" '$1 == g' | sed 's/^/#   /'
fi
if ms=$(stop_within "$P $perf" 5000); then
    ok "tune: perf and tune ended too ($nlive processes in all)"
else
    bad "tune: processes alive ${ms} ms after SIGINT"
    kill -9 -"$P" 2>/dev/null
fi
wait "$P"; st=$?
check "tune: exit status $st (want 130)" [ "$st" -eq 130 ]
check "tune: says interrupted, judges no setting" sh -c "
    cat '$TMP/tune.out' '$TMP/tune.err' | grep -q 'Interrupted (SIGINT)' &&
    ! grep -qi 'winner\|recommend\|best' '$TMP/tune.out' '$TMP/tune.err'"
sed 's/^/#   /' "$TMP/tune.err" | head -5
finish
