/* SPDX-License-Identifier: MIT */
/*
 * What the commands that start ranks (perf, probe, tune) share on the
 * command-line side of the job runner (include/ncd/job.h): mpirun's
 * "-np N" spelling, and printing the runner's reports.
 */
#ifndef NCD_CLI_JOB_H
#define NCD_CLI_JOB_H

#include "ncd/job.h"

/* A copy of argv (argc + 1 entries, NULL-terminated) in which "-np" reads
 * "--np", for getopt_long.  The strings are argv's.  NULL on ENOMEM. */
char **cli_np_argv(int argc, char **argv);

/* ncd_job_report_fn: "nccl-doctor <cmd>: <line>" on stderr; arg = cmd. */
void cli_job_report(void *cmd, const char *line);

/*
 * ncd_job_run() with cli_job_report() as the reporter.  When the job could
 * not start in this process, prints why ("nccl-doctor <cmd>: ..."; when
 * the TCP rendezvous failed, the address tried and the local interface
 * that leads there, ncd_job_rdv_report()) and sets *error to the NCD_E* code (else
 * 0).  Returns the job's exit status (struct ncd_job_result).
 */
int cli_job_run(struct ncd_ctx *ctx, const char *cmd,
                const struct ncd_job_plan *plan, struct ncd_job_opts *o,
                ncd_job_fn fn, void *arg, int *error);

#endif
