/* SPDX-License-Identifier: MIT */
/* Internals of the job runner (src/lib/job/). */
#ifndef NCD_JOB_INT_H
#define NCD_JOB_INT_H

#include "ncd/job.h"

/* Hands one formatted line to o->report (no-op without a callback). */
void ncd__job_report(const struct ncd_job_opts *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* -np: forks plan->nprocs ranks running fn and watches them (fork.c). */
int ncd__job_fork(struct ncd_ctx *ctx, const struct ncd_job_plan *plan,
                  const struct ncd_job_opts *o, ncd_job_fn fn, void *arg,
                  struct ncd_job_result *res);

#endif
