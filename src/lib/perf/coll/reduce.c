/* SPDX-License-Identifier: MIT */
/*
 * reduce: the root ends with the reduction of all ranks' buffers (the
 * other ranks' results are undefined and not checked).  nccl-tests
 * src/reduce.cu: count = bytes / esize; busbw = algbw (all data reaches
 * the root: doc/PERFORMANCE.md).
 */
#define _GNU_SOURCE
#include "perf/coll.h"
#include "perf/nccl_api.h"
#include "perf/sock_coll.h"

/* Ring (a chain ending at the root): each rank adds its part and passes
 * the partial sums on, chunk by chunk. */
static int ring(struct ncd__sock_rank *R, const struct ncd__sock_args *a)
{
    int n = a->nranks, me = a->rank, pos = ncd__mod(me - a->root - 1, n);
    int next = ncd__mod(me + 1, n), prev = ncd__mod(me - 1, n);
    size_t len = a->count * a->es;
    if (pos == 0) {
        NCD__SOCK_CHK(R, ncd__sock_send(R, next, a->send, len, -1));
    } else {
        int r = ncd__sock_reduce(R, prev, a->recv, a->send, len, pos == 1, 1,
                                 pos == n - 1);
        NCD__SOCK_CHK(R, r);
        if (pos < n - 1)
            NCD__SOCK_CHK(R, ncd__sock_send(R, next, a->recv, len, r));
    }
    return ncd__sock_run(R);
}

/* Direct: every rank sends to the root, which accumulates. */
static int direct(struct ncd__sock_rank *R, const struct ncd__sock_args *a)
{
    int n = a->nranks, me = a->rank;
    size_t len = a->count * a->es, es = a->es;
    if (me != a->root) {
        NCD__SOCK_CHK(R, ncd__sock_send(R, a->root, a->send, len, -1));
        return ncd__sock_run(R);
    }
    if (a->op == NCD_OP_MULSUM)
        ncd_perf_reduce_finish(a->dt, a->op, a->recv, a->send, len / es, n, 1);
    else
        ncd__copy(a->recv, a->send, len);
    for (int p = 0; p < n; p++)
        if (p != me)
            NCD__SOCK_CHK(R, ncd__sock_acc(R, p, a->recv, len, 1));
    int rc = ncd__sock_run(R);
    if (!rc && a->op == NCD_OP_AVG)
        ncd_perf_reduce_finish(a->dt, a->op, a->recv, a->recv, len / es, n,
                               0);
    return rc;
}

static int nccl(const struct ncd__nccl_call *c)
{
    return c->nc->Reduce(c->send, c->recv, c->count, c->dtype, c->op,
                         c->root, c->comm, c->stream);
}

const struct ncd__coll ncd__coll_reduce = {
    .name = "reduce",
    .reduces = 1,
    .redop_col = NCD__REDOP_OP,
    .has_root = 1,
    .root_result = 1,
    .counts = ncd__counts_whole,
    .busbw_factor = ncd__busbw_1,
    .expect = ncd__expect_reduced,
    .sock_ring = ring,
    .sock_direct = direct,
    .ring_by_default = 1,
    .nccl = nccl,
};
