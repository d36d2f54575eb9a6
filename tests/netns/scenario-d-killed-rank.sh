#!/bin/sh
# Scenario (d): a rank is killed mid-run.
#   hostA, hostB, hostC on a switch (ens3); a 3-rank socket-backend
#   all_reduce that would run for minutes; after the first results rank 2
#   (hostC) gets SIGKILL.  Ranks 0 and 1 must stop on their own, well
#   within the peer timeout, with an error that names rank 2 and hostC.
#   explain on their output names the dead rank as the cause.
. "$(dirname "$0")/lib.sh"
tb_init
tb_switch 10.10.0.254/24
for h in A B C; do tb_host $h host$h; done
tb_lan A ens3 10.10.0.1/24
tb_lan B ens3 10.10.0.2/24
tb_lan C ens3 10.10.0.3/24
tb_docker A; tb_nocarrier B eno2 10.30.0.2/24; tb_virbr C
T=$TB_TMP
PERF="perf all_reduce --backend socket --rendezvous 10.10.0.1:29500 -b 256K -e 256K -n 1000000 -w 1 --peer-timeout 20"

tb_bg B $T/r1.log env NCCL_SOCKET_IFNAME=ens3 WORLD_SIZE=3 RANK=1 "$NCD_BIN" $PERF
p1=$TB_PID
tb_bg C $T/r2.log env NCCL_SOCKET_IFNAME=ens3 WORLD_SIZE=3 RANK=2 "$NCD_BIN" $PERF
p2=$TB_PID
tb_bg A $T/r0.log env NCCL_SOCKET_IFNAME=ens3 WORLD_SIZE=3 RANK=0 "$NCD_BIN" $PERF
p0=$TB_PID
# wait until rank 2 holds its connections to both peers (max 20 s)
i=0
while [ $i -lt 200 ] && [ "$(ip netns exec "$(tb_ns C)" ss -Htn state established 2>/dev/null | grep -c 10.10.0)" -lt 3 ]; do
    sleep 0.1; i=$((i + 1))
done
tb_check "the 3-rank run started (rank 2 connected to its peers)" "test $i -lt 200" $T/r0.log $T/r1.log $T/r2.log
sleep 1
t0=$(date +%s)
kill -KILL $p2
s0=0; wait $p0 || s0=$?
s1=0; wait $p1 || s1=$?
t1=$(date +%s)
echo "# ranks 0 and 1 stopped $((t1 - t0)) s after the kill (status $s0, $s1)"
tb_check "ranks 0 and 1 stop with an error status" "test $s0 -ne 0 && test $s1 -ne 0" $T/r0.log $T/r1.log
tb_check "... within the peer timeout (20 s), in practice at once" "test $((t1 - t0)) -le 10"
tb_check "rank 0's error names rank 2 on hostC" "grep -E 'rank 2 \\(host hostC' $T/r0.log" $T/r0.log
tb_check "rank 1's error names rank 2 on hostC" "grep -E 'rank 2 \\(host hostC' $T/r1.log" $T/r1.log
cat $T/r0.log $T/r1.log >$T/job.log
"$NCD_BIN" explain --json $T/job.log >$T/e.json 2>&1
tb_check "explain: the peer died (net.unreachable consequence naming rank 2)" "
    jq -e '[.findings[] | select(.id==\"ncd.socket.peer-died\") | .title | test(\"rank 2\")] | any' $T/e.json" $T/e.json
tb_done
