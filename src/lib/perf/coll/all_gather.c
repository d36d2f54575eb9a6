/* SPDX-License-Identifier: MIT */
/*
 * all_gather: every rank ends with every rank's block, in rank order.
 * nccl-tests src/all_gather.cu: each rank sends base = (count / n) rounded
 * down to 16 bytes and receives n blocks; in-place, rank r sends from
 * recvbuf + r x base; busbw = algbw x (n-1)/n, where the size is the
 * whole array (doc/PERFORMANCE.md).
 */
#define _GNU_SOURCE
#include "perf/coll.h"
#include "perf/nccl_api.h"
#include "perf/sock_coll.h"

/* Ring: n-1 steps, each forwarding the block received the step before. */
static int ring(struct ncd__sock_rank *R, const struct ncd__sock_args *a)
{
    int n = a->nranks, me = a->rank, next = ncd__mod(me + 1, n),
        prev = ncd__mod(me - 1, n);
    size_t bl = a->count * a->es;
    char *recv = a->recv;
    ncd__copy(recv + (size_t)me * bl, a->send, bl);
    int last = -1;
    for (int s = 0; s < n - 1; s++) {
        size_t si = (size_t)ncd__mod(me - s, n),
               ri = (size_t)ncd__mod(me - s - 1, n);
        NCD__SOCK_CHK(R, ncd__sock_send(R, next,
                                        s == 0 ? a->send : recv + si * bl, bl,
                                        last));
        last = ncd__sock_recv(R, prev, recv + ri * bl, bl);
        NCD__SOCK_CHK(R, last);
    }
    return ncd__sock_run(R);
}

static int direct(struct ncd__sock_rank *R, const struct ncd__sock_args *a)
{
    return ncd__sock_direct_ag(R, a, a->send, 1);
}

static int nccl(const struct ncd__nccl_call *c)
{
    return c->nc->AllGather(c->send, c->recv, c->count, c->dtype, c->comm,
                            c->stream);
}

const struct ncd__coll ncd__coll_all_gather = {
    .name = "all_gather",
    .redop_col = NCD__REDOP_NONE,
    .counts = ncd__counts_gather,
    .busbw_factor = ncd__busbw_n1_n,
    .expect = ncd__expect_gathered,
    .sock_ring = ring,
    .sock_direct = direct,
    .ring_by_default = 1,
    .nccl = nccl,
};
