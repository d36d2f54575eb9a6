/* SPDX-License-Identifier: MIT */
/*
 * The output of one run, assembled event by event on global rank 0
 * (include/ncd/perf.h section 2): nccl-tests' text (format.c) with
 * nccl-doctor's backend lines in the preamble, and the -J document.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ncd/error.h"
#include "ncd/perf.h"

struct ncd_perf_report {
    const struct ncd_perf_opts *o;
    char *const *argv;
    char *const *envp;
    int want_json;      /* build the document (-J or --json) */
    int json_stdout;    /* --json without -J: the caller prints it */
    int pick;           /* ncd_perf_json_pick_path()'s result */
    char path[4096];    /* -J: the file written */
    enum ncd_perf_backend_kind backend;
    json_t *doc;
    int ncpus;          /* ncd_perf_report_cpus(); 0 unknown */
    int nranks;         /* from the preamble */
    char warning[300];  /* ranks beyond the CPUs ("" none) */
    /* ncd_perf_report_sink(): where text goes, the caller's progress */
    void (*out)(void *arg, const char *text);
    void (*progress)(void *arg, size_t i, size_t n, size_t bytes);
    void *arg;
};

/* nccl-tests' start_time / end_time format (src/util.cu). */
static void ts_now(char *buf, size_t len)
{
    time_t now = time(NULL);
    struct tm tmv;
    localtime_r(&now, &tmv);
    strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tmv);
}

struct ncd_perf_report *ncd_perf_report_new(const struct ncd_perf_opts *o,
                                            int json_stdout, char *const *argv,
                                            char *const *envp,
                                            enum ncd_perf_backend_kind backend)
{
    struct ncd_perf_report *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->o = o;
    r->argv = argv;
    r->envp = envp;
    if (o->json_path) {
        r->pick = ncd_perf_json_pick_path(o->json_path, r->path,
                                          sizeof r->path);
        r->want_json = r->pick == 0;
    } else if (json_stdout) {
        r->want_json = r->json_stdout = 1;
    }
    r->backend = backend;
    return r;
}

void ncd_perf_report_start(struct ncd_perf_report *r, struct ncd_strbuf *sb)
{
    if (r->pick == NCD_EEXISTS)
        ncd_sb_puts(sb, "# skipping json output; failed to probe "
                        "destination\n");
    else if (r->want_json && !r->json_stdout)
        ncd_sb_printf(sb, "# Writing JSON output to %s\n", r->path);
}

void ncd_perf_report_cpus(struct ncd_perf_report *r, int ncpus)
{
    r->ncpus = ncpus;
}

/* Ranks on rank 0's host (devices with its host name) against its CPUs. */
static void check_cpus(struct ncd_perf_report *r,
                       const struct ncd_perf_device *devs, int ndevs)
{
    int local = 0;
    for (int i = 0; i < ndevs; i++)
        local += !strcmp(devs[i].host, devs[0].host);
    if (r->ncpus <= 0 || local <= r->ncpus)
        return;
    snprintf(r->warning, sizeof r->warning,
             "%d ranks on %s share %d CPU%s: ranks wait for each other's "
             "CPU time and the times are inflated (run at most %d ranks "
             "on this host)",
             local, devs[0].host, r->ncpus, r->ncpus == 1 ? "" : "s",
             r->ncpus);
}

void ncd_perf_report_preamble(struct ncd_perf_report *r,
                              struct ncd_strbuf *sb, int nccl_version,
                              const char *backend_desc,
                              const struct ncd_perf_device *devs, int ndevs)
{
    ncd_perf_fmt_preamble(sb, r->o, nccl_version, devs, ndevs);
    ncd_sb_printf(sb, "#  Backend: %s\n", backend_desc);
    r->nranks = ndevs;
    if (ndevs > 0)
        check_cpus(r, devs, ndevs);
    if (r->warning[0])
        ncd_sb_printf(sb, "#  Warning: %s\n", r->warning);
    if (r->o->report_cputime)
        ncd_sb_printf(sb, "#  cputime (-C): host time to issue the "
                          "operations, rank 0's own; algbw/busbw come from "
                          "the %s\n",
                      nccl_version ? "completed time"
                                   : "completed time (the socket backend "
                                     "completes each operation on the host, "
                                     "so both include the transfer)");
    ncd_perf_fmt_header(sb, r->o);
    if (r->want_json && !r->doc) {
        char ts[64];
        ts_now(ts, sizeof ts);
        r->doc = ncd_perf_json_new(r->o, r->argv, r->envp, nccl_version,
                                   ncd_perf_backend_name(r->backend),
                                   backend_desc, devs, ndevs, ts);
    }
}

const char *ncd_perf_report_warning(const struct ncd_perf_report *r)
{
    return r->warning;
}

/* NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY: per side, before the row. */
static void traffic_summary(struct ncd_perf_report *r, struct ncd_strbuf *sb,
                            const struct ncd_perf_row *row)
{
    const struct ncd_perf_opts *o = r->o;
    if (o->coll != NCD_COLL_ALLTOALLV || !o->traffic ||
        !o->traffic->print_summary)
        return;
    int t = ncd_perf_dtype_from_name(row->type);
    size_t es = t >= 0 ? ncd_perf_dtype_size((enum ncd_perf_dtype)t) : 1;
    size_t total = row->count * (size_t)r->nranks * es;
    const struct ncd_perf_cell *side[2] = {&row->oop, &row->ip};
    for (int i = 0; i < 2; i++) {
        double us = side[i]->bw_time_us > 0 ? side[i]->bw_time_us
                                             : side[i]->time_us;
        ncd_perf_fmt_traffic_summary(sb, o->traffic, r->nranks, total,
                                     us * 1e-6);
    }
}

void ncd_perf_report_row(struct ncd_perf_report *r, struct ncd_strbuf *sb,
                         const struct ncd_perf_row *row)
{
    traffic_summary(r, sb, row);
    ncd_perf_fmt_row(sb, r->o, row);
    if (r->doc)
        ncd_perf_json_add_row(r->doc, r->o, row, r->o->prog);
}

int ncd_perf_report_finish(struct ncd_perf_report *r, struct ncd_ctx *ctx,
                           struct ncd_strbuf *sb,
                           const struct ncd_perf_summary *sum,
                           json_t **stdout_doc)
{
    const struct ncd_perf_opts *o = r->o;
    *stdout_doc = NULL;
    if (!sum->error[0])
        ncd_perf_fmt_footer(sb, o, sum->oob, sum->avg_busbw,
                            o->memory_report ? sum->mem : NULL, NULL);
    if (!r->doc)
        return 0;
    char ts[64];
    ts_now(ts, sizeof ts);
    ncd_perf_json_finish(r->doc, o, sum->oob, sum->avg_busbw,
                         sum->error[0] ? sum->error : NULL, ts);
    if (r->warning[0]) { /* nccl-doctor's own key, after nccl-tests' */
        json_t *w = json_array();
        json_array_append_new(w, json_string(r->warning));
        json_object_set_new(r->doc, "warnings", w);
    }
    if (r->json_stdout) {
        *stdout_doc = r->doc;
        return 0;
    }
    return ncd_perf_json_write(ctx, r->doc, r->path);
}

static void sink_text(struct ncd_perf_report *r, struct ncd_strbuf *sb)
{
    if (r->out)
        r->out(r->arg, ncd_sb_str(sb));
    ncd_sb_release(sb);
}

static void sink_preamble(void *arg, int nccl_version, const char *desc,
                          const struct ncd_perf_device *devs, int ndevs)
{
    struct ncd_strbuf sb = {0};
    ncd_perf_report_preamble(arg, &sb, nccl_version, desc, devs, ndevs);
    sink_text(arg, &sb);
}

static void sink_row(void *arg, const struct ncd_perf_row *row)
{
    struct ncd_strbuf sb = {0};
    ncd_perf_report_row(arg, &sb, row);
    sink_text(arg, &sb);
}

static void sink_progress(void *arg, size_t i, size_t n, size_t bytes)
{
    struct ncd_perf_report *r = arg;
    if (r->progress)
        r->progress(r->arg, i, n, bytes);
}

void ncd_perf_report_sink(struct ncd_perf_report *r,
                          void (*out)(void *arg, const char *text),
                          void (*progress)(void *arg, size_t i, size_t n,
                                           size_t bytes),
                          void *arg, struct ncd_perf_sink *sink)
{
    r->out = out;
    r->progress = progress;
    r->arg = arg;
    *sink = (struct ncd_perf_sink){.arg = r,
                                   .preamble = sink_preamble,
                                   .row = sink_row,
                                   .progress = sink_progress};
}

void ncd_perf_report_free(struct ncd_perf_report *r)
{
    if (!r)
        return;
    json_decref(r->doc);
    free(r);
}

int ncd_perf_opts_check(const struct ncd_perf_opts *o, char *msg,
                        size_t msglen)
{
    if (o->json_path && ncd_perf_json_check_name(o->json_path)) {
        snprintf(msg, msglen, "-J/--output_file must end in .json ('%s')",
                 o->json_path);
        return 6;
    }
    if (o->minbytes > o->maxbytes) {
        snprintf(msg, msglen,
                 "invalid sizes for 'minbytes' and 'maxbytes': %zu > %zu",
                 o->minbytes, o->maxbytes);
        return 255;
    }
    if (o->stepfactor <= 1 && o->stepbytes == 0) {
        snprintf(msg, msglen, "invalid step: -i 0 with -f <= 1 never ends");
        return 255;
    }
    return 0;
}
