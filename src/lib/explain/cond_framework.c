/* SPDX-License-Identifier: MIT */
/*
 * Conditions on what frameworks report across ranks: PyTorch's
 * ProcessGroupNCCL watchdog time-outs ("[Rank N] Watchdog caught collective
 * operation timeout: WorkNCCL(SeqNum=S, OpType=OP, ...)").
 */
#define _GNU_SOURCE
#include "explain/reason.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncd/error.h"

/* The first report whose collective differs from the first report's, or
 * NULL when all ranks wait in the same one. */
static const struct ncd__wd *other_collective(const struct ncd_explain *ex)
{
    const struct ncd__wd *a = &ex->wd[0];
    for (size_t i = 1; i < ex->nwd; i++)
        if (ex->wd[i].seq != a->seq || strcmp(ex->wd[i].op, a->op) != 0)
            return &ex->wd[i];
    return NULL;
}

/* Ranks timed out in different collectives: they desynchronised. */
int ncd__cond_watchdog_desync(struct ncd__reason *rs, size_t rule)
{
    const struct ncd_explain *ex = rs->ex;
    if (ex->nwd < 2)
        return 0;
    const struct ncd__wd *a = &ex->wd[0], *b = other_collective(ex);
    if (!b)
        return 0;
    struct ncd__hit *h = ncd__hit_new(rs, rule);
    if (!h)
        return NCD_ENOMEM;
    char buf[256];
    snprintf(buf, sizeof buf, "rank %d in %s #%ld, rank %d in %s #%ld",
             a->rank, a->op, a->seq, b->rank, b->op, b->seq);
    ncd__hit_var(h, "detail", buf);
    for (int k = 0; k < 2; k++) {
        const struct ncd__wd *w = k ? b : a;
        ncd__hit_ev(h, "%s:%llu: rank %d timed out in %s (SeqNum %ld)",
                    ncd__src_name(ex, w->src), (unsigned long long)w->line,
                    w->rank, w->op, w->seq);
    }
    h->seq = 0;
    return 1;
}

/* All reporting ranks wait in one collective: a rank missing from the
 * reports is the one that never arrived. */
int ncd__cond_watchdog_missing(struct ncd__reason *rs, size_t rule)
{
    const struct ncd_explain *ex = rs->ex;
    if (ex->nwd < 2 || other_collective(ex))
        return 0;
    const struct ncd__wd *a = &ex->wd[0];
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
    for (int r = 0; r <= maxr; r++)
        if (!seen[r]) {
            size_t l = strlen(missing);
            if (nmiss < 8)
                snprintf(missing + l, sizeof missing - l, "%s%d",
                         nmiss ? ", " : "", r);
            nmiss++;
        }
    free(seen);
    if (!nmiss || nmiss * 2 > maxr + 1)
        return 0; /* most reports missing: these are excerpts */
    struct ncd__hit *h = ncd__hit_new(rs, rule);
    if (!h)
        return NCD_ENOMEM;
    char seqs[32];
    snprintf(seqs, sizeof seqs, "%ld", a->seq);
    ncd__hit_var(h, "missing", missing);
    ncd__hit_var(h, "op", a->op);
    ncd__hit_var(h, "seqnum", seqs);
    ncd__hit_ev(h, "%s:%llu: %zu ranks report a time-out in %s (SeqNum %ld); "
                   "rank%s %s do%s not",
                ncd__src_name(ex, a->src), (unsigned long long)a->line, ex->nwd,
                a->op, a->seq, nmiss > 1 ? "s" : "", missing,
                nmiss > 1 ? "" : "es");
    h->seq = 0;
    return 1;
}
