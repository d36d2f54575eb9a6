/* SPDX-License-Identifier: MIT */
/*
 * Per-host facts compared across hosts: where the hosts of one job should
 * agree (same software, same kernel modules, same fabric state) the odd
 * host out is the one to fix.  Hosts are NCCL's (host:pid of the header);
 * where the header was stripped, ranks stand in for hosts.
 */
#define _GNU_SOURCE
#include "explain/reason.h"

#include <stdio.h>
#include <string.h>

#include "ncd/error.h"

/* Hosts (or ranks) that have a property, or lack it, with the line that
 * shows it for the first. */
#define GROUP_MAX 6
struct group {
    char nm[GROUP_MAX][48];
    size_t n; /* all members; the first GROUP_MAX are named */
    uint32_t src;
    uint64_t line;
};

static int group_has(const struct group *g, const char *name)
{
    for (size_t i = 0; i < g->n && i < GROUP_MAX; i++)
        if (strcmp(g->nm[i], name) == 0)
            return 1;
    return 0;
}

static void group_add(struct group *g, const char *name, uint32_t src,
                      uint64_t line)
{
    if (group_has(g, name))
        return; /* (beyond GROUP_MAX members a name may count twice) */
    if (!g->n) {
        g->src = src;
        g->line = line;
    }
    if (g->n < GROUP_MAX)
        snprintf(g->nm[g->n], sizeof g->nm[0], "%s", name);
    g->n++;
}

/* "node1, node2, ... (9)" */
static void group_names(const struct group *g, char *out, size_t osz)
{
    out[0] = '\0';
    for (size_t i = 0; i < g->n && i < GROUP_MAX; i++) {
        size_t l = strlen(out);
        snprintf(out + l, osz - l, "%s%s", i ? ", " : "", g->nm[i]);
    }
    if (g->n > GROUP_MAX) {
        size_t l = strlen(out);
        snprintf(out + l, osz - l, ", ... (%zu)", g->n);
    }
}

/* The hit of an odd-host-out rule: {with}, {without}, {what}. */
static int odd_hit(struct ncd__reason *rs, size_t rule, const struct group *with,
                   const struct group *without, const char *what,
                   const char *has, const char *lacks)
{
    const struct ncd_explain *ex = rs->ex;
    struct ncd__hit *h = ncd__hit_new(rs, rule);
    if (!h)
        return NCD_ENOMEM;
    char a[400], b[400];
    group_names(with, a, sizeof a);
    group_names(without, b, sizeof b);
    ncd__hit_var(h, "with", a);
    ncd__hit_var(h, "without", b);
    ncd__hit_var(h, "what", what);
    ncd__hit_ev(h, "%s:%llu: %s %s: %s", ncd__src_name(ex, with->src),
                (unsigned long long)with->line, what, a, has);
    ncd__hit_ev(h, "%s:%llu: %s %s: %s", ncd__src_name(ex, without->src),
                (unsigned long long)without->line, what, b, lacks);
    h->seq = 0; /* a property of the hosts, older than any failure */
    return 1;
}

/*
 * GPU Direct RDMA on some hosts and not on others: NCCL's GDR check needs
 * the peer-memory module (nvidia-peermem / nv_peer_mem) or DMA-BUF on that
 * host (src/transport/net_ib/gdr.cc); identical nodes differ only by it.
 * Without hosts, ranks are compared (a rank far from its NIC on PCI also
 * goes without GDR: said in the rule).
 */
int ncd__cond_peer_gdr_missing(struct ncd__reason *rs, size_t rule)
{
    const struct ncd_explain *ex = rs->ex;
    struct group hon = {0}, hoff = {0}, ron = {0}, roff = {0};
    int hosts_known = 1;
    /* hosts first: a host is "with" when any rank there uses GDR */
    for (size_t i = 0; i < ex->nprocs; i++) {
        const struct ncd__proc *p = &ex->procs[i];
        if (!p->host[0] || !(p->t_netgdr || p->gdr_on))
            continue;
        group_add(&hon, p->host, p->src,
                  p->t_netgdr ? p->last_line : p->ib_line);
    }
    for (size_t i = 0; i < ex->nprocs; i++) {
        const struct ncd__proc *p = &ex->procs[i];
        if (!p->host[0] || !(p->t_net || p->gdr_off) || p->t_netgdr ||
            p->gdr_on)
            continue;
        int other = group_has(&hon, p->host); /* GDR elsewhere on the host */
        for (size_t j = 0; j < ex->nprocs && !other && hon.n > GROUP_MAX; j++)
            other = strcmp(ex->procs[j].host, p->host) == 0 &&
                    (ex->procs[j].t_netgdr || ex->procs[j].gdr_on);
        if (!other)
            group_add(&hoff, p->host, p->src, p->last_line);
    }
    if (hon.n && hoff.n)
        return odd_hit(rs, rule, &hon, &hoff, "host",
                       "GPU Direct RDMA (GDRDMA) in use", "no GPU Direct RDMA");
    for (size_t i = 0; ex->rnet && i < NCD__RNET_SLOTS; i++) {
        const struct ncd__rnet *r = &ex->rnet[i];
        if (r->rank < 0)
            continue;
        hosts_known &= ex->procs[r->proc].host[0] != '\0';
        char nm[16];
        snprintf(nm, sizeof nm, "%d", r->rank);
        group_add(r->gdr ? &ron : &roff, nm, r->src, r->line);
    }
    if (hosts_known || !ron.n || !roff.n)
        return 0; /* with hosts, ranks of one host may differ by distance */
    int rc = odd_hit(rs, rule, &ron, &roff, "rank",
                     "GPU Direct RDMA (GDRDMA) in use", "no GPU Direct RDMA");
    if (rc > 0)
        rs->v[rs->n - 1].sev = NCD_SEV_WARNING;
    return rc;
}

/* NVLS multicast available on some hosts and not on others: Fabric
 * Manager / the NVSwitches of those hosts (src/transport/nvls.cc logs
 * "NVLS multicast support is [not ]available on dev N"). */
int ncd__cond_host_nvls_missing(struct ncd__reason *rs, size_t rule)
{
    const struct ncd_explain *ex = rs->ex;
    struct group on = {0}, off = {0};
    for (size_t i = 0; i < ex->nprocs; i++) {
        const struct ncd__proc *p = &ex->procs[i];
        if (p->host[0] && p->nvls == 1)
            group_add(&on, p->host, p->src, p->nvls_line);
    }
    for (size_t i = 0; i < ex->nprocs; i++) {
        const struct ncd__proc *p = &ex->procs[i];
        if (p->host[0] && p->nvls == 0 && !group_has(&on, p->host))
            group_add(&off, p->host, p->src, p->nvls_line);
    }
    if (!on.n || !off.n)
        return 0;
    return odd_hit(rs, rule, &on, &off, "host",
                   "NVLS multicast support is available",
                   "NVLS multicast support is not available");
}

/* The bootstrap interface differs between hosts (ib0 here, eth0 there)
 * and connections failed: NCCL picked per host (IPoIB first when there is
 * one), so the hosts may sit on different networks. */
int ncd__cond_host_iface_differs(struct ncd__reason *rs, size_t rule)
{
    const struct ncd_explain *ex = rs->ex;
    const struct ncd__rec *fail = NULL;
    if (!ncd__rec_absorbed(ex, rule, &fail))
        return 0;
    /* the interface most hosts use, and the hosts that use another */
    struct {
        char name[24];
        struct group hosts;
    } by[4];
    size_t nby = 0;
    for (size_t i = 0; i < ex->nprocs; i++) {
        const struct ncd__proc *p = &ex->procs[i];
        if (!p->host[0] || !p->nboot)
            continue;
        size_t k = 0;
        while (k < nby && strcmp(by[k].name, p->boot[0].name) != 0)
            k++;
        if (k == nby) {
            if (nby == 4)
                continue;
            memset(&by[nby], 0, sizeof by[nby]);
            snprintf(by[nby].name, sizeof by[0].name, "%s", p->boot[0].name);
            nby++;
        }
        group_add(&by[k].hosts, p->host, p->src, p->boot_line);
    }
    if (nby < 2)
        return 0;
    /* the most common; on a tie the one that is not IPoIB (Ethernet is
     * the network every node has) */
    size_t major = 0;
    for (size_t k = 1; k < nby; k++)
        if (by[k].hosts.n > by[major].hosts.n ||
            (by[k].hosts.n == by[major].hosts.n &&
             strncmp(by[major].name, "ib", 2) == 0 &&
             strncmp(by[k].name, "ib", 2) != 0))
            major = k;
    size_t minor = major == 0 ? 1 : 0;
    for (size_t k = 0; k < nby; k++)
        if (k != major && by[k].hosts.n < by[minor].hosts.n)
            minor = k;
    /* virtual, loopback or link-local choices are the iface-* rules' */
    for (size_t k = 0; k < nby; k++)
        if (ncd__ifname_virtual(by[k].name) || strcmp(by[k].name, "lo") == 0)
            return 0;
    char has[64], lacks[64];
    snprintf(has, sizeof has, "bootstrap on %s", by[major].name);
    snprintf(lacks, sizeof lacks, "bootstrap on %s", by[minor].name);
    int rc = odd_hit(rs, rule, &by[major].hosts, &by[minor].hosts, "host",
                     has, lacks);
    if (rc > 0) {
        struct ncd__hit *h = &rs->v[rs->n - 1];
        ncd__hit_var(h, "iface", by[major].name);
        ncd__hit_var(h, "other_iface", by[minor].name);
        ncd__hit_ev_rec(ex, h, fail);
        ncd__hit_from_rec(h, fail);
    }
    return rc;
}
