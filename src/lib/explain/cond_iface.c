/* SPDX-License-Identifier: MIT */
/*
 * Conditions on the interfaces NCCL bootstraps and connects on
 * (nccl-facts.md §1): link-local or loopback addresses, virtual
 * interfaces, Docker's bridge network, NCCL_SOCKET_IFNAME matching nothing.
 */
#define _GNU_SOURCE
#include "explain/reason.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncd/error.h"

enum iface_mode { IF_LINKLOCAL, IF_VIRTUAL, IF_WRONG_CONNECT };

static const char placeholder[] = "<the interface that reaches the other nodes>";

/* The interface of process p this condition is about, or NULL; `what`
 * says where NCCL uses it. */
static const struct ncd__iface *suspect(const struct ncd__proc *p,
                                        enum iface_mode mode,
                                        const char **what)
{
    if (mode == IF_LINKLOCAL) {
        if (p->nboot && (ncd__addr_linklocal(p->boot[0].addr) ||
                         ncd__addr_loopback(p->boot[0].name, p->boot[0].addr))) {
            *what = !ncd__addr_linklocal(p->boot[0].addr) ? "loopback"
                    : strchr(p->boot[0].addr, ':') ? "IPv6 link-local"
                                                   : "IPv4 link-local";
            return &p->boot[0];
        }
        return NULL;
    }
    *what = "bootstrap";
    if (mode == IF_WRONG_CONNECT)
        return p->nboot && ncd__ifname_virtual(p->boot[0].name) ? &p->boot[0]
                                                                : NULL;
    for (int k = 0; k < p->nsock; k++)
        if (ncd__ifname_virtual(p->sock[k].name) ||
            ncd__addr_linklocal(p->sock[k].addr) ||
            ncd__addr_loopback(p->sock[k].name, p->sock[k].addr)) {
            *what = "NET/Socket";
            return &p->sock[k];
        }
    for (int k = 1; k < p->nboot; k++)
        if (ncd__ifname_virtual(p->boot[k].name) ||
            ncd__addr_linklocal(p->boot[k].addr))
            return &p->boot[k];
    if (p->nboot && ncd__ifname_virtual(p->boot[0].name))
        return &p->boot[0];
    return NULL;
}

/* One finding per interface: the strongest iface-* rule wins. */
static int iface_reported(const struct ncd__reason *rs, const char *name)
{
    for (size_t k = 0; k < rs->n; k++) {
        int c = rs->ex->rules->v[rs->v[k].rule].cond;
        if (c != NCD__COND_iface_linklocal && c != NCD__COND_iface_virtual &&
            c != NCD__COND_iface_wrong_connect)
            continue;
        for (size_t v = 0; v < rs->v[k].nv; v++)
            if (strcmp(rs->v[k].vn[v], "iface") == 0 &&
                strcmp(rs->v[k].vv[v], name) == 0)
                return 1;
    }
    return 0;
}

/* No Bootstrap line, but connections went to a link-local address:
 * "connect to fe80::...%ib1<port> failed". */
static int linklocal_peer(struct ncd__reason *rs, size_t rule)
{
    const struct ncd_explain *ex = rs->ex;
    const struct ncd__rec *cf = ncd__rec_of(ex, "socket.connect-failed");
    const char *peer = ncd__rec_cap(cf, "peer");
    if (!peer || !ncd__addr_linklocal(peer))
        return 0;
    char addr[64], ifn[32] = "";
    snprintf(addr, sizeof addr, "%.*s", (int)strcspn(peer, "<"), peer);
    const char *pc = strchr(addr, '%');
    if (pc)
        snprintf(ifn, sizeof ifn, "%s", pc + 1);
    struct ncd__hit *h = ncd__hit_new(rs, rule);
    if (!h)
        return NCD_ENOMEM;
    ncd__hit_var(h, "iface", ifn[0] ? ifn : "a link-local interface");
    ncd__hit_var(h, "addr", addr);
    ncd__hit_var(h, "host", cf->ev[0].host);
    ncd__hit_var(h, "what", strchr(addr, ':') ? "IPv6 link-local"
                                              : "IPv4 link-local");
    ncd__hit_var(h, "good_iface", rs->good_iface);
    ncd__hit_from_rec(h, cf);
    ncd__hit_ev_rec(ex, h, cf);
    return 1;
}

static int iface_cond(struct ncd__reason *rs, size_t rule, enum iface_mode mode)
{
    const struct ncd_explain *ex = rs->ex;
    const struct ncd__rec *conn = NULL;
    if (mode == IF_WRONG_CONNECT && !ncd__rec_absorbed(ex, rule, &conn))
        return 0;
    char good[96], where[96];
    snprintf(good, sizeof good, "%s", rs->good_iface);
    for (size_t i = 0; i < ex->nprocs; i++) {
        const struct ncd__proc *p = &ex->procs[i];
        if (p->nnodes == 1)
            continue; /* single node: any interface works */
        const char *what = "";
        const struct ncd__iface *f = suspect(p, mode, &what);
        if (!f || iface_reported(rs, f->name))
            continue;
        if (strcmp(good, f->name) == 0)
            snprintf(good, sizeof good, "%s", placeholder);
        struct ncd__hit *h = ncd__hit_new(rs, rule);
        if (!h)
            return NCD_ENOMEM;
        int socket = strcmp(what, "NET/Socket") == 0;
        ncd__proc_where(p, where, sizeof where);
        ncd__hit_var(h, "iface", f->name);
        ncd__hit_var(h, "addr", f->addr);
        ncd__hit_var(h, "host", p->host);
        ncd__hit_var(h, "what", what);
        ncd__hit_var(h, "good_iface", good);
        ncd__hit_ev(h, "%s:%llu: %s: NCCL uses %s %s for %s",
                    ncd__src_name(ex, p->src),
                    (unsigned long long)(socket ? p->sock_line : p->boot_line),
                    where, f->name, f->addr,
                    mode == IF_LINKLOCAL ? "the bootstrap" : what);
        if (mode == IF_VIRTUAL) {
            /* a listed virtual interface explains a connect failure only
             * when the failing address is that interface's */
            const struct ncd__rec *cf = ncd__rec_of(ex, "socket.connect-failed");
            const char *peer = ncd__rec_cap(cf, "peer");
            char pct[32];
            snprintf(pct, sizeof pct, "%%%s<", f->name);
            if (peer && f->addr[0] &&
                (strstr(peer, f->addr) || strstr(peer, pct))) {
                h->sev = NCD_SEV_ERROR;
                conn = cf;
            } else {
                h->no_absorb = 1;
            }
        }
        /* A loopback or link-local bootstrap breaks a job only when ranks
         * elsewhere must reach it: with no failed connection in the logs
         * it is a latent problem (one node, or nothing tried yet), and an
         * explicit error of the same job comes first. */
        if (mode == IF_LINKLOCAL && !ncd__rec_absorbed(ex, rule, NULL))
            h->sev = NCD_SEV_WARNING;
        if (conn) {
            ncd__hit_from_rec(h, conn);
            ncd__hit_ev_rec(ex, h, conn);
        } else {
            /* the interface choice is as old as the line that shows it */
            h->seq = socket ? p->sock_seq : p->boot_seq;
        }
        return 1;
    }
    return mode == IF_LINKLOCAL ? linklocal_peer(rs, rule) : 0;
}

int ncd__cond_iface_linklocal(struct ncd__reason *rs, size_t rule)
{
    return iface_cond(rs, rule, IF_LINKLOCAL);
}

int ncd__cond_iface_virtual(struct ncd__reason *rs, size_t rule)
{
    return iface_cond(rs, rule, IF_VIRTUAL);
}

int ncd__cond_iface_wrong_connect(struct ncd__reason *rs, size_t rule)
{
    return iface_cond(rs, rule, IF_WRONG_CONNECT);
}

/* Docker's default bridge network is 172.17.0.0/16: addresses there are
 * private to one host (NAT), and every host reuses them. */
int ncd__cond_container_bridge(struct ncd__reason *rs, size_t rule)
{
    const struct ncd_explain *ex = rs->ex;
    const struct ncd__rec *conn = NULL;
    int failing = ncd__rec_absorbed(ex, rule, &conn);
    const struct ncd__proc *first = NULL, *other = NULL;
    for (size_t i = 0; i < ex->nprocs; i++) {
        const struct ncd__proc *p = &ex->procs[i];
        /* docker0 itself is the host side: iface-wrong-connect's case */
        if (!p->nboot || strncmp(p->boot[0].addr, "172.17.", 7) != 0 ||
            ncd__ifname_virtual(p->boot[0].name) || p->nnodes == 1)
            continue;
        if (!first)
            first = p;
        else if (!other && strcmp(first->host, p->host) != 0)
            other = p;
    }
    if (!first || (!failing && !other))
        return 0;
    struct ncd__hit *h = ncd__hit_new(rs, rule);
    if (!h)
        return NCD_ENOMEM;
    char where[96];
    ncd__proc_where(first, where, sizeof where);
    ncd__hit_var(h, "iface", first->boot[0].name);
    ncd__hit_var(h, "addr", first->boot[0].addr);
    ncd__hit_var(h, "host", first->host);
    ncd__hit_ev(h, "%s:%llu: %s: bootstrap on %s %s (Docker bridge network)",
                ncd__src_name(ex, first->src),
                (unsigned long long)first->boot_line, where,
                first->boot[0].name, first->boot[0].addr);
    if (other) {
        ncd__proc_where(other, where, sizeof where);
        ncd__hit_ev(h, "%s:%llu: %s: bootstrap on %s %s",
                    ncd__src_name(ex, other->src),
                    (unsigned long long)other->boot_line, where,
                    other->boot[0].name, other->boot[0].addr);
    }
    if (conn) {
        ncd__hit_from_rec(h, conn);
        ncd__hit_ev_rec(ex, h, conn);
    } else {
        h->seq = 0;
    }
    return 1;
}

/* NCCL_SOCKET_IFNAME was set and NCCL found no interface matching it;
 * `blank`: only when its value holds a blank (1), only when not (0).
 * NCCL takes every byte between commas as part of a name and trims none
 * (src/misc/utils.cc parseStringList, 2.4..2.30), so "eth1, eth0" asks
 * for " eth0". */
static int ifname_none(struct ncd__reason *rs, size_t rule, int blank)
{
    const struct ncd_explain *ex = rs->ex;
    const struct ncd__env *e = NULL;
    const char *v = ncd__env_get(ex, "NCCL_SOCKET_IFNAME", &e);
    const struct ncd__rec *fail = NULL;
    if (!v || (strpbrk(v, " \t") != NULL) != blank ||
        !ncd__rec_absorbed(ex, rule, &fail))
        return 0;
    struct ncd__hit *h = ncd__hit_new(rs, rule);
    if (!h)
        return NCD_ENOMEM;
    ncd__hit_var(h, "value", v);
    if (blank) { /* the whole value, without its blanks */
        char *fixed = strdup(v);
        if (!fixed)
            return NCD_ENOMEM;
        size_t k = 0;
        for (const char *p = v; *p; p++)
            if (*p != ' ' && *p != '\t')
                fixed[k++] = *p;
        fixed[k] = '\0';
        ncd__hit_var(h, "fixed", fixed);
        free(fixed);
    }
    ncd__hit_var(h, "host", fail->ev[0].host[0] ? fail->ev[0].host : e->host);
    ncd__hit_var(h, "good_iface", rs->good_iface);
    ncd__hit_ev(h, "%s:%llu: NCCL_SOCKET_IFNAME set by environment to %s",
                ncd__src_name(ex, e->src), (unsigned long long)e->line, v);
    ncd__hit_ev_rec(ex, h, fail);
    ncd__hit_from_rec(h, fail);
    return 1;
}

int ncd__cond_ifname_no_match(struct ncd__reason *rs, size_t rule)
{
    return ifname_none(rs, rule, 0);
}

int ncd__cond_ifname_blank(struct ncd__reason *rs, size_t rule)
{
    return ifname_none(rs, rule, 1);
}
