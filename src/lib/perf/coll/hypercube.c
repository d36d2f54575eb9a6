/* SPDX-License-Identifier: MIT */
/*
 * hypercube: an all-gather by recursive doubling: in step k every rank
 * exchanges everything it holds with rank ^ 2^k, so the number of ranks
 * must be a power of two.  nccl-tests src/hypercube.cu: counts as
 * all_gather; algbw = base x esize x (n-1) / time; busbw = algbw; the
 * redop column is empty.
 */
#define _GNU_SOURCE
#include "perf/coll.h"
#include "perf/nccl_api.h"
#include "perf/sock_coll.h"

static int exchange(struct ncd__sock_rank *R, const struct ncd__sock_args *a)
{
    int n = a->nranks, me = a->rank;
    size_t bl = a->count * a->es;
    char *recv = a->recv;
    ncd__copy(recv + (size_t)me * bl, a->send, bl);
    for (int k = 1; k < n; k <<= 1) {
        int partner = me ^ k;
        size_t mlo = (size_t)(me & ~(k - 1)),
               plo = (size_t)(partner & ~(k - 1));
        NCD__SOCK_CHK(R, ncd__sock_send(R, partner, recv + mlo * bl,
                                        (size_t)k * bl, -1));
        NCD__SOCK_CHK(R, ncd__sock_recv(R, partner, recv + plo * bl,
                                        (size_t)k * bl));
        int rc = ncd__sock_run(R);
        if (rc)
            return rc;
    }
    return 0;
}

static double algbw_bytes(const struct ncd_perf_counts *k, size_t esize,
                          int nranks)
{
    return (double)k->paramcount * (double)esize * (nranks - 1);
}

/* One group of ncclSend/ncclRecv per doubling step. */
static int nccl(const struct ncd__nccl_call *c)
{
    int nr = c->nranks, me = c->rank;
    size_t bl = c->count * c->esize;
    char *recv = c->recv;
    if (c->send != recv + (size_t)me * bl &&
        c->copy(c->copy_arg, recv + (size_t)me * bl, c->send, bl))
        return -1;
    int r = 0;
    for (int s = 1; s < nr && !r; s <<= 1) {
        int partner = me ^ s;
        size_t mlo = (size_t)(me & ~(s - 1)),
               plo = (size_t)(partner & ~(s - 1));
        c->nc->GroupStart();
        r = c->nc->Send(recv + mlo * bl, c->count * (size_t)s, c->dtype,
                        partner, c->comm, c->stream);
        if (!r)
            r = c->nc->Recv(recv + plo * bl, c->count * (size_t)s, c->dtype,
                            partner, c->comm, c->stream);
        int g = c->nc->GroupEnd();
        if (!r)
            r = g;
    }
    return r;
}

const struct ncd__coll ncd__coll_hypercube = {
    .name = "hypercube",
    .redop_col = NCD__REDOP_EMPTY,
    .needs_pow2 = 1,
    .counts = ncd__counts_gather,
    .busbw_factor = ncd__busbw_1,
    .algbw_bytes = algbw_bytes,
    .expect = ncd__expect_gathered,
    .sock_ring = exchange,
    .nccl = nccl,
};
