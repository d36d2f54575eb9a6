/* SPDX-License-Identifier: MIT */
/* Check: network interfaces, NCCL_SOCKET_IFNAME and NCCL's own choice.
 * NCCL facts: shared/reference/nccl-facts.md §1-3. */
#define _GNU_SOURCE
#include "ncd/check.h"
#include "ncd/error.h"
#include "ncd/nccl.h"
#include "ncd/node.h"
#include "ncd/recommend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int ncd_check_netif(const struct ncd_node *n, const struct ncd_check_opts *opts,
                    struct ncd_findings *out);

#define ADD(id, cat, sev, ...)                                                \
    do {                                                                      \
        if (!(f = ncd_findings_add(out, id, cat, sev, __VA_ARGS__)))          \
            return NCD_ENOMEM;                                                \
    } while (0)

static const struct ncd_netif *by_name(const struct ncd_netif_list *nl,
                                       const char *name)
{
    return name && *name ? ncd_netif_find(nl, name) : NULL;
}

static void evidence_iface(struct ncd_finding *f, const struct ncd_netif *ni)
{
    const char *fl[24];
    size_t n = ncd_netif_flag_names(ni->flags, fl, 24);
    char flags[256] = "";
    for (size_t i = 0; i < n; i++) {
        strncat(flags, i ? "," : "", sizeof flags - strlen(flags) - 1);
        strncat(flags, fl[i], sizeof flags - strlen(flags) - 1);
    }
    ncd_finding_evidence(f, "%s: <%s> state %s, kind %s (%s)", ni->name,
                         flags, ni->operstate, ncd_netif_kind_name(ni->kind),
                         ni->kind_evidence);
}

static void evidence_addrs(struct ncd_finding *f, const struct ncd_netif *ni)
{
    for (size_t i = 0; i < ni->n_addrs; i++)
        ncd_finding_evidence(f, "%s: %s %s/%d scope %s", ni->name,
                             ni->addrs[i].family == AF_INET ? "inet" : "inet6",
                             ni->addrs[i].addr, ni->addrs[i].prefix,
                             ni->addrs[i].scope);
    if (!ni->n_addrs)
        ncd_finding_evidence(f, "%s: no IP address", ni->name);
}

/* Whether NCCL's Socket transport will carry the data (no usable IB), so
 * that the socket interface's speed matters, not only for the bootstrap. */
static int socket_carries_data(const struct ncd_node *n,
                               const struct ncd_recommendation *rec)
{
    const char *net = ncd_node_getenv(n, "NCCL_NET");
    if (net && strcasecmp(net, "Socket") == 0)
        return 1;
    const char *dis = ncd_node_getenv(n, "NCCL_IB_DISABLE");
    if (dis && strtoll(dis, NULL, 0) != 0)
        return 1;
    return rec->rdma_active_ports == 0;
}

static void fix_use(struct ncd_finding *f,
                    const struct ncd_recommendation *rec)
{
    if (!rec->best)
        return;
    ncd_finding_env(f, "NCCL_SOCKET_IFNAME", rec->socket_ifname);
}

/* Names the user's list matches, ignoring the RUNNING filter, to tell
 * "matches nothing" from "matches only interfaces that are down". */
static int list_matches_any(const struct ncd_netif_list *nl,
                            const struct ncd_nccl_iflist *l, char *names,
                            size_t sz)
{
    int n = 0;
    names[0] = '\0';
    for (size_t i = 0; i < nl->n; i++) {
        if (ncd_nccl_iflist_match(l, nl->v[i].name, -1)) {
            if (n++)
                strncat(names, ", ", sz - strlen(names) - 1);
            strncat(names, nl->v[i].name, sz - strlen(names) - 1);
        }
    }
    return n;
}

static int check_ifname(const struct ncd_node *n, const struct ncd_netif_list *nl,
                        const struct ncd_nccl_choice *ch,
                        const struct ncd_recommendation *rec,
                        struct ncd_findings *out)
{
    struct ncd_finding *f;
    const char *val = ncd_node_getenv(n, "NCCL_SOCKET_IFNAME");
    const struct ncd_nccl_iflist *l = &ch->ifname;
    char vb[16];
    const char *ver = ncd_nccl_version_str(ch->version, vb, sizeof vb);
    if (!val)
        return 0;
    if (l->ignored) {
        ADD("net.ifname.ignored", NCD_CAT_NET_IFNAME, NCD_SEV_WARNING,
            "NCCL_SOCKET_IFNAME='%s' is ignored: NCCL needs more than one "
            "character",
            val);
        ncd_finding_evidence(f, "NCCL_SOCKET_IFNAME=%s", val);
        ncd_finding_cause(f, "NCCL reads the variable only when it is longer "
                             "than one character (src/misc/socket.cc); '^', "
                             "'=' or a one-letter prefix mean 'unset', so "
                             "auto-selection runs instead.");
        ncd_finding_fix(f, "Name the interface in full.");
        fix_use(f, rec);
        return 0;
    }
    if (!l->set)
        return 0;
    if (l->has_space) {
        ADD("net.ifname.whitespace", NCD_CAT_NET_IFNAME, NCD_SEV_WARNING,
            "NCCL_SOCKET_IFNAME has spaces around a name: that name never "
            "matches");
        ncd_finding_evidence(f, "NCCL_SOCKET_IFNAME='%s'", val);
        ncd_finding_cause(f, "NCCL splits the list on ',' without trimming, so "
                             "' eth1' looks for an interface whose name starts "
                             "with a space.");
        ncd_finding_fix(f, "Remove the spaces: e.g. 'eth0,eth1'.");
    }
    if (l->dropped_empty) {
        ADD("net.ifname.empty-token", NCD_CAT_NET_IFNAME, NCD_SEV_INFO,
            "NCCL_SOCKET_IFNAME has empty entries (',,' or a trailing ','); "
            "NCCL drops them");
        ncd_finding_evidence(f, "NCCL_SOCKET_IFNAME='%s'", val);
        if (l->n == 0 && !l->exclude)
            ncd_finding_cause(f, "With no name left, NCCL's matcher accepts "
                                 "every interface, lo and docker0 included, "
                                 "in getifaddrs order.");
        else if (l->n == 0)
            ncd_finding_cause(f, "An exclude list with no names excludes "
                                 "every interface.");
    }
    if (l->eq_before_caret) {
        ADD("net.ifname.eq-before-caret", NCD_CAT_NET_IFNAME, NCD_SEV_WARNING,
            "NCCL_SOCKET_IFNAME starts with '=^': the '^' is taken as part "
            "of the name");
        ncd_finding_evidence(f, "NCCL_SOCKET_IFNAME='%s'", val);
        ncd_finding_cause(f, "NCCL only understands '^' first, then '='. "
                             "'=^eth0' asks for an interface literally named "
                             "'^eth0'.");
        ncd_finding_fix(f, "Write '^=%s' to exclude exactly those names.",
                        l->n ? l->tok[0].name + 1 : "eth0");
    }
    if (l->truncated) {
        ADD("net.ifname.too-many", NCD_CAT_NET_IFNAME, NCD_SEV_WARNING,
            "NCCL_SOCKET_IFNAME lists more than 16 names; NCCL ignores the "
            "rest");
        ncd_finding_evidence(f, "NCCL_SOCKET_IFNAME='%s'", val);
    }
    if (!ch->n_socket) {
        char names[512];
        int any = list_matches_any(nl, l, names, sizeof names);
        ADD("net.ifname.no-match", NCD_CAT_NET_IFNAME, NCD_SEV_ERROR,
            "NCCL_SOCKET_IFNAME='%s' selects no usable interface: NCCL will "
            "fail with 'Bootstrap : no socket interface found'",
            val);
        ncd_finding_evidence(f, "NCCL_SOCKET_IFNAME=%s (%s%s list, %s)", val,
                             l->exclude ? "exclude" : "include",
                             l->exact ? ", exact" : "",
                             l->exact ? "whole names" : "name prefixes");
        for (size_t i = 0; i < nl->n; i++)
            if (ncd_nccl_iflist_match(l, nl->v[i].name, -1))
                evidence_iface(f, &nl->v[i]);
        if (any)
            ncd_finding_cause(
                f,
                "The list matches %s, but NCCL %s only takes interfaces that "
                "are RUNNING (carrier up) and hold an IPv4/IPv6 address%s. "
                "A list that matches nothing never falls back to automatic "
                "selection.",
                names, ver,
                ch->family != AF_UNSPEC ? " of the NCCL_SOCKET_FAMILY family"
                                        : "");
        else
            ncd_finding_cause(
                f,
                "No interface on this host %s. NCCL does not fall back to "
                "automatic selection; the communicator init fails. Interface "
                "names often differ between hosts (eth0 vs ens3 vs enp1s0).",
                l->exclude ? "is left after the exclusions"
                           : "has a name that matches");
        ncd_finding_fix(f,
                        "Use an interface that exists and is up here%s%s, or "
                        "list one name per host type (NCCL takes a "
                        "comma-separated list of prefixes).",
                        rec->best ? ": " : "",
                        rec->best ? rec->best->ni->name : "");
        fix_use(f, rec);
        return 0;
    }
    /* What the list selects. */
    const struct ncd_netif *boot = by_name(nl, ch->bootstrap);
    if (boot && boot->kind == NCD_IFK_LOOPBACK) {
        ADD("net.ifname.lo-wins", NCD_CAT_NET_IFNAME, NCD_SEV_ERROR,
            "NCCL_SOCKET_IFNAME='%s' lets the loopback interface win: the "
            "bootstrap binds %s, which other hosts cannot reach",
            val, ch->bootstrap_addr);
        ncd_finding_evidence(f, "NCCL bootstrap would use %s:%s",
                             ch->bootstrap, ch->bootstrap_addr);
        ncd_finding_cause(f, "With NCCL_SOCKET_IFNAME set, lo and docker lose "
                             "their low priority: an exclude list that does "
                             "not name lo keeps it, and lo comes first in "
                             "getifaddrs order. Multi-node jobs hang or fail "
                             "to connect.");
        ncd_finding_fix(f, "Add lo to the exclusions ('^lo,docker,...') or "
                           "name the interface to use.");
        fix_use(f, rec);
    }
    for (int i = 0; i < ch->n_socket; i++) {
        const struct ncd_netif *ni = by_name(nl, ch->socket[i]);
        if (!ni || ni->kind == NCD_IFK_LOOPBACK)
            continue;
        if (ncd_ifname_is_plumbing(ni->name) ||
            ncd_netif_kind_is_virtual(ni->kind)) {
            int only = rec->best && rec->best->ni == ni;
            ADD("net.ifname.virtual", NCD_CAT_NET_IFNAME,
                only ? NCD_SEV_INFO : NCD_SEV_WARNING,
                "NCCL_SOCKET_IFNAME selects %s, a %s interface", ni->name,
                ncd_netif_kind_name(ni->kind));
            evidence_iface(f, ni);
            ncd_finding_cause(f, "%s", only
                ? "It is the only usable interface here (container "
                  "networking): fine inside one pod/container network, but "
                  "traffic crosses the container bridge/overlay."
                : "Container bridges, veth pairs and VPN tunnels reach only "
                  "this host's containers or go through an overlay: peers on "
                  "other hosts time out, or traffic is slow.");
            if (!only)
                fix_use(f, rec);
        }
        if (!(ni->flags & IFF_RUNNING) && ch->version < 22800) {
            ADD("net.ifname.down", NCD_CAT_NET_IFNAME, NCD_SEV_ERROR,
                "NCCL_SOCKET_IFNAME selects %s, which is not RUNNING; NCCL %s "
                "still uses it",
                ni->name, ver);
            evidence_iface(f, ni);
            ncd_finding_cause(f, "Before 2.28 NCCL did not check the "
                                 "interface flags: an interface that is down "
                                 "but keeps its IP address is chosen, and "
                                 "connections to it time out.");
            ncd_finding_fix(f, "Bring the link up or select another "
                               "interface.");
            fix_use(f, rec);
        }
    }
    /* A full interface name used as a prefix also takes its longer
     * siblings (eth1 -> eth10, eth1:0). */
    if (!l->exact && !l->exclude) {
        for (int t = 0; t < l->n; t++) {
            if (!ncd_netif_find(nl, l->tok[t].name) ||
                strchr(l->tok[t].name, ':'))
                continue;
            char also[256] = "";
            for (int i = 0; i < ch->n_socket; i++)
                if (strcmp(ch->socket[i], l->tok[t].name) != 0 &&
                    strncmp(ch->socket[i], l->tok[t].name,
                            strlen(l->tok[t].name)) == 0) {
                    strncat(also, also[0] ? ", " : "",
                            sizeof also - strlen(also) - 1);
                    strncat(also, ch->socket[i],
                            sizeof also - strlen(also) - 1);
                }
            if (!also[0])
                continue;
            ADD("net.ifname.prefix-matches-more", NCD_CAT_NET_IFNAME,
                NCD_SEV_INFO,
                "NCCL_SOCKET_IFNAME token '%s' is a prefix: it also selects "
                "%s",
                l->tok[t].name, also);
            for (int i = 0; i < ch->n_socket; i++)
                ncd_finding_evidence(f, "Socket transport [%d] %s (%s)", i,
                                     ch->socket[i], ch->socket_addr[i]);
            ncd_finding_cause(f, "NCCL matches names by prefix unless the "
                                 "list starts with '=': 'eth1' also takes "
                                 "eth10 and the alias eth1:0. The bootstrap "
                                 "takes the first; the Socket transport "
                                 "spreads traffic over all.");
            ncd_finding_fix(f, "Use '=' for exact names, e.g. '=%s'.",
                            l->tok[t].name);
            break;
        }
    }
    return 0;
}

static int check_auto(const struct ncd_node *n, const struct ncd_netif_list *nl,
                      const struct ncd_nccl_choice *ch,
                      const struct ncd_recommendation *rec,
                      struct ncd_findings *out)
{
    struct ncd_finding *f;
    char vb[16];
    const char *ver = ncd_nccl_version_str(ch->version, vb, sizeof vb);
    if (!ch->bootstrap[0]) {
        if (ch->via_comm_id)
            return 0; /* reported by the NCCL_COMM_ID check */
        ADD("net.iface-choice.none", NCD_CAT_NET_IFACE_CHOICE, NCD_SEV_ERROR,
            "NCCL %s finds no interface: 'Bootstrap : no socket interface "
            "found'",
            ver);
        ncd_finding_cause(f, "No interface is RUNNING with an IPv4/IPv6 "
                             "address (NCCL skips ::1 and, from 2.28, "
                             "interfaces without carrier).");
        ncd_finding_fix(f, "Bring a network interface up with an address.");
        return 0;
    }
    const struct ncd_netif *boot = by_name(nl, ch->bootstrap);
    if (!boot)
        return 0;
    const struct ncd_netif *best = rec->best ? rec->best->ni : NULL;
    int ok = 1;
    if (boot->kind == NCD_IFK_LOOPBACK) {
        ok = 0;
        ADD("net.iface-choice.loopback", NCD_CAT_NET_IFACE_CHOICE,
            best && !ch->via_comm_id ? NCD_SEV_ERROR : NCD_SEV_WARNING,
            "NCCL %s would bootstrap on loopback (%s:%s): only single-host "
            "jobs can work",
            ver, boot->name, ch->bootstrap_addr);
        evidence_iface(f, boot);
        ncd_finding_cause(f, "%s", ch->via_comm_id
                                  ? "NCCL_COMM_ID points at this host's "
                                    "loopback, so the bootstrap binds "
                                    "127.0.0.1; other hosts cannot connect."
                                  : "No other interface passed NCCL's "
                                    "filters, so it fell back to lo; other "
                                    "hosts cannot connect to 127.0.0.1.");
        ncd_finding_fix(f, "%s", best ? "Set NCCL_SOCKET_IFNAME to a real "
                                        "interface."
                                      : "Bring up a network interface with "
                                        "a routable address.");
        fix_use(f, rec);
    } else if (!(boot->flags & IFF_RUNNING)) {
        ok = 0;
        ADD("net.iface-choice.down", NCD_CAT_NET_IFACE_CHOICE, NCD_SEV_ERROR,
            "NCCL %s would bootstrap on %s, which has no carrier", ver,
            boot->name);
        evidence_iface(f, boot);
        ncd_finding_cause(f, "NCCL before 2.28 does not check IFF_RUNNING: a "
                             "down interface that keeps its address is taken "
                             "and connections time out.");
        ncd_finding_fix(f, "Bring the link up, or set NCCL_SOCKET_IFNAME%s%s.",
                        best ? " to " : "", best ? best->name : "");
        fix_use(f, rec);
    } else if (rec->local_only &&
               boot->kind == NCD_IFK_CONTAINER_BRIDGE) {
        ok = 0; /* net.iface-choice.local-only says it */
    } else if (ncd_ifname_is_plumbing(boot->name) ||
               ncd_netif_kind_is_virtual(boot->kind)) {
        int only = best == boot || !best;
        ok = 0;
        ADD("net.iface-choice.virtual", NCD_CAT_NET_IFACE_CHOICE,
            only ? NCD_SEV_INFO : NCD_SEV_ERROR,
            "NCCL %s would bootstrap on %s (%s), a %s interface", ver,
            boot->name, ch->bootstrap_addr, ncd_netif_kind_name(boot->kind));
        evidence_iface(f, boot);
        evidence_addrs(f, boot);
        if (only) {
            ncd_finding_cause(f, "It is the only usable interface: this is a "
                                 "container or pod network. Ranks in other "
                                 "pods reach it only through the overlay "
                                 "(slower than host networking).");
            ncd_finding_fix(f, "For multi-node performance run with host "
                               "networking (docker --network host, k8s "
                               "hostNetwork: true) or an RDMA/SR-IOV device "
                               "plugin.");
        } else {
            ncd_finding_cause(
                f,
                "NCCL excludes only the prefixes docker, lo%s; %s is picked "
                "because it comes first in getifaddrs order. Addresses on "
                "container/VM bridges are private to this host: peers time "
                "out connecting to %s.",
                ch->version >= 22800 ? " and virbr" : "", boot->name,
                ch->bootstrap_addr);
            ncd_finding_fix(f, "Set NCCL_SOCKET_IFNAME to the real interface "
                               "(%s).",
                            best->name);
            fix_use(f, rec);
        }
    } else {
        int ll_only = 1;
        for (size_t i = 0; i < boot->n_addrs; i++)
            if (!boot->addrs[i].link_local && !boot->addrs[i].loopback)
                ll_only = 0;
        if (ll_only) {
            ok = 0;
            ADD("net.iface-choice.link-local", NCD_CAT_NET_IFACE_CHOICE,
                NCD_SEV_WARNING,
                "NCCL %s would bootstrap on %s using only a link-local "
                "address (%s)",
                ver, boot->name, ch->bootstrap_addr);
            evidence_addrs(f, boot);
            ncd_finding_cause(f, "NCCL does not skip fe80:: addresses. They "
                                 "work only between hosts on the same L2 "
                                 "segment and need the right scope id.");
            ncd_finding_fix(f, "Give the interface a routable address, or "
                               "select another one.");
            fix_use(f, rec);
        }
    }
    if (ok && boot->kind == NCD_IFK_WIRELESS) {
        ok = 0;
        ADD("net.iface-choice.wireless", NCD_CAT_NET_IFACE_CHOICE,
            best == boot ? NCD_SEV_WARNING : NCD_SEV_ERROR,
            "NCCL %s would use the wireless interface %s (%s)", ver,
            boot->name, ch->bootstrap_addr);
        evidence_iface(f, boot);
        ncd_finding_cause(f, "Wi-Fi has high, jittery latency and a fraction "
                             "of wired bandwidth; multi-node collectives over "
                             "it are slow and time out under load.");
        ncd_finding_fix(f, "%s", best == boot
                                     ? "Use a wired link for multi-node "
                                       "jobs; single-node jobs do not use "
                                       "the network."
                                     : "Set NCCL_SOCKET_IFNAME to the wired "
                                       "interface.");
        if (best != boot)
            fix_use(f, rec);
    }
    if (ok && best && best != boot) {
        ok = 0;
        int faster = best->speed_mbps > 0 &&
                     best->speed_mbps > boot->speed_mbps;
        ADD("net.iface-choice.differs", NCD_CAT_NET_IFACE_CHOICE,
            socket_carries_data(n, rec) ? NCD_SEV_WARNING : NCD_SEV_INFO,
            "NCCL %s would use %s, but %s looks like the better interface%s",
            ver, boot->name, best->name,
            faster ? " (faster link)" : "");
        evidence_iface(f, boot);
        evidence_iface(f, best);
        for (int i = 0; i < rec->best->n_reasons; i++)
            ncd_finding_evidence(f, "%s: %s", best->name,
                                 rec->best->reasons[i]);
        ncd_finding_cause(f, "NCCL takes the first interface in getifaddrs "
                             "order that passes its name filter; it does not "
                             "compare speeds or routes.");
        ncd_finding_fix(f, "Pin the interface explicitly on every host.");
        fix_use(f, rec);
    }
    /* The Socket transport spreads data over every listed interface. */
    for (int i = 1; i < ch->n_socket; i++) {
        const struct ncd_netif *ni = by_name(nl, ch->socket[i]);
        if (ni && ni != boot &&
            (ncd_ifname_is_plumbing(ni->name) ||
             ncd_netif_kind_is_virtual(ni->kind))) {
            ok = 0;
            ADD("net.iface-choice.socket-list-virtual",
                NCD_CAT_NET_IFACE_CHOICE, NCD_SEV_WARNING,
                "NCCL's Socket transport would also send data over %s (%s)",
                ni->name, ncd_netif_kind_name(ni->kind));
            for (int j = 0; j < ch->n_socket; j++)
                ncd_finding_evidence(f, "NET/Socket : Using [%d]%s:%s", j,
                                     ch->socket[j], ch->socket_addr[j]);
            ncd_finding_cause(f, "Without NCCL_SOCKET_IFNAME the Socket "
                                 "transport uses up to 16 interfaces from the "
                                 "same pass; br-*, veth*, cni* and VPN "
                                 "devices are not excluded by NCCL.");
            fix_use(f, rec);
            break;
        }
    }
    if (ok) {
        ADD("net.iface-choice.ok", NCD_CAT_NET_IFACE_CHOICE, NCD_SEV_OK,
            "NCCL %s would use %s (%s), the recommended interface", ver,
            boot->name, ch->bootstrap_addr);
        evidence_iface(f, boot);
    }
    return 0;
}

static int check_family_commid(const struct ncd_node *n,
                               const struct ncd_nccl_choice *ch,
                               struct ncd_findings *out)
{
    struct ncd_finding *f;
    const char *fam = ncd_node_getenv(n, "NCCL_SOCKET_FAMILY");
    if (ch->family_ignored) {
        ADD("env.socket-family.ignored", NCD_CAT_ENV_INVALID, NCD_SEV_WARNING,
            "NCCL_SOCKET_FAMILY='%s' is not AF_INET or AF_INET6: NCCL does "
            "not restrict the family",
            fam);
        ncd_finding_evidence(f, "NCCL_SOCKET_FAMILY=%s", fam);
        ncd_finding_cause(f, "NCCL compares the value with the exact, "
                             "case-sensitive strings AF_INET and AF_INET6; "
                             "anything else ('ipv4', 'af_inet', '4') is "
                             "logged and ignored.");
        ncd_finding_fix(f, "Use AF_INET or AF_INET6.");
        ncd_finding_env(f, "NCCL_SOCKET_FAMILY",
                        strstr(fam, "6") ? "AF_INET6" : "AF_INET");
    }
    const char *cid = ncd_node_getenv(n, "NCCL_COMM_ID");
    if (!ch->via_comm_id && !ch->comm_id_invalid)
        return 0;
    if (ch->comm_id_invalid) {
        ADD("env.comm-id.invalid", NCD_CAT_ENV_INVALID, NCD_SEV_ERROR,
            "NCCL_COMM_ID='%s' is invalid (%s): 'Invalid NCCL_COMM_ID'", cid,
            ch->comm_id_error);
        ncd_finding_evidence(f, "NCCL_COMM_ID=%s", cid);
        ncd_finding_cause(
            f,
            "NCCL reads NCCL_COMM_ID whenever it is set, even empty, and "
            "accepts <ip or host>:<port> (the host resolved with getaddrinfo, "
            "first answer), [<ipv6>]:<port> or [<ipv6>%%<if>]:<port>; "
            "ncclGetUniqueId and every rank's init fail.%s",
            ch->version >= 22700 && ch->socket_error
                ? " From 2.27 the Socket transport and IB's out-of-band "
                  "socket find no interface either."
                : "");
        ncd_finding_fix(f, "Fix the value, or unset it to let NCCL pick an "
                           "address and port itself.");
        return 0;
    }
    if (ch->comm_id_port_note) {
        static const char *const what[] = {
            "",
            "has no port: NCCL uses port 65535 (htons(-1))",
            "has port 0 (or no number): rank 0 listens on a random port the "
            "other ranks do not know, they connect to port 0 and fail",
            "has a port beyond 65535: NCCL keeps the low 16 bits",
            "has nothing after ']': NCCL reads the port past the end of the "
            "value",
        };
        ADD("env.comm-id.port", NCD_CAT_ENV_INVALID, NCD_SEV_WARNING,
            "NCCL_COMM_ID='%s' %s", cid, what[ch->comm_id_port_note]);
        ncd_finding_evidence(f, "NCCL_COMM_ID=%s (port NCCL uses: %d)", cid,
                             ch->comm_id_port);
        ncd_finding_cause(f, "NCCL does not check the port: it takes atoi() "
                             "of the text after ':' (or ']:') as a 16-bit "
                             "number. The interface is still chosen by "
                             "subnet.");
        ncd_finding_fix(f, "Give a free port 1024-65535, e.g. %s:29500.",
                        ch->comm_id_host[0] ? ch->comm_id_host : "<ip>");
    }
    if (ch->comm_id_unresolved) {
        ADD("net.unreachable.comm-id-unresolved", NCD_CAT_NET_UNREACHABLE,
            NCD_SEV_WARNING,
            "NCCL_COMM_ID names host '%s', whose address is unknown here (%s): "
            "the bootstrap interface cannot be predicted",
            ch->comm_id_host, ch->comm_id_error);
        ncd_finding_evidence(f, "NCCL_COMM_ID=%s", cid);
        ncd_finding_cause(f, "NCCL resolves the name with getaddrinfo "
                             "(/etc/hosts, DNS, ...; the first answer wins) "
                             "and then binds/connects on the local interface "
                             "whose subnet contains that address. If the "
                             "name resolves differently on different hosts, "
                             "or to an address on no local subnet, init fails "
                             "with 'No usable listening interface found'.");
        ncd_finding_fix(f, "Use rank 0's IP address in NCCL_COMM_ID, or check "
                           "`getent ahosts %s` on every host.",
                        ch->comm_id_host);
        return 0;
    }
    if (!ch->bootstrap[0]) {
        ADD("net.unreachable.comm-id-subnet", NCD_CAT_NET_UNREACHABLE,
            NCD_SEV_ERROR,
            "No local interface is on NCCL_COMM_ID's subnet (%s): 'NET/Socket "
            ": No usable listening interface found'",
            cid);
        if (ch->comm_id_addr[0] &&
            strcmp(ch->comm_id_addr, ch->comm_id_host) != 0)
            ncd_finding_evidence(f, "NCCL_COMM_ID=%s (host %s is %s)", cid,
                                 ch->comm_id_host, ch->comm_id_addr);
        else
            ncd_finding_evidence(f, "NCCL_COMM_ID=%s (host %s)", cid,
                                 ch->comm_id_host);
        if (ch->comm_id_unchecked)
            ncd_finding_cause(f, "%s.", ch->comm_id_error);
        else
            ncd_finding_cause(
                f, "With NCCL_COMM_ID set, NCCL picks the bootstrap interface "
                   "only by matching its subnet (ignoring NCCL_SOCKET_IFNAME), "
                   "and rank 0 binds exactly that address. An IPv6 address "
                   "without %%<if> has scope 0 and never matches a link-local "
                   "(fe80::) address.");
        ncd_finding_fix(f, "Use an address on a network this host is "
                           "attached to (rank 0's own IP), or unset "
                           "NCCL_COMM_ID.");
    }
    return 0;
}

int ncd_check_netif(const struct ncd_node *n, const struct ncd_check_opts *opts,
                    struct ncd_findings *out)
{
    (void)opts;
    const struct ncd_netif_list *nl = &n->net.nl;
    const struct ncd_recommendation *rec = &n->net.rec;
    const struct ncd_nccl_choice *ch = &n->net.ch;
    struct ncd_finding *f;
    int rc = 0;
    if (!nl->ifa_known) {
        if (!(f = ncd_findings_add(out, "net.addresses-unknown",
                                   NCD_CAT_NET_IFACE_CHOICE, NCD_SEV_INFO,
                                   "Interface addresses were not recorded in "
                                   "this capture; NCCL's choice cannot be "
                                   "predicted")))
            rc = NCD_ENOMEM;
        else {
            if (nl->ifa_error[0])
                ncd_finding_evidence(f, "%s", nl->ifa_error);
            ncd_finding_fix(f, "Capture with `nccl-doctor gather`, which "
                               "records /.ncd/ifaddrs.");
        }
        goto done;
    }
    if (!rec->best && rec->local_only) {
        if (!(f = ncd_findings_add(out, "net.iface-choice.local-only",
                                   NCD_CAT_NET_IFACE_CHOICE, NCD_SEV_WARNING,
                                   "Only container/VM bridges are up: "
                                   "nothing here reaches other hosts, so "
                                   "only single-node jobs can run"))) {
            rc = NCD_ENOMEM;
            goto done;
        }
        for (size_t i = 0; i < rec->n; i++)
            if (rec->ranks[i].ni->kind == NCD_IFK_CONTAINER_BRIDGE)
                evidence_iface(f, rec->ranks[i].ni);
        ncd_finding_cause(f, "docker0, br-<id>, virbr0 and cni0 are bridges "
                             "to this host's containers and VMs; their "
                             "addresses are private to it. NCCL still picks "
                             "one of them (or lo) for the bootstrap, which "
                             "works within this host only.");
        ncd_finding_fix(f, "For multi-node jobs bring up the interface "
                           "that reaches the other hosts (cable, switch "
                           "port, DHCP); single-node jobs need no network "
                           "setting.");
    } else if (!rec->best) {
        if (!(f = ncd_findings_add(out, "net.no-routable-address",
                                   NCD_CAT_NET_IFACE_CHOICE, NCD_SEV_ERROR,
                                   "No interface is up with a routable "
                                   "address: other hosts cannot reach this "
                                   "one"))) {
            rc = NCD_ENOMEM;
            goto done;
        }
        for (size_t i = 0; i < rec->n; i++)
            ncd_finding_evidence(f, "%s: %s", rec->ranks[i].ni->name,
                                 rec->ranks[i].reasons[0]);
        ncd_finding_cause(f, "Multi-node NCCL needs an interface that is UP, "
                             "has carrier and holds an address outside "
                             "127/8, 169.254/16 and fe80::/10.");
        ncd_finding_fix(f, "Bring up the network (check cables/switch port, "
                           "DHCP, `ip link set <if> up`).");
    }
    if ((rc = check_family_commid(n, ch, out)) < 0)
        goto done;
    if (ch->ifname.set || ch->ifname.ignored)
        rc = check_ifname(n, nl, ch, rec, out);
    if (rc >= 0 && !ch->ifname.set)
        rc = check_auto(n, nl, ch, rec, out);
    if (rc >= 0 && ch->ifname.set && ch->n_socket && rec->best) {
        const struct ncd_netif *boot = by_name(nl, ch->bootstrap);
        if (boot && boot != rec->best->ni && boot->kind != NCD_IFK_LOOPBACK &&
            !ncd_ifname_is_plumbing(boot->name) &&
            !ncd_netif_kind_is_virtual(boot->kind) &&
            rec->best->ni->speed_mbps > 0 &&
            rec->best->ni->speed_mbps > boot->speed_mbps &&
            socket_carries_data(n, rec)) {
            if (!(f = ncd_findings_add(
                      out, "perf.ifname-slower", NCD_CAT_PERF_CONFIG,
                      NCD_SEV_WARNING,
                      "NCCL_SOCKET_IFNAME selects %s, slower than %s", boot->name,
                      rec->best->ni->name))) {
                rc = NCD_ENOMEM;
                goto done;
            }
            evidence_iface(f, boot);
            evidence_iface(f, rec->best->ni);
            ncd_finding_evidence(f, "speeds: %s %lld Mb/s, %s %lld Mb/s",
                                 boot->name, boot->speed_mbps,
                                 rec->best->ni->name, rec->best->ni->speed_mbps);
            ncd_finding_fix(f, "Use the faster interface if it reaches the "
                               "other hosts (`nccl-doctor probe` tests it).");
            fix_use(f, rec);
        } else if (boot && (boot == rec->best->ni) &&
                   !ncd_findings_find(out, "net.ifname.no-match")) {
            if (!(f = ncd_findings_add(out, "net.ifname.ok", NCD_CAT_NET_IFNAME,
                                       NCD_SEV_OK,
                                       "NCCL_SOCKET_IFNAME selects %s (%s), the "
                                       "recommended interface",
                                       boot->name, ch->bootstrap_addr)))
                rc = NCD_ENOMEM;
        }
    }
done:
    return rc < 0 ? rc : 0;
}
