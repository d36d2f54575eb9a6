#!/bin/sh
# Extra scenario: an IPv6-only data network (fd00::/64 on ens3, rendezvous
# on [fd00::1]).  probe connects both ways on NCCL's IPv6 addresses, with
# don't-fragment probes over IPv6, and resolves the names to them.
. "$(dirname "$0")/lib.sh"
tb_init
for h in A B; do tb_host $h host$h; done
nsa=$(tb_ns A) nsb=$(tb_ns B)
ip link add ens3 netns "$nsa" type veth peer name ens3 netns "$nsb"
ip -n "$nsa" addr add fd00::1/64 dev ens3 nodad
ip -n "$nsb" addr add fd00::2/64 dev ens3 nodad
ip -n "$nsa" link set ens3 up
ip -n "$nsb" link set ens3 up
for h in A B; do
    tb_hosts_entry $h "fd00::1 hostA"
    tb_hosts_entry $h "fd00::2 hostB"
done
TB_RDV="[fd00::1]:29500"
TB_ENV_A=NCCL_SOCKET_IFNAME=ens3 TB_ENV_B=NCCL_SOCKET_IFNAME=ens3
T=$TB_TMP
st=0; tb_probe $T/p.json "A B" --timeout 1000 --burst 64K || st=$?
tb_check "probe over IPv6 exits 0" "test $st -eq 0" $T/p.json $T/probe.A.log $T/probe.B.log $T/probe.status
tb_check "NCCL's addresses are fd00::1 and fd00::2" "
    jq -e '[.ranks[].nccl_address] == [\"fd00::1\", \"fd00::2\"]' $T/p.json" $T/p.json
tb_check "both directions ok, DF probes up to 1500 over IPv6, names resolve" "
    jq -e '.rank_matrix[0][1].status == \"ok\" and .rank_matrix[1][0].status == \"ok\"' $T/p.json &&
    jq -e '.rank_matrix[0][1].mtu_ok == 1500 and .rank_matrix[0][1].resolved == \"fd00::2\"' $T/p.json" $T/p.json
tb_done
