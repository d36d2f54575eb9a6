#!/bin/sh
# Scenario (c): two links of different speeds between two hosts.
#   hostA and hostB are cabled twice: eno1 limited to 200 Mbit/s and ens3
#   to 1 Gbit/s (tc tbf on both ends of each cable); virbr0 without carrier
#   on both.  The current environment says NCCL_SOCKET_IFNAME=eno1 (the
#   slow NIC, as on many management-first servers).  `tune` runs the
#   socket-backend all_reduce under each candidate, 3 times, and must pick
#   NCCL_SOCKET_IFNAME==ens3 with a ratio near 5 (1000/200).
# Set TUNE_RUNS=N to repeat the whole tune N times (prints every ratio).
. "$(dirname "$0")/lib.sh"
tb_init
tb_need_tc
for h in A B; do tb_host $h host$h; done
tb_link A eno1 10.20.0.1/24 B eno1 10.20.0.2/24 200mbit
tb_link A ens3 10.10.0.1/24 B ens3 10.10.0.2/24 1gbit
tb_virbr A; tb_virbr B
for h in A B; do
    tb_hosts_entry $h "10.10.0.1 hostA"
    tb_hosts_entry $h "10.10.0.2 hostB"
done
T=$TB_TMP
TUNE="tune --rendezvous 10.10.0.1:29400 --families ifname --reps 3 --run-timeout 60 --json -- all_reduce --backend socket -b 1M -e 4M -f 4 -n 4 -w 1 --peer-timeout 10"
n=0
while [ $n -lt "${TUNE_RUNS:-1}" ]; do
    n=$((n + 1))
    tb_bg B $T/tune.B.log env NCCL_SOCKET_IFNAME=eno1 WORLD_SIZE=2 RANK=1 "$NCD_BIN" $TUNE
    pb=$TB_PID
    st=0
    tb_in A env NCCL_SOCKET_IFNAME=eno1 WORLD_SIZE=2 RANK=0 "$NCD_BIN" $TUNE >$T/t.json 2>$T/tune.A.log || st=$?
    sb=0; wait $pb || sb=$?
    ratio=$(jq -r '.candidates[] | select(.label=="NCCL_SOCKET_IFNAME==ens3") | .ratio' $T/t.json 2>/dev/null)
    echo "# tune $n: status $st/$sb, winner $(jq -r .winner $T/t.json 2>/dev/null), ratio ens3/eno1 = $ratio," \
        "medians $(jq -r '[.candidates[] | "\(.label) \(.median) (\(.min)-\(.max))"] | join("; ")' $T/t.json 2>/dev/null)"
done
tb_check "tune ran on both hosts (status 0)" "test $st -eq 0 && test $sb -eq 0" $T/t.json $T/tune.A.log $T/tune.B.log
tb_check "candidates: the current (eno1) and NCCL_SOCKET_IFNAME==ens3, 3 runs each" "
    jq -e '[.candidates[].label] == [\"(current)\", \"NCCL_SOCKET_IFNAME==ens3\"]' $T/t.json &&
    jq -e '[.candidates[].runs | length] == [3, 3]' $T/t.json" $T/t.json
tb_check "tune picks ens3 and prints it as the recommended env" "
    jq -e '.winner == \"NCCL_SOCKET_IFNAME==ens3\"' $T/t.json &&
    jq -e '.recommended_env.NCCL_SOCKET_IFNAME == \"=ens3\"' $T/t.json" $T/t.json
tb_check "the measured ratio is about 5 (3.5 .. 6.5)" "
    jq -e '.candidates[1].ratio > 3.5 and .candidates[1].ratio < 6.5' $T/t.json" $T/t.json
tb_check "the slow link runs near 200 Mbit/s (0.015 .. 0.03 GB/s)" "
    jq -e '.candidates[0].median > 0.015 and .candidates[0].median < 0.03' $T/t.json" $T/t.json
tb_done
