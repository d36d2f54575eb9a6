/* SPDX-License-Identifier: MIT */
/*
 * nccl-doctor run [--logs DIR] [--timeout S] [--json] -- CMD ARGS...:
 * run a job with NCCL's logging on, keep its output, explain a failure.
 * The library does the work (include/ncd/run.h, explain.h); this file
 * parses options and prints.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_doc.h"
#include "cmd.h"
#include "ncd/error.h"
#include "ncd/explain.h"
#include "ncd/run.h"

enum {
    OPT_LOGS = CLI_OPT__NEXT,
    OPT_TIMEOUT,
};

/* Exit statuses of run's own failures (as env(1), timeout(1)). */
enum { RUN_EXIT_TOOL = 125, RUN_EXIT_NOEXEC = 126, RUN_EXIT_NOTFOUND = 127 };

struct run_cli {
    struct cli_common c;
    int color_set;
    struct ncd_run_opts o;
};

/* Options up to the first word that is not one (or "--"). */
static int parse(struct run_cli *R, int argc, char **argv, int *first)
{
    static const struct option lo[] = {
        {"logs", required_argument, 0, OPT_LOGS},
        {"timeout", required_argument, 0, OPT_TIMEOUT},
        {"json", no_argument, 0, CLI_OPT_JSON},
        {"color", optional_argument, 0, CLI_OPT_COLOR},
        {"no-color", no_argument, 0, CLI_OPT_NO_COLOR},
        {"verbose", no_argument, 0, 'v'},
        {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, 'V'},
        {0, 0, 0, 0},
    };
    cli_common_init(&R->c);
    optind = 1;
    int opt;
    long v;
    while ((opt = cli_getopt("run", argc, argv, "+vhV", lo)) != -1) {
        switch (opt) {
        case 'V':
            return cli_print_version() ? RUN_EXIT_TOOL : NCD_EXIT_OK;
        case 'h':
            return cli_usage("run", stdout);
        case OPT_LOGS:
            if (!*optarg) {
                cli_err("run: --logs needs a directory");
                return RUN_EXIT_TOOL;
            }
            R->o.logs = optarg;
            break;
        case OPT_TIMEOUT:
            if (cli_parse_range(optarg, 1, 30L * 86400, &v)) {
                cli_err("run: --timeout takes seconds (1..2592000), not "
                        "'%s'",
                        optarg);
                return RUN_EXIT_TOOL;
            }
            R->o.timeout_s = (int)v;
            break;
        case CLI_OPT_COLOR:
        case CLI_OPT_NO_COLOR:
            R->color_set = 1;
            /* fall through */
        case CLI_OPT_JSON:
        case 'v':
            if (cli_common_opt(&R->c, opt, optarg) < 0)
                return RUN_EXIT_TOOL;
            break;
        default: /* cli_getopt explained it */
            return RUN_EXIT_TOOL;
        }
    }
    if (optind >= argc) {
        cli_err("run: give the command to run after --, e.g. nccl-doctor "
                "run -- torchrun --nproc-per-node 8 train.py");
        return RUN_EXIT_TOOL;
    }
    *first = optind;
    return CLI_CONTINUE;
}

static void on_problem(void *arg, const char *msg)
{
    (void)arg;
    cli_err("run: explain: %s", msg);
}

/* Why it failed, in words, for the line before the report. */
static void outcome_text(const struct ncd_run_result *res,
                         const struct ncd_run_opts *o, char *out,
                         size_t len)
{
    const struct ncd_spawn_result *s = &res->spawn;
    if (s->end == NCD_SPAWN_TIMED_OUT)
        snprintf(out, len,
                 "was still running after --timeout %d s and was stopped "
                 "(exit status 124)",
                 o->timeout_s);
    else if (s->end == NCD_SPAWN_SIGNALED)
        snprintf(out, len, "was killed by signal %d (%s)%s", s->status,
                 strsignal(s->status),
                 s->forwarded ? ", forwarded by nccl-doctor" : "");
    else
        snprintf(out, len, "exited with status %d", s->status);
}

/* explain on DIR: prints the text report on stderr (when the command
 * failed) or the JSON document with "run" on stdout (--json). */
static int explain_dir(struct run_cli *R, struct ncd_ctx *ctx,
                       const struct ncd_run_plan *plan,
                       const struct ncd_run_result *res)
{
    struct ncd_rules *rules = NULL;
    struct ncd_explain *ex = NULL;
    struct ncd_findings fl = {0};
    int rc = -1;
    if (ncd_rules_new(&rules) < 0 || ncd_rules_load_builtin(ctx, rules) < 0 ||
        ncd_explain_new(ctx, rules, &ex) < 0) {
        cli_err("run: explain: %s", ncd_ctx_errdetail(ctx));
        goto out;
    }
    /* run set NCCL_DEBUG=INFO unless the user set NCCL_DEBUG */
    for (int i = 0; i < plan->nvars; i++)
        if (!strcmp(plan->vars[i].name, "NCCL_DEBUG") && !plan->vars[i].kept)
            ncd_explain_set_debug_on(ex, 1);
    struct ncd_explain_inputs in = {.problem = on_problem};
    if (ncd_run_explain_feed(ctx, plan->dir, ex, &in) == NCD_ENOMEM ||
        ncd_explain_finish(ex, &fl) < 0) {
        cli_err("run: explain: out of memory");
        goto out;
    }
    if (R->c.json) {
        json_t *j = ncd_explain_report_json(ex, &fl, in.nread,
                                            cli_hostname(ctx));
        json_t *run = ncd_run_json(plan, res);
        if (!j || !run) {
            json_decref(j);
            json_decref(run);
            cli_err("run: out of memory");
            goto out;
        }
        json_object_set_new(j, "run", run);
        rc = cli_print_json(j);
        goto out;
    }
    struct ncd_strbuf sb = {0};
    struct ncd_text_style st = cli_text_style(&R->c);
    ncd_explain_report_text(ex, &fl, &st, in.nread, &sb);
    fputs(ncd_sb_str(&sb), stderr);
    fflush(stderr);
    ncd_sb_release(&sb);
    rc = 0;
out:
    ncd_findings_release(&fl);
    ncd_explain_free(ex);
    ncd_rules_free(rules);
    return rc;
}

int ncd_cmd_run(int argc, char **argv)
{
    struct run_cli R;
    memset(&R, 0, sizeof R);
    int first = 0;
    int st = parse(&R, argc, argv, &first);
    if (st != CLI_CONTINUE)
        return st;
    if (!R.color_set)
        R.c.color = R.c.color && isatty(STDERR_FILENO);
    R.o.out_fd = R.c.json ? STDERR_FILENO : STDOUT_FILENO;
    R.o.err_fd = STDERR_FILENO;
    R.o.interactive = 1;
    R.c.sysroot = NULL; /* run is live */
    struct ncd_ctx *ctx = cli_ctx_new(&R.c);
    if (!ctx)
        return RUN_EXIT_TOOL;
    struct ncd_run_plan plan;
    int rc = ncd_run_prepare(ctx, argv + first, &R.o, &plan);
    if (rc) {
        cli_err("run: %s", ncd_ctx_errdetail(ctx));
        ncd_ctx_free(ctx);
        return rc == NCD_ENOENT  ? RUN_EXIT_NOTFOUND
               : rc == NCD_EPERM ? RUN_EXIT_NOEXEC
                                 : RUN_EXIT_TOOL;
    }
    fprintf(stderr, "nccl-doctor run: logs in %s\n", plan.dir);
    fflush(stderr);
    struct ncd_run_result res;
    rc = ncd_run_exec(ctx, &plan, &R.o, &res);
    if (rc) {
        cli_err("run: %s", ncd_ctx_errdetail(ctx));
        ncd_ctx_free(ctx);
        return RUN_EXIT_TOOL;
    }
    if (res.spawn.log_errno)
        cli_err("run: a log in %s could not be written completely: %s",
                plan.dir, strerror(res.spawn.log_errno));
    char what[256];
    outcome_text(&res, &R.o, what, sizeof what);
    if (res.failed)
        fprintf(stderr,
                "\nnccl-doctor run: %s %s after %.1f s; logs in %s\n\n",
                argv[first], what, res.seconds, plan.dir);
    else
        fprintf(stderr, "nccl-doctor run: %s %s after %.1f s; logs in %s\n",
                argv[first], what, res.seconds, plan.dir);
    fflush(stderr);
    if ((res.failed || R.c.json) && explain_dir(&R, ctx, &plan, &res) < 0 &&
        res.status == 0)
        res.status = RUN_EXIT_TOOL;
    st = res.status;
    ncd_run_result_release(&res);
    ncd_ctx_free(ctx);
    return st;
}
