# Network-namespace test bed: "hosts" as network namespaces with
# realistically named interfaces.  Source it from a scenario script:
#   . "$(dirname "$0")/lib.sh"
#   tb_init            # skips (exit 77) with a reason when it cannot run
#   tb_host A hostA    # namespace for "host" hostA
#   tb_switch          # a switch namespace with a bridge (a LAN)
#   tb_lan A ens3 10.10.0.1/24 [RATE]   # port of A on the LAN
#   tb_link A ens4 10.20.0.1/24 B ens4 10.20.0.2/24 [RATE]  # cable A-B
#   tb_nocarrier A eno2 10.30.0.1/24    # UP, address, no carrier
#   tb_docker A        # docker0 172.17.0.1/16 + a container veth
#   tb_dockernet A     # br-<id> 172.18.0.1/16 (a compose network)
#   tb_virbr A         # virbr0 192.168.122.1/24, no port attached
#   tb_firewall A LO HI  # ephemeral range LO-HI and an nftables drop of it
#   tb_in A cmd...     # run cmd "on" A (its namespace, its host name)
#   tb_bg A LOG cmd... # same, in the background; pid in $TB_PID
# Everything is removed on exit.  Needs root, ip, nft (for tb_firewall),
# tc (for a RATE) and unshare; $NCD_BIN is the nccl-doctor under test.
#
# Traffic stays inside the namespaces this file creates.
set -u
: "${NCD_BIN:?NCD_BIN must point at the nccl-doctor binary}"
TB_ID=${TB_ID:-$$}
TB_NS=""
TB_PIDS=""
TB_TMP=$(mktemp -d "${TMPDIR:-/tmp}/ncd-netns.XXXXXX")
TB_SWITCH=""

tb_skip() {
    echo "1..0 # SKIP $1"
    rm -rf "$TB_TMP"
    exit 77
}

tb_cleanup() {
    for p in $TB_PIDS; do
        kill "$p" 2>/dev/null
    done
    for p in $TB_PIDS; do
        wait "$p" 2>/dev/null
    done
    for ns in $TB_NS; do
        ip netns del "$ns" 2>/dev/null
        rm -rf "/etc/netns/$ns"
    done
    if [ -n "${TB_KEEP:-}" ]; then
        echo "# kept $TB_TMP"
    else
        rm -rf "$TB_TMP"
    fi
}

tb_init() {
    [ "$(id -u)" -eq 0 ] || tb_skip "needs root to create network namespaces"
    command -v ip >/dev/null || tb_skip "iproute2 (ip) not installed"
    command -v unshare >/dev/null || tb_skip "unshare (util-linux) not installed"
    command -v jq >/dev/null || tb_skip "jq not installed"
    ip netns add "ncdtb$TB_ID" 2>/dev/null ||
        tb_skip "cannot create network namespaces here (container without CAP_SYS_ADMIN?)"
    ip netns del "ncdtb$TB_ID"
    mkdir -p /etc/netns 2>/dev/null && [ -w /etc/netns ] ||
        tb_skip "cannot write /etc/netns (each host's /etc/hosts lives there)"
    trap tb_cleanup EXIT
    trap 'exit 130' INT TERM
}

tb_need_tc() {
    command -v tc >/dev/null || tb_skip "tc (iproute2) not installed"
    ip netns add "ncdtc$TB_ID"
    ip -n "ncdtc$TB_ID" link add tbq0 type veth peer name tbq1
    if ! ip netns exec "ncdtc$TB_ID" tc qdisc add dev tbq0 root tbf rate 1mbit burst 32kb latency 50ms 2>/dev/null; then
        ip netns del "ncdtc$TB_ID"
        tb_skip "tc tbf (sch_tbf) not available in this kernel"
    fi
    ip netns del "ncdtc$TB_ID"
}

tb_need_nft() {
    command -v nft >/dev/null || tb_skip "nft (nftables) not installed"
}

# ns name of a host letter
tb_ns() { echo "ncd$1$TB_ID"; }

# tb_host A hostA
tb_host() {
    ns=$(tb_ns "$1")
    ip netns add "$ns" || return 1
    TB_NS="$TB_NS $ns"
    echo "$2" >"$TB_TMP/hostname.$1"
    ip -n "$ns" link set lo up
    # its own /etc/hosts and resolver (ip netns exec bind-mounts
    # /etc/netns/NS/*): names resolve from the file, DNS answers at once
    mkdir -p "/etc/netns/$ns"
    printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost\n' >"/etc/netns/$ns/hosts"
    printf 'nameserver 127.0.0.1\noptions timeout:1 attempts:1\n' >"/etc/netns/$ns/resolv.conf"
}

# tb_hosts_entry A "10.10.0.2 hostB": a line in A's /etc/hosts
tb_hosts_entry() {
    echo "$2" >>"/etc/netns/$(tb_ns "$1")/hosts"
}

# Runs a command on a host: its network namespace and its own host name.
tb_in() {
    h=$1
    shift
    ip netns exec "$(tb_ns "$h")" unshare --uts sh -c \
        'hostname "$0" && exec "$@"' "$(cat "$TB_TMP/hostname.$h")" "$@"
}

# tb_bg A LOGFILE cmd...: background; its pid in TB_PID (reaped on exit)
tb_bg() {
    h=$1
    log=$2
    shift 2
    # a simple command in the background: $! is the command itself (ip
    # netns exec, unshare and sh all exec), so signals reach it
    ip netns exec "$(tb_ns "$h")" unshare --uts sh -c \
        'hostname "$0" && exec "$@"' "$(cat "$TB_TMP/hostname.$h")" "$@" \
        >"$log" 2>&1 &
    TB_PID=$!
    TB_PIDS="$TB_PIDS $TB_PID"
}

# Egress rate limit with a token bucket on one device (both directions
# need it on both ends).  RATE like 1gbit, 200mbit.
tb_rate() {
    ns=$1 dev=$2 rate=$3
    # burst >= rate/HZ and at least 64 KiB so TSO segments pass
    ip netns exec "$ns" tc qdisc replace dev "$dev" root tbf rate "$rate" \
        burst 256kb latency 100ms
}

# A switch: namespace with bridge br0 (its own address 10.10.0.254 is the
# hosts' gateway; it forwards and answers "net unreachable" for networks it
# has no route to, like a router would).
tb_switch() {
    TB_SWITCH=$(tb_ns S)
    ip netns add "$TB_SWITCH"
    TB_NS="$TB_NS $TB_SWITCH"
    echo switch >"$TB_TMP/hostname.S"
    ip -n "$TB_SWITCH" link set lo up
    ip -n "$TB_SWITCH" link add br0 type bridge
    ip -n "$TB_SWITCH" addr add "${1:-10.10.0.254/24}" dev br0
    ip -n "$TB_SWITCH" link set br0 up
    ip netns exec "$TB_SWITCH" sysctl -qw net.ipv4.ip_forward=1
}

# tb_lan A ens3 10.10.0.1/24 [RATE]: A's port on the switch
tb_lan() {
    h=$1 dev=$2 addr=$3 rate=${4:-}
    ns=$(tb_ns "$h")
    port="p$h$dev"
    ip link add "$dev" netns "$ns" type veth peer name "$port" netns "$TB_SWITCH"
    ip -n "$TB_SWITCH" link set "$port" master br0
    ip -n "$TB_SWITCH" link set "$port" up
    ip -n "$ns" addr add "$addr" dev "$dev"
    ip -n "$ns" link set "$dev" up
    if [ -n "$rate" ]; then
        tb_rate "$ns" "$dev" "$rate"
        tb_rate "$TB_SWITCH" "$port" "$rate"
    fi
}

# tb_link A ens4 10.20.0.1/24 B ens4 10.20.0.2/24 [RATE]: a cable
tb_link() {
    nsa=$(tb_ns "$1") nsb=$(tb_ns "$4")
    ip link add "$2" netns "$nsa" type veth peer name "$5" netns "$nsb"
    ip -n "$nsa" addr add "$3" dev "$2"
    ip -n "$nsb" addr add "$6" dev "$5"
    ip -n "$nsa" link set "$2" up
    ip -n "$nsb" link set "$5" up
    if [ -n "${7:-}" ]; then
        tb_rate "$nsa" "$2" "$7"
        tb_rate "$nsb" "$5" "$7"
    fi
}

# tb_stub A eno1 10.99.1.1/24: UP, carrier, address, but on a network
# that leads nowhere (its far end is an empty namespace)
tb_stub() {
    ns=$(tb_ns "$1")
    far="ncdX$1$2$TB_ID"
    ip netns add "$far"
    TB_NS="$TB_NS $far"
    ip link add "$2" netns "$ns" type veth peer name far0 netns "$far"
    ip -n "$far" link set far0 up
    ip -n "$ns" addr add "$3" dev "$2"
    ip -n "$ns" link set "$2" up
}

# tb_nocarrier A eno2 10.30.0.1/24: administratively up, no carrier
tb_nocarrier() {
    ns=$(tb_ns "$1")
    ip -n "$ns" link add "$2" type veth peer name "${2}x"
    ip -n "$ns" addr add "$3" dev "$2"
    ip -n "$ns" link set "$2" up
}

# tb_docker A: docker0 with a running container attached
tb_docker() {
    ns=$(tb_ns "$1")
    ip -n "$ns" link add docker0 type bridge
    ip -n "$ns" addr add 172.17.0.1/16 dev docker0
    ip -n "$ns" link add veth1a2b3c4 type veth peer name ctr0
    ip -n "$ns" link set veth1a2b3c4 master docker0
    ip -n "$ns" link set docker0 up
    ip -n "$ns" link set veth1a2b3c4 up
    ip -n "$ns" link set ctr0 up
}

# tb_dockernet A: a compose network bridge without containers
tb_dockernet() {
    ns=$(tb_ns "$1")
    ip -n "$ns" link add br-3f2a9c1d7e4b type bridge
    ip -n "$ns" addr add 172.18.0.1/16 dev br-3f2a9c1d7e4b
    ip -n "$ns" link set br-3f2a9c1d7e4b up
}

# tb_virbr A: libvirt's default network, no VM running (no carrier)
tb_virbr() {
    ns=$(tb_ns "$1")
    ip -n "$ns" link add virbr0 type bridge
    ip -n "$ns" addr add 192.168.122.1/24 dev virbr0
    ip -n "$ns" link set virbr0 up
}

# tb_firewall A LO HI: A's ephemeral ports are LO-HI and its firewall drops
# new inbound TCP and UDP connections to them (replies to A's own outbound
# connections are let in, as a stateful host firewall does)
tb_firewall() {
    ns=$(tb_ns "$1")
    ip netns exec "$ns" sysctl -qw net.ipv4.ip_local_port_range="$2 $3"
    ip netns exec "$ns" nft -f - <<EOF
table inet ncdfw {
    chain input {
        type filter hook input priority 0; policy accept;
        ct state established,related accept
        iifname "lo" accept
        tcp dport $2-$3 drop
        udp dport $2-$3 drop
    }
}
EOF
}

# tb_wait_port A ADDR PORT: wait (<= 10 s) until something listens
tb_wait_listen() {
    i=0
    while [ $i -lt 100 ]; do
        if ip netns exec "$(tb_ns "$1")" ss -ltn "sport = :$2" 2>/dev/null | grep -q LISTEN; then
            return 0
        fi
        sleep 0.1
        i=$((i + 1))
    done
    return 1
}

# --- TAP-style assertions ------------------------------------------------
tb_count=0
tb_failed=0
tb_ok() {
    tb_count=$((tb_count + 1))
    echo "ok $tb_count - $1"
}
tb_not_ok() {
    tb_count=$((tb_count + 1))
    tb_failed=$((tb_failed + 1))
    echo "not ok $tb_count - $1"
}
# tb_check TITLE 'shell condition' [FILE-to-show-on-failure...]
tb_check() {
    title=$1 cond=$2
    shift 2
    if (eval "$cond") >"$TB_TMP/.check" 2>&1; then
        tb_ok "$title"
    else
        tb_not_ok "$title"
        sed 's/^/#   /' "$TB_TMP/.check"
        for f in "$@"; do
            echo "# --- $f"
            sed 's/^/#   /' "$f" | head -80
        done
    fi
}
tb_done() {
    echo "1..$tb_count"
    echo "# $((tb_count - tb_failed)) passed, $tb_failed failed"
    [ "$tb_failed" -eq 0 ]
}

# Runs a probe over hosts: tb_probe OUT.json "A B ..." [probe options]
# (rank i on the i-th host; rank 0's host holds the rendezvous on its first
# address given in $TB_RDV; extra per-host env in $TB_ENV_<host letter>).
tb_probe() {
    out=$1 hosts=$2
    shift 2
    n=0
    for h in $hosts; do n=$((n + 1)); done
    r=0
    pids=""
    for h in $hosts; do
        eval "extra=\${TB_ENV_$h:-}"
        if [ $r -gt 0 ]; then
            tb_bg "$h" "$TB_TMP/probe.$h.log" env -u NCCL_SOCKET_IFNAME $extra \
                WORLD_SIZE=$n RANK=$r "$NCD_BIN" probe --rendezvous "$TB_RDV" "$@" --json
            pids="$pids $TB_PID"
        fi
        r=$((r + 1))
    done
    h0=${hosts%% *}
    eval "extra=\${TB_ENV_$h0:-}"
    st=0
    tb_in "$h0" env -u NCCL_SOCKET_IFNAME $extra WORLD_SIZE=$n RANK=0 \
        "$NCD_BIN" probe --rendezvous "$TB_RDV" "$@" --json >"$out" 2>"$TB_TMP/probe.$h0.log" || st=$?
    TB_RANK_STATUS=""
    for p in $pids; do
        ps=0
        wait "$p" 2>/dev/null || ps=$?
        TB_RANK_STATUS="$TB_RANK_STATUS $ps"
    done
    # shown by tb_check on failure (give "$TB_TMP/probe.status")
    echo "exit status of rank 0: $st, of the other ranks:$TB_RANK_STATUS" >"$TB_TMP/probe.status"
    return $st
}
