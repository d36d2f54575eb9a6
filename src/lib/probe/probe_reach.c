/* SPDX-License-Identifier: MIT */
/*
 * probe: reachability findings, one per cause rather than one per pair.
 * A pure function of a struct ncd_probe_result.
 *
 * Every failed cell gets a kind from its three connection tests (see
 * struct ncd_probe_conn): a filter of the target's ephemeral ports (data
 * fails, control answers), a firewall on the source that drops the replies
 * to its own connections (control answers only from a source port outside
 * the source's ephemeral range), a dead path (nothing answers), another
 * process on the address.  The host x host matrix of kinds is then
 * explained by as few causes as fit, most specific first:
 *   1. NCCL's interface is dead where the recommended one is alive: switch
 *      (net.iface-choice.unreachable); the rest is judged on that one;
 *   2. host firewalls on the ephemeral range, grouped by host sets that
 *      behave alike (net.unreachable.port-filtered, .return-filtered);
 *   3. another process answers (net.iface-choice.duplicate-address);
 *   4. dead paths: none at all (net.unreachable.all), a host no one
 *      reaches or that reaches no one (net.unreachable.host), a group of
 *      hosts cut off from the others (net.unreachable.group), what is left
 *      per host pair (net.unreachable.pair / .asymmetric).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncd/error.h"
#include "ncd/probe.h"
#include "ncd/strbuf.h"
#include "probe/probe_int.h"

#include "probe/reach_int.h"


const struct ncd_probe_conn *ncd__probe_path(const struct ncd_probe_cell *c,
                                             int use_rec)
{
    return use_rec && c->rec.status != NCD_PROBE_NOT_TRIED ? &c->rec
                                                           : &c->nccl;
}

/* Something on the peer's address answered: the path carries traffic. */
static int alive(const struct ncd_probe_conn *c)
{
    return c->status == NCD_PROBE_OK || c->ctl_status == NCD_PROBE_OK ||
           c->src_status == NCD_PROBE_OK;
}

static enum kind kind_of(const struct ncd_probe_conn *c)
{
    switch (c->status) {
    case NCD_PROBE_NOT_TRIED: return K_NONE;
    case NCD_PROBE_OK: return K_OK;
    case NCD_PROBE_NO_ADDR: return K_NOADDR;
    case NCD_PROBE_WRONG_PEER: return K_PEER;
    case NCD_PROBE_TIMEOUT:
    case NCD_PROBE_REFUSED:
    case NCD_PROBE_NO_ROUTE:
        if (c->ctl_status == NCD_PROBE_OK)
            return K_PORT;
        break;
    default: break;
    }
    if (c->ctl_status != NCD_PROBE_OK && c->src_status == NCD_PROBE_OK)
        return K_RETURN;
    return K_PATH;
}

/* Order of kinds when the rank pairs of one host pair differ. */
static int kind_rank(enum kind k)
{
    static const int rank[] = {[K_NONE] = 0,  [K_NOADDR] = 1, [K_OK] = 2,
                               [K_PEER] = 3,  [K_PORT] = 4,   [K_RETURN] = 5,
                               [K_PATH] = 6};
    return rank[k];
}

int ncd__reach_tested(enum kind k)
{
    return k != K_NONE && k != K_NOADDR;
}

int ncd__probe_use_rec(const struct ncd_probe_result *r, char *common,
                       size_t len)
{
    int fixable = 0, broken = 0, missing = 0;
    common[0] = 0;
    for (int i = 0; i < r->nranks; i++) {
        if (!r->ranks[i].rec_ifname[0])
            return 0;
        if (i == 0)
            snprintf(common, len, "%s", r->ranks[i].rec_ifname);
        else if (strcmp(common, r->ranks[i].rec_ifname))
            common[0] = 0;
        for (int j = 0; j < r->nranks; j++) {
            if (r->host_of[j] == r->host_of[i])
                continue;
            const struct ncd_probe_cell *c = CELL(r, i, j);
            if (c->nccl.status == NCD_PROBE_NO_ADDR)
                continue; /* net.ifname / none-host say it */
            int na = alive(&c->nccl);
            if (c->rec.status == NCD_PROBE_NOT_TRIED) {
                missing += !na;
                continue;
            }
            int ra = alive(&c->rec);
            fixable += !na && ra;
            broken += na && !ra;
        }
    }
    return fixable > 0 && !broken && !missing;
}

/* ---- the host matrix ------------------------------------------------------ */

static const struct ncd_probe_conn *rep_conn(const struct an *A, int a, int b,
                                             int *i, int *j)
{
    int x = REP(A, a, b);
    *i = x / A->r->nranks;
    *j = x % A->r->nranks;
    return ncd__probe_path(&A->r->cells[x], A->use_rec);
}

static int first_rank_of(const struct ncd_probe_result *r, int h)
{
    for (int i = 0; i < r->nranks; i++)
        if (r->host_of[i] == h)
            return i;
    return 0;
}

const struct ncd_probe_rank *ncd__reach_host_rank(const struct an *A, int h)
{
    return &A->r->ranks[first_rank_of(A->r, h)];
}

/* The interface and address a host's rank listens on for the judged path. */
const char *ncd__reach_path_if(const struct an *A, const struct ncd_probe_rank *k)
{
    const char *s = A->use_rec ? k->rec_if : k->nccl_if;
    return *s ? s : "-";
}

static const char *path_addr(const struct an *A,
                             const struct ncd_probe_rank *k)
{
    return A->use_rec && k->rec_addr[0] ? k->rec_addr : k->nccl_addr;
}

static int ctl_port_of(const struct an *A, const struct ncd_probe_rank *k)
{
    return A->use_rec && k->rec_port ? k->rec_ctl_port : k->ctl_port;
}

static int build(struct an *A)
{
    const struct ncd_probe_result *r = A->r;
    int n = r->nranks, nh = A->nh = r->nhosts;
    size_t nn = (size_t)nh * (size_t)nh + 1;
    A->hk = calloc(nn, sizeof *A->hk);
    A->rep = calloc(nn, sizeof *A->rep);
    A->expl = calloc(nn, 1);
    A->set = calloc((size_t)nh + 1, 1);
    if (!A->hk || !A->rep || !A->expl || !A->set)
        return NCD_ENOMEM;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            if (i == j)
                continue;
            int a = r->host_of[i], b = r->host_of[j];
            enum kind k = kind_of(ncd__probe_path(CELL(r, i, j), A->use_rec));
            if (kind_rank(k) > kind_rank(HK(A, a, b)) ||
                (HK(A, a, b) == K_NONE && k == K_NONE)) {
                HK(A, a, b) = k;
                REP(A, a, b) = i * n + j;
            }
        }
    return 0;
}

static void release(struct an *A)
{
    free(A->hk);
    free(A->rep);
    free(A->expl);
    free(A->set);
}

/* "node3", "node3 and node7", "6 hosts (node1, node2, ... and 2 more)" */
void ncd__reach_names(struct ncd_strbuf *sb, const struct an *A,
                  const unsigned char *in)
{
    int cnt = 0, shown = 0;
    for (int h = 0; h < A->nh; h++)
        cnt += in[h] != 0;
    if (cnt > 2)
        ncd_sb_printf(sb, "%d hosts (", cnt);
    for (int h = 0; h < A->nh; h++) {
        if (!in[h])
            continue;
        if (shown == NAMES_MAX) {
            ncd_sb_printf(sb, " and %d more", cnt - shown);
            break;
        }
        ncd_sb_printf(sb, "%s%s",
                      !shown ? ""
                      : cnt == 2 ? " and "
                                 : ", ",
                      A->r->hosts[h]);
        shown++;
    }
    if (cnt > 2)
        ncd_sb_putc(sb, ')');
}

int ncd__reach_count(const unsigned char *in, int nh)
{
    int c = 0;
    for (int h = 0; h < nh; h++)
        c += in[h] != 0;
    return c;
}

/* Most common failing status among the given host pairs' representatives. */
enum ncd_probe_status ncd__reach_common_status(const struct an *A,
                                           const unsigned char *src,
                                           const unsigned char *dst,
                                           enum kind k)
{
    int cnt[NCD_PROBE_ERROR + 1] = {0}, best = NCD_PROBE_TIMEOUT, bc = 0;
    for (int a = 0; a < A->nh; a++)
        for (int b = 0; b < A->nh; b++) {
            if (!src[a] || !dst[b] || a == b || HK(A, a, b) != k)
                continue;
            int i, j;
            int s = rep_conn(A, a, b, &i, &j)->status;
            if (s >= 0 && s <= NCD_PROBE_ERROR && ++cnt[s] > bc) {
                bc = cnt[s];
                best = s;
            }
        }
    return (enum ncd_probe_status)best;
}

/* Evidence line for one host pair's representative cell. */
static void pair_evidence(struct ncd_finding *f, const struct an *A, int a,
                          int b)
{
    int i, j;
    const struct ncd_probe_conn *c = rep_conn(A, a, b, &i, &j);
    const struct ncd_probe_rank *ki = &A->r->ranks[i], *kj = &A->r->ranks[j];
    struct ncd_strbuf sb = {0};
    ncd_sb_printf(&sb, "%s -> %s %s:%d (ephemeral port): %s", ki->host,
                  kj->host, path_addr(A, kj), c->port,
                  ncd_probe_status_name((enum ncd_probe_status)c->status));
    if (c->status != NCD_PROBE_OK && c->detail[0])
        ncd_sb_printf(&sb, " (%s)", c->detail);
    if (c->ctl_status != NCD_PROBE_NOT_TRIED)
        ncd_sb_printf(&sb, "; control port %d: %s", ctl_port_of(A, kj),
                      ncd_probe_status_name(
                          (enum ncd_probe_status)c->ctl_status));
    if (c->src_status != NCD_PROBE_NOT_TRIED &&
        c->ctl_status != NCD_PROBE_OK)
        ncd_sb_printf(&sb, "; control port from a source port outside %s's "
                           "ephemeral range: %s",
                      ki->host,
                      ncd_probe_status_name(
                          (enum ncd_probe_status)c->src_status));
    ncd_finding_evidence(f, "%s", ncd_sb_str(&sb));
    ncd_sb_release(&sb);
}

/* Evidence for every host pair src x dst of kind k (at most EV_MAX lines),
 * marking them explained. */
void ncd__reach_evidence_block(struct ncd_finding *f, struct an *A,
                           const unsigned char *src, const unsigned char *dst,
                           enum kind k)
{
    int shown = 0, more = 0;
    for (int a = 0; a < A->nh; a++)
        for (int b = 0; b < A->nh; b++) {
            if (!src[a] || !dst[b] || a == b || HK(A, a, b) != k)
                continue;
            EXPL(A, a, b) = 1;
            if (!f)
                continue;
            if (shown < EV_MAX) {
                pair_evidence(f, A, a, b);
                shown++;
            } else {
                more++;
            }
        }
    if (f && more)
        ncd_finding_evidence(f, "... and %d more host pairs alike", more);
}

/* ---- 1. NCCL's interface is dead, the recommended one is alive ----------- */

static void iface_choice(struct an *A, const char *common)
{
    const struct ncd_probe_result *r = A->r;
    int n = r->nranks, shown = 0, more = 0;
    struct ncd_finding *f = NULL;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            const struct ncd_probe_cell *c = CELL(r, i, j);
            if (r->host_of[i] == r->host_of[j] || alive(&c->nccl) ||
                c->nccl.status == NCD_PROBE_NO_ADDR || !alive(&c->rec))
                continue;
            if (!f) {
                f = ncd_findings_add(
                    A->out, "net.iface-choice.unreachable",
                    NCD_CAT_NET_IFACE_CHOICE, NCD_SEV_ERROR,
                    "The interface NCCL picks does not reach the other "
                    "hosts; %s does",
                    common[0] ? common : "the recommended interface");
                if (!f)
                    return;
            }
            if (shown++ >= EV_MAX) {
                more++;
                continue;
            }
            ncd_finding_evidence(
                f, "%s -> %s via NCCL's %s: %s:%d %s (%s); via %s (%s): %s",
                r->ranks[i].host, r->ranks[j].host,
                r->ranks[i].nccl_if[0] ? r->ranks[i].nccl_if : "-",
                r->ranks[j].nccl_addr, c->nccl.port,
                ncd_probe_status_name((enum ncd_probe_status)c->nccl.status),
                c->nccl.detail, r->ranks[i].rec_if, r->ranks[j].rec_addr,
                c->rec.status == NCD_PROBE_OK
                    ? "ok"
                    : "the path answers (see the port findings)");
        }
    if (!f)
        return;
    if (more)
        ncd_finding_evidence(f, "... and %d more rank pairs alike", more);
    /* one line per distinct choice, not per host */
    unsigned char *done = A->set;
    memset(done, 0, (size_t)A->nh);
    for (int h = 0; h < A->nh; h++) {
        if (done[h])
            continue;
        const struct ncd_probe_rank *k = ncd__reach_host_rank(A, h);
        unsigned char *same = calloc((size_t)A->nh, 1);
        if (!same)
            return;
        for (int g = h; g < A->nh; g++) {
            const struct ncd_probe_rank *q = ncd__reach_host_rank(A, g);
            if (!done[g] && !strcmp(q->nccl_if, k->nccl_if) &&
                !strcmp(q->nccl_pass, k->nccl_pass) &&
                !strcmp(q->rec_if, k->rec_if))
                same[g] = done[g] = 1;
        }
        struct ncd_strbuf sb = {0};
        ncd__reach_names(&sb, A, same);
        if (ncd__reach_count(same, A->nh) == 1)
            ncd_finding_evidence(f, "%s: NCCL picks %s %s (%s); recommended "
                                    "%s %s",
                                 ncd_sb_str(&sb),
                                 k->nccl_if[0] ? k->nccl_if : "-",
                                 k->nccl_addr, k->nccl_pass, k->rec_if,
                                 k->rec_addr);
        else
            ncd_finding_evidence(f, "%s: NCCL picks %s (%s); recommended %s",
                                 ncd_sb_str(&sb),
                                 k->nccl_if[0] ? k->nccl_if : "-",
                                 k->nccl_pass, k->rec_if);
        ncd_sb_release(&sb);
        free(same);
    }
    ncd_finding_cause(f, "NCCL takes the first matching interface in its pass "
                         "order, not the one that reaches the peers; the "
                         "ranks then fail to connect (or hang) at init.");
    int other = 0; /* findings left on the recommended interface */
    for (int a = 0; a < A->nh; a++)
        for (int b = 0; b < A->nh; b++)
            if (a != b && ncd__reach_tested(HK(A, a, b)) && HK(A, a, b) != K_OK)
                other = 1;
    const char *then = other ? "; then mend what the findings below report "
                               "on it"
                             : ": probe connected every pair on it";
    if (common[0]) {
        ncd_finding_fix(f, "Set NCCL_SOCKET_IFNAME=%s for every rank%s.",
                        common, then);
        ncd_finding_env(f, "NCCL_SOCKET_IFNAME", common);
    } else {
        struct ncd_strbuf sb = {0};
        for (int h = 0; h < A->nh; h++) {
            const struct ncd_probe_rank *k = ncd__reach_host_rank(A, h);
            if (h == NAMES_MAX) {
                ncd_sb_printf(&sb, ", ... (%d hosts)", A->nh);
                break;
            }
            ncd_sb_printf(&sb, "%s%s on %s", h ? ", " : "", k->rec_ifname,
                          k->host);
        }
        ncd_finding_fix(f, "Set NCCL_SOCKET_IFNAME per host (%s), or a comma "
                           "list of these names%s.",
                        ncd_sb_str(&sb), then);
        ncd_sb_release(&sb);
    }
}

/* ---- 3. another process answers ----------------------------------------- */

static void duplicate_findings(struct an *A)
{
    for (int b = 0; b < A->nh; b++) {
        struct ncd_finding *f = NULL;
        for (int a = 0; a < A->nh; a++) {
            if (HK(A, a, b) != K_PEER)
                continue;
            int i, j;
            const struct ncd_probe_conn *c = rep_conn(A, a, b, &i, &j);
            const struct ncd_probe_rank *kj = &A->r->ranks[j];
            if (!f) {
                f = ncd_findings_add(
                    A->out, "net.iface-choice.duplicate-address",
                    NCD_CAT_NET_IFACE_CHOICE, NCD_SEV_ERROR,
                    "%s cannot connect to %s on %s:%d: wrong-peer",
                    A->r->ranks[i].host, kj->host, path_addr(A, kj), c->port);
                if (!f)
                    return;
                ncd_finding_cause(f, "The address %s leads to another "
                                     "process than rank %d: the same "
                                     "address exists on several hosts "
                                     "(docker0 172.17.0.1, a NAT).",
                                  path_addr(A, kj), j);
                ncd_finding_fix(f, "Exclude that interface: "
                                   "NCCL_SOCKET_IFNAME=^docker,lo or name "
                                   "the data interface.");
            }
            EXPL(A, a, b) = 1;
            ncd_finding_evidence(f, "rank %d (%s) -> rank %d (%s %s:%d): %s",
                                 i, A->r->ranks[i].host, j, kj->host,
                                 path_addr(A, kj), c->port, c->detail);
        }
    }
}

/* ---- 4. dead paths -------------------------------------------------------- */

static int open_path(const struct an *A, int a, int b)
{
    return a != b && HK(A, a, b) == K_PATH && !EXPL(A, a, b);
}

static const char *status_words(enum ncd_probe_status s)
{
    return ncd_probe_status_name(s);
}

static void path_cause_fix(struct ncd_finding *f, enum ncd_probe_status s,
                           const char *who)
{
    switch (s) {
    case NCD_PROBE_NO_ROUTE:
        ncd_finding_cause(f, "No route: the interfaces are on different "
                             "networks, or a router answers that the "
                             "network is unreachable.");
        ncd_finding_fix(f, "Use an interface on a network every host shares "
                           "(NCCL_SOCKET_IFNAME), or add the route to %s.",
                        who);
        break;
    case NCD_PROBE_REFUSED:
        ncd_finding_cause(f, "Every port answers with a reset: a firewall "
                             "REJECTs the traffic (the listeners are up).");
        ncd_finding_fix(f, "Check `nft list ruleset` / `iptables -S` on %s "
                           "and on the way to it for reject rules.",
                        who);
        break;
    default:
        ncd_finding_cause(f, "Packets vanish on every port: a firewall that "
                             "drops, a security group, a switch ACL, or a "
                             "route into the wrong network.");
        ncd_finding_fix(f, "Allow TCP between the nodes on the data "
                           "interface of %s (firewall, security group, "
                           "ACL), or choose a reachable interface with "
                           "NCCL_SOCKET_IFNAME.",
                        who);
        break;
    }
}

static void all_dead(struct an *A)
{
    int nh = A->nh, any = 0;
    if (nh < 3)
        return;
    for (int a = 0; a < nh; a++)
        for (int b = 0; b < nh; b++) {
            if (a == b || !ncd__reach_tested(HK(A, a, b)))
                continue;
            if (!open_path(A, a, b))
                return;
            any = 1;
        }
    if (!any)
        return;
    unsigned char *every = calloc((size_t)nh, 1);
    if (!every)
        return;
    memset(every, 1, (size_t)nh);
    enum ncd_probe_status s = ncd__reach_common_status(A, every, every, K_PATH);
    struct ncd_finding *f = ncd_findings_add(
        A->out, "net.unreachable.all", NCD_CAT_NET_UNREACHABLE, NCD_SEV_ERROR,
        "No host reaches any other on %s (%s): the %d hosts share no working "
        "network there",
        A->use_rec ? "the recommended interface" : "NCCL's interface",
        status_words(s), nh);
    if (f) {
        ncd__reach_evidence_block(f, A, every, every, K_PATH);
        for (int h = 0; h < nh && h < EV_MAX; h++) {
            const struct ncd_probe_rank *q = ncd__reach_host_rank(A, h);
            ncd_finding_evidence(f, "%s: %s %s", q->host, ncd__reach_path_if(A, q),
                                 path_addr(A, q));
        }
        path_cause_fix(f, s, "every host");
    }
    free(every);
}

/* Hosts that no one reaches, or that reach no one (three or more hosts:
 * with two, the pair cannot tell which end it is). */
static void dead_hosts(struct an *A)
{
    int nh = A->nh;
    unsigned char *in = calloc((size_t)nh, 1), *out = calloc((size_t)nh, 1),
                  *grp = calloc((size_t)nh, 1), *done = calloc((size_t)nh, 1),
                  *every = calloc((size_t)nh, 1);
    if (!in || !out || !grp || !done || !every)
        goto end;
    memset(every, 1, (size_t)nh);
    for (int h = 0; h < nh; h++) {
        int tin = 0, bin = 0, pin = 0, tout = 0, bout = 0, pout = 0;
        for (int a = 0; a < nh; a++) {
            if (a == h)
                continue;
            if (ncd__reach_tested(HK(A, a, h))) {
                tin++;
                bin += HK(A, a, h) != K_OK;
                pin += open_path(A, a, h);
            }
            if (ncd__reach_tested(HK(A, h, a))) {
                tout++;
                bout += HK(A, h, a) != K_OK;
                pout += open_path(A, h, a);
            }
        }
        /* every tested peer fails, and at least two of them for a reason
         * no other finding gave */
        in[h] = tin >= 2 && bin == tin && pin >= 2;
        out[h] = tout >= 2 && bout == tout && pout >= 2;
    }
    for (int h = 0; h < nh; h++) {
        if (done[h] || (!in[h] && !out[h]))
            continue;
        memset(grp, 0, (size_t)nh);
        for (int g = h; g < nh; g++)
            if (!done[g] && in[g] == in[h] && out[g] == out[h])
                grp[g] = done[g] = 1;
        int ng = ncd__reach_count(grp, nh);
        struct ncd_strbuf who = {0};
        ncd__reach_names(&who, A, grp);
        enum ncd_probe_status s =
            in[h] ? ncd__reach_common_status(A, every, grp, K_PATH)
                  : ncd__reach_common_status(A, grp, every, K_PATH);
        const struct ncd_probe_rank *k = ncd__reach_host_rank(A, h);
        struct ncd_finding *f = ncd_findings_add(
            A->out, "net.unreachable.host", NCD_CAT_NET_UNREACHABLE,
            NCD_SEV_ERROR, "%s %s on %s (%s)%s", ncd_sb_str(&who),
            in[h] && out[h] ? (ng > 1 ? "neither reach nor are reached by "
                                        "any other host"
                                      : "neither reaches nor is reached by "
                                        "any other host")
            : in[h] ? "cannot be reached by any other host"
            : ng > 1 ? "reach no other host"
                     : "reaches no other host",
            ncd__reach_path_if(A, k), status_words(s),
            in[h] && !out[h]   ? (ng > 1 ? "; they connect out"
                                         : "; it connects out")
            : !in[h] && out[h] ? "; the others reach it"
                               : "");
        if (f) {
            if (in[h])
                ncd__reach_evidence_block(f, A, every, grp, K_PATH);
            if (out[h])
                ncd__reach_evidence_block(f, A, grp, every, K_PATH);
            path_cause_fix(f, s, ncd_sb_str(&who));
            if (in[h] && !out[h] && s == NCD_PROBE_TIMEOUT)
                ncd_finding_cause(f, "Packets to %s vanish on every port "
                                     "while its own connections get "
                                     "through: a firewall on it (or in "
                                     "front of it) drops new incoming "
                                     "connections.",
                                  ncd_sb_str(&who));
        }
        ncd_sb_release(&who);
    }
end:
    free(in);
    free(out);
    free(grp);
    free(done);
    free(every);
}

/* Groups of two or more hosts that the same two or more other hosts cannot
 * reach (a rack behind a firewall, two networks without a route). */
static void dead_groups(struct an *A)
{
    int nh = A->nh;
    unsigned char *grp = calloc((size_t)nh, 1), *src = calloc((size_t)nh, 1),
                  *done = calloc((size_t)nh, 1);
    if (!grp || !src || !done)
        goto end;
    for (int h = 0; h < nh; h++) {
        if (done[h])
            continue;
        memset(src, 0, (size_t)nh);
        for (int a = 0; a < nh; a++)
            src[a] = open_path(A, a, h);
        if (ncd__reach_count(src, nh) < 2)
            continue;
        memset(grp, 0, (size_t)nh);
        for (int g = h; g < nh; g++) {
            if (done[g] || src[g])
                continue;
            int same = 1;
            for (int a = 0; a < nh && same; a++)
                if (a != g && a != h && open_path(A, a, g) != src[a])
                    same = 0;
            if (same && g != h && (open_path(A, h, g) || open_path(A, g, h)))
                same = 0;
            if (same)
                grp[g] = 1;
        }
        if (ncd__reach_count(grp, nh) < 2)
            continue;
        for (int g = 0; g < nh; g++)
            if (grp[g])
                done[g] = 1;
        /* both ways: the sources are cut off from the group in turn */
        int back = 1;
        for (int a = 0; a < nh && back; a++)
            for (int b = 0; b < nh && back; b++)
                if (src[a] && grp[b] && !open_path(A, b, a))
                    back = 0;
        int ns = ncd__reach_count(src, nh), rest = 1;
        for (int x = 0; x < nh; x++)
            if (!grp[x] && !src[x])
                rest = 0;
        struct ncd_strbuf who = {0}, from = {0};
        ncd__reach_names(&who, A, grp);
        if (rest)
            ncd_sb_printf(&from, "the other %d hosts", ns);
        else
            ncd__reach_names(&from, A, src);
        enum ncd_probe_status s = ncd__reach_common_status(A, src, grp, K_PATH);
        const struct ncd_probe_rank *k = ncd__reach_host_rank(A, h);
        struct ncd_finding *f =
            back ? ncd_findings_add(A->out, "net.unreachable.group",
                                    NCD_CAT_NET_UNREACHABLE, NCD_SEV_ERROR,
                                    "%s and %s cannot reach each other on %s "
                                    "(%s); within each group they connect",
                                    ncd_sb_str(&who), ncd_sb_str(&from),
                                    ncd__reach_path_if(A, k), status_words(s))
                 : ncd_findings_add(A->out, "net.unreachable.group",
                                    NCD_CAT_NET_UNREACHABLE, NCD_SEV_ERROR,
                                    "%s cannot be reached from %s on %s (%s); "
                                    "among themselves they connect",
                                    ncd_sb_str(&who), ncd_sb_str(&from),
                                    ncd__reach_path_if(A, k), status_words(s));
        if (f) {
            ncd__reach_evidence_block(f, A, src, grp, K_PATH);
            if (back)
                ncd__reach_evidence_block(f, A, grp, src, K_PATH);
            ncd_finding_cause(f, "The hosts fall into groups: within a group "
                                 "every pair connects, across the groups "
                                 "nothing does.  That is a firewall, ACL or "
                                 "security group between them (a rack, a "
                                 "subnet), or networks without a route "
                                 "between them.");
            ncd_finding_fix(f, "Open TCP between %s and %s on the data "
                               "network (and the route, if any is missing), "
                               "or use an interface on a network all of them "
                               "share.",
                            ncd_sb_str(&from), ncd_sb_str(&who));
        } else {
            ncd__reach_evidence_block(NULL, A, src, grp, K_PATH);
            if (back)
                ncd__reach_evidence_block(NULL, A, grp, src, K_PATH);
        }
        ncd_sb_release(&who);
        ncd_sb_release(&from);
    }
end:
    free(grp);
    free(src);
    free(done);
}

/* What is left, per host pair (a == b: ranks of one host). */
static void dead_pairs(struct an *A)
{
    int nh = A->nh, nf = 0, more = 0;
    struct ncd_finding *rest = NULL;
    for (int a = 0; a < nh; a++)
        for (int b = a; b < nh; b++) {
            int ab = a == b ? HK(A, a, a) == K_PATH && !EXPL(A, a, a)
                            : open_path(A, a, b);
            int ba = a != b && open_path(A, b, a);
            if (!ab && !ba)
                continue;
            int x = ab ? a : b, y = ab ? b : a;
            int i, j;
            const struct ncd_probe_conn *c = rep_conn(A, x, y, &i, &j);
            EXPL(A, a, b) = 1;
            EXPL(A, b, a) = 1;
            if (nf >= PAIRS_MAX) {
                if (!rest)
                    rest = ncd_findings_add(
                        A->out, "net.unreachable.pair",
                        NCD_CAT_NET_UNREACHABLE, NCD_SEV_ERROR,
                        "More host pairs cannot connect (beyond the %d "
                        "above)",
                        PAIRS_MAX);
                if (rest && more++ < EV_MAX)
                    pair_evidence(rest, A, x, y);
                continue;
            }
            nf++;
            enum kind back = a == b ? K_NONE : HK(A, y, x);
            int asym = a != b && back == K_OK;
            const struct ncd_probe_rank *ki = &A->r->ranks[i],
                                        *kj = &A->r->ranks[j];
            struct ncd_finding *f = ncd_findings_add(
                A->out,
                asym ? "net.unreachable.asymmetric" : "net.unreachable.pair",
                NCD_CAT_NET_UNREACHABLE, NCD_SEV_ERROR,
                "%s cannot connect to %s on %s:%d: %s%s", ki->host, kj->host,
                path_addr(A, kj), c->port,
                status_words((enum ncd_probe_status)c->status),
                asym ? " (the other way works)"
                : ab && ba ? " (nor the other way)"
                           : "");
            if (!f)
                return;
            ncd_finding_evidence(f, "rank %d (%s, from %s via %s) -> rank %d "
                                    "(%s, %s %s:%d): %s",
                                 i, ki->host,
                                 A->r->cells[REP(A, x, y)].src_addr[0]
                                     ? A->r->cells[REP(A, x, y)].src_addr
                                     : "-",
                                 ncd__reach_path_if(A, ki), j, kj->host, ncd__reach_path_if(A, kj),
                                 path_addr(A, kj), c->port, c->detail);
            pair_evidence(f, A, x, y);
            if (a != b)
                ncd_finding_evidence(
                    f, "%s -> %s: %s", kj->host, ki->host,
                    back == K_OK ? "ok"
                    : ab && ba   ? status_words((enum ncd_probe_status)
                                                   rep_conn(A, y, x, &i, &j)
                                                       ->status)
                                 : "fails too (explained above)");
            path_cause_fix(f, (enum ncd_probe_status)c->status, kj->host);
        }
    if (rest && more > EV_MAX)
        ncd_finding_evidence(rest, "... and %d more host pairs", more - EV_MAX);
}

int ncd__probe_reach_findings(const struct ncd_probe_result *r, int use_rec,
                              const char *common, struct ncd_findings *out)
{
    struct an A = {.r = r, .out = out, .use_rec = use_rec};
    int rc = build(&A);
    if (rc) {
        release(&A);
        return rc;
    }
    if (use_rec)
        iface_choice(&A, common);
    ncd__reach_firewall_findings(&A);
    duplicate_findings(&A);
    all_dead(&A);
    dead_hosts(&A);
    dead_groups(&A);
    dead_pairs(&A);
    release(&A);
    return 0;
}
