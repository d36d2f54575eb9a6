/* SPDX-License-Identifier: MIT */
/*
 * nccl-doctor perf COLLECTIVE [nccl-tests options]
 * (also all_reduce_perf & co. through argv[0]).
 *
 * Parses nccl-tests' options (src/common.cu), places this process in the
 * job (-np fork, a launcher's variables, MPI or a TCP rendezvous root),
 * runs libncd's benchmark and prints the nccl-tests output on global rank
 * 0.  Exit statuses are nccl-tests': 0 ok, 1 internal, 2 CUDA, 3 NCCL or
 * network, 4 timeout, 5 not implemented, 6 invalid usage, 7 wrong data or
 * below NCCL_TESTS_MIN_BW; 255 for bad size arguments.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "ncd/error.h"
#include "ncd/fs.h"
#include "ncd/perf.h"
#include "ncd/strbuf.h"

extern char **environ;

enum {
    OPT_BACKEND = CLI_OPT__NEXT,
    OPT_NP,
    OPT_IFACE,
    OPT_RDV,
    OPT_ALGO,
    OPT_PEER_TIMEOUT,
    OPT_NCCL_LIB,
    OPT_CUDART_LIB,
};

struct perf_cli {
    struct ncd_perf_opts o;
    struct cli_common common;
    int np;
    const char *backend, *iface, *rendezvous, *algo, *nccl_lib, *cudart_lib;
    int peer_timeout_s;
    /* output state (global rank 0 only) */
    FILE *out;
    json_t *doc;
    char json_path[4096];
    int progress_tty;
    int printed_header;
    char **argv;
    char fallback[1100]; /* why auto did not pick the nccl backend */
};

static int parse_int(const char *s, const char *name, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 0); /* nccl-tests: strtol(.., 0) */
    if (end == s || *end || errno || v < -2147483647L || v > 2147483647L) {
        cli_err("invalid value '%s' for %s", s, name);
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* parse_int plus a lower bound, with a message naming the option. */
static int parse_int_min(const char *s, const char *name, int *out, int min)
{
    if (parse_int(s, name, out))
        return -1;
    if (*out < min) {
        cli_err("invalid value '%s' for %s: must be at least %d", s, name,
                min);
        return -1;
    }
    return 0;
}

static void ts_now(char *buf, size_t len)
{
    time_t now = time(NULL);
    struct tm tmv;
    localtime_r(&now, &tmv);
    strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tmv);
}

/* Output sinks (called on global rank 0's thread) ------------------------ */

static void sink_preamble(void *arg, int nccl_version, const char *desc,
                          const struct ncd_perf_device *devs, int ndevs)
{
    struct perf_cli *P = arg;
    struct ncd_strbuf sb = {0};
    ncd_perf_fmt_preamble(&sb, &P->o, nccl_version, devs, ndevs);
    ncd_sb_printf(&sb, "#  Backend: %s\n", desc);
    if (P->fallback[0])
        ncd_sb_printf(&sb, "#  (no usable NCCL/GPU: %s)\n", P->fallback);
    ncd_perf_fmt_header(&sb, &P->o);
    if (P->out) {
        fputs(ncd_sb_str(&sb), P->out);
        fflush(P->out);
    }
    ncd_sb_release(&sb);
    P->printed_header = 1;
    if (P->json_path[0]) {
        char ts[64];
        ts_now(ts, sizeof ts);
        P->doc = ncd_perf_json_new(&P->o, P->argv, environ, nccl_version,
                                   devs, ndevs, ts);
    }
}

static void clear_progress(struct perf_cli *P)
{
    if (P->progress_tty) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
    }
}

static void sink_row(void *arg, const struct ncd_perf_row *r)
{
    struct perf_cli *P = arg;
    clear_progress(P);
    struct ncd_strbuf sb = {0};
    ncd_perf_fmt_row(&sb, &P->o, r);
    if (P->out) {
        fputs(ncd_sb_str(&sb), P->out);
        fflush(P->out);
    }
    ncd_sb_release(&sb);
    if (P->doc)
        ncd_perf_json_add_row(P->doc, &P->o, r, P->o.prog);
}

static void sink_progress(void *arg, size_t i, size_t n, size_t bytes)
{
    struct perf_cli *P = arg;
    if (!P->progress_tty)
        return;
    fprintf(stderr, "\r\033[K# %s: size %zu B (%zu of %zu)", P->o.prog, bytes,
            i + 1, n);
    fflush(stderr);
}

/* JSON file: nccl-tests tries PATH, PATH.0, PATH.1 ... (never overwrites);
 * we write a temporary file and rename it into place at the end. */
static int pick_json_path(struct perf_cli *P)
{
    const char *p = P->o.json_path;
    size_t n = strlen(p);
    if (n < 5 || strcmp(p + n - 5, ".json") != 0) {
        cli_err("-J/--output_file must end in .json ('%s')", p);
        return -1;
    }
    struct stat st;
    if (stat(p, &st) != 0) {
        snprintf(P->json_path, sizeof P->json_path, "%s", p);
        return 0;
    }
    for (int i = 0; i < 10000; i++) {
        snprintf(P->json_path, sizeof P->json_path, "%s.%d", p, i);
        if (stat(P->json_path, &st) != 0)
            return 0;
    }
    printf("# skipping json output; failed to probe destination\n");
    P->json_path[0] = '\0';
    return 0;
}

static int write_json(struct perf_cli *P)
{
    char *s = json_dumps(P->doc, JSON_PRESERVE_ORDER | JSON_COMPACT);
    if (!s) {
        cli_err("out of memory writing %s", P->json_path);
        return -1;
    }
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", P->json_path, (int)getpid());
    FILE *f = fopen(tmp, "wx");
    int ok = f && fputs(s, f) >= 0 && fputc('\n', f) != EOF;
    if (f && fclose(f) != 0)
        ok = 0;
    free(s);
    if (ok && rename(tmp, P->json_path) != 0)
        ok = 0;
    if (!ok) {
        cli_err("cannot write %s: %s", P->json_path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* Options ----------------------------------------------------------------- */

static const struct option long_opts[] = {
    {"nthreads", required_argument, 0, 't'},
    {"ngpus", required_argument, 0, 'g'},
    {"minbytes", required_argument, 0, 'b'},
    {"maxbytes", required_argument, 0, 'e'},
    {"stepbytes", required_argument, 0, 'i'},
    {"stepfactor", required_argument, 0, 'f'},
    {"iters", required_argument, 0, 'n'},
    {"agg_iters", required_argument, 0, 'm'},
    {"warmup_iters", required_argument, 0, 'w'},
    {"run_cycles", required_argument, 0, 'N'},
    {"parallel_init", required_argument, 0, 'p'},
    {"check", required_argument, 0, 'c'},
    {"op", required_argument, 0, 'o'},
    {"datatype", required_argument, 0, 'd'},
    {"root", required_argument, 0, 'r'},
    {"blocking", required_argument, 0, 'z'},
    {"stream_null", required_argument, 0, 'y'},
    {"timeout", required_argument, 0, 'T'},
    {"cudagraph", required_argument, 0, 'G'},
    {"report_cputime", required_argument, 0, 'C'},
    {"report_timestamps", required_argument, 0, 'S'},
    {"output_file", required_argument, 0, 'J'},
    {"average", required_argument, 0, 'a'},
    {"local_register", required_argument, 0, 'R'},
    {"cta_policy", required_argument, 0, 'x'},
    {"device_implementation", required_argument, 0, 'D'},
    {"device_cta_count", required_argument, 0, 'V'},
    {"memory", required_argument, 0, 'M'},
    {"unalign", required_argument, 0, 'u'},
    {"per_iter_timing", required_argument, 0, 'I'},
    {"per_iter_skip", required_argument, 0, 'K'},
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
    {0, 0, 0, 0},
};

#define SHORT_OPTS "t:g:b:e:i:f:n:m:w:N:p:I:K:c:o:d:r:z:y:T:hG:C:a:R:x:D:V:J:S:M:u:"

static int parse_size_opt(const char *arg, const char *name, size_t *out)
{
    if (ncd_perf_parse_size(arg, out) != 0) {
        fprintf(stderr, "invalid size specified for '%s'\n", name);
        return -1;
    }
    return 0;
}

/* Returns 0 ok, 1 help shown, or an exit status + 1000. */
static int parse(struct perf_cli *P, int argc, char **argv)
{
    struct ncd_perf_opts *o = &P->o;
    int c, v;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, SHORT_OPTS, long_opts, NULL)) != -1) {
        switch (c) {
        case 't':
            if (parse_int_min(optarg, "-t", &o->nthreads, 1))
                return 1000 + 6;
            break;
        case 'g':
            if (parse_int_min(optarg, "-g", &o->ngpus, 1))
                return 1000 + 6;
            break;
        case 'b':
            if (parse_size_opt(optarg, "minbytes", &o->minbytes))
                return 1000 + 255;
            break;
        case 'e':
            if (parse_size_opt(optarg, "maxbytes", &o->maxbytes))
                return 1000 + 255;
            break;
        case 'i':
            if (parse_size_opt(optarg, "stepbytes", &o->stepbytes))
                return 1000 + 255;
            break;
        case 'f':
            if (parse_size_opt(optarg, "stepfactor", &o->stepfactor))
                return 1000 + 255;
            break;
        case 'n':
            if (parse_int_min(optarg, "-n", &o->iters, 0))
                return 1000 + 6;
            break;
        case 'm':
            if (parse_int_min(optarg, "-m", &o->agg_iters, 1))
                return 1000 + 6;
            break;
        case 'w':
            if (parse_int_min(optarg, "-w", &o->warmup_iters, 0))
                return 1000 + 6;
            break;
        case 'N':
            if (parse_int_min(optarg, "-N", &o->run_cycles, 0))
                return 1000 + 6;
            break;
        case 'p':
            if (parse_int(optarg, "-p", &o->parallel_init))
                return 1000 + 6;
            break;
        case 'c':
            if (parse_int_min(optarg, "-c", &o->check, 0))
                return 1000 + 6;
            break;
        case 'o':
            if (strcmp(optarg, "all") == 0)
                o->op = -1;
            else if ((v = ncd_perf_op_from_name(optarg)) >= 0)
                o->op = v;
            else {
                printf("invalid op %s, defaulting to %s .. \n", optarg,
                       "sum");
                o->op = NCD_OP_SUM;
            }
            break;
        case 'd':
            if (strcmp(optarg, "all") == 0)
                o->dtype = -1;
            else if ((v = ncd_perf_dtype_from_name(optarg)) >= 0)
                o->dtype = v;
            else {
                printf("invalid type %s, defaulting to %s .. \n", optarg,
                       "float");
                o->dtype = NCD_DT_FLOAT;
            }
            break;
        case 'r':
            /* nccl-tests: strtol, so the word "all" reads as 0 */
            o->root = (int)strtol(optarg, NULL, 0);
            if (o->root < -1) {
                cli_err("invalid root %s (use -1 for every root)", optarg);
                return 1000 + 6;
            }
            break;
        case 'z':
            if (parse_int(optarg, "-z", &o->blocking) || o->blocking < 0 ||
                o->blocking > 3)
                return 1000 + 6;
            break;
        case 'y':
            if (parse_int(optarg, "-y", &o->stream_null))
                return 1000 + 6;
            break;
        case 'T':
            if (parse_int_min(optarg, "-T", &o->timeout_s, 0))
                return 1000 + 6;
            break;
        case 'G':
            if (parse_int_min(optarg, "-G", &o->cudagraph, 0))
                return 1000 + 6;
            if (o->cudagraph)
                fprintf(stderr, "nccl-doctor: -G (CUDA graphs) is not "
                                "implemented; running without graphs\n");
            o->cudagraph = 0;
            break;
        case 'C':
            if (parse_int(optarg, "-C", &o->report_cputime))
                return 1000 + 6;
            break;
        case 'S':
            if (parse_int(optarg, "-S", &o->report_timestamps))
                return 1000 + 6;
            break;
        case 'J':
            o->json_path = optarg;
            break;
        case 'a':
            if (parse_int(optarg, "-a", &o->average) || o->average < 0 ||
                o->average > 3)
                return 1000 + 6;
            break;
        case 'R':
            if (parse_int(optarg, "-R", &o->local_register))
                return 1000 + 6;
            break;
        case 'M':
            if (parse_int(optarg, "-M", &o->memory_report))
                return 1000 + 6;
            break;
        case 'u':
            if (parse_int(optarg, "-u", &o->unalign) || o->unalign < 0 ||
                o->unalign > 1024)
                return 1000 + 6;
            break;
        case 'x':
        case 'D':
        case 'V':
        case 'I':
        case 'K':
            if (parse_int(optarg, "option", &v))
                return 1000 + 6;
            if (v && c != 'V')
                fprintf(stderr, "nccl-doctor: -%c is not implemented; "
                                "ignored\n",
                        c);
            break;
        case OPT_BACKEND:
            P->backend = optarg;
            break;
        case OPT_NP:
            if (parse_int(optarg, "-np", &P->np) || P->np < 1 ||
                P->np > 1024) {
                cli_err("-np takes 1..1024");
                return 1000 + 6;
            }
            break;
        case OPT_IFACE:
            P->iface = optarg;
            break;
        case OPT_RDV:
            P->rendezvous = optarg;
            break;
        case OPT_ALGO:
            P->algo = optarg;
            break;
        case OPT_PEER_TIMEOUT:
            if (parse_int(optarg, "--peer-timeout", &P->peer_timeout_s) ||
                P->peer_timeout_s < 1)
                return 1000 + 6;
            break;
        case OPT_NCCL_LIB:
            P->nccl_lib = optarg;
            break;
        case OPT_CUDART_LIB:
            P->cudart_lib = optarg;
            break;
        case CLI_OPT_JSON:
            P->common.json = 1;
            break;
        case 'h':
            cli_usage("perf", stdout);
            return 1;
        default:
            if (optopt && optopt < 128)
                printf("invalid option '%c'\n", optopt);
            else
                printf("invalid option '%s'\n", argv[optind - 1]);
            cli_usage("perf", stdout);
            return 1000 + 6;
        }
    }
    return 0;
}

/* -np: fork N processes on this host ---------------------------------- */

static volatile sig_atomic_t got_signal;

static void forward_signal(int sig)
{
    got_signal = sig;
}

static int run_job(struct perf_cli *P, struct ncd_ctx *ctx, int nprocs,
                   int proc, int local_proc, struct ncd_pg *pg,
                   int local_only);

static int fork_ranks(struct perf_cli *P, struct ncd_ctx *ctx)
{
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof sa;
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
        listen(lfd, 1024) < 0 ||
        getsockname(lfd, (struct sockaddr *)&sa, &sl) < 0) {
        cli_err("cannot create the local rendezvous socket: %s",
                strerror(errno));
        return 1;
    }
    int port = ntohs(sa.sin_port);
    uint64_t token = 0;
    FILE *ur = fopen("/dev/urandom", "rb");
    if (!ur || fread(&token, sizeof token, 1, ur) != 1)
        token = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull ^ (uint64_t)time(0);
    if (ur)
        fclose(ur);
    fflush(stdout);
    fflush(stderr);
    pid_t *pids = calloc((size_t)P->np, sizeof(pid_t));
    if (!pids) {
        close(lfd);
        return 1;
    }
    pid_t parent = getpid();
    for (int i = 0; i < P->np; i++) {
        pid_t pid = fork();
        if (pid < 0) {
            cli_err("fork: %s", strerror(errno));
            for (int j = 0; j < i; j++)
                kill(pids[j], SIGTERM);
            for (int j = 0; j < i; j++)
                waitpid(pids[j], NULL, 0);
            free(pids);
            close(lfd);
            return 1;
        }
        if (pid == 0) {
            /* Die with the launcher: no orphaned ranks if it is killed. */
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent)
                _exit(3);
            free(pids);
            struct ncd_pg_params pp = {
                .nprocs = P->np,
                .proc = i,
                .host = "127.0.0.1",
                .port = port,
                .listen_fd = lfd,
                .token = token,
                .timeout_ms = P->peer_timeout_s * 1000,
            };
            struct ncd_pg *pg;
            int rc = ncd_pg_tcp(ctx, &pp, &pg);
            if (rc) {
                fprintf(stderr, "nccl-doctor perf (process %d): %s\n", i,
                        ncd_ctx_errdetail(ctx));
                _exit(3);
            }
            int st = run_job(P, ctx, P->np, i, i, pg, 1);
            ncd_pg_free(pg);
            fflush(stdout);
            fflush(stderr);
            _exit(st);
        }
        pids[i] = pid;
    }
    close(lfd);
    struct sigaction sa_new = {.sa_handler = forward_signal}, sa_int,
                     sa_term;
    sigaction(SIGINT, &sa_new, &sa_int);
    sigaction(SIGTERM, &sa_new, &sa_term);
    int status = 0, left = P->np, forwarded = 0;
    int status0 = 0;
    /* Once a process fails, the others get the peer timeout (plus a
     * margin) to notice and report; then the stragglers are killed, so a
     * hung rank never hangs the launcher. */
    struct timespec fail_at = {0, 0};
    int killed = 0;
    while (left > 0) {
        int ws;
        pid_t pid = waitpid(-1, &ws, status ? WNOHANG : 0);
        if (pid == 0) {
            struct timespec now, nap = {0, 50 * 1000 * 1000};
            clock_gettime(CLOCK_MONOTONIC, &now);
            if (!killed &&
                now.tv_sec - fail_at.tv_sec > P->peer_timeout_s + 5) {
                for (int i = 0; i < P->np; i++)
                    if (pids[i] > 0) {
                        fprintf(stderr,
                                "nccl-doctor perf: process %d (pid %d) did "
                                "not stop %d s after another process "
                                "failed; killing it\n",
                                i, (int)pids[i], P->peer_timeout_s + 5);
                        kill(pids[i], SIGKILL);
                    }
                killed = 1;
            }
            nanosleep(&nap, NULL);
            continue;
        }
        if (pid < 0) {
            if (errno == EINTR) {
                if (got_signal && !forwarded) {
                    for (int i = 0; i < P->np; i++)
                        if (pids[i] > 0)
                            kill(pids[i], got_signal);
                    forwarded = 1;
                }
                continue;
            }
            break;
        }
        int idx = -1;
        for (int i = 0; i < P->np; i++)
            if (pids[i] == pid)
                idx = i;
        if (idx < 0)
            continue;
        pids[idx] = -1;
        left--;
        int st;
        if (WIFSIGNALED(ws)) {
            fprintf(stderr,
                    "nccl-doctor perf: process %d (pid %d, ranks %d-%d) was "
                    "killed by signal %d (%s)\n",
                    idx, (int)pid, idx * P->o.nthreads * P->o.ngpus,
                    (idx + 1) * P->o.nthreads * P->o.ngpus - 1,
                    WTERMSIG(ws), strsignal(WTERMSIG(ws)));
            st = 3;
        } else {
            st = WEXITSTATUS(ws);
        }
        if (idx == 0)
            status0 = st;
        if (st && !status) {
            status = st;
            clock_gettime(CLOCK_MONOTONIC, &fail_at);
        }
    }
    sigaction(SIGINT, &sa_int, NULL);
    sigaction(SIGTERM, &sa_term, NULL);
    free(pids);
    if (got_signal)
        return 128 + got_signal;
    /* rank 0's status (it printed the table) wins, else the first failure */
    return status0 ? status0 : status;
}

static int run_job(struct perf_cli *P, struct ncd_ctx *ctx, int nprocs,
                   int proc, int local_proc, struct ncd_pg *pg,
                   int local_only)
{
    struct ncd_perf_opts *o = &P->o;
    int rpp = o->nthreads * o->ngpus;
    int nranks = nprocs * rpp;
    if (o->coll == NCD_COLL_HYPERCUBE && (nranks & (nranks - 1))) {
        if (proc == 0)
            fprintf(stderr, "nccl-doctor perf: hypercube needs a power-of-two "
                            "number of ranks, not %d\n",
                    nranks);
        return 6;
    }
    if (ncd_perf_coll_has_root(o->coll) && o->root >= nranks) {
        /* NCCL rejects it (ncclInvalidArgument); nccl-tests then fails
         * with "Test NCCL failure ... invalid argument", status 3. */
        if (proc == 0)
            fprintf(stderr,
                    "nccl-doctor perf: Test NCCL failure: invalid argument: "
                    "root %d is not a rank (nranks %d; ranks are 0-%d, -1 "
                    "runs every root)\n",
                    o->root, nranks, nranks - 1);
        return 3;
    }
    struct ncd_perf_job job = {
        .nprocs = nprocs,
        .proc = proc,
        .local_proc = local_proc,
        .ranks_per_proc = rpp,
        .pg = pg,
        .peer_timeout_ms = P->peer_timeout_s * 1000,
        .nccl_path = P->nccl_lib,
        .cudart_path = P->cudart_lib,
        .device0 = -1,
    };
    const char *d0 = ncd_getenv(ctx, "NCCL_TESTS_DEVICE");
    if (d0 && *d0)
        job.device0 = atoi(d0);
    /* backend */
    char why[1024] = "";
    int ver = 0, ndev = 0;
    const char *be = P->backend ? P->backend : "auto";
    if (strcmp(be, "socket") == 0) {
        job.backend = NCD_PERF_BACKEND_SOCKET;
    } else if (strcmp(be, "nccl") == 0) {
        job.backend = NCD_PERF_BACKEND_NCCL;
    } else if (strcmp(be, "auto") == 0) {
        if (ncd_perf_nccl_usable(P->nccl_lib, P->cudart_lib, why, sizeof why,
                                 &ver, &ndev))
            job.backend = NCD_PERF_BACKEND_NCCL;
        else
            job.backend = NCD_PERF_BACKEND_SOCKET;
    } else {
        if (proc == 0)
            cli_err("--backend takes socket, nccl or auto, not '%s'", be);
        return 6;
    }
    if (!P->algo || strcmp(P->algo, "auto") == 0)
        job.algo = NCD_PERF_ALGO_AUTO;
    else if (strcmp(P->algo, "ring") == 0)
        job.algo = NCD_PERF_ALGO_RING;
    else if (strcmp(P->algo, "direct") == 0)
        job.algo = NCD_PERF_ALGO_DIRECT;
    else {
        if (proc == 0)
            cli_err("--algo takes ring, direct or auto, not '%s'", P->algo);
        return 6;
    }
    /* Which processes share this host: host name + boot id, as nccl-tests
     * computes the local rank (os/linux.cc getHostHash); the network
     * namespace too, to know whether loopback reaches every rank. */
    if (nprocs > 1) {
        struct {
            char host[128];
            char netns[64];
        } id, *all;
        char bid[64] = "", hn[64] = "";
        gethostname(hn, sizeof hn - 1);
        if (ncd_fs_read_str(ctx, "/proc/sys/kernel/random/boot_id", bid,
                            sizeof bid) < 0)
            ncd_ctx_clear_error(ctx);
        memset(&id, 0, sizeof id);
        snprintf(id.host, sizeof id.host, "%.63s/%.63s", hn, bid);
        ssize_t nl = readlink("/proc/self/ns/net", id.netns,
                              sizeof id.netns - 1);
        if (nl < 0)
            snprintf(id.netns, sizeof id.netns, "pid-%d", (int)getpid());
        all = malloc(sizeof id * (size_t)nprocs);
        if (!all || ncd_pg_allgather(ctx, pg, &id, sizeof id, all)) {
            cli_err("rendezvous failed: %s", ncd_ctx_errdetail(ctx));
            free(all);
            return 3;
        }
        int same = 1, before = 0;
        for (int p = 0; p < nprocs; p++) {
            int eq = strcmp(all[p].host, id.host) == 0;
            same &= eq && strcmp(all[p].netns, id.netns) == 0;
            if (eq && p < proc)
                before++;
        }
        free(all);
        job.local_proc = before;
        if (same)
            local_only = 1;
    }
    char ifname[64] = "", addr[64] = "";
    if (job.backend == NCD_PERF_BACKEND_SOCKET) {
        if (o->dtype == NCD_DT_F8E4M3 || o->dtype == NCD_DT_F8E5M2) {
            if (proc == 0)
                cli_err("the socket backend does not reduce fp8 types (%s)",
                        ncd_perf_dtype_name(o->dtype));
            return 5;
        }
        char whyif[300] = "";
        if (ncd_perf_pick_iface(ctx, P->iface, ncd_pg_local_addr(pg),
                                local_only, ifname, sizeof ifname, addr,
                                sizeof addr, whyif, sizeof whyif)) {
            cli_err("no interface for the socket backend: %s", whyif);
            return 3;
        }
        job.bind_addr = addr;
        job.ifname = ifname;
        const char *nt = ncd_getenv(ctx, "NCCL_SOCKET_NTHREADS");
        const char *ns = ncd_getenv(ctx, "NCCL_NSOCKS_PERTHREAD");
        job.sock_nthreads = nt ? atoi(nt) : 0;
        job.sock_nsocks = ns ? atoi(ns) : 1;
        if (job.sock_nthreads < 0)
            job.sock_nthreads = 0;
        if (job.sock_nthreads > 16)
            job.sock_nthreads = 16; /* NCCL clamps with a WARN */
        if (job.sock_nsocks < 1)
            job.sock_nsocks = 1;
        if (job.sock_nthreads * job.sock_nsocks > 64)
            job.sock_nsocks = 64 / (job.sock_nthreads ? job.sock_nthreads : 1);
    }
    int is_root = proc == 0;
    P->out = is_root && !P->common.json ? stdout : NULL;
    P->progress_tty = is_root && isatty(STDERR_FILENO) && !P->common.json;
    job.progress = P->progress_tty;
    if (is_root && o->json_path && pick_json_path(P))
        return 6;
    if (is_root && P->common.json && !P->json_path[0])
        snprintf(P->json_path, sizeof P->json_path, "-");
    if (is_root && P->json_path[0] && strcmp(P->json_path, "-") != 0 &&
        P->out)
        fprintf(P->out, "# Writing JSON output to %s\n", P->json_path);
    if (!P->backend && job.backend == NCD_PERF_BACKEND_SOCKET && why[0])
        snprintf(P->fallback, sizeof P->fallback, "%s", why);
    struct ncd_perf_sink sink = {.arg = P,
                                 .preamble = sink_preamble,
                                 .row = sink_row,
                                 .progress = sink_progress};
    struct ncd_perf_summary sum;
    int st = ncd_perf_run(ctx, o, &job, &sink, &sum);
    clear_progress(P);
    if (sum.error[0]) {
        char host[256] = "";
        gethostname(host, sizeof host - 1);
        char *dot = strchr(host, '.');
        if (dot)
            *dot = '\0';
        const char *kind = st == 2   ? "CUDA failure"
                           : st == 4 ? "timeout"
                           : st == 3 ? "NCCL failure"
                                     : "failure";
        fprintf(stderr, "%s: Test %s perf/%s '%s%s'\n", host, kind,
                job.backend == NCD_PERF_BACKEND_NCCL ? "nccl" : "socket",
                st == 3 && job.backend == NCD_PERF_BACKEND_SOCKET
                    ? "remote process exited or there was a network error / "
                    : "",
                sum.error);
        fflush(stderr);
    }
    if (is_root && !sum.error[0]) {
        struct ncd_strbuf sb = {0};
        ncd_perf_fmt_footer(&sb, o, sum.oob, sum.avg_busbw,
                            o->memory_report ? sum.mem : NULL, NULL);
        if (P->out) {
            fputs(ncd_sb_str(&sb), P->out);
            fflush(P->out);
        }
        ncd_sb_release(&sb);
    }
    if (is_root && P->doc) {
        char ts[64];
        ts_now(ts, sizeof ts);
        ncd_perf_json_finish(P->doc, o, sum.oob, sum.avg_busbw,
                             sum.error[0] ? sum.error : NULL, ts);
        if (strcmp(P->json_path, "-") == 0) {
            cli_print_json(P->doc);
            P->doc = NULL;
        } else if (write_json(P) && !st) {
            st = 1;
        }
    }
    if (P->doc)
        json_decref(P->doc);
    P->doc = NULL;
    return st;
}

int ncd_cmd_perf(int argc, char **argv)
{
    struct perf_cli P;
    memset(&P, 0, sizeof P);
    ncd_perf_opts_default(&P.o);
    cli_common_init(&P.common);
    P.peer_timeout_s = 0; /* 0: -T if given, else 60 s */
    P.argv = argv;

    /* "-np N" is not a getopt option: rewrite it as --np */
    char **av = calloc((size_t)argc + 1, sizeof *av);
    if (!av)
        return 1;
    for (int i = 0; i < argc; i++)
        av[i] = strcmp(argv[i], "-np") == 0 ? (char *)"--np" : argv[i];

    const char *base = strrchr(argv[0], '/');
    base = base ? base + 1 : argv[0];
    size_t bl = strlen(base);
    char prog[64];
    int coll = -1;
    if (bl > 5 && strcmp(base + bl - 5, "_perf") == 0) {
        coll = ncd_perf_coll_from_name(base);
        if (coll < 0) {
            cli_err("unknown collective '%s'", base);
            free(av);
            return 6;
        }
    }
    int rc = parse(&P, argc, av);
    if (rc == 1) {
        free(av);
        return 0;
    }
    if (rc >= 1000) {
        free(av);
        return rc - 1000;
    }
    if (coll < 0) {
        if (optind >= argc) {
            cli_err("perf needs a collective: all_reduce all_gather "
                    "reduce_scatter broadcast reduce alltoall sendrecv "
                    "gather scatter hypercube");
            cli_usage("perf", stderr);
            free(av);
            return 6;
        }
        coll = ncd_perf_coll_from_name(av[optind]);
        if (coll < 0) {
            cli_err("unknown collective '%s'", av[optind]);
            free(av);
            return 6;
        }
        optind++;
    }
    if (optind < argc) {
        cli_err("unexpected argument '%s'", av[optind]);
        free(av);
        return 6;
    }
    free(av);
    /* Checked before any rank starts, so no rank is left to fail later. */
    if (P.o.json_path) {
        size_t jl = strlen(P.o.json_path);
        if (jl < 5 || strcmp(P.o.json_path + jl - 5, ".json") != 0) {
            cli_err("-J/--output_file must end in .json ('%s')",
                    P.o.json_path);
            return 6;
        }
    }
    P.o.coll = (enum ncd_perf_coll)coll;
    /* nccl-tests' -T also bounds every wait of the socket backend */
    if (P.peer_timeout_s == 0)
        P.peer_timeout_s = P.o.timeout_s > 0 ? P.o.timeout_s : 60;
    snprintf(prog, sizeof prog, "%s_perf", ncd_perf_coll_name(P.o.coll));
    P.o.prog = prog;
    if (P.o.minbytes > P.o.maxbytes) {
        fprintf(stderr, "invalid sizes for 'minbytes' and 'maxbytes': %zu > "
                        "%zu\n",
                P.o.minbytes, P.o.maxbytes);
        return 255;
    }
    if (P.o.stepfactor <= 1 && P.o.stepbytes == 0) {
        fprintf(stderr, "invalid step: -i 0 with -f <= 1 never ends\n");
        return 255;
    }

    /* The socket backend keeps (ranks - 1) x sockets-per-peer connections
     * per rank: lift the soft open-files limit to the hard one. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    struct ncd_ctx *ctx = cli_ctx_new(&P.common);
    if (!ctx)
        return 1;
    const char *mbw = ncd_getenv(ctx, "NCCL_TESTS_MIN_BW");
    if (mbw && *mbw)
        P.o.min_bw = strtod(mbw, NULL);

    int status;
    struct ncd_launch L;
    int lr = ncd_perf_detect_launcher(ctx, &L);
    if (lr < 0) {
        cli_err("%s", ncd_ctx_errdetail(ctx));
        ncd_ctx_free(ctx);
        return 6;
    }
    if (P.np > 0 && lr == 1) {
        cli_err("-np %d given, but this process was started by %s as rank "
                "%d of %d: drop -np",
                P.np, L.launcher, L.rank, L.size);
        ncd_ctx_free(ctx);
        return 6;
    }
    if (P.np > 1) {
        status = fork_ranks(&P, ctx);
    } else if (lr == 1 || P.rendezvous) {
        struct ncd_pg *pg = NULL;
        int use_mpi = 0;
#ifdef NCD_WITH_MPI
        use_mpi = lr == 1 && L.is_mpi && !P.rendezvous;
#endif
        int local = L.local_rank >= 0 ? L.local_rank : 0;
        if (use_mpi) {
            rc = ncd_pg_mpi(ctx, &argc, &argv, &pg);
        } else {
            char host[256];
            int port = 0;
            if (P.rendezvous) {
                if (ncd_perf_split_hostport(P.rendezvous, host, sizeof host,
                                            &port)) {
                    cli_err("--rendezvous takes HOST:PORT, not '%s'",
                            P.rendezvous);
                    ncd_ctx_free(ctx);
                    return 6;
                }
            } else if (L.master_addr[0] && L.master_port) {
                snprintf(host, sizeof host, "%s", L.master_addr);
                port = L.master_port;
                /* torchrun's agent keeps its TCPStore on MASTER_PORT */
                if (ncd_getenv(ctx, "TORCHELASTIC_RUN_ID"))
                    port = port == 65535 ? 65534 : port + 1;
            } else {
                cli_err("started by %s as rank %d of %d, but there is no "
                        "rendezvous address: pass --rendezvous HOST:PORT "
                        "(HOST = rank 0's node) or set MASTER_ADDR and "
                        "MASTER_PORT%s",
                        L.launcher, L.rank, L.size,
                        L.is_mpi ? ", or build with -DNCD_WITH_MPI=ON" : "");
                ncd_ctx_free(ctx);
                return 6;
            }
            int nprocs = lr == 1 ? L.size : 0, proc = lr == 1 ? L.rank : 0;
            if (lr != 1) {
                const char *ws = ncd_getenv(ctx, "WORLD_SIZE");
                const char *rk = ncd_getenv(ctx, "RANK");
                nprocs = ws ? atoi(ws) : 1;
                proc = rk ? atoi(rk) : 0;
            }
            struct ncd_pg_params pp = {.nprocs = nprocs,
                                       .proc = proc,
                                       .host = host,
                                       .port = port,
                                       .listen_fd = -1,
                                       .timeout_ms =
                                           P.peer_timeout_s * 1000};
            rc = ncd_pg_tcp(ctx, &pp, &pg);
        }
        if (rc) {
            fprintf(stderr, "nccl-doctor perf: rendezvous failed: %s\n",
                    ncd_ctx_errdetail(ctx));
            ncd_ctx_free(ctx);
            return rc == NCD_ETIMEOUT ? 4 : 3;
        }
        ncd_ctx_clear_error(ctx);
        int lp = local;
        if (use_mpi && ncd_pg_local_index(pg) >= 0)
            lp = ncd_pg_local_index(pg);
        status = run_job(&P, ctx, ncd_pg_nprocs(pg), ncd_pg_proc(pg), lp, pg,
                         0);
        ncd_pg_free(pg);
    } else {
        struct ncd_pg *pg;
        if (ncd_pg_single(&pg)) {
            ncd_ctx_free(ctx);
            return 1;
        }
        status = run_job(&P, ctx, 1, 0, 0, pg, 1);
        ncd_pg_free(pg);
    }
    ncd_ctx_free(ctx);
    return status;
}
