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
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_job.h"
#include "cmd.h"
#include "ncd/check.h"
#include "ncd/error.h"
#include "ncd/finding.h"
#include "ncd/job.h"
#include "ncd/nccl.h"
#include "ncd/perf.h"
#include "ncd/sock.h"
#include "ncd/strbuf.h"
#include "ncd/sysops.h"

extern char **environ;

const char ncd_cmd_perf_usage[] =
    "usage: nccl-doctor perf COLLECTIVE [nccl-tests options] [-np N]\n"
    "                        [--backend nccl|socket|auto] [--iface IF]\n"
    "                        [--rendezvous HOST:PORT] [--algo ring|direct]\n"
    "       all_reduce_perf [options]   (and the other *_perf names)\n"
    "\n"
    "COLLECTIVE: all_reduce all_gather reduce_scatter broadcast reduce\n"
    "            alltoall alltoallv sendrecv gather scatter hypercube\n"
    "\n"
    "nccl-tests options (same parsing, output and exit status):\n"
    "  -t,--nthreads N      threads (ranks) per process          [1]\n"
    "  -g,--ngpus N         GPUs (socket: ranks) per thread      [1]\n"
    "  -b,--minbytes S      smallest size, K/M/G suffixes        [32M]\n"
    "  -e,--maxbytes S      largest size                         [32M]\n"
    "  -i,--stepbytes S     additive step (when -f <= 1)         [1M]\n"
    "  -f,--stepfactor F    multiplicative step                  [1]\n"
    "  -n,--iters N         timed iterations per size            [20]\n"
    "  -m,--agg_iters N     operations fused in one group        [1]\n"
    "  -w,--warmup_iters N  warm-up iterations                   [1]\n"
    "  -N,--run_cycles N    repeat the sweep (0 = for ever)      [1]\n"
    "  -c,--check N         check results (0 = off, #wrong N/A)  [1]\n"
    "  -o,--op OP           sum prod max min avg mulsum all      [sum]\n"
    "  -d,--datatype T      int8 uint8 int32 uint32 int64 uint64 half\n"
    "                       float double bfloat16 f8e4m3 f8e5m2 all [float]\n"
    "  -r,--root R          root rank, -1 = every root           [0]\n"
    "  -z,--blocking 0-3    sync/barrier after each operation    [0]\n"
    "  -T,--timeout S       abort after S seconds waiting (0 off)[0]\n"
    "  -C,--report_cputime  1: time column = host time to issue the\n"
    "                       operations (rank 0's), not completion [0]\n"
    "  -I,--per_iter_timing 1: per-iteration i_min i_max i_p99 i_cv%\n"
    "                       columns and JSON (tools/analyze_perf_json.py)\n"
    "  -K,--per_iter_skip K leave the first K iterations out of -I [0]\n"
    "  -S,--report_timestamps 1: add a timestamp column          [0]\n"
    "  -a,--average 0-3     combine times: rank0 avg min max     [1]\n"
    "  -u,--unalign N       offset buffers by N elements         [0]\n"
    "  -J,--output_file F   also write nccl-tests JSON to F (.json)\n"
    "  -p -y -G -R -M -x -D -V  accepted; -G captures no CUDA graph\n"
    "                       (the header says so), GPU-only ones noted\n"
    "\n"
    "nccl-doctor options:\n"
    "  -np N                fork N local processes (ranks) and run them\n"
    "  --backend B          nccl (default: libnccl.so.2 and CUDA; fails as\n"
    "                       nccl-tests does when they cannot run) or socket\n"
    "                       (TCP between ranks on NCCL's interface, any\n"
    "                       machine, no GPU; says so in its output)\n"
    "  --algo A             socket: ring, direct or auto (ring for\n"
    "                       all_reduce/all_gather/reduce_scatter/broadcast/\n"
    "                       reduce, direct otherwise; all_reduce sending\n"
    "                       <= 64 KiB per rank: one exchange with all)\n"
    "  --iface IF           socket: interface to use (else the one NCCL\n"
    "                       would: NCCL_SOCKET_IFNAME, NCCL_SOCKET_FAMILY,\n"
    "                       NCCL_COMM_ID, its selection order)\n"
    "  --rendezvous H:P     TCP rendezvous root (rank 0 listens on it);\n"
    "                       default MASTER_ADDR:MASTER_PORT\n"
    "  --peer-timeout S     socket: give up after S s without progress [60]\n"
    "  --nccl-lib PATH, --cudart-lib PATH   libraries to dlopen\n"
    "  --json               print the -J JSON document on stdout\n"
    "\n"
    "Under mpirun, srun, torchrun or paddle.distributed.launch the rank and\n"
    "size come from the launcher's variables.  NCCL_SOCKET_NTHREADS and\n"
    "NCCL_NSOCKS_PERTHREAD set the socket backend's threads and sockets.\n"
    "NCCL_TESTS_MIN_BW=X fails (exit 7) when the average bus bandwidth is\n"
    "below 0.9 X GB/s.  alltoallv: NCCL_TESTS_ALLTOALLV_SPREAD (0..1, 1:\n"
    "more to farther ranks), _MATRIX_FILE (bytes rank i -> j; -b = -e),\n"
    "_MATRIX_SCALE, _PRINT_SUMMARY=1 (per-rank lines), as nccl-tests.  Exit status: 0 ok, 1 internal, 2 CUDA, 3 NCCL or\n"
    "network, 4 timeout, 5 not implemented, 6 usage, 7 wrong results or\n"
    "below NCCL_TESTS_MIN_BW, 255 bad sizes.\n";

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
};
#define NOWN (sizeof own_opts / sizeof own_opts[0])

struct perf_cli {
    struct ncd_perf_opts o;
    struct cli_common common;
    int np, peer_timeout_s, device0, sock_nthreads, sock_nsocks;
    int nccl_version; /* socket: the NCCL release whose path it takes */
    const char *iface, *rendezvous, *nccl_lib, *cudart_lib;
    int be, algo_kind; /* enum ncd_perf_backend_kind, enum ncd_perf_algo */
    struct ncd_perf_traffic traffic; /* alltoallv */
    char **argv;
    /* output (global rank 0 only) */
    FILE *out;
    struct ncd_perf_report *rep;
    int progress_tty;
    double row_start; /* progress(): when the current row started */
    size_t row_bytes;
    int preamble_done; /* the runner printed the preamble */
    struct ncd_perf_sink inner; /* the report's sink, wrapped */
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

/*
 * Called as row i of n (`bytes`) starts.  Shown, on a terminal only, once
 * rows take over 2 s: the last row's time, scaled by the size ratio, is
 * the estimate of this one and of each one left.
 */
static void progress(void *arg, size_t i, size_t n, size_t bytes)
{
    struct perf_cli *P = arg;
    if (!P->progress_tty)
        return;
    double now = ncd_sock_now();
    double last = i > 0 && P->row_start > 0 ? now - P->row_start : 0;
    double r = i > 0 && P->row_bytes ? (double)bytes / (double)P->row_bytes
                                     : 1;
    if (r < 1)
        r = 1;
    P->row_start = now;
    P->row_bytes = bytes;
    if (last * r <= 2.0 && last <= 2.0)
        return;
    double eta = 0, t = last;
    for (size_t k = i; k < n; k++)
        eta += (t *= r);
    fprintf(stderr,
            "\r\033[K# %s: size %zu B, row %zu of %zu (%zu left after "
            "it), ETA %.0f s",
            P->o.prog, bytes, i + 1, n, n - i - 1, eta);
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
    optind = 1;
    opterr = 0;
    while (!rc && (c = getopt_long(argc, argv, NCD_PERF_GETOPT, lo, NULL)) !=
                      -1) {
        struct ncd_perf_optmsg m;
        if (c == 'h') {
            cli_usage("perf", stdout);
            return 1;
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
            rc = 1000 + 6;
        }
    }
    return rc;
}

/* Failures ------------------------------------------------------------------ */

/* The report's sink, noting whether the preamble went out. */
static void on_preamble(void *arg, int nccl_version, const char *desc,
                        const struct ncd_perf_device *devs, int ndevs)
{
    struct perf_cli *P = arg;
    P->preamble_done = 1;
    P->inner.preamble(P->inner.arg, nccl_version, desc, devs, ndevs);
}

static void on_row(void *arg, const struct ncd_perf_row *r)
{
    struct perf_cli *P = arg;
    P->inner.row(P->inner.arg, r);
}

static void on_progress(void *arg, size_t i, size_t n, size_t bytes)
{
    struct perf_cli *P = arg;
    P->inner.progress(P->inner.arg, i, n, bytes);
}

/*
 * What `check` says about the GPU, its driver and the NCCL and CUDA
 * libraries on this node, for a run that could not start NCCL or CUDA:
 * the findings of the topo and libs checks in those categories.
 */
static void explain_with_check(struct ncd_ctx *ctx)
{
    struct ncd_findings fl = {0};
    struct ncd_check_opts co = {.only = "topo,libs"};
    struct ncd_node node;
    memset(&node, 0, sizeof node);
    struct ncd_node_opts no = {0};
    if (ncd_node_probe(ctx, &no, ncd_checks_parts(&co), &node) < 0 ||
        ncd_run_checks(&node, &co, &fl) < 0)
        ncd_ctx_clear_error(ctx);
    ncd_node_release(&node);
    for (size_t i = 0; i < fl.n; i++) {
        const struct ncd_finding *f = &fl.v[i];
        if (f->category != NCD_CAT_GPU_DRIVER &&
            f->category != NCD_CAT_GPU_CUDA && f->category != NCD_CAT_LIB_NCCL &&
            f->category != NCD_CAT_VERSION_MISMATCH)
            continue;
        fprintf(stderr, "nccl-doctor perf: check: [%s] %s: %s\n",
                ncd_severity_name(f->severity), f->id, f->title);
    }
    ncd_findings_release(&fl);
}

/*
 * A run that stopped: nccl-tests' failure lines on stdout in every process
 * (on stderr under --json, which owns stdout), what went wrong on stderr,
 * and, when NCCL or CUDA could not start, what `check` says about them.
 */
static void report_failure(struct perf_cli *P, struct ncd_ctx *ctx,
                           const struct ncd_perf_job *pj,
                           const struct ncd_perf_summary *sum, int st,
                           int is_root)
{
    FILE *out = P->common.json ? stderr : stdout;
    struct ncd_strbuf sb = {0};
    int early = sum->stage == NCD_PERF_STAGE_OPEN ||
                sum->stage == NCD_PERF_STAGE_UNIQUE_ID ||
                sum->stage == NCD_PERF_STAGE_DEVICE;
    /* nccl-tests prints its preamble up to "# Using devices" before the
     * device checks fail */
    if (is_root && !P->preamble_done && early && !P->common.json)
        ncd_perf_fmt_preamble(&sb, &P->o, sum->nccl_version, NULL, 0);
    char host[256];
    ncd_job_hostname(host, sizeof host);
    ncd_perf_fmt_failure(&sb, host, (int)getpid(), st, sum->stage, P->o.coll,
                         pj->backend == NCD_PERF_BACKEND_SOCKET
                             ? P->peer_timeout_s
                             : P->o.timeout_s,
                         pj->backend, sum->quote[0] ? sum->quote : sum->error);
    fputs(ncd_sb_str(&sb), out);
    fflush(out);
    ncd_sb_release(&sb);
    if (sum->error[0] && st == 5 && sum->stage == NCD_PERF_STAGE_OPEN)
        fprintf(stderr, "%s\n", sum->error); /* nccl-tests' own words */
    else if (sum->error[0])
        fprintf(stderr, "nccl-doctor perf: %s\n", sum->error);
    if (is_root && early && (st == 2 || st == 3) &&
        pj->backend == NCD_PERF_BACKEND_NCCL) {
        explain_with_check(ctx);
        fprintf(stderr, "nccl-doctor perf: NCCL cannot run here; `--backend "
                        "socket` measures TCP between the ranks instead "
                        "(no GPU, not NCCL)\n");
    }
    fflush(stderr);
}

/* One process of the job --------------------------------------------------- */

/* CPUs this process may run on (its affinity mask, which containers and
 * taskset narrow), else the online CPUs; 0 unknown. */
static int cpus_of_process(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 0;
}

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
    ncd_perf_report_cpus(P->rep, cpus_of_process());
    struct ncd_strbuf sb = {0};
    if (is_root)
        ncd_perf_report_start(P->rep, &sb);
    out_text(P, ncd_sb_str(&sb));
    ncd_sb_reset(&sb);
    ncd_perf_report_sink(P->rep, out_text, progress, P, &P->inner);
    struct ncd_perf_sink sink = {.arg = P,
                                 .preamble = on_preamble,
                                 .row = on_row,
                                 .progress = on_progress};
    struct ncd_perf_summary sum;
    st = ncd_perf_run(ctx, o, &pj, &sink, &sum);
    /* --json has no text header: the CPU warning goes to stderr */
    if (is_root && P->common.json && *ncd_perf_report_warning(P->rep))
        cli_err("warning: %s", ncd_perf_report_warning(P->rep));
    json_t *doc = NULL;
    if (is_root && ncd_perf_report_finish(P->rep, ctx, &sb, &sum, &doc)) {
        cli_err("%s", ncd_ctx_errdetail(ctx));
        st = st ? st : 1;
    }
    out_text(P, ncd_sb_str(&sb));
    ncd_sb_release(&sb);
    if (st)
        report_failure(P, ctx, &pj, &sum, st, is_root);
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
        fprintf(stderr, "%s%s\n", st == 255 ? "" : "nccl-doctor: ", msg);
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
            fprintf(stderr, "nccl-doctor perf: %s\n", why);
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
            fprintf(stderr, "nccl-doctor perf: %s\n", why);
        return st;
    }
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
    ncd_ctx_free(ctx);
    return st;
}
