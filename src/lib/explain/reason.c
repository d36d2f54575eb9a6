/* SPDX-License-Identifier: MIT */
/*
 * The reasoner: derived conditions over facts + matches, then ranking.
 *
 * Ranking (reference B7/B8: "the earliest WARN is usually the root cause;
 * later 'Connection closed by remote peer' / 'remote process exited' lines
 * on other ranks are consequences"):
 *   1. root causes of severity >= warning: worst first, then earliest (time
 *      stamp when both have one, else input order);
 *   2. framework wrappers (the diagnosis when nothing deeper is visible);
 *   3. consequences, including matches a derived finding absorbed;
 *   4. context and info.
 */
#define _GNU_SOURCE
#include "explain/session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncd/error.h"

/* Conditions a rule's `when:` may name (rules/derived.yaml). */
const char *const ncd__when_names[] = {
    "iface-linklocal",  "iface-virtual",     "iface-wrong-connect",
    "ifname-no-match",  "ib-fallback",       "version-mismatch",
    "plugin-mismatch",  "hosts-merged",      "consumer-gpu-p2p",
    "init-hang-nvls",   "init-hang-bootstrap", "init-hang-connect",
    "env-level-value",  "env-ifname-ignored", "gdr-off",
    "unmatched-warn",   "nothing-found",     "container-bridge", "error-trail", "tests-header-mismatch", "socket-multinode", "env-slow-settings",
    "env-ib-range", "watchdog-desync", "watchdog-missing", "env-differs", NULL};

#define MAX_VARS 10

struct hit {
    size_t rule;
    const struct ncd__rec *rec; /* pattern rules and unmatched-warn */
    enum ncd_category cat;
    enum ncd_severity sev;
    enum ncd_rule_role role;
    double ts;
    uint64_t seq;
    char *vn[MAX_VARS], *vv[MAX_VARS];
    size_t nv;
    char *ev[NCD__MAX_EVID];
    size_t nev;
    int no_absorb; /* this hit does not explain the rule's `absorbs` */
};

struct hits {
    struct hit *v;
    size_t n, cap;
};

static struct hit *hit_new(struct hits *hs, const struct ncd_explain *ex,
                           size_t rule)
{
    if (hs->n == hs->cap) {
        size_t nc = hs->cap ? hs->cap * 2 : 32;
        struct hit *nv = realloc(hs->v, nc * sizeof *nv);
        if (!nv)
            return NULL;
        hs->v = nv;
        hs->cap = nc;
    }
    struct hit *h = &hs->v[hs->n++];
    memset(h, 0, sizeof *h);
    const struct ncd__rule *r = &ex->rules->v[rule];
    h->rule = rule;
    h->cat = r->cat;
    h->sev = r->sev;
    h->role = r->role;
    h->ts = -1;
    h->seq = UINT64_MAX;
    return h;
}

static void hit_var(struct hit *h, const char *n, const char *v)
{
    if (h->nv >= MAX_VARS)
        return;
    h->vn[h->nv] = strdup(n);
    h->vv[h->nv] = strdup(v ? v : "");
    if (!h->vn[h->nv] || !h->vv[h->nv]) {
        free(h->vn[h->nv]);
        free(h->vv[h->nv]);
        return;
    }
    h->nv++;
}

static void hit_ev(struct hit *h, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void hit_ev(struct hit *h, const char *fmt, ...)
{
    if (h->nev >= NCD__MAX_EVID)
        return;
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) >= 0) {
        ncd__sanitize(s, strlen(s));
        h->ev[h->nev++] = s;
    }
    va_end(ap);
}

static void hits_release(struct hits *hs)
{
    for (size_t i = 0; i < hs->n; i++) {
        for (size_t k = 0; k < hs->v[i].nv; k++) {
            free(hs->v[i].vn[k]);
            free(hs->v[i].vv[k]);
        }
        for (size_t k = 0; k < hs->v[i].nev; k++)
            free(hs->v[i].ev[k]);
    }
    free(hs->v);
}

/* ----------------------------------------------------------- helpers */

static int linklocal(const char *a)
{
    return strncasecmp(a, "fe80", 4) == 0;
}

static int loopback(const char *name, const char *a)
{
    return strncmp(a, "127.", 4) == 0 || strcmp(a, "::1") == 0 ||
           strcmp(name, "lo") == 0;
}

/* Interfaces that are almost never the way to other hosts (nccl-facts.md
 * §1: NCCL excludes only docker*, lo and virbr* by itself). */
static int virtual_if(const char *n)
{
    static const char *const pre[] = {
        "docker", "br-",   "veth",     "virbr",    "cni",   "flannel",
        "cali",   "tailscale", "ip6tnl", "tunl",   "vxlan", "kube-",
        "weave",  "lxcbr", "lxdbr",    "podman",   "cilium", "sit",
        "gre",    "zt",    NULL};
    for (size_t i = 0; pre[i]; i++)
        if (strncmp(n, pre[i], strlen(pre[i])) == 0)
            return 1;
    return 0;
}

static const char *env_get(const struct ncd_explain *ex, const char *name,
                           const struct ncd__env **which)
{
    for (size_t i = 0; i < ex->nenv; i++)
        if (strcmp(ex->env[i].name, name) == 0) {
            if (which)
                *which = &ex->env[i];
            return ex->env[i].value;
        }
    return NULL;
}

/* The best interface to pin NCCL_SOCKET_IFNAME to, from what the logs
 * list: routable address and a physical-looking name first. */
static void good_iface(const struct ncd_explain *ex, char *out, size_t osz)
{
    const char *fallback = NULL;
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < ex->nprocs; i++) {
            const struct ncd__proc *p = &ex->procs[i];
            const struct ncd__iface *lists[2] = {p->boot, p->sock};
            int ns[2] = {p->nboot, p->nsock};
            for (int l = 0; l < 2; l++)
                for (int k = 0; k < ns[l]; k++) {
                    const struct ncd__iface *f = &lists[l][k];
                    if (!f->addr[0] || linklocal(f->addr) ||
                        loopback(f->name, f->addr))
                        continue;
                    if (!virtual_if(f->name)) {
                        snprintf(out, osz, "%s", f->name);
                        return;
                    }
                    if (!fallback)
                        fallback = f->name;
                }
        }
    if (fallback && !virtual_if(fallback)) {
        snprintf(out, osz, "%s", fallback);
        return;
    }
    if (fallback && strncmp(fallback, "docker", 6) != 0 &&
        strncmp(fallback, "virbr", 5) != 0) {
        snprintf(out, osz, "%s", fallback);
        return;
    }
    snprintf(out, osz, "<the interface that reaches the other nodes>");
}

/* The earliest match of the rules `r` absorbs, preferring real causes
 * over framework summaries.  0 when none matched. */
static int rec_any(const struct ncd_explain *ex, const struct ncd__rule *r,
                   const struct ncd__rec **first)
{
    const struct ncd__rec *best = NULL;
    int best_root = 0;
    for (size_t a = 0; a < r->nabsorbs; a++) {
        long k = ncd__rules_find(ex->rules, r->absorbs[a]);
        if (k < 0 || !ex->recs[k].count)
            continue;
        int root = ex->rules->v[k].role == NCD_ROLE_ROOT;
        if (!best || (root && !best_root) ||
            (root == best_root && ex->recs[k].first_seq < best->first_seq)) {
            best = &ex->recs[k];
            best_root = root;
        }
    }
    if (first)
        *first = best;
    return best != NULL;
}

static void hit_from_rec(struct hit *h, const struct ncd__rec *rec)
{
    if (!rec)
        return;
    h->seq = rec->first_seq;
    h->ts = rec->first_ts;
}

static void proc_where(const struct ncd__proc *p, char *out, size_t osz)
{
    if (p->rank >= 0)
        snprintf(out, osz, "%s pid %ld (rank %d)", p->host[0] ? p->host : "?",
                 p->pid, p->rank);
    else if (p->pid >= 0)
        snprintf(out, osz, "%s pid %ld", p->host[0] ? p->host : "?", p->pid);
    else
        snprintf(out, osz, "%s", p->host[0] ? p->host : "this log");
}

/* ----------------------------------------------------------- conditions */

static int eval(struct ncd_explain *ex, struct hits *hs, size_t ri,
                int other_roots)
{
    const struct ncd__rule *r = &ex->rules->v[ri];
    const char *w = r->when;
    char good[96], where[96], buf[256];
    good_iface(ex, good, sizeof good);

    if (strcmp(w, "iface-linklocal") == 0 || strcmp(w, "iface-virtual") == 0 ||
        strcmp(w, "iface-wrong-connect") == 0) {
        int mode = w[6] == 'l' ? 0 : w[6] == 'v' ? 1 : 2;
        const struct ncd__rec *conn = NULL;
        if (mode == 2 && !rec_any(ex, r, &conn))
            return 0;
        for (size_t i = 0; i < ex->nprocs; i++) {
            const struct ncd__proc *p = &ex->procs[i];
            if (p->nnodes == 1)
                continue; /* single node: any interface works */
            const struct ncd__iface *f = NULL;
            const char *what = "";
            if (mode == 0) {
                if (p->nboot && (linklocal(p->boot[0].addr) ||
                                 loopback(p->boot[0].name, p->boot[0].addr))) {
                    f = &p->boot[0];
                    what = linklocal(f->addr) ? "IPv6 link-local" : "loopback";
                }
            } else if (mode == 2) {
                if (p->nboot && virtual_if(p->boot[0].name)) {
                    f = &p->boot[0];
                    what = "bootstrap";
                }
            } else {
                for (int k = 0; k < p->nsock && !f; k++)
                    if (virtual_if(p->sock[k].name) || linklocal(p->sock[k].addr) ||
                        loopback(p->sock[k].name, p->sock[k].addr)) {
                        f = &p->sock[k];
                        what = "NET/Socket";
                    }
                for (int k = 1; k < p->nboot && !f; k++)
                    if (virtual_if(p->boot[k].name) || linklocal(p->boot[k].addr)) {
                        f = &p->boot[k];
                        what = "bootstrap";
                    }
                if (!f && p->nboot && virtual_if(p->boot[0].name)) {
                    f = &p->boot[0];
                    what = "bootstrap";
                }
            }
            if (!f)
                continue;
            /* one finding per interface: the strongest rule wins */
            int dup = 0;
            for (size_t k = 0; k < hs->n && !dup; k++) {
                const char *w2 = ex->rules->v[hs->v[k].rule].when;
                if (!w2 || strncmp(w2, "iface-", 6) != 0)
                    continue;
                for (size_t v = 0; v < hs->v[k].nv; v++)
                    dup |= strcmp(hs->v[k].vn[v], "iface") == 0 &&
                           strcmp(hs->v[k].vv[v], f->name) == 0;
            }
            if (dup)
                continue;
            if (strcmp(good, f->name) == 0)
                snprintf(good, sizeof good,
                         "<the interface that reaches the other nodes>");
            struct hit *h = hit_new(hs, ex, ri);
            if (!h)
                return NCD_ENOMEM;
            proc_where(p, where, sizeof where);
            hit_var(h, "iface", f->name);
            hit_var(h, "addr", f->addr);
            hit_var(h, "host", p->host);
            hit_var(h, "what", what);
            hit_var(h, "good_iface", good);
            hit_ev(h, "%s:%llu: %s: NCCL uses %s %s for %s",
                   ncd__src_name(ex, p->src),
                   (unsigned long long)(strcmp(what, "NET/Socket") == 0
                                            ? p->sock_line
                                            : p->boot_line),
                   where, f->name, f->addr, mode == 0 ? "the bootstrap" : what);
            if (mode == 1) {
                /* a listed virtual interface explains a connect failure only
                 * when the failing address is that interface's */
                const struct ncd__rec *cf = NULL;
                long k = ncd__rules_find(ex->rules, "socket.connect-failed");
                if (k >= 0 && ex->recs[k].count)
                    cf = &ex->recs[k];
                const char *peer = NULL;
                for (size_t c = 0; cf && c < cf->ncaps; c++)
                    if (strcmp(cf->cap_name[c], "peer") == 0)
                        peer = cf->cap_val[c];
                char pct[32];
                snprintf(pct, sizeof pct, "%%%s<", f->name);
                if (peer && f->addr[0] && (strstr(peer, f->addr) || strstr(peer, pct))) {
                    h->sev = NCD_SEV_ERROR;
                    conn = cf;
                } else {
                    h->no_absorb = 1;
                }
            }
            if (conn) {
                hit_from_rec(h, conn);
                for (size_t k = 0; k < conn->nev && h->nev < NCD__MAX_EVID; k++)
                    hit_ev(h, "%s:%llu: %s", ncd__src_name(ex, conn->ev[k].src),
                           (unsigned long long)conn->ev[k].line, conn->ev[k].text);
            } else {
                /* the interface choice is as old as the line that shows it */
                h->seq = strcmp(what, "NET/Socket") == 0 ? p->sock_seq : p->boot_seq;
            }
            return 1;
        }
        if (mode == 0) {
            /* no Bootstrap line, but connections went to a link-local
             * address: "connect to fe80::...%ib1<port> failed" */
            long k = ncd__rules_find(ex->rules, "socket.connect-failed");
            const struct ncd__rec *cf = k >= 0 && ex->recs[k].count ? &ex->recs[k] : NULL;
            const char *peer = NULL;
            for (size_t c = 0; cf && c < cf->ncaps; c++)
                if (strcmp(cf->cap_name[c], "peer") == 0)
                    peer = cf->cap_val[c];
            if (!peer || !linklocal(peer))
                return 0;
            char addr[64], ifn[32] = "";
            snprintf(addr, sizeof addr, "%.*s", (int)strcspn(peer, "<"), peer);
            const char *pc = strchr(addr, '%');
            if (pc)
                snprintf(ifn, sizeof ifn, "%s", pc + 1);
            struct hit *h = hit_new(hs, ex, ri);
            if (!h)
                return NCD_ENOMEM;
            hit_var(h, "iface", ifn[0] ? ifn : "a link-local interface");
            hit_var(h, "addr", addr);
            hit_var(h, "host", cf->ev[0].host);
            hit_var(h, "what", "IPv6 link-local");
            hit_var(h, "good_iface", good);
            hit_from_rec(h, cf);
            for (size_t e = 0; e < cf->nev && h->nev < NCD__MAX_EVID; e++)
                hit_ev(h, "%s:%llu: %s", ncd__src_name(ex, cf->ev[e].src),
                       (unsigned long long)cf->ev[e].line, cf->ev[e].text);
            return 1;
        }
        return 0;
    }
    if (strcmp(w, "container-bridge") == 0) {
        /* Docker's default bridge network is 172.17.0.0/16: addresses
         * there are private to one host (NAT), and every host reuses them */
        const struct ncd__rec *conn = NULL;
        int failing = rec_any(ex, r, &conn);
        const struct ncd__proc *first = NULL, *other = NULL;
        for (size_t i = 0; i < ex->nprocs; i++) {
            const struct ncd__proc *p = &ex->procs[i];
            /* docker0 itself is the host side: iface-wrong-connect's case */
            if (!p->nboot || strncmp(p->boot[0].addr, "172.17.", 7) != 0 ||
                virtual_if(p->boot[0].name) || p->nnodes == 1)
                continue;
            if (!first)
                first = p;
            else if (!other && strcmp(first->host, p->host) != 0)
                other = p;
        }
        if (!first || (!failing && !other))
            return 0;
        struct hit *h = hit_new(hs, ex, ri);
        if (!h)
            return NCD_ENOMEM;
        proc_where(first, where, sizeof where);
        hit_var(h, "iface", first->boot[0].name);
        hit_var(h, "addr", first->boot[0].addr);
        hit_var(h, "host", first->host);
        hit_ev(h, "%s:%llu: %s: bootstrap on %s %s (Docker bridge network)",
               ncd__src_name(ex, first->src), (unsigned long long)first->boot_line,
               where, first->boot[0].name, first->boot[0].addr);
        if (other) {
            proc_where(other, where, sizeof where);
            hit_ev(h, "%s:%llu: %s: bootstrap on %s %s",
                   ncd__src_name(ex, other->src), (unsigned long long)other->boot_line,
                   where, other->boot[0].name, other->boot[0].addr);
        }
        if (conn) {
            hit_from_rec(h, conn);
            for (size_t k = 0; k < conn->nev && h->nev < NCD__MAX_EVID; k++)
                hit_ev(h, "%s:%llu: %s", ncd__src_name(ex, conn->ev[k].src),
                       (unsigned long long)conn->ev[k].line, conn->ev[k].text);
        } else {
            h->seq = 0;
        }
        return 1;
    }
    if (strcmp(w, "ifname-no-match") == 0) {
        const struct ncd__env *e = NULL;
        const char *v = env_get(ex, "NCCL_SOCKET_IFNAME", &e);
        const struct ncd__rec *fail = NULL;
        if (!v || !rec_any(ex, r, &fail))
            return 0;
        struct hit *h = hit_new(hs, ex, ri);
        if (!h)
            return NCD_ENOMEM;
        hit_var(h, "value", v);
        hit_var(h, "host", fail->ev[0].host[0] ? fail->ev[0].host : e->host);
        hit_var(h, "good_iface", good);
        hit_ev(h, "%s:%llu: NCCL_SOCKET_IFNAME set by environment to %s",
               ncd__src_name(ex, e->src), (unsigned long long)e->line, v);
        for (size_t k = 0; k < fail->nev && h->nev < NCD__MAX_EVID; k++)
            hit_ev(h, "%s:%llu: %s", ncd__src_name(ex, fail->ev[k].src),
                   (unsigned long long)fail->ev[k].line, fail->ev[k].text);
        hit_from_rec(h, fail);
        return 1;
    }
    if (strcmp(w, "ib-fallback") == 0) {
        const char *dis = env_get(ex, "NCCL_IB_DISABLE", NULL);
        if (dis && strcmp(dis, "0") != 0)
            return 0;
        int any_ib = 0;
        for (size_t i = 0; i < ex->nprocs; i++)
            any_ib |= ex->procs[i].nib > 0;
        for (size_t i = 0; i < ex->nprocs; i++) {
            const struct ncd__proc *p = &ex->procs[i];
            if (!(p->ibverbs_missing || p->ib_nodev) || p->nib)
                continue;
            int socket = strcmp(p->net, "Socket") == 0 || p->nsock > 0;
            const char *ipoib = NULL;
            for (int k = 0; k < p->nsock; k++)
                if (strncmp(p->sock[k].name, "ib", 2) == 0)
                    ipoib = p->sock[k].name;
            /* RDMA is expected when: an IPoIB interface exists, other
             * processes use IB, NCCL_IB_HCA is set, or an RDMA net plugin
             * loaded and still fell back to Socket */
            int hint = ipoib || any_ib || env_get(ex, "NCCL_IB_HCA", NULL) ||
                       p->plugin == 2;
            if (!socket || !hint)
                continue;
            struct hit *h = hit_new(hs, ex, ri);
            if (!h)
                return NCD_ENOMEM;
            proc_where(p, where, sizeof where);
            hit_var(h, "host", p->host);
            hit_var(h, "reason", p->ibverbs_missing
                                     ? "libibverbs could not be loaded"
                                     : "no active InfiniBand/RoCE port passed "
                                       "NCCL_IB_HCA (NET/IB : No device found)");
            hit_ev(h, "%s:%llu: %s: %s", ncd__src_name(ex, p->src),
                   (unsigned long long)p->ib_line, where,
                   p->ibverbs_missing ? "Failed to open libibverbs.so[.1]"
                                      : "NET/IB : No device found.");
            if (ipoib)
                hit_ev(h, "%s:%llu: %s: data goes over NET/Socket on %s (IPoIB)",
                       ncd__src_name(ex, p->src), (unsigned long long)p->sock_line,
                       where, ipoib);
            else
                hit_ev(h, "%s:%llu: %s: Using network Socket%s",
                       ncd__src_name(ex, p->src),
                       (unsigned long long)(p->net_line ? p->net_line : p->sock_line),
                       where,
                       any_ib ? " while other processes use IB"
                       : p->plugin == 2 ? " although an RDMA net plugin was loaded"
                                        : "");
            h->seq = p->ib_seq;
            return 1;
        }
        return 0;
    }
    if (strcmp(w, "version-mismatch") == 0) {
        size_t a = SIZE_MAX;
        for (size_t i = 0; i < ex->nprocs; i++) {
            if (!ex->procs[i].vcode)
                continue;
            if (a == SIZE_MAX) {
                a = i;
                continue;
            }
            if (ex->procs[i].vcode != ex->procs[a].vcode) {
                const struct ncd__proc *p = &ex->procs[a], *q = &ex->procs[i];
                struct hit *h = hit_new(hs, ex, ri);
                if (!h)
                    return NCD_ENOMEM;
                snprintf(buf, sizeof buf, "%s on %s, %s on %s", p->version,
                         p->host[0] ? p->host : "?", q->version,
                         q->host[0] ? q->host : "?");
                hit_var(h, "versions", buf);
                hit_ev(h, "%s:%llu: %s (pid %ld): NCCL version %s",
                       ncd__src_name(ex, p->src), (unsigned long long)p->ver_line,
                       p->host, p->pid, p->version);
                hit_ev(h, "%s:%llu: %s (pid %ld): NCCL version %s",
                       ncd__src_name(ex, q->src), (unsigned long long)q->ver_line,
                       q->host, q->pid, q->version);
                h->seq = 0;
                return 1;
            }
        }
        return 0;
    }
    if (strcmp(w, "plugin-mismatch") == 0) {
        const struct ncd__proc *with = NULL, *without = NULL, *n1 = NULL,
                               *n2 = NULL;
        for (size_t i = 0; i < ex->nprocs; i++) {
            const struct ncd__proc *p = &ex->procs[i];
            if (p->plugin == 2 && !with)
                with = p;
            if (p->plugin == 1 && !without)
                without = p;
            /* IB vs Socket is a fallback (ib-fallback), not a plugin */
            int builtin = strcmp(p->net, "IB") == 0 || strcmp(p->net, "Socket") == 0;
            if (p->net[0]) {
                if (!n1)
                    n1 = p;
                else if (!n2 && strcmp(n1->net, p->net) != 0 &&
                         !(builtin && (strcmp(n1->net, "IB") == 0 ||
                                       strcmp(n1->net, "Socket") == 0)))
                    n2 = p;
            }
        }
        if (!(with && without) && !n2)
            return 0;
        struct hit *h = hit_new(hs, ex, ri);
        if (!h)
            return NCD_ENOMEM;
        if (with && without) {
            snprintf(buf, sizeof buf,
                     "%s loads the net plugin %s, %s finds none",
                     with->host[0] ? with->host : "one process",
                     with->plugin_name[0] ? with->plugin_name : "", 
                     without->host[0] ? without->host : "another");
            hit_ev(h, "%s:%llu: %s (pid %ld): net plugin %s",
                   ncd__src_name(ex, with->src), (unsigned long long)with->plugin_line,
                   with->host, with->pid,
                   with->plugin_name[0] ? with->plugin_name : "loaded");
            hit_ev(h, "%s:%llu: %s (pid %ld): no net plugin, internal network used",
                   ncd__src_name(ex, without->src),
                   (unsigned long long)without->plugin_line, without->host,
                   without->pid);
        } else {
            snprintf(buf, sizeof buf, "%s uses network %s, %s uses %s",
                     n1->host, n1->net, n2->host, n2->net);
            hit_ev(h, "%s:%llu: %s (pid %ld): Using network %s",
                   ncd__src_name(ex, n1->src), (unsigned long long)n1->net_line,
                   n1->host, n1->pid, n1->net);
            hit_ev(h, "%s:%llu: %s (pid %ld): Using network %s",
                   ncd__src_name(ex, n2->src), (unsigned long long)n2->net_line,
                   n2->host, n2->pid, n2->net);
        }
        hit_var(h, "detail", buf);
        h->seq = 0;
        return 1;
    }
    if (strcmp(w, "hosts-merged") == 0) {
        for (size_t i = 0; i < ex->nhosts; i++) {
            const struct ncd__host *p = &ex->hosts[i];
            if (!p->dev_conflict || p->ndevs_seen < 2)
                continue;
            struct hit *h = hit_new(hs, ex, ri);
            if (!h)
                return NCD_ENOMEM;
            /* from 2.18 "[n]" is the NVML index, unique per machine; before,
             * it was the CUDA index, which per-process CUDA_VISIBLE_DEVICES
             * can repeat: then this is only likely */
            int nvml = 0;
            for (size_t k = 0; k < ex->nprocs; k++)
                if (strcmp(ex->procs[k].host, p->name) == 0 &&
                    ex->procs[k].vcode >= 21800)
                    nvml = 1;
            if (!nvml)
                h->sev = NCD_SEV_WARNING;
            char a[16], b[16], d[16];
            snprintf(a, sizeof a, "%d", p->conflict_r1);
            snprintf(b, sizeof b, "%d", p->conflict_r2);
            snprintf(d, sizeof d, "%d", p->conflict_dev);
            hit_var(h, "rank1", a);
            hit_var(h, "rank2", b);
            hit_var(h, "dev", d);
            hit_var(h, "host", p->name);
            hit_ev(h, "%s:%llu: ranks %s and %s both use GPU %s and are "
                      "connected through P2P/SHM as if on one host (%s)",
                   ncd__src_name(ex, p->conflict_src),
                   (unsigned long long)p->conflict_line, a, b, d, p->name);
            h->seq = 0;
            return 1;
        }
        return 0;
    }
    if (strcmp(w, "consumer-gpu-p2p") == 0) {
        const char *dis = env_get(ex, "NCCL_P2P_DISABLE", NULL);
        if ((dis && strcmp(dis, "1") == 0) || ex->tests_ok)
            return 0; /* P2P off, or the run verified its results */
        unsigned long long p2p = 0, shm = 0;
        for (size_t i = 0; i < ex->nprocs; i++) {
            p2p += ex->procs[i].t_p2p;
            shm += ex->procs[i].t_shm;
        }
        if (shm && !p2p)
            return 0; /* NCCL already went through shared memory */
        pcre2_match_data *md = pcre2_match_data_create(4, NULL);
        if (!md)
            return NCD_ENOMEM;
        int found = 0;
        for (size_t i = 0; i < ex->ngpus && !found; i++) {
            const struct ncd__gpu *g = &ex->gpus[i];
            int hitname = 0;
            for (size_t k = 0; k < r->npats && !hitname; k++)
                hitname = pcre2_match(ex->rules->pats[r->pat0 + k].re,
                                      (PCRE2_SPTR)g->name, strlen(g->name), 0,
                                      0, md, NULL) >= 0;
            if (!hitname)
                continue;
            size_t same = 0;
            for (size_t j = 0; j < ex->ngpus; j++)
                same += strcmp(ex->gpus[j].host, g->host) == 0;
            if (same < 2)
                continue;
            struct hit *h = hit_new(hs, ex, ri);
            if (!h)
                break;
            hit_var(h, "gpu", g->name);
            hit_var(h, "host", g->host);
            for (size_t j = 0; j < ex->ngpus && h->nev < 4; j++)
                if (strcmp(ex->gpus[j].host, g->host) == 0)
                    hit_ev(h, "%s:%llu: rank %d on %s device %d: %s",
                           ncd__src_name(ex, ex->gpus[j].src),
                           (unsigned long long)ex->gpus[j].line,
                           ex->gpus[j].rank, ex->gpus[j].host, ex->gpus[j].dev,
                           ex->gpus[j].name);
            h->seq = 0;
            found = 1;
        }
        pcre2_match_data_free(md);
        return found;
    }
    if (strcmp(w, "tests-header-mismatch") == 0) {
        /* codes are M*10000+m*100+p (2.9+) or M*1000+m*100+p (older) */
        long a = ex->tests_hdr_code, b = ex->tests_lib_code;
        if (!a || !b || a / 100 == b / 100)
            return 0;
        struct hit *h = hit_new(hs, ex, ri);
        if (!h)
            return NCD_ENOMEM;
        char hv[24], lv[24];
        snprintf(hv, sizeof hv, "%ld.%ld.%ld", a >= 10000 ? a / 10000 : a / 1000,
                 a >= 10000 ? a / 100 % 100 : a / 100 % 10, a % 100);
        snprintf(lv, sizeof lv, "%ld.%ld.%ld", b >= 10000 ? b / 10000 : b / 1000,
                 b >= 10000 ? b / 100 % 100 : b / 100 % 10, b % 100);
        hit_var(h, "headers", hv);
        hit_var(h, "library", lv);
        hit_ev(h, "%s:%llu: nccl-tests built with NCCL %s headers, running with libnccl %s",
               ncd__src_name(ex, ex->tests_src), (unsigned long long)ex->tests_line, hv, lv);
        h->seq = 0;
        return 1;
    }
    if (strcmp(w, "socket-multinode") == 0) {
        /* several nodes talking over TCP: fine on Ethernet-only clusters,
         * slow where RDMA exists (ib-fallback covers the evident cases) */
        for (size_t k = 0; k < hs->n; k++)
            if (strcmp(ex->rules->v[hs->v[k].rule].id, "net.ib-fallback") == 0)
                return 0;
        for (size_t i = 0; i < ex->nprocs; i++) {
            const struct ncd__proc *p = &ex->procs[i];
            if (strcmp(p->net, "Socket") != 0 || p->nnodes < 2)
                continue;
            struct hit *h = hit_new(hs, ex, ri);
            if (!h)
                return NCD_ENOMEM;
            char nn[16];
            snprintf(nn, sizeof nn, "%d", p->nnodes);
            hit_var(h, "nnodes", nn);
            proc_where(p, where, sizeof where);
            hit_ev(h, "%s:%llu: %s: Using network Socket with %d nodes",
                   ncd__src_name(ex, p->src), (unsigned long long)p->net_line, where,
                   p->nnodes);
            h->seq = p->net_line;
            return 1;
        }
        return 0;
    }
    if (strcmp(w, "env-slow-settings") == 0) {
        static const struct {
            const char *name, *value;
        } slow[] = {{"NCCL_P2P_DISABLE", "1"},  {"NCCL_SHM_DISABLE", "1"},
                    {"NCCL_IB_DISABLE", "1"},   {"NCCL_NET_GDR_LEVEL", "LOC"},
                    {"NCCL_NVLS_ENABLE", "0"},  {"NCCL_CUMEM_ENABLE", "0"},
                    {"NCCL_P2P_LEVEL", "LOC"},  {"NCCL_MAX_NCHANNELS", "1"},
                    {"NCCL_ALGO", "Ring"},      {"NCCL_PROTO", "Simple"}};
        char list[256] = "";
        const struct ncd__env *first = NULL;
        for (size_t k = 0; k < sizeof slow / sizeof slow[0]; k++) {
            const struct ncd__env *e = NULL;
            const char *v = env_get(ex, slow[k].name, &e);
            if (!v || strcmp(v, slow[k].value) != 0)
                continue;
            size_t l = strlen(list);
            snprintf(list + l, sizeof list - l, "%s%s=%s", l ? ", " : "", slow[k].name, v);
            if (!first)
                first = e;
        }
        if (!first)
            return 0;
        struct hit *h = hit_new(hs, ex, ri);
        if (!h)
            return NCD_ENOMEM;
        hit_var(h, "settings", list);
        hit_ev(h, "%s:%llu: NCCL echoed %s", ncd__src_name(ex, first->src),
               (unsigned long long)first->line, list);
        h->seq = first->seq;
        return 1;
    }
    if (strcmp(w, "error-trail") == 0) {
        /* NCCL logged a failure trail but no WARN we could read: the file
         * of the deepest frame names the subsystem (reference B7, end). */
        static const char *const results[] = {
            "ncclSuccess",          "ncclUnhandledCudaError", "ncclSystemError",
            "ncclInternalError",    "ncclInvalidArgument",    "ncclInvalidUsage",
            "ncclRemoteError",      "ncclInProgress"};
        if (other_roots || !ex->trail_file[0] || ex->trail_code <= 0)
            return 0;
        struct hit *h = hit_new(hs, ex, ri);
        if (!h)
            return NCD_ENOMEM;
        char code[40];
        snprintf(code, sizeof code, "%s (%d)",
                 ex->trail_code < 8 ? results[ex->trail_code] : "error",
                 ex->trail_code);
        h->cat = ncd__category_for_src(ex->trail_file, strlen(ex->trail_file));
        hit_var(h, "file", ex->trail_file);
        hit_var(h, "result", code);
        hit_ev(h, "%s:%llu: %s", ncd__src_name(ex, ex->trail_src),
               (unsigned long long)ex->trail_line, ex->trail_text);
        h->seq = ex->trail_seq;
        return 1;
    }
    if (strncmp(w, "init-hang-", 10) == 0) {
        if (other_roots)
            return 0;
        int want = strcmp(w + 10, "nvls") == 0        ? PH_NVLS
                   : strcmp(w + 10, "bootstrap") == 0 ? PH_BOOTSTRAP
                                                      : PH_CONNECT;
        for (size_t i = 0; i < ex->nprocs; i++) {
            const struct ncd__proc *p = &ex->procs[i];
            if (p->ncomplete || p->nwarn || p->phase != want)
                continue;
            struct hit *h = hit_new(hs, ex, ri);
            if (!h)
                return NCD_ENOMEM;
            proc_where(p, where, sizeof where);
            hit_var(h, "host", p->host);
            hit_var(h, "where", where);
            if (p->phase_line && p->phase_line != p->last_line)
                hit_ev(h, "%s:%llu: %s entered this phase: %s",
                       ncd__src_name(ex, p->src),
                       (unsigned long long)p->phase_line, where, p->phase_text);
            else if (p->phase_line)
                hit_ev(h, "%s:%llu: %s: %s", ncd__src_name(ex, p->src),
                       (unsigned long long)p->phase_line, where, p->phase_text);
            hit_ev(h, "%s:%llu: the last NCCL line of %s; no 'Init COMPLETE' "
                      "and no WARN follow",
                   ncd__src_name(ex, p->last_src),
                   (unsigned long long)p->last_line, where);
            h->seq = p->last_seq;
            return 1;
        }
        return 0;
    }
    if (strcmp(w, "env-level-value") == 0) {
        static const char *const vars[] = {"NCCL_P2P_LEVEL",
                                           "NCCL_NET_GDR_LEVEL", NULL};
        static const char *const ok[] = {"LOC", "NVL", "NVB", "C2C", "PIX",
                                         "PXB", "P2C", "PXN", "PHB", "SYS",
                                         NULL};
        for (size_t i = 0; vars[i]; i++) {
            const struct ncd__env *e = NULL;
            const char *v = env_get(ex, vars[i], &e);
            if (!v || (v[0] >= '0' && v[0] <= '9'))
                continue;
            int good_v = 0;
            for (size_t k = 0; ok[k]; k++)
                good_v |= strcmp(ok[k], v) == 0;
            if (good_v)
                continue;
            struct hit *h = hit_new(hs, ex, ri);
            if (!h)
                return NCD_ENOMEM;
            hit_var(h, "name", vars[i]);
            hit_var(h, "value", v);
            hit_ev(h, "%s:%llu: %s set by environment to %s",
                   ncd__src_name(ex, e->src), (unsigned long long)e->line,
                   vars[i], v);
            h->seq = e->seq;
            return 1;
        }
        return 0;
    }
    if (strcmp(w, "watchdog-desync") == 0 || strcmp(w, "watchdog-missing") == 0) {
        if (ex->nwd < 2)
            return 0;
        /* ranks timed out in different collectives: they desynchronised */
        const struct ncd__wd *a = &ex->wd[0], *b = NULL;
        for (size_t i = 1; i < ex->nwd && !b; i++)
            if (ex->wd[i].seq != a->seq || strcmp(ex->wd[i].op, a->op) != 0)
                b = &ex->wd[i];
        if (w[9] == 'd') {
            if (!b)
                return 0;
            struct hit *h = hit_new(hs, ex, ri);
            if (!h)
                return NCD_ENOMEM;
            snprintf(buf, sizeof buf, "rank %d in %s #%ld, rank %d in %s #%ld", a->rank,
                     a->op, a->seq, b->rank, b->op, b->seq);
            hit_var(h, "detail", buf);
            hit_ev(h, "%s:%llu: rank %d timed out in %s (SeqNum %ld)",
                   ncd__src_name(ex, a->src), (unsigned long long)a->line, a->rank,
                   a->op, a->seq);
            hit_ev(h, "%s:%llu: rank %d timed out in %s (SeqNum %ld)",
                   ncd__src_name(ex, b->src), (unsigned long long)b->line, b->rank,
                   b->op, b->seq);
            h->seq = 0;
            return 1;
        }
        /* all in the same collective: a rank missing from the reports is
         * the one that never arrived */
        if (b)
            return 0;
        int maxr = -1;
        for (size_t i = 0; i < ex->nwd; i++)
            if (ex->wd[i].rank > maxr)
                maxr = ex->wd[i].rank;
        for (size_t i = 0; i < ex->nprocs; i++) /* world size from NCCL */
            if (ex->procs[i].nranks - 1 > maxr && ex->procs[i].nranks <= 65536)
                maxr = ex->procs[i].nranks - 1;
        if (maxr < 1 || maxr > 65535)
            return 0;
        unsigned char *seen = calloc((size_t)maxr + 1, 1);
        if (!seen)
            return NCD_ENOMEM;
        for (size_t i = 0; i < ex->nwd; i++)
            seen[ex->wd[i].rank] = 1;
        char missing[128] = "";
        int nmiss = 0;
        for (int r2 = 0; r2 <= maxr; r2++)
            if (!seen[r2]) {
                size_t l = strlen(missing);
                if (nmiss < 8)
                    snprintf(missing + l, sizeof missing - l, "%s%d", nmiss ? ", " : "", r2);
                nmiss++;
            }
        free(seen);
        if (!nmiss || nmiss * 2 > maxr + 1)
            return 0; /* most reports missing: these are excerpts */
        struct hit *h = hit_new(hs, ex, ri);
        if (!h)
            return NCD_ENOMEM;
        char seqs[32];
        snprintf(seqs, sizeof seqs, "%ld", a->seq);
        hit_var(h, "missing", missing);
        hit_var(h, "op", a->op);
        hit_var(h, "seqnum", seqs);
        hit_ev(h, "%s:%llu: %zu ranks report a time-out in %s (SeqNum %ld); rank%s %s do%s not",
               ncd__src_name(ex, a->src), (unsigned long long)a->line, ex->nwd, a->op,
               a->seq, nmiss > 1 ? "s" : "", missing, nmiss > 1 ? "" : "es");
        h->seq = 0;
        return 1;
    }
    if (strcmp(w, "env-differs") == 0) {
        /* the same NCCL_* variable echoed with different values by
         * different processes; per-host names may legitimately differ */
        static const char *const per_host[] = {
            "NCCL_SOCKET_IFNAME", "NCCL_IB_HCA", "NCCL_OOB_NET_IFNAME",
            "NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE",
            "NCCL_HOSTID", "NCCL_TOPO_FILE", "NCCL_TOPO_DUMP_FILE",
            "NCCL_GRAPH_DUMP_FILE", "NCCL_COMM_ID", "NCCL_IB_GID_INDEX",
            "NCCL_CONF_FILE", NULL};
        for (size_t i = 0; i < ex->nenv; i++)
            for (size_t j = i + 1; j < ex->nenv; j++) {
                const struct ncd__env *a = &ex->env[i], *b = &ex->env[j];
                if (strcmp(a->name, b->name) != 0 || strcmp(a->value, b->value) == 0)
                    continue;
                int skip = 0;
                for (size_t k = 0; per_host[k] && !skip; k++)
                    skip = strcmp(per_host[k], a->name) == 0;
                if (skip)
                    continue;
                struct hit *h = hit_new(hs, ex, ri);
                if (!h)
                    return NCD_ENOMEM;
                hit_var(h, "name", a->name);
                snprintf(buf, sizeof buf, "%s on %s, %s on %s", a->value,
                         a->host[0] ? a->host : "one process", b->value,
                         b->host[0] ? b->host : "another");
                hit_var(h, "values", buf);
                hit_ev(h, "%s:%llu: %s set by environment to %s", ncd__src_name(ex, a->src),
                       (unsigned long long)a->line, a->name, a->value);
                hit_ev(h, "%s:%llu: %s set by environment to %s", ncd__src_name(ex, b->src),
                       (unsigned long long)b->line, b->name, b->value);
                h->seq = b->seq;
                return 1;
            }
        return 0;
    }
    if (strcmp(w, "env-ib-range") == 0) {
        /* NCCL passes both straight to ibv_modify_qp (nccl-facts.md §5):
         * retry_cnt is a 3-bit field, timeout 5 bits with 0 = infinite */
        const struct ncd__env *e = NULL;
        const char *v = env_get(ex, "NCCL_IB_RETRY_CNT", &e);
        const char *why = NULL, *name = NULL;
        if (v && (atol(v) > 7 || atol(v) < 0)) {
            name = "NCCL_IB_RETRY_CNT";
            why = "the InfiniBand retry count is a 3-bit field (0-7); larger values are "
                  "invalid for the NIC";
        } else if ((v = env_get(ex, "NCCL_IB_TIMEOUT", &e)) &&
                   (atol(v) >= 32 || (atol(v) == 0 && v[0] == '0'))) {
            name = "NCCL_IB_TIMEOUT";
            why = "0 or values of 32 and more mean an infinite transport timeout: a dead "
                  "peer or link then hangs the job instead of failing it";
        }
        if (!name)
            return 0;
        struct hit *h = hit_new(hs, ex, ri);
        if (!h)
            return NCD_ENOMEM;
        hit_var(h, "name", name);
        hit_var(h, "value", v);
        hit_var(h, "why", why);
        hit_ev(h, "%s:%llu: %s set by environment to %s", ncd__src_name(ex, e->src),
               (unsigned long long)e->line, name, v);
        h->seq = e->seq;
        return 1;
    }
    if (strcmp(w, "env-ifname-ignored") == 0) {
        static const char *const vars[] = {"NCCL_SOCKET_IFNAME", "NCCL_IB_HCA",
                                           "NCCL_OOB_NET_IFNAME", NULL};
        for (size_t i = 0; vars[i]; i++) {
            const struct ncd__env *e = NULL;
            const char *v = env_get(ex, vars[i], &e);
            if (!v)
                continue;
            const char *why = NULL;
            if (strlen(v) <= 1)
                why = "a value of one character or less is ignored by NCCL, "
                      "so automatic selection runs";
            else if (strchr(v, ' '))
                why = "NCCL does not trim blanks: a token with a space never "
                      "matches an interface";
            if (!why)
                continue;
            struct hit *h = hit_new(hs, ex, ri);
            if (!h)
                return NCD_ENOMEM;
            hit_var(h, "name", vars[i]);
            hit_var(h, "value", v);
            hit_var(h, "why", why);
            hit_ev(h, "%s:%llu: %s set by environment to '%s'",
                   ncd__src_name(ex, e->src), (unsigned long long)e->line,
                   vars[i], v);
            h->seq = e->seq;
            return 1;
        }
        return 0;
    }
    if (strcmp(w, "gdr-off") == 0) {
        for (size_t i = 0; i < ex->nprocs; i++) {
            const struct ncd__proc *p = &ex->procs[i];
            if (!p->gdr_off || p->gdr_on || !p->nib)
                continue;
            struct hit *h = hit_new(hs, ex, ri);
            if (!h)
                return NCD_ENOMEM;
            proc_where(p, where, sizeof where);
            hit_var(h, "host", p->host);
            hit_ev(h, "%s: GPU Direct RDMA Disabled for every HCA (%s)", where,
                   p->ib[0]);
            h->seq = p->last_seq;
            return 1;
        }
        return 0;
    }
    return 0;
}

/* ----------------------------------------------------------- templates */

static const char *lookup(const struct hit *h, const struct ncd__rec *rec,
                          const char *name, size_t nl)
{
    for (size_t i = 0; i < h->nv; i++)
        if (strlen(h->vn[i]) == nl && memcmp(h->vn[i], name, nl) == 0)
            return h->vv[i];
    if (rec)
        for (size_t i = 0; i < rec->ncaps; i++)
            if (strlen(rec->cap_name[i]) == nl &&
                memcmp(rec->cap_name[i], name, nl) == 0)
                return rec->cap_val[i];
    return NULL;
}

/* "{name}" and "{name|default}" from the hit's variables / captures. */
static char *expand(const char *tpl, const struct hit *h,
                    const struct ncd__rec *rec)
{
    struct ncd_strbuf sb = {0};
    for (const char *p = tpl; *p; p++) {
        if (*p == '{') {
            const char *e = strchr(p, '}');
            const char *bar = e ? memchr(p, '|', (size_t)(e - p)) : NULL;
            size_t nl = (size_t)((bar ? bar : e ? e : p) - p - 1);
            if (e && nl > 0 && nl < 40) {
                const char *v = lookup(h, rec, p + 1, nl);
                if (v && *v)
                    ncd_sb_puts(&sb, v);
                else if (bar)
                    ncd_sb_add(&sb, bar + 1, (size_t)(e - bar - 1));
                else
                    ncd_sb_add(&sb, p, (size_t)(e - p + 1));
                p = e;
                continue;
            }
        }
        ncd_sb_putc(&sb, *p);
    }
    /* YAML folded text ends with a newline */
    while (sb.len && sb.buf[sb.len - 1] == '\n')
        sb.buf[--sb.len] = '\0';
    if (sb.oom) {
        ncd_sb_release(&sb);
        return NULL;
    }
    return ncd_sb_detach(&sb);
}

/* ----------------------------------------------------------- ranking */

static int group_of(const struct hit *h)
{
    if (h->sev <= NCD_SEV_INFO || h->role == NCD_ROLE_CONTEXT)
        return 3;
    if (h->role == NCD_ROLE_ROOT)
        return 0;
    if (h->role == NCD_ROLE_WRAPPER)
        return 1;
    return 2;
}

/* Time stamps first; without them, across different inputs (per-rank
 * logs) the lower rank, else input order. */
static int earlier(const struct hit *a, const struct hit *b)
{
    if (a->ts >= 0 && b->ts >= 0 && a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    if (a->ts < 0 && b->ts < 0 && a->rec && b->rec && a->rec->nev &&
        b->rec->nev && a->rec->ev[0].src != b->rec->ev[0].src &&
        a->rec->ev[0].rank >= 0 && b->rec->ev[0].rank >= 0 &&
        a->rec->ev[0].rank != b->rec->ev[0].rank)
        return a->rec->ev[0].rank < b->rec->ev[0].rank ? -1 : 1;
    if (a->seq != b->seq)
        return a->seq < b->seq ? -1 : 1;
    return 0;
}

static int cmp_hits(const void *x, const void *y)
{
    const struct hit *a = x, *b = y;
    int ga = group_of(a), gb = group_of(b);
    if (ga != gb)
        return ga - gb;
    if (a->sev != b->sev)
        return (int)b->sev - (int)a->sev;
    int e = earlier(a, b);
    if (e)
        return e;
    return a->rule < b->rule ? -1 : a->rule > b->rule;
}

static int emit(struct ncd_explain *ex, const struct hit *h,
                struct ncd_findings *out)
{
    const struct ncd__rule *r = &ex->rules->v[h->rule];
    const struct ncd__rec *rec = h->rec;
    char *title = expand(r->title, h, rec);
    if (!title)
        return NCD_ENOMEM;
    struct ncd_finding *f = ncd_findings_add(out, r->id, h->cat, h->sev, "%s",
                                             title);
    free(title);
    if (!f)
        return NCD_ENOMEM;
    for (size_t i = 0; i < h->nev; i++)
        ncd_finding_evidence(f, "%s", h->ev[i]);
    if (rec) {
        for (size_t i = 0; i < rec->nev; i++) {
            const struct ncd__evid *e = &rec->ev[i];
            if (e->rank >= 0 && !strstr(e->text, "rank"))
                ncd_finding_evidence(f, "%s:%llu: [rank %d] %s",
                                     ncd__src_name(ex, e->src),
                                     (unsigned long long)e->line, e->rank,
                                     e->text);
            else
                ncd_finding_evidence(f, "%s:%llu: %s",
                                     ncd__src_name(ex, e->src),
                                     (unsigned long long)e->line, e->text);
        }
        if (rec->count > rec->nev) {
            if (rec->nhosts > 1)
                ncd_finding_evidence(f, "... %llu matching lines in all, on %s%zu hosts",
                                     (unsigned long long)rec->count,
                                     rec->nhosts > 4 ? "more than " : "",
                                     rec->nhosts > 4 ? (size_t)4 : rec->nhosts);
            else
                ncd_finding_evidence(f, "... %llu matching lines in all",
                                     (unsigned long long)rec->count);
        }
    }
    char *c = expand(r->cause, h, rec), *x = expand(r->fix, h, rec);
    if (c)
        ncd_finding_cause(f, "%s", c);
    if (x)
        ncd_finding_fix(f, "%s", x);
    free(c);
    free(x);
    /* NCCL ignores NCCL_IB_GID_INDEX on InfiniBand link layer ports
     * (nccl-facts.md §4): drop the suggestion when every port NCCL listed
     * is /IB. */
    int ib_only = 0, roce = 0;
    for (size_t i = 0; i < ex->nprocs; i++) {
        ib_only += ex->procs[i].ib_ib;
        roce += ex->procs[i].ib_roce;
    }
    ib_only = ib_only > 0 && roce == 0;
    for (size_t i = 0; i < r->nenv; i++) {
        if (ib_only && strcmp(r->env_names[i], "NCCL_IB_GID_INDEX") == 0)
            continue;
        /* NCCL_DEBUG=INFO is advice for logs that lack INFO lines */
        if (ex->info_lines && strcmp(r->env_names[i], "NCCL_DEBUG") == 0)
            continue;
        char *v = r->env_vals[i] ? expand(r->env_vals[i], h, rec) : NULL;
        char *nm = expand(r->env_names[i], h, rec); /* "{name}": ~ works */
        /* a value the logs could not determine ("<the interface ...>")
         * stays in the fix text: never suggest exporting a placeholder */
        int placeholder = v && v[0] == '<';
        if (nm && nm[0] && !strchr(nm, '{') && !placeholder)
            ncd_finding_env(f, nm, v);
        free(nm);
        free(v);
    }
    return 0;
}

int ncd_explain_finish(struct ncd_explain *ex, struct ncd_findings *out)
{
    const struct ncd_rules *R = ex->rules;
    struct hits hs = {0};
    int rc = 0;
    if (ex->finished)
        return ncd_fail(ex->ctx, NCD_EINVAL, "explain: finish called twice");
    if (ex->open)
        ncd_explain_end(ex);

    /* 1. pattern rules that matched */
    for (size_t i = 0; i < R->n; i++) {
        if (R->v[i].when || !ex->recs[i].count)
            continue;
        struct hit *h = hit_new(&hs, ex, i);
        if (!h) {
            rc = NCD_ENOMEM;
            goto out;
        }
        h->rec = &ex->recs[i];
        hit_from_rec(h, h->rec);
    }
    /* 2. unknown WARNs, one finding per category */
    long uw = -1;
    for (size_t i = 0; i < R->n; i++)
        if (R->v[i].when && strcmp(R->v[i].when, "unmatched-warn") == 0)
            uw = (long)i;
    for (int c = 0; uw >= 0 && c < NCD_CAT__COUNT; c++) {
        if (!ex->unmatched[c].count)
            continue;
        struct hit *h = hit_new(&hs, ex, (size_t)uw);
        if (!h) {
            rc = NCD_ENOMEM;
            goto out;
        }
        h->rec = &ex->unmatched[c];
        h->cat = (enum ncd_category)c;
        hit_from_rec(h, h->rec);
    }
    /* 3. derived conditions; hang conditions only when nothing else
     *    explains the failure */
    for (int pass = 0; pass < 2; pass++) {
        int other_roots = 0;
        for (size_t i = 0; i < hs.n; i++)
            other_roots |= hs.v[i].sev >= NCD_SEV_WARNING;
        for (size_t i = 0; i < R->n; i++) {
            const char *w = R->v[i].when;
            if (!w || strcmp(w, "unmatched-warn") == 0 ||
                strcmp(w, "nothing-found") == 0)
                continue;
            int late = strncmp(w, "init-hang-", 10) == 0 ||
                       strcmp(w, "error-trail") == 0;
            if (late != (pass == 1))
                continue;
            if ((rc = eval(ex, &hs, i, other_roots)) < 0)
                goto out;
        }
    }
    /* 4. absorption: a derived finding turns the matches it explains into
     *    consequences */
    for (size_t i = 0; i < hs.n; i++) {
        const struct ncd__rule *r = &R->v[hs.v[i].rule];
        if (!r->when || hs.v[i].no_absorb)
            continue;
        for (size_t a = 0; a < r->nabsorbs; a++)
            for (size_t j = 0; j < hs.n; j++)
                if (!R->v[hs.v[j].rule].when &&
                    strcmp(R->v[hs.v[j].rule].id, r->absorbs[a]) == 0 &&
                    hs.v[j].role != NCD_ROLE_CONTEXT)
                    hs.v[j].role = NCD_ROLE_CONSEQUENCE;
    }
    /* 5. nothing at all: say so, with what to do next */
    if (!hs.n) {
        for (size_t i = 0; i < R->n; i++)
            if (R->v[i].when && strcmp(R->v[i].when, "nothing-found") == 0) {
                struct hit *h = hit_new(&hs, ex, i);
                if (!h) {
                    rc = NCD_ENOMEM;
                    goto out;
                }
                char n[32];
                snprintf(n, sizeof n, "%llu", ex->nccl_lines);
                hit_var(h, "nccl_lines", n);
                snprintf(n, sizeof n, "%llu", ex->lines);
                hit_var(h, "lines", n);
                h->seq = 0;
            }
    }
    {
        char good[96];
        good_iface(ex, good, sizeof good);
        for (size_t i = 0; i < hs.n; i++)
            hit_var(&hs.v[i], "good_iface", good); /* lookups take the first */
    }
    if (hs.n > 1)
        qsort(hs.v, hs.n, sizeof *hs.v, cmp_hits);
    free(ex->roles);
    free(ex->first_ts);
    free(ex->first_rank);
    ex->roles = calloc(hs.n ? hs.n : 1, sizeof *ex->roles);
    ex->first_ts = calloc(hs.n ? hs.n : 1, sizeof *ex->first_ts);
    ex->first_rank = calloc(hs.n ? hs.n : 1, sizeof *ex->first_rank);
    if (!ex->roles || !ex->first_ts || !ex->first_rank) {
        rc = NCD_ENOMEM;
        goto out;
    }
    size_t base = out->n;
    for (size_t i = 0; i < hs.n; i++) {
        if ((rc = emit(ex, &hs.v[i], out)) < 0)
            goto out;
        ex->roles[i] = hs.v[i].role;
        ex->first_ts[i] = hs.v[i].ts;
        ex->first_rank[i] = hs.v[i].rec && hs.v[i].rec->nev ? hs.v[i].rec->ev[0].rank : -1;
    }
    ex->nroles = hs.n;
    rc = (int)(out->n - base);
out:
    hits_release(&hs);
    ex->finished = 1;
    return rc;
}

enum ncd_rule_role ncd_explain_role(const struct ncd_explain *ex, size_t i)
{
    return ex->roles && i < ex->nroles ? ex->roles[i] : NCD_ROLE_CONTEXT;
}

int ncd_explain_first_seen(const struct ncd_explain *ex, size_t i, double *ts,
                           int *rank)
{
    if (!ex->roles || i >= ex->nroles)
        return NCD_EINVAL;
    if (ts)
        *ts = ex->first_ts[i];
    if (rank)
        *rank = ex->first_rank[i];
    return 0;
}
