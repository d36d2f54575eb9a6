/* SPDX-License-Identifier: MIT */
/* Check: the ports NCCL listens on and firewall rules that drop them.
 * NCCL facts: nccl-facts.md §3 (COMM_ID), §5 (RAS_ADDR), §6 (no port-range
 * variable; ip_local_port_range). */
#define _GNU_SOURCE
#include "ncd/check.h"
#include "check/check_internal.h"
#include "ncd/error.h"
#include "ncd/fs.h"
#include "ncd/ncclvars.h"
#include "ncd/netif.h"
#include "ncd/ports.h"
#include "ncd/recommend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

int ncd_check_ports(struct ncd_ctx *ctx, const struct ncd_check_opts *opts,
                    struct ncd_findings *out, json_t *facts);


static int listeners(struct ncd_ctx *ctx, int port)
{
    int n = 0;
    const char *files[] = {"/proc/net/tcp", "/proc/net/tcp6"};
    for (int i = 0; i < 2; i++) {
        char *buf;
        size_t len;
        if (ncd_fs_read(ctx, files[i], 16u << 20, &buf, &len) == 0) {
            n += ncd_proc_net_tcp_listeners(buf, len, port);
            free(buf);
        }
    }
    ncd_ctx_clear_error(ctx);
    return n;
}

/* NCCL_* variables that people set believing NCCL has a port range. */
static int is_port_myth(const char *name)
{
    if (strncmp(name, "NCCL_", 5) != 0 || strcmp(name, "NCCL_RAS_ADDR") == 0)
        return 0;
    return strstr(name, "PORT") != NULL;
}

int ncd_check_ports(struct ncd_ctx *ctx, const struct ncd_check_opts *opts,
                    struct ncd_findings *out, json_t *facts)
{
    (void)opts;
    struct ncd_finding *f;
    struct ncd_var_catalog cat;
    int have_cat = -1;
    int rc = 0, lo = 32768, hi = 60999, range_known = 0;
    char s[64];
    if (ncd_fs_read_str(ctx, "/proc/sys/net/ipv4/ip_local_port_range", s,
                        sizeof s) == 0 &&
        ncd_port_range_parse(s, &lo, &hi) == 0)
        range_known = 1;
    ncd_ctx_clear_error(ctx);
    json_t *pj = json_object();
    if (pj) {
        json_object_set_new(pj, "ip_local_port_range",
                            range_known ? json_pack("[i,i]", lo, hi)
                                        : json_null());
        json_object_set_new(facts, "ports", pj);
    }
    /* Names in the variable catalog (real ones, or known non-NCCL ones
     * such as NCCL_PORT_RANGE) are judged by the ncclenv check already. */
    for (size_t i = 0; i < ncd_env_count(ctx); i++) {
        const char *name, *value;
        ncd_env_at(ctx, i, &name, &value);
        if (!is_port_myth(name))
            continue;
        if (have_cat < 0)
            have_cat = ncd_var_catalog_builtin(ctx, &cat) == 0;
        if (have_cat && (ncd_var_find(&cat, name) || ncd_var_find_gone(&cat, name)))
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
    ncd_ctx_clear_error(ctx);
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
    const char *cid = ncd_getenv(ctx, "NCCL_COMM_ID");
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
        int nl = port > 0 ? listeners(ctx, port) : 0;
        if (nl) {
            ADD("net.ports.comm-id-busy", NCD_CAT_NET_UNREACHABLE,
                NCD_SEV_WARNING,
                "Something already listens on NCCL_COMM_ID's port %d", port);
            ncd_finding_evidence(f, "/proc/net/tcp{,6}: %d listener(s)", nl);
            ncd_finding_cause(f, "If this is rank 0's host, NCCL's root "
                                 "listener cannot bind (a previous job still "
                                 "running, or another service).");
        }
    }
    /* RAS */
    const char *ras = ncd_getenv(ctx, "NCCL_RAS_ENABLE");
    if (!(ras && strtol(ras, NULL, 0) == 0)) {
        const char *ra = ncd_getenv(ctx, "NCCL_RAS_ADDR");
        int rport = NCD_NCCL_RAS_PORT;
        if (ra && strrchr(ra, ':'))
            rport = atoi(strrchr(ra, ':') + 1);
        int nl = rport > 0 ? listeners(ctx, rport) : 0;
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
    struct ncd_fw fw;
    ncd_ctx_clear_error(ctx);
    if ((rc = ncd_fw_probe(ctx, lo, hi, &fw)) < 0)
        goto done;
    if (!fw.known) {
        ADD("net.firewall.not-visible", NCD_CAT_NET_UNREACHABLE, NCD_SEV_INFO,
            "Firewall rules not checked: %s",
            !ncd_ctx_is_live(ctx) ? "no nftables rule set in this capture"
            : *ncd_ctx_errdetail(ctx) ? ncd_ctx_errdetail(ctx)
                                      : "nft gave no rule set");
        ncd_finding_cause(f, "iptables-legacy rules are not read; check them "
                             "with `iptables -S INPUT`.");
    } else if (fw.drop_overlap || (fw.policy_drop && !fw.accept_covers)) {
        ADD(fw.drop_overlap ? "net.unreachable.firewall-drops-range"
                            : "net.unreachable.firewall-policy-drop",
            NCD_CAT_NET_UNREACHABLE, NCD_SEV_WARNING,
            "The firewall may drop incoming TCP connections to NCCL's "
            "ephemeral ports %d-%d",
            lo, hi);
        ncd_finding_evidence(f, "source: %s", fw.source);
        for (int i = 0; i < fw.n_evidence; i++)
            ncd_finding_evidence(f, "%s", fw.evidence[i]);
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
            fw.input_chains);
    }
    ncd_ctx_clear_error(ctx);
    /* iptables-legacy tables live beside nftables and are not analysed:
     * say so when the kernel has some loaded. */
    char tables[256];
    if (ncd_fs_read_str(ctx, "/proc/net/ip_tables_names", tables,
                        sizeof tables) == 0 && *tables) {
        for (char *c = tables; *c; c++)
            if (*c == '\n')
                *c = ' ';
        ADD("net.firewall.iptables-legacy", NCD_CAT_NET_UNREACHABLE,
            NCD_SEV_INFO,
            "iptables-legacy tables are loaded (%s); their rules are not "
            "analysed",
            tables);
        ncd_finding_fix(f, "Check that `iptables-legacy -S INPUT` does not "
                           "drop TCP %d-%d from the other nodes.",
                        lo, hi);
    }
    ncd_ctx_clear_error(ctx);
    /* Bind test on the recommended interface's address. */
    if (ncd_ctx_is_live(ctx)) {
        struct ncd_netif_list nl = {0};
        struct ncd_recommendation rec = {0};
        if (ncd_netif_probe(ctx, &nl) == 0 && ncd_recommend(ctx, &nl, &rec) == 0 &&
            rec.best && rec.best->addr) {
            const struct ncd_if_addr *ad = rec.best->addr;
            int port;
            ncd_ctx_clear_error(ctx);
            if (ncd_bind_test(ctx, ad->family, ad->addr, ad->scope_id, &port) < 0) {
                f = ncd_findings_add(out, "net.unreachable.bind-failed",
                                     NCD_CAT_NET_UNREACHABLE, NCD_SEV_ERROR,
                                     "Cannot listen on %s (%s), the interface "
                                     "NCCL should use",
                                     ad->addr, rec.best->ni->name);
                if (f) {
                    ncd_finding_evidence(f, "%s", ncd_ctx_errdetail(ctx));
                    ncd_finding_cause(f, "NCCL's bootstrap binds a listener "
                                         "there: 'Call to bind failed'.");
                }
            } else {
                f = ncd_findings_add(out, "net.ports.bind-ok",
                                     NCD_CAT_NET_UNREACHABLE, NCD_SEV_OK,
                                     "A listener binds on %s (%s), port %d "
                                     "from %d-%d",
                                     ad->addr, rec.best->ni->name, port, lo,
                                     hi);
            }
            if (!f)
                rc = NCD_ENOMEM;
        }
        ncd_recommendation_release(&rec);
        ncd_netif_list_release(&nl);
        ncd_ctx_clear_error(ctx);
    }
done:
    if (have_cat >= 0)
        ncd_var_catalog_release(&cat);
    return rc;
}
