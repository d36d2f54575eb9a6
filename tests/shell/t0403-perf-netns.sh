#!/bin/sh
# perf across two "hosts": two network namespaces joined by a veth pair
# (10.77.x.1 / 10.77.x.2, addresses only inside the test's own
# namespaces), a 2-rank all_reduce with the TCP rendezvous root in the
# first namespace.  Skipped (77) when namespaces cannot be created.
. "$(dirname "$0")/perf_lib.sh"
command -v ip >/dev/null || skip "iproute2 not installed"
A=ncdpa$$; B=ncdpb$$; C=ncdpc$$; D=ncdpd$$; SUB=$(( $$ % 200 + 20 ))
cleanup() {
    ip netns del $A 2>/dev/null; ip netns del $B 2>/dev/null
    ip netns del $C 2>/dev/null; ip netns del $D 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT
ip netns add $A 2>/dev/null || skip "cannot create network namespaces"
ip netns add $B || skip "cannot create network namespaces"
ip link add va$$ netns $A type veth peer name vb$$ netns $B || skip "no veth"
ip -n $A addr add 10.77.$SUB.1/24 dev va$$
ip -n $B addr add 10.77.$SUB.2/24 dev vb$$
ip -n $A link set va$$ up; ip -n $B link set vb$$ up
ip -n $A link set lo up; ip -n $B link set lo up
i=0; while ! ip -n $B link show vb$$ | grep -q LOWER_UP ||
            ! ip -n $A link show va$$ | grep -q LOWER_UP; do
    i=$((i+1)); [ $i -gt 30 ] && skip "veth link did not come up"; sleep 0.2
done

PORT=29411
ip netns exec $A env RANK=0 WORLD_SIZE=2 "$NCD_BIN" perf all_reduce -b 8 -e 8M -f 4 \
    --backend socket --rendezvous 10.77.$SUB.1:$PORT --peer-timeout 20 >"$TMP/a.out" 2>"$TMP/a.err" &
PA=$!
ip netns exec $B env RANK=1 WORLD_SIZE=2 "$NCD_BIN" perf all_reduce -b 8 -e 8M -f 4 \
    --backend socket --rendezvous 10.77.$SUB.1:$PORT --peer-timeout 20 >"$TMP/b.out" 2>"$TMP/b.err"
rb=$?
wait $PA; ra=$?
check "both ranks exit 0 ($ra, $rb)" [ $ra -eq 0 -a $rb -eq 0 ]
check "rank 0 prints the table: 0 wrong" sh -c "parse_table() { :; }; grep -qx '# Out of bounds values : 0 OK' '$TMP/a.out'"
parse_table "$TMP/a.out" >"$TMP/p"
check "11 rows, all correct ($(cat $TMP/p))" grep -q '^rows=11 wrong=0 bad=0' "$TMP/p"
check "rank 0 listens on its veth address" grep -q "^#  Rank  0 .* socket va$$ 10.77.$SUB.1:" "$TMP/a.out"
check "rank 1 is in the other namespace, on the other address" grep -q "^#  Rank  1 .* socket vb$$ 10.77.$SUB.2:" "$TMP/a.out"
check "rank 1 prints nothing" [ ! -s "$TMP/b.out" ]

# NCCL_SOCKET_IFNAME that matches nothing in the namespace: clear error
ip netns exec $B env NCCL_SOCKET_IFNAME==eth9 RANK=0 WORLD_SIZE=1 "$NCD_BIN" perf all_reduce \
    -b 8 -e 8 --backend socket --rendezvous 10.77.$SUB.2:$PORT >/dev/null 2>"$TMP/e.err"
check "NCCL_SOCKET_IFNAME matching nothing is reported" grep -q 'NCCL_SOCKET_IFNAME==eth9 matches no running interface' "$TMP/e.err"
# NCCL's path (issue 10 item 2): each host has an interface NCCL takes by
# default (the first one, ifindex order, not lo/docker/virbr) that does not
# reach the other host, and the veth that does.  The rendezvous (on the
# veth) only exchanges addresses; the ranks connect to the advertised ones
# and so fail as NCCL would, naming the interface and the peer; with the
# right NCCL_SOCKET_IFNAME the same job passes.
ip netns add $C && ip netns add $D || skip "cannot create network namespaces"
# ens1: a veth whose peer stays in the same namespace (a link that is up
# but reaches no other host)
for ns in $C $D; do
    ip -n $ns link add ens1 type veth peer name zz1 || skip "no veth"
    ip -n $ns link set zz1 up; ip -n $ns link set ens1 up
done
ip -n $C addr add 10.78.$SUB.1/24 dev ens1; ip -n $D addr add 10.78.$SUB.2/24 dev ens1
ip link add vc$$ netns $C type veth peer name vd$$ netns $D || skip "no veth"
ip -n $C addr add 10.79.$SUB.1/24 dev vc$$; ip -n $D addr add 10.79.$SUB.2/24 dev vd$$
ip -n $C link set vc$$ up; ip -n $D link set vd$$ up
ip -n $C link set lo up; ip -n $D link set lo up
i=0; while ! ip -n $D link show vd$$ | grep -q LOWER_UP ||
            ! ip -n $C link show vc$$ | grep -q LOWER_UP; do
    i=$((i+1)); [ $i -gt 30 ] && skip "veth link did not come up"; sleep 0.2
done
predicted=$(ip netns exec $C "$NCD_BIN" ifaces --json 2>/dev/null | python3 -c '
import json, sys
print((json.load(sys.stdin)["nccl"]["socket"] or [""])[0])' 2>/dev/null)
check "NCCL's predicted Socket interface is the dead one (ens1, got '$predicted')" [ "$predicted" = ens1 ]
two_hosts() { # two_hosts TAG ENV... -> ranks' statuses in $TMP/TAG.rc
    tag=$1; shift
    ip netns exec $C env "$@" RANK=0 WORLD_SIZE=2 "$NCD_BIN" perf all_reduce -b 8 -e 64K -f 8 \
        --backend socket --rendezvous 10.79.$SUB.1:$PORT --peer-timeout 4 >"$TMP/$tag.0.out" 2>"$TMP/$tag.0.err" &
    pc=$!
    ip netns exec $D env "$@" RANK=1 WORLD_SIZE=2 "$NCD_BIN" perf all_reduce -b 8 -e 64K -f 8 \
        --backend socket --rendezvous 10.79.$SUB.1:$PORT --peer-timeout 4 >"$TMP/$tag.1.out" 2>"$TMP/$tag.1.err"
    r1=$?; wait $pc; r0=$?
    echo "$r0 $r1" >"$TMP/$tag.rc"
}
two_hosts dead NCD_UNUSED=1
check "default interface dead: both ranks fail ($(cat $TMP/dead.rc))" sh -c "! grep -q '^0 ' '$TMP/dead.rc' && ! grep -q ' 0\$' '$TMP/dead.rc'"
check "... rank 1 names its interface and the peer's advertised ens1 address" \
    grep -q "rank 1 on ens1 10.78.$SUB.2 cannot connect to rank 0 (host [^,]*, pid [0-9]*, ens1 10.78.$SUB.1:[0-9]*)" "$TMP/dead.1.err" "$TMP/dead.1.out"
check "... rank 0 says rank 1 never reached its ens1 address" \
    grep -q "rank 0: rank 1 (host [^,]*, pid [0-9]*, ens1 10.78.$SUB.2:[0-9]*) never connected.*cannot reach 10.78.$SUB.1:" "$TMP/dead.0.err" "$TMP/dead.0.out"
sed 's/^/#   /' "$TMP/dead.1.err" | head -3
two_hosts good NCCL_SOCKET_IFNAME=vc,vd
check "NCCL_SOCKET_IFNAME=vc,vd (the veths): both ranks pass ($(cat $TMP/good.rc))" grep -qx '0 0' "$TMP/good.rc"
check "... over the veth addresses" grep -q "^#  Rank  1 .* socket vd$$ 10.79.$SUB.2:" "$TMP/good.0.out"
finish
