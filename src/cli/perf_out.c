/* SPDX-License-Identifier: MIT */
/* perf's output on global rank 0: the nccl-tests text, progress on a
 * terminal, the --plot picture, and nccl-tests' failure lines with what
 * `check` says when NCCL or CUDA cannot run.  Used by cmd_perf.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_job.h"
#include "cli_doc.h"
#include "cmd.h"
#include "ncd/check.h"
#include "ncd/error.h"
#include "ncd/finding.h"
#include "ncd/job.h"
#include "ncd/nccl.h"
#include "ncd/perf.h"
#include "ncd/plot.h"
#include "ncd/readall.h"
#include "ncd/sock.h"
#include "ncd/strbuf.h"
#include "ncd/sysops.h"

#include "perf_cli.h"

/* Output (global rank 0's thread) ---------------------------------------- */

void perf_out_text(void *arg, const char *text)
{
    struct perf_cli *P = arg;
    if (P->progress_tty) /* the text replaces the progress line */
        fputs("\r\033[K", stderr);
    if (P->out) {
        fputs(text, P->out);
        fflush(P->out);
    }
}

/*
 * Called as row i of n (`bytes`) starts.  Shown, on a terminal only, once
 * rows take over 2 s: the last row's time, scaled by the size ratio, is
 * the estimate of this one and of each one left.
 */
void perf_progress(void *arg, size_t i, size_t n, size_t bytes)
{
    struct perf_cli *P = arg;
    if (!P->progress_tty)
        return;
    double now = ncd_sock_now();
    double last = i > 0 && P->row_start > 0 ? now - P->row_start : 0;
    double r = i > 0 && P->row_bytes ? (double)bytes / (double)P->row_bytes
                                     : 1;
    if (r < 1)
        r = 1;
    P->row_start = now;
    P->row_bytes = bytes;
    if (last * r <= 2.0 && last <= 2.0)
        return;
    double eta = 0, t = last;
    for (size_t k = i; k < n; k++)
        eta += (t *= r);
    fprintf(stderr,
            "\r\033[K# %s: size %zu B, row %zu of %zu (%zu left after "
            "it), ETA %.0f s",
            P->o.prog, bytes, i + 1, n, n - i - 1, eta);
    fflush(stderr);
}

/* The report's sink, noting whether the preamble went out. */
void perf_on_preamble(void *arg, int nccl_version, const char *desc,
                        const struct ncd_perf_device *devs, int ndevs)
{
    struct perf_cli *P = arg;
    P->preamble_done = 1;
    P->inner.preamble(P->inner.arg, nccl_version, desc, devs, ndevs);
    if (P->plotting)
        snprintf(P->plot.title, sizeof P->plot.title, "%s: %d rank%s, %s",
                 P->o.prog, ndevs, ndevs == 1 ? "" : "s", desc ? desc : "");
}

/* Rows go to the report and, with --plot, to the plot. */
void perf_on_row(void *arg, const struct ncd_perf_row *r)
{
    struct perf_cli *P = arg;
    P->inner.row(P->inner.arg, r);
    if (P->plotting && ncd_plot_add_perf_row(&P->plot, P->o.prog, r) < 0)
        P->plot.ncolors = -1; /* out of memory: said when writing */
}

void perf_on_progress(void *arg, size_t i, size_t n, size_t bytes)
{
    struct perf_cli *P = arg;
    P->inner.progress(P->inner.arg, i, n, bytes);
}

/* --plot ------------------------------------------------------------------ */

/* Before the job starts (on the process that will be global rank 0), so
 * that a bad path stops perf before any rank measures: checks that -J and
 * --plot can be written, and reads the --plot-with files into the plot.
 * 0, or -1 after a message. */
int perf_plot_load(struct perf_cli *P)
{
    /* -J and --plot are written after the run: a path that cannot be
     * written fails now, not after the whole benchmark */
    char jp[PATH_MAX];
    if (P->o.json_path &&
        ncd_perf_json_pick_path(P->o.json_path, jp, sizeof jp) == 0 &&
        cli_output_writable("-J", jp))
        return -1;
    if (!P->plot_file)
        return 0;
    if (cli_output_writable("--plot", P->plot_file))
        return -1;
    for (int i = 0; i < P->nplot_with; i++) {
        struct ncd_rdbuf b = {.max = 64 << 20};
        if (ncd_read_file(P->plot_with[i], &b) != 0) {
            cli_err("--plot-with %s: %s", P->plot_with[i], strerror(errno));
            return -1;
        }
        const char *base = strrchr(P->plot_with[i], '/');
        char err[256] = "";
        int rc = ncd_plot_add_perf_json(&P->plot,
                                        base ? base + 1 : P->plot_with[i],
                                        b.data ? b.data : "", err, sizeof err);
        ncd_rdbuf_release(&b);
        if (rc < 0) {
            cli_err("--plot-with %s: %s", P->plot_with[i],
                    rc == NCD_ENOMEM ? "out of memory" : err);
            return -1;
        }
    }
    return 0;
}

/* Writes --plot (global rank 0, after the run).  0 or -1 after a message. */
int perf_plot_write(struct perf_cli *P)
{
    struct ncd_strbuf sb = {0};
    ncd_plot_svg(&P->plot, &sb);
    int rc = 0;
    if (sb.oom || P->plot.ncolors < 0) {
        cli_err("--plot: out of memory");
        rc = -1;
    } else if (ncd_write_file_atomic(P->plot_file, ncd_sb_str(&sb), sb.len,
                                     0644)) {
        cli_err("--plot: cannot write %s: %s", P->plot_file, strerror(errno));
        rc = -1;
    }
    ncd_sb_release(&sb);
    return rc;
}

/* Failures ------------------------------------------------------------------ */

/*
 * What `check` says about the GPU, its driver and the NCCL and CUDA
 * libraries on this node, for a run that could not start NCCL or CUDA:
 * the findings of the topo and libs checks in those categories.
 */
static void explain_with_check(struct ncd_ctx *ctx)
{
    struct ncd_findings fl = {0};
    struct ncd_check_opts co = {.only = "topo,libs"};
    struct ncd_node node;
    memset(&node, 0, sizeof node);
    struct ncd_node_opts no = {0};
    if (ncd_node_probe(ctx, &no, ncd_checks_parts(&co), &node) < 0 ||
        ncd_run_checks(&node, &co, &fl) < 0)
        ncd_ctx_clear_error(ctx);
    ncd_node_release(&node);
    for (size_t i = 0; i < fl.n; i++) {
        const struct ncd_finding *f = &fl.v[i];
        if (f->category != NCD_CAT_GPU_DRIVER &&
            f->category != NCD_CAT_GPU_CUDA && f->category != NCD_CAT_LIB_NCCL &&
            f->category != NCD_CAT_VERSION_MISMATCH)
            continue;
        fprintf(stderr, "nccl-doctor perf: check: [%s] %s: %s\n",
                ncd_severity_name(f->severity), f->id, f->title);
    }
    ncd_findings_release(&fl);
}

/*
 * A run that stopped: nccl-tests' failure lines on stdout in every process
 * (on stderr under --json, which owns stdout), what went wrong on stderr,
 * and, when NCCL or CUDA could not start, what `check` says about them.
 */
void perf_report_failure(struct perf_cli *P, struct ncd_ctx *ctx,
                           const struct ncd_perf_job *pj,
                           const struct ncd_perf_summary *sum, int st,
                           int is_root)
{
    FILE *out = P->common.json ? stderr : stdout;
    struct ncd_strbuf sb = {0};
    int early = sum->stage == NCD_PERF_STAGE_OPEN ||
                sum->stage == NCD_PERF_STAGE_UNIQUE_ID ||
                sum->stage == NCD_PERF_STAGE_DEVICE;
    /* nccl-tests prints its preamble up to "# Using devices" before the
     * device checks fail */
    if (is_root && !P->preamble_done && early && !P->common.json)
        ncd_perf_fmt_preamble(&sb, &P->o, sum->nccl_version, NULL, 0);
    char host[256];
    ncd_job_hostname(host, sizeof host);
    ncd_perf_fmt_failure(&sb, host, (int)getpid(), st, sum->stage, P->o.coll,
                         pj->backend == NCD_PERF_BACKEND_SOCKET
                             ? P->peer_timeout_s
                             : P->o.timeout_s,
                         pj->backend, sum->quote[0] ? sum->quote : sum->error);
    fputs(ncd_sb_str(&sb), out);
    fflush(out);
    ncd_sb_release(&sb);
    if (sum->error[0] && st == 5 && sum->stage == NCD_PERF_STAGE_OPEN)
        fprintf(stderr, "%s\n", sum->error); /* nccl-tests' own words */
    else if (sum->error[0])
        fprintf(stderr, "nccl-doctor perf: %s\n", sum->error);
    if (is_root && early && (st == 2 || st == 3) &&
        pj->backend == NCD_PERF_BACKEND_NCCL) {
        explain_with_check(ctx);
        fprintf(stderr, "nccl-doctor perf: NCCL cannot run here; `--backend "
                        "socket` measures TCP between the ranks instead "
                        "(no GPU, not NCCL)\n");
    }
    fflush(stderr);
}

/* CPUs this process may run on (its affinity mask, which containers and
 * taskset narrow), else the online CPUs; 0 unknown. */
int perf_cpus_of_process(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 0;
}
