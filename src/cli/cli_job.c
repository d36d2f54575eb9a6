/* SPDX-License-Identifier: MIT */
/* Command-line side of the job runner (see cli_job.h). */
#define _GNU_SOURCE
#include "cli_job.h"
#include "cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncd/strbuf.h"

char **cli_np_argv(int argc, char **argv)
{
    char **av = calloc((size_t)argc + 1, sizeof *av);
    if (!av)
        return NULL;
    for (int i = 0; i < argc; i++)
        av[i] = strcmp(argv[i], "-np") == 0 ? (char *)"--np" : argv[i];
    return av;
}

void cli_job_report(void *cmd, const char *line)
{
    fprintf(stderr, "nccl-doctor %s: ", (const char *)cmd);
    cli_put_clean(stderr, line, strlen(line));
    fputc('\n', stderr);
    fflush(stderr);
}

int cli_job_run(struct ncd_ctx *ctx, const char *cmd,
                const struct ncd_job_plan *plan, struct ncd_job_opts *o,
                ncd_job_fn fn, void *arg, int *error)
{
    o->report = cli_job_report;
    o->report_arg = (void *)cmd;
    struct ncd_job_result res;
    ncd_job_run(ctx, plan, o, fn, arg, &res);
    *error = res.error;
    if (!res.error)
        return res.status;
    struct ncd_strbuf sb = {0};
    if (plan->kind == NCD_JOB_TCP && !res.joined)
        ncd_job_rdv_report(ctx, plan, &sb);
    else
        ncd_sb_printf(&sb, "%s\n", ncd_ctx_errdetail(ctx));
    const char *p = ncd_sb_str(&sb);
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        fprintf(stderr, "nccl-doctor %s: ", cmd);
        cli_put_clean(stderr, p, n);
        fputc('\n', stderr);
        p += n + (nl != NULL);
    }
    ncd_sb_release(&sb);
    return res.status;
}
