/* SPDX-License-Identifier: MIT */
/*
 * sendrecv: rank r sends its buffer to rank r+1 and receives rank r-1's.
 * nccl-tests src/sendrecv.cu: count = bytes / esize; busbw = algbw; the
 * op is passed (redop column) but unused; in-place is not checked (#wrong
 * N/A).
 */
#define _GNU_SOURCE
#include "perf/coll.h"
#include "perf/nccl_api.h"
#include "perf/sock_coll.h"

static int shift(struct ncd__sock_rank *R, const struct ncd__sock_args *a)
{
    int n = a->nranks, me = a->rank;
    size_t bl = a->count * a->es;
    NCD__SOCK_CHK(R, ncd__sock_send(R, ncd__mod(me + 1, n), a->send, bl, -1));
    NCD__SOCK_CHK(R, ncd__sock_recv(R, ncd__mod(me - 1, n), a->recv, bl));
    return ncd__sock_run(R);
}

static void expect(const struct ncd_perf_check *c, size_t e0, size_t *len,
                   int *from, size_t *src0)
{
    (void)len;
    *from = (c->rank + c->nranks - 1) % c->nranks;
    *src0 = e0;
}

static int nccl(const struct ncd__nccl_call *c)
{
    int nr = c->nranks, me = c->rank;
    c->nc->GroupStart();
    int r = c->nc->Send(c->send, c->count, c->dtype, (me + 1) % nr, c->comm,
                        c->stream);
    if (!r)
        r = c->nc->Recv(c->recv, c->count, c->dtype, (me + nr - 1) % nr,
                        c->comm, c->stream);
    int g = c->nc->GroupEnd();
    return r ? r : g;
}

const struct ncd__coll ncd__coll_sendrecv = {
    .name = "sendrecv",
    .redop_col = NCD__REDOP_OP,
    .inplace_unchecked = 1,
    .counts = ncd__counts_whole,
    .busbw_factor = ncd__busbw_1,
    .expect = expect,
    .sock_ring = shift,
    .nccl = nccl,
};
