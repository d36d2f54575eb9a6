/* SPDX-License-Identifier: MIT */
/*
 * scatter: rank r ends with block r of the root's buffer.  nccl-tests
 * src/scatter.cu: the root sends n blocks of base = (count / n) rounded
 * down to 16 bytes; in-place, rank r receives into sendbuf + r x base;
 * grouped ncclSend/ncclRecv; busbw = algbw x (n-1)/n.
 */
#define _GNU_SOURCE
#include "perf/coll.h"
#include "perf/nccl_api.h"
#include "perf/sock_coll.h"

/* Ring (a chain from the root): the farthest block first, each rank keeps
 * its own and forwards the rest through a scratch buffer. */
static int ring(struct ncd__sock_rank *R, const struct ncd__sock_args *a)
{
    int n = a->nranks, me = a->rank, root = a->root;
    int pos = ncd__mod(me - root, n);
    int next = ncd__mod(me + 1, n), prev = ncd__mod(me - 1, n);
    size_t bl = a->count * a->es;
    /* rank at position q is root+q */
    if (pos == 0) {
        for (int q = n - 1; q >= 1; q--) {
            int who = ncd__mod(root + q, n);
            NCD__SOCK_CHK(R, ncd__sock_send(R, next,
                                            a->send + (size_t)who * bl, bl,
                                            -1));
        }
        ncd__copy(a->recv, a->send + (size_t)me * bl, bl);
        return ncd__sock_run(R);
    }
    char *tmp = ncd__sock_scratch(R, bl * (size_t)n);
    if (!tmp)
        return NCD_ENOMEM;
    for (int q = n - 1; q >= pos; q--) {
        int who = ncd__mod(root + q, n);
        if (q == pos) {
            NCD__SOCK_CHK(R, ncd__sock_recv(R, prev, a->recv, bl));
        } else {
            int r = ncd__sock_recv(R, prev, tmp + (size_t)who * bl, bl);
            NCD__SOCK_CHK(R, r);
            NCD__SOCK_CHK(R, ncd__sock_send(R, next, tmp + (size_t)who * bl,
                                            bl, r));
        }
    }
    return ncd__sock_run(R);
}

/* Direct: the root sends every rank its block. */
static int direct(struct ncd__sock_rank *R, const struct ncd__sock_args *a)
{
    int n = a->nranks, me = a->rank;
    size_t bl = a->count * a->es;
    if (me == a->root) {
        for (int p = 0; p < n; p++)
            if (p != me)
                NCD__SOCK_CHK(R, ncd__sock_send(R, p,
                                                a->send + (size_t)p * bl, bl,
                                                -1));
        ncd__copy(a->recv, a->send + (size_t)me * bl, bl);
    } else {
        NCD__SOCK_CHK(R, ncd__sock_recv(R, a->root, a->recv, bl));
    }
    return ncd__sock_run(R);
}

/* Result element e is the root's element r x base + e. */
static void expect(const struct ncd_perf_check *c, size_t e0, size_t *len,
                   int *from, size_t *src0)
{
    (void)len;
    *from = c->root;
    *src0 = (size_t)c->rank * c->k.paramcount + e0;
}

static int nccl(const struct ncd__nccl_call *c)
{
    size_t bl = c->count * c->esize;
    int r = 0;
    c->nc->GroupStart();
    for (int p = 0; p < c->nranks && !r; p++) {
        if (c->rank == c->root)
            r = c->nc->Send((const char *)c->send + (size_t)p * bl, c->count,
                            c->dtype, p, c->comm, c->stream);
        if (!r && p == 0)
            r = c->nc->Recv(c->recv, c->count, c->dtype, c->root, c->comm,
                            c->stream);
    }
    int g = c->nc->GroupEnd();
    return r ? r : g;
}

const struct ncd__coll ncd__coll_scatter = {
    .name = "scatter",
    .redop_col = NCD__REDOP_NONE,
    .has_root = 1,
    .counts = ncd__counts_scatter,
    .busbw_factor = ncd__busbw_n1_n,
    .expect = expect,
    .sock_ring = ring,
    .sock_direct = direct,
    .nccl = nccl,
    .sock_scratch = 1,
};
