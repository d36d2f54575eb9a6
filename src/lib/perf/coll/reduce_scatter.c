/* SPDX-License-Identifier: MIT */
/*
 * reduce_scatter: rank r ends with block r of the reduction of all ranks'
 * buffers.  nccl-tests src/reduce_scatter.cu: each rank sends n blocks of
 * base = (count / n) rounded down to 16 bytes and receives one; in-place,
 * rank r receives into sendbuf + r x base; busbw = algbw x (n-1)/n, where
 * the size is the whole array (doc/PERFORMANCE.md).
 */
#define _GNU_SOURCE
#include "perf/coll.h"
#include "perf/nccl_api.h"
#include "perf/sock_coll.h"

/* Ring: n-1 steps of reduce-and-forward through a scratch buffer; the
 * last step reduces into the result. */
static int ring(struct ncd__sock_rank *R, const struct ncd__sock_args *a)
{
    int n = a->nranks, me = a->rank, next = ncd__mod(me + 1, n),
        prev = ncd__mod(me - 1, n);
    size_t bl = a->count * a->es;
    const char *send = a->send;
    char *tmp = ncd__sock_scratch(R, bl * (size_t)n);
    if (!tmp)
        return NCD_ENOMEM;
    int last = -1;
    for (int s = 0; s < n - 1; s++) {
        size_t si = (size_t)ncd__mod(me - s - 1, n),
               ri = (size_t)ncd__mod(me - s - 2, n);
        NCD__SOCK_CHK(R, ncd__sock_send(R, next,
                                        (s == 0 ? send : tmp) + si * bl, bl,
                                        last));
        char *dst = s == n - 2 ? a->recv : tmp + ri * bl;
        last = ncd__sock_reduce(R, prev, dst, send + ri * bl, bl, s == 0, 1,
                                s == n - 2);
        NCD__SOCK_CHK(R, last);
    }
    return ncd__sock_run(R);
}

static int direct(struct ncd__sock_rank *R, const struct ncd__sock_args *a)
{
    return ncd__sock_direct_rs(R, a, a->send, a->recv, 1);
}

/* Result element e is the reduction of every rank's element r x base + e. */
static void expect(const struct ncd_perf_check *c, size_t e0, size_t *len,
                   int *from, size_t *src0)
{
    (void)len;
    *from = -1;
    *src0 = (size_t)c->rank * c->k.paramcount + e0;
}

static int nccl(const struct ncd__nccl_call *c)
{
    return c->nc->ReduceScatter(c->send, c->recv, c->count, c->dtype, c->op,
                                c->comm, c->stream);
}

const struct ncd__coll ncd__coll_reduce_scatter = {
    .name = "reduce_scatter",
    .reduces = 1,
    .redop_col = NCD__REDOP_OP,
    .counts = ncd__counts_scatter,
    .busbw_factor = ncd__busbw_n1_n,
    .expect = expect,
    .sock_ring = ring,
    .sock_direct = direct,
    .ring_by_default = 1,
    .nccl = nccl,
    .sock_scratch = 1,
};
