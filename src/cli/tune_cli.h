/* SPDX-License-Identifier: MIT */
/* tune's command-line state and its report (tune_out.c), shared with
 * cmd_tune.c.  Not part of libncd. */
#ifndef NCD_CLI_TUNE_CLI_H
#define NCD_CLI_TUNE_CLI_H

#include "cmd.h"
#include "ncd/readall.h"
#include "ncd/tune.h"
#include "progress.h"

struct tune_cli {
    struct cli_common c;
    int np, reps, families, metric_avg, run_timeout_s;
    const char *cands_file, *backend, *rdv, *plot_file;
    const char *perf_args[NCD_TUNE_MAX_PERF_ARGS];
    int nperf;
    struct ncd_rdbuf cands; /* the candidates file, where it is read */
    struct ncd_tune_set set;
    struct ncd_tune_runs runs[NCD_TUNE_MAX_CANDS];
    struct ncd_tune_scope scope; /* what the runs measure */
    struct cli_progress prog;
    int done, total, ncand;      /* perf runs; candidates run */
};

/* Prints tune's table, verdict, keep command and findings (text or JSON)
 * and writes --plot; `sig` is the signal that interrupted the runs, 0
 * none.  Returns the exit status. */
int tune_report(struct tune_cli *T, const char *host, const char *launcher,
                int sig);

#endif
