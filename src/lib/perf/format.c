/* SPDX-License-Identifier: MIT */
/*
 * The nccl-tests text and JSON output as pure functions of the results.
 * Format strings follow NVIDIA/nccl-tests v2.19.6 src/util.cu
 * (writeDeviceReport, writeResultHeader, writeBenchmarkLine*,
 * writeResultFooter, writeErrors, the JSON writer), see
 * ../shared/reference/nccl-tests-and-errors.md A2 and A5.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncd/error.h"
#include "ncd/sysops.h"
#include "ncd/perf.h"

/* Version of nccl-tests whose output is reproduced. */
#define NCD_NCCL_TESTS_VERSION "2.19.6"

void ncd_perf_opts_default(struct ncd_perf_opts *o)
{
    memset(o, 0, sizeof *o);
    o->coll = NCD_COLL_ALL_REDUCE;
    o->prog = "all_reduce_perf";
    o->nthreads = 1;
    o->ngpus = 1;
    o->minbytes = 32u << 20;
    o->maxbytes = 32u << 20;
    o->stepbytes = 1u << 20;
    o->stepfactor = 1;
    o->iters = 20;
    o->agg_iters = 1;
    o->warmup_iters = 1;
    o->run_cycles = 1;
    o->check = 1;
    o->op = NCD_OP_SUM;
    o->dtype = NCD_DT_FLOAT;
    o->root = 0;
    o->average = 1;
    o->min_bw = -1;
}

void ncd_perf_fmt_num(double v, int width, char *out)
{
    char tmp[400];
    for (int prec = 2; prec >= 0; prec--) {
        int n = snprintf(tmp, sizeof tmp, "%*.*f", width, prec, v);
        if (n >= 0 && n <= width) {
            memcpy(out, tmp, (size_t)n + 1);
            return;
        }
    }
    /* nccl-tests prints into width+1 bytes, truncating what does not fit */
    snprintf(tmp, sizeof tmp, "%*.*e", width, width >= 7 ? 1 : 0, v);
    memcpy(out, tmp, (size_t)width);
    out[width] = '\0';
}

void ncd_perf_fmt_preamble(struct ncd_strbuf *sb,
                           const struct ncd_perf_opts *o, int nccl_version,
                           const struct ncd_perf_device *devs, int ndevs)
{
    ncd_sb_printf(sb, "# nccl-tests version %s nccl-headers=%d "
                      "nccl-library=%d\n",
                  NCD_NCCL_TESTS_VERSION, nccl_version, nccl_version);
    ncd_sb_printf(sb, "# Collective test starting: %s\n", o->prog);
    ncd_sb_printf(sb,
                  "# nThread %d nGpus %d minBytes %ld maxBytes %ld step: "
                  "%ld(%s) warmup iters: %d iters: %d agg iters: %d "
                  "validation: %d graph: %d unalign: %d\n",
                  o->nthreads, o->ngpus, (long)o->minbytes, (long)o->maxbytes,
                  (long)(o->stepfactor > 1 ? o->stepfactor : o->stepbytes),
                  o->stepfactor > 1 ? "factor" : "bytes", o->warmup_iters,
                  o->iters, o->agg_iters, o->check, o->cudagraph, o->unalign);
    if (o->blocking == 1)
        ncd_sb_puts(sb, "# Blocking Enabled: wait and barrier after each "
                        "inner iteration (-m) \n");
    if (o->blocking == 2)
        ncd_sb_puts(sb, "# Blocking Enabled: wait after each inner "
                        "iteration (-m), no barrier \n");
    if (o->blocking == 3)
        ncd_sb_puts(sb, "# Blocking Enabled: wait and barrier after each "
                        "outer iteration (-n); time excludes barrier \n");
    if (o->per_iter_timing) {
        /* nccl-tests times each iteration with CUDA events; the socket
         * backend (nccl_version 0) has none and uses the host clock */
        ncd_sb_printf(sb, "# Per-Iteration Report: %s timing; i_* uses max "
                          "over process rows",
                      nccl_version ? "CUDA event" : "host clock");
        if (o->per_iter_skip)
            ncd_sb_printf(sb, "; summary skips first %d iterations",
                          o->per_iter_skip);
        ncd_sb_puts(sb, " \n");
    }
    if (o->parallel_init)
        ncd_sb_puts(sb, "# Parallel Init Enabled: threads call into "
                        "NcclInitRank concurrently \n");
    if (o->cudagraph_asked > 0)
        ncd_sb_printf(
            sb, "# CUDA graph launches (-G %d): %s; graph: 0, %s \n",
            o->cudagraph_asked,
            nccl_version ? "not done by nccl-doctor"
                         : "not applicable to the socket backend (host "
                           "buffers, no CUDA stream to capture)",
            nccl_version ? "every NCCL operation is launched on its own, so "
                           "times include the per-launch host overhead a "
                           "graph replay would hide"
                         : "every operation is issued on its own");
    ncd_sb_puts(sb, "#\n");
    ncd_sb_puts(sb, "# Using devices\n");
    for (int i = 0; i < ndevs; i++) {
        const struct ncd_perf_device *d = &devs[i];
        ncd_sb_printf(sb,
                      "#  Rank %2d Group %2d Pid %6d on %10s device %2d [%s] "
                      "%s\n",
                      d->rank, d->group, d->pid, d->host, d->device, d->busid,
                      d->name);
    }
}

void ncd_perf_fmt_header(struct ncd_strbuf *sb, const struct ncd_perf_opts *o)
{
    const char *tl = o->report_timestamps ? "timestamp" : "";
    const char *tf = o->report_timestamps ? "%Y-%m-%d %H:%M:%S" : "";
    int pad = o->report_timestamps ? 19 : 0;
    const char *tm = o->report_cputime ? "cputime" : "time";
    ncd_sb_puts(sb, "#\n");
    if (o->per_iter_timing) {
        ncd_sb_printf(sb,
                      "# %10s  %12s  %8s  %6s  %6s              out-of-place "
                      "(+ per-iteration)                                "
                      "in-place (+ per-iteration)\n",
                      "", "", "", "", "");
        ncd_sb_printf(sb,
                      "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  "
                      "%7s  %7s  %7s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s "
                      "%*s\n",
                      "size", "count", "type", "redop", "root", tm, "algbw",
                      "busbw", "#wrong", "i_min", "i_max", "i_p99", "i_cv%",
                      tm, "algbw", "busbw", "#wrong", "i_min", "i_max",
                      "i_p99", "i_cv%", pad, tl);
        ncd_sb_printf(sb,
                      "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  "
                      "%7s  %7s  %7s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s "
                      "%*s\n",
                      "(B)", "(elements)", "", "", "", "(us)", "(GB/s)",
                      "(GB/s)", "", "(us)", "(us)", "(us)", "(%)", "(us)",
                      "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)", "(%)",
                      pad, tf);
        return;
    }
    ncd_sb_printf(sb,
                  "# %10s  %12s  %8s  %6s  %6s           out-of-place        "
                  "               in-place          \n",
                  "", "", "", "", "");
    ncd_sb_printf(sb,
                  "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  "
                  "%6s  %6s %*s\n",
                  "size", "count", "type", "redop", "root", tm, "algbw",
                  "busbw", "#wrong", tm, "algbw", "busbw", "#wrong", pad, tl);
    ncd_sb_printf(sb,
                  "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  "
                  "%6s  %6s %*s\n",
                  "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)",
                  "", "(us)", "(GB/s)", "(GB/s)", "", pad, tf);
}

static void fmt_cell(struct ncd_strbuf *sb, const struct ncd_perf_opts *o,
                     const struct ncd_perf_cell *c)
{
    char t[8], a[7], b[7];
    ncd_perf_fmt_num(c->time_us, 7, t);
    ncd_perf_fmt_num(c->algbw, 6, a);
    ncd_perf_fmt_num(c->busbw, 6, b);
    if (c->wrong >= 0)
        ncd_sb_printf(sb, "  %7s  %6s  %6s  %6g", t, a, b, (double)c->wrong);
    else
        ncd_sb_printf(sb, "  %7s  %6s  %6s    N/A", t, a, b);
    if (!o->per_iter_timing)
        return;
    const struct ncd_perf_iterstats *it = c->iter;
    if (!it) { /* keeps the field count when a side has no samples */
        ncd_sb_puts(sb, "      N/A      N/A      N/A      N/A");
        return;
    }
    char mn[8], mx[8], p99[8], cv[8];
    ncd_perf_fmt_num(it->min_us, 7, mn);
    ncd_perf_fmt_num(it->max_us, 7, mx);
    ncd_perf_fmt_num(it->p99_us, 7, p99);
    ncd_perf_fmt_num(it->cv_pct, 7, cv);
    ncd_sb_printf(sb, "  %7s  %7s  %7s  %7s", mn, mx, p99, cv);
}

void ncd_perf_fmt_row(struct ncd_strbuf *sb, const struct ncd_perf_opts *o,
                      const struct ncd_perf_row *r)
{
    char root[32];
    snprintf(root, sizeof root, "%6i", r->root);
    ncd_sb_printf(sb, "%12li  %12li  %8s  %6s  %6s", (long)r->bytes,
                  (long)r->count, r->type, r->redop, root);
    fmt_cell(sb, o, &r->oop);
    fmt_cell(sb, o, &r->ip);
    if (o->report_timestamps)
        ncd_sb_printf(sb, "%21s", r->timestamp);
    ncd_sb_putc(sb, '\n');
}

static void mem_str(char *out, size_t len, double v)
{
    const char *unit = "B";
    double a = v < 0 ? -v : v;
    if (a >= 1024.0 * 1024 * 1024) {
        unit = "GB";
        v /= 1024.0 * 1024 * 1024;
    } else if (a >= 1024.0 * 1024) {
        unit = "MB";
        v /= 1024.0 * 1024;
    } else if (a >= 1024.0) {
        unit = "KB";
        v /= 1024.0;
    }
    a = v < 0 ? -v : v;
    snprintf(out, len, "%.*f %s", a < 10 ? 2 : a < 100 ? 1 : 0, v, unit);
}

void ncd_perf_fmt_footer(struct ncd_strbuf *sb, const struct ncd_perf_opts *o,
                         int oob, double avg_busbw, const uint64_t *mem,
                         const char *error)
{
    ncd_sb_printf(sb, "# %-20s : %d %s\n", "Out of bounds values", oob,
                  oob ? "FAILED" : "OK");
    const char *verdict = "";
    if (o->min_bw >= 0)
        verdict = avg_busbw < o->min_bw * 0.9 ? "FAILED" : "OK";
    ncd_sb_printf(sb, "# %-20s : %g %s\n", "Avg bus bandwidth", avg_busbw,
                  verdict);
    ncd_sb_puts(sb, "#\n");
    ncd_sb_printf(sb, "# Collective test concluded: %s\n", o->prog);
    if (mem) {
        static const char *const names[3] = {"Initialization",
                                             "User-Allocated", "Collective"};
        char line[256] = "", v[32];
        size_t n = 0;
        for (int i = 0; i < 3; i++) {
            mem_str(v, sizeof v, (double)mem[i]);
            n += (size_t)snprintf(line + n, sizeof line - n, "%s %s %s",
                                  names[i], v, i < 2 ? "| " : "");
        }
        mem_str(v, sizeof v, (double)(mem[0] + mem[1] + mem[2]));
        ncd_sb_printf(sb, "# %-20s : %s| Total  %s\n", "GPU memory usage",
                      line, v);
    }
    ncd_sb_puts(sb, "#\n");
    if (error && *error)
        ncd_sb_printf(sb, "# error: %s\n", error);
    else
        ncd_sb_putc(sb, '\n');
}

/* JSON --------------------------------------------------------------- */

static json_t *jbool(int v)
{
    return json_string(v ? "true" : "false");
}

static json_t *jdouble(double v)
{
    if (isnan(v))
        return json_string("nan");
    if (isinf(v))
        return json_string(v > 0 ? "inf" : "-inf");
    return json_real(v);
}

static int jset(json_t *o, const char *k, json_t *v)
{
    return v && json_object_set_new(o, k, v) == 0 ? 0 : NCD_ENOMEM;
}

/* "NAME=value" as it may be recorded: only the variables gather keeps,
 * redacted as gather does (include/ncd/sysops.h); NULL to leave out. */
static json_t *env_entry(const char *kv)
{
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv || (size_t)(eq - kv) >= 256)
        return NULL;
    char name[256];
    memcpy(name, kv, (size_t)(eq - kv));
    name[eq - kv] = '\0';
    if (!ncd_gather_env_wanted(name))
        return NULL;
    struct ncd_strbuf sb = {0};
    ncd_sb_printf(&sb, "%s=", name);
    ncd_env_redact(name, eq + 1, &sb);
    json_t *s = sb.oom ? NULL : json_string(ncd_sb_str(&sb));
    ncd_sb_release(&sb);
    return s; /* NULL too when not UTF-8: nccl-tests skips those */
}

json_t *ncd_perf_json_new(const struct ncd_perf_opts *o, char *const *argv,
                          char *const *envp, int nccl_version,
                          const char *backend, const char *backend_desc,
                          const struct ncd_perf_device *devs, int ndevs,
                          const char *start_time)
{
    json_t *doc = json_object();
    json_t *args = json_array(), *env = json_array();
    json_t *cfg = json_object(), *dl = json_array();
    int rc = 0;
    if (!doc || !args || !env || !cfg || !dl)
        goto oom;
    rc |= jset(doc, "version", json_integer(3));
    rc |= jset(doc, "start_time", json_string(start_time ? start_time : ""));
    for (char *const *a = argv; a && *a; a++)
        rc |= json_array_append_new(args, json_string(*a)) ? NCD_ENOMEM : 0;
    for (char *const *e = envp; e && *e; e++) {
        json_t *s = env_entry(*e);
        if (s)
            rc |= json_array_append_new(env, s) ? NCD_ENOMEM : 0;
    }
    rc |= jset(doc, "args", args);
    args = NULL;
    rc |= jset(doc, "env", env);
    env = NULL;
    rc |= jset(doc, "nccl_version", json_integer(nccl_version));
    rc |= jset(doc, "backend", json_string(backend ? backend : "nccl"));
    rc |= jset(doc, "backend_info", json_string(backend_desc ? backend_desc
                                                             : ""));
    rc |= jset(cfg, "nthreads", json_integer(o->nthreads));
    rc |= jset(cfg, "ngpus", json_integer(o->ngpus));
    rc |= jset(cfg, "minimum_bytes", json_integer((json_int_t)o->minbytes));
    rc |= jset(cfg, "maximum_bytes", json_integer((json_int_t)o->maxbytes));
    if (o->stepfactor > 1)
        rc |= jset(cfg, "step_factor", json_integer((json_int_t)o->stepfactor));
    else
        rc |= jset(cfg, "step_bytes", json_integer((json_int_t)o->stepbytes));
    rc |= jset(cfg, "warmup_iters", json_integer(o->warmup_iters));
    rc |= jset(cfg, "iterations", json_integer(o->iters));
    rc |= jset(cfg, "aggregated_iterations", json_integer(o->agg_iters));
    rc |= jset(cfg, "validation", json_integer(o->check));
    rc |= jset(cfg, "graph", json_integer(o->cudagraph));
    rc |= jset(cfg, "blocking_collectives", jbool(o->blocking));
    rc |= jset(cfg, "per_iter_timing", jbool(o->per_iter_timing));
    rc |= jset(cfg, "per_iter_skip", json_integer(o->per_iter_skip));
    rc |= jset(cfg, "parallel_init", jbool(o->parallel_init));
    for (int i = 0; i < ndevs; i++) {
        json_t *d = json_object();
        if (!d)
            goto oom;
        rc |= jset(d, "rank", json_integer(devs[i].rank));
        rc |= jset(d, "group", json_integer(devs[i].group));
        rc |= jset(d, "pid", json_integer(devs[i].pid));
        rc |= jset(d, "hostname", json_string(devs[i].host));
        rc |= jset(d, "device", json_integer(devs[i].device));
        rc |= jset(d, "device_hex", json_string(devs[i].busid));
        rc |= jset(d, "device_info", json_string(devs[i].name));
        rc |= json_array_append_new(dl, d) ? NCD_ENOMEM : 0;
    }
    rc |= jset(cfg, "devices", dl);
    dl = NULL;
    rc |= jset(doc, "config", cfg);
    cfg = NULL;
    rc |= jset(doc, "results", json_array());
    if (rc)
        goto oom;
    return doc;
oom:
    json_decref(doc);
    json_decref(args);
    json_decref(env);
    json_decref(cfg);
    json_decref(dl);
    return NULL;
}

static json_t *jcell(const struct ncd_perf_opts *o,
                     const struct ncd_perf_cell *c)
{
    json_t *j = json_object();
    if (!j)
        return NULL;
    int rc = 0;
    rc |= jset(j, o->report_cputime ? "cpu_time" : "time",
               jdouble(c->time_us));
    rc |= jset(j, "alg_bw", jdouble(c->algbw));
    rc |= jset(j, "bus_bw", jdouble(c->busbw));
    rc |= jset(j, "nwrong",
               c->wrong >= 0 ? jdouble((double)c->wrong) : json_null());
    if (rc) {
        json_decref(j);
        return NULL;
    }
    return j;
}

static json_t *jdoubles(const double *v, int n)
{
    json_t *a = json_array();
    for (int i = 0; a && i < n; i++)
        if (json_array_append_new(a, jdouble(v[i]))) {
            json_decref(a);
            return NULL;
        }
    return a;
}

/* nccl-tests writePerIterReport's object, keys in its order */
static json_t *jiter(const struct ncd_perf_iterstats *it)
{
    json_t *j = json_object();
    if (!j)
        return NULL;
    int rc = 0;
    rc |= jset(j, "skipped_iterations", json_integer(it->skipped));
    rc |= jset(j, "min_us", jdouble(it->min_us));
    rc |= jset(j, "max_us", jdouble(it->max_us));
    rc |= jset(j, "avg_us", jdouble(it->avg_us));
    rc |= jset(j, "p50_us", jdouble(it->p50_us));
    rc |= jset(j, "p95_us", jdouble(it->p95_us));
    rc |= jset(j, "p99_us", jdouble(it->p99_us));
    rc |= jset(j, "stdev_us", jdouble(it->stdev_us));
    rc |= jset(j, "cv_pct", jdouble(it->cv_pct));
    rc |= jset(j, "times_us", jdoubles(it->times_us, it->n));
    if (it->nprocs > 1 && it->proc_times_us) {
        json_t *rows = json_array();
        for (int p = 0; rows && p < it->nprocs; p++)
            if (json_array_append_new(
                    rows, jdoubles(it->proc_times_us + (size_t)p * it->n,
                                   it->n))) {
                json_decref(rows);
                rows = NULL;
            }
        rc |= jset(j, "per_process_max_times_us", rows);
    }
    if (rc) {
        json_decref(j);
        return NULL;
    }
    return j;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* nccl-tests' nearest-rank percentile index */
static int pct_index(int n, int p)
{
    int i = (n * p + 99) / 100 - 1;
    return i < n - 1 ? i : n - 1;
}

int ncd_perf_iter_stats(const double *times_us, int n, int skip,
                        struct ncd_perf_iterstats *st)
{
    int m = n - skip;
    if (skip < 0 || m < 1)
        return NCD_EINVAL;
    double *v = malloc(sizeof *v * (size_t)m);
    if (!v)
        return NCD_ENOMEM;
    memcpy(v, times_us + skip, sizeof *v * (size_t)m);
    qsort(v, (size_t)m, sizeof *v, cmp_double);
    st->n = n;
    st->skipped = skip;
    st->times_us = times_us;
    st->min_us = v[0];
    st->max_us = v[m - 1];
    st->p50_us = v[m / 2];
    st->p95_us = v[pct_index(m, 95)];
    st->p99_us = v[pct_index(m, 99)];
    double sum = 0, var = 0;
    for (int i = 0; i < m; i++)
        sum += v[i];
    st->avg_us = sum / m;
    for (int i = 0; i < m; i++)
        var += (v[i] - st->avg_us) * (v[i] - st->avg_us);
    st->stdev_us = sqrt(var / m);
    st->cv_pct = st->avg_us > 0 ? st->stdev_us / st->avg_us * 100.0 : 0.0;
    free(v);
    return 0;
}

int ncd_perf_json_add_row(json_t *doc, const struct ncd_perf_opts *o,
                          const struct ncd_perf_row *r, const char *name)
{
    json_t *res = json_object_get(doc, "results");
    json_t *j = json_object();
    if (!res || !j) {
        json_decref(j);
        return NCD_ENOMEM;
    }
    char root[32];
    snprintf(root, sizeof root, "%6i", r->root);
    int rc = 0;
    rc |= jset(j, "size", json_integer((json_int_t)r->bytes));
    rc |= jset(j, "count", json_integer((json_int_t)r->count));
    rc |= jset(j, "type", json_string(r->type));
    rc |= jset(j, "redop", json_string(r->redop));
    rc |= jset(j, "root", json_string(root));
    rc |= jset(j, "out_of_place", jcell(o, &r->oop));
    if (o->per_iter_timing && r->oop.iter)
        rc |= jset(j, "out_of_place_per_iter", jiter(r->oop.iter));
    rc |= jset(j, "in_place", jcell(o, &r->ip));
    if (o->per_iter_timing && r->ip.iter)
        rc |= jset(j, "in_place_per_iter", jiter(r->ip.iter));
    rc |= jset(j, "actual_iterations", json_integer(o->iters));
    rc |= jset(j, "experiment_name", json_string(name ? name : ""));
    if (rc || json_array_append_new(res, j)) {
        if (rc)
            json_decref(j);
        return NCD_ENOMEM;
    }
    return 0;
}

int ncd_perf_json_finish(json_t *doc, const struct ncd_perf_opts *o, int oob,
                         double avg_busbw, const char *error,
                         const char *end_time)
{
    json_t *ob = json_object(), *bw = json_object(), *errs = json_array();
    int rc = 0;
    if (!ob || !bw || !errs) {
        json_decref(ob);
        json_decref(bw);
        json_decref(errs);
        return NCD_ENOMEM;
    }
    rc |= jset(ob, "count", json_integer(oob));
    rc |= jset(ob, "okay", jbool(oob == 0));
    rc |= jset(doc, "out_of_bounds", ob);
    rc |= jset(bw, "bandwidth", jdouble(avg_busbw));
    if (o->min_bw < 0)
        rc |= jset(bw, "okay", json_string("unchecked"));
    else
        rc |= jset(bw, "okay", jbool(avg_busbw >= o->min_bw * 0.9));
    rc |= jset(doc, "average_bus_bandwidth", bw);
    if (error && *error)
        rc |= json_array_append_new(errs, json_string(error)) ? NCD_ENOMEM : 0;
    rc |= jset(doc, "errors", errs);
    rc |= jset(doc, "end_time", json_string(end_time ? end_time : ""));
    return rc ? NCD_ENOMEM : 0;
}

/* Failure lines ------------------------------------------------------- */

/*
 * Where nccl-tests v2.19.6 (NVIDIA/nccl-tests a0b82b2) fails and the
 * TESTCHECK levels above it, per stage.  <coll>.cu frames come from
 * coll_frames[].  "@run"/"@tt" stand for the collective's runColl line and
 * its runTest's TESTCHECK(TimeTest(...)) line.
 */
struct stage_frames {
    const char *cuda, *nccl; /* file:line of the failing check, per kind */
    const char *trace[8];    /* TESTCHECK lines, innermost first */
};

#define MAIN_TESTCHECK "common.cu:1454" /* main(): TESTCHECK(result) */
#define RUN_STACK "common.cu:972", "common.cu:1768", MAIN_TESTCHECK

static const struct stage_frames stage_frames[] = {
    /* writeDeviceReport's cudaGetDeviceCount; run() returns its result */
    [NCD_PERF_STAGE_OPEN] = {"util.cu:674", "common.cu:1550",
                             {MAIN_TESTCHECK}},
    [NCD_PERF_STAGE_UNIQUE_ID] = {"util.cu:674", "common.cu:1550",
                                  {MAIN_TESTCHECK}},
    [NCD_PERF_STAGE_DEVICE] = {"common.cu:1569", "common.cu:1550",
                               {MAIN_TESTCHECK}},
    /* initComms: ncclCommInitRankConfig inside a group fails at GroupEnd */
    [NCD_PERF_STAGE_INIT] = {"common.cu:215", "common.cu:222",
                             {"common.cu:1620", MAIN_TESTCHECK}},
    [NCD_PERF_STAGE_ALLOC] = {"common.cu:1111", "common.cu:1107",
                              {"common.cu:1636", MAIN_TESTCHECK}},
    /* startColl -> BenchTime -> TimeTest -> runTest -> threadRunTests */
    [NCD_PERF_STAGE_RUN] = {"common.cu:551", "@run",
                            {"common.cu:597", "common.cu:734",
                             "common.cu:939", "@tt", RUN_STACK}},
    /* testStreamSynchronize <- completeColl <- BenchTime ... */
    [NCD_PERF_STAGE_SYNC] = {"common.cu:502", "common.cu:514",
                             {"common.cu:632", "common.cu:769",
                              "common.cu:939", "@tt", RUN_STACK}},
    [NCD_PERF_STAGE_RESULT] = {NULL, NULL, {MAIN_TESTCHECK}},
};

/* The first NCCLCHECK of each collective's runColl and its runTest's
 * TESTCHECK(TimeTest(...)) (src/<coll>.cu, v2.19.6). */
static const struct {
    const char *coll;
    int run, tt;
} coll_frames[] = {
    {"all_reduce", 507, 574}, {"all_gather", 50, 87},
    {"broadcast", 45, 103},   {"reduce_scatter", 49, 98},
    {"reduce", 46, 104},      {"alltoall", 319, 393},
    {"alltoallv", 412, 621},  {"gather", 49, 117},
    {"scatter", 45, 113},     {"sendrecv", 49, 120},
    {"hypercube", 53, 108},
};

static void frame_str(const char *f, enum ncd_perf_coll coll, char *out,
                      size_t len)
{
    if (f[0] != '@') {
        snprintf(out, len, "%s", f);
        return;
    }
    const char *name = ncd_perf_coll_name(coll);
    for (size_t i = 0; name && i < sizeof coll_frames / sizeof *coll_frames;
         i++)
        if (!strcmp(coll_frames[i].coll, name)) {
            snprintf(out, len, "%s.cu:%d", name,
                     f[1] == 'r' ? coll_frames[i].run : coll_frames[i].tt);
            return;
        }
    snprintf(out, len, "%s.cu:0", name ? name : "coll");
}

void ncd_perf_fmt_failure(struct ncd_strbuf *sb, const char *host, int pid,
                          int status, enum ncd_perf_stage stage,
                          enum ncd_perf_coll coll, int timeout_s,
                          enum ncd_perf_backend_kind backend,
                          const char *quote)
{
    if (status == 0)
        return;
    if (stage <= NCD_PERF_STAGE_NONE || stage > NCD_PERF_STAGE_RESULT)
        stage = NCD_PERF_STAGE_OPEN;
    const struct stage_frames *sf = &stage_frames[stage];
    char fr[64];
    if (status == 4 && (stage == NCD_PERF_STAGE_SYNC ||
                        stage == NCD_PERF_STAGE_RUN)) {
        /* testStreamSynchronize's own line */
        ncd_sb_printf(sb, "%s: Test timeout (%ds) common.cu:526\n", host,
                      timeout_s);
        sf = &stage_frames[NCD_PERF_STAGE_SYNC];
    } else if ((status == 2 && sf->cuda) ||
               ((status == 3 || status == 4) && sf->nccl)) {
        int cuda = status == 2;
        frame_str(cuda ? sf->cuda : sf->nccl, coll, fr, sizeof fr);
        int remote = !cuda && backend == NCD_PERF_BACKEND_SOCKET;
        ncd_sb_printf(sb, "%s: Test %s failure %s '%s%s'\n", host,
                      cuda ? "CUDA" : "NCCL", fr,
                      remote ? "remote process exited or there was a "
                               "network error / "
                             : "",
                      quote ? quote : "");
    }
    for (int i = 0; i < 8 && sf->trace[i]; i++) {
        frame_str(sf->trace[i], coll, fr, sizeof fr);
        ncd_sb_printf(sb, " .. %s pid %d: Test failure %s\n", host, pid, fr);
    }
}
