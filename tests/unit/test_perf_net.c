/* SPDX-License-Identifier: MIT */
/*
 * perf's reusable connection layer (include/ncd/perf.h section 3) and the
 * socket engine, with every rank a thread on loopback: TCP process group
 * (allgather, stray connections, a process that goes away), the rank mesh
 * (stray and foreign connections rejected), and the engine's frame check
 * (ranks that disagree on sizes get an error, not a hang).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "ncd/ctx.h"
#include "ncd/error.h"
#include "ncd/perf.h"
#include "perf/sock_int.h"

/* A listening socket on 127.0.0.1 with an ephemeral port. */
static int listen_any(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof sa;
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(fd, 64), 0);
    getsockname(fd, (struct sockaddr *)&sa, &sl);
    *port = ntohs(sa.sin_port);
    return fd;
}

static void stray(int port, const void *data, size_t len)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0 && len)
        (void)!send(fd, data, len, MSG_NOSIGNAL);
    usleep(20000);
    close(fd);
}

/* ---- process group ------------------------------------------------------ */

struct pgarg {
    int nprocs, proc, port, lfd, rc, die_after_join, timeout_ms;
    char err[1024];
    int got[8];
};

static void *pg_thread(void *p)
{
    struct pgarg *a = p;
    struct ncd_ctx *ctx;
    ncd_ctx_new(NULL, NULL, &ctx);
    struct ncd_pg_params pp = {.nprocs = a->nprocs, .proc = a->proc,
                               .host = "127.0.0.1", .port = a->port,
                               .listen_fd = a->proc == 0 ? a->lfd : -1,
                               .token = 0,
                               .timeout_ms = a->timeout_ms ? a->timeout_ms
                                                           : 5000};
    struct ncd_pg *pg = NULL;
    a->rc = ncd_pg_tcp(ctx, &pp, &pg);
    if (!a->rc && a->die_after_join) {
        ncd_pg_free(pg); /* this "process" goes away */
        ncd_ctx_free(ctx);
        return NULL;
    }
    if (!a->rc) {
        int mine = 100 + a->proc;
        a->rc = ncd_pg_allgather(ctx, pg, &mine, sizeof mine, a->got);
    }
    snprintf(a->err, sizeof a->err, "%s", ncd_ctx_errdetail(ctx));
    ncd_pg_free(pg);
    ncd_ctx_free(ctx);
    return NULL;
}

static void test_pg_allgather(void **state)
{
    (void)state;
    int port, lfd = listen_any(&port);
    struct pgarg a[3];
    pthread_t th[3];
    for (int i = 0; i < 3; i++) {
        a[i] = (struct pgarg){.nprocs = 3, .proc = i, .port = port,
                              .lfd = lfd};
        pthread_create(&th[i], NULL, pg_thread, &a[i]);
        if (i == 0) {
            /* stray connections before the others join: ignored */
            stray(port, "GET / HTTP/1.0\r\n\r\n", 18);
            stray(port, NULL, 0);
            uint32_t bad[6] = {0x4e434450u, 99, 3, 1, 0, 0};
            stray(port, bad, sizeof bad); /* wrong protocol version */
        }
    }
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(a[i].rc, 0);
        for (int p = 0; p < 3; p++)
            assert_int_equal(a[i].got[p], 100 + p);
    }
}

static void test_pg_peer_dies(void **state)
{
    (void)state;
    int port, lfd = listen_any(&port);
    struct pgarg a[3];
    pthread_t th[3];
    for (int i = 0; i < 3; i++) {
        a[i] = (struct pgarg){.nprocs = 3, .proc = i, .port = port,
                              .lfd = lfd, .die_after_join = i == 2};
        pthread_create(&th[i], NULL, pg_thread, &a[i]);
    }
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    /* the root sees process 2 go and tells process 1 why */
    assert_int_equal(a[0].rc, NCD_EPEER);
    assert_non_null(strstr(a[0].err, "process 2 (127.0.0.1:"));
    assert_int_not_equal(a[1].rc, 0);
    assert_non_null(strstr(a[1].err, "process 2"));
}

/* ---- strangers on a listener (issue 14: the rendezvous under attack) --- */

/* A connection that stays open and says nothing. */
static int silent_conn(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    return fd;
}

/* A slowloris: one byte of a plausible hello every 300 ms. */
struct slow {
    int port, stop;
    pthread_t th;
};

static void *slowloris(void *p)
{
    struct slow *s = p;
    int fd = silent_conn(s->port);
    uint32_t h[6] = {0x4e434450u, 1, 3, 1, 0, 0};
    for (size_t i = 0; i < sizeof h && !s->stop; i++) {
        if (send(fd, (char *)h + i, 1, MSG_NOSIGNAL) != 1)
            break;
        usleep(300000);
    }
    close(fd);
    return NULL;
}

/* 1 when the root closed (dropped) this connection. */
static int dropped(int fd)
{
    char c;
    struct timeval tv = {.tv_sec = 3};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return read(fd, &c, 1) <= 0;
}

static void test_pg_under_attack(void **state)
{
    (void)state;
    /* ten silent connections, garbage, a slowloris and a process index out
     * of range reach the root before the job's processes: with hellos read
     * one at a time (5 s each) the 6 s rendezvous could not finish */
    int port, lfd = listen_any(&port);
    int quiet[10];
    for (int i = 0; i < 10; i++)
        quiet[i] = silent_conn(port);
    struct slow sl = {.port = port};
    pthread_create(&sl.th, NULL, slowloris, &sl);
    stray(port, "\x00\x01garbage garbage garbage", 24);
    uint32_t wrong[6] = {0x4e434450u, 1, 3, 7, 0, 0};
    stray(port, wrong, sizeof wrong);
    struct pgarg a[3];
    pthread_t th[3];
    for (int i = 0; i < 3; i++) {
        a[i] = (struct pgarg){.nprocs = 3, .proc = i, .port = port,
                              .lfd = lfd, .timeout_ms = 6000};
        pthread_create(&th[i], NULL, pg_thread, &a[i]);
    }
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    sl.stop = 1;
    pthread_join(sl.th, NULL);
    for (int i = 0; i < 3; i++) {
        if (a[i].rc)
            fail_msg("process %d: %s", i, a[i].err);
        for (int p = 0; p < 3; p++)
            assert_int_equal(a[i].got[p], 100 + p);
    }
    for (int i = 0; i < 10; i++) {
        assert_true(dropped(quiet[i]));
        close(quiet[i]);
    }
}

static void test_pg_silent_named(void **state)
{
    (void)state;
    /* process 1 never comes; the root's message says so and names the
     * connections that were not processes of this job */
    int port, lfd = listen_any(&port);
    int quiet[3];
    for (int i = 0; i < 3; i++)
        quiet[i] = silent_conn(port);
    struct pgarg a = {.nprocs = 2, .proc = 0, .port = port, .lfd = lfd,
                      .timeout_ms = 3000};
    pg_thread(&a);
    assert_int_equal(a.rc, NCD_ETIMEOUT);
    assert_non_null(strstr(a.err, "only 1 of 2 processes joined"));
    assert_non_null(strstr(a.err, "never joined: process 1"));
    assert_non_null(strstr(a.err, "3 connections sent no hello within 2.0 s "
                                  "(from 127.0.0.1:"));
    for (int i = 0; i < 3; i++)
        close(quiet[i]);
}

/* Claims process `proc` of `nprocs` with a valid hello and returns the fd;
 * *refusal receives the root's refusal text, if it refused. */
static int claim(int port, uint32_t nprocs, uint32_t proc, char *refusal,
                 size_t len)
{
    int fd = silent_conn(port);
    uint32_t h[6] = {0x4e434450u, 1, nprocs, proc, 0, 0};
    assert_int_equal(write(fd, h, sizeof h), (ssize_t)sizeof h);
    refusal[0] = 0;
    struct timeval tv = {.tv_sec = 1};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    uint32_t rep[6];
    if (read(fd, rep, sizeof rep) == (ssize_t)sizeof rep && rep[1] != 0) {
        ssize_t n = read(fd, refusal, len - 1);
        refusal[n > 0 ? n : 0] = 0;
    }
    return fd;
}

static void test_pg_duplicate_rank(void **state)
{
    (void)state;
    /* a rogue claims process 1 after the real one joined: refused with the
     * holder's address, and the job runs */
    int port, lfd = listen_any(&port);
    struct pgarg a[3];
    pthread_t th[3];
    for (int i = 0; i < 2; i++) {
        a[i] = (struct pgarg){.nprocs = 3, .proc = i, .port = port,
                              .lfd = lfd, .timeout_ms = 6000};
        pthread_create(&th[i], NULL, pg_thread, &a[i]);
    }
    usleep(500000);
    char why[400];
    int rogue = claim(port, 3, 1, why, sizeof why);
    assert_non_null(strstr(why, "process 1 has already checked in from "
                                "127.0.0.1:"));
    close(rogue);
    a[2] = (struct pgarg){.nprocs = 3, .proc = 2, .port = port, .lfd = lfd,
                          .timeout_ms = 6000};
    pthread_create(&th[2], NULL, pg_thread, &a[2]);
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < 3; i++)
        if (a[i].rc)
            fail_msg("process %d: %s", i, a[i].err);
}

/* ---- rank mesh and engine --------------------------------------------- */

struct rk {
    int rank, nranks, nsocks;
    int lfd;
    struct ncd_rank_info *infos;
    uint64_t token;
    int rc;
    char err[512];
    size_t count;  /* elements this rank passes to all_reduce */
    int64_t wrong;
};

static void *mesh_thread(void *p)
{
    struct rk *r = p;
    struct ncd_ctx *ctx;
    ncd_ctx_new(NULL, NULL, &ctx);
    struct ncd_peerset *ps = NULL;
    r->rc = ncd_peerset_connect(ctx, r->lfd, r->rank, r->nranks, r->infos,
                                r->nsocks, r->token, 5000, &ps);
    if (r->rc) {
        snprintf(r->err, sizeof r->err, "%s", ncd_ctx_errdetail(ctx));
        ncd_ctx_free(ctx);
        return NULL;
    }
    atomic_int abort_flag = 0;
    struct ncd__sock_rank *eng;
    assert_int_equal(ncd__sock_rank_new(ps, r->rank, r->nranks, 2, 3000,
                                        &abort_flag, &eng),
                     0);
    float *send = malloc(r->count * 4), *recv = malloc(r->count * 4);
    ncd_perf_fill(NCD_DT_FLOAT, NCD_OP_SUM, send, 0, r->count, r->rank, 1);
    struct ncd_perf_counts k;
    ncd_perf_counts(NCD_COLL_ALL_REDUCE, r->count * 4, 4, r->nranks, r->rank,
                    &k);
    r->rc = ncd__sock_coll(eng, NCD_COLL_ALL_REDUCE, NCD_DT_FLOAT, NCD_OP_SUM,
                           0, send, recv, &k, NCD_PERF_ALGO_RING);
    if (r->rc) {
        snprintf(r->err, sizeof r->err, "%s", ncd__sock_rank_error(eng));
    } else {
        struct ncd_perf_check c = {.coll = NCD_COLL_ALL_REDUCE,
                                   .dtype = NCD_DT_FLOAT, .op = NCD_OP_SUM,
                                   .nranks = r->nranks, .rank = r->rank,
                                   .seed = 1, .k = k};
        r->wrong = ncd_perf_check(&c, recv);
    }
    free(send);
    free(recv);
    ncd__sock_rank_free(eng);
    ncd_peerset_free(ps);
    ncd_ctx_free(ctx);
    return NULL;
}

static void run_mesh(struct rk *r, int n, int nsocks, const size_t *counts,
                     int inject_strays)
{
    struct ncd_rank_info infos[8];
    struct ncd_ctx *ctx;
    ncd_ctx_new(NULL, NULL, &ctx);
    for (int i = 0; i < n; i++) {
        r[i] = (struct rk){.rank = i, .nranks = n, .nsocks = nsocks,
                           .infos = infos, .token = 0x1234567890abcdefull,
                           .count = counts[i]};
        r[i].lfd = ncd_peer_listen(ctx, "127.0.0.1", "lo", i, &infos[i]);
        assert_true(r[i].lfd >= 0);
        assert_string_equal(infos[i].addr, "127.0.0.1");
    }
    int quiet[10];
    struct slow sl = {.port = infos[0].port};
    if (inject_strays) {
        /* garbage, a foreign token, a bad destination: all rejected */
        stray(infos[0].port, "hello", 5);
        uint32_t h[8] = {0x4e434453u, 1, 0xdead, 0xbeef, 2, 0, 0,
                         (uint32_t)nsocks};
        stray(infos[0].port, h, sizeof h);
    }
    if (inject_strays > 1) {
        /* ten mute connections and a slowloris on rank 0's listener */
        for (int i = 0; i < 10; i++)
            quiet[i] = silent_conn(infos[0].port);
        pthread_create(&sl.th, NULL, slowloris, &sl);
    }
    pthread_t th[8];
    for (int i = 0; i < n; i++)
        pthread_create(&th[i], NULL, mesh_thread, &r[i]);
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    if (inject_strays > 1) {
        sl.stop = 1;
        pthread_join(sl.th, NULL);
        for (int i = 0; i < 10; i++) {
            assert_true(dropped(quiet[i]));
            close(quiet[i]);
        }
    }
    ncd_ctx_free(ctx);
}

static void test_mesh_allreduce(void **state)
{
    (void)state;
    struct rk r[4];
    size_t counts[4] = {300001, 300001, 300001, 300001};
    run_mesh(r, 4, 3, counts, 1);
    for (int i = 0; i < 4; i++) {
        if (r[i].rc)
            fail_msg("rank %d: %s", i, r[i].err);
        assert_int_equal(r[i].wrong, 0);
    }
}

static void test_mesh_under_attack(void **state)
{
    (void)state;
    /* strangers on rank 0's data listener cost the job nothing */
    struct rk r[3];
    size_t counts[3] = {300001, 300001, 300001};
    run_mesh(r, 3, 2, counts, 2);
    for (int i = 0; i < 3; i++)
        if (r[i].rc)
            print_message("rank %d: %s\n", i, r[i].err);
    for (int i = 0; i < 3; i++) {
        if (r[i].rc)
            fail_msg("rank %d: %s", i, r[i].err);
        assert_int_equal(r[i].wrong, 0);
    }
}

static void test_mesh_stranger_named(void **state)
{
    (void)state;
    /* rank 1 never connects; rank 0's message says so and names the
     * strangers that did */
    struct ncd_rank_info infos[2];
    struct ncd_ctx *ctx;
    ncd_ctx_new(NULL, NULL, &ctx);
    int lfd = ncd_peer_listen(ctx, "127.0.0.1", "lo", 0, &infos[0]);
    infos[1] = infos[0];
    infos[1].rank = 1;
    int q = silent_conn(infos[0].port);
    stray(infos[0].port, "\xde\xad\xbe\xef garbage: not a hello at all!",
          34);
    struct ncd_peerset *ps = NULL;
    int rc = ncd_peerset_connect(ctx, lfd, 0, 2, infos, 1, 42, 3000, &ps);
    assert_int_equal(rc, NCD_ETIMEOUT);
    const char *e = ncd_ctx_errdetail(ctx);
    assert_non_null(strstr(e, "rank 0: rank 1 (host "));
    assert_non_null(strstr(e, "never connected (timeout 3 s)"));
    assert_non_null(strstr(e, "1 connection sent no hello within 2.0 s "
                              "(from 127.0.0.1:"));
    assert_non_null(strstr(e, "1 connection rejected (127.0.0.1:"));
    assert_non_null(strstr(e, "not an nccl-doctor rank (bad magic)"));
    close(q);
    ncd_ctx_free(ctx);
}

static void test_mesh_size_mismatch(void **state)
{
    (void)state;
    /* rank 1 thinks the message is bigger: frames do not match */
    struct rk r[2];
    size_t counts[2] = {100000, 100004};
    run_mesh(r, 2, 1, counts, 0);
    int saw = 0;
    for (int i = 0; i < 2; i++) {
        assert_int_not_equal(r[i].rc, 0);
        if (strstr(r[i].err, "unexpected frame") &&
            strstr(r[i].err, "ranks disagree"))
            saw = 1;
    }
    assert_true(saw);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pg_allgather),
        cmocka_unit_test(test_pg_peer_dies),
        cmocka_unit_test(test_pg_under_attack),
        cmocka_unit_test(test_pg_silent_named),
        cmocka_unit_test(test_pg_duplicate_rank),
        cmocka_unit_test(test_mesh_allreduce),
        cmocka_unit_test(test_mesh_under_attack),
        cmocka_unit_test(test_mesh_stranger_named),
        cmocka_unit_test(test_mesh_size_mismatch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
