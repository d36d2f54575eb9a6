/* SPDX-License-Identifier: MIT */
/*
 * all_reduce: every rank ends with the reduction of all ranks' buffers.
 * nccl-tests src/all_reduce.cu: count = bytes / esize on every rank;
 * busbw = algbw x 2(n-1)/n (doc/PERFORMANCE.md: 2(n-1) transfers per
 * element over n links).
 */
#define _GNU_SOURCE
#include "perf/coll.h"
#include "perf/nccl_api.h"
#include "perf/sock_coll.h"

/* Ring: n-1 reduce-scatter steps, then n-1 all-gather steps; each step's
 * send waits for the matching chunks of the previous receive. */
static int ring(struct ncd__sock_rank *R, const struct ncd__sock_args *a)
{
    int n = a->nranks, me = a->rank, next = ncd__mod(me + 1, n),
        prev = ncd__mod(me - 1, n);
    size_t cnt = a->count, es = a->es;
    const char *send = a->send;
    char *recv = a->recv;
    int last = -1;
    for (int s = 0; s < n - 1; s++) {
        size_t so, sl, ro, rl;
        ncd__seg(cnt, n, ncd__mod(me - s, n), es, &so, &sl);
        ncd__seg(cnt, n, ncd__mod(me - s - 1, n), es, &ro, &rl);
        NCD__SOCK_CHK(R, ncd__sock_send(R, next, (s == 0 ? send : recv) + so,
                                        sl, last));
        last = ncd__sock_reduce(R, prev, recv + ro, send + ro, rl, s == 0, 1,
                                s == n - 2);
        NCD__SOCK_CHK(R, last);
    }
    for (int s = 0; s < n - 1; s++) {
        size_t so, sl, ro, rl;
        ncd__seg(cnt, n, ncd__mod(me + 1 - s, n), es, &so, &sl);
        ncd__seg(cnt, n, ncd__mod(me - s, n), es, &ro, &rl);
        NCD__SOCK_CHK(R, ncd__sock_send(R, next, recv + so, sl, last));
        last = ncd__sock_recv(R, prev, recv + ro, rl);
        NCD__SOCK_CHK(R, last);
    }
    return ncd__sock_run(R);
}

/* Direct: reduce-scatter with every peer, then all-gather. */
static int direct(struct ncd__sock_rank *R, const struct ncd__sock_args *a)
{
    size_t mo, ml;
    ncd__seg(a->count, a->nranks, a->rank, a->es, &mo, &ml);
    int rc = ncd__sock_direct_rs(R, a, a->send, a->recv + mo, 0);
    return rc ? rc : ncd__sock_direct_ag(R, a, a->recv + mo, 0);
}

static int nccl(const struct ncd__nccl_call *c)
{
    return c->nc->AllReduce(c->send, c->recv, c->count, c->dtype, c->op,
                            c->comm, c->stream);
}

const struct ncd__coll ncd__coll_all_reduce = {
    .name = "all_reduce",
    .reduces = 1,
    .redop_col = NCD__REDOP_OP,
    .counts = ncd__counts_whole,
    .busbw_factor = ncd__busbw_2n1_n,
    .expect = ncd__expect_reduced,
    .sock_ring = ring,
    .sock_direct = direct,
    .ring_by_default = 1,
    .sock_small = ncd__sock_oneshot,
    .nccl = nccl,
};
