/* SPDX-License-Identifier: MIT */
/*
 * The collective table (src/lib/perf/coll.h, one row per file in
 * src/lib/perf/coll/): every row complete and reachable by its name and
 * its <name>_perf binary name; bus-bandwidth factors against nccl-tests'
 * doc/PERFORMANCE.md (and src/<coll>.cu GetBw for the collectives the doc
 * does not list); and every row run end to end on the socket engine
 * (threads on loopback, ring and direct, in-place and out-of-place, each
 * rank's result checked by the row's own expectations, and a corrupted
 * result caught).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncd/ctx.h"
#include "ncd/error.h"
#include "ncd/perf.h"
#include "perf/coll.h"
#include "perf/sock_int.h"

/* ---- the rows ---------------------------------------------------------- */

static void test_rows_complete(void **state)
{
    (void)state;
    assert_true(NCD_COLL__COUNT >= 10);
    for (int i = 0; i < NCD_COLL__COUNT; i++) {
        const struct ncd__coll *r = ncd__coll((enum ncd_perf_coll)i);
        assert_non_null(r);
        if (!r->name || !r->counts || !r->busbw_factor || !r->expect ||
            !r->sock_ring || !r->nccl)
            fail_msg("row %d (%s) lacks a member", i, r->name);
        char perf[64];
        snprintf(perf, sizeof perf, "/usr/bin/%s_perf", r->name);
        if (ncd_perf_coll_from_name(r->name) != i ||
            ncd_perf_coll_from_name(perf) != i)
            fail_msg("row %d: '%s' and '%s' do not name it", i, r->name,
                     perf);
        if (r->alias && ncd_perf_coll_from_name(r->alias) != i)
            fail_msg("row %d: alias '%s' does not name it", i, r->alias);
        for (int j = 0; j < i; j++)
            assert_string_not_equal(r->name, ncd__coll(j)->name);
        /* declarations that must agree */
        if (r->root_result && !r->has_root)
            fail_msg("%s: a result on the root needs a root", r->name);
        if (r->reduces && r->redop_col != NCD__REDOP_OP)
            fail_msg("%s: a reduction shows its op", r->name);
    }
    assert_null(ncd__coll(NCD_COLL__COUNT));
    assert_int_equal(ncd_perf_coll_from_name("allreduce"),
                     NCD_COLL_ALL_REDUCE);
    assert_int_equal(ncd_perf_coll_from_name("All_To_All"), NCD_COLL_ALLTOALL);
    assert_int_equal(ncd_perf_coll_from_name("nosuch_perf"), -1);
}

/* nccl-tests doc/PERFORMANCE.md "Summary" (AllReduce 2(n-1)/n;
 * ReduceScatter, AllGather, AlltoAll (n-1)/n; Broadcast, Reduce 1) and
 * src/<coll>.cu GetBw for the others (gather, scatter, alltoallv
 * (n-1)/n; sendrecv, hypercube 1), nccl-tests v2.19.6. */
static const struct {
    const char *name;
    int kind; /* 2: 2(n-1)/n, 1: (n-1)/n, 0: 1 */
    const char *redop;   /* redop column with -o sum */
    int has_root;
} documented[] = {
    {"all_reduce", 2, "sum", 0},  {"reduce_scatter", 1, "sum", 0},
    {"all_gather", 1, "none", 0}, {"alltoall", 1, "none", 0},
    {"broadcast", 0, "none", 1},  {"reduce", 0, "sum", 1},
    {"gather", 1, "none", 1},     {"scatter", 1, "none", 1},
    {"sendrecv", 0, "sum", 0},    {"hypercube", 0, "", 0},
    {"alltoallv", 1, "none", 0},
};

static void test_busbw_performance_md(void **state)
{
    (void)state;
    static const int ns[] = {1, 2, 3, 4, 5, 8, 16, 64};
    size_t nd = sizeof documented / sizeof documented[0];
    assert_int_equal(nd, NCD_COLL__COUNT); /* every row is documented */
    for (size_t i = 0; i < nd; i++) {
        int c = ncd_perf_coll_from_name(documented[i].name);
        if (c < 0)
            fail_msg("%s is not a row", documented[i].name);
        for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
            double n = ns[k];
            double want = documented[i].kind == 2   ? 2 * (n - 1) / n
                          : documented[i].kind == 1 ? (n - 1) / n
                                                    : 1.0;
            double got = ncd_perf_busbw_factor(c, ns[k]);
            if (fabs(got - want) > 1e-12)
                fail_msg("%s n=%d: factor %g, PERFORMANCE.md %g",
                         documented[i].name, ns[k], got, want);
        }
        assert_string_equal(ncd_perf_redop_label(c, NCD_OP_SUM),
                            documented[i].redop);
        assert_int_equal(ncd_perf_coll_has_root(c), documented[i].has_root);
    }
}

/* algbw: the size column over the time (the whole array for the gathers
 * and scatters: count x n x typesize), hypercube count x typesize x (n-1)
 * (src/<coll>.cu GetBw). */
static void test_algbw(void **state)
{
    (void)state;
    for (int c = 0; c < NCD_COLL__COUNT; c++) {
        struct ncd_perf_counts k;
        ncd_perf_counts(c, 1 << 20, 4, 8, 3, &k);
        double a, b;
        ncd_perf_bw(c, &k, 4, 8, 1e-3, &a, &b);
        double bytes = c == NCD_COLL_HYPERCUBE
                           ? (double)k.paramcount * 4 * 7
                           : (double)k.bytes;
        assert_true(fabs(a - bytes / 1e-3 / 1e9) < 1e-9);
        assert_true(fabs(b - a * ncd_perf_busbw_factor(c, 8)) < 1e-12);
    }
}

/* ---- every row on the socket engine ------------------------------------ */

struct mesh {
    int n;
    pthread_barrier_t done; /* nobody closes its sockets before all ran */
    struct ncd_rank_info infos[8];
    int lfd[8];
};

struct rank_arg {
    struct mesh *m;
    int rank;
    int runs, checked, caught;
    char err[512];
};

#define BYTES 40000 /* 10000 floats: uneven segments on 3 ranks */

/* One collective call on this rank; 0 or -1 with r->err set. */
static int run_one(struct rank_arg *r, struct ncd__sock_rank *eng, int c,
                   enum ncd_perf_algo algo, int ip, enum ncd_perf_op op,
                   int root, uint32_t seed)
{
    int n = r->m->n;
    struct ncd_perf_counts k;
    ncd_perf_counts(c, BYTES, 4, n, r->rank, &k);
    size_t cap = (k.sendcount > k.recvcount ? k.sendcount : k.recvcount) + 1;
    char *sbuf = calloc(cap, 4), *rbuf = calloc(cap, 4);
    char *send = ip ? rbuf + k.send_inplace_off * 4 : sbuf;
    char *recv = ip ? rbuf + k.recv_inplace_off * 4 : rbuf;
    ncd_perf_fill(NCD_DT_FLOAT, op, send, 0, k.sendcount, r->rank, seed);
    int rc = ncd__sock_coll(eng, c, NCD_DT_FLOAT, op, root, send, recv, &k,
                            algo);
    const struct ncd__coll *row = ncd__coll(c);
    if (rc) {
        snprintf(r->err, sizeof r->err, "%s algo %d ip %d: %s", row->name,
                 algo, ip, ncd__sock_rank_error(eng));
    } else if (!ip || !row->inplace_unchecked) {
        struct ncd_perf_check chk = {.coll = c, .dtype = NCD_DT_FLOAT,
                                     .op = op, .nranks = n, .rank = r->rank,
                                     .root = root, .seed = seed, .k = k};
        int64_t w = ncd_perf_check(&chk, recv);
        r->checked++;
        if (w)
            snprintf(r->err, sizeof r->err,
                     "%s algo %d ip %d op %d rank %d: %lld wrong", row->name,
                     algo, ip, op, r->rank, (long long)w);
        /* the checker sees a corrupted element where a result exists */
        int defined = !row->root_result || r->rank == root;
        if (!w && defined && k.recvcount && op == NCD_OP_SUM) {
            recv[3] ^= 0x40;
            if (ncd_perf_check(&chk, recv) != 1)
                snprintf(r->err, sizeof r->err,
                         "%s: a corrupted element is not caught", row->name);
            r->caught++;
        }
        rc = w ? -1 : 0;
    }
    free(sbuf);
    free(rbuf);
    r->runs++;
    return r->err[0] ? -1 : rc;
}

static void *rank_main(void *p)
{
    struct rank_arg *r = p;
    int n = r->m->n;
    struct ncd_ctx *ctx;
    ncd_ctx_new(NULL, NULL, &ctx);
    struct ncd_peerset *ps = NULL;
    if (ncd_peerset_connect(ctx, r->m->lfd[r->rank], r->rank, n, r->m->infos,
                            2, 42, 20000, &ps)) {
        snprintf(r->err, sizeof r->err, "mesh: %s", ncd_ctx_errdetail(ctx));
        ncd_ctx_free(ctx);
        pthread_barrier_wait(&r->m->done);
        return NULL;
    }
    atomic_int abort_flag = 0;
    struct ncd__sock_rank *eng = NULL;
    ncd__sock_rank_new(ps, r->rank, n, 2, 20000, &abort_flag, &eng);
    uint32_t seed = 1;
    for (int c = 0; c < NCD_COLL__COUNT && !r->err[0]; c++) {
        const struct ncd__coll *row = ncd__coll(c);
        if (row->needs_pow2 && (n & (n - 1)))
            continue;
        static const enum ncd_perf_op ops[] = {NCD_OP_SUM, NCD_OP_AVG,
                                               NCD_OP_MULSUM, NCD_OP_MAX};
        int nops = row->reduces ? 4 : 1;
        for (int algo = NCD_PERF_ALGO_RING; algo <= NCD_PERF_ALGO_DIRECT;
             algo++)
            for (int ip = 0; ip < 2; ip++)
                for (int o = 0; o < nops && !r->err[0]; o++)
                    run_one(r, eng, c, (enum ncd_perf_algo)algo, ip, ops[o],
                            row->has_root ? 1 : 0, seed++);
    }
    pthread_barrier_wait(&r->m->done);
    ncd__sock_rank_free(eng);
    ncd_peerset_free(ps);
    ncd_ctx_free(ctx);
    return NULL;
}

static void run_all_rows(int n)
{
    struct mesh m = {.n = n};
    struct ncd_ctx *ctx;
    ncd_ctx_new(NULL, NULL, &ctx);
    for (int i = 0; i < n; i++) {
        m.lfd[i] = ncd_peer_listen(ctx, "127.0.0.1", "lo", i, &m.infos[i]);
        assert_true(m.lfd[i] >= 0);
    }
    ncd_ctx_free(ctx);
    struct rank_arg ra[8];
    pthread_t th[8];
    pthread_barrier_init(&m.done, NULL, (unsigned)n);
    for (int i = 0; i < n; i++) {
        ra[i] = (struct rank_arg){.m = &m, .rank = i};
        pthread_create(&th[i], NULL, rank_main, &ra[i]);
    }
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&m.done);
    int caught = 0;
    char errs[8 * 520] = "";
    for (int i = 0; i < n; i++) {
        if (ra[i].err[0])
            snprintf(errs + strlen(errs), sizeof errs - strlen(errs),
                     "\n  rank %d: %s", i, ra[i].err);
        caught += ra[i].caught;
    }
    if (errs[0])
        fail_msg("n=%d:%s", n, errs);
    for (int i = 0; i < n; i++)
        assert_true(ra[i].checked > 0);
    /* every row, each algorithm and side: some rank caught a corruption */
    assert_true(caught >= (NCD_COLL__COUNT - (n & (n - 1) ? 1 : 0)) * 2);
}

static void test_rows_on_sockets_3(void **state)
{
    (void)state;
    run_all_rows(3); /* uneven segments; hypercube skipped */
}

static void test_rows_on_sockets_4(void **state)
{
    (void)state;
    run_all_rows(4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows_complete),
        cmocka_unit_test(test_busbw_performance_md),
        cmocka_unit_test(test_algbw),
        cmocka_unit_test(test_rows_on_sockets_3),
        cmocka_unit_test(test_rows_on_sockets_4),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
