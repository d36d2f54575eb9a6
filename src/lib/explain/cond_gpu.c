/* SPDX-License-Identifier: MIT */
/*
 * Conditions on GPUs and hosts as NCCL saw them: two hosts NCCL took for
 * one, consumer GPUs connected by P2P.
 */
#define _GNU_SOURCE
#include "explain/reason.h"

#include <stdio.h>
#include <string.h>

#include "ncd/error.h"

/* Two ranks with the same GPU index are connected by P2P/SHM on one
 * "host": NCCL merged two machines (same host hash). */
int ncd__cond_hosts_merged(struct ncd__reason *rs, size_t rule)
{
    const struct ncd_explain *ex = rs->ex;
    for (size_t i = 0; i < ex->nhosts; i++) {
        const struct ncd__host *p = &ex->hosts[i];
        if (!p->dev_conflict || p->ndevs_seen < 2)
            continue;
        struct ncd__hit *h = ncd__hit_new(rs, rule);
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
        ncd__hit_var(h, "rank1", a);
        ncd__hit_var(h, "rank2", b);
        ncd__hit_var(h, "dev", d);
        ncd__hit_var(h, "host", p->name);
        ncd__hit_ev(h, "%s:%llu: ranks %s and %s both use GPU %s and are "
                       "connected through P2P/SHM as if on one host (%s)",
                    ncd__src_name(ex, p->conflict_src),
                    (unsigned long long)p->conflict_line, a, b, d, p->name);
        h->seq = 0;
        return 1;
    }
    return 0;
}

/* nccl-tests lists several GPUs on one host whose names match the rule's
 * patterns, P2P is not disabled and the results were not verified. */
int ncd__cond_consumer_gpu_p2p(struct ncd__reason *rs, size_t rule)
{
    const struct ncd_explain *ex = rs->ex;
    const char *dis = ncd__env_get(ex, "NCCL_P2P_DISABLE", NULL);
    if ((dis && strcmp(dis, "1") == 0) || ex->tests_ok)
        return 0; /* P2P off, or the run verified its results */
    unsigned long long p2p = 0, shm = 0;
    for (size_t i = 0; i < ex->nprocs; i++) {
        p2p += ex->procs[i].t_p2p;
        shm += ex->procs[i].t_shm;
    }
    if (shm && !p2p)
        return 0; /* NCCL already went through shared memory */
    int found = 0;
    for (size_t i = 0; i < ex->ngpus && !found; i++) {
        const struct ncd__gpu *g = &ex->gpus[i];
        int hitname = ncd__rule_fact_match(ex, rule, g->name);
        if (hitname < 0)
            return hitname;
        if (!hitname)
            continue;
        size_t same = 0;
        for (size_t j = 0; j < ex->ngpus; j++)
            same += strcmp(ex->gpus[j].host, g->host) == 0;
        if (same < 2)
            continue;
        struct ncd__hit *h = ncd__hit_new(rs, rule);
        if (!h)
            return NCD_ENOMEM;
        ncd__hit_var(h, "gpu", g->name);
        ncd__hit_var(h, "host", g->host);
        for (size_t j = 0; j < ex->ngpus && h->nev < 4; j++)
            if (strcmp(ex->gpus[j].host, g->host) == 0)
                ncd__hit_ev(h, "%s:%llu: rank %d on %s device %d: %s",
                            ncd__src_name(ex, ex->gpus[j].src),
                            (unsigned long long)ex->gpus[j].line,
                            ex->gpus[j].rank, ex->gpus[j].host,
                            ex->gpus[j].dev, ex->gpus[j].name);
        h->seq = 0;
        found = 1;
    }
    return found;
}
