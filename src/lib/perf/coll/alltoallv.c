/* SPDX-License-Identifier: MIT */
/*
 * alltoallv: every rank sends each peer its own number of bytes, given by
 * a traffic (struct ncd_perf_traffic, include/ncd/perf.h): generated
 * (distance-weighted, NCCL_TESTS_ALLTOALLV_SPREAD) or a matrix file
 * (NCCL_TESTS_ALLTOALLV_MATRIX_FILE, _MATRIX_SCALE).  Facts from
 * NVIDIA/nccl-tests v2.19.6 src/alltoallv.cu:
 *  - rank i's send buffer is its segments for ranks 0..n-1 in rank order;
 *    its receive buffer the segments from ranks 0..n-1 in rank order;
 *    one grouped ncclSend/ncclRecv per non-empty segment;
 *  - the count column is the per-peer count of the generated pattern (0
 *    with a matrix); the size column and algbw use the largest send or
 *    receive total of any rank; busbw = algbw x (n-1)/n;
 *  - in-place is run (send and receive on the receive buffer) but not
 *    checked: its #wrong is N/A;
 *  - a matrix needs -b = -e >= the largest per-rank total and at least
 *    nranks rows; its errors end the test with status 1 (testInternal).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncd/ctx.h"
#include "ncd/error.h"
#include "ncd/readall.h"
#include "perf/coll.h"
#include "perf/nccl_api.h"
#include "perf/sock_coll.h"

/* ---- the traffic ------------------------------------------------------- */

void ncd_perf_traffic_default(struct ncd_perf_traffic *t)
{
    memset(t, 0, sizeof *t);
    t->spread = 1.0;
    t->scale = 1.0;
}

void ncd_perf_traffic_release(struct ncd_perf_traffic *t)
{
    free(t->bytes);
    free(t->path);
    ncd_perf_traffic_default(t);
}

size_t ncd_perf_traffic_peer(const struct ncd_perf_traffic *t, int i, int j,
                             int nranks, size_t total)
{
    if (t && t->matrix)
        return t->bytes && i < t->dim && j < t->dim
                   ? t->bytes[(size_t)i * (size_t)t->dim + (size_t)j]
                   : 0;
    if (nranks <= 1)
        return total & ~(size_t)15;
    double spread = t ? t->spread : 1.0;
    int distance = ((j - i) % nranks + nranks) % nranks;
    double sum_d = (double)nranks * (nranks - 1) / 2;
    double uniform = (double)total / nranks;
    double dist = (double)distance * (double)total / sum_d;
    double b = (1.0 - spread) * uniform + spread * dist;
    return b > 0 ? (size_t)b & ~(size_t)15 : 0;
}

/* A double from a variable as nccl-tests reads it: the whole value must be
 * a number (strtod), else `dflt`.  NaN is refused too (nccl-tests would
 * then cast NaN to size_t). */
static double env_double(struct ncd_ctx *ctx, const char *name, double dflt)
{
    const char *s = ncd_getenv(ctx, name);
    if (!s)
        return dflt;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno == ERANGE || end == s || *end || isnan(v))
        return dflt;
    return v;
}

/* Value at p as strtod reads it; 0 with *v, or 1 when p holds no number. */
static int number_at(const char *p, char **end, double *v)
{
    errno = 0;
    *v = strtod(p, end);
    return *end == p || errno == ERANGE || isnan(*v);
}

int ncd_perf_traffic_parse(struct ncd_perf_traffic *t, const char *buf,
                           size_t len, const char *name, char *why,
                           size_t whylen)
{
    if (memchr(buf, '\0', len)) {
        snprintf(why, whylen,
                 "Invalid alltoallv traffic matrix, file %s holds a NUL "
                 "byte.",
                 name);
        return NCD_EPARSE;
    }
    char *text = malloc(len + 1);
    if (!text)
        return NCD_ENOMEM;
    memcpy(text, buf, len);
    text[len] = '\0';
    size_t rows = 0, cols = 0, tmp_cols = 0;
    int rc = NCD_EPARSE;
    size_t *cells = NULL;
    /* first pass: validate, count rows and columns */
    for (char *p = text; *p;) {
        if (isspace((unsigned char)*p)) {
            if (*p == '\n' && tmp_cols > 0) {
                if (rows == 0) {
                    cols = tmp_cols;
                } else if (tmp_cols != cols) {
                    snprintf(why, whylen,
                             "Invalid alltoallv traffic matrix column count "
                             "in file %s row %zu. Expected %zu columns, got "
                             "%zu.",
                             name, rows, cols, tmp_cols);
                    goto out;
                }
                tmp_cols = 0;
                rows++;
            }
            p++;
            continue;
        }
        char *end;
        double v;
        if (number_at(p, &end, &v) ||
            (*end && !isspace((unsigned char)*end))) {
            snprintf(why, whylen,
                     "Invalid alltoallv traffic matrix value at row %zu col "
                     "%zu in file %s.",
                     rows, tmp_cols, name);
            goto out;
        }
        if (v < 0.0) {
            snprintf(why, whylen,
                     "Invalid alltoallv traffic matrix value at row %zu col "
                     "%zu in file %s. Value must be non-negative.",
                     rows, tmp_cols, name);
            goto out;
        }
        long double scaled = (long double)v * (long double)t->scale;
        if (isnan(scaled) || scaled > (long double)SIZE_MAX) {
            snprintf(why, whylen,
                     "Invalid alltoallv traffic matrix value at row %zu col "
                     "%zu in file %s. Value overflow (value=%g scale=%g).",
                     rows, tmp_cols, name, v, t->scale);
            goto out;
        }
        tmp_cols++;
        p = end;
    }
    if (tmp_cols > 0) {
        if (rows == 0) {
            cols = tmp_cols;
        } else if (tmp_cols != cols) {
            snprintf(why, whylen,
                     "Invalid alltoallv traffic matrix column count in file "
                     "%s row %zu. Expected %zu columns, got %zu.",
                     name, rows, cols, tmp_cols);
            goto out;
        }
        rows++;
    }
    if (rows == 0) {
        snprintf(why, whylen,
                 "Invalid alltoallv traffic matrix, file %s is empty.", name);
        goto out;
    }
    if (rows != cols) {
        snprintf(why, whylen,
                 "Invalid alltoallv traffic matrix, file %s must be square "
                 "(got %zux%zu).",
                 name, rows, cols);
        goto out;
    }
    if (rows > 1u << 16) {
        snprintf(why, whylen,
                 "Invalid alltoallv traffic matrix, file %s has %zu rows "
                 "(at most 65536).",
                 name, rows);
        goto out;
    }
    cells = malloc(rows * cols * sizeof *cells);
    if (!cells) {
        rc = NCD_ENOMEM;
        goto out;
    }
    /* second pass: the values, scaled, truncated, rounded down to 16 */
    size_t k = 0;
    for (char *p = text; *p;) {
        if (isspace((unsigned char)*p)) {
            p++;
            continue;
        }
        char *end;
        double v;
        number_at(p, &end, &v);
        long double scaled = (long double)v * (long double)t->scale;
        cells[k++] = (size_t)scaled & ~(size_t)15;
        p = end;
    }
    free(t->bytes);
    t->bytes = cells;
    cells = NULL;
    t->dim = (int)rows;
    t->matrix = 1;
    rc = 0;
out:
    free(cells);
    free(text);
    return rc;
}

int ncd_perf_traffic_load(struct ncd_ctx *ctx, struct ncd_perf_traffic *t)
{
    ncd_perf_traffic_release(t);
    const char *ps = ncd_getenv(ctx, "NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY");
    t->print_summary = ps && atoi(ps) != 0;
    double s = env_double(ctx, "NCCL_TESTS_ALLTOALLV_SPREAD", 1.0);
    t->spread = s < 0 ? 0 : s > 1 ? 1 : s;
    s = env_double(ctx, "NCCL_TESTS_ALLTOALLV_MATRIX_SCALE", 1.0);
    t->scale = s < 0 ? 0 : s;
    const char *file = ncd_getenv(ctx, "NCCL_TESTS_ALLTOALLV_MATRIX_FILE");
    if (!file)
        return 0;
    /* set, even empty: matrix mode (nccl-tests then fails to open "") */
    t->matrix = 1;
    if (!(t->path = strdup(file)))
        return NCD_ENOMEM;
    struct ncd_rdbuf rb = {0};
    if (ncd_read_file(file, &rb)) {
        int e = errno;
        ncd_rdbuf_release(&rb);
        return ncd_fail(ctx, e == ENOMEM ? NCD_ENOMEM : NCD_ENOENT,
                        "Unable to open alltoallv traffic matrix file %s. "
                        "(%s)",
                        file, strerror(e));
    }
    char why[512];
    int rc = ncd_perf_traffic_parse(t, rb.data, rb.len, file, why,
                                    sizeof why);
    ncd_rdbuf_release(&rb);
    if (rc == NCD_ENOMEM)
        return ncd_fail(ctx, rc, "out of memory reading %s", file);
    return rc ? ncd_fail(ctx, rc, "%s", why) : 0;
}

/* Rank r's send (dir 0) or receive (dir 1) total in elements. */
static size_t rank_total(const struct ncd_perf_traffic *t, int r, int dir,
                         int n, size_t total, size_t es)
{
    size_t sum = 0;
    for (int p = 0; p < n; p++)
        sum += (dir ? ncd_perf_traffic_peer(t, p, r, n, total)
                    : ncd_perf_traffic_peer(t, r, p, n, total)) /
               es;
    return sum;
}

/* The largest send or receive total of any rank, in elements (nccl-tests
 * ComputeMaxCounts: a generated pattern is balanced, a matrix is not). */
static size_t max_total(const struct ncd_perf_traffic *t, int n, size_t total,
                        size_t es)
{
    if (!t || !t->matrix)
        return rank_total(t, 0, 0, n, total, es);
    size_t m = 0;
    for (int r = 0; r < n; r++)
        for (int dir = 0; dir < 2; dir++) {
            size_t v = rank_total(t, r, dir, n, total, es);
            m = v > m ? v : m;
        }
    return m;
}

void ncd_perf_fmt_traffic_summary(struct ncd_strbuf *sb,
                                  const struct ncd_perf_traffic *t,
                                  int nranks, size_t total, double sec)
{
    if (t && t->matrix)
        ncd_sb_printf(sb,
                      "# NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY: mode=matrix "
                      "nranks=%d matrix_dim=%d scale=%.3f time_usec=%.2f\n",
                      nranks, t->dim, t->scale, sec * 1.0E6);
    else
        ncd_sb_printf(sb,
                      "# NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY: mode=generated "
                      "nranks=%d total_bytes=%zu spread=%.3f "
                      "time_usec=%.2f\n",
                      nranks, total, t ? t->spread : 1.0, sec * 1.0E6);
    double factor = nranks > 0 ? (double)(nranks - 1) / nranks : 0;
    for (int r = 0; r < nranks; r++) {
        size_t s = rank_total(t, r, 0, nranks, total, 1);
        size_t v = rank_total(t, r, 1, nranks, total, 1);
        double alg = (double)(s > v ? s : v) / 1.0E9 / sec;
        ncd_sb_printf(sb,
                      "#   rank=%d send_bytes=%zu recv_bytes=%zu alg_bw=%.2f "
                      "bus_bw=%.2f\n",
                      r, s, v, alg, alg * factor);
    }
}

/* ---- the row ----------------------------------------------------------- */

static void counts(size_t count, size_t base, size_t n, size_t r,
                   size_t esize, struct ncd_perf_counts *out)
{
    (void)count;
    const struct ncd_perf_traffic *t = out->traffic;
    out->paramcount = t && t->matrix ? 0 : base;
    size_t total = out->paramcount * n * esize;
    out->sendcount = rank_total(t, (int)r, 0, (int)n, total, esize);
    out->recvcount = rank_total(t, (int)r, 1, (int)n, total, esize);
    out->bytes = max_total(t, (int)n, total, esize) * esize;
}

static int validate(const struct ncd_perf_opts *o, int nranks, char *why,
                    size_t whylen)
{
    const struct ncd_perf_traffic *t = o->traffic;
    if (!t || !t->matrix)
        return 0;
    const char *f = t->path ? t->path : "";
    if (nranks > t->dim) {
        snprintf(why, whylen,
                 "Invalid alltoallv traffic matrix, requested nranks (%d) is "
                 "larger than matrix size (%d) in file %s.",
                 nranks, t->dim, f);
        return 1;
    }
    size_t need = max_total(t, nranks, 0, 1);
    if (o->maxbytes < need) {
        snprintf(why, whylen,
                 "maxBytes (-e) must be at least %zu bytes as required by "
                 "traffic matrix file %s (got %zu). Increase -e.",
                 need, f, o->maxbytes);
        return 1;
    }
    if (o->minbytes != o->maxbytes) {
        snprintf(why, whylen,
                 "-b and -e options must be set to the same value (e.g., -b "
                 "32M -e 32M) when using alltoallv traffic matrix mode.");
        return 1;
    }
    return 0;
}

/* Where this rank's segments are: send[p] / recv[p] element offsets and
 * counts for every peer p. */
struct plan {
    size_t *soff, *scnt, *roff, *rcnt;
};

static int plan_make(struct plan *pl, const struct ncd_perf_counts *k,
                     int me, int n, size_t es)
{
    size_t *a = calloc(4 * (size_t)n, sizeof *a);
    if (!a)
        return NCD_ENOMEM;
    pl->soff = a;
    pl->scnt = a + n;
    pl->roff = a + 2 * (size_t)n;
    pl->rcnt = a + 3 * (size_t)n;
    size_t total = k->paramcount * (size_t)n * es, so = 0, ro = 0;
    for (int p = 0; p < n; p++) {
        pl->soff[p] = so;
        pl->scnt[p] = ncd_perf_traffic_peer(k->traffic, me, p, n, total) / es;
        so += pl->scnt[p];
        pl->roff[p] = ro;
        pl->rcnt[p] = ncd_perf_traffic_peer(k->traffic, p, me, n, total) / es;
        ro += pl->rcnt[p];
    }
    return 0;
}

/* Result element e is in the segment from rank p: p's send element
 * (its offset for this rank) + (e - the segment's start). */
static void expect(const struct ncd_perf_check *c, size_t e0, size_t *len,
                   int *from, size_t *src0)
{
    int n = c->nranks, me = c->rank;
    size_t es = ncd_perf_dtype_size(c->dtype);
    size_t total = c->k.paramcount * (size_t)n * es, roff = 0;
    *from = me;
    *src0 = e0;
    for (int p = 0; p < n; p++) {
        size_t cnt = ncd_perf_traffic_peer(c->k.traffic, p, me, n, total) / es;
        if (e0 < roff + cnt) {
            size_t soff = 0;
            for (int q = 0; q < me; q++)
                soff += ncd_perf_traffic_peer(c->k.traffic, p, q, n, total) /
                        es;
            *from = p;
            *src0 = soff + (e0 - roff);
            if (*len > roff + cnt - e0)
                *len = roff + cnt - e0;
            return;
        }
        roff += cnt;
    }
}

/* Every peer at once, nearest first (as alltoall); in-place sends from a
 * copy of this rank's send segments. */
static int exchange(struct ncd__sock_rank *R, const struct ncd__sock_args *a)
{
    int n = a->nranks, me = a->rank;
    size_t es = a->es;
    struct plan pl;
    if (plan_make(&pl, a->k, me, n, es))
        return ncd__sock_nomem(R);
    const char *send = a->send;
    char *recv = a->recv;
    size_t sendbytes = (pl.soff[n - 1] + pl.scnt[n - 1]) * es;
    if (send == recv && sendbytes) {
        char *tmp = ncd__sock_scratch(R, sendbytes);
        if (!tmp) {
            free(pl.soff);
            return NCD_ENOMEM;
        }
        memcpy(tmp, send, sendbytes);
        send = tmp;
    }
    ncd__copy(recv + pl.roff[me] * es, send + pl.soff[me] * es,
              pl.rcnt[me] * es);
    int rc = 0;
    for (int k = 1; k < n && !rc; k++) {
        int to = ncd__mod(me + k, n), from = ncd__mod(me - k, n);
        /* both ends compute the same count: a zero is skipped by both */
        if (pl.scnt[to] &&
            ncd__sock_send(R, to, send + pl.soff[to] * es,
                           pl.scnt[to] * es, -1) < 0)
            rc = ncd__sock_nomem(R);
        if (!rc && pl.rcnt[from] &&
            ncd__sock_recv(R, from, recv + pl.roff[from] * es,
                           pl.rcnt[from] * es) < 0)
            rc = ncd__sock_nomem(R);
    }
    free(pl.soff);
    return rc ? rc : ncd__sock_run(R);
}

static int nccl(const struct ncd__nccl_call *c)
{
    struct plan pl;
    if (plan_make(&pl, c->k, c->rank, c->nranks, c->esize))
        return 2; /* ncclSystemError: out of host memory */
    int r = c->nc->GroupStart();
    for (int p = 0; p < c->nranks && !r; p++) {
        if (pl.scnt[p])
            r = c->nc->Send((const char *)c->send + pl.soff[p] * c->esize,
                            pl.scnt[p], c->dtype, p, c->comm, c->stream);
        if (!r && pl.rcnt[p])
            r = c->nc->Recv((char *)c->recv + pl.roff[p] * c->esize,
                            pl.rcnt[p], c->dtype, p, c->comm, c->stream);
    }
    int g = c->nc->GroupEnd();
    free(pl.soff);
    return r ? r : g;
}

const struct ncd__coll ncd__coll_alltoallv = {
    .name = "alltoallv",
    .alias = "all_to_allv",
    .redop_col = NCD__REDOP_NONE,
    .inplace_unchecked = 1,
    .counts = counts,
    .validate = validate,
    .busbw_factor = ncd__busbw_n1_n,
    .expect = expect,
    .sock_ring = exchange,
    .nccl = nccl,
};
