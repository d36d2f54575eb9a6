#!/bin/sh
# Scenario (h): two faults at once (issue 10 item 9).
#   hostA..hostD: eno1 (the first NIC, UP with carrier, on a management
#   network that leads nowhere: NCCL's default everywhere) and ens3 (the
#   data LAN through a switch, default route).  hostC's firewall drops new
#   inbound TCP/UDP to its ephemeral range 41000-41099 (stateful: its own
#   connections are answered).  probe must name both faults, once each:
#   NCCL's interface does not reach, ens3 does (recommend it), and on ens3
#   hostC's firewall blocks the ports NCCL will listen on.  With
#   NCCL_SOCKET_IFNAME=ens3 only the firewall is left.
. "$(dirname "$0")/lib.sh"
tb_init
tb_need_nft
tb_switch 10.10.0.254/24
i=0
for h in A B C D; do
    i=$((i + 1))
    tb_host $h host$h
    tb_stub $h eno1 10.99.$i.1/24
    tb_lan $h ens3 10.10.0.$i/24
    ip -n "$(tb_ns $h)" route add default via 10.10.0.254 dev ens3
done
for h in A B C D; do
    tb_hosts_entry $h "10.10.0.1 hostA"
    tb_hosts_entry $h "10.10.0.2 hostB"
    tb_hosts_entry $h "10.10.0.3 hostC"
    tb_hosts_entry $h "10.10.0.4 hostD"
done
tb_firewall C 41000 41099
TB_RDV=10.10.0.1:29500
T=$TB_TMP
FINDINGS='[.findings[] | select(.severity != "ok") | "\(.id): \(.title)"]'

st=0; tb_probe $T/p.json "A B C D" --timeout 1000 --burst 256K || st=$?
jq -r "$FINDINGS | .[]" $T/p.json 2>/dev/null | sed 's/^/# finding: /'
tb_check "probe exits 2 (errors found)" "test $st -eq 2" $T/p.json $T/probe.A.log $T/probe.B.log $T/probe.C.log $T/probe.D.log $T/probe.status
tb_check "every rank: NCCL picks eno1, nccl-doctor recommends ens3" "
    jq -e '[.ranks[] | select(.nccl_interface==\"eno1\" and .recommended_interface==\"ens3\")] | length == 4' $T/p.json" $T/p.json
tb_check "NCCL's eno1 reaches nobody (no route, or ICMP rate-limited: timed out); on ens3 only hostC's ephemeral port fails, its control port answers" "
    jq -e '[.rank_matrix[][] | select(. != null) | .status] | all(. == \"no-route\" or . == \"timed-out\")' $T/p.json &&
    jq -e '[range(4) as \$i | range(4) as \$j | select(\$i != \$j) | .rank_matrix[\$i][\$j].recommended | select(.status != \"ok\") | [\$i, \$j, .status, .control_port_status]] == [[0,2,\"timed-out\",\"ok\"],[1,2,\"timed-out\",\"ok\"],[3,2,\"timed-out\",\"ok\"]]' $T/p.json" $T/p.json
tb_check "exactly two findings: switch to ens3, then hostC's firewall on ens3" "
    jq -e '$FINDINGS == [
      \"net.iface-choice.unreachable: The interface NCCL picks does not reach the other hosts; ens3 does\",
      \"net.unreachable.port-filtered: A firewall on hostC blocks its ephemeral ports 41000-41099 on ens3, where NCCL listens\"]' $T/p.json" $T/p.json
tb_check "the interface advice is NCCL_SOCKET_IFNAME=ens3 and says what is left" "
    jq -e '.recommended_env.NCCL_SOCKET_IFNAME == \"ens3\"' $T/p.json &&
    jq -e '.findings[0].fix | test(\"NCCL_SOCKET_IFNAME=ens3\") and test(\"findings below\")' $T/p.json" $T/p.json
tb_check "the firewall finding gives the fix for hostC's range" "
    jq -e '.findings[1].fix | test(\"On hostC allow TCP 41000-41099\")' $T/p.json" $T/p.json

# the advice taken: only the firewall is left
TB_ENV_A=NCCL_SOCKET_IFNAME=ens3 TB_ENV_B=NCCL_SOCKET_IFNAME=ens3
TB_ENV_C=NCCL_SOCKET_IFNAME=ens3 TB_ENV_D=NCCL_SOCKET_IFNAME=ens3
export TB_ENV_A TB_ENV_B TB_ENV_C TB_ENV_D
st=0; tb_probe $T/q.json "A B C D" --timeout 1000 --burst 256K || st=$?
jq -r "$FINDINGS | .[]" $T/q.json 2>/dev/null | sed 's/^/# finding: /'
tb_check "with NCCL_SOCKET_IFNAME=ens3: exit 2, one finding, hostC's firewall" "
    test $st -eq 2 &&
    jq -e '$FINDINGS == [
      \"net.unreachable.port-filtered: A firewall on hostC blocks its ephemeral ports 41000-41099 on ens3, where NCCL listens\"]' $T/q.json" $T/q.json $T/probe.status
tb_done
