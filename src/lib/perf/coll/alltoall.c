/* SPDX-License-Identifier: MIT */
/*
 * alltoall: rank r's block p goes to rank p, which stores it as block r.
 * nccl-tests src/alltoall.cu: base = (count / n) rounded down to 16 bytes
 * per peer, n blocks sent and received (grouped ncclSend/ncclRecv);
 * busbw = algbw x (n-1)/n (doc/PERFORMANCE.md).
 */
#define _GNU_SOURCE
#include <string.h>

#include "perf/coll.h"
#include "perf/nccl_api.h"
#include "perf/sock_coll.h"

/* Every peer at once, starting with the nearest: spreads the load like a
 * shifted ring.  In-place sends from a copy. */
static int exchange(struct ncd__sock_rank *R, const struct ncd__sock_args *a)
{
    int n = a->nranks, me = a->rank;
    size_t bl = a->count * a->es;
    const char *send = a->send;
    char *recv = a->recv;
    if (send == recv) {
        char *tmp = ncd__sock_scratch(R, bl * (size_t)n);
        if (!tmp)
            return NCD_ENOMEM;
        if (bl)
            memcpy(tmp, send, bl * (size_t)n);
        send = tmp;
    }
    ncd__copy(recv + (size_t)me * bl, send + (size_t)me * bl, bl);
    for (int k = 1; k < n; k++) {
        int to = ncd__mod(me + k, n), from = ncd__mod(me - k, n);
        NCD__SOCK_CHK(R, ncd__sock_send(R, to, send + (size_t)to * bl, bl,
                                        -1));
        NCD__SOCK_CHK(R, ncd__sock_recv(R, from, recv + (size_t)from * bl,
                                        bl));
    }
    return ncd__sock_run(R);
}

static void counts(size_t count, size_t base, size_t n, size_t r,
                   size_t esize, struct ncd_perf_counts *out)
{
    (void)count;
    (void)r;
    (void)esize;
    out->sendcount = out->recvcount = base * n;
    out->paramcount = base;
}

/* Result block p is rank p's block for this rank. */
static void expect(const struct ncd_perf_check *c, size_t e0, size_t *len,
                   int *from, size_t *src0)
{
    size_t base = c->k.paramcount, left = base - e0 % base;
    *from = (int)(e0 / base);
    *src0 = (size_t)c->rank * base + e0 % base;
    if (*len > left)
        *len = left;
}

static int nccl(const struct ncd__nccl_call *c)
{
    size_t bl = c->count * c->esize;
    int r = 0;
    c->nc->GroupStart();
    for (int p = 0; p < c->nranks && !r; p++) {
        r = c->nc->Send((const char *)c->send + (size_t)p * bl, c->count,
                        c->dtype, p, c->comm, c->stream);
        if (!r)
            r = c->nc->Recv((char *)c->recv + (size_t)p * bl, c->count,
                            c->dtype, p, c->comm, c->stream);
    }
    int g = c->nc->GroupEnd();
    return r ? r : g;
}

const struct ncd__coll ncd__coll_alltoall = {
    .name = "alltoall",
    .alias = "all_to_all",
    .redop_col = NCD__REDOP_NONE,
    .counts = counts,
    .busbw_factor = ncd__busbw_n1_n,
    .expect = expect,
    .sock_ring = exchange,
    .nccl = nccl,
    .sock_scratch = 1,
};
