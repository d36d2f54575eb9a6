#!/bin/sh
# Scenario (a): NCCL's default interface does not reach the other host.
#   hostA, hostB: eno1 (first NIC, UP with carrier, on a management network
#   that leads nowhere), ens3 (the data LAN through a switch, default route),
#   docker0 with a container, virbr0.  NCCL (no NCCL_SOCKET_IFNAME) takes
#   eno1; `probe` shows the pairs fail on eno1 and work on ens3; `check`
#   recommends ens3.  With NCCL_SOCKET_IFNAME=ens3 everything connects;
#   a stale /etc/hosts entry on hostA shows as a host name that resolves
#   differently on different hosts.
. "$(dirname "$0")/lib.sh"
tb_init
tb_switch 10.10.0.254/24
for h in A B; do
    tb_host $h host$h
done
tb_stub A eno1 10.99.1.1/24
tb_stub B eno1 10.99.2.1/24
tb_lan A ens3 10.10.0.1/24
tb_lan B ens3 10.10.0.2/24
tb_docker A; tb_docker B
tb_virbr A; tb_virbr B
for h in A B; do ip -n "$(tb_ns $h)" route add default via 10.10.0.254 dev ens3; done
for h in A B; do
    tb_hosts_entry $h "10.10.0.1 hostA"
    tb_hosts_entry $h "10.10.0.2 hostB"
done
TB_RDV=10.10.0.1:29500
T=$TB_TMP

st=0; tb_probe $T/p.json "A B" --timeout 1500 --burst 256K || st=$?
tb_check "probe exits 2 (errors found)" "test $st -eq 2" $T/p.json $T/probe.A.log $T/probe.B.log $T/probe.status
tb_check "every rank reports NCCL's choice eno1 and the recommended ens3" "
    jq -e '[.ranks[] | select(.nccl_interface==\"eno1\" and .recommended_interface==\"ens3\")] | length == 2' $T/p.json" $T/p.json
tb_check "matrix: hostA -> hostB fails on eno1 with no route" "
    jq -e '.matrix.hosts == [\"hostA\",\"hostB\"]' $T/p.json &&
    jq -e '.matrix.cells[0][1].status == \"no-route\" and .matrix.cells[1][0].status == \"no-route\"' $T/p.json" $T/p.json
tb_check "finding net.iface-choice.unreachable recommends NCCL_SOCKET_IFNAME=ens3" "
    jq -e '.findings[] | select(.id==\"net.iface-choice.unreachable\" and .severity==\"error\") | .env.NCCL_SOCKET_IFNAME == \"ens3\"' $T/p.json &&
    jq -e '.recommended_env.NCCL_SOCKET_IFNAME == \"ens3\"' $T/p.json" $T/p.json
tb_check "the pair works on ens3 (recommended_status ok)" "
    jq -e '.rank_matrix[0][1].recommended_status == \"ok\" and .rank_matrix[1][0].recommended_status == \"ok\"' $T/p.json" $T/p.json

st=0; tb_in A env -u NCCL_SOCKET_IFNAME "$NCD_BIN" check --json --nccl-version 2.28.3 >$T/c.json || st=$?
tb_check "check on hostA: NCCL picks eno1, recommends ens3" "
    jq -e '.facts.network.nccl.bootstrap == \"eno1\"' $T/c.json &&
    jq -e '.recommended_env.NCCL_SOCKET_IFNAME == \"ens3\"' $T/c.json" $T/c.json

st=0; tb_in B env WORLD_SIZE=2 RANK=1 "$NCD_BIN" probe --rendezvous 10.10.0.1:29599 --rendezvous-timeout 2 >/dev/null 2>$T/rdv.err || st=$?
tb_check "a rank that cannot reach the rendezvous names the address and its interface" "
    test $st -eq 3 &&
    grep -q 'process 1 cannot reach the rendezvous at 10.10.0.1:29599' $T/rdv.err &&
    grep -q 'tried 10.10.0.1:29599 from local interface ens3 (address 10.10.0.2)' $T/rdv.err" $T/rdv.err

# and a stale /etc/hosts on hostA: hostB's old address
sed -i 's/^10.10.0.2 hostB$/10.10.0.99 hostB/' "/etc/netns/$(tb_ns A)/hosts"
TB_ENV_A=NCCL_SOCKET_IFNAME=ens3 TB_ENV_B=NCCL_SOCKET_IFNAME=ens3
export TB_ENV_A TB_ENV_B
st=0; tb_probe $T/q.json "A B" --timeout 1500 --burst 256K || st=$?
tb_check "with NCCL_SOCKET_IFNAME=ens3 on both: every pair connects, exit 0" "
    test $st -eq 0 &&
    jq -e '.matrix.cells[0][1].status == \"ok\" and .matrix.cells[1][0].status == \"ok\"' $T/q.json &&
    jq -e '.rank_matrix[0][1].bw_gbps > 0 and .rank_matrix[0][1].rtt_us > 0' $T/q.json" $T/q.json $T/probe.A.log $T/probe.B.log $T/probe.status
tb_check "hostB's name resolves differently on hostA (stale /etc/hosts): warning" "
    jq -e '.findings[] | select(.id==\"net.hostname.resolves-differently\" and .severity==\"warning\") | (.title | test(\"hostB\")) and (.evidence | map(test(\"on hostA: hostB -> 10.10.0.99\")) | any)' $T/q.json" $T/q.json
tb_done
