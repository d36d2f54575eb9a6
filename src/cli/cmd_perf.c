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
    OPT_PLOT,
    OPT_PLOT_WITH,
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
    {"plot", required_argument, 0, OPT_PLOT},
    {"plot-with", required_argument, 0, OPT_PLOT_WITH},
    {"json", no_argument, 0, CLI_OPT_JSON},
    {"help", no_argument, 0, 'h'},
    {"version", no_argument, 0, CLI_OPT_VERSION},
};
#define NOWN (sizeof own_opts / sizeof own_opts[0])


#include "perf_cli.h"


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
        if ((P->be = ncd_perf_backend_from_name(arg)) >= 0)
            return 0;
        cli_err("--backend takes nccl or socket, not '%s'%s", arg,
                strcmp(arg, "auto") ? ""
                                    : " (nothing falls back to TCP behind "
                                      "your back: ask for socket)");
        return 1000 + 6;
    case OPT_ALGO:
        if ((P->algo_kind = ncd_perf_algo_from_name(arg)) >= 0)
            return 0;
        cli_err("--algo takes ring, direct or auto, not '%s'", arg);
        return 1000 + 6;
    case OPT_PLOT:
        P->plot_file = arg;
        return 0;
    case OPT_PLOT_WITH:
        if (P->nplot_with == PLOT_WITH_MAX) {
            cli_err("--plot-with: at most %d files", PLOT_WITH_MAX);
            return 1000 + 6;
        }
        P->plot_with[P->nplot_with++] = arg;
        return 0;
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
            return cli_usage("perf", stdout) ? 1000 + 1 : 1;
        } else if (c == CLI_OPT_VERSION) {
            return cli_print_version() ? 1000 + 1 : 1;
        } else if (c == CLI_OPT_JSON) {
            P->common.json = 1;
        } else if (c >= OPT_BACKEND && c <= OPT_PLOT_WITH) { /* ours */
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
    int st = ncd_perf_prepare_socket(ctx, P->iface, P->nccl_version, &pj);
    if (st) {
        cli_err("%s", ncd_ctx_errdetail(ctx));
        return st;
    }
    int is_root = job->proc == 0;
    P->out = is_root && !P->common.json ? stdout : NULL;
    P->progress_tty = is_root && isatty(STDERR_FILENO) && !P->common.json;
    pj.progress = P->progress_tty;
    P->rep = ncd_perf_report_new(o, is_root && P->common.json, P->argv,
                                 environ, pj.backend);
    if (!P->rep)
        return 1;
    ncd_perf_report_cpus(P->rep, perf_cpus_of_process());
    struct ncd_strbuf sb = {0};
    if (is_root)
        ncd_perf_report_start(P->rep, &sb);
    perf_out_text(P, ncd_sb_str(&sb));
    ncd_sb_reset(&sb);
    ncd_perf_report_sink(P->rep, perf_out_text, perf_progress, P, &P->inner);
    P->plotting = is_root && P->plot_file;
    struct ncd_perf_sink sink = {.arg = P,
                                 .preamble = perf_on_preamble,
                                 .row = perf_on_row,
                                 .progress = perf_on_progress};
    struct ncd_perf_summary sum;
    st = ncd_perf_run(ctx, o, &pj, &sink, &sum);
    if (P->plotting && perf_plot_write(P))
        st = st ? st : 1;
    ncd_plot_release(&P->plot);
    /* --json has no text header: the CPU warning goes to stderr */
    if (is_root && P->common.json && *ncd_perf_report_warning(P->rep))
        cli_err("warning: %s", ncd_perf_report_warning(P->rep));
    json_t *doc = NULL;
    if (is_root && ncd_perf_report_finish(P->rep, ctx, &sb, &sum, &doc)) {
        cli_err("%s", ncd_ctx_errdetail(ctx));
        st = st ? st : 1;
    }
    perf_out_text(P, ncd_sb_str(&sb));
    ncd_sb_release(&sb);
    if (st)
        perf_report_failure(P, ctx, &pj, &sum, st, is_root);
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
    struct ncd_strbuf notes = {0};
    ncd_perf_opts_settle(o, &notes);
    fputs(ncd_sb_str(&notes), stderr);
    ncd_sb_release(&notes);
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

/* The job once the options are known; returns the exit status. */
static int perf_main(struct perf_cli *P, struct ncd_ctx *ctx, int argc,
                     char **argv)
{
    ncd_perf_env(ctx, &P->o, &P->device0);
    struct ncd_job_request req = {.np = P->np, .rendezvous = P->rendezvous};
    struct ncd_job_plan plan;
    if (ncd_job_resolve(ctx, &req, &plan)) {
        cli_err("%s", ncd_ctx_errdetail(ctx));
        return 6;
    }
    if (P->o.coll == NCD_COLL_ALLTOALLV) { /* only alltoallv_perf reads them */
        if (ncd_perf_traffic_load(ctx, &P->traffic)) {
            /* nccl-tests: the message, then testInternalError */
            if (plan.proc <= 0)
                fprintf(stderr, "nccl-doctor perf: %s\n",
                        ncd_ctx_errdetail(ctx));
            return 1;
        }
        P->o.traffic = &P->traffic;
    }
    char why[1024];
    if (P->be == NCD_PERF_BACKEND_SOCKET &&
        ncd_perf_socket_settings(ctx, &P->sock_nthreads, &P->sock_nsocks)) {
        cli_err("%s", ncd_ctx_errdetail(ctx));
        return 1;
    }
    if (P->be == NCD_PERF_BACKEND_SOCKET) {
        /* the path NCCL installed here would take (once per job) */
        struct ncd_nccl_lib lib;
        if (ncd_sys_nccl_version(ctx, &lib) == 0 && lib.found)
            P->nccl_version = lib.version;
        ncd_ctx_clear_error(ctx);
    }
    int rpp = P->o.nthreads * P->o.ngpus;
    int st = ncd_perf_validate(&P->o, plan.nprocs * rpp,
                               (enum ncd_perf_backend_kind)P->be, why,
                               sizeof why);
    if (st) {
        if (plan.proc <= 0)
            cli_msg("nccl-doctor perf: ", "%s", why);
        return st;
    }
    /* the buffers of this host's ranks against MemAvailable, before any
     * rank allocates */
    int local = plan.kind == NCD_JOB_FORK     ? plan.nprocs
                : plan.kind == NCD_JOB_SINGLE ? 1
                : plan.env.local_size > 0     ? plan.env.local_size
                                              : 1;
    st = ncd_perf_mem_fit(ctx, &P->o, plan.nprocs * rpp, local * rpp,
                          (enum ncd_perf_backend_kind)P->be, why, sizeof why);
    if (st) {
        if (plan.proc <= 0)
            cli_msg("nccl-doctor perf: ", "%s", why);
        return st;
    }
    if (plan.proc <= 0 && perf_plot_load(P))
        return 6;
    struct ncd_job_opts jo = {.timeout_ms = P->peer_timeout_s * 1000,
                              .ranks_per_proc = rpp,
                              .straggler_ms = (P->peer_timeout_s + 5) * 1000,
                              .fail_status = 3,
                              .argc = &argc,
                              .argv = &argv};
    int err;
    st = cli_job_run(ctx, "perf", &plan, &jo, perf_job, P, &err);
    if (err) /* 1: could not fork; 4/3: the rendezvous timed out/failed */
        st = plan.kind == NCD_JOB_FORK ? 1 : err == NCD_ETIMEOUT ? 4 : 3;
    return st;
}

int ncd_cmd_perf(int argc, char **argv)
{
    struct perf_cli P;
    memset(&P, 0, sizeof P);
    ncd_perf_opts_default(&P.o);
    ncd_perf_traffic_default(&P.traffic);
    cli_common_init(&P.common);
    P.argv = argv;
    int st = setup(&P, argc, argv);
    if (st >= 0)
        return st;
    struct ncd_ctx *ctx = cli_ctx_new(&P.common);
    if (!ctx)
        return 1;
    st = perf_main(&P, ctx, argc, argv);
    ncd_perf_traffic_release(&P.traffic);
    ncd_plot_release(&P.plot);
    ncd_ctx_free(ctx);
    return st;
}
