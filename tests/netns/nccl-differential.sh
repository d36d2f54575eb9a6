#!/bin/sh
# Differential test against the real NCCL: each scenario builds one "host"
# as a network namespace (realistic interface names, carrier states,
# address orders, NCCL_SOCKET_IFNAME / NCCL_SOCKET_FAMILY / NCCL_COMM_ID
# values), then runs in it
#   - the real libnccl.so.2's ncclGetUniqueId() through dlopen
#     ($NCD_NCCL_ORACLE, tests/netns/nccl_oracle.c) with NCCL_DEBUG=INFO:
#     it logs "Bootstrap: Using <if>:<addr><0>" or the WARN that says why
#     there is no interface;
#   - `nccl-doctor ifaces --json --nccl-version <that version>`;
# and requires the same interface and address, or the same failure.
# Prints one table row per scenario; fails on any disagreement.
# Skips (77) without root/netns, or without a real libnccl.so.2 under
# /usr/local/cuda*/lib* or on the loader path.  NCD_NCCL_LIB overrides the
# library; NCD_DIFF_ONLY=<name> runs one scenario.
. "$(dirname "$0")/lib.sh"
: "${NCD_NCCL_ORACLE:?NCD_NCCL_ORACLE must point at ncd-nccl-oracle}"
tb_init

# --- the real library ----------------------------------------------------
LIB=${NCD_NCCL_LIB:-}
if [ -z "$LIB" ]; then
    for f in /usr/local/cuda*/lib*/libnccl.so.2; do
        [ -e "$f" ] && { LIB=$f; break; }
    done
fi
[ -n "$LIB" ] || LIB=libnccl.so.2 # the loader's search path
T=$TB_TMP
mkdir -p "$T/home"
# The peers of every veth live in one "far" namespace, where the version
# probe runs too (ncclGetUniqueId listens on an address of its host).
FAR=ncdF$TB_ID
ip netns add "$FAR" || tb_skip "cannot create network namespaces"
TB_NS="$TB_NS $FAR"
st=0
ip netns exec "$FAR" env NCCL_DEBUG=INFO "$NCD_NCCL_ORACLE" "$LIB" >"$T/probe.out" 2>&1 || st=$?
if [ $st -eq 77 ]; then
    tb_skip "no real libnccl.so.2 ($(tail -1 "$T/probe.out"))"
fi
code=$(sed -n 's/^oracle version \([0-9][0-9]*\)$/\1/p' "$T/probe.out")
[ -n "$code" ] || tb_skip "$LIB did not report a version"
# A real NCCL logs its own lines under NCCL_DEBUG=INFO; a stand-in does not.
grep -q 'NCCL INFO' "$T/probe.out" ||
    tb_skip "$LIB is not a real NCCL (no NCCL INFO lines)"
if [ "$code" -lt 10000 ]; then # X*1000+Y*100+Z before 2.9
    VER=$((code / 1000)).$((code % 1000 / 100)).$((code % 100))
else
    VER=$((code / 10000)).$((code % 10000 / 100)).$((code % 100))
fi
echo "# NCCL $VER from $LIB"

# --- building the hosts --------------------------------------------------
# All hosts are built first (one `ip -batch` each), then the test waits
# once for the kernel to settle their carrier states (linkwatch applies
# them in a batch up to a second later; IPv6 link-local addresses follow),
# then both sides run per host.  A veth whose peer (in the far namespace)
# is up has carrier.
: >"$T/far.batch"
NPEER=0 NSC=0
SCS=""

begin() { # begin NAME: a fresh host namespace for scenario NAME
    SC=$1
    NSC=$((NSC + 1))
    NS=ncdd$NSC.$TB_ID
    ip netns add "$NS" || return 1
    TB_NS="$TB_NS $NS"
    SCS="$SCS $SC:$NS"
    # its own /etc/hosts and a resolver that answers at once
    mkdir -p "/etc/netns/$NS"
    printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost\n' >"/etc/netns/$NS/hosts"
    printf 'nameserver 127.0.0.1\noptions timeout:1 attempts:1\n' >"/etc/netns/$NS/resolv.conf"
    BATCH=$T/$SC.batch
    : >"$T/$SC.env"
    LOUP=1 NOLL=0
}
b() { echo "$*" >>"$BATCH"; }
setenv() { printf '%s=%s\n' "$1" "$2" >>"$T/$SC.env"; }
hosts() { echo "$1" >>"/etc/netns/$NS/hosts"; }
lo_down() { LOUP=0; }  # lo stays down: no 127.0.0.1, no ::1
no_ll() { NOLL=1; }    # no automatic IPv6 link-local on what follows

# nic NAME STATE [ADDR...]: a NIC (veth) in state up | nocarrier | down |
# dormant, with addresses in the order given ("A/len:label" gives the
# address the alias label NAME:1)
nic() {
    n=$1 st=$2
    shift 2
    NPEER=$((NPEER + 1))
    b link add "$n" type veth peer name "p$NPEER" netns "$FAR"
    [ "$st" = nocarrier ] || echo "link set p$NPEER up" >>"$T/far.batch"
    [ $NOLL = 0 ] || b link set dev "$n" addrgenmode none
    addrs "$n" "$@"
    case $st in
    up | nocarrier) b link set "$n" up ;;
    dormant) # link mode dormant: operstate DORMANT until a supplicant
        # says otherwise (this iproute2 has no "dormant on")
        b link set "$n" mode dormant
        b link set "$n" up
        ;;
    esac
}
addrs() {
    n=$1
    shift
    for a in "$@"; do
        case $a in
        *:label) b addr add "${a%:label}" dev "$n" label "$n:1" ;;
        *:*) b addr add "$a" dev "$n" nodad ;;
        *) b addr add "$a" dev "$n" ;;
        esac
    done
}
# bridge NAME PORTS [ADDR...]: a Linux bridge (docker0, virbr0, br-*, cni0)
# with PORTS running ports named as their owners name them (vnetN for
# libvirt, vethXXXXXXX for containers); 0 ports = empty bridge, no carrier
bridge() {
    n=$1 ports=$2
    shift 2
    b link add "$n" type bridge
    [ $NOLL = 0 ] || b link set dev "$n" addrgenmode none
    addrs "$n" "$@"
    b link set "$n" up
    i=0
    while [ $i -lt "$ports" ]; do
        i=$((i + 1))
        NPEER=$((NPEER + 1))
        case $n in
        virbr*) pn=vnet$NPEER ;;
        *) pn=veth$(printf '%07x' $((NPEER * 2654435 % 268435456))) ;;
        esac
        b link add "$pn" type veth peer name "p$NPEER" netns "$FAR"
        echo "link set p$NPEER up" >>"$T/far.batch"
        b link set "$pn" master "$n"
        b link set "$pn" up
    done
}
setup() { # runs the scenario's batch in its namespace
    { [ $LOUP = 0 ] || echo "link set lo up"; cat "$BATCH"; } >"$BATCH.all"
    ip -n "$NS" -batch "$BATCH.all" >"$T/$SC.setup" 2>&1 ||
        { echo "setup of $SC failed:"; cat "$T/$SC.setup"; exit 1; }
}
# 0 when NS has settled: nothing with carrier still waits for linkwatch
# (UP,LOWER_UP shown as NO-CARRIER, not dormant), and each running
# interface that will get an IPv6 link-local address has it
settled() {
    ip -d -n "$1" -o link show >"$T/settle.link" &&
        ip -n "$1" -o -6 addr show scope link >"$T/settle.addr" &&
        awk 'FILENAME == ARGV[1] { ll[$2] = 1; next }
            { n = $2; sub(/:$/, "", n); sub(/@.*/, "", n) }
            /LOWER_UP/ && /NO-CARRIER/ && !/state DORMANT/ { bad = 1 }
            /[<,]UP[,>]/ && /LOWER_UP/ && !/NO-CARRIER/ && n != "lo" &&
                !/addrgenmode none/ && !(n in ll) { bad = 1 }
            END { exit bad }' "$T/settle.addr" "$T/settle.link"
}

# --- running both sides --------------------------------------------------
# NCCL's outcome: "using <if>:<addr><port>" or the WARN that ended it.
nccl_outcome() {
    u=$(sed -n 's/.*NCCL INFO Bootstrap *: Using \(.*\)$/\1/p' "$1" | head -1)
    if [ -n "$u" ]; then
        echo "using $u"
        return
    fi
    for w in "Invalid NCCL_COMM_ID" "NET/Socket : No usable listening interface found" \
        "Bootstrap : no socket interface found"; do
        if grep -q "NCCL WARN $w" "$1"; then
            echo "fail $w"
            return
        fi
    done
    echo "other: $(sed -n 's/^oracle result //p' "$1")"
}
ncd_outcome() {
    jq -r '.nccl | if .bootstrap != null
        then "using \(.bootstrap):\(.bootstrap_address)<0>"
        else "fail \(.bootstrap_error // "no interface")" end' "$1" |
        sed 's/^fail Invalid NCCL_COMM_ID.*/fail Invalid NCCL_COMM_ID/'
}
NAGREE=0 NDIS=0
run_one() { # run_one NAME NS
    SC=$1 NS=$2
    o="$T/$SC.nccl" j="$T/$SC.json"
    set --
    while IFS= read -r l; do set -- "$@" "$l"; done <"$T/$SC.env"
    ip netns exec "$NS" env -i PATH="$PATH" HOME="$T/home" NCCL_DEBUG=INFO \
        "$@" "$NCD_NCCL_ORACLE" "$LIB" >"$o" 2>&1
    ip netns exec "$NS" env -i PATH="$PATH" HOME="$T/home" \
        ${ASAN_OPTIONS:+ASAN_OPTIONS="$ASAN_OPTIONS"} \
        ${UBSAN_OPTIONS:+UBSAN_OPTIONS="$UBSAN_OPTIONS"} \
        "$@" "$NCD_BIN" ifaces --json --nccl-version "$VER" >"$j" 2>"$T/$SC.err"
    a=$(nccl_outcome "$o")
    b=$(ncd_outcome "$j" 2>/dev/null) || b="error: $(head -c 200 "$T/$SC.err")"
    if [ "$a" = "$b" ]; then
        verdict=agree NAGREE=$((NAGREE + 1))
        tb_ok "$SC: $a"
    else
        verdict=DISAGREE NDIS=$((NDIS + 1))
        tb_not_ok "$SC: NCCL '$a', nccl-doctor '$b'"
        sed -n '/NCCL WARN\|Bootstrap\|NET\/Socket\|oracle result/s/^/#   nccl: /p' "$o"
        echo "#   env: $(tr '\n' ' ' <"$T/$SC.env")"
        ip -n "$NS" -o addr show | sed 's/^/#   ip: /'
        jq -c .nccl "$j" 2>/dev/null | sed 's/^/#   ncd: /'
    fi
    printf '# %-28s %-46s %-46s %s\n' "$SC" "$a" "$b" "$verdict" >>"$T/table"
    # NET/Socket lines come only from a communicator init; shown if present
    grep -h 'NET/Socket : Using' "$o" | sed 's/^/#   /'
    :
}
only() { [ -z "${NCD_DIFF_ONLY:-}" ] || [ "$NCD_DIFF_ONLY" = "$1" ]; }
scenario() { # scenario NAME: builds the host of sc_NAME
    only "$1" || return 0
    begin "$1"
    "sc_$1"
    setup
}

# --- the scenarios -------------------------------------------------------
# Automatic selection
sc_eth_only() { nic eth0 up 10.10.0.5/24; }
sc_ib_before_eth() { nic eth0 up 10.10.0.5/24; nic ib0 up 192.168.10.5/24; }
sc_ib_no_carrier() { nic ib0 nocarrier 192.168.10.5/24; nic eth0 up 10.10.0.5/24; }
sc_ib_admin_down() { nic ib0 down 192.168.10.5/24; nic ens3 up 10.10.0.5/24; }
sc_ib_dormant() { nic ib0 dormant 192.168.10.5/24; nic eno1 up 10.10.0.5/24; }
sc_ib_link_local_only() { nic ib0 up; nic eth0 up 10.10.0.5/24; }
sc_ib_two_ports() { nic ib1 up 192.168.11.5/24; nic ib0 up 192.168.10.5/24; nic eth0 up 10.10.0.5/24; }
sc_docker_only() { bridge docker0 1 172.17.0.1/16; }
sc_docker_empty() { bridge docker0 0 172.17.0.1/16; }
sc_virbr_only() { bridge virbr0 1 192.168.122.1/24; }
sc_virbr_docker() { bridge virbr0 1 192.168.122.1/24; bridge docker0 1 172.17.0.1/16; }
sc_virbr_and_eth() { bridge virbr0 1 192.168.122.1/24; nic eth0 up 10.10.0.5/24; }
sc_br_docker_net_first() { bridge br-3f2a9c1d7e4b 1 172.18.0.1/16; nic ens3 up 10.10.0.5/24; }
sc_veth_first() { nic veth1a2b3c4 up 172.17.0.9/16; nic eno1 up 10.10.0.5/24; }
sc_k8s_node() {
    bridge cni0 2 10.244.1.1/24
    nic flannel.1 up 10.244.1.0/32
    nic eth0 up 10.10.0.5/24
}
sc_wifi_laptop() { bridge docker0 0 172.17.0.1/16; nic wlp2s0 up 192.168.1.23/24; }
sc_eno_no_carrier() { nic eno1 nocarrier 10.20.0.5/24; nic ens3 up 10.10.0.5/24; }
sc_all_down() { nic eth0 down 10.10.0.5/24; nic eth1 nocarrier 10.11.0.5/24; }
sc_nothing_at_all() { lo_down; nic eth0 down; }
sc_lo_down_docker() { lo_down; bridge docker0 1 172.17.0.1/16; nic eth0 nocarrier 10.10.0.5/24; }
sc_ipv6_only() { nic eth0 up fd00:10::5/64; }
sc_ipv6_before_ipv4() { nic ens1 up fd00:10::5/64; nic ens2 up 10.10.0.5/24; }
sc_link_local_only() { nic eth0 up; }
sc_link_local_no_lo() { lo_down; nic eth0 up; }
sc_apipa_only() { no_ll; nic eth0 up 169.254.12.5/16; }
sc_several_addrs() { nic eth0 up 10.10.0.5/24 10.10.0.6/24 192.168.5.5/24; nic eth1 up 10.11.0.5/24; }
sc_alias_label() { nic eth0 up 10.10.0.5/24 10.10.1.5/24:label; }
sc_dual_stack_v6_first() { nic eth0 up fd00:10::5/64 10.10.0.5/24; }
sc_gpu_node() {
    nic eno1 nocarrier 10.20.0.5/24
    nic eno2 up 10.10.0.5/24
    bridge docker0 0 172.17.0.1/16
    nic ib0 up 192.168.10.5/24
    nic ib1 nocarrier 192.168.11.5/24
}
# NCCL_SOCKET_IFNAME
sc_ifname_prefix() { setenv NCCL_SOCKET_IFNAME eth; nic eno1 up 10.9.0.5/24; nic eth0 up 10.10.0.5/24; }
sc_ifname_exact() { setenv NCCL_SOCKET_IFNAME =eth1; nic eth10 up 10.20.0.5/24; nic eth1 up 10.10.0.5/24; }
sc_ifname_prefix_longer() { setenv NCCL_SOCKET_IFNAME eth1; nic eth10 up 10.20.0.5/24; nic eth1 up 10.10.0.5/24; }
sc_ifname_exclude() { setenv NCCL_SOCKET_IFNAME ^docker,lo; bridge docker0 1 172.17.0.1/16; nic ens3 up 10.10.0.5/24; }
sc_ifname_exclude_lo_wins() { setenv NCCL_SOCKET_IFNAME ^=eth0; nic eth0 up 10.10.0.5/24; }
sc_ifname_nomatch() { setenv NCCL_SOCKET_IFNAME =nosuch0; nic eth0 up 10.10.0.5/24; }
sc_ifname_space() { setenv NCCL_SOCKET_IFNAME "eth1, eth0"; nic eth0 up 10.10.0.5/24; nic eth1 up 10.11.0.5/24; }
sc_ifname_one_char() { setenv NCCL_SOCKET_IFNAME e; nic eth0 up 10.10.0.5/24; nic ib0 up 192.168.10.5/24; }
sc_ifname_no_carrier() { setenv NCCL_SOCKET_IFNAME ib1; nic ib1 nocarrier 192.168.11.5/24; nic eth0 up 10.10.0.5/24; }
sc_ifname_alias_port() { setenv NCCL_SOCKET_IFNAME =eth0:1; nic eth0 up 10.10.0.5/24 10.10.1.5/24:label; }
sc_ifname_virbr() { setenv NCCL_SOCKET_IFNAME virbr; bridge virbr0 1 192.168.122.1/24; nic eth0 up 10.10.0.5/24; }
# NCCL_SOCKET_FAMILY
sc_family_inet6() { setenv NCCL_SOCKET_FAMILY AF_INET6; nic eth0 up 10.10.0.5/24 fd00:10::5/64; }
sc_family_inet6_ll() { setenv NCCL_SOCKET_FAMILY AF_INET6; nic eth0 up 10.10.0.5/24; }
sc_family_lowercase() { setenv NCCL_SOCKET_FAMILY af_inet6; nic eth0 up 10.10.0.5/24 fd00:10::5/64; }
sc_family_inet_v6_host() { setenv NCCL_SOCKET_FAMILY AF_INET; nic eth0 up fd00:10::5/64; }
# NCCL_COMM_ID
sc_commid_subnet() { setenv NCCL_COMM_ID 10.11.0.9:29500; nic eth0 up 10.10.0.5/24; nic eth1 up 10.11.0.5/24; }
sc_commid_no_subnet() { setenv NCCL_COMM_ID 10.99.0.9:29500; nic eth0 up 10.10.0.5/24; }
sc_commid_ignores_ifname() {
    setenv NCCL_COMM_ID 10.11.0.9:29500; setenv NCCL_SOCKET_IFNAME =eth0
    nic eth0 up 10.10.0.5/24; nic eth1 up 10.11.0.5/24
}
sc_commid_no_carrier() { setenv NCCL_COMM_ID 10.11.0.9:29500; nic eth0 up 10.10.0.5/24; nic eth1 nocarrier 10.11.0.5/24; }
sc_commid_loopback() { setenv NCCL_COMM_ID 127.0.0.1:29500; nic eth0 up 10.10.0.5/24; }
sc_commid_hostname_v4() {
    setenv NCCL_COMM_ID rank0:29500; hosts "10.11.0.9 rank0"
    nic eth0 up 10.10.0.5/24; nic eth1 up 10.11.0.5/24
}
sc_commid_hostname_v6_first() {
    setenv NCCL_COMM_ID rank0:29500; hosts "fd00:11::9 rank0"; hosts "10.10.0.9 rank0"
    nic eth0 up 10.10.0.5/24; nic eth1 up fd00:11::5/64
}
sc_commid_hostname_unknown() { setenv NCCL_COMM_ID nosuchhost.invalid:29500; nic eth0 up 10.10.0.5/24; }
sc_commid_ipv6_global() { setenv NCCL_COMM_ID "[fd00:11::9]:29500"; nic eth0 up 10.10.0.5/24; nic eth1 up fd00:11::5/64; }
sc_commid_ipv6_ll_noscope() { setenv NCCL_COMM_ID "[fe80::9]:29500"; nic eth0 up; }
sc_commid_ipv6_ll_scope() { setenv NCCL_COMM_ID "[fe80::9%eth1]:29500"; nic eth0 up; nic eth1 up; }
sc_commid_ipv6_unbracketed() { setenv NCCL_COMM_ID "fd00:11::9:29500"; nic eth0 up 10.10.0.5/24; nic eth1 up fd00:11::5/64; }
# the host is "2001", which getaddrinfo reads as the IPv4 address 0.0.7.209
sc_commid_ipv6_unbracketed_num() { setenv NCCL_COMM_ID "2001:db8::9:29500"; nic eth0 up 10.10.0.5/24; nic eth1 up 2001:db8::5/64; }
sc_commid_hostname_case() {
    setenv NCCL_COMM_ID rank0:29500; hosts "10.99.0.9 other"; hosts "10.10.0.9 Rank0"
    nic eth0 up 10.10.0.5/24
}
sc_commid_empty() { setenv NCCL_COMM_ID ""; nic eth0 up 10.10.0.5/24; }
sc_commid_one_char() { setenv NCCL_COMM_ID x; nic eth0 up 10.10.0.5/24; }
sc_commid_no_port() { setenv NCCL_COMM_ID 10.10.0.9; nic eth0 up 10.10.0.5/24; }
sc_commid_port_zero() { setenv NCCL_COMM_ID 10.10.0.9:0; nic eth0 up 10.10.0.5/24; }
sc_commid_short_ipv4() { setenv NCCL_COMM_ID 10.1:29500; nic eth0 up 10.0.0.5/24; }
sc_commid_leading_comma() { setenv NCCL_COMM_ID ,10.11.0.9:29500; nic eth0 up 10.10.0.5/24; nic eth1 up 10.11.0.5/24; }
sc_commid_bad_ipv6() { setenv NCCL_COMM_ID "[fd00:11::9:29500"; nic eth0 up 10.10.0.5/24; }

for s in eth_only ib_before_eth ib_no_carrier ib_admin_down ib_dormant \
    ib_link_local_only ib_two_ports docker_only docker_empty virbr_only \
    virbr_docker virbr_and_eth br_docker_net_first veth_first k8s_node \
    wifi_laptop eno_no_carrier all_down nothing_at_all lo_down_docker \
    ipv6_only ipv6_before_ipv4 link_local_only link_local_no_lo apipa_only \
    several_addrs alias_label dual_stack_v6_first gpu_node \
    ifname_prefix ifname_exact ifname_prefix_longer ifname_exclude \
    ifname_exclude_lo_wins ifname_nomatch ifname_space ifname_one_char \
    ifname_no_carrier ifname_alias_port ifname_virbr \
    family_inet6 family_inet6_ll family_lowercase family_inet_v6_host \
    commid_subnet commid_no_subnet commid_ignores_ifname commid_no_carrier \
    commid_loopback commid_hostname_v4 commid_hostname_v6_first \
    commid_hostname_unknown commid_ipv6_global commid_ipv6_ll_noscope \
    commid_ipv6_ll_scope commid_ipv6_unbracketed commid_ipv6_unbracketed_num \
    commid_hostname_case commid_empty \
    commid_one_char commid_no_port commid_port_zero commid_short_ipv4 \
    commid_leading_comma commid_bad_ipv6; do
    scenario "$s"
done
ip -n "$FAR" -batch "$T/far.batch" >"$T/far.setup" 2>&1 ||
    { cat "$T/far.setup"; exit 1; }
# settle: linkwatch runs at most once a second
i=0
for sn in $SCS; do
    while ! settled "${sn#*:}"; do
        i=$((i + 1))
        [ $i -le 100 ] || { echo "# ${sn%%:*} did not settle:"; sed 's/^/#   /' "$T/settle.link"; break; }
        sleep 0.05
    done
done
printf '# %-28s %-46s %s\n' scenario "NCCL $VER (real)" "nccl-doctor"
for sn in $SCS; do
    run_one "${sn%%:*}" "${sn#*:}"
done

echo "# --- $NSC scenarios against NCCL $VER: $NAGREE agree, $NDIS disagree"
printf '# %-30s %-44s %-44s %s\n' scenario "NCCL $VER (real)" "nccl-doctor" verdict
cat "$T/table" 2>/dev/null
[ "$NSC" -ge 30 ] || [ -n "${NCD_DIFF_ONLY:-}" ] ||
    tb_not_ok "only $NSC scenarios ran (at least 30 expected)"
tb_done
