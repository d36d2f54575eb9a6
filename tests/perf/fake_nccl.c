/* SPDX-License-Identifier: MIT */
/*
 * TEST-ONLY stand-in for libnccl.so.2, working on host memory between the
 * threads of ONE process (no network).  It implements the ABI nccl-doctor's
 * loader resolves (ncclResult_t = int, ncclUniqueId = 128 bytes by value,
 * comm = pointer) with NCCL's semantics for AllReduce, Broadcast, Reduce,
 * AllGather, ReduceScatter, Send/Recv in groups and PreMulSum, so the nccl
 * backend (src/lib/perf/nccl.c) runs end to end without a GPU.
 * Every rank posts its group's operations, all ranks meet at a barrier,
 * each computes its own outputs into private memory, meets again, then
 * copies them out (in-place safe).  FAKE_NCCL_VERSION sets the version code;
 * FAKE_NCCL_TRACE=FILE records rank 0's calls.
 * Switches for `verify`'s statuses:
 *   FAKE_NCCL_INIT_FAIL=1  ncclCommInitRank fails (ncclSystemError, with a
 *                          ncclGetLastError text)
 *   FAKE_NCCL_DELAY_US=N   every collective takes N µs more (a slow link)
 *   FAKE_NCCL_CORRUPT=1    rank 0's all_reduce result has one wrong element
 *   FAKE_NCCL_WAIT_S=N     FAKE_NCCL_XPROC's waits for the other processes
 *                          give up after N s (default 60)
 *   FAKE_NCCL_XPROC=1      ranks in different processes: communicators meet
 *                          in a shared-memory file named by the unique id
 *                          (/dev/shm, unlinked once every rank joined) and
 *                          only ncclAllReduce is offered (at most 64 MiB)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define MAXR 64
#define MAXOPS 1024

typedef struct {
    char internal[128];
} uid_t128;

enum { K_AR, K_BC, K_RD, K_AG, K_RS, K_SEND, K_RECV };

struct op {
    int kind, dt, redop, root, peer;
    const void *send;
    void *recv;
    size_t count;
};

struct clique {
    char id[128];
    int nranks, joined, left;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int bar_count;
    unsigned bar_gen;
    struct op *posted[MAXR];
    int nposted[MAXR];
    double scalar[MAXR][16]; /* premulsum scalars per rank, op id - 5 */
    int nscalar[MAXR];
    struct clique *next;
};

struct xclique;

struct comm {
    struct clique *c;
    struct xclique *x; /* FAKE_NCCL_XPROC: the shared clique */
    int rank;
};

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static struct clique *reg;
static __thread int group_depth;
static __thread struct op *queue;
static __thread int nqueue;
static __thread struct comm *qcomm;

static void barrier(struct clique *c)
{
    pthread_mutex_lock(&c->mu);
    unsigned g = c->bar_gen;
    if (++c->bar_count == c->nranks) {
        c->bar_count = 0;
        c->bar_gen++;
        pthread_cond_broadcast(&c->cv);
    } else {
        while (g == c->bar_gen)
            pthread_cond_wait(&c->cv, &c->mu);
    }
    pthread_mutex_unlock(&c->mu);
}

EXPORT int ncclGetVersion(int *v);
EXPORT int ncclGetVersion(int *v)
{
    const char *e = getenv("FAKE_NCCL_VERSION");
    *v = e ? atoi(e) : 22805;
    return 0;
}

EXPORT const char *ncclGetErrorString(int r);
EXPORT const char *ncclGetErrorString(int r)
{
    switch (r) {
    case 0:
        return "no error";
    case 2:
        return "unhandled system error (run with NCCL_DEBUG=INFO for "
               "details)";
    case 4:
        return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case 5:
        return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    default:
        return "unknown result code";
    }
}

EXPORT const char *ncclGetLastError(void *comm);
EXPORT const char *ncclGetLastError(void *comm)
{
    (void)comm;
    return getenv("FAKE_NCCL_INIT_FAIL") ? "fake NCCL: init failure asked "
                                           "for by FAKE_NCCL_INIT_FAIL"
                                         : "";
}

static void delay(void)
{
    const char *e = getenv("FAKE_NCCL_DELAY_US");
    long us = e ? atol(e) : 0;
    if (us > 0) {
        struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
        nanosleep(&ts, NULL);
    }
}

/* ---- FAKE_NCCL_XPROC: a clique in shared memory ----------------------- */

#define XSLOT (64u << 20)
#define XMAGIC 0x66616b65u

struct xclique {
    unsigned magic;
    int nranks, joined;
    int bar_count;
    unsigned bar_gen;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* then, from offset 4096, nranks slots of XSLOT bytes */
};

static char *xslot(struct xclique *x, int r)
{
    return (char *)x + 4096 + (size_t)r * XSLOT;
}

/* A barrier of the processes; -1 after FAKE_NCCL_WAIT_S (60) s: a rank
 * died or never came. */
static int xbarrier(struct xclique *x)
{
    int rc = 0;
    const char *ws = getenv("FAKE_NCCL_WAIT_S");
    long wait_s = ws && atol(ws) > 0 ? atol(ws) : 60;
    pthread_mutex_lock(&x->mu);
    unsigned g = x->bar_gen;
    if (++x->bar_count == x->nranks) {
        x->bar_count = 0;
        x->bar_gen++;
        pthread_cond_broadcast(&x->cv);
    } else {
        struct timespec dl;
        clock_gettime(CLOCK_REALTIME, &dl);
        dl.tv_sec += wait_s;
        while (g == x->bar_gen && rc == 0)
            rc = pthread_cond_timedwait(&x->cv, &x->mu, &dl);
    }
    pthread_mutex_unlock(&x->mu);
    return rc ? -1 : 0;
}

static void nap_10ms(void)
{
    struct timespec ts = {0, 10000000};
    nanosleep(&ts, NULL);
}

/* Rank 0 (or whoever comes first) creates the file; the others wait for
 * it to be complete.  The name goes once every rank has it mapped. */
static int xjoin(struct comm *cm, int nranks, const char *id, int rank)
{
    char name[200];
    snprintf(name, sizeof name, "/dev/shm/ncd-%.120s", id);
    for (char *p = name + 13; *p; p++)
        if (*p == '/')
            *p = '_';
    size_t size = 4096 + (size_t)nranks * XSLOT;
    struct xclique *x = MAP_FAILED;
    int fd = open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) {
        if (ftruncate(fd, (off_t)size) == 0)
            x = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        if (x == MAP_FAILED) {
            unlink(name);
            return 2;
        }
        pthread_mutexattr_t ma;
        pthread_mutexattr_init(&ma);
        pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
        pthread_mutex_init(&x->mu, &ma);
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
        pthread_cond_init(&x->cv, &ca);
        x->nranks = nranks;
        __atomic_store_n(&x->magic, XMAGIC, __ATOMIC_RELEASE);
    } else {
        struct stat st;
        for (int i = 0; i < 1000 && fd < 0; i++) {
            fd = open(name, O_RDWR | O_CLOEXEC);
            if (fd >= 0 && (fstat(fd, &st) < 0 || (size_t)st.st_size < size)) {
                close(fd);
                fd = -1;
            }
            if (fd < 0)
                nap_10ms();
        }
        if (fd < 0)
            return 2;
        x = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        if (x == MAP_FAILED)
            return 2;
        for (int i = 0;
             i < 1000 && __atomic_load_n(&x->magic, __ATOMIC_ACQUIRE) != XMAGIC;
             i++)
            nap_10ms();
    }
    if (x->magic != XMAGIC || x->nranks != nranks) {
        munmap(x, size);
        return 4;
    }
    cm->x = x;
    cm->rank = rank;
    if (xbarrier(x)) {
        /* a rank never came (a process without a GPU, a killed one): the
         * file would be left in /dev/shm by every such test run */
        unlink(name);
        return 2;
    }
    if (rank == 0)
        unlink(name);
    return 0;
}

static void xleave(struct comm *cm)
{
    struct xclique *x = cm->x;
    munmap(x, 4096 + (size_t)x->nranks * XSLOT);
    free(cm);
}

static void reduce_all(struct clique *c, int me, int dt, int redop,
                       const void *const *src, size_t off, size_t n,
                       void *out);

/* One all_reduce through the slots: copy in, meet, reduce, meet. */
static int xallreduce(struct comm *cm, const void *s, void *r, size_t n,
                      int dt, int op)
{
    static const size_t xesz[10] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};
    struct xclique *x = cm->x;
    if (op < 0 || op > 4 || n * xesz[dt] > XSLOT)
        return 5;
    memcpy(xslot(x, cm->rank), s, n * xesz[dt]);
    if (xbarrier(x))
        return 2;
    struct clique *c = calloc(1, sizeof *c);
    if (!c)
        return 2;
    c->nranks = x->nranks;
    const void *src[MAXR];
    for (int i = 0; i < x->nranks && i < MAXR; i++)
        src[i] = xslot(x, i);
    reduce_all(c, cm->rank, dt, op, src, 0, n, r);
    free(c);
    if (cm->rank == 0 && n && getenv("FAKE_NCCL_CORRUPT"))
        ((unsigned char *)r)[0] ^= 0x5a;
    delay();
    return xbarrier(x) ? 2 : 0;
}


EXPORT int ncclGetUniqueId(uid_t128 *id);
EXPORT int ncclGetUniqueId(uid_t128 *id)
{
    memset(id, 0, sizeof *id);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(id->internal, sizeof id->internal, "fake-nccl-%ld-%ld-%p",
             (long)ts.tv_sec, ts.tv_nsec, (void *)id);
    return 0;
}

EXPORT int ncclCommInitRank(struct comm **out, int nranks, uid_t128 id,
                            int rank);
EXPORT int ncclCommInitRank(struct comm **out, int nranks, uid_t128 id,
                            int rank)
{
    if (nranks < 1 || nranks > MAXR || rank < 0 || rank >= nranks)
        return 4;
    if (getenv("FAKE_NCCL_INIT_FAIL"))
        return 2; /* ncclSystemError */
    if (getenv("FAKE_NCCL_XPROC")) {
        struct comm *cm = calloc(1, sizeof *cm);
        int rc = cm ? xjoin(cm, nranks, id.internal, rank) : 2;
        if (rc)
            free(cm);
        else
            *out = cm;
        return rc;
    }
    pthread_mutex_lock(&reg_mu);
    struct clique *c = reg;
    while (c && memcmp(c->id, id.internal, 128) != 0)
        c = c->next;
    if (!c) {
        c = calloc(1, sizeof *c);
        memcpy(c->id, id.internal, 128);
        c->nranks = nranks;
        pthread_mutex_init(&c->mu, NULL);
        pthread_cond_init(&c->cv, NULL);
        c->next = reg;
        reg = c;
    }
    c->joined++;
    pthread_mutex_unlock(&reg_mu);
    /* wait for everyone (all ranks must be threads of this process) */
    for (int i = 0; i < 1000; i++) {
        pthread_mutex_lock(&c->mu);
        int j = c->joined;
        pthread_mutex_unlock(&c->mu);
        if (j == nranks)
            break;
        if (i == 999)
            return 2; /* the other ranks are in other processes */
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    struct comm *cm = calloc(1, sizeof *cm);
    cm->c = c;
    cm->rank = rank;
    *out = cm;
    return 0;
}

static void leave(struct comm *cm)
{
    if (!cm)
        return;
    if (cm->x) {
        xleave(cm);
        return;
    }
    pthread_mutex_lock(&reg_mu);
    struct clique *c = cm->c;
    if (++c->left == c->nranks) {
        struct clique **pp = &reg;
        while (*pp && *pp != c)
            pp = &(*pp)->next;
        if (*pp)
            *pp = c->next;
        pthread_mutex_destroy(&c->mu);
        pthread_cond_destroy(&c->cv);
        free(c);
    }
    pthread_mutex_unlock(&reg_mu);
    free(cm);
}

EXPORT int ncclCommDestroy(struct comm *cm);
EXPORT int ncclCommDestroy(struct comm *cm)
{
    leave(cm);
    return 0;
}

EXPORT int ncclCommAbort(struct comm *cm);
EXPORT int ncclCommAbort(struct comm *cm)
{
    leave(cm);
    return 0;
}

EXPORT int ncclCommGetAsyncError(struct comm *cm, int *r);
EXPORT int ncclCommGetAsyncError(struct comm *cm, int *r)
{
    (void)cm;
    *r = 0;
    return 0;
}

static const size_t esz[10] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};

#include "perf/half.h"

static double ld(int dt, const void *p, size_t i)
{
    const char *b = (const char *)p + i * esz[dt];
    switch (dt) {
    case 6: {
        uint16_t h;
        memcpy(&h, b, 2);
        return ncd__h2f(h);
    }
    case 7: {
        float f;
        memcpy(&f, b, 4);
        return f;
    }
    case 8: {
        double d;
        memcpy(&d, b, 8);
        return d;
    }
    default: { /* 9: bfloat16 */
        uint16_t u;
        memcpy(&u, b, 2);
        uint32_t w = (uint32_t)u << 16;
        float f;
        memcpy(&f, &w, 4);
        return f;
    }
    }
}

static void st(int dt, void *p, size_t i, double v)
{
    char *b = (char *)p + i * esz[dt];
    switch (dt) {
    case 6: {
        uint16_t h = ncd__f2h((float)v);
        memcpy(b, &h, 2);
        break;
    }
    case 7: {
        float f = (float)v;
        memcpy(b, &f, 4);
        break;
    }
    case 8:
        memcpy(b, &v, 8);
        break;
    default: {
        float f = (float)v;
        uint32_t w;
        memcpy(&w, &f, 4);
        w += 0x7fffu + ((w >> 16) & 1u);
        uint16_t u = (uint16_t)(w >> 16);
        memcpy(b, &u, 2);
        break;
    }
    }
}

static int64_t ldi(int dt, const void *p, size_t i)
{
    const char *b = (const char *)p + i * esz[dt];
    switch (dt) {
    case 0:
        return *(const int8_t *)b;
    case 1:
        return *(const uint8_t *)b;
    case 2: {
        int32_t v;
        memcpy(&v, b, 4);
        return v;
    }
    case 3: {
        uint32_t v;
        memcpy(&v, b, 4);
        return v;
    }
    default: {
        int64_t v;
        memcpy(&v, b, 8);
        return v;
    }
    }
}

/* out[i] = reduction over ranks of src[r][off + i] */
static void reduce_all(struct clique *c, int me, int dt, int redop,
                       const void *const *src, size_t off, size_t n,
                       void *out)
{
    int fl = dt >= 6;
    for (size_t i = 0; i < n; i++) {
        if (fl) {
            double acc = 0;
            for (int r = 0; r < c->nranks; r++) {
                double x = ld(dt, src[r], off + i);
                if (redop >= 5)
                    x *= c->scalar[r][redop - 5];
                if (r == 0)
                    acc = x;
                else if (redop == 1)
                    acc *= x;
                else if (redop == 2)
                    acc = x > acc ? x : acc;
                else if (redop == 3)
                    acc = x < acc ? x : acc;
                else
                    acc += x;
            }
            if (redop == 4) {
                /* sum rounded to the type, then divided, as the checker */
                st(dt, out, i, acc);
                acc = (float)ld(dt, out, i) / (float)c->nranks;
                if (dt == 8)
                    acc = ld(dt, out, i) / c->nranks;
            }
            st(dt, out, i, acc);
        } else {
            int bits = (int)esz[dt] * 8;
            uint64_t mask = bits == 64 ? ~0ull : (1ull << bits) - 1;
            int sgn = dt == 0 || dt == 2 || dt == 4;
            uint64_t acc = 0;
            int64_t sacc = 0;
            for (int r = 0; r < c->nranks; r++) {
                int64_t x = ldi(dt, src[r], off + i);
                uint64_t ux = (uint64_t)x;
                if (redop >= 5)
                    ux *= (uint64_t)c->scalar[r][redop - 5];
                if (r == 0) {
                    acc = ux;
                    sacc = x;
                } else if (redop == 1) {
                    acc *= ux;
                } else if (redop == 2) {
                    if (sgn ? x > sacc : (ux & mask) > (acc & mask)) {
                        acc = ux;
                        sacc = x;
                    }
                } else if (redop == 3) {
                    if (sgn ? x < sacc : (ux & mask) < (acc & mask)) {
                        acc = ux;
                        sacc = x;
                    }
                } else {
                    acc += ux;
                }
            }
            if (redop == 4) {
                acc &= mask;
                if (sgn) {
                    int sh = 64 - bits;
                    int64_t s = sh ? (int64_t)(acc << sh) >> sh : (int64_t)acc;
                    acc = (uint64_t)(s / c->nranks);
                } else {
                    acc /= (uint64_t)c->nranks;
                }
            }
            memcpy((char *)out + i * esz[dt], &acc, esz[dt]);
        }
    }
}

static int execute(struct comm *cm, struct op *ops, int n)
{
    struct clique *c = cm->c;
    int me = cm->rank, nr = c->nranks;
    c->posted[me] = ops;
    c->nposted[me] = n;
    barrier(c);
    /* compute into private buffers */
    void **res = calloc((size_t)n, sizeof(void *));
    int coll_idx = 0;
    for (int i = 0; i < n; i++) {
        struct op *o = &ops[i];
        size_t es = esz[o->dt];
        if (o->kind == K_SEND)
            continue;
        if (o->kind == K_RECV) {
            /* k-th recv from peer matches peer's k-th send to me */
            int k = 0;
            for (int j = 0; j < i; j++)
                k += ops[j].kind == K_RECV && ops[j].peer == o->peer;
            struct op *po = c->posted[o->peer];
            for (int j = 0; j < c->nposted[o->peer]; j++)
                if (po[j].kind == K_SEND && po[j].peer == me && k-- == 0) {
                    res[i] = malloc(o->count * es + 1);
                    memcpy(res[i], po[j].send, o->count * es);
                    break;
                }
            continue;
        }
        /* collectives match by position among collectives */
        const void *src[MAXR];
        for (int r = 0; r < nr; r++) {
            int k = 0;
            for (int j = 0; j < c->nposted[r]; j++)
                if (c->posted[r][j].kind != K_SEND &&
                    c->posted[r][j].kind != K_RECV && k++ == coll_idx) {
                    src[r] = c->posted[r][j].send;
                    break;
                }
        }
        coll_idx++;
        size_t outn = o->kind == K_AG ? o->count * (size_t)nr : o->count;
        res[i] = malloc(outn * es + 1);
        switch (o->kind) {
        case K_AR:
            reduce_all(c, me, o->dt, o->redop, src, 0, o->count, res[i]);
            /* FAKE_NCCL_CORRUPT=1: rank 0 gets one wrong element, to test
             * that wrong results are caught and reported */
            if (me == 0 && o->count && getenv("FAKE_NCCL_CORRUPT"))
                ((unsigned char *)res[i])[0] ^= 0x5a;
            break;
        case K_RD:
            if (me == o->root)
                reduce_all(c, me, o->dt, o->redop, src, 0, o->count, res[i]);
            else {
                free(res[i]);
                res[i] = NULL;
            }
            break;
        case K_RS:
            reduce_all(c, me, o->dt, o->redop, src, (size_t)me * o->count,
                       o->count, res[i]);
            break;
        case K_BC:
            memcpy(res[i], src[o->root], o->count * es);
            break;
        case K_AG:
            for (int r = 0; r < nr; r++)
                memcpy((char *)res[i] + (size_t)r * o->count * es, src[r],
                       o->count * es);
            break;
        }
    }
    barrier(c);
    for (int i = 0; i < n; i++) {
        if (!res[i])
            continue;
        size_t es = esz[ops[i].dt];
        size_t outn = ops[i].kind == K_AG ? ops[i].count * (size_t)nr
                                          : ops[i].count;
        memcpy(ops[i].recv, res[i], outn * es);
        free(res[i]);
    }
    free(res);
    barrier(c);
    delay();
    return 0;
}

/* FAKE_NCCL_TRACE=FILE: rank 0 appends "<call> <count>" for every
 * operation it is given (grouped or not), to test what the caller runs. */
static void trace(const struct comm *cm, const struct op *o)
{
    static const char *const names[] = {"AllReduce", "Broadcast", "Reduce",
                                        "AllGather", "ReduceScatter", "Send",
                                        "Recv"};
    const char *path = getenv("FAKE_NCCL_TRACE");
    if (!path || cm->rank != 0)
        return;
    FILE *f = fopen(path, "a");
    if (!f)
        return;
    fprintf(f, "%s %zu\n", names[o->kind], o->count);
    fclose(f);
}

static int post(struct comm *cm, struct op o)
{
    if (o.dt < 0 || o.dt > 9)
        return 4;
    trace(cm, &o);
    if (cm->x) /* shared memory: one all_reduce at a time, no groups */
        return o.kind == K_AR && group_depth == 0
                   ? xallreduce(cm, o.send, o.recv, o.count, o.dt, o.redop)
                   : 5;
    if (group_depth == 0)
        return execute(cm, &o, 1);
    if (nqueue == MAXOPS)
        return 5;
    if (!queue)
        queue = malloc(sizeof(struct op) * MAXOPS);
    queue[nqueue++] = o;
    qcomm = cm;
    return 0;
}

EXPORT int ncclGroupStart(void);
EXPORT int ncclGroupStart(void)
{
    group_depth++;
    return 0;
}

EXPORT int ncclGroupEnd(void);
EXPORT int ncclGroupEnd(void)
{
    if (group_depth == 0)
        return 5;
    if (--group_depth > 0)
        return 0;
    int r = 0;
    if (nqueue)
        r = execute(qcomm, queue, nqueue);
    nqueue = 0;
    return r;
}

EXPORT int ncclAllReduce(const void *s, void *r, size_t n, int dt, int op,
                         struct comm *cm, void *st);
EXPORT int ncclAllReduce(const void *s, void *r, size_t n, int dt, int op,
                         struct comm *cm, void *stream)
{
    (void)stream;
    return post(cm, (struct op){K_AR, dt, op, 0, 0, s, r, n});
}

EXPORT int ncclBroadcast(const void *s, void *r, size_t n, int dt, int root,
                         struct comm *cm, void *st);
EXPORT int ncclBroadcast(const void *s, void *r, size_t n, int dt, int root,
                         struct comm *cm, void *stream)
{
    (void)stream;
    return post(cm, (struct op){K_BC, dt, 0, root, 0, s, r, n});
}

EXPORT int ncclReduce(const void *s, void *r, size_t n, int dt, int op,
                      int root, struct comm *cm, void *st);
EXPORT int ncclReduce(const void *s, void *r, size_t n, int dt, int op,
                      int root, struct comm *cm, void *stream)
{
    (void)stream;
    return post(cm, (struct op){K_RD, dt, op, root, 0, s, r, n});
}

EXPORT int ncclAllGather(const void *s, void *r, size_t n, int dt,
                         struct comm *cm, void *st);
EXPORT int ncclAllGather(const void *s, void *r, size_t n, int dt,
                         struct comm *cm, void *stream)
{
    (void)stream;
    return post(cm, (struct op){K_AG, dt, 0, 0, 0, s, r, n});
}

EXPORT int ncclReduceScatter(const void *s, void *r, size_t n, int dt, int op,
                             struct comm *cm, void *st);
EXPORT int ncclReduceScatter(const void *s, void *r, size_t n, int dt, int op,
                             struct comm *cm, void *stream)
{
    (void)stream;
    return post(cm, (struct op){K_RS, dt, op, 0, 0, s, r, n});
}

EXPORT int ncclSend(const void *s, size_t n, int dt, int peer,
                    struct comm *cm, void *st);
EXPORT int ncclSend(const void *s, size_t n, int dt, int peer,
                    struct comm *cm, void *stream)
{
    (void)stream;
    return post(cm, (struct op){K_SEND, dt, 0, 0, peer, s, NULL, n});
}

EXPORT int ncclRecv(void *r, size_t n, int dt, int peer, struct comm *cm,
                    void *st);
EXPORT int ncclRecv(void *r, size_t n, int dt, int peer, struct comm *cm,
                    void *stream)
{
    (void)stream;
    return post(cm, (struct op){K_RECV, dt, 0, 0, peer, NULL, r, n});
}

EXPORT int ncclRedOpCreatePreMulSum(int *op, void *scalar, int dt, int res,
                                    struct comm *cm);
EXPORT int ncclRedOpCreatePreMulSum(int *op, void *scalar, int dt, int res,
                                    struct comm *cm)
{
    (void)res;
    struct clique *c = cm->c;
    int k = c->nscalar[cm->rank]++ % 16;
    double v;
    if (dt >= 6)
        v = ld(dt, scalar, 0);
    else
        v = (double)ldi(dt, scalar, 0);
    c->scalar[cm->rank][k] = v;
    *op = 5 + k;
    return 0;
}

EXPORT int ncclRedOpDestroy(int op, struct comm *cm);
EXPORT int ncclRedOpDestroy(int op, struct comm *cm)
{
    (void)op;
    cm->c->nscalar[cm->rank]--;
    return 0;
}
