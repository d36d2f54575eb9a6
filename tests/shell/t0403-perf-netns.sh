#!/bin/sh
# perf across two "hosts": two network namespaces joined by a veth pair
# (10.77.x.1 / 10.77.x.2, addresses only inside the test's own
# namespaces), a 2-rank all_reduce with the TCP rendezvous root in the
# first namespace.  Skipped (77) when namespaces cannot be created.
. "$(dirname "$0")/perf_lib.sh"
command -v ip >/dev/null || skip "iproute2 not installed"
A=ncdpa$$; B=ncdpb$$; SUB=$(( $$ % 200 + 20 ))
cleanup() {
    ip netns del $A 2>/dev/null; ip netns del $B 2>/dev/null
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
finish
