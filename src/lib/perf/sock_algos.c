/* SPDX-License-Identifier: MIT */
/*
 * Direct algorithms shared by several collectives of the socket backend
 * (sock_coll.h): reduce-scatter and all-gather with every peer at once.
 */
#define _GNU_SOURCE
#include <string.h>

#include "ncd/error.h"
#include "perf/sock_coll.h"

int ncd__sock_direct_rs(struct ncd__sock_rank *R,
                        const struct ncd__sock_args *a, const char *send,
                        char *dst, int equal_blocks)
{
    int n = a->nranks, me = a->rank;
    size_t es = a->es, mo, ml;
    ncd__block(a->count, n, me, es, equal_blocks, &mo, &ml);
    /* dst = f(own block), then accumulate the others' */
    if (a->op == NCD_OP_MULSUM)
        ncd_perf_reduce_finish(a->dt, a->op, dst, send + mo, ml / es, n, 1);
    else
        ncd__copy(dst, send + mo, ml);
    for (int p = 0; p < n; p++) {
        if (p == me)
            continue;
        size_t po, pl;
        ncd__block(a->count, n, p, es, equal_blocks, &po, &pl);
        NCD__SOCK_CHK(R, ncd__sock_send(R, p, send + po, pl, -1));
        NCD__SOCK_CHK(R, ncd__sock_acc(R, p, dst, ml, 1));
    }
    int rc = ncd__sock_run(R);
    if (!rc && a->op == NCD_OP_AVG)
        ncd_perf_reduce_finish(a->dt, a->op, dst, dst, ml / es, n, 0);
    return rc;
}

int ncd__sock_direct_ag(struct ncd__sock_rank *R,
                        const struct ncd__sock_args *a, const char *mine,
                        int equal_blocks)
{
    int n = a->nranks, me = a->rank;
    size_t es = a->es, mo, ml;
    char *recv = a->recv;
    ncd__block(a->count, n, me, es, equal_blocks, &mo, &ml);
    ncd__copy(recv + mo, mine, ml);
    for (int p = 0; p < n; p++) {
        if (p == me)
            continue;
        size_t po, pl;
        ncd__block(a->count, n, p, es, equal_blocks, &po, &pl);
        NCD__SOCK_CHK(R, ncd__sock_send(R, p, recv + mo, ml, -1));
        NCD__SOCK_CHK(R, ncd__sock_recv(R, p, recv + po, pl));
    }
    return ncd__sock_run(R);
}

int ncd__sock_oneshot(struct ncd__sock_rank *R, const struct ncd__sock_args *a)
{
    int n = a->nranks, me = a->rank;
    size_t bl = a->count * a->es;
    const char *send = a->send;
    if (send == a->recv && bl) {
        char *tmp = ncd__sock_scratch(R, bl);
        if (!tmp)
            return NCD_ENOMEM;
        memcpy(tmp, send, bl);
        send = tmp;
    }
    /* recv = f(own input), then accumulate every peer's, as direct_rs */
    if (a->op == NCD_OP_MULSUM)
        ncd_perf_reduce_finish(a->dt, a->op, a->recv, send, a->count, n, 1);
    else
        ncd__copy(a->recv, send, bl);
    for (int p = 0; p < n; p++) {
        if (p == me)
            continue;
        NCD__SOCK_CHK(R, ncd__sock_send(R, p, send, bl, -1));
        NCD__SOCK_CHK(R, ncd__sock_acc(R, p, a->recv, bl, 1));
    }
    int rc = ncd__sock_run(R);
    if (!rc && a->op == NCD_OP_AVG)
        ncd_perf_reduce_finish(a->dt, a->op, a->recv, a->recv, a->count, n, 0);
    return rc;
}
