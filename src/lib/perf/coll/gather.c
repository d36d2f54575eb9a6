/* SPDX-License-Identifier: MIT */
/*
 * gather: the root ends with every rank's block, in rank order (the other
 * ranks' results are undefined and not checked).  nccl-tests
 * src/gather.cu: each rank sends base = (count / n) rounded down to 16
 * bytes; in-place, rank r sends from recvbuf + r x base; grouped
 * ncclSend/ncclRecv; busbw = algbw x (n-1)/n.
 */
#define _GNU_SOURCE
#include "perf/coll.h"
#include "perf/nccl_api.h"
#include "perf/sock_coll.h"

/* Ring (a chain ending at the root): each rank passes on the blocks of the
 * ranks before it, then its own. */
static int ring(struct ncd__sock_rank *R, const struct ncd__sock_args *a)
{
    int n = a->nranks, me = a->rank, root = a->root;
    int pos = ncd__mod(me - root - 1, n);
    int next = ncd__mod(me + 1, n), prev = ncd__mod(me - 1, n);
    size_t bl = a->count * a->es;
    char *recv = a->recv;
    /* rank at chain position q is root+1+q; pos n-1 is the root */
    if (me == root)
        ncd__copy(recv + (size_t)me * bl, a->send, bl);
    else
        NCD__SOCK_CHK(R, ncd__sock_send(R, next, a->send, bl, -1));
    for (int q = pos - 1; q >= 0; q--) {
        int who = ncd__mod(root + 1 + q, n);
        int r = ncd__sock_recv(R, prev, recv + (size_t)who * bl, bl);
        NCD__SOCK_CHK(R, r);
        if (me != root)
            NCD__SOCK_CHK(R, ncd__sock_send(R, next,
                                            recv + (size_t)who * bl, bl, r));
    }
    return ncd__sock_run(R);
}

/* Direct: every rank sends to the root. */
static int direct(struct ncd__sock_rank *R, const struct ncd__sock_args *a)
{
    int n = a->nranks, me = a->rank;
    size_t bl = a->count * a->es;
    if (me != a->root) {
        NCD__SOCK_CHK(R, ncd__sock_send(R, a->root, a->send, bl, -1));
    } else {
        ncd__copy(a->recv + (size_t)me * bl, a->send, bl);
        for (int p = 0; p < n; p++)
            if (p != me)
                NCD__SOCK_CHK(R, ncd__sock_recv(R, p,
                                                a->recv + (size_t)p * bl,
                                                bl));
    }
    return ncd__sock_run(R);
}

static int nccl(const struct ncd__nccl_call *c)
{
    size_t bl = c->count * c->esize;
    int r = 0;
    c->nc->GroupStart();
    for (int p = 0; p < c->nranks && !r; p++) {
        if (p == 0)
            r = c->nc->Send(c->send, c->count, c->dtype, c->root, c->comm,
                            c->stream);
        if (!r && c->rank == c->root)
            r = c->nc->Recv((char *)c->recv + (size_t)p * bl, c->count,
                            c->dtype, p, c->comm, c->stream);
    }
    int g = c->nc->GroupEnd();
    return r ? r : g;
}

const struct ncd__coll ncd__coll_gather = {
    .name = "gather",
    .redop_col = NCD__REDOP_NONE,
    .has_root = 1,
    .root_result = 1,
    .counts = ncd__counts_gather,
    .busbw_factor = ncd__busbw_n1_n,
    .expect = ncd__expect_gathered,
    .sock_ring = ring,
    .sock_direct = direct,
    .nccl = nccl,
};
