#!/bin/sh
# Extra scenario: MTU mismatch.  hostA's ens3 has MTU 1500, hostB's 9000
# (jumbo frames set on one node only); the switch ports carry 1500.  Small
# packets pass both ways, so TCP connects; hostB's large don't-fragment
# datagrams are lost.  probe reports the mismatch with the sizes.
. "$(dirname "$0")/lib.sh"
tb_init
tb_switch 10.10.0.254/24
for h in A B; do tb_host $h host$h; done
tb_lan A ens3 10.10.0.1/24
tb_lan B ens3 10.10.0.2/24
ip -n "$(tb_ns B)" link set ens3 mtu 9000
for h in A B; do
    tb_hosts_entry $h "10.10.0.1 hostA"
    tb_hosts_entry $h "10.10.0.2 hostB"
done
TB_RDV=10.10.0.1:29500
TB_ENV_A=NCCL_SOCKET_IFNAME=ens3 TB_ENV_B=NCCL_SOCKET_IFNAME=ens3
T=$TB_TMP
st=0; tb_probe $T/p.json "A B" --timeout 1000 --burst 0 || st=$?
tb_check "probe exits 2" "test $st -eq 2" $T/p.json $T/probe.A.log $T/probe.B.log $T/probe.status
tb_check "ranks report MTU 1500 and 9000" "jq -e '[.ranks[].mtu] == [1500, 9000]' $T/p.json" $T/p.json
tb_check "hostB -> hostA: DF packets up to 1500 arrive, a larger one is lost" "
    jq -e '.rank_matrix[1][0].mtu_ok == 1500 and .rank_matrix[1][0].mtu_lost > 1500' $T/p.json" $T/p.json
tb_check "finding net.unreachable.mtu (error) with the fix for hostA or hostB" "
    jq -e '.findings[] | select(.id==\"net.unreachable.mtu\" and .severity==\"error\") | .title | test(\"hostA\") and test(\"9000\")' $T/p.json" $T/p.json
tb_done
