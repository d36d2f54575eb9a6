/* SPDX-License-Identifier: MIT */
/*
 * Conditions on the network transport NCCL ended up with: IB expected but
 * Socket used, GPU Direct RDMA off, several nodes over TCP.
 */
#define _GNU_SOURCE
#include "explain/reason.h"

#include <stdio.h>
#include <string.h>

#include "ncd/error.h"

/* A process could not load libibverbs or found no IB device, uses Socket,
 * and the job has RDMA hints. */
int ncd__cond_ib_fallback(struct ncd__reason *rs, size_t rule)
{
    const struct ncd_explain *ex = rs->ex;
    const char *dis = ncd__env_get(ex, "NCCL_IB_DISABLE", NULL);
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
        int hint = ipoib || any_ib || ncd__env_get(ex, "NCCL_IB_HCA", NULL) ||
                   p->plugin == 2;
        if (!socket || !hint)
            continue;
        struct ncd__hit *h = ncd__hit_new(rs, rule);
        if (!h)
            return NCD_ENOMEM;
        char where[96];
        ncd__proc_where(p, where, sizeof where);
        ncd__hit_var(h, "host", p->host);
        ncd__hit_var(h, "reason", p->ibverbs_missing
                                      ? "libibverbs could not be loaded"
                                      : "no active InfiniBand/RoCE port passed "
                                        "NCCL_IB_HCA (NET/IB : No device found)");
        ncd__hit_ev(h, "%s:%llu: %s: %s", ncd__src_name(ex, p->src),
                    (unsigned long long)p->ib_line, where,
                    p->ibverbs_missing ? "Failed to open libibverbs.so[.1]"
                                       : "NET/IB : No device found.");
        if (ipoib)
            ncd__hit_ev(h, "%s:%llu: %s: data goes over NET/Socket on %s (IPoIB)",
                        ncd__src_name(ex, p->src),
                        (unsigned long long)p->sock_line, where, ipoib);
        else
            ncd__hit_ev(h, "%s:%llu: %s: Using network Socket%s",
                        ncd__src_name(ex, p->src),
                        (unsigned long long)(p->net_line ? p->net_line
                                                         : p->sock_line),
                        where,
                        any_ib            ? " while other processes use IB"
                        : p->plugin == 2 ? " although an RDMA net plugin was loaded"
                                         : "");
        h->seq = p->ib_seq;
        return 1;
    }
    return 0;
}

/* IB in use with GPU Direct RDMA disabled for every HCA. */
int ncd__cond_gdr_off(struct ncd__reason *rs, size_t rule)
{
    const struct ncd_explain *ex = rs->ex;
    for (size_t i = 0; i < ex->nprocs; i++) {
        const struct ncd__proc *p = &ex->procs[i];
        if (!p->gdr_off || p->gdr_on || !p->nib)
            continue;
        struct ncd__hit *h = ncd__hit_new(rs, rule);
        if (!h)
            return NCD_ENOMEM;
        char where[96];
        ncd__proc_where(p, where, sizeof where);
        ncd__hit_var(h, "host", p->host);
        ncd__hit_ev(h, "%s: GPU Direct RDMA Disabled for every HCA (%s)", where,
                    p->ib[0]);
        h->seq = p->last_seq;
        return 1;
    }
    return 0;
}

/* Several nodes talking over TCP: fine on Ethernet-only clusters, slow
 * where RDMA exists (ib-fallback covers the evident cases). */
int ncd__cond_socket_multinode(struct ncd__reason *rs, size_t rule)
{
    const struct ncd_explain *ex = rs->ex;
    for (size_t k = 0; k < rs->n; k++)
        if (ex->rules->v[rs->v[k].rule].cond == NCD__COND_ib_fallback)
            return 0;
    for (size_t i = 0; i < ex->nprocs; i++) {
        const struct ncd__proc *p = &ex->procs[i];
        if (strcmp(p->net, "Socket") != 0 || p->nnodes < 2)
            continue;
        struct ncd__hit *h = ncd__hit_new(rs, rule);
        if (!h)
            return NCD_ENOMEM;
        char nn[16], where[96];
        snprintf(nn, sizeof nn, "%d", p->nnodes);
        ncd__hit_var(h, "nnodes", nn);
        ncd__proc_where(p, where, sizeof where);
        ncd__hit_ev(h, "%s:%llu: %s: Using network Socket with %d nodes",
                    ncd__src_name(ex, p->src), (unsigned long long)p->net_line,
                    where, p->nnodes);
        h->seq = p->net_line;
        return 1;
    }
    return 0;
}
