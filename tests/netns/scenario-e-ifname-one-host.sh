#!/bin/sh
# Scenario (e): a wrong NCCL_SOCKET_IFNAME on one host only.
#   hostA, hostB on a switch (ens3), each with docker0 (172.17.0.1, the
#   same address on both, as Docker sets it up) and hostB with eno2 without
#   carrier.  hostA has NCCL_SOCKET_IFNAME=ens3.  hostB has
#   (1) NCCL_SOCKET_IFNAME=eth0, a name it does not have: NCCL there finds
#       no interface at all;
#   (2) NCCL_SOCKET_IFNAME=docker0: NCCL there listens on 172.17.0.1, which
#       from hostA is hostA's own docker0.
#   probe names hostB, its value, and recommends ens3.
. "$(dirname "$0")/lib.sh"
tb_init
tb_switch 10.10.0.254/24
for h in A B; do tb_host $h host$h; done
tb_lan A ens3 10.10.0.1/24
tb_lan B ens3 10.10.0.2/24
tb_docker A; tb_docker B
tb_nocarrier B eno2 10.30.0.2/24
tb_dockernet A
for h in A B; do
    tb_hosts_entry $h "10.10.0.1 hostA"
    tb_hosts_entry $h "10.10.0.2 hostB"
done
TB_RDV=10.10.0.1:29500
T=$TB_TMP

TB_ENV_A=NCCL_SOCKET_IFNAME=ens3 TB_ENV_B=NCCL_SOCKET_IFNAME=eth0
st=0; tb_probe $T/p1.json "A B" --timeout 1000 --burst 64K || st=$?
tb_check "(1) probe exits 2" "test $st -eq 2" $T/p1.json $T/probe.A.log $T/probe.B.log $T/probe.status
tb_check "(1) hostB reports NCCL_SOCKET_IFNAME=eth0 and no NCCL interface" "
    jq -e '.ranks[1].host == \"hostB\" and .ranks[1].NCCL_SOCKET_IFNAME == \"eth0\" and .ranks[1].nccl_interface == null' $T/p1.json" $T/p1.json
tb_check "(1) matrix cells to and from hostB: no-address" "
    jq -e '.matrix.cells[0][1].status == \"no-address\" and .matrix.cells[1][0].status == \"no-address\"' $T/p1.json" $T/p1.json
tb_check "(1) net.ifname.no-match-host names hostB and eth0, fix ens3" "
    jq -e '.findings[] | select(.id==\"net.ifname.no-match-host\" and .severity==\"error\") | (.title | test(\"hostB\") and test(\"eth0\")) and .env.NCCL_SOCKET_IFNAME == \"ens3\"' $T/p1.json" $T/p1.json
tb_check "(1) net.ifname.differs lists both hosts' values" "
    jq -e '.findings[] | select(.id==\"net.ifname.differs\") | .evidence | (map(test(\"hostA: NCCL_SOCKET_IFNAME=ens3\")) | any) and (map(test(\"hostB: NCCL_SOCKET_IFNAME=eth0\")) | any)' $T/p1.json" $T/p1.json
st=0; tb_in B env NCCL_SOCKET_IFNAME=eth0 "$NCD_BIN" check --json >$T/c.json || st=$?
tb_check "(1) check on hostB: net.ifname.no-match, recommends ens3" "
    test $st -eq 2 &&
    jq -e '[.findings[] | select(.id==\"net.ifname.no-match\")] | length == 1' $T/c.json &&
    jq -e '.recommended_env.NCCL_SOCKET_IFNAME == \"ens3\"' $T/c.json" $T/c.json

TB_ENV_B=NCCL_SOCKET_IFNAME=docker0
st=0; tb_probe $T/p2.json "A B" --timeout 1000 --burst 64K || st=$?
tb_check "(2) probe exits 2; hostB's NCCL address is 172.17.0.1 on docker0" "
    test $st -eq 2 &&
    jq -e '.ranks[1].nccl_interface == \"docker0\" and .ranks[1].nccl_address == \"172.17.0.1\"' $T/p2.json" $T/p2.json $T/probe.A.log $T/probe.B.log $T/probe.status
tb_check "(2) hostA -> hostB refused (hostA's own docker0), hostB -> hostA ok" "
    jq -e '.matrix.cells[0][1].status == \"refused\" and .matrix.cells[1][0].status == \"ok\"' $T/p2.json" $T/p2.json
tb_check "(2) finding: NCCL's interface does not reach, set NCCL_SOCKET_IFNAME=ens3" "
    jq -e '.findings[] | select(.id==\"net.iface-choice.unreachable\") | .env.NCCL_SOCKET_IFNAME == \"ens3\"' $T/p2.json &&
    jq -e '.recommended_env.NCCL_SOCKET_IFNAME == \"ens3\"' $T/p2.json" $T/p2.json
tb_done
