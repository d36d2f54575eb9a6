/* SPDX-License-Identifier: MIT */
/*
 * broadcast: every rank ends with the root's buffer.  nccl-tests
 * src/broadcast.cu: count = bytes / esize; busbw = algbw (all data leaves
 * the root: doc/PERFORMANCE.md).
 */
#define _GNU_SOURCE
#include "perf/coll.h"
#include "perf/nccl_api.h"
#include "perf/sock_coll.h"

/* Ring (a chain from the root): each rank forwards chunks as they come. */
static int ring(struct ncd__sock_rank *R, const struct ncd__sock_args *a)
{
    int n = a->nranks, me = a->rank, pos = ncd__mod(me - a->root, n);
    size_t len = a->count * a->es;
    int r = -1;
    if (pos > 0)
        NCD__SOCK_CHK(R, r = ncd__sock_recv(R, ncd__mod(me - 1, n), a->recv,
                                            len));
    if (pos < n - 1)
        NCD__SOCK_CHK(R, ncd__sock_send(R, ncd__mod(me + 1, n),
                                        pos == 0 ? a->send : a->recv, len,
                                        r));
    if (pos == 0)
        ncd__copy(a->recv, a->send, len);
    return ncd__sock_run(R);
}

/* Direct: the root sends to every rank. */
static int direct(struct ncd__sock_rank *R, const struct ncd__sock_args *a)
{
    int n = a->nranks, me = a->rank;
    size_t len = a->count * a->es;
    if (me == a->root) {
        for (int p = 0; p < n; p++)
            if (p != me)
                NCD__SOCK_CHK(R, ncd__sock_send(R, p, a->send, len, -1));
        ncd__copy(a->recv, a->send, len);
    } else {
        NCD__SOCK_CHK(R, ncd__sock_recv(R, a->root, a->recv, len));
    }
    return ncd__sock_run(R);
}

static void expect(const struct ncd_perf_check *c, size_t e0, size_t *len,
                   int *from, size_t *src0)
{
    (void)len;
    *from = c->root;
    *src0 = e0;
}

static int nccl(const struct ncd__nccl_call *c)
{
    return c->nc->Broadcast(c->send, c->recv, c->count, c->dtype, c->root,
                            c->comm, c->stream);
}

const struct ncd__coll ncd__coll_broadcast = {
    .name = "broadcast",
    .redop_col = NCD__REDOP_NONE,
    .has_root = 1,
    .counts = ncd__counts_whole,
    .busbw_factor = ncd__busbw_1,
    .expect = expect,
    .sock_ring = ring,
    .sock_direct = direct,
    .ring_by_default = 1,
    .nccl = nccl,
};
