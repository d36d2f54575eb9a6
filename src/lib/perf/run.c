/* SPDX-License-Identifier: MIT */
/*
 * The benchmark runner: one thread per rank of this process, the size
 * sweep, timing, data check and aggregation of nccl-tests
 * (src/common.cu: TimeTest, BenchTime, CheckData; v2.19.6).
 *
 * Timing: per side, one untimed operation and a barrier (BenchTime's
 * "Sync"), then wall clock over iters x agg operations, divided by iters x
 * agg, then combined across ranks per -a (0 rank 0, 1 mean, 2 min, 3
 * max).  -C reports instead the host time spent issuing the operations
 * (before the final wait; with -z 3 the per-iteration time without the
 * barriers), rank 0's own, per operation; algbw/busbw keep the combined
 * time.  -I records each iteration (device events where the backend has
 * them, else the host clock), divided by agg; per iteration the largest
 * over a process's ranks is that process's row and the largest over the
 * processes the iteration's time (src/util.cu computeIterStats).
 * Warm-up (TimeTest): -w operations at every size from -b doubling up to
 * -e (-b 0 warms 0, then 1, 2, 4 ...: nccl-tests would loop for ever).
 * Check: inputs regenerated (ncd_perf_fill), one operation, every
 * element compared (ncd_perf_check); #wrong is summed over ranks.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ncd/ctx.h"
#include "ncd/error.h"
#include "ncd/perf.h"
#include "ncd/sock.h"
#include "perf/backend.h"
#include "perf/perf_int.h"

#define BLOB_MAX 1024

static void rt_fail_v(struct ncd__rt *rt, int stage, int status,
                      const char *quote, const char *fmt, va_list ap)
    __attribute__((format(printf, 5, 0)));
static void rt_fail_v(struct ncd__rt *rt, int stage, int status,
                      const char *quote, const char *fmt, va_list ap)
{
    pthread_mutex_lock(&rt->mu);
    if (!rt->status) {
        vsnprintf(rt->error, sizeof rt->error, fmt, ap);
        snprintf(rt->quote, sizeof rt->quote, "%s", quote ? quote : "");
        rt->status = status ? status : NCD_PT_INTERNAL;
        rt->fail_stage = stage;
    }
    atomic_store(&rt->abort, 1);
    pthread_cond_broadcast(&rt->cv);
    pthread_mutex_unlock(&rt->mu);
}

void ncd__rt_fail(struct ncd__rt *rt, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rt_fail_v(rt, atomic_load(&rt->stage), status, NULL, fmt, ap);
    va_end(ap);
}

void ncd__rt_fail_at(struct ncd__rt *rt, enum ncd_perf_stage stage,
                     int status, const char *quote, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rt_fail_v(rt, (int)stage, status, quote, fmt, ap);
    va_end(ap);
}

void ncd__rt_stage(struct ncd__rt *rt, enum ncd_perf_stage stage)
{
    atomic_store(&rt->stage, (int)stage);
}

/* Barrier of this process's rank threads; -1 when the process aborts. */
static int local_barrier(struct ncd__rt *rt)
{
    pthread_mutex_lock(&rt->mu);
    if (atomic_load(&rt->abort)) {
        pthread_mutex_unlock(&rt->mu);
        return -1;
    }
    unsigned gen = rt->bar_gen;
    if (++rt->bar_count == rt->nlocal) {
        rt->bar_count = 0;
        rt->bar_gen++;
        pthread_cond_broadcast(&rt->cv);
    } else {
        while (gen == rt->bar_gen && !atomic_load(&rt->abort))
            pthread_cond_wait(&rt->cv, &rt->mu);
    }
    int rc = atomic_load(&rt->abort) ? -1 : 0;
    pthread_mutex_unlock(&rt->mu);
    return rc;
}

int ncd__rt_allgather(struct ncd__rank *rk, const void *mine, size_t len,
                      void *all)
{
    struct ncd__rt *rt = rk->rt;
    if (len > rt->blob_max)
        return NCD_EINVAL;
    memcpy(rt->blob_mine + (size_t)rk->local * len, mine, len);
    if (local_barrier(rt))
        return NCD_EPEER;
    if (rk->local == 0) {
        int rc = ncd_pg_allgather(rt->ctx, rt->job->pg, rt->blob_mine,
                                  len * (size_t)rt->nlocal, rt->blob_all);
        if (rc)
            ncd__rt_fail(rt, rc == NCD_ETIMEOUT ? NCD_PT_TIMEOUT : NCD_PT_NCCL,
                         "%s", ncd_ctx_errdetail(rt->ctx));
    }
    if (local_barrier(rt))
        return NCD_EPEER;
    memcpy(all, rt->blob_all, len * (size_t)rt->nranks);
    return 0;
}

static int global_barrier(struct ncd__rank *rk)
{
    char c = 0;
    char *all = malloc((size_t)rk->rt->nranks);
    if (!all)
        return NCD_ENOMEM;
    int rc = ncd__rt_allgather(rk, &c, 1, all);
    free(all);
    return rc;
}

struct cellres {
    double t;
    int64_t wrong;
};

/* What one timed loop gave, in seconds. */
struct optimes {
    double elapsed; /* the loop until every operation completed */
    double launch;  /* the host time issuing them (nccl-tests cputimeSec) */
    double *iter;   /* -I: `iters` entries (the whole iteration), or NULL */
};

/*
 * Runs `iters` outer iterations of agg_iters operations (fused in a group
 * with -m) with nccl-tests' -z semantics and fills *ot.  -z 1: wait and
 * barrier after each iteration (timed); -z 2: wait only; -z 3: wait and
 * barrier after each iteration, the barrier not timed.
 */
static int run_ops(struct ncd__rank *rk, int iters, enum ncd_perf_dtype t,
                   enum ncd_perf_op op, int root, const void *send,
                   void *recv, const struct ncd_perf_counts *k,
                   struct optimes *ot)
{
    struct ncd__rt *rt = rk->rt;
    const struct ncd__backend *be = rt->be;
    enum ncd_perf_coll c = rt->o->coll;
    int agg = rt->o->agg_iters > 0 ? rt->o->agg_iters : 1;
    int z = rt->o->blocking;
    double (*clk)(void) = ncd_sock_now;
    /* device timer only for plain wall-clock runs without barriers */
    int devtimer = be->timer_start && be->timer_stop && z != 1 && z != 3;
    if (devtimer && be->timer_start(rk))
        devtimer = 0;
    /* -I: device events per iteration where the backend has them */
    double *it = ot->iter;
    int devit = it && be->iter_begin && be->iter_mark && be->iter_read &&
                be->iter_begin(rk, iters) == 0;
    double t0 = clk(), coll_only = 0, prev = t0;
    for (int i = 0; i < iters; i++) {
        double ti = clk();
        if (it && !devit && i > 0 && z != 3)
            it[i - 1] = ti - prev;
        prev = ti;
        if (devit && be->iter_mark(rk, i, 0))
            return -1;
        if (agg > 1 && be->group_start && be->group_start(rk))
            return -1;
        for (int a = 0; a < agg; a++)
            if (be->run_coll(rk, c, t, op, root, send, recv, k))
                return -1;
        if (agg > 1 && be->group_end && be->group_end(rk))
            return -1;
        if (z >= 1) {
            if (be->sync(rk))
                return -1;
            if (z == 3) {
                double te = clk();
                coll_only += te - ti;
                if (it && !devit)
                    it[i] = te - ti;
            }
            if (devit && z == 3 && be->iter_mark(rk, i, 1))
                return -1;
            if (z != 2 && global_barrier(rk))
                return -1;
        }
        if (devit && z != 3 && be->iter_mark(rk, i, 1))
            return -1;
    }
    ot->launch = z == 3 ? coll_only : clk() - t0;
    if (be->sync(rk))
        return -1;
    double tend = clk();
    if (it && !devit && iters > 0 && z != 3)
        it[iters - 1] = tend - prev;
    ot->elapsed = z == 3 ? coll_only : tend - t0;
    if (devtimer) {
        double d = be->timer_stop(rk);
        if (d >= 0)
            ot->elapsed = d;
    }
    if (devit && be->iter_read(rk, iters, it))
        return -1;
    return 0;
}

static void buffers_for(struct ncd__rank *rk, const struct ncd_perf_counts *k,
                        size_t es, int inplace, char **send, char **recv)
{
    if (inplace) {
        *send = rk->recv + k->send_inplace_off * es;
        *recv = rk->recv + k->recv_inplace_off * es;
    } else {
        *send = rk->send;
        *recv = rk->recv;
    }
}

static int check_once(struct ncd__rank *rk, enum ncd_perf_dtype t,
                      enum ncd_perf_op op, int root, int inplace,
                      const struct ncd_perf_counts *k, uint32_t seed,
                      int64_t *wrong)
{
    struct ncd__rt *rt = rk->rt;
    const struct ncd__backend *be = rt->be;
    size_t es = ncd_perf_dtype_size(t);
    char *send, *recv;
    buffers_for(rk, k, es, inplace, &send, &recv);
    /* inputs: host pattern, copied to the backend's buffer */
    char *h = rk->hsend ? rk->hsend : send;
    ncd_perf_fill(t, op, h, 0, k->sendcount, rk->rank, seed);
    if (rk->hsend && be->to_dev(rk, send, h, k->sendcount * es))
        return -1;
    if (be->run_coll(rk, rt->o->coll, t, op, root, send, recv, k) ||
        be->sync(rk))
        return -1;
    char *got = recv;
    if (rk->hrecv) {
        if (be->to_host(rk, rk->hrecv, recv, k->recvcount * es))
            return -1;
        got = rk->hrecv;
    }
    struct ncd_perf_check chk = {.coll = rt->o->coll, .dtype = t, .op = op,
                                 .nranks = rt->nranks, .rank = rk->rank,
                                 .root = root, .seed = seed, .k = *k};
    *wrong = ncd_perf_check(&chk, got);
    if (*wrong < 0) {
        ncd__rt_fail(rt, NCD_PT_INTERNAL, "out of memory while checking");
        return -1;
    }
    return 0;
}

struct totals {
    double bw_sum;
    int ncells;
    int oob;
};

/* -I samples of one side, on global rank 0 (kept until the row is out). */
struct iterside {
    struct ncd_perf_iterstats st;
    double *times;   /* per iteration, max over the processes (µs) */
    double *proc;    /* nprocs x iters (µs) */
};

static void iterside_free(struct iterside *s)
{
    free(s->times);
    free(s->proc);
    memset(s, 0, sizeof *s);
}

/*
 * Collective over all ranks: each rank's per-iteration times (µs per op,
 * n of them) are gathered in blocks the allgather can carry; rank 0 takes
 * per iteration the largest of each process's ranks (its row) and of the
 * processes, and fills *out.
 */
static int gather_iters(struct ncd__rank *rk, const double *mine, int n,
                        struct iterside *out)
{
    struct ncd__rt *rt = rk->rt;
    int np = rt->job->nprocs, nl = rt->nlocal;
    size_t chunk = rt->blob_max / sizeof(double);
    double *all = malloc(sizeof *all * chunk * (size_t)rt->nranks);
    int root = rk->rank == 0;
    if (root) {
        out->times = calloc((size_t)n, sizeof *out->times);
        out->proc = calloc((size_t)n * (size_t)np, sizeof *out->proc);
    }
    if (!all || (root && (!out->times || !out->proc))) {
        free(all);
        ncd__rt_fail(rt, NCD_PT_INTERNAL, "out of memory");
        return -1;
    }
    for (int i0 = 0; i0 < n; i0 += (int)chunk) {
        int m = n - i0 < (int)chunk ? n - i0 : (int)chunk;
        double blk[BLOB_MAX / sizeof(double)];
        memset(blk, 0, sizeof blk);
        memcpy(blk, mine + i0, sizeof *blk * (size_t)m);
        if (ncd__rt_allgather(rk, blk, chunk * sizeof *blk, all)) {
            free(all);
            return -1;
        }
        for (int r = 0; root && r < rt->nranks; r++)
            for (int i = 0; i < m; i++) {
                double v = all[(size_t)r * chunk + (size_t)i];
                double *p = &out->proc[(size_t)(r / nl) * n + i0 + i];
                if (r % nl == 0 || v > *p)
                    *p = v;
            }
    }
    free(all);
    if (!root)
        return 0;
    for (int p = 0; p < np; p++)
        for (int i = 0; i < n; i++) {
            double v = out->proc[(size_t)p * n + i];
            if (p == 0 || v > out->times[i])
                out->times[i] = v;
        }
    if (ncd_perf_iter_stats(out->times, n, rt->o->per_iter_skip, &out->st)) {
        ncd__rt_fail(rt, NCD_PT_INTERNAL, "out of memory");
        return -1;
    }
    /* nccl-tests writes process rows only with several processes */
    out->st.nprocs = np > 1 ? np : 0;
    out->st.proc_times_us = np > 1 ? out->proc : NULL;
    return 0;
}

static int bench_side(struct ncd__rank *rk, enum ncd_perf_dtype t,
                      enum ncd_perf_op op, int root, int ip,
                      const struct ncd_perf_counts *k, double *itbuf,
                      struct ncd_perf_cell *cell, struct iterside *its)
{
    struct ncd__rt *rt = rk->rt;
    const struct ncd_perf_opts *o = rt->o;
    size_t es = ncd_perf_dtype_size(t);
    char *send, *recv;
    buffers_for(rk, k, es, ip, &send, &recv);
    /* BenchTime's "Sync": one untimed operation, then a barrier */
    if (rt->be->run_coll(rk, o->coll, t, op, root, send, recv, k) ||
        rt->be->sync(rk) || global_barrier(rk))
        return -1;
    struct optimes ot = {0, 0, itbuf};
    if (run_ops(rk, o->iters, t, op, root, send, recv, k, &ot))
        return -1;
    int agg = o->agg_iters > 0 ? o->agg_iters : 1;
    int nops = o->iters * agg;
    struct cellres mine = {ot.elapsed / (nops > 0 ? nops : 1), -1};
    /* sendrecv and alltoallv in-place are not checked (nccl-tests prints
     * N/A); nor are fp8 results, which the host cannot reduce bit-exactly
     * like the GPU (nccl backend only: the socket backend refuses fp8) */
    int skip_check = (ip && !ncd_perf_coll_checks_inplace(o->coll)) ||
                     t == NCD_DT_F8E4M3 || t == NCD_DT_F8E5M2;
    if (o->check && !skip_check) {
        mine.wrong = 0;
        for (int c = 0; c < o->check; c++) {
            int64_t w = 0;
            if (check_once(rk, t, op, root, ip, k, (uint32_t)c + 1, &w))
                return -1;
            if (w) { /* the first failing iteration is reported */
                mine.wrong = w;
                break;
            }
        }
    }
    struct cellres *all = malloc(sizeof *all * (size_t)rt->nranks);
    if (!all) {
        ncd__rt_fail(rt, NCD_PT_INTERNAL, "out of memory");
        return -1;
    }
    if (ncd__rt_allgather(rk, &mine, sizeof mine, all)) {
        free(all);
        return -1;
    }
    double tt = all[0].t;
    int64_t wrong = all[0].wrong < 0 ? -1 : 0;
    for (int r = 0; r < rt->nranks; r++) {
        if (r && o->average == 1)
            tt += all[r].t;
        if (o->average == 2 && all[r].t < tt)
            tt = all[r].t;
        if (o->average == 3 && all[r].t > tt)
            tt = all[r].t;
        if (wrong >= 0 && all[r].wrong > 0)
            wrong += all[r].wrong;
    }
    if (o->average == 1)
        tt /= rt->nranks;
    free(all);
    cell->bw_time_us = tt * 1e6;
    /* -C: this rank's own issuing time (only rank 0's row is printed) */
    cell->time_us = o->report_cputime
                        ? ot.launch / (nops > 0 ? nops : 1) * 1e6
                        : tt * 1e6;
    ncd_perf_bw(o->coll, k, es, rt->nranks, tt, &cell->algbw, &cell->busbw);
    cell->wrong = wrong;
    if (itbuf) {
        for (int i = 0; i < o->iters; i++)
            itbuf[i] = itbuf[i] / agg * 1e6;
        if (gather_iters(rk, itbuf, o->iters, its))
            return -1;
        cell->iter = rk->rank == 0 ? &its->st : NULL;
    }
    return 0;
}

static int bench_size(struct ncd__rank *rk, enum ncd_perf_dtype t,
                      enum ncd_perf_op op, int root, size_t bytes,
                      struct totals *tot)
{
    struct ncd__rt *rt = rk->rt;
    const struct ncd_perf_opts *o = rt->o;
    size_t es = ncd_perf_dtype_size(t);
    struct ncd_perf_counts k;
    ncd_perf_counts_traffic(o->coll, bytes, es, rt->nranks, rk->rank,
                            o->traffic, &k);
    struct ncd_perf_row row;
    memset(&row, 0, sizeof row);
    row.bytes = k.bytes;
    row.count = k.paramcount;
    row.type = ncd_perf_dtype_name(t);
    row.redop = ncd_perf_redop_label(o->coll, op);
    row.root = ncd_perf_coll_has_root(o->coll) ? root : -1;
    double *itbuf = NULL;
    if (o->per_iter_timing && o->iters > 0 &&
        !(itbuf = calloc((size_t)o->iters, sizeof *itbuf))) {
        ncd__rt_fail(rt, NCD_PT_INTERNAL, "out of memory");
        return -1;
    }
    struct iterside its[2];
    memset(its, 0, sizeof its);
    int failing_sides = 0, rc = 0;
    for (int ip = 0; ip < 2 && !rc; ip++) {
        struct ncd_perf_cell *cell = ip ? &row.ip : &row.oop;
        rc = bench_side(rk, t, op, root, ip, &k, itbuf, cell, &its[ip]);
        if (rc)
            break;
        if (cell->wrong > 0)
            failing_sides++;
        tot->bw_sum += cell->busbw;
        tot->ncells++;
    }
    free(itbuf);
    if (rc) {
        iterside_free(&its[0]);
        iterside_free(&its[1]);
        return -1;
    }
    /* nccl-tests counts one error per thread and failing row side */
    tot->oob += failing_sides * rt->job->nprocs * o->nthreads;
    if (rk->rank == 0) {
        if (o->report_timestamps) {
            time_t now = time(NULL);
            struct tm tmv;
            localtime_r(&now, &tmv);
            strftime(row.timestamp, sizeof row.timestamp, "%Y-%m-%d %H:%M:%S",
                     &tmv);
        }
        if (rt->sink && rt->sink->row)
            rt->sink->row(rt->sink->arg, &row);
    }
    iterside_free(&its[0]);
    iterside_free(&its[1]);
    return 0;
}

/* nccl-tests TimeTest: -w operations (out-of-place) at every size from -b
 * doubling up to -e, whatever -f / -i say, each followed by a wait. */
static int warmup(struct ncd__rank *rk, enum ncd_perf_dtype t,
                  enum ncd_perf_op op, int root)
{
    struct ncd__rt *rt = rk->rt;
    const struct ncd_perf_opts *o = rt->o;
    size_t es = ncd_perf_dtype_size(t);
    if (o->warmup_iters <= 0)
        return 0;
    for (size_t size = o->minbytes; size <= o->maxbytes;) {
        struct ncd_perf_counts k;
        ncd_perf_counts_traffic(o->coll, size, es, rt->nranks, rk->rank,
                                o->traffic, &k);
        for (int i = 0; i < o->warmup_iters; i++)
            if (rt->be->run_coll(rk, o->coll, t, op, root, rk->send,
                                 rk->recv, &k))
                return -1;
        if (rt->be->sync(rk))
            return -1;
        if (size > SIZE_MAX / 2)
            break;
        size = size ? size * 2 : 1;
    }
    return 0;
}

static void *rank_main(void *arg)
{
    struct ncd__rank *rk = arg;
    struct ncd__rt *rt = rk->rt;
    const struct ncd_perf_opts *o = rt->o;
    const struct ncd__backend *be = rt->be;
    struct ncd_perf_device *devs = NULL;
    size_t *sizes = NULL;
    int inited = 0, allocated = 0;

    ncd__rt_stage(rt, NCD_PERF_STAGE_INIT);
    if (be->rank_init(rk))
        goto out;
    inited = 1;
    struct ncd_perf_device me;
    memset(&me, 0, sizeof me);
    be->describe(rk, &me);
    devs = calloc((size_t)rt->nranks, sizeof *devs);
    if (!devs) {
        ncd__rt_fail(rt, NCD_PT_INTERNAL, "out of memory");
        goto out;
    }
    if (ncd__rt_allgather(rk, &me, sizeof me, devs))
        goto out;
    if (rk->rank == 0 && rt->sink && rt->sink->preamble)
        rt->sink->preamble(rt->sink->arg, rt->nccl_version, rt->desc, devs,
                           rt->nranks);

    /* Buffers: the largest send/recv of the sweep, plus -u elements. */
    size_t need = ncd_perf_buffer_bytes(o, rt->nranks);
    ncd__rt_stage(rt, NCD_PERF_STAGE_ALLOC);
    if (be->alloc(rk, need ? need : 1))
        goto out;
    ncd__rt_stage(rt, NCD_PERF_STAGE_SYNC);
    allocated = 1;

    size_t nsizes = ncd_perf_sweep(o->minbytes, o->maxbytes, o->stepbytes,
                                   o->stepfactor, NULL, 0);
    sizes = malloc(sizeof *sizes * (nsizes ? nsizes : 1));
    if (!sizes) {
        ncd__rt_fail(rt, NCD_PT_INTERNAL, "out of memory");
        goto out;
    }
    ncd_perf_sweep(o->minbytes, o->maxbytes, o->stepbytes, o->stepfactor,
                   sizes, nsizes);

    char *base_send = rk->send, *base_recv = rk->recv;
    struct totals tot = {0, 0, 0};
    for (int cyc = 0; o->run_cycles == 0 || cyc < o->run_cycles; cyc++) {
        for (int t = 0; t < NCD_DT__COUNT; t++) {
            if (o->dtype >= 0 ? t != o->dtype
                              : (t == NCD_DT_F8E4M3 || t == NCD_DT_F8E5M2))
                continue;
            size_t es = ncd_perf_dtype_size((enum ncd_perf_dtype)t);
            rk->send = base_send + (size_t)o->unalign * es;
            rk->recv = base_recv + (size_t)o->unalign * es;
            for (int op = 0; op < NCD_OP__COUNT; op++) {
                if (ncd_perf_coll_loops_ops(o->coll)) {
                    if (o->op >= 0 ? op != o->op : 0)
                        continue;
                } else if (op != NCD_OP_SUM) {
                    continue;
                }
                int r0 = 0, r1 = 0;
                if (ncd_perf_coll_has_root(o->coll)) {
                    if (o->root < 0) {
                        r0 = 0;
                        r1 = rt->nranks - 1;
                    } else {
                        r0 = r1 = o->root;
                    }
                }
                for (int root = r0; root <= r1; root++) {
                    if (warmup(rk, (enum ncd_perf_dtype)t,
                               (enum ncd_perf_op)op, root))
                        goto out;
                    for (size_t i = 0; i < nsizes; i++) {
                        if (rk->rank == 0 && rt->job->progress && rt->sink &&
                            rt->sink->progress)
                            rt->sink->progress(rt->sink->arg, i, nsizes,
                                               sizes[i]);
                        if (bench_size(rk, (enum ncd_perf_dtype)t,
                                       (enum ncd_perf_op)op, root, sizes[i],
                                       &tot))
                            goto out;
                    }
                }
            }
        }
    }
    rk->send = base_send;
    rk->recv = base_recv;
    if (be->mem_usage)
        be->mem_usage(rk, rk->mem);
    rk->bw_sum = tot.bw_sum;
    rk->ncells = tot.ncells;
    rk->oob = tot.oob;
out:
    if (allocated) {
        be->free(rk);
    }
    if (inited)
        be->rank_fini(rk);
    free(devs);
    free(sizes);
    return NULL;
}

int ncd_perf_run(struct ncd_ctx *ctx, const struct ncd_perf_opts *o,
                 const struct ncd_perf_job *job,
                 const struct ncd_perf_sink *sink,
                 struct ncd_perf_summary *sum)
{
    memset(sum, 0, sizeof *sum);
    struct ncd__rt *rt = calloc(1, sizeof *rt);
    if (!rt)
        return NCD_PT_INTERNAL;
    rt->o = o;
    rt->job = job;
    rt->sink = sink;
    rt->ctx = ctx;
    rt->nlocal = job->ranks_per_proc;
    rt->nranks = job->nprocs * job->ranks_per_proc;
    rt->be = job->backend == NCD_PERF_BACKEND_NCCL ? &ncd__backend_nccl
                                                   : &ncd__backend_socket;
    pthread_mutex_init(&rt->mu, NULL);
    pthread_cond_init(&rt->cv, NULL);
    atomic_init(&rt->abort, 0);
    atomic_init(&rt->stage, NCD_PERF_STAGE_OPEN);
    rt->blob_max = BLOB_MAX;
    rt->blob_mine = malloc(BLOB_MAX * (size_t)rt->nlocal);
    rt->blob_all = malloc(BLOB_MAX * (size_t)rt->nranks);
    rt->ranks = calloc((size_t)rt->nlocal, sizeof *rt->ranks);
    int status = 0;
    if (!rt->blob_mine || !rt->blob_all || !rt->ranks) {
        status = NCD_PT_INTERNAL;
        snprintf(sum->error, sizeof sum->error, "out of memory");
        goto done;
    }
    ncd_pg_set_abort(job->pg, &rt->abort);
    ncd_pg_set_timeout(job->pg, job->peer_timeout_ms);
    ncd__rt_stage(rt, NCD_PERF_STAGE_OPEN);
    status = rt->be->open(rt);
    sum->nccl_version = rt->nccl_version;
    if (status) {
        snprintf(sum->error, sizeof sum->error, "%s", rt->error);
        snprintf(sum->quote, sizeof sum->quote, "%s", rt->quote);
        sum->stage = rt->fail_stage ? (enum ncd_perf_stage)rt->fail_stage
                                    : NCD_PERF_STAGE_OPEN;
        goto done;
    }
    int started = 0;
    for (int i = 0; i < rt->nlocal; i++) {
        struct ncd__rank *rk = &rt->ranks[i];
        rk->rt = rt;
        rk->local = i;
        rk->rank = job->proc * rt->nlocal + i;
        if (ncd_ctx_new(NULL, NULL, &rk->ctx) < 0) {
            ncd__rt_fail(rt, NCD_PT_INTERNAL, "out of memory");
            break;
        }
        if (pthread_create(&rk->th, NULL, rank_main, rk) != 0) {
            ncd__rt_fail(rt, NCD_PT_INTERNAL, "cannot start rank thread: %s",
                         strerror(errno));
            ncd_ctx_free(rk->ctx);
            rk->ctx = NULL;
            break;
        }
        started++;
    }
    for (int i = 0; i < started; i++)
        pthread_join(rt->ranks[i].th, NULL);
    for (int i = 0; i < rt->nlocal; i++)
        ncd_ctx_free(rt->ranks[i].ctx);
    rt->be->close(rt);
    if (rt->status) {
        status = rt->status;
        snprintf(sum->error, sizeof sum->error, "%s", rt->error);
        snprintf(sum->quote, sizeof sum->quote, "%s", rt->quote);
        sum->stage = (enum ncd_perf_stage)rt->fail_stage;
    } else {
        const struct ncd__rank *r0 = &rt->ranks[0];
        sum->oob = r0->oob;
        sum->ncells = r0->ncells;
        sum->avg_busbw = r0->ncells ? r0->bw_sum / r0->ncells : 0;
        memcpy(sum->mem, r0->mem, sizeof sum->mem);
        if (sum->oob)
            status = NCD_PT_WRONG;
        if (o->min_bw >= 0 && sum->avg_busbw < o->min_bw * 0.9)
            status = NCD_PT_WRONG;
        if (status)
            sum->stage = NCD_PERF_STAGE_RESULT;
    }
done:
    ncd_pg_set_abort(job->pg, NULL);
    sum->status = status;
    free(rt->blob_mine);
    free(rt->blob_all);
    free(rt->ranks);
    pthread_mutex_destroy(&rt->mu);
    pthread_cond_destroy(&rt->cv);
    free(rt);
    return status;
}
