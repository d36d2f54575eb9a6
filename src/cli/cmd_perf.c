/* SPDX-License-Identifier: MIT */
/*
 * nccl-doctor perf COLLECTIVE [nccl-tests options]
 * (also all_reduce_perf & co. through argv[0]).
 *
 * Parses nccl-tests' options (src/common.cu), hands the job to the job
 * runner (include/ncd/job.h), runs libncd's benchmark (include/ncd/perf.h)
 * in every process and prints the nccl-tests output on global rank 0.
 * Exit statuses are nccl-tests': 0 ok, 1 internal, 2 CUDA, 3 NCCL or
 * network, 4 timeout, 5 not implemented, 6 invalid usage, 7 wrong data or
 * below NCCL_TESTS_MIN_BW; 255 for bad size arguments.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_job.h"
#include "cli_doc.h"
#include "cmd.h"
#include "ncd/error.h"
#include "ncd/job.h"
#include "ncd/perf.h"
#include "ncd/strbuf.h"

extern char **environ;

enum { /* the string options from OPT_IFACE on, in struct perf_cli order */
    OPT_BACKEND = CLI_OPT__NEXT,
    OPT_NP,
    OPT_ALGO,
    OPT_PEER_TIMEOUT,
    OPT_IFACE,
    OPT_RDV,
    OPT_NCCL_LIB,
    OPT_CUDART_LIB,
};

/* nccl-doctor's own options (nccl-tests' come from ncd_perf_option_at()) */
static const struct option own_opts[] = {
    {"backend", required_argument, 0, OPT_BACKEND},
    {"np", required_argument, 0, OPT_NP},
    {"iface", required_argument, 0, OPT_IFACE},
    {"rendezvous", required_argument, 0, OPT_RDV},
    {"algo", required_argument, 0, OPT_ALGO},
    {"peer-timeout", required_argument, 0, OPT_PEER_TIMEOUT},
    {"nccl-lib", required_argument, 0, OPT_NCCL_LIB},
    {"cudart-lib", required_argument, 0, OPT_CUDART_LIB},
    {"json", no_argument, 0, CLI_OPT_JSON},
    {"help", no_argument, 0, 'h'},
    {"version", no_argument, 0, CLI_OPT_VERSION},
};
#define NOWN (sizeof own_opts / sizeof own_opts[0])

struct perf_cli {
    struct ncd_perf_opts o;
    struct cli_common common;
    int np, peer_timeout_s, device0, sock_nthreads, sock_nsocks;
    const char *backend, *iface, *rendezvous, *nccl_lib, *cudart_lib;
    int be, algo_kind; /* enum ncd_perf_backend_kind, enum ncd_perf_algo */
    char fallback[1100]; /* why auto did not pick the nccl backend */
    char **argv;
    /* output (global rank 0 only) */
    FILE *out;
    struct ncd_perf_report *rep;
    int progress_tty;
};

/* Output (global rank 0's thread) ---------------------------------------- */

static void out_text(void *arg, const char *text)
{
    struct perf_cli *P = arg;
    if (P->progress_tty) /* the text replaces the progress line */
        fputs("\r\033[K", stderr);
    if (P->out) {
        fputs(text, P->out);
        fflush(P->out);
    }
}

static void progress(void *arg, size_t i, size_t n, size_t bytes)
{
    struct perf_cli *P = arg;
    if (!P->progress_tty)
        return;
    fprintf(stderr, "\r\033[K# %s: size %zu B (%zu of %zu)", P->o.prog, bytes,
            i + 1, n);
    fflush(stderr);
}

/* Options ----------------------------------------------------------------- */

/* nccl-doctor's own options.  Returns 0, or an exit status + 1000. */
static int parse_own(struct perf_cli *P, int c, const char *arg)
{
    long v;
    switch (c) {
    case OPT_NP:
    case OPT_PEER_TIMEOUT:
        if (cli_parse_range(arg, 1, c == OPT_NP ? 1024 : 86400, &v)) {
            cli_err("invalid value '%s' for %s", arg,
                    c == OPT_NP ? "-np (1..1024)" : "--peer-timeout");
            return 1000 + 6;
        }
        *(c == OPT_NP ? &P->np : &P->peer_timeout_s) = (int)v;
        return 0;
    case OPT_BACKEND:
        P->backend = arg;
        if ((P->be = ncd_perf_backend_from_name(arg)) >= 0)
            return 0;
        cli_err("--backend takes socket, nccl or auto, not '%s'", arg);
        return 1000 + 6;
    case OPT_ALGO:
        if ((P->algo_kind = ncd_perf_algo_from_name(arg)) >= 0)
            return 0;
        cli_err("--algo takes ring, direct or auto, not '%s'", arg);
        return 1000 + 6;
    }
    const char **str[] = {[OPT_IFACE - OPT_IFACE] = &P->iface,
                          [OPT_RDV - OPT_IFACE] = &P->rendezvous,
                          [OPT_NCCL_LIB - OPT_IFACE] = &P->nccl_lib,
                          [OPT_CUDART_LIB - OPT_IFACE] = &P->cudart_lib};
    *str[c - OPT_IFACE] = arg;
    return 0;
}

/* Returns 0 ok, 1 help shown, or an exit status + 1000. */
static int parse(struct perf_cli *P, int argc, char **argv)
{
    size_t nt = ncd_perf_options_count();
    struct option lo[64];
    for (size_t i = 0; i < nt; i++)
        lo[i] = (struct option){ncd_perf_option_at(i)->name,
                                required_argument, 0,
                                ncd_perf_option_at(i)->letter};
    memcpy(lo + nt, own_opts, sizeof own_opts);
    lo[nt + NOWN] = (struct option){0, 0, 0, 0};
    int c, rc = 0;
    if (cli_doc_verify("perf", lo, NCD_PERF_GETOPT) < 0)
        return 1000 + 1;
    optind = 1;
    opterr = 0;
    while (!rc && (c = getopt_long(argc, argv, NCD_PERF_GETOPT, lo, NULL)) !=
                      -1) {
        struct ncd_perf_optmsg m;
        if (c == 'h') {
            cli_usage("perf", stdout);
            return 1;
        } else if (c == CLI_OPT_VERSION) {
            return cli_print_version() ? 1000 + 1 : 1;
        } else if (c == CLI_OPT_JSON) {
            P->common.json = 1;
        } else if (c >= OPT_BACKEND && c <= OPT_CUDART_LIB) { /* ours */
            rc = parse_own(P, c, optarg);
        } else if (c != '?' && c != ':') {
            int st = ncd_perf_opt_apply(&P->o, c, optarg, &m);
            if (m.text[0] && m.to_stdout)
                printf("%s\n", m.text);
            else if (m.text[0])
                fprintf(stderr, "%s%s\n", m.raw ? "" : "nccl-doctor: ",
                        m.text);
            rc = st ? 1000 + st : 0;
        } else {
            if (optopt && optopt < 128)
                printf("invalid option '%c'\n", optopt);
            else
                printf("invalid option '%s'\n", argv[optind - 1]);
            cli_usage("perf", stdout);
            fflush(stdout);
            cli_explain_bad_option("perf", argc, argv, optind - 1, lo, stderr);
            rc = 1000 + 6;
        }
    }
    return rc;
}

/* One process of the job --------------------------------------------------- */

static int perf_job(void *arg, struct ncd_ctx *ctx, const struct ncd_job *job)
{
    struct perf_cli *P = arg;
    struct ncd_perf_opts *o = &P->o;
    struct ncd_perf_job pj = {.nprocs = job->nprocs,
                              .proc = job->proc,
                              .local_proc = job->local_proc,
                              .ranks_per_proc = o->nthreads * o->ngpus,
                              .pg = job->pg,
                              .backend = (enum ncd_perf_backend_kind)P->be,
                              .algo = (enum ncd_perf_algo)P->algo_kind,
                              .peer_timeout_ms = P->peer_timeout_s * 1000,
                              .nccl_path = P->nccl_lib,
                              .cudart_path = P->cudart_lib,
                              .sock_nthreads = P->sock_nthreads,
                              .sock_nsocks = P->sock_nsocks,
                              .device0 = P->device0};
    int st = ncd_perf_prepare_socket(ctx, P->iface, ncd_pg_local_addr(job->pg),
                                     job->all_local, &pj);
    if (st) {
        cli_err("%s", ncd_ctx_errdetail(ctx));
        return st;
    }
    int is_root = job->proc == 0;
    P->out = is_root && !P->common.json ? stdout : NULL;
    P->progress_tty = is_root && isatty(STDERR_FILENO) && !P->common.json;
    pj.progress = P->progress_tty;
    P->rep = ncd_perf_report_new(o, is_root && P->common.json, P->argv,
                                 environ, P->fallback);
    if (!P->rep)
        return 1;
    struct ncd_strbuf sb = {0};
    if (is_root)
        ncd_perf_report_start(P->rep, &sb);
    out_text(P, ncd_sb_str(&sb));
    ncd_sb_reset(&sb);
    struct ncd_perf_sink sink;
    ncd_perf_report_sink(P->rep, out_text, progress, P, &sink);
    struct ncd_perf_summary sum;
    st = ncd_perf_run(ctx, o, &pj, &sink, &sum);
    if (sum.error[0]) {
        char host[256];
        ncd_job_hostname(host, sizeof host);
        ncd_perf_fmt_failure(&sb, host, st, pj.backend, sum.error);
        fputs(ncd_sb_str(&sb), stderr);
        ncd_sb_reset(&sb);
    }
    json_t *doc = NULL;
    if (is_root && ncd_perf_report_finish(P->rep, ctx, &sb, &sum, &doc)) {
        cli_err("%s", ncd_ctx_errdetail(ctx));
        st = st ? st : 1;
    }
    out_text(P, ncd_sb_str(&sb));
    ncd_sb_release(&sb);
    if (doc)
        cli_print_json(json_incref(doc));
    ncd_perf_report_free(P->rep);
    return st;
}

/* The command -------------------------------------------------------------- */

/* Options and the collective; returns -1 to go on, else an exit status. */
static int setup(struct perf_cli *P, int argc, char **argv)
{
    const char *base = strrchr(argv[0], '/');
    base = base ? base + 1 : argv[0];
    size_t bl = strlen(base);
    int coll = -1;
    if (bl > 5 && !strcmp(base + bl - 5, "_perf") &&
        (coll = ncd_perf_coll_from_name(base)) < 0) {
        cli_err("unknown collective '%s'", base);
        return 6;
    }
    char **av = cli_np_argv(argc, argv);
    if (!av)
        return 1;
    int rc = parse(P, argc, av);
    if (rc == 0 && coll < 0) {
        if (optind >= argc) {
            struct ncd_strbuf sb = {0};
            ncd_perf_coll_list(&sb);
            cli_err("perf needs a collective: %s", ncd_sb_str(&sb));
            ncd_sb_release(&sb);
            cli_usage("perf", stderr);
            rc = 1000 + 6;
        } else if ((coll = ncd_perf_coll_from_name(av[optind++])) < 0) {
            const char *names[NCD_COLL__COUNT];
            for (int i = 0; i < NCD_COLL__COUNT; i++)
                names[i] = ncd_perf_coll_name((enum ncd_perf_coll)i);
            const char *s = cli_closest(av[optind - 1], names, NCD_COLL__COUNT);
            if (s)
                cli_err("unknown collective '%s'; did you mean '%s'?",
                        av[optind - 1], s);
            else
                cli_err("unknown collective '%s'", av[optind - 1]);
            rc = 1000 + 6;
        }
    }
    if (rc == 0 && optind < argc) {
        cli_err("unexpected argument '%s'", av[optind]);
        rc = 1000 + 6;
    }
    free(av);
    if (rc)
        return rc == 1 ? 0 : rc - 1000;
    struct ncd_perf_opts *o = &P->o;
    /* checked before any rank starts, so no rank is left to fail later */
    char msg[300];
    int st = ncd_perf_opts_check(o, msg, sizeof msg);
    if (st) {
        cli_msg(st == 255 ? "" : "nccl-doctor: ", "%s", msg);
        return st;
    }
    o->coll = (enum ncd_perf_coll)coll;
    o->prog = ncd_perf_coll_prog(o->coll);
    /* nccl-tests' -T also bounds every wait of the socket backend */
    if (P->peer_timeout_s == 0)
        P->peer_timeout_s = o->timeout_s > 0 ? o->timeout_s : 60;
    return -1;
}

int ncd_cmd_perf(int argc, char **argv)
{
    struct perf_cli P;
    memset(&P, 0, sizeof P);
    ncd_perf_opts_default(&P.o);
    cli_common_init(&P.common);
    P.argv = argv;
    int st = setup(&P, argc, argv);
    if (st >= 0)
        return st;
    struct ncd_ctx *ctx = cli_ctx_new(&P.common);
    if (!ctx)
        return 1;
    ncd_perf_env(ctx, &P.o, &P.device0);
    struct ncd_job_request req = {.np = P.np, .rendezvous = P.rendezvous};
    struct ncd_job_plan plan;
    if (ncd_job_resolve(ctx, &req, &plan)) {
        cli_err("%s", ncd_ctx_errdetail(ctx));
        ncd_ctx_free(ctx);
        return 6;
    }
    char why[1024];
    P.be = ncd_perf_select_backend((enum ncd_perf_backend_kind)P.be,
                                   P.nccl_lib, P.cudart_lib, why, sizeof why);
    if (!P.backend && P.be == NCD_PERF_BACKEND_SOCKET)
        snprintf(P.fallback, sizeof P.fallback, "%s", why);
    if (P.be == NCD_PERF_BACKEND_SOCKET &&
        ncd_perf_socket_settings(ctx, &P.sock_nthreads, &P.sock_nsocks)) {
        cli_err("%s", ncd_ctx_errdetail(ctx));
        ncd_ctx_free(ctx);
        return 1;
    }
    int rpp = P.o.nthreads * P.o.ngpus;
    st = ncd_perf_validate(&P.o, plan.nprocs * rpp,
                           (enum ncd_perf_backend_kind)P.be, why, sizeof why);
    if (st) {
        if (plan.proc <= 0)
            cli_msg("nccl-doctor perf: ", "%s", why);
        ncd_ctx_free(ctx);
        return st;
    }
    struct ncd_job_opts jo = {.timeout_ms = P.peer_timeout_s * 1000,
                              .ranks_per_proc = rpp,
                              .straggler_ms = (P.peer_timeout_s + 5) * 1000,
                              .fail_status = 3,
                              .argc = &argc,
                              .argv = &argv};
    int err;
    st = cli_job_run(ctx, "perf", &plan, &jo, perf_job, &P, &err);
    if (err) /* 1: could not fork; 4/3: the rendezvous timed out/failed */
        st = plan.kind == NCD_JOB_FORK ? 1 : err == NCD_ETIMEOUT ? 4 : 3;
    ncd_ctx_free(ctx);
    return st;
}
