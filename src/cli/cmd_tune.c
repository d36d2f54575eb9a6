/* SPDX-License-Identifier: MIT */
/*
 * nccl-doctor tune: runs the same `perf` sweep under candidate
 * environments, several times each, and reports which settings are faster
 * than the current ones beyond the noise.  The measuring is libncd's
 * (include/ncd/tune.h "Running"); the launch is the job runner's
 * (include/ncd/job.h): one host -np N hands -np to perf, several hosts run
 * tune under a launcher and every process starts its own perf.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_job.h"
#include "progress.h"
#include "cli_doc.h"
#include "cmd.h"
#include "ncd/error.h"
#include "ncd/job.h"
#include "ncd/perf.h"
#include "ncd/plot.h"
#include "ncd/readall.h"
#include "ncd/sysops.h"
#include "ncd/tune.h"

enum {
    OPT_NP = CLI_OPT__NEXT,
    OPT_RDV,
    OPT_REPS,
    OPT_CANDS,
    OPT_FAMILIES,
    OPT_METRIC,
    OPT_BACKEND,
    OPT_RUN_TIMEOUT,
    OPT_PLOT,
};

static const struct option tune_opts[] = {
    CLI_COMMON_OPTS,
    {"np", required_argument, 0, OPT_NP},
    {"rendezvous", required_argument, 0, OPT_RDV},
    {"reps", required_argument, 0, OPT_REPS},
    {"candidates", required_argument, 0, OPT_CANDS},
    {"families", required_argument, 0, OPT_FAMILIES},
    {"metric", required_argument, 0, OPT_METRIC},
    {"backend", required_argument, 0, OPT_BACKEND},
    {"run-timeout", required_argument, 0, OPT_RUN_TIMEOUT},
    {"plot", required_argument, 0, OPT_PLOT},
    {0, 0, 0, 0},
};

/* perf's sweep when none is given after `--` */
static const char *const default_perf[] = {"all_reduce", "-b", "256K", "-e",
                                           "4M", "-f", "4", "-n", "5", "-w",
                                           "1"};

#include "tune_cli.h"

/* The signal that stopped tune (SIGINT, SIGTERM, SIGHUP), else 0.  The
 * running perf is stopped through ncd_tune_exec.cancel; the report then
 * says "interrupted" and charges no candidate with the stopped run. */
static atomic_int stop_signal;
static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP};
static struct sigaction saved_actions[3];

static void on_stop_signal(int sig)
{
    atomic_store(&stop_signal, sig);
}

static void catch_stop_signals(int on)
{
    for (int i = 0; i < 3; i++) {
        if (on) {
            struct sigaction sa = {.sa_handler = on_stop_signal};
            sigemptyset(&sa.sa_mask);
            sigaction(stop_signals[i], &sa, &saved_actions[i]);
        } else {
            sigaction(stop_signals[i], &saved_actions[i], NULL);
        }
    }
}

static void on_planned(void *arg, const struct ncd_tune_set *set, int reps)
{
    struct tune_cli *T = arg;
    int n = 0;
    for (int i = 0; i < set->n; i++)
        n += !set->c[i].skip[0];
    T->total = n * reps;
    T->ncand = n;
    T->done = 0;
    cli_progress_show(&T->prog, 0, T->total, "tune: %d candidate%s x %d run%s",
                      n, n == 1 ? "" : "s", reps, reps == 1 ? "" : "s");
}

static void on_run(void *arg, const char *label, int rep, int failed,
                   double busbw)
{
    struct tune_cli *T = arg;
    T->done++;
    if (T->c.verbose) {
        cli_progress_clear(&T->prog);
        fprintf(stderr, "tune: %s run %d: %s%.4g GB/s\n", label, rep + 1,
                failed ? "failed, " : "", busbw);
    }
    if (T->done < T->total)
        cli_progress_show(&T->prog, T->done, T->total,
                          "tune: round %d of %d, candidate %d of %d",
                          T->done / T->ncand + 1, T->reps,
                          T->done % T->ncand + 1, T->ncand);
    else
        cli_progress_clear(&T->prog);
}

static struct ncd_tune_exec exec_of(struct tune_cli *T)
{
    return (struct ncd_tune_exec){.self = "/proc/self/exe",
                                  .perf_args = T->perf_args,
                                  .nperf = T->nperf,
                                  .backend = T->backend,
                                  .run_timeout_s = T->run_timeout_s,
                                  .metric_avg = T->metric_avg,
                                  .progress = on_run,
                                  .planned = on_planned,
                                  .cancel = &stop_signal,
                                  .progress_arg = T};
}

/* The backend perf will run: tune's --backend, else perf's default (nccl;
 * perf never falls back to TCP by itself). */
static int backend_of(struct tune_cli *T)
{
    const char *name = T->backend;
    for (int i = 0; !name && i < T->nperf; i++) /* perf's own --backend */
        if (strcmp(T->perf_args[i], "--backend") == 0 && i + 1 < T->nperf)
            name = T->perf_args[i + 1];
        else if (strncmp(T->perf_args[i], "--backend=", 10) == 0)
            name = T->perf_args[i] + 10;
    int asked = name ? ncd_perf_backend_from_name(name) : -1;
    return asked < 0 ? NCD_PERF_BACKEND_NCCL : asked;
}

/* Reads --candidates FILE (on the process that builds the set). */
static int read_cands(struct tune_cli *T)
{
    if (!T->cands_file || ncd_read_file(T->cands_file, &T->cands) == 0)
        return 0;
    cli_err("tune: cannot read %s: %s", T->cands_file, strerror(errno));
    return -1;
}

/* One process, or -np N on this host: perf does the launching. */
static int tune_local(struct tune_cli *T, struct ncd_ctx *ctx)
{
    if (read_cands(T))
        return NCD_EXIT_TOOL;
    int rc = ncd_tune_build_set(ctx, T->cands.data, T->cands.len, T->families,
                                1, NULL, &T->set);
    if (rc) {
        if (T->cands_file)
            cli_err("tune: %s: %s", T->cands_file, ncd_ctx_errdetail(ctx));
        else
            cli_err("tune: %s", ncd_strerror(rc));
        return NCD_EXIT_TOOL;
    }
    T->scope = (struct ncd_tune_scope){.backend = backend_of(T),
                                       .one_host = 1};
    char names[512];
    ncd_tune_usable_names(ctx, 1, names, sizeof names);
    ncd_tune_mark_skips(ctx, &T->set, &T->scope, names);
    struct ncd_tune_exec ex = exec_of(T);
    if (ncd_tune_measure_local(ctx, &ex, &T->set, T->reps, T->np,
                               T->runs) < 0) {
        cli_err("tune: %s", ncd_ctx_errdetail(ctx));
        return NCD_EXIT_TOOL;
    }
    char host[256];
    ncd_job_hostname(host, sizeof host);
    return tune_report(T, host, T->np > 1 ? "-np" : "single process",
                       atomic_load(&stop_signal));
}

/* Several processes under a launcher: each runs its own perf. */
static int tune_job(void *arg, struct ncd_ctx *ctx, const struct ncd_job *job)
{
    struct tune_cli *T = arg;
    T->scope = (struct ncd_tune_scope){.backend = backend_of(T),
                                       .one_host = job->all_local};
    struct ncd_tune_exec ex = exec_of(T);
    catch_stop_signals(1);
    int rc = ncd_tune_measure_job(ctx, &ex, job, T->cands.data, T->cands.len,
                                  T->families, T->reps, &T->scope, &T->set,
                                  T->runs);
    catch_stop_signals(0);
    if (rc) {
        cli_msg("", "nccl-doctor tune (rank %d): %s", job->proc,
                ncd_ctx_errdetail(ctx));
        return NCD_EXIT_TOOL;
    }
    if (job->proc != 0)
        return NCD_EXIT_OK;
    char host[256];
    ncd_job_hostname(host, sizeof host);
    return tune_report(T, host, job->plan->launcher,
                       atomic_load(&stop_signal));
}

/* tune's own options.  Returns 0, or -1 after a message. */
static int tune_opt(struct tune_cli *T, int opt, const char *arg)
{
    long v;
    switch (opt) {
    case OPT_NP:
        if (cli_parse_range(arg, 1, 1024, &v))
            break;
        T->np = (int)v;
        return 0;
    case OPT_RDV:
        T->rdv = arg;
        return 0;
    case OPT_REPS:
        if (cli_parse_range(arg, 1, NCD_TUNE_MAX_RUNS, &v))
            break;
        T->reps = (int)v;
        return 0;
    case OPT_CANDS:
        T->cands_file = arg;
        return 0;
    case OPT_FAMILIES:
        if ((T->families = ncd_tune_families_parse(arg)) < 0)
            break;
        return 0;
    case OPT_METRIC:
        if (strcmp(arg, "average") && strcmp(arg, "largest"))
            break;
        T->metric_avg = !strcmp(arg, "average");
        return 0;
    case OPT_BACKEND:
        if (ncd_perf_backend_from_name(arg) < 0)
            break;
        T->backend = arg;
        return 0;
    case OPT_RUN_TIMEOUT:
        if (cli_parse_range(arg, 1, 86400, &v))
            break;
        T->run_timeout_s = (int)v;
        return 0;
    case OPT_PLOT:
        T->plot_file = arg;
        return 0;
    default:
        cli_usage_hint("tune");
        return -1;
    }
    _Static_assert(NCD_TUNE_MAX_RUNS == 64, "--reps message below");
    static const char *const what[] = {
        [OPT_NP - OPT_NP] = "-np takes 1..1024",
        [OPT_REPS - OPT_NP] = "--reps takes 1..64",
        [OPT_FAMILIES - OPT_NP] = "--families takes a comma list of ifname, "
                                  "ib, shm, sockets or all",
        [OPT_METRIC - OPT_NP] = "--metric takes largest or average",
        [OPT_BACKEND - OPT_NP] = "--backend takes nccl or socket",
        [OPT_RUN_TIMEOUT - OPT_NP] = "--run-timeout takes seconds (1..86400)",
    };
    cli_err("tune: %s, not '%s'", what[opt - OPT_NP], arg);
    return -1;
}

/* Options before `--`, perf's after.  Returns -1 to go on, else a status. */
static int parse(struct tune_cli *T, int argc, char **argv)
{
    int split = argc;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--")) {
            split = i;
            break;
        }
    char **av = cli_np_argv(split, argv);
    if (!av)
        return NCD_EXIT_TOOL;
    int opt, st = -1;
    optind = 1;
    while (st < 0 && (opt = cli_getopt("tune", split, av, CLI_COMMON_SHORT,
                                       tune_opts)) != -1) {
        int r = cli_common_opt(&T->c, opt, optarg);
        if (r == 2) {
            st = NCD_EXIT_OK;
        } else if (opt == 'h') {
            st = cli_usage("tune", stdout);
        } else if (r < 0 || (!r && tune_opt(T, opt, optarg))) {
            st = NCD_EXIT_TOOL;
        }
    }
    if (st < 0 && optind < split) {
        cli_err("tune: unexpected argument '%s' (perf's options go after "
                "`--`)",
                av[optind]);
        st = NCD_EXIT_TOOL;
    }
    free(av);
    if (st >= 0)
        return st;
    if (split + 1 >= argc) {
        for (size_t i = 0; i < sizeof default_perf / sizeof *default_perf; i++)
            T->perf_args[T->nperf++] = default_perf[i];
        return -1;
    }
    int no_coll = argv[split + 1][0] == '-'; /* options only */
    if (argc - split - 1 + no_coll > NCD_TUNE_MAX_PERF_ARGS) {
        cli_err("tune: too many perf options");
        return NCD_EXIT_TOOL;
    }
    static const char *const own[] = {"-np", "--np", "--rendezvous", "--json",
                                      "-J", "--output_file"};
    if (no_coll) /* the default sweep's collective */
        T->perf_args[T->nperf++] = default_perf[0];
    for (int i = split + 1; i < argc; i++) {
        for (size_t k = 0; k < sizeof own / sizeof *own; k++)
            if (!strcmp(argv[i], own[k])) {
                cli_err("tune: give %s to tune itself, not to perf", argv[i]);
                return NCD_EXIT_TOOL;
            }
        T->perf_args[T->nperf++] = argv[i];
    }
    return -1;
}

int ncd_cmd_tune(int argc, char **argv)
{
    struct tune_cli *T = calloc(1, sizeof *T);
    if (!T)
        return NCD_EXIT_TOOL;
    cli_common_init(&T->c);
    T->reps = 3;
    T->families = NCD_TUNE_ALL;
    T->run_timeout_s = 300;
    int st = parse(T, argc, argv);
    if (st < 0 && cli_output_writable("tune: --plot", T->plot_file))
        st = NCD_EXIT_TOOL; /* written at the end: checked before any run */
    cli_progress_start(&T->prog, 1);
    atomic_store(&stop_signal, 0);
    struct ncd_ctx *ctx = NULL;
    if (st >= 0 || !(ctx = cli_ctx_new(&T->c))) {
        free(T);
        return st >= 0 ? st : NCD_EXIT_TOOL;
    }
    st = NCD_EXIT_TOOL;
    struct ncd_job_request req = {.np = T->np, .rendezvous = T->rdv};
    struct ncd_job_plan plan;
    if (ncd_sys_require_live(ctx, "tune") < 0) {
        cli_err("tune: runs benchmarks; it cannot run on a recorded "
                "--sysroot");
    } else if (ncd_job_resolve(ctx, &req, &plan)) {
        cli_err("tune: %s", ncd_ctx_errdetail(ctx));
    } else if (plan.kind == NCD_JOB_SINGLE || plan.kind == NCD_JOB_FORK) {
        catch_stop_signals(1);
        st = tune_local(T, ctx);
        catch_stop_signals(0);
    } else if (plan.proc > 0 || read_cands(T) == 0) {
        struct ncd_job_opts jo = {
            .timeout_ms = (T->run_timeout_s + 60) * 1000,
            .fail_status = NCD_EXIT_TOOL,
            .argc = &argc,
            .argv = &argv};
        int err;
        st = cli_job_run(ctx, "tune", &plan, &jo, tune_job, T, &err);
    }
    ncd_ctx_free(ctx);
    ncd_rdbuf_release(&T->cands);
    free(T);
    return st;
}
