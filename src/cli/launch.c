/* SPDX-License-Identifier: MIT */
/* Job start shared by probe and tune (see launch.h). */
#define _GNU_SOURCE
#include "launch.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "ncd/error.h"
#include "ncd/probe.h"

static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
    got_signal = sig;
}

static uint64_t draw_token(void)
{
    uint64_t t = 0;
    FILE *f = fopen("/dev/urandom", "rb");
    if (!f || fread(&t, sizeof t, 1, f) != 1)
        t = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull ^ (uint64_t)time(NULL);
    if (f)
        fclose(f);
    return t ? t : 1;
}

static int fork_np(struct ncd_ctx *ctx, const struct cli_launch *L,
                   cli_job_fn fn, void *arg)
{
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof sa;
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
        listen(lfd, 1024) < 0 ||
        getsockname(lfd, (struct sockaddr *)&sa, &sl) < 0) {
        cli_err("%s: cannot create the local rendezvous socket: %s", L->cmd,
                strerror(errno));
        if (lfd >= 0)
            close(lfd);
        return NCD_EXIT_TOOL;
    }
    int port = ntohs(sa.sin_port);
    uint64_t token = draw_token();
    fflush(stdout);
    fflush(stderr);
    pid_t *pids = calloc((size_t)L->np, sizeof *pids);
    if (!pids) {
        close(lfd);
        return NCD_EXIT_TOOL;
    }
    int started = 0;
    pid_t parent = getpid();
    for (int i = 0; i < L->np; i++) {
        pid_t pid = fork();
        if (pid < 0) {
            cli_err("%s: fork: %s", L->cmd, strerror(errno));
            break;
        }
        if (pid == 0) {
            /* Die with the launcher: no orphaned ranks if it is killed. */
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent)
                _exit(NCD_EXIT_TOOL);
            free(pids);
            struct ncd_pg_params pp = {.nprocs = L->np,
                                       .proc = i,
                                       .host = "127.0.0.1",
                                       .port = port,
                                       .listen_fd = i == 0 ? lfd : -1,
                                       .token = token,
                                       .timeout_ms = L->timeout_ms};
            if (i != 0)
                close(lfd);
            struct ncd_pg *pg = NULL;
            if (ncd_pg_tcp(ctx, &pp, &pg)) {
                fprintf(stderr, "nccl-doctor %s (process %d): %s\n", L->cmd,
                        i, ncd_ctx_errdetail(ctx));
                _exit(NCD_EXIT_TOOL);
            }
            struct cli_job job = {.pg = pg,
                                  .nprocs = L->np,
                                  .proc = i,
                                  .local_proc = i,
                                  .launcher = "-np"};
            int st = fn(arg, ctx, &job);
            ncd_pg_free(pg);
            fflush(stdout);
            fflush(stderr);
            _exit(st);
        }
        pids[started++] = pid;
    }
    close(lfd);
    if (started < L->np) {
        for (int i = 0; i < started; i++)
            kill(pids[i], SIGTERM);
    }
    struct sigaction nsa = {.sa_handler = on_signal}, oint, oterm;
    sigaction(SIGINT, &nsa, &oint);
    sigaction(SIGTERM, &nsa, &oterm);
    int status = started < L->np ? NCD_EXIT_TOOL : -1, left = started;
    int forwarded = 0, died = 0;
    while (left > 0) {
        int ws;
        pid_t pid = waitpid(-1, &ws, 0);
        if (pid < 0) {
            if (errno == EINTR) {
                if (got_signal && !forwarded) {
                    for (int i = 0; i < started; i++)
                        if (pids[i] > 0)
                            kill(pids[i], got_signal);
                    forwarded = 1;
                }
                continue;
            }
            break;
        }
        int idx = -1;
        for (int i = 0; i < started; i++)
            if (pids[i] == pid)
                idx = i;
        if (idx < 0)
            continue;
        pids[idx] = -1;
        left--;
        if (WIFSIGNALED(ws)) {
            fprintf(stderr,
                    "nccl-doctor %s: process %d (pid %d) was killed by "
                    "signal %d (%s)\n",
                    L->cmd, idx, (int)pid, WTERMSIG(ws),
                    strsignal(WTERMSIG(ws)));
            died = 1;
        } else if (idx == 0) {
            status = WEXITSTATUS(ws);
        } else if (WEXITSTATUS(ws) == NCD_EXIT_TOOL) {
            died = 1;
        }
    }
    sigaction(SIGINT, &oint, NULL);
    sigaction(SIGTERM, &oterm, NULL);
    free(pids);
    if (status < 0 || died)
        status = NCD_EXIT_TOOL;
    return status;
}

/* The rendezvous failed: say where we tried and through which interface. */
static void rdv_failed(struct ncd_ctx *ctx, const struct cli_launch *L,
                       int proc, const char *host, int port)
{
    char ifn[32], addr[64], why[256];
    int rr = ncd_probe_route_to(host, port, ifn, sizeof ifn, addr,
                                sizeof addr, why, sizeof why);
    if (proc == 0) {
        /* The root is the rendezvous: the others did not reach it. */
        fprintf(stderr, "nccl-doctor %s: the rendezvous at %s:%d (process 0) "
                        "failed: %s\n",
                L->cmd, host, port, ncd_ctx_errdetail(ctx));
        return;
    }
    fprintf(stderr,
            "nccl-doctor %s: process %d cannot reach the rendezvous at "
            "%s:%d: %s\n",
            L->cmd, proc, host, port, ncd_ctx_errdetail(ctx));
    if (rr == 0)
        fprintf(stderr,
                "nccl-doctor %s: process %d tried %s:%d from local interface "
                "%s (address %s)\n",
                L->cmd, proc, host, port, ifn[0] ? ifn : "?", addr);
    else
        fprintf(stderr, "nccl-doctor %s: process %d: %s\n", L->cmd, proc,
                why);
}

int cli_launch_run(struct ncd_ctx *ctx, const struct cli_launch *L,
                   cli_job_fn fn, void *arg)
{
    struct ncd_launch ln;
    int lr = ncd_perf_detect_launcher(ctx, &ln);
    if (lr < 0) {
        cli_err("%s: %s", L->cmd, ncd_ctx_errdetail(ctx));
        return NCD_EXIT_TOOL;
    }
    if (L->np > 0 && lr == 1) {
        cli_err("%s: -np %d given, but this process was started by %s as "
                "rank %d of %d: drop -np",
                L->cmd, L->np, ln.launcher, ln.rank, ln.size);
        return NCD_EXIT_TOOL;
    }
    if (L->np > 0 && L->rendezvous) {
        cli_err("%s: -np forks the ranks on this host; --rendezvous joins "
                "ranks started elsewhere: give one of them",
                L->cmd);
        return NCD_EXIT_TOOL;
    }
    if (L->np > 1)
        return fork_np(ctx, L, fn, arg);
    struct cli_job job = {0};
    if (lr == 1 || L->rendezvous) {
        int use_mpi = 0;
#ifdef NCD_WITH_MPI
        use_mpi = lr == 1 && ln.is_mpi && !L->rendezvous;
#endif
        int rc;
        if (use_mpi) {
            rc = ncd_pg_mpi(ctx, L->argc, L->argv, &job.pg);
            job.launcher = "MPI";
        } else {
            char host[256];
            int port = 0;
            if (L->rendezvous) {
                if (ncd_perf_split_hostport(L->rendezvous, host, sizeof host,
                                            &port)) {
                    cli_err("%s: --rendezvous takes HOST:PORT, not '%s'",
                            L->cmd, L->rendezvous);
                    return NCD_EXIT_TOOL;
                }
                job.launcher = "--rendezvous";
            } else if (ln.master_addr[0] && ln.master_port) {
                snprintf(host, sizeof host, "%s", ln.master_addr);
                port = ln.master_port;
                /* torchrun's agent keeps its TCPStore on MASTER_PORT */
                if (ncd_getenv(ctx, "TORCHELASTIC_RUN_ID"))
                    port = port == 65535 ? 65534 : port + 1;
                job.launcher = ln.launcher;
            } else {
                cli_err("%s: started by %s as rank %d of %d, but there is no "
                        "rendezvous address: pass --rendezvous HOST:PORT "
                        "(HOST = rank 0's node) or set MASTER_ADDR and "
                        "MASTER_PORT",
                        L->cmd, ln.launcher, ln.rank, ln.size);
                return NCD_EXIT_TOOL;
            }
            int nprocs = lr == 1 ? ln.size : 1, proc = lr == 1 ? ln.rank : 0;
            if (lr != 1) {
                const char *ws = ncd_getenv(ctx, "WORLD_SIZE");
                const char *rk = ncd_getenv(ctx, "RANK");
                char *e1 = NULL, *e2 = NULL;
                nprocs = ws ? (int)strtol(ws, &e1, 10) : 1;
                proc = rk ? (int)strtol(rk, &e2, 10) : 0;
                if ((e1 && *e1) || (e2 && *e2) || nprocs < 1 || proc < 0 ||
                    proc >= nprocs) {
                    cli_err("%s: WORLD_SIZE=%s RANK=%s: need 0 <= RANK < "
                            "WORLD_SIZE",
                            L->cmd, ws ? ws : "(unset)", rk ? rk : "(unset)");
                    return NCD_EXIT_TOOL;
                }
            }
            snprintf(job.rdv_host, sizeof job.rdv_host, "%s", host);
            job.rdv_port = port;
            struct ncd_pg_params pp = {.nprocs = nprocs,
                                       .proc = proc,
                                       .host = host,
                                       .port = port,
                                       .listen_fd = -1,
                                       .timeout_ms = L->timeout_ms};
            rc = ncd_pg_tcp(ctx, &pp, &job.pg);
            if (rc) {
                rdv_failed(ctx, L, proc, host, port);
                return NCD_EXIT_TOOL;
            }
        }
        if (rc) {
            cli_err("%s: %s", L->cmd, ncd_ctx_errdetail(ctx));
            return NCD_EXIT_TOOL;
        }
        ncd_ctx_clear_error(ctx);
        job.local_proc = ln.local_rank >= 0 ? ln.local_rank : 0;
    } else {
        if (ncd_pg_single(&job.pg))
            return NCD_EXIT_TOOL;
        job.launcher = "single";
    }
    job.nprocs = ncd_pg_nprocs(job.pg);
    job.proc = ncd_pg_proc(job.pg);
    int st = fn(arg, ctx, &job);
    ncd_pg_free(job.pg);
    return st;
}
