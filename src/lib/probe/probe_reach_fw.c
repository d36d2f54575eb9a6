/* SPDX-License-Identifier: MIT */
/* probe's reachability analysis, cause 2: firewalls on the ephemeral port
 * range (NCCL's data connections use ports the kernel picks from
 * ip_local_port_range), per host or per group of hosts, stateless ones
 * told apart by a retry from a source port outside the range.  The host
 * matrix: reach_int.h; the other causes: probe_reach.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncd/error.h"
#include "ncd/probe.h"
#include "ncd/strbuf.h"
#include "probe/probe_int.h"
#include "probe/reach_int.h"

/* ---- 2. firewalls on the ephemeral range --------------------------------- */

static int is_kind(const struct an *A, int a, int b, enum kind k)
{
    return a != b && HK(A, a, b) == k;
}

/* Hosts h1 and h2 see the same sources fail with kind k (columns), or the
 * same targets (rows, by_row). */
static int alike(const struct an *A, int h1, int h2, enum kind k, int by_row)
{
    for (int x = 0; x < A->nh; x++) {
        if (x == h1 || x == h2)
            continue;
        int u = by_row ? is_kind(A, h1, x, k) : is_kind(A, x, h1, k);
        int v = by_row ? is_kind(A, h2, x, k) : is_kind(A, x, h2, k);
        if (u != v)
            return 0;
    }
    return by_row ? is_kind(A, h1, h2, k) == is_kind(A, h2, h1, k)
                  : is_kind(A, h2, h1, k) == is_kind(A, h1, h2, k);
}

/* No tested source reaches h's data port. */
static int blocked_from_all(const struct an *A, int h)
{
    int any = 0;
    for (int a = 0; a < A->nh; a++) {
        if (a == h || !ncd__reach_tested(HK(A, a, h)))
            continue;
        if (HK(A, a, h) == K_OK)
            return 0;
        any = 1;
    }
    return any;
}

void ncd__reach_firewall_findings(struct an *A)
{
    int nh = A->nh;
    unsigned char *inport = calloc((size_t)nh, 1), *ret = calloc((size_t)nh, 1),
                  *all = calloc((size_t)nh, 1), *grp = calloc((size_t)nh, 1),
                  *src = calloc((size_t)nh, 1), *done = calloc((size_t)nh, 1);
    if (!inport || !ret || !all || !grp || !src || !done)
        goto out;
    for (int h = 0; h < nh; h++) {
        for (int a = 0; a < nh; a++) {
            inport[h] |= is_kind(A, a, h, K_PORT);
            ret[h] |= is_kind(A, h, a, K_RETURN);
        }
        all[h] = inport[h] && blocked_from_all(A, h);
    }
    for (int h = 0; h < nh; h++) {
        if (done[h] || (!inport[h] && !ret[h]))
            continue;
        const struct ncd_probe_rank *k = ncd__reach_host_rank(A, h);
        memset(grp, 0, (size_t)nh);
        for (int g = h; g < nh; g++) {
            const struct ncd_probe_rank *q = ncd__reach_host_rank(A, g);
            if (done[g] || inport[g] != inport[h] || ret[g] != ret[h] ||
                all[g] != all[h] || q->port_lo != k->port_lo ||
                q->port_hi != k->port_hi)
                continue;
            if (!all[h] && inport[h] && !alike(A, h, g, K_PORT, 0))
                continue;
            if (ret[h] && !inport[h] && !alike(A, h, g, K_RETURN, 1))
                continue;
            grp[g] = done[g] = 1;
        }
        int ng = ncd__reach_count(grp, nh);
        /* the sources that cannot reach the group's data ports */
        memset(src, 0, (size_t)nh);
        for (int a = 0; a < nh; a++)
            for (int b = 0; b < nh; b++)
                if (grp[b] && is_kind(A, a, b, K_PORT))
                    src[a] = 1;
        struct ncd_strbuf who = {0}, from = {0};
        ncd__reach_names(&who, A, grp);
        ncd__reach_names(&from, A, src);
        char range[48];
        if (k->port_lo)
            snprintf(range, sizeof range, "%d-%d", k->port_lo, k->port_hi);
        else
            snprintf(range, sizeof range, "(range unknown)");
        struct ncd_finding *f;
        const char *ifn = ncd__reach_path_if(A, k);
        if (inport[h] && all[h] && ret[h])
            f = ncd_findings_add(
                A->out, "net.unreachable.port-filtered",
                NCD_CAT_NET_UNREACHABLE, NCD_SEV_ERROR,
                "A firewall on %s drops %s ephemeral ports %s on %s without "
                "tracking connections: no peer connects to %s, and the "
                "replies to %s own connections are lost",
                ncd_sb_str(&who), ng > 1 ? "their" : "its", range, ifn,
                ng > 1 ? "them" : "it", ng > 1 ? "their" : "its");
        else if (inport[h] && all[h])
            f = ncd_findings_add(A->out, "net.unreachable.port-filtered",
                                 NCD_CAT_NET_UNREACHABLE, NCD_SEV_ERROR,
                                 "A firewall on %s blocks %s ephemeral ports "
                                 "%s on %s, where NCCL listens",
                                 ncd_sb_str(&who), ng > 1 ? "their" : "its",
                                 range, ifn);
        else if (inport[h])
            f = ncd_findings_add(A->out, "net.unreachable.port-filtered",
                                 NCD_CAT_NET_UNREACHABLE, NCD_SEV_ERROR,
                                 "The ephemeral ports %s of %s on %s are "
                                 "blocked from %s; other hosts connect",
                                 range, ncd_sb_str(&who), ifn,
                                 ncd_sb_str(&from));
        else
            f = ncd_findings_add(
                A->out, "net.unreachable.return-filtered",
                NCD_CAT_NET_UNREACHABLE, NCD_SEV_ERROR,
                "A firewall on %s drops the replies to %s own connections "
                "(its ephemeral ports %s on %s)",
                ncd_sb_str(&who), ng > 1 ? "their" : "its", range, ifn);
        unsigned char *every = calloc((size_t)nh, 1);
        if (f && every) {
            memset(every, 1, (size_t)nh);
            if (inport[h])
                ncd__reach_evidence_block(f, A, every, grp, K_PORT);
            if (ret[h])
                ncd__reach_evidence_block(f, A, grp, every, K_RETURN);
            int shown = 0;
            for (int g = 0; g < nh && shown < EV_MAX; g++)
                if (grp[g]) {
                    const struct ncd_probe_rank *q = ncd__reach_host_rank(A, g);
                    ncd_finding_evidence(f, "%s: net.ipv4.ip_local_port_range"
                                            " = %d %d",
                                         q->host, q->port_lo, q->port_hi);
                    shown++;
                }
            int lo = k->port_lo, hi = k->port_hi;
            if (inport[h] && !all[h])
                ncd_finding_cause(
                    f, "NCCL's bootstrap and Socket transport listen on "
                       "ports the kernel draws from "
                       "net.ipv4.ip_local_port_range; a firewall between "
                       "%s and %s (or one that trusts only some sources) "
                       "drops or rejects connections to them.",
                    ncd_sb_str(&from), ncd_sb_str(&who));
            else if (inport[h])
                ncd_finding_cause(
                    f, "NCCL's bootstrap and Socket transport listen on "
                       "ports the kernel draws from "
                       "net.ipv4.ip_local_port_range; the firewall %s "
                       "connections to them, so every peer's connect fails "
                       "(\"connect to ... failed\")%s.",
                    ncd__reach_common_status(A, every, grp, K_PORT) == NCD_PROBE_REFUSED
                        ? "rejects"
                        : "drops",
                    ret[h] ? "; without connection tracking it also drops "
                             "the answers to connections made from there, "
                             "whose source ports come from the same range"
                           : "");
            else
                ncd_finding_cause(
                    f, "Outgoing connections take a source port from "
                       "net.ipv4.ip_local_port_range; a rule that drops "
                       "incoming packets to those ports without a "
                       "`ct state established,related accept` before it "
                       "drops the peers' answers, so every connect from "
                       "there times out while the same connect from a port "
                       "outside the range succeeds.");
            if (inport[h] && !all[h])
                ncd_finding_fix(f, "Allow TCP %d-%d into %s from %s (the "
                                   "firewall, ACL or security group between "
                                   "them).",
                                lo, hi, ncd_sb_str(&who), ncd_sb_str(&from));
            else
                ncd_finding_fix(
                    f, "On %s allow TCP %d-%d from the other nodes%s, e.g. "
                       "`nft add rule inet filter input ip saddr <cluster "
                       "subnet> tcp dport %d-%d accept` (firewalld: "
                       "firewall-cmd --permanent --zone=trusted "
                       "--add-source=<cluster subnet>), or trust the data "
                       "interface %s.",
                    ncd_sb_str(&who), lo, hi,
                    ret[h] ? " and accept established connections (`ct "
                             "state established,related accept` first)"
                           : "",
                    lo, hi, ifn);
        } else if (every) {
            memset(every, 1, (size_t)nh);
            ncd__reach_evidence_block(NULL, A, every, grp, K_PORT);
            ncd__reach_evidence_block(NULL, A, grp, every, K_RETURN);
        }
        free(every);
        ncd_sb_release(&who);
        ncd_sb_release(&from);
    }
out:
    free(inport);
    free(ret);
    free(all);
    free(grp);
    free(src);
    free(done);
}

