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
#include "cmd.h"
#include "ncd/error.h"
#include "ncd/job.h"
#include "ncd/perf.h"
#include "ncd/readall.h"
#include "ncd/sysops.h"
#include "ncd/tune.h"

const char ncd_cmd_tune_usage[] =
    "usage: nccl-doctor tune [-np N | --rendezvous HOST:PORT] [--reps R]\n"
    "                        [--candidates FILE | --families LIST]\n"
    "                        [--metric largest|average] [--backend B]\n"
    "                        [--run-timeout S] [--json] [-- PERF OPTIONS]\n"
    "\n"
    "Runs the same `perf` sweep (default: all_reduce -b 256K -e 4M -f 4\n"
    "-n 5 -w 1) under the current environment and under each candidate,\n"
    "R times each (interleaved), and prints per candidate the median bus\n"
    "bandwidth, the spread ((max-min)/median) and the ratio to the current\n"
    "settings.  A candidate whose range overlaps the current range is\n"
    "\"within noise\"; the winner must beat every current run.  The winning\n"
    "settings are printed as export lines, with the `nccl-doctor env\n"
    "--write` command that keeps them in a shell rc file.\n"
    "\n"
    "The header says what the runs measure: with --backend socket, TCP\n"
    "between the ranks (on one host, over loopback), not NCCL's GPU path.\n"
    "Candidates that cannot change that measurement are listed as skipped\n"
    "with the reason (on one host: NCCL_SOCKET_IFNAME, as every rank is\n"
    "local; on the socket backend: NCCL_SHM_*, NCCL_IB_* and the other\n"
    "settings only NCCL reads).  On a terminal, stderr shows progress.\n"
    "Ctrl-C (SIGINT), SIGTERM or SIGHUP stop the runs: tune prints what it\n"
    "measured as \"interrupted\", chooses nothing, charges no candidate\n"
    "with the stopped run and exits 128 + the signal's number.\n"
    "\n"
    "Candidates by default (--families ifname,ib,shm,sockets = all):\n"
    "NCCL_SOCKET_IFNAME==IF for each interface usable on every host,\n"
    "NCCL_IB_DISABLE=0/1 when an HCA exists, NCCL_SHM_DISABLE=1 on one\n"
    "host, NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD 2x2 and 4x4.\n"
    "--candidates FILE: one candidate per line, `[label:] NAME=VALUE ...`\n"
    "(-NAME unsets), '#' comments.\n"
    "\n"
    "Launch: -np N on one host; on several hosts start tune like perf\n"
    "(mpirun, srun, torchrun, or --rendezvous HOST:PORT with WORLD_SIZE\n"
    "and RANK): every rank runs its perf child against a fresh port on\n"
    "rank 0's host.  Works with --backend socket and nccl.\n"
    "\n"
    "  --reps R             runs per candidate                  [3]\n"
    "  --metric M           largest: busbw at the largest size (mean of\n"
    "                       out-of-place and in-place); average: nccl-tests'\n"
    "                       Avg bus bandwidth                   [largest]\n"
    "  --run-timeout S      kill a perf run after S seconds     [300]\n"
    "\n"
    "Exit status: 0 (1 with --strict when a candidate wins), 2 the current\n"
    "settings fail, 3 the tool failed.\n";

enum {
    OPT_NP = CLI_OPT__NEXT,
    OPT_RDV,
    OPT_REPS,
    OPT_CANDS,
    OPT_FAMILIES,
    OPT_METRIC,
    OPT_BACKEND,
    OPT_RUN_TIMEOUT,
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
    {0, 0, 0, 0},
};

/* perf's sweep when none is given after `--` */
static const char *const default_perf[] = {"all_reduce", "-b", "256K", "-e",
                                           "4M", "-f", "4", "-n", "5", "-w",
                                           "1"};

struct tune_cli {
    struct cli_common c;
    int np, reps, families, metric_avg, run_timeout_s;
    const char *cands_file, *backend, *rdv;
    const char *perf_args[NCD_TUNE_MAX_PERF_ARGS];
    int nperf;
    struct ncd_rdbuf cands; /* the candidates file, where it is read */
    struct ncd_tune_set set;
    struct ncd_tune_runs runs[NCD_TUNE_MAX_CANDS];
    struct ncd_tune_scope scope; /* what the runs measure */
    struct cli_progress prog;
    int done, total, ncand;      /* perf runs; candidates run */
};

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
    cli_progress_show(&T->prog, 0, T->total, "tune: %d candidates x %d runs",
                      n, reps);
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

static int report(struct tune_cli *T, const char *host, const char *launcher)
{
    struct ncd_tune_runs *runs = T->runs;
    struct ncd_tune_stat stats[NCD_TUNE_MAX_CANDS];
    struct ncd_findings fl = {0};
    int sig = atomic_load(&stop_signal);
    int win = ncd_tune_summarize(&T->set, runs, sig != 0, stats, &fl);
    const char *metric = T->metric_avg
                             ? "nccl-tests' average bus bandwidth"
                             : "bus bandwidth at the largest size";
    int status = NCD_EXIT_OK;
    json_t *env = ncd_findings_env_json(&fl, NCD_SEV_WARNING);
    struct ncd_strbuf scope = {0};
    ncd_tune_scope_text(&T->scope, &scope);
    cli_progress_clear(&T->prog);
    if (T->c.json) {
        json_t *j = ncd_json_envelope(host), *body = ncd_tune_json(
                                                    &T->set, runs, stats, win);
        if (!j || !body) {
            json_decref(j);
            json_decref(body);
            json_decref(env);
            ncd_findings_release(&fl);
            return NCD_EXIT_TOOL;
        }
        json_object_update(j, body);
        json_decref(body);
        json_t *m = json_object();
        json_object_set_new(m, "backend",
                            json_string(T->scope.backend ==
                                                NCD_PERF_BACKEND_NCCL
                                            ? "nccl"
                                            : "socket"));
        json_object_set_new(m, "one_host", json_boolean(T->scope.one_host));
        json_object_set_new(m, "text", json_string(ncd_sb_str(&scope)));
        json_object_set_new(j, "measured", m);
        char signame[32] = "";
        if (sig)
            snprintf(signame, sizeof signame, "SIG%s", sigabbrev_np(sig));
        json_object_set_new(j, "interrupted",
                            sig ? json_string(signame) : json_null());
        json_object_set_new(j, "runs_done", json_integer(T->done));
        json_object_set_new(j, "runs_planned", json_integer(T->total));
        json_object_set_new(j, "metric", json_string(metric));
        json_object_set_new(j, "repetitions", json_integer(T->reps));
        json_object_set_new(j, "launcher", json_string(launcher));
        json_t *pa = json_array();
        for (int i = 0; i < T->nperf; i++)
            json_array_append_new(pa, json_string(T->perf_args[i]));
        json_object_set_new(j, "perf_args", pa);
        json_object_set_new(j, "findings", ncd_findings_to_json(&fl));
        json_object_set_new(j, "recommended_env", json_incref(env));
        if (cli_print_json(j) < 0)
            status = NCD_EXIT_TOOL;
    } else {
        struct ncd_strbuf sb = {0};
        struct ncd_text_style st = cli_text_style(&T->c);
        int nskip = 0;
        for (int i = 0; i < T->set.n; i++)
            nskip += T->set.c[i].skip[0] != 0;
        ncd_sb_printf(&sb, "Tune: %d candidates x %d runs", T->set.n - nskip,
                      T->reps);
        if (nskip)
            ncd_sb_printf(&sb, " (%d more skipped)", nskip);
        ncd_sb_puts(&sb, " of `perf");
        for (int i = 0; i < T->nperf; i++)
            ncd_sb_printf(&sb, " %s", T->perf_args[i]);
        ncd_sb_printf(&sb, "` (%s)\n%s\n\n", launcher, ncd_sb_str(&scope));
        ncd_tune_render_text(&sb, &T->set, runs, stats, win, metric);
        ncd_sb_putc(&sb, '\n');
        ncd_render_findings_text(&sb, &fl, &st);
        if (win >= 0) {
            ncd_sb_printf(&sb, "\n  Winning settings (%.2fx):\n",
                          stats[win].ratio);
            for (int i = 0; i < T->set.c[win].nvars; i++) {
                const struct ncd_tune_var *v = &T->set.c[win].vars[i];
                if (v->unset) {
                    ncd_sb_printf(&sb, "    unset %s\n", v->name);
                } else {
                    ncd_sb_printf(&sb, "    export %s=", v->name);
                    ncd_sb_shell_quote(&sb, v->value);
                    ncd_sb_putc(&sb, '\n');
                }
            }
            ncd_sb_puts(&sb, "\n  Keep them (the block `nccl-doctor env "
                             "--write` manages):\n    ");
            ncd_tune_keep_command(&T->set.c[win], &sb);
            ncd_sb_putc(&sb, '\n');
        } else if (sig) {
            ncd_sb_printf(&sb,
                          "\n  Interrupted (SIG%s) after %d of %d runs: no "
                          "settings chosen; the stopped run counts against "
                          "no candidate.\n",
                          sigabbrev_np(sig), T->done, T->total);
        } else {
            ncd_sb_puts(&sb, "\n  Keep the current settings.\n");
        }
        if (cli_print_sb(&sb) < 0)
            status = NCD_EXIT_TOOL;
        ncd_sb_release(&sb);
    }
    json_decref(env);
    ncd_sb_release(&scope);
    if (sig)
        status = 128 + sig; /* as a shell reports a job stopped by sig */
    else if (status == NCD_EXIT_OK)
        status = cli_exit_for(&T->c, ncd_findings_worst(&fl));
    ncd_findings_release(&fl);
    return status;
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
    ncd_tune_measure_local(ctx, &ex, &T->set, T->reps, T->np, T->runs);
    char host[256];
    ncd_job_hostname(host, sizeof host);
    return report(T, host, T->np > 1 ? "-np" : "single process");
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
        fprintf(stderr, "nccl-doctor tune (rank %d): %s\n", job->proc,
                ncd_ctx_errdetail(ctx));
        return NCD_EXIT_TOOL;
    }
    if (job->proc != 0)
        return NCD_EXIT_OK;
    char host[256];
    ncd_job_hostname(host, sizeof host);
    return report(T, host, job->plan->launcher);
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
    default:
        cli_usage("tune", stderr);
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
    while (st < 0 && (opt = getopt_long(split, av, "vh", tune_opts, NULL)) !=
                         -1) {
        int r = cli_common_opt(&T->c, opt, optarg);
        if (opt == 'h') {
            cli_usage("tune", stdout);
            st = NCD_EXIT_OK;
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
    if (argc - split - 1 > NCD_TUNE_MAX_PERF_ARGS) {
        cli_err("tune: too many perf options");
        return NCD_EXIT_TOOL;
    }
    static const char *const own[] = {"-np", "--np", "--rendezvous", "--json",
                                      "-J", "--output_file"};
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
