/* SPDX-License-Identifier: MIT */
/*
 * nccl-tests' options as a table (NVIDIA/nccl-tests v2.19.6 src/common.cu:
 * the getopt string, long names, strtol(.., 0) parsing, parsesize(), the
 * "invalid op/type ..., defaulting to ..." fallbacks), applied to struct
 * ncd_perf_opts.  See ../shared/reference/nccl-tests-and-errors.md A1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncd/error.h"
#include "ncd/perf.h"

/* K_INT: an int field in [min, max]; K_SIZE: a size with K/M/G;
 * K_IGNORED: an int nccl-doctor accepts and ignores (GPU-only);
 * K_OWN: parsed below. */
enum kind { K_INT, K_SIZE, K_IGNORED, K_OWN };

struct opt_def {
    struct ncd_perf_option pub;
    enum kind kind;
    size_t off;
    int min, max;
};

#define F(f) offsetof(struct ncd_perf_opts, f)
#define ANY INT_MIN, INT_MAX
static const struct opt_def defs[] = {
    {{'t', "nthreads"}, K_INT, F(nthreads), 1, INT_MAX},
    {{'g', "ngpus"}, K_INT, F(ngpus), 1, INT_MAX},
    {{'b', "minbytes"}, K_SIZE, F(minbytes), 0, 0},
    {{'e', "maxbytes"}, K_SIZE, F(maxbytes), 0, 0},
    {{'i', "stepbytes"}, K_SIZE, F(stepbytes), 0, 0},
    {{'f', "stepfactor"}, K_SIZE, F(stepfactor), 0, 0},
    {{'n', "iters"}, K_INT, F(iters), 0, INT_MAX},
    {{'m', "agg_iters"}, K_INT, F(agg_iters), 1, INT_MAX},
    {{'w', "warmup_iters"}, K_INT, F(warmup_iters), 0, INT_MAX},
    {{'N', "run_cycles"}, K_INT, F(run_cycles), 0, INT_MAX},
    {{'p', "parallel_init"}, K_INT, F(parallel_init), ANY},
    {{'c', "check"}, K_INT, F(check), 0, INT_MAX},
    {{'o', "op"}, K_OWN, 0, 0, 0},
    {{'d', "datatype"}, K_OWN, 0, 0, 0},
    {{'r', "root"}, K_OWN, 0, 0, 0},
    {{'z', "blocking"}, K_INT, F(blocking), 0, 3},
    {{'y', "stream_null"}, K_INT, F(stream_null), ANY},
    {{'T', "timeout"}, K_INT, F(timeout_s), 0, INT_MAX},
    {{'G', "cudagraph"}, K_OWN, 0, 0, 0},
    {{'C', "report_cputime"}, K_INT, F(report_cputime), ANY},
    {{'S', "report_timestamps"}, K_INT, F(report_timestamps), ANY},
    {{'J', "output_file"}, K_OWN, 0, 0, 0},
    {{'a', "average"}, K_INT, F(average), 0, 3},
    {{'R', "local_register"}, K_INT, F(local_register), ANY},
    {{'x', "cta_policy"}, K_IGNORED, 0, ANY},
    {{'D', "device_implementation"}, K_IGNORED, 0, ANY},
    {{'V', "device_cta_count"}, K_IGNORED, 0, ANY},
    {{'M', "memory"}, K_INT, F(memory_report), ANY},
    {{'u', "unalign"}, K_INT, F(unalign), 0, 1024},
    {{'I', "per_iter_timing"}, K_INT, F(per_iter_timing), ANY},
    {{'K', "per_iter_skip"}, K_INT, F(per_iter_skip), ANY},
};
#define NDEFS (sizeof defs / sizeof defs[0])

size_t ncd_perf_options_count(void)
{
    return NDEFS;
}

const struct ncd_perf_option *ncd_perf_option_at(size_t i)
{
    return i < NDEFS ? &defs[i].pub : NULL;
}

/* An integer as nccl-tests reads it (strtol base 0) in [min, max]. */
static int get_int(const char *s, const char *name, int min, int max,
                   int *out, struct ncd_perf_optmsg *m)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 0);
    if (end == s || *end || errno || v < INT_MIN || v > INT_MAX) {
        snprintf(m->text, sizeof m->text, "invalid value '%s' for %s", s,
                 name);
        return 6;
    }
    if (v < min || v > max) {
        if (max == INT_MAX)
            snprintf(m->text, sizeof m->text,
                     "invalid value '%s' for %s: must be at least %d", s,
                     name, min);
        else
            snprintf(m->text, sizeof m->text,
                     "invalid value '%s' for %s: must be %d..%d", s, name,
                     min, max);
        return 6;
    }
    *out = (int)v;
    return 0;
}

int ncd_perf_opt_apply(struct ncd_perf_opts *o, int letter, const char *arg,
                       struct ncd_perf_optmsg *m)
{
    memset(m, 0, sizeof *m);
    const struct opt_def *d = NULL;
    for (size_t i = 0; i < NDEFS && !d; i++)
        if (defs[i].pub.letter == letter)
            d = &defs[i];
    if (!d)
        return NCD_ENOENT;
    char name[3] = {'-', (char)letter, 0};
    int v, rc;
    switch (d->kind) {
    case K_INT:
        return get_int(arg, name, d->min, d->max,
                       (int *)(void *)((char *)o + d->off), m);
    case K_SIZE:
        if (ncd_perf_parse_size(arg, (size_t *)(void *)((char *)o + d->off))) {
            snprintf(m->text, sizeof m->text,
                     "invalid size specified for '%s'", d->pub.name);
            m->raw = 1;
            return 255;
        }
        return 0;
    case K_IGNORED:
        rc = get_int(arg, "option", ANY, &v, m);
        if (!rc && v && letter != 'V')
            snprintf(m->text, sizeof m->text,
                     "-%c is not implemented; ignored", letter);
        return rc;
    case K_OWN:
        break;
    }
    switch (letter) {
    case 'o':
        if (!strcmp(arg, "all"))
            o->op = -1;
        else if ((o->op = ncd_perf_op_from_name(arg)) < 0) {
            snprintf(m->text, sizeof m->text,
                     "invalid op %s, defaulting to %s .. ", arg, "sum");
            m->to_stdout = m->raw = 1;
            o->op = NCD_OP_SUM;
        }
        return 0;
    case 'd':
        if (!strcmp(arg, "all"))
            o->dtype = -1;
        else if ((o->dtype = ncd_perf_dtype_from_name(arg)) < 0) {
            snprintf(m->text, sizeof m->text,
                     "invalid type %s, defaulting to %s .. ", arg, "float");
            m->to_stdout = m->raw = 1;
            o->dtype = NCD_DT_FLOAT;
        }
        return 0;
    case 'r':
        /* nccl-tests: strtol, so the word "all" reads as 0 */
        o->root = (int)strtol(arg, NULL, 0);
        if (o->root < -1) {
            snprintf(m->text, sizeof m->text,
                     "invalid root %s (use -1 for every root)", arg);
            return 6;
        }
        return 0;
    case 'G':
        /* kept for the header, which says what became of it; no graph is
         * captured (graph: 0) */
        rc = get_int(arg, name, 0, INT_MAX, &o->cudagraph_asked, m);
        o->cudagraph = 0;
        return rc;
    default: /* 'J' */
        o->json_path = arg;
        return 0;
    }
}

void ncd_perf_opts_settle(struct ncd_perf_opts *o, struct ncd_strbuf *notes)
{
    /* nccl-tests src/common.cu main(), after getopt (v2.19.6); the -G
     * rules do not apply: nccl-doctor captures no graph */
    if (o->per_iter_timing != 0 && o->per_iter_timing != 1) {
        ncd_sb_puts(notes, "per-iteration timing (-I) only supports 0=off or "
                           "1=on. Disabling.\n");
        o->per_iter_timing = 0;
    }
    if (o->per_iter_skip < 0 || o->per_iter_skip >= o->iters) {
        if (o->per_iter_skip)
            ncd_sb_printf(notes, "per-iteration skip (-K) must be between 0 "
                                 "and %d. Disabling.\n",
                          o->iters - 1);
        o->per_iter_skip = 0;
    }
    if (o->per_iter_skip && !o->per_iter_timing) {
        ncd_sb_puts(notes, "per-iteration skip (-K) requires per-iteration "
                           "timing (-I 1). Disabling.\n");
        o->per_iter_skip = 0;
    }
    if (o->per_iter_timing && o->iters < 1) {
        ncd_sb_puts(notes, "per-iteration timing (-I) needs at least one "
                           "iteration (-n). Disabling.\n");
        o->per_iter_timing = 0;
    }
}
