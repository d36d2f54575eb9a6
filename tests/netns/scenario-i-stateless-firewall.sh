#!/bin/sh
# Scenario (i): a firewall without connection tracking.
#   hostA, hostB, hostC on a switch (ens3), NCCL_SOCKET_IFNAME=ens3.  hostB
#   drops every inbound TCP/UDP packet to its ephemeral range 41000-41099
#   with no `ct state established` rule before it: peers cannot connect to
#   its listeners, and the answers to its own connections (whose source
#   ports come from that range) are dropped too, so hostB's connects to
#   hostA and hostC time out.  probe must blame hostB once, never hostA or
#   hostC.  hostB holds the rendezvous (its port 29500 is outside the
#   range; as a client it could not even reach one).
. "$(dirname "$0")/lib.sh"
tb_init
tb_need_nft
tb_switch 10.10.0.254/24
i=0
for h in A B C; do
    i=$((i + 1))
    tb_host $h host$h
    tb_lan $h ens3 10.10.0.$i/24
done
for h in A B C; do
    tb_hosts_entry $h "10.10.0.1 hostA"
    tb_hosts_entry $h "10.10.0.2 hostB"
    tb_hosts_entry $h "10.10.0.3 hostC"
done
nsb=$(tb_ns B)
ip netns exec "$nsb" sysctl -qw net.ipv4.ip_local_port_range="41000 41099"
ip netns exec "$nsb" nft -f - <<NFT
table inet ncdfw {
    chain input {
        type filter hook input priority 0; policy accept;
        iifname "lo" accept
        tcp dport 41000-41099 drop
        udp dport 41000-41099 drop
    }
}
NFT
TB_RDV=10.10.0.2:29500
TB_ENV_A=NCCL_SOCKET_IFNAME=ens3 TB_ENV_B=NCCL_SOCKET_IFNAME=ens3 TB_ENV_C=NCCL_SOCKET_IFNAME=ens3
export TB_ENV_A TB_ENV_B TB_ENV_C
T=$TB_TMP
FINDINGS='[.findings[] | select(.severity != "ok") | "\(.id): \(.title)"]'

# rank 0 on hostB (the rendezvous), 1 on hostA, 2 on hostC
st=0; tb_probe $T/p.json "B A C" --timeout 1000 --burst 64K || st=$?
jq -r "$FINDINGS | .[]" $T/p.json 2>/dev/null | sed 's/^/# finding: /'
tb_check "probe exits 2" "test $st -eq 2" $T/p.json $T/probe.A.log $T/probe.B.log $T/probe.C.log $T/probe.status
tb_check "hostB -> others: every port times out from an ephemeral source port, the control port answers from a port outside the range" "
    jq -e '[.rank_matrix[0][1,2] | [.status, .control_port_status, .source_port_status]] == [[\"timed-out\",\"timed-out\",\"ok\"],[\"timed-out\",\"timed-out\",\"ok\"]]' $T/p.json" $T/p.json
tb_check "others -> hostB: the ephemeral port times out, the control port answers; hostA <-> hostC fine" "
    jq -e '[.rank_matrix[1,2][0] | [.status, .control_port_status]] == [[\"timed-out\",\"ok\"],[\"timed-out\",\"ok\"]]' $T/p.json &&
    jq -e '.rank_matrix[1][2].status == \"ok\" and .rank_matrix[2][1].status == \"ok\"' $T/p.json" $T/p.json
tb_check "exactly one finding, hostB's stateless firewall" "
    jq -e '$FINDINGS == [
      \"net.unreachable.port-filtered: A firewall on hostB drops its ephemeral ports 41000-41099 on ens3 without tracking connections: no peer connects to it, and the replies to its own connections are lost\"]' $T/p.json" $T/p.json
tb_check "no finding blames hostA or hostC" "
    ! jq -e '.findings[] | select(.severity != \"ok\") | .title | test(\"hostA|hostC\")' $T/p.json" $T/p.json
tb_check "the fix: accept established connections before the drop" "
    jq -e '.findings[0].fix | test(\"ct state established,related accept\")' $T/p.json" $T/p.json
tb_done
