/* SPDX-License-Identifier: MIT */
/*
 * The collective table (one row per collective, src/lib/perf/coll/<name>.c,
 * see coll.h) and what is common to every row: names, datatypes and ops,
 * the count derivation and bandwidth of nccl-tests (NVIDIA/nccl-tests
 * v2.19.6 src/<coll>.cu GetCollByteCount and GetBw, doc/PERFORMANCE.md),
 * and the size sweep and size parsing of src/common.cu.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ncd/error.h"
#include "ncd/perf.h"
#include "perf/coll.h"
#include "perf/perf_int.h"

#define NCD_COLL(name, NAME) extern const struct ncd__coll ncd__coll_##name;
#include "ncd_colls.def"
#undef NCD_COLL

/* The rows, in NCD_COLL_* order (gen/ncd_colls.def, made by CMake from
 * the files of src/lib/perf/coll/). */
static const struct ncd__coll *const rows[NCD_COLL__COUNT] = {
#define NCD_COLL(name, NAME) [NCD_COLL_##NAME] = &ncd__coll_##name,
#include "ncd_colls.def"
#undef NCD_COLL
};

const struct ncd__coll *ncd__coll(enum ncd_perf_coll c)
{
    return (unsigned)c < NCD_COLL__COUNT ? rows[c] : NULL;
}

/* nccl-tests' binary names, "<name>_perf" */
static const char *const progs[NCD_COLL__COUNT] = {
#define NCD_COLL(name, NAME) [NCD_COLL_##NAME] = #name "_perf",
#include "ncd_colls.def"
#undef NCD_COLL
};

const char *ncd_perf_coll_prog(enum ncd_perf_coll c)
{
    return (unsigned)c < NCD_COLL__COUNT ? progs[c] : NULL;
}

const char *ncd_perf_coll_name(enum ncd_perf_coll c)
{
    const struct ncd__coll *r = ncd__coll(c);
    return r ? r->name : NULL;
}

void ncd_perf_coll_list(struct ncd_strbuf *sb)
{
    for (int i = 0; i < NCD_COLL__COUNT; i++)
        ncd_sb_printf(sb, "%s%s", i ? " " : "", rows[i]->name);
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
        const struct ncd__coll *r = rows[i];
        if (strcmp(buf, r->name) == 0 || (r->alias && !strcmp(buf, r->alias)))
            return i;
        /* also without underscores: allreduce, reducescatter */
        char squeezed[32];
        size_t k = 0;
        for (const char *p = r->name; *p && k + 1 < sizeof squeezed; p++)
            if (*p != '_')
                squeezed[k++] = *p;
        squeezed[k] = '\0';
        if (strcmp(buf, squeezed) == 0)
            return i;
    }
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
    const struct ncd__coll *r = ncd__coll(c);
    return r && r->reduces;
}

int ncd_perf_coll_has_root(enum ncd_perf_coll c)
{
    const struct ncd__coll *r = ncd__coll(c);
    return r && r->has_root;
}

int ncd_perf_coll_needs_pow2(enum ncd_perf_coll c)
{
    const struct ncd__coll *r = ncd__coll(c);
    return r && r->needs_pow2;
}

int ncd_perf_coll_loops_ops(enum ncd_perf_coll c)
{
    const struct ncd__coll *r = ncd__coll(c);
    return r && r->redop_col == NCD__REDOP_OP;
}

int ncd_perf_coll_checks_inplace(enum ncd_perf_coll c)
{
    const struct ncd__coll *r = ncd__coll(c);
    return r && !r->inplace_unchecked;
}

const char *ncd_perf_redop_label(enum ncd_perf_coll c, enum ncd_perf_op o)
{
    const struct ncd__coll *r = ncd__coll(c);
    if (!r || r->redop_col == NCD__REDOP_EMPTY)
        return "";
    if (r->redop_col == NCD__REDOP_NONE)
        return "none";
    const char *n = ncd_perf_op_name(o);
    return n ? n : "sum";
}

void ncd_perf_counts_traffic(enum ncd_perf_coll c, size_t bytes,
                             size_t esize, int nranks, int rank,
                             const struct ncd_perf_traffic *traffic,
                             struct ncd_perf_counts *out)
{
    memset(out, 0, sizeof *out);
    const struct ncd__coll *r = ncd__coll(c);
    if (!r || esize == 0 || nranks <= 0)
        return;
    size_t n = (size_t)nranks;
    size_t count = bytes / esize;
    /* nccl-tests keeps per-rank blocks a multiple of 16 bytes. */
    size_t align = 16 / esize;
    size_t base = (count / n) & ~(align ? align - 1 : 0);
    out->traffic = traffic; /* read by the rows that need it */
    r->counts(count, base, n, (size_t)(rank < 0 ? 0 : rank), esize, out);
    if (!out->bytes) {
        size_t m = out->sendcount > out->recvcount ? out->sendcount
                                                    : out->recvcount;
        out->bytes = m * esize;
    }
}

void ncd_perf_counts(enum ncd_perf_coll c, size_t bytes, size_t esize,
                     int nranks, int rank, struct ncd_perf_counts *out)
{
    ncd_perf_counts_traffic(c, bytes, esize, nranks, rank, NULL, out);
}

double ncd_perf_busbw_factor(enum ncd_perf_coll c, int nranks)
{
    const struct ncd__coll *r = ncd__coll(c);
    return r ? r->busbw_factor(nranks) : 1.0;
}

void ncd_perf_bw(enum ncd_perf_coll c, const struct ncd_perf_counts *k,
                 size_t esize, int nranks, double sec, double *algbw,
                 double *busbw)
{
    const struct ncd__coll *r = ncd__coll(c);
    double bytes = r && r->algbw_bytes ? r->algbw_bytes(k, esize, nranks)
                                       : (double)k->bytes;
    double a = bytes / 1.0e9 / sec;
    *algbw = a;
    *busbw = a * ncd_perf_busbw_factor(c, nranks);
}

/* Helpers for rows (coll.h) ------------------------------------------ */

double ncd__busbw_1(int nranks)
{
    (void)nranks;
    return 1.0;
}

double ncd__busbw_n1_n(int nranks)
{
    return (double)(nranks - 1) / nranks;
}

double ncd__busbw_2n1_n(int nranks)
{
    return 2.0 * (nranks - 1) / nranks;
}

void ncd__counts_whole(size_t count, size_t base, size_t n, size_t r,
                       size_t esize, struct ncd_perf_counts *out)
{
    (void)esize;
    (void)base;
    (void)n;
    (void)r;
    out->sendcount = out->recvcount = out->paramcount = count;
}

void ncd__counts_gather(size_t count, size_t base, size_t n, size_t r,
                        size_t esize, struct ncd_perf_counts *out)
{
    (void)esize;
    (void)count;
    out->sendcount = base;
    out->recvcount = base * n;
    out->paramcount = base;
    out->send_inplace_off = r * base;
}

void ncd__counts_scatter(size_t count, size_t base, size_t n, size_t r,
                         size_t esize, struct ncd_perf_counts *out)
{
    (void)esize;
    (void)count;
    out->sendcount = base * n;
    out->recvcount = base;
    out->paramcount = base;
    out->recv_inplace_off = r * base;
}

void ncd__expect_gathered(const struct ncd_perf_check *c, size_t e0,
                          size_t *len, int *from, size_t *src0)
{
    size_t base = c->k.paramcount, left = base - e0 % base;
    *from = (int)(e0 / base);
    *src0 = e0 % base;
    if (*len > left)
        *len = left;
}

void ncd__expect_reduced(const struct ncd_perf_check *c, size_t e0,
                         size_t *len, int *from, size_t *src0)
{
    (void)c;
    (void)len;
    *from = -1;
    *src0 = e0;
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

