#!/bin/sh
# Scenario (b): hostB's firewall drops its ephemeral port range.
#   hostA, hostB on a switch (ens3, 10.10.0.0/24), both with
#   NCCL_SOCKET_IFNAME=ens3.  On hostB net.ipv4.ip_local_port_range is
#   41000-41099 and nftables drops new inbound TCP/UDP to 41000-41099 (a
#   stateful firewall: replies to its own connections pass).  Every listener
#   NCCL (or nccl-doctor's socket backend) opens on hostB takes a port from
#   that range, so nobody can connect to it, while hostB connects out fine.
#   probe names hostB and the range; perf fails; explain on perf's log says
#   firewall.
. "$(dirname "$0")/lib.sh"
tb_init
tb_need_nft
tb_switch 10.10.0.254/24
for h in A B; do tb_host $h host$h; done
tb_lan A ens3 10.10.0.1/24
tb_lan B ens3 10.10.0.2/24
tb_docker B
for h in A B; do
    tb_hosts_entry $h "10.10.0.1 hostA"
    tb_hosts_entry $h "10.10.0.2 hostB"
done
tb_firewall B 41000 41099
TB_RDV=10.10.0.1:29500
TB_ENV_A=NCCL_SOCKET_IFNAME=ens3 TB_ENV_B=NCCL_SOCKET_IFNAME=ens3
T=$TB_TMP

st=0; tb_probe $T/p.json "A B" --timeout 1000 --burst 64K || st=$?
tb_check "probe exits 2" "test $st -eq 2" $T/p.json $T/probe.A.log $T/probe.B.log $T/probe.status
tb_check "matrix: hostA -> hostB timed out, hostB -> hostA ok" "
    jq -e '.matrix.cells[0][1].status == \"timed-out\" and .matrix.cells[1][0].status == \"ok\"' $T/p.json" $T/p.json
tb_check "hostB's data port is in 41000-41099, its control port answers" "
    jq -e '.ranks[1].ephemeral_ports == [41000,41099] and .ranks[1].port >= 41000 and .ranks[1].port <= 41099' $T/p.json &&
    jq -e '.rank_matrix[0][1].control_port_status == \"ok\"' $T/p.json" $T/p.json
tb_check "finding names hostB and the port range" "
    jq -e '.findings[] | select(.id==\"net.unreachable.port-filtered\" and .severity==\"error\") | .title | test(\"hostB\") and test(\"41000-41099\")' $T/p.json" $T/p.json

# the socket backend between the two hosts, hostB as rank 0 (its
# rendezvous port 29500 is outside the dropped range): rank 1 on hostA
# connects to rank 0's data listener on hostB, in the dropped range
tb_bg B $T/perf.B.log env NCCL_SOCKET_IFNAME=ens3 WORLD_SIZE=2 RANK=0 \
    "$NCD_BIN" perf all_reduce --backend socket --rendezvous 10.10.0.2:29500 -b 8 -e 8 -n 1 -w 0 --peer-timeout 3
pb=$TB_PID
st=0; tb_in A env NCCL_SOCKET_IFNAME=ens3 WORLD_SIZE=2 RANK=1 \
    timeout 60 "$NCD_BIN" perf all_reduce --backend socket --rendezvous 10.10.0.2:29500 -b 8 -e 8 -n 1 -w 0 --peer-timeout 3 >$T/perf.A.log 2>&1 || st=$?
sb=0; wait $pb 2>/dev/null || sb=$?
tb_check "perf over the firewall fails on both hosts (not 0, not a hang)" "test $st -ne 0 && test $st -ne 124 && test $sb -ne 0" $T/perf.A.log $T/perf.B.log
cat $T/perf.A.log $T/perf.B.log >$T/job.log
st=0; "$NCD_BIN" explain --json $T/job.log >$T/e.json || st=$?
tb_check "explain on the socket-backend log says firewall" "
    jq -e '[.findings[] | select(.category==\"net.unreachable\") | (.title + \" \" + (.cause // \"\"))] | any(test(\"firewall\"; \"i\"))' $T/e.json" $T/e.json $T/job.log
tb_done
