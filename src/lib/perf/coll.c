/* SPDX-License-Identifier: MIT */
/*
 * The collective table of nccl-tests: names, count derivation, bus
 * bandwidth factors, size sweep, and the deterministic data pattern with
 * its checker.  Facts from NVIDIA/nccl-tests v2.19.6 src/<coll>.cu,
 * src/common.cu and doc/PERFORMANCE.md (see include/ncd/perf.h).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ncd/error.h"
#include "ncd/perf.h"
#include "perf/perf_int.h"

static const char *const coll_names[NCD_COLL__COUNT] = {
    "all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce",
    "alltoall",   "sendrecv",   "gather",         "scatter",   "hypercube",
};

const char *ncd_perf_coll_name(enum ncd_perf_coll c)
{
    return (unsigned)c < NCD_COLL__COUNT ? coll_names[c] : NULL;
}

int ncd_perf_coll_from_name(const char *s)
{
    if (!s)
        return -1;
    const char *b = strrchr(s, '/');
    b = b ? b + 1 : s;
    char buf[64];
    size_t n = 0;
    for (; *b && n + 1 < sizeof buf; b++)
        buf[n++] = (char)tolower((unsigned char)*b);
    buf[n] = '\0';
    if (n > 5 && strcmp(buf + n - 5, "_perf") == 0)
        buf[n - 5] = '\0';
    for (int i = 0; i < NCD_COLL__COUNT; i++) {
        if (strcmp(buf, coll_names[i]) == 0)
            return i;
        /* also without underscores: allreduce, reducescatter */
        char squeezed[32];
        size_t k = 0;
        for (const char *p = coll_names[i]; *p; p++)
            if (*p != '_')
                squeezed[k++] = *p;
        squeezed[k] = '\0';
        if (strcmp(buf, squeezed) == 0)
            return i;
    }
    if (strcmp(buf, "all_to_all") == 0)
        return NCD_COLL_ALLTOALL;
    return -1;
}

static const char *const type_names[NCD_DT__COUNT] = {
    "int8",  "uint8", "int32",  "uint32",   "int64",  "uint64",
    "half",  "float", "double", "bfloat16", "f8e4m3", "f8e5m2",
};
static const size_t type_sizes[NCD_DT__COUNT] = {1, 1, 4, 4, 8, 8,
                                                 2, 4, 8, 2, 1, 1};

const char *ncd_perf_dtype_name(enum ncd_perf_dtype t)
{
    return (unsigned)t < NCD_DT__COUNT ? type_names[t] : NULL;
}

size_t ncd_perf_dtype_size(enum ncd_perf_dtype t)
{
    return (unsigned)t < NCD_DT__COUNT ? type_sizes[t] : 0;
}

int ncd_perf_dtype_from_name(const char *s)
{
    if (!s)
        return -1;
    for (int i = 0; i < NCD_DT__COUNT; i++)
        if (strcmp(s, type_names[i]) == 0)
            return i;
    static const struct {
        const char *alias;
        int t;
    } aliases[] = {{"char", NCD_DT_INT8},     {"int", NCD_DT_INT32},
                   {"fp16", NCD_DT_HALF},     {"float16", NCD_DT_HALF},
                   {"fp32", NCD_DT_FLOAT},    {"float32", NCD_DT_FLOAT},
                   {"fp64", NCD_DT_DOUBLE},   {"float64", NCD_DT_DOUBLE},
                   {"bf16", NCD_DT_BFLOAT16}, {"uint", NCD_DT_UINT32}};
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcmp(s, aliases[i].alias) == 0)
            return aliases[i].t;
    return -1;
}

int ncd_perf_dtype_is_float(enum ncd_perf_dtype t)
{
    return t == NCD_DT_HALF || t == NCD_DT_FLOAT || t == NCD_DT_DOUBLE ||
           t == NCD_DT_BFLOAT16 || t == NCD_DT_F8E4M3 || t == NCD_DT_F8E5M2;
}

static const char *const op_names[NCD_OP__COUNT] = {"sum", "prod", "max",
                                                    "min", "avg",  "mulsum"};

const char *ncd_perf_op_name(enum ncd_perf_op o)
{
    return (unsigned)o < NCD_OP__COUNT ? op_names[o] : NULL;
}

int ncd_perf_op_from_name(const char *s)
{
    if (!s)
        return -1;
    for (int i = 0; i < NCD_OP__COUNT; i++)
        if (strcmp(s, op_names[i]) == 0)
            return i;
    return -1;
}

int ncd_perf_coll_has_op(enum ncd_perf_coll c)
{
    return c == NCD_COLL_ALL_REDUCE || c == NCD_COLL_REDUCE_SCATTER ||
           c == NCD_COLL_REDUCE;
}

int ncd_perf_coll_has_root(enum ncd_perf_coll c)
{
    return c == NCD_COLL_BROADCAST || c == NCD_COLL_REDUCE ||
           c == NCD_COLL_GATHER || c == NCD_COLL_SCATTER;
}

int ncd_perf_coll_needs_pow2(enum ncd_perf_coll c)
{
    return c == NCD_COLL_HYPERCUBE;
}

const char *ncd_perf_redop_label(enum ncd_perf_coll c, enum ncd_perf_op o)
{
    if (c == NCD_COLL_HYPERCUBE)
        return "";
    if (ncd_perf_coll_has_op(c) || c == NCD_COLL_SENDRECV) {
        const char *n = ncd_perf_op_name(o);
        return n ? n : "sum";
    }
    return "none";
}

void ncd_perf_counts(enum ncd_perf_coll c, size_t bytes, size_t esize,
                     int nranks, int rank, struct ncd_perf_counts *out)
{
    memset(out, 0, sizeof *out);
    if (esize == 0 || nranks <= 0)
        return;
    size_t n = (size_t)nranks;
    size_t count = bytes / esize;
    /* nccl-tests keeps per-rank blocks a multiple of 16 bytes. */
    size_t align = 16 / esize;
    size_t base = (count / n) & ~(align ? align - 1 : 0);
    size_t r = (size_t)(rank < 0 ? 0 : rank);
    switch (c) {
    case NCD_COLL_ALL_REDUCE:
    case NCD_COLL_BROADCAST:
    case NCD_COLL_REDUCE:
    case NCD_COLL_SENDRECV:
        out->sendcount = out->recvcount = out->paramcount = count;
        break;
    case NCD_COLL_ALL_GATHER:
    case NCD_COLL_GATHER:
    case NCD_COLL_HYPERCUBE:
        out->sendcount = base;
        out->recvcount = base * n;
        out->paramcount = base;
        out->send_inplace_off = r * base;
        break;
    case NCD_COLL_REDUCE_SCATTER:
    case NCD_COLL_SCATTER:
        out->sendcount = base * n;
        out->recvcount = base;
        out->paramcount = base;
        out->recv_inplace_off = r * base;
        break;
    case NCD_COLL_ALLTOALL:
        out->sendcount = out->recvcount = base * n;
        out->paramcount = base;
        break;
    default:
        break;
    }
    size_t m = out->sendcount > out->recvcount ? out->sendcount
                                                : out->recvcount;
    out->bytes = m * esize;
}

double ncd_perf_busbw_factor(enum ncd_perf_coll c, int nranks)
{
    double n = nranks;
    switch (c) {
    case NCD_COLL_ALL_REDUCE:
        return 2.0 * (n - 1) / n;
    case NCD_COLL_REDUCE_SCATTER:
    case NCD_COLL_ALL_GATHER:
    case NCD_COLL_ALLTOALL:
    case NCD_COLL_GATHER:
    case NCD_COLL_SCATTER:
        return (n - 1) / n;
    default:
        return 1.0;
    }
}

void ncd_perf_bw(enum ncd_perf_coll c, const struct ncd_perf_counts *k,
                 size_t esize, int nranks, double sec, double *algbw,
                 double *busbw)
{
    double bytes = (double)k->bytes;
    if (c == NCD_COLL_HYPERCUBE)
        bytes = (double)k->paramcount * (double)esize * (nranks - 1);
    double a = bytes / 1.0e9 / sec;
    *algbw = a;
    *busbw = a * ncd_perf_busbw_factor(c, nranks);
}

size_t ncd_perf_sweep(size_t minb, size_t maxb, size_t step, size_t factor,
                      size_t *out, size_t cap)
{
    if (minb > maxb || (factor <= 1 && step == 0))
        return 0;
    size_t n = 0;
    for (size_t s = minb; s <= maxb;) {
        if (out && n < cap)
            out[n] = s;
        n++;
        size_t next = factor > 1 ? s * factor : s + step;
        if (next <= s) { /* 0 * factor, or overflow */
            if (s == 0 && factor > 1) {
                /* nccl-tests would loop for ever on 0; stop after one */
                break;
            }
            break;
        }
        s = next;
    }
    return n;
}

int ncd_perf_parse_size(const char *s, size_t *out)
{
    if (!s)
        return NCD_EINVAL;
    while (isspace((unsigned char)*s))
        s++;
    if (*s == '-' || *s == '\0')
        return NCD_EINVAL;
    char *end;
    double v = strtod(s, &end);
    if (end == s || !isfinite(v) || v < 0)
        return NCD_EINVAL;
    while (isspace((unsigned char)*end))
        end++;
    double unit = 1;
    if (*end) {
        switch (*end) {
        case 'G':
        case 'g':
            unit = 1024.0 * 1024 * 1024;
            break;
        case 'M':
        case 'm':
            unit = 1024.0 * 1024;
            break;
        case 'K':
        case 'k':
            unit = 1024.0;
            break;
        default:
            return NCD_EINVAL;
        }
        end++;
        /* nccl-tests reads one suffix character and ignores the rest
         * ("1MB" is 1M); accept an optional B only. */
        if (*end == 'B' || *end == 'b')
            end++;
        if (*end)
            return NCD_EINVAL;
    }
    double b = v * unit;
    if (b >= 18446744073709551615.0)
        return NCD_ERANGE;
    *out = (size_t)b;
    return 0;
}

/* Data pattern -------------------------------------------------------- */

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
    size_t es = ncd_perf_dtype_size(c->dtype);
    const unsigned char *got = recvbuf;
    unsigned char *exp = malloc(CHK_BLOCK * 8), *tmp = malloc(CHK_BLOCK * 8);
    if (!exp || !tmp) {
        free(exp);
        free(tmp);
        return -1;
    }
    int64_t bad = 0;
    size_t n = (size_t)c->nranks, me = (size_t)c->rank;
    size_t base = c->k.paramcount;
    size_t total = c->k.recvcount;
    int reduce_all = 0;
    switch (c->coll) {
    case NCD_COLL_ALL_REDUCE:
    case NCD_COLL_REDUCE_SCATTER:
        reduce_all = 1;
        break;
    case NCD_COLL_REDUCE:
        if (c->rank != c->root)
            total = 0;
        reduce_all = 1;
        break;
    case NCD_COLL_GATHER:
        if (c->rank != c->root)
            total = 0;
        break;
    default:
        break;
    }
    for (size_t e0 = 0; e0 < total;) {
        size_t len = total - e0 < CHK_BLOCK ? total - e0 : CHK_BLOCK;
        if (reduce_all) {
            size_t src0 = c->coll == NCD_COLL_REDUCE_SCATTER ? me * base + e0
                                                             : e0;
            expected_reduce(c, src0, len, exp, tmp);
        } else {
            int from;
            size_t src0;
            switch (c->coll) {
            case NCD_COLL_BROADCAST:
                from = c->root;
                src0 = e0;
                break;
            case NCD_COLL_SCATTER:
                from = c->root;
                src0 = me * base + e0;
                break;
            case NCD_COLL_SENDRECV:
                from = (int)((me + n - 1) % n);
                src0 = e0;
                break;
            case NCD_COLL_ALLTOALL:
                from = (int)(e0 / base);
                src0 = me * base + e0 % base;
                break;
            default: /* all_gather, gather, hypercube */
                from = (int)(e0 / base);
                src0 = e0 % base;
                break;
            }
            if (c->coll == NCD_COLL_ALLTOALL || c->coll == NCD_COLL_ALL_GATHER ||
                c->coll == NCD_COLL_GATHER || c->coll == NCD_COLL_HYPERCUBE) {
                /* stay inside one block */
                size_t left = base - e0 % base;
                if (len > left)
                    len = left;
            }
            ncd_perf_fill(c->dtype, c->op, exp, src0, len, from, c->seed);
        }
        bad += compare(c, got + e0 * es, exp, len);
        e0 += len;
    }
    free(exp);
    free(tmp);
    return bad;
}
