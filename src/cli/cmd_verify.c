/* SPDX-License-Identifier: MIT */
/*
 * nccl-doctor verify: the verification ladder as one command, one status
 * per step (include/ncd/verify.h does the work; this file parses options,
 * hands a launched job to the job runner and prints).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_job.h"
#include "cmd.h"
#include "ncd/error.h"
#include "ncd/perf.h"
#include "ncd/verify.h"

enum {
    OPT_FULL = CLI_OPT__NEXT,
    OPT_TIMEOUT,
    OPT_MIN_RATIO,
    OPT_NP,
    OPT_RDV,
    OPT_NCCL_LIB,
    OPT_CUDART_LIB,
    OPT_ITERS,
    OPT_WARMUP,
};

struct verify_cli {
    struct cli_common c;
    struct ncd_verify_job vj;
    struct ncd_text_style st;
    int np, full, sized;
    const char *rendezvous;
    char ver_src[600];
};

static int size_arg(const char *s, const char *opt, size_t *out)
{
    if (ncd_perf_parse_size(s, out) || *out == 0) {
        cli_err("verify: %s takes a size (1M, 64K, 2G...), not '%s'", opt, s);
        return -1;
    }
    return 0;
}

static int verify_opt(int opt, const char *arg, void *data)
{
    struct verify_cli *V = data;
    struct ncd_verify_opts *o = &V->vj.o;
    long v;
    switch (opt) {
    case OPT_FULL:
        V->full = 1;
        return 0;
    case 'b':
        V->sized = 1;
        return size_arg(arg, "-b", &o->minbytes);
    case 'e':
        V->sized = 1;
        return size_arg(arg, "-e", &o->maxbytes);
    case OPT_ITERS:
    case OPT_WARMUP:
        if (cli_parse_range(arg, opt == OPT_ITERS ? 1 : 0, 100000, &v)) {
            cli_err("verify: %s takes a count (%d..100000)",
                    opt == OPT_ITERS ? "-n" : "-w", opt == OPT_ITERS);
            return -1;
        }
        *(opt == OPT_ITERS ? &o->iters : &o->warmup_iters) = (int)v;
        return 0;
    case OPT_TIMEOUT:
        if (cli_parse_range(arg, 1, 86400, &v)) {
            cli_err("verify: --timeout takes seconds (1..86400)");
            return -1;
        }
        o->timeout_s = (int)v;
        return 0;
    case OPT_MIN_RATIO: {
        char *end;
        double r = strtod(arg, &end);
        if (end == arg || *end || !(r >= 0 && r <= 1)) {
            cli_err("verify: --min-ratio takes a number from 0 to 1");
            return -1;
        }
        o->min_ratio = r;
        return 0;
    }
    case OPT_NP:
        if (cli_parse_range(arg, 1, 1024, &v)) {
            cli_err("verify: -np takes 1..1024");
            return -1;
        }
        V->np = (int)v;
        return 0;
    case OPT_RDV:
        V->rendezvous = arg;
        return 0;
    case OPT_NCCL_LIB:
        o->nccl_path = arg;
        return 0;
    case OPT_CUDART_LIB:
        o->cudart_path = arg;
        return 0;
    }
    cli_usage("verify", stderr);
    return -1;
}

/* Prints a step as soon as it ends (text mode, process 0). */
static void print_step(void *arg, const struct ncd_verify_step *s)
{
    struct verify_cli *V = arg;
    struct ncd_strbuf sb = {0};
    ncd_verify_step_text(s, V->c.verbose, &V->st, &sb);
    fputs(ncd_sb_str(&sb), stdout);
    fflush(stdout);
    ncd_sb_release(&sb);
}

/* The end of the run on process 0: the summary line or the JSON. */
static int print_end(struct verify_cli *V, struct ncd_ctx *ctx, int status)
{
    if (V->c.json) {
        json_t *j = ncd_verify_json(&V->vj.report, cli_hostname(ctx));
        if (!j || cli_print_json(j) < 0)
            return NCD_VERIFY_EXIT_TOOL;
        return status;
    }
    struct ncd_strbuf sb = {0};
    ncd_verify_summary_text(&V->vj.report, &sb);
    if (cli_print_sb(&sb) < 0)
        status = NCD_VERIFY_EXIT_TOOL;
    ncd_sb_release(&sb);
    return status;
}

static int job_fn(void *arg, struct ncd_ctx *ctx, const struct ncd_job *job)
{
    struct verify_cli *V = arg;
    int st = ncd_verify_job_fn(&V->vj, ctx, job);
    if (V->vj.is_root)
        st = print_end(V, ctx, st);
    ncd_verify_report_release(&V->vj.report);
    return st;
}

int ncd_cmd_verify(int argc, char **argv)
{
    static const struct option lo[] = {
        {"full", no_argument, 0, OPT_FULL},
        {"minbytes", required_argument, 0, 'b'},
        {"maxbytes", required_argument, 0, 'e'},
        {"iters", required_argument, 0, OPT_ITERS},
        {"warmup-iters", required_argument, 0, OPT_WARMUP},
        {"timeout", required_argument, 0, OPT_TIMEOUT},
        {"min-ratio", required_argument, 0, OPT_MIN_RATIO},
        {"np", required_argument, 0, OPT_NP},
        {"rendezvous", required_argument, 0, OPT_RDV},
        {"nccl-lib", required_argument, 0, OPT_NCCL_LIB},
        {"cudart-lib", required_argument, 0, OPT_CUDART_LIB},
        {0, 0, 0, 0},
    };
    struct verify_cli *V = calloc(1, sizeof *V);
    if (!V)
        return NCD_VERIFY_EXIT_TOOL;
    ncd_verify_opts_default(&V->vj.o);
    char **av = cli_np_argv(argc, argv);
    if (!av) {
        free(V);
        return NCD_VERIFY_EXIT_TOOL;
    }
    /* -b, -e, -n and -w as nccl-tests spells them */
    static const char *const spelled[][2] = {{"-b", "--minbytes"},
                                             {"-e", "--maxbytes"},
                                             {"-n", "--iters"},
                                             {"-w", "--warmup-iters"}};
    for (int i = 1; i < argc; i++)
        for (size_t k = 0; k < sizeof spelled / sizeof spelled[0]; k++)
            if (!strcmp(av[i], spelled[k][0]))
                av[i] = (char *)spelled[k][1];
    int st = cli_parse("verify", argc, av, &V->c, lo, verify_opt, V, NULL);
    free(av);
    if (st != CLI_CONTINUE) {
        free(V);
        return st;
    }
    struct ncd_verify_opts *o = &V->vj.o;
    if (V->full && !V->sized) {
        o->minbytes = 1ull << 30;
        o->maxbytes = 4ull << 30;
    } else if (V->full) {
        cli_err("verify: give --full or -b/-e, not both");
        free(V);
        return NCD_VERIFY_EXIT_TOOL;
    }
    if (o->minbytes > o->maxbytes) {
        cli_err("verify: -b %zu is larger than -e %zu", o->minbytes,
                o->maxbytes);
        free(V);
        return NCD_VERIFY_EXIT_TOOL;
    }
    struct ncd_ctx *ctx = cli_ctx_new(&V->c);
    if (!ctx) {
        free(V);
        return NCD_VERIFY_EXIT_TOOL;
    }
    st = NCD_VERIFY_EXIT_TOOL;
    o->nccl_version = V->c.nccl_version;
    o->nccl_source = V->ver_src;
    if (cli_nccl_version(ctx, V->c.nccl_version, &o->nccl_code, V->ver_src,
                         sizeof V->ver_src) < 0)
        goto out;
    /* The launcher's variables are this process's own, also when the
     * node's files come from a recording (whose environment ctx holds). */
    struct ncd_job_request req = {.np = V->np, .rendezvous = V->rendezvous};
    struct ncd_job_plan plan;
    struct ncd_ctx *live = ctx;
    if (V->c.sysroot && ncd_ctx_new(NULL, environ, &live)) {
        cli_err("verify: out of memory");
        goto out;
    }
    int jr = ncd_job_resolve(live, &req, &plan);
    if (jr)
        cli_err("verify: %s", ncd_ctx_errdetail(live));
    if (live != ctx)
        ncd_ctx_free(live);
    if (jr)
        goto out;
    V->st = cli_text_style(&V->c);
    if (!V->c.json) {
        o->on_step = print_step;
        o->arg = V;
        if (plan.proc <= 0)
            printf("nccl-doctor verify on %s%s%s\n", cli_hostname(ctx),
                   plan.kind == NCD_JOB_SINGLE ? "" : ", launcher ",
                   plan.kind == NCD_JOB_SINGLE ? "" : plan.launcher);
        fflush(stdout);
    }
    if (plan.kind == NCD_JOB_SINGLE) {
        if (ncd_verify_node(ctx, o, &V->vj.report) < 0) {
            cli_err("verify: out of memory");
            goto out;
        }
        st = print_end(V, ctx, ncd_verify_exit_status(&V->vj.report));
        goto out;
    }
    /* the others wait while local process 0 verifies its node */
    struct ncd_job_opts jo = {.timeout_ms = o->timeout_s * 10000,
                              .straggler_ms = (o->timeout_s + 10) * 1000,
                              .fail_status = NCD_VERIFY_EXIT_TOOL,
                              .argc = &argc,
                              .argv = &argv};
    int err;
    st = cli_job_run(ctx, "verify", &plan, &jo, job_fn, V, &err);
    if (err)
        st = NCD_VERIFY_EXIT_TOOL;
out:
    ncd_verify_report_release(&V->vj.report);
    ncd_ctx_free(ctx);
    free(V);
    return st;
}
