/* SPDX-License-Identifier: MIT */
/*
 * The deterministic data pattern of the benchmark and its checker (see
 * include/ncd/perf.h "Data pattern"): inputs are a hash of (repetition,
 * rank, index) chosen so every reduction is exact in any order, and the
 * expected result of every element is recomputed from the collective's
 * row (coll.h: where each result element comes from).  Tolerance 0, except
 * 2 ULP for floating-point avg, as nccl-tests' verifiable/verifiable.cu.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "ncd/perf.h"
#include "perf/coll.h"
#include "perf/perf_int.h"

static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline uint64_t elem_hash(uint32_t seed, int rank, size_t idx)
{
    return mix64(((uint64_t)seed << 40) ^ ((uint64_t)(uint32_t)rank << 48) ^
                 mix64(idx));
}

static double float_value(enum ncd_perf_op op, uint64_t h)
{
    if (op == NCD_OP_PROD) {
        static const double vals[4] = {1.0, -1.0, 2.0, 0.5};
        return vals[h & 3];
    }
    /* small integers: any sum of <= 64 ranks is exact even in bfloat16's
     * 8-bit mantissa for 8 ranks, and in half/float/double always */
    return (double)((int)(h % 33) - 16);
}

void ncd_perf_fill(enum ncd_perf_dtype t, enum ncd_perf_op op, void *buf,
                   size_t first, size_t count, int rank, uint32_t seed)
{
    unsigned char *p = buf;
    size_t es = ncd_perf_dtype_size(t);
    for (size_t i = 0; i < count; i++, p += es) {
        uint64_t h = elem_hash(seed, rank, first + i);
        switch (t) {
        case NCD_DT_INT8:
        case NCD_DT_UINT8: {
            uint8_t v = (uint8_t)h;
            memcpy(p, &v, 1);
            break;
        }
        case NCD_DT_INT32:
        case NCD_DT_UINT32: {
            uint32_t v = (uint32_t)h;
            memcpy(p, &v, 4);
            break;
        }
        case NCD_DT_INT64:
        case NCD_DT_UINT64:
            memcpy(p, &h, 8);
            break;
        case NCD_DT_HALF: {
            uint16_t v = ncd__f32_to_half((float)float_value(op, h));
            memcpy(p, &v, 2);
            break;
        }
        case NCD_DT_BFLOAT16: {
            uint16_t v = ncd__f32_to_bf16((float)float_value(op, h));
            memcpy(p, &v, 2);
            break;
        }
        case NCD_DT_FLOAT: {
            float v = (float)float_value(op, h);
            memcpy(p, &v, 4);
            break;
        }
        case NCD_DT_DOUBLE: {
            double v = float_value(op, h);
            memcpy(p, &v, 8);
            break;
        }
        default: /* fp8: 1.0 in e4m3 (0x38) / e5m2 (0x3c) */
            *p = t == NCD_DT_F8E4M3 ? 0x38 : 0x3c;
            break;
        }
    }
}

/* Distance in units in the last place between two floats of size es. */
static uint64_t ulp_dist(const unsigned char *a, const unsigned char *b,
                         size_t es)
{
    int64_t x = 0, y = 0;
    if (es == 2) {
        uint16_t u, v;
        memcpy(&u, a, 2);
        memcpy(&v, b, 2);
        x = (u & 0x8000) ? -(int64_t)(u & 0x7fff) : (int64_t)u;
        y = (v & 0x8000) ? -(int64_t)(v & 0x7fff) : (int64_t)v;
    } else if (es == 4) {
        uint32_t u, v;
        memcpy(&u, a, 4);
        memcpy(&v, b, 4);
        x = (u & 0x80000000u) ? -(int64_t)(u & 0x7fffffffu) : (int64_t)u;
        y = (v & 0x80000000u) ? -(int64_t)(v & 0x7fffffffu) : (int64_t)v;
    } else if (es == 8) {
        uint64_t u, v;
        memcpy(&u, a, 8);
        memcpy(&v, b, 8);
        x = (u >> 63) ? -(int64_t)(u & 0x7fffffffffffffffull) : (int64_t)u;
        y = (v >> 63) ? -(int64_t)(v & 0x7fffffffffffffffull) : (int64_t)v;
    } else {
        return a[0] == b[0] ? 0 : UINT64_MAX;
    }
    return x > y ? (uint64_t)(x - y) : (uint64_t)(y - x);
}

#define CHK_BLOCK 4096

/*
 * Expected values for recv elements [e0, e0+n): either the reduction over
 * all ranks of source index (src0 + i), or rank `from`'s element src0 + i.
 */
static void expected_reduce(const struct ncd_perf_check *c, size_t src0,
                            size_t n, unsigned char *exp, unsigned char *tmp)
{
    ncd_perf_fill(c->dtype, c->op, exp, src0, n, 0, c->seed);
    if (c->nranks == 1) {
        ncd_perf_reduce_finish(c->dtype, c->op, exp, exp, n, 1, 1);
        return;
    }
    for (int r = 1; r < c->nranks; r++) {
        ncd_perf_fill(c->dtype, c->op, tmp, src0, n, r, c->seed);
        ncd_perf_reduce(c->dtype, c->op, exp, exp, tmp, n, r == 1, 1);
    }
    ncd_perf_reduce_finish(c->dtype, c->op, exp, exp, n, c->nranks, 0);
}

static int64_t compare(const struct ncd_perf_check *c, const unsigned char *got,
                       const unsigned char *exp, size_t n)
{
    size_t es = ncd_perf_dtype_size(c->dtype);
    if (memcmp(got, exp, n * es) == 0)
        return 0;
    int tol = (c->op == NCD_OP_AVG && ncd_perf_dtype_is_float(c->dtype)) ? 2
                                                                          : 0;
    int64_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        const unsigned char *g = got + i * es, *e = exp + i * es;
        if (memcmp(g, e, es) == 0)
            continue;
        if (tol && ulp_dist(g, e, es) <= (uint64_t)tol)
            continue;
        bad++;
    }
    return bad;
}

int64_t ncd_perf_check(const struct ncd_perf_check *c, const void *recvbuf)
{
    const struct ncd__coll *row = ncd__coll(c->coll);
    size_t es = ncd_perf_dtype_size(c->dtype);
    const unsigned char *got = recvbuf;
    if (!row || !es)
        return -1;
    unsigned char *exp = malloc(CHK_BLOCK * 8), *tmp = malloc(CHK_BLOCK * 8);
    if (!exp || !tmp) {
        free(exp);
        free(tmp);
        return -1;
    }
    int64_t bad = 0;
    size_t total = c->k.recvcount;
    if (row->root_result && c->rank != c->root)
        total = 0; /* undefined off the root */
    for (size_t e0 = 0; e0 < total;) {
        size_t len = total - e0 < CHK_BLOCK ? total - e0 : CHK_BLOCK;
        int from;
        size_t src0;
        row->expect(c, e0, &len, &from, &src0);
        if (from < 0)
            expected_reduce(c, src0, len, exp, tmp);
        else
            ncd_perf_fill(c->dtype, c->op, exp, src0, len, from, c->seed);
        bad += compare(c, got + e0 * es, exp, len);
        e0 += len;
    }
    free(exp);
    free(tmp);
    return bad;
}
