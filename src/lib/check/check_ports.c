/* SPDX-License-Identifier: MIT */
/* Check: the ports NCCL listens on and firewall rules that drop them.
 * NCCL facts: nccl-facts.md §3 (COMM_ID), §5 (RAS_ADDR), §6 (no port-range
 * variable; ip_local_port_range). */
#define _GNU_SOURCE
#include "ncd/check.h"
#include "check/check_internal.h"
#include "ncd/error.h"
#include "ncd/ncclvars.h"
#include "ncd/node.h"
#include "ncd/netif.h"
#include "ncd/ports.h"
#include "ncd/recommend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

int ncd_check_ports(const struct ncd_node *n, const struct ncd_check_opts *opts,
                    struct ncd_findings *out);


/* LISTEN sockets on `port` (the node's list is sorted). */
static int listeners(const struct ncd_node *n, int port)
{
    int cnt = 0;
    for (size_t i = 0; i < n->ports.n_listen; i++)
        cnt += n->ports.listen[i] == port;
    return cnt;
}

/* NCCL_* variables that people set believing NCCL has a port range. */
static int is_port_myth(const char *name)
{
    if (strncmp(name, "NCCL_", 5) != 0 || strcmp(name, "NCCL_RAS_ADDR") == 0)
        return 0;
    return strstr(name, "PORT") != NULL;
}

int ncd_check_ports(const struct ncd_node *n, const struct ncd_check_opts *opts,
                    struct ncd_findings *out)
{
    (void)opts;
    struct ncd_finding *f;
    const struct ncd_var_catalog *cat = &n->catalog;
    int rc = 0, lo = n->ports.lo, hi = n->ports.hi;
    int range_known = n->ports.range_known;
    /* Names in the variable catalog (real ones, or known non-NCCL ones
     * such as NCCL_PORT_RANGE) are judged by the ncclenv check already. */
    for (size_t i = 0; i < n->env.n; i++) {
        const char *name = n->env.v[i].name, *value = n->env.v[i].value;
        if (!is_port_myth(name))
            continue;
        if (ncd_var_find(cat, name) || ncd_var_find_gone(cat, name))
            continue;
        ADD("env.invalid.nccl-port-range", NCD_CAT_ENV_INVALID,
            NCD_SEV_WARNING, "%s is not an NCCL variable: NCCL has no port "
            "range setting", name);
        ncd_finding_evidence(f, "%s=%s", name, value);
        ncd_finding_cause(f, "NCCL (checked up to 2.30) listens on ports the "
                             "kernel picks from net.ipv4.ip_local_port_range; "
                             "only NCCL_COMM_ID's port and RAS "
                             "(NCCL_RAS_ADDR, default localhost:28028) are "
                             "fixed.  This variable changes nothing.");
        ncd_finding_fix(f, "Narrow the kernel's range (`sysctl -w "
                           "net.ipv4.ip_local_port_range=\"50000 51000\"`, "
                           "persist in /etc/sysctl.d) and open exactly that "
                           "range in the firewall, as NCCL's troubleshooting "
                           "guide says.");
        ncd_finding_env(f, name, NULL);
    }
    if (range_known && hi - lo + 1 < 1024) {
        ADD("net.ports.range-narrow", NCD_CAT_NET_UNREACHABLE, NCD_SEV_WARNING,
            "ip_local_port_range %d-%d leaves only %d ephemeral ports", lo, hi,
            hi - lo + 1);
        ncd_finding_cause(f, "Every NCCL rank opens several listeners and "
                             "many connections; with a narrow range large "
                             "jobs fail with 'Address already in use' or "
                             "'Cannot assign requested address'.");
        ncd_finding_fix(f, "Keep at least a few thousand ports (e.g. 50000 "
                           "55000) and open them in the firewall.");
    }
    /* NCCL_COMM_ID: a fixed port rank 0 binds. */
    const char *cid = ncd_node_getenv(n, "NCCL_COMM_ID");
    if (cid && *cid) {
        const char *c = strrchr(cid, ':');
        int port = c ? atoi(c + 1) : 0;
        if (port > 0 && range_known && port >= lo && port <= hi) {
            ADD("net.ports.comm-id-ephemeral", NCD_CAT_NET_UNREACHABLE,
                NCD_SEV_WARNING,
                "NCCL_COMM_ID port %d lies inside the ephemeral range %d-%d",
                port, lo, hi);
            ncd_finding_cause(f, "Another socket may already hold it when "
                                 "rank 0 binds: 'Call to bind failed: "
                                 "Address already in use'.");
            ncd_finding_fix(f, "Pick a port outside %d-%d.", lo, hi);
        }
        int nl = port > 0 ? listeners(n, port) : 0;
        if (nl) {
            ADD("net.ports.comm-id-busy", NCD_CAT_NET_UNREACHABLE,
                NCD_SEV_WARNING,
                "Something already listens on NCCL_COMM_ID's port %d", port);
            ncd_finding_evidence(f, "%d TCP listener(s) on port %d", nl, port);
            ncd_finding_cause(f, "If this is rank 0's host, NCCL's root "
                                 "listener cannot bind (a previous job still "
                                 "running, or another service).");
        }
    }
    /* RAS */
    const char *ras = ncd_node_getenv(n, "NCCL_RAS_ENABLE");
    if (!(ras && strtol(ras, NULL, 0) == 0)) {
        const char *ra = ncd_node_getenv(n, "NCCL_RAS_ADDR");
        int rport = NCD_NCCL_RAS_PORT;
        if (ra && strrchr(ra, ':'))
            rport = atoi(strrchr(ra, ':') + 1);
        int nl = rport > 0 ? listeners(n, rport) : 0;
        if (nl) {
            ADD("net.ports.ras-busy", NCD_CAT_NET_UNREACHABLE, NCD_SEV_INFO,
                "Port %d (NCCL RAS) is already in use on this node", rport);
            ncd_finding_cause(f, "A running NCCL job's RAS thread, or another "
                                 "service.  A second job cannot start its RAS "
                                 "listener there (NCCL 2.24+ RAS, default "
                                 "localhost:28028); collectives are not "
                                 "affected.");
            ncd_finding_fix(f, "Set NCCL_RAS_ADDR=localhost:<free port> per "
                               "job, or NCCL_RAS_ENABLE=0.");
        }
    }
    /* Firewall */
    const struct ncd_fw *fwp = &n->ports.fw;
    if (!fwp->known) {
        ADD("net.firewall.not-visible", NCD_CAT_NET_UNREACHABLE, NCD_SEV_INFO,
            "Firewall rules not checked: %s",
            *n->ports.fw_why ? n->ports.fw_why : "nft gave no rule set");
        ncd_finding_cause(f, "iptables-legacy rules are not read; check them "
                             "with `iptables -S INPUT`.");
    } else if (fwp->drop_overlap || (fwp->policy_drop && !fwp->accept_covers)) {
        ADD(fwp->drop_overlap ? "net.unreachable.firewall-drops-range"
                            : "net.unreachable.firewall-policy-drop",
            NCD_CAT_NET_UNREACHABLE, NCD_SEV_WARNING,
            "The firewall may drop incoming TCP connections to NCCL's "
            "ephemeral ports %d-%d",
            lo, hi);
        ncd_finding_evidence(f, "source: %s", fwp->source);
        for (int i = 0; i < fwp->n_evidence; i++)
            ncd_finding_evidence(f, "%s", fwp->evidence[i]);
        ncd_finding_cause(f, "Peers connect to listeners on ephemeral ports "
                             "(bootstrap, socket transport, IB out-of-band): "
                             "dropped SYNs show up as 'connect ... returned "
                             "Connection timed out/No route to host, exceeded "
                             "error retry count' after about a minute.");
        ncd_finding_fix(f, "Allow the cluster network to reach tcp dport "
                           "%d-%d (e.g. `nft add rule inet filter input ip "
                           "saddr <cluster CIDR> tcp dport %d-%d accept`), or "
                           "narrow ip_local_port_range first and open that.",
                        lo, hi, lo, hi);
    } else {
        ADD("net.firewall.ok", NCD_CAT_NET_UNREACHABLE, NCD_SEV_OK,
            "nftables: no rule drops TCP %d-%d (%d input chain(s))", lo, hi,
            fwp->input_chains);
    }
    /* iptables-legacy tables live beside nftables and are not analysed:
     * say so when the kernel has some loaded. */
    if (*n->ports.ipt_tables) {
        ADD("net.firewall.iptables-legacy", NCD_CAT_NET_UNREACHABLE,
            NCD_SEV_INFO,
            "iptables-legacy tables are loaded (%s); their rules are not "
            "analysed",
            n->ports.ipt_tables);
        ncd_finding_fix(f, "Check that `iptables-legacy -S INPUT` does not "
                           "drop TCP %d-%d from the other nodes.",
                        lo, hi);
    }
    /* Bind test on the recommended interface's address. */
    if (n->ports.bind.tested && n->ports.bind.rc < 0) {
        ADD("net.unreachable.bind-failed", NCD_CAT_NET_UNREACHABLE,
            NCD_SEV_ERROR,
            "Cannot listen on %s (%s), the interface NCCL should use",
            n->ports.bind.addr, n->ports.bind.ifname);
        ncd_finding_evidence(f, "%s", n->ports.bind.error);
        ncd_finding_cause(f, "NCCL's bootstrap binds a listener there: 'Call "
                             "to bind failed'.");
    } else if (n->ports.bind.tested) {
        ADD("net.ports.bind-ok", NCD_CAT_NET_UNREACHABLE, NCD_SEV_OK,
            "A listener binds on %s (%s), port %d from %d-%d",
            n->ports.bind.addr, n->ports.bind.ifname, n->ports.bind.port, lo,
            hi);
    }
done:
    return rc;
}
