#!/bin/sh
# Live integration: two "hosts" as network namespaces with realistically
# named interfaces; `check` and `ifaces` run inside them read the live
# kernel state (sysfs of the namespace, getifaddrs).
#   host A: docker0 (bridge, a container attached), eno1 (carrier-less,
#           keeps its IP), ens3 (link to host B, default route),
#           wlp0s20f3 (up, no route); host B: ens3.
. "$(dirname "$0")/lib.sh"
command -v jq >/dev/null || skip_all "jq not installed"
[ "$(id -u)" -eq 0 ] || skip_all "needs root for ip netns"
A=ncdA$$ B=ncdB$$ C=ncdC$$
ip netns add $A 2>/dev/null || skip_all "cannot create network namespaces here"
cleanup() {
    for ns in $A $B $C; do ip netns del $ns 2>/dev/null; rm -rf /etc/netns/$ns; done
    rm -rf "$TEST_TMP"
}
trap cleanup EXIT
ip netns add $B
ip netns add $C
inA() { ip netns exec $A "$@"; }
set -e
inA ip link set lo up
inA ip link add docker0 type bridge
inA ip link add vethc0 type veth peer name vethc1
inA ip link set vethc0 master docker0
inA ip addr add 172.17.0.1/16 dev docker0
inA ip link set docker0 up; inA ip link set vethc0 up; inA ip link set vethc1 up
inA ip link add eno1 type veth peer name eno1peer   # peer stays down: no carrier
inA ip addr add 10.20.0.5/24 dev eno1
inA ip link set eno1 up
ip link add ens3 netns $A type veth peer name ens3 netns $B
inA ip addr add 10.10.0.1/24 dev ens3
inA ip link set ens3 up
ip netns exec $B ip addr add 10.10.0.2/24 dev ens3
ip netns exec $B ip link set ens3 up
ip netns exec $B ip link set lo up
inA ip route add default via 10.10.0.2 dev ens3
inA ip link add wlp0s20f3 type veth peer name wlpeer
inA ip link set wlpeer up
inA ip addr add 192.168.7.5/24 dev wlp0s20f3
inA ip link set wlp0s20f3 up
# host C: a workstation whose only interfaces besides lo are libvirt's
# virbr0 (a VM attached) and docker0 (a container attached)
inC() { ip netns exec $C "$@"; }
inC ip link set lo up
inC ip link add virbr0 type bridge
inC ip addr add 192.168.122.1/24 dev virbr0
inC ip link add vnet0 type veth peer name vmnic0
inC ip link set vnet0 master virbr0
inC ip link add docker0 type bridge
inC ip addr add 172.17.0.1/16 dev docker0
inC ip link add veth7c1d2e3 type veth peer name ctr0
inC ip link set veth7c1d2e3 master docker0
for d in virbr0 vnet0 vmnic0 docker0 veth7c1d2e3 ctr0; do inC ip link set $d up; done
# A's /etc/hosts names B (ip netns exec mounts /etc/netns/A/hosts)
mkdir -p /etc/netns/$A
printf '127.0.0.1 localhost\n10.10.0.2 rankzero\n' >/etc/netns/$A/hosts
set +e
# carrier reaches the bridges through linkwatch, up to a second later
i=0
while [ $i -lt 60 ] && ! inC ip -o link show virbr0 | grep -q 'state UP'; do
    sleep 0.05; i=$((i + 1))
done
NCD="env -u NCCL_SOCKET_IFNAME -u NCCL_COMM_ID -u NCCL_SOCKET_FAMILY $NCD_BIN"

test_expect_success 'ifaces: ens3 recommended, eno1 unusable (no carrier)' "
    inA $NCD ifaces --json --nccl-version 2.28.3 >i.json &&
    test \"\$(jq -r .recommended i.json)\" = ens3 &&
    jq -e '.interfaces[] | select(.name==\"eno1\") | .usable == false' i.json &&
    jq -e '.interfaces[] | select(.name==\"eno1\") | .flags | index(\"RUNNING\") == null' i.json &&
    jq -e '.interfaces[] | select(.name==\"docker0\") | .kind == \"container-bridge\"' i.json &&
    jq -e '.interfaces[] | select(.name==\"lo\") | .kind == \"loopback\"' i.json &&
    jq -e '.recommended_env.NCCL_SOCKET_IFNAME == \"ens3\"' i.json
"
test_expect_success 'NCCL 2.28 skips the carrier-less eno1 and picks ens3' "
    inA $NCD ifaces --json --nccl-version 2.28.3 >i.json &&
    test \"\$(jq -r .nccl.bootstrap i.json)\" = ens3 &&
    jq -e '.nccl.socket | index(\"docker0\") == null' i.json
"
test_expect_success 'NCCL 2.27 takes the down eno1: check reports it' "
    st=0; inA $NCD check --json --nccl-version 2.27.7 >c.json || st=\$?
    test \$st -eq 2 &&
    test \"\$(jq -r .facts.network.nccl.bootstrap c.json)\" = eno1 &&
    jq -e '[.findings[] | select(.id==\"net.iface-choice.down\" and .severity==\"error\")] | length == 1' c.json &&
    jq -e '.findings[] | select(.id==\"net.iface-choice.down\") | .env.NCCL_SOCKET_IFNAME == \"ens3\"' c.json
"
test_expect_success 'wrong NCCL_SOCKET_IFNAME: no-match error, exit 2' "
    st=0; inA env NCCL_SOCKET_IFNAME=eth0 $NCD_BIN check --json >c.json || st=\$?
    test \$st -eq 2 &&
    jq -e '.findings[0].id == \"net.ifname.no-match\"' c.json &&
    jq -e '.recommended_env.NCCL_SOCKET_IFNAME == \"ens3\"' c.json
"
test_expect_success 'IFNAME naming a carrier-less interface: no-match explains it' "
    st=0; inA env NCCL_SOCKET_IFNAME==eno1 $NCD_BIN check --json --nccl-version 2.28.3 >c.json || st=\$?
    test \$st -eq 2 &&
    jq -r '.findings[] | select(.id==\"net.ifname.no-match\") | .cause' c.json | grep -q RUNNING
"
test_expect_success 'exclusion list that lets lo win' "
    st=0; inA env NCCL_SOCKET_IFNAME=^docker $NCD_BIN check --json >c.json || st=\$?
    test \$st -eq 2 &&
    jq -e '[.findings[] | select(.id==\"net.ifname.lo-wins\")] | length == 1' c.json
"
test_expect_success 'right NCCL_SOCKET_IFNAME: no network error' "
    st=0; inA env NCCL_SOCKET_IFNAME==ens3 $NCD_BIN check --json >c.json || st=\$?
    jq -e '[.findings[] | select(.severity==\"error\" and (.category|startswith(\"net.\")))] | length == 0' c.json
"
test_expect_success 'host B: its only interface is ens3' "
    ip netns exec $B $NCD ifaces --json >b.json &&
    test \"\$(jq -r .recommended b.json)\" = ens3 &&
    test \"\$(jq -r .nccl.bootstrap b.json)\" = ens3
"
test_expect_success 'text report of ifaces inside the namespace' "
    inA $NCD ifaces --no-color >i.txt &&
    grep -q 'ens3 .*<- recommended' i.txt && grep -q 'NO-CARRIER' i.txt
"
test_expect_success 'only libvirt/docker bridges: no recommendation, local-only finding' "
    ip netns exec $C $NCD ifaces --json >i.json &&
    jq -e '.recommended == null and .recommended_env == {}' i.json &&
    jq -e '.interfaces[] | select(.name==\"virbr0\") | .usable == false and
        any(.reasons[]; test(\"reaches another host\"))' i.json &&
    st=0; ip netns exec $C $NCD check --json >c.json || st=\$?
    jq -e '[.findings[] | select(.id==\"net.iface-choice.local-only\" and
        .category==\"net.iface-choice\")] | length == 1' c.json &&
    jq -e '[.findings[] | select(.id==\"net.no-routable-address\")] | length == 0' c.json &&
    jq -e '.recommended_env.NCCL_SOCKET_IFNAME == null' c.json
"
test_expect_success 'NCCL_COMM_ID host name from /etc/hosts: bootstrap on its subnet' "
    st=0; inA env NCCL_COMM_ID=rankzero:29500 $NCD_BIN check --json >c.json || st=\$?
    test \"\$(jq -r .facts.network.nccl.bootstrap c.json)\" = ens3 &&
    jq -e '[.findings[] | select(.id|test(\"comm-id\"))] | length == 0' c.json
"
test_done
