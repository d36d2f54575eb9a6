/* SPDX-License-Identifier: MIT */
/* perf's command-line state and its output side (perf_out.c), shared with
 * cmd_perf.c.  Not part of libncd. */
#ifndef NCD_CLI_PERF_CLI_H
#define NCD_CLI_PERF_CLI_H

#include <stddef.h>
#include <stdio.h>

#include "cmd.h"
#include "ncd/perf.h"
#include "ncd/plot.h"

#define PLOT_WITH_MAX 16

struct perf_cli {
    struct ncd_perf_opts o;
    struct cli_common common;
    int np, peer_timeout_s, device0, sock_nthreads, sock_nsocks;
    int nccl_version; /* socket: the NCCL release whose path it takes */
    const char *iface, *rendezvous, *nccl_lib, *cudart_lib;
    const char *plot_file;                /* --plot */
    const char *plot_with[PLOT_WITH_MAX]; /* --plot-with, in order */
    int nplot_with;
    int plotting;         /* global rank 0 with --plot */
    struct ncd_plot plot; /* global rank 0 */
    int be, algo_kind; /* enum ncd_perf_backend_kind, enum ncd_perf_algo */
    struct ncd_perf_traffic traffic; /* alltoallv */
    char **argv;
    /* output (global rank 0 only) */
    FILE *out;
    struct ncd_perf_report *rep;
    int progress_tty;
    double row_start; /* progress(): when the current row started */
    size_t row_bytes;
    int preamble_done; /* the runner printed the preamble */
    struct ncd_perf_sink inner; /* the report's sink, wrapped */
};

/* Text of the report on global rank 0's output (ncd_perf_report_sink). */
void perf_out_text(void *arg, const char *text);
/* Progress on a terminal's stderr once rows take over 2 s. */
void perf_progress(void *arg, size_t i, size_t n, size_t bytes);
/* The report's sink wrapped: notes whether the preamble went out. */
void perf_on_preamble(void *arg, int nccl_version, const char *desc,
                      const struct ncd_perf_device *devs, int ndevs);
void perf_on_row(void *arg, const struct ncd_perf_row *r);
void perf_on_progress(void *arg, size_t i, size_t n, size_t bytes);
/* -J/--plot writable, --plot-with files into P->plot; 0 or -1. */
int perf_plot_load(struct perf_cli *P);
/* --plot: the SVG; 0 or an exit status. */
int perf_plot_write(struct perf_cli *P);
/* A run that stopped: nccl-tests' failure lines, what went wrong, and
 * check's findings when NCCL or CUDA could not start. */
void perf_report_failure(struct perf_cli *P, struct ncd_ctx *ctx,
                         const struct ncd_perf_job *pj,
                         const struct ncd_perf_summary *sum, int st,
                         int is_root);
/* CPUs this process may run on (its affinity mask, which containers and
 * taskset narrow), else the online CPUs; 0 unknown. */
int perf_cpus_of_process(void);

#endif
