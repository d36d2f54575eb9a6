/* SPDX-License-Identifier: MIT */
/*
 * -np: fork the local ranks and watch them (include/ncd/job.h).  One set
 * of rules for every command: ranks die with the launcher, the launcher
 * forwards SIGINT/SIGTERM/SIGHUP, reports deaths by a signal, and kills
 * stragglers once another rank has failed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "job/job_int.h"
#include "ncd/error.h"
#include "ncd/sock.h"
#include "pg/pg_int.h"

static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
    if (!got_signal)
        got_signal = sig;
}

static const int forwarded_signals[] = {SIGINT, SIGTERM, SIGHUP};
/* ranks still alive this long after a forwarded signal are killed */
#define SIGNAL_GRACE_MS 500
#define NSIG_FWD (sizeof forwarded_signals / sizeof forwarded_signals[0])

void ncd__job_report(const struct ncd_job_opts *o, const char *fmt, ...)
{
    if (!o->report)
        return;
    char line[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    o->report(o->report_arg, line);
}

/* The forked rank: join the group through the launcher's listener, run the
 * job function, exit with its status.  Never returns. */
static void rank_main(struct ncd_ctx *ctx, const struct ncd_job_plan *plan,
                      const struct ncd_job_opts *o, ncd_job_fn fn, void *arg,
                      int i, int lfd, int port, uint64_t token, pid_t parent)
{
    /* Die with the launcher: no orphaned ranks if it is killed. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(o->fail_status);
    struct ncd_pg_params pp = {.nprocs = plan->nprocs,
                               .proc = i,
                               .host = "127.0.0.1",
                               .port = port,
                               .listen_fd = lfd,
                               .token = token,
                               .timeout_ms = o->timeout_ms};
    struct ncd_pg *pg = NULL;
    if (ncd_pg_tcp(ctx, &pp, &pg)) {
        ncd__job_report(o, "process %d: %s", i, ncd_ctx_errdetail(ctx));
        _exit(o->fail_status);
    }
    ncd_ctx_clear_error(ctx);
    ncd_pg_set_timeout(pg, o->exchange_timeout_ms);
    struct ncd_job job = {.plan = plan,
                          .pg = pg,
                          .nprocs = plan->nprocs,
                          .proc = i,
                          .local_proc = i,
                          .all_local = 1};
    int st = fn(arg, ctx, &job);
    ncd_pg_free(pg);
    fflush(stdout);
    fflush(stderr);
    _exit(st);
}

static void describe_proc(const struct ncd_job_opts *o, int idx, pid_t pid,
                          char *out, size_t len)
{
    if (o->ranks_per_proc > 0)
        snprintf(out, len, "process %d (pid %d, ranks %d-%d)", idx, (int)pid,
                 idx * o->ranks_per_proc, (idx + 1) * o->ranks_per_proc - 1);
    else
        snprintf(out, len, "process %d (pid %d)", idx, (int)pid);
}

static double mono_s(void)
{
    return ncd_sock_now();
}

/* Waits for every child; applies the signal, death and straggler rules. */
static void watch(const struct ncd_job_opts *o, pid_t *pids, int n,
                  const sigset_t *oldmask, struct ncd_job_result *res)
{
    struct sigaction sa = {.sa_handler = on_signal}, old[NSIG_FWD];
    sigemptyset(&sa.sa_mask);
    got_signal = 0;
    /* a signal ignored when the launcher started (a background job of a
     * script) stays ignored, as the ranks inherited it */
    for (size_t k = 0; k < NSIG_FWD; k++)
        if (sigaction(forwarded_signals[k], NULL, &old[k]) == 0 &&
            old[k].sa_handler != SIG_IGN)
            sigaction(forwarded_signals[k], &sa, NULL);
    /* signals that arrived while the ranks were forked are delivered now,
     * to the handler: none is lost between fork() and here */
    sigprocmask(SIG_SETMASK, oldmask, NULL);
    int left = n, forwarded = 0, status0 = 0, first = 0, killed = 0;
    int stopped = 0;
    double fail_at = 0, forwarded_at = 0;
    while (left > 0) {
        int ws;
        pid_t pid = waitpid(-1, &ws, first || forwarded ? WNOHANG : 0);
        if (pid == 0 && forwarded && !killed &&
            mono_s() - forwarded_at > SIGNAL_GRACE_MS / 1000.0) {
            /* a rank that ignores or handles the signal (SIG_IGN inherited
             * from a background shell) still stops within a second */
            for (int i = 0; i < n; i++)
                if (pids[i] > 0)
                    kill(pids[i], SIGKILL);
            killed = 1;
        }
        if (pid == 0) {
            /* a process failed: give the others the straggler time to
             * notice and report, then kill what is left */
            if (!killed && first && o->straggler_ms > 0 &&
                mono_s() - fail_at > o->straggler_ms / 1000.0) {
                for (int i = 0; i < n; i++) {
                    if (pids[i] <= 0)
                        continue;
                    ncd__job_report(o,
                                    "process %d (pid %d) did not stop %d s "
                                    "after another process failed; killing "
                                    "it",
                                    i, (int)pids[i], o->straggler_ms / 1000);
                    kill(pids[i], SIGKILL);
                }
                killed = 1;
            }
            struct timespec nap = {0, 50 * 1000 * 1000};
            nanosleep(&nap, NULL);
        }
        if (got_signal && !forwarded) {
            for (int i = 0; i < n; i++)
                if (pids[i] > 0)
                    kill(pids[i], got_signal);
            forwarded = 1;
            forwarded_at = mono_s();
        }
        if (pid <= 0) {
            if (pid < 0 && errno != EINTR)
                break;
            continue;
        }
        int idx = -1;
        for (int i = 0; i < n; i++)
            if (pids[i] == pid)
                idx = i;
        if (idx < 0)
            continue;
        pids[idx] = -1;
        left--;
        int st;
        if (WIFSIGNALED(ws) && got_signal &&
            (WTERMSIG(ws) == got_signal ||
             (killed && WTERMSIG(ws) == SIGKILL))) {
            /* stopped by the signal we forwarded: one line for the
             * interruption once every rank is gone, not one per rank */
            stopped++;
            st = o->fail_status;
        } else if (WIFSIGNALED(ws)) {
            char who[96];
            describe_proc(o, idx, pid, who, sizeof who);
            ncd__job_report(o, "%s was killed by signal %d (%s)", who,
                            WTERMSIG(ws), strsignal(WTERMSIG(ws)));
            st = o->fail_status;
        } else {
            st = WEXITSTATUS(ws);
        }
        if (idx == 0)
            status0 = st;
        if (st && !first) {
            first = st;
            fail_at = mono_s();
        }
    }
    for (size_t k = 0; k < NSIG_FWD; k++)
        sigaction(forwarded_signals[k], &old[k], NULL);
    res->signal = got_signal;
    if (got_signal && stopped)
        ncd__job_report(o, "interrupted by signal %d (%s): %d of %d "
                        "process%s stopped", got_signal,
                        strsignal(got_signal), stopped, n,
                        n == 1 ? "" : "es");
    if (got_signal)
        res->status = 128 + got_signal;
    else
        res->status = status0 ? status0 : first;
}

int ncd__job_fork(struct ncd_ctx *ctx, const struct ncd_job_plan *plan,
                  const struct ncd_job_opts *o, ncd_job_fn fn, void *arg,
                  struct ncd_job_result *res)
{
    int n = plan->nprocs, port = 0;
    int lfd = ncd_sock_listen("127.0.0.1", NULL, 0, SOCK_STREAM, 1024, &port);
    if (lfd < 0) {
        res->error = ncd_fail(ctx, NCD_ESYS,
                              "cannot create the local rendezvous socket: %s",
                              strerror(errno));
        res->status = o->fail_status;
        return 0;
    }
    uint64_t token = ncd__pg_draw_token();
    pid_t *pids = calloc((size_t)n, sizeof *pids);
    if (!pids) {
        close(lfd);
        res->error = NCD_ENOMEM;
        res->status = o->fail_status;
        return 0;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t parent = getpid();
    sigset_t block, oldmask;
    sigemptyset(&block);
    for (size_t k = 0; k < NSIG_FWD; k++)
        sigaddset(&block, forwarded_signals[k]);
    sigprocmask(SIG_BLOCK, &block, &oldmask);
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            free(pids);
            sigprocmask(SIG_SETMASK, &oldmask, NULL);
            rank_main(ctx, plan, o, fn, arg, i, lfd, port, token, parent);
        }
        if (pid < 0) {
            int e = errno;
            sigprocmask(SIG_SETMASK, &oldmask, NULL);
            for (int j = 0; j < i; j++)
                kill(pids[j], SIGTERM);
            for (int j = 0; j < i; j++)
                waitpid(pids[j], NULL, 0);
            free(pids);
            close(lfd);
            res->error = ncd_fail(ctx, NCD_ESYS, "fork: %s", strerror(e));
            res->status = o->fail_status;
            return 0;
        }
        pids[i] = pid;
    }
    close(lfd);
    watch(o, pids, n, &oldmask, res);
    free(pids);
    return 0;
}
