#!/bin/sh
# The nftables rule set read through NETLINK_NETFILTER dumps (libnftnl,
# src/lib/sys/live_nft.c) says what `nft -j list ruleset` says, for the
# constructs the firewall analysis reads: base chains (hook, priority,
# policy), tcp/udp dport/sport values, ranges, anonymous and named
# interval sets, iif/iifname (and a wildcard), ip/ip6 saddr/daddr with
# prefixes, ct state, meta l4proto, ip protocol, accept/drop/reject/jump/
# goto, in inet and ip tables, built in a private network namespace.
# gather records that answer (.ncd/nft.json) and it replays to the same
# finding; check loads no libnftables (nor libgmp/libxtables).
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" -eq 0 ] || skip_all "needs root (ip netns, nft)"
command -v nft >/dev/null 2>&1 || skip_all "nft is missing (install-deps installs nftables)"
command -v jq >/dev/null 2>&1 || skip_all "jq is missing"
NS=ncd-t0507-$$
ip netns add "$NS" 2>/dev/null || skip_all "cannot create network namespaces here"
trap 'ip netns del "$NS" 2>/dev/null; rm -rf "$TEST_TMP"' EXIT
in_ns() { ip netns exec "$NS" "$@"; }
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"

cat >"$TEST_TMP/rules.nft" <<'NFT'
table inet t {
  set myset { type inet_service; flags interval; elements = { 80, 1000-2000 } }
  set plain { type inet_service; elements = { 443, 8443 } }
  chain input {
    type filter hook input priority 0; policy drop;
    ct state established,related accept
    ct state new,established counter accept
    iifname "lo" accept
    iif lo accept
    iifname "eth*" accept
    meta l4proto tcp tcp dport 22 accept
    tcp dport 1000-2000 accept
    tcp dport != 1000-2000 drop
    tcp dport { 3000, 4000-4100 } drop
    tcp dport { 3001, 3002 } drop
    tcp sport 5 reject with tcp reset
    udp dport 53 accept
    meta l4proto udp accept
    ip saddr 10.0.0.0/8 tcp dport @myset accept
    ip saddr 10.1.2.0/23 tcp dport @plain accept
    ip daddr 192.168.1.1 jump other
    ip6 saddr fe80::/10 goto other
    ip6 daddr ::1 accept
    tcp dport 7 counter reject
  }
  chain other {
    tcp dport 9 accept
  }
}
table ip t4 {
  chain in {
    type filter hook input priority -10;
    tcp dport 99 drop
    ip protocol udp drop
  }
}
NFT
in_ns nft -f "$TEST_TMP/rules.nft" || skip_all "nft cannot load rules here (no nf_tables?)"
in_ns sysctl -qw net.ipv4.ip_local_port_range="3000 3100"
in_ns nft -j list ruleset >"$TEST_TMP/nft.json"

# What both sides must agree on: chains, named sets' elements, and each
# rule's matches and verdicts (counters, handles and metainfo left out).
norm() {
    jq -S '{chains: ([.nftables[] | select(.chain) |
                      .chain | {family, table, name, hook, prio, policy}] | sort),
            sets: ([.nftables[] | select(.set) |
                    .set | {family, table, name, elem}] | sort),
            rules: [.nftables[] | select(.rule) | .rule | {family, table, chain,
                     expr: [.expr[] | select(has("counter") | not)]}]}' "$1"
}

test_expect_success 'gather in the namespace records the rule set' '
    in_ns "$NCD_BIN" gather -o "$TEST_TMP/g.tar.gz" >/dev/null 2>&1 &&
    mkdir -p "$TEST_TMP/g" && tar -xzf "$TEST_TMP/g.tar.gz" -C "$TEST_TMP/g" &&
    test -s "$TEST_TMP/g/.ncd/nft.json"
'
test_expect_success 'the netlink decoding says what nft -j list ruleset says' '
    norm "$TEST_TMP/nft.json" >"$TEST_TMP/want" &&
    norm "$TEST_TMP/g/.ncd/nft.json" >"$TEST_TMP/got" &&
    test "$(jq ".rules | length" "$TEST_TMP/want")" -eq 22 &&
    test_cmp "$TEST_TMP/want" "$TEST_TMP/got"
'
test_expect_success 'live check: the drop rules, as nft writes them' '
    in_ns "$NCD_BIN" check --json >"$TEST_TMP/live.json" 2>/dev/null ;
    jq -r ".findings[].evidence[]?" "$TEST_TMP/live.json" >"$TEST_TMP/ev" &&
    grep -qx "source: netlink: nftables rule set" "$TEST_TMP/ev" &&
    grep -qx "inet t input: input hook, policy drop" "$TEST_TMP/ev" &&
    grep -qx "drops part of the range: inet t input: tcp dport { 3000, 4000-4100 } drop" "$TEST_TMP/ev" &&
    grep -qx "drops part of the range: inet t input: tcp dport { 3001, 3002 } drop" "$TEST_TMP/ev"
'
test_expect_success 'the capture replays to the same firewall evidence' '
    "$NCD_BIN" check --json --sysroot "$TEST_TMP/g.tar.gz" >"$TEST_TMP/rp.json" 2>/dev/null ;
    jq -r ".findings[].evidence[]?" "$TEST_TMP/rp.json" | grep "drops part" >"$TEST_TMP/rev" &&
    grep "drops part" "$TEST_TMP/ev" >"$TEST_TMP/lev" &&
    test -s "$TEST_TMP/lev" && test_cmp "$TEST_TMP/lev" "$TEST_TMP/rev"
'
test_expect_success 'nft -j output itself (old captures) reads the same way' '
    mkdir -p "$TEST_TMP/old/.ncd" && cp -r "$TEST_TMP/g/." "$TEST_TMP/old/" &&
    cp "$TEST_TMP/nft.json" "$TEST_TMP/old/.ncd/nft.json" &&
    "$NCD_BIN" check --json --sysroot "$TEST_TMP/old" >"$TEST_TMP/old.json" 2>/dev/null ;
    jq -r ".findings[].evidence[]?" "$TEST_TMP/old.json" | grep "drops part" >"$TEST_TMP/oev" &&
    test_cmp "$TEST_TMP/lev" "$TEST_TMP/oev"
'
if command -v strace >/dev/null 2>&1; then
test_expect_success 'live check loads no libnftables, libgmp or libxtables' '
    in_ns strace -f -qq -e trace=openat -o "$TEST_TMP/st" "$NCD_BIN" check >/dev/null 2>&1 ;
    test -s "$TEST_TMP/st" &&
    ! grep -E "libnftables|libgmp|libxtables" "$TEST_TMP/st"
'
fi
test_done
