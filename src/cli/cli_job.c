/* SPDX-License-Identifier: MIT */
/* Command-line side of the job runner (see cli_job.h). */
#define _GNU_SOURCE
#include "cli_job.h"

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
    fprintf(stderr, "nccl-doctor %s: %s\n", (const char *)cmd, line);
    fflush(stderr);
}

void cli_job_rdv_failed(struct ncd_ctx *ctx, const char *cmd,
                        const struct ncd_job_plan *plan)
{
    struct ncd_strbuf sb = {0};
    ncd_job_rdv_report(ctx, plan, &sb);
    const char *p = ncd_sb_str(&sb);
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        fprintf(stderr, "nccl-doctor %s: %.*s\n", cmd, (int)n, p);
        p += n + (nl != NULL);
    }
    ncd_sb_release(&sb);
}
