/* SPDX-License-Identifier: MIT */
/*
 * One child program with a timeout, cancellation and captured output
 * (include/ncd/job.h, ncd_spawn).  The environment is built before fork()
 * so the child only calls async-signal-safe functions before execve().
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "ncd/error.h"
#include "ncd/job.h"
#include "ncd/sock.h"

extern char **environ;

/* base + vars: a new NULL-terminated array (strings of base are shared,
 * the "NAME=value" of vars are allocated; all freed by free_env). */
static char **build_env(char *const *base, const struct ncd_spawn_var *vars,
                        int nvars, char ***owned)
{
    size_t nb = 0;
    while (base && base[nb])
        nb++;
    char **env = calloc(nb + (size_t)nvars + 1, sizeof *env);
    *owned = calloc((size_t)nvars + 1, sizeof **owned);
    if (!env || !*owned) {
        free(env);
        free(*owned);
        return NULL;
    }
    size_t n = 0, no = 0;
    for (size_t i = 0; i < nb; i++)
        env[n++] = base[i];
    for (int v = 0; v < nvars; v++) {
        size_t kl = strlen(vars[v].name);
        size_t k = 0;
        for (size_t i = 0; i < n; i++) /* drop the old definition */
            if (!(strncmp(env[i], vars[v].name, kl) == 0 && env[i][kl] == '='))
                env[k++] = env[i];
        n = k;
        if (!vars[v].value)
            continue;
        char *kv = malloc(kl + strlen(vars[v].value) + 2);
        if (!kv) {
            for (size_t i = 0; i < no; i++)
                free((*owned)[i]);
            free(*owned);
            free(env);
            return NULL;
        }
        sprintf(kv, "%s=%s", vars[v].name, vars[v].value);
        (*owned)[no++] = kv;
        env[n++] = kv;
    }
    env[n] = NULL;
    return env;
}

static void free_env(char **env, char **owned)
{
    for (size_t i = 0; owned && owned[i]; i++)
        free(owned[i]);
    free(owned);
    free(env);
}

/* Signals passed on to the child with forward_signals. */
static const int fwd_sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1,
                               SIGUSR2};
#define NFWD (sizeof fwd_sigs / sizeof fwd_sigs[0])

/* Counts of forwarded signals received and not yet passed on. */
static volatile sig_atomic_t fwd_pending[NFWD];

static void on_fwd_signal(int sig)
{
    for (size_t k = 0; k < NFWD; k++)
        if (fwd_sigs[k] == sig)
            fwd_pending[k]++;
}

static void on_sigchld(int sig)
{
    (void)sig; /* wakes ppoll() */
}

/* What the parent changed for the run, to undo in the child and after. */
struct sigstate {
    int active;                  /* handlers installed */
    sigset_t oldmask;            /* the caller's mask */
    struct sigaction old[NFWD];  /* the caller's dispositions */
    int caught[NFWD];            /* 1: our handler replaced old[k] */
    struct sigaction oldchld;
};

/* The child: pipes on 1 and 2 (stdin /dev/null unless passthrough), its
 * own group, the terminal, the caller's signal state, then execve. */
static void child(const struct ncd_spawn_opts *o, char **env, int out_w,
                  int err_w, const struct sigstate *ss, int take_tty)
{
    if (o->own_group)
        setpgid(0, 0);
    if (take_tty) {
        /* as a job-control shell does: signals stay blocked (SIGTTOU too)
         * while the terminal changes hands */
        sigset_t tt;
        sigemptyset(&tt);
        sigaddset(&tt, SIGTTOU);
        sigprocmask(SIG_BLOCK, &tt, NULL);
        tcsetpgrp(STDIN_FILENO, getpgrp());
    }
    dup2(out_w, STDOUT_FILENO);
    dup2(err_w, STDERR_FILENO);
    if (!o->passthrough) {
        int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (nul >= 0)
            dup2(nul, STDIN_FILENO);
    }
    if (ss->active) {
        /* the caller's dispositions (an ignored SIGHUP under nohup stays
         * ignored); a signal pending here is then delivered as it would
         * be after execve */
        for (size_t k = 0; k < NFWD; k++)
            if (ss->caught[k])
                sigaction(fwd_sigs[k], &ss->old[k], NULL);
        sigaction(SIGCHLD, &ss->oldchld, NULL);
        sigprocmask(SIG_SETMASK, &ss->oldmask, NULL);
    } else {
        /* the parent's handlers do not survive execve; SIG_IGN would */
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        signal(SIGPIPE, SIG_DFL);
        sigprocmask(SIG_SETMASK, &ss->oldmask, NULL);
    }
    execve(o->path, o->argv, env);
    const char *why = strerror(errno);
    (void)!write(STDERR_FILENO, "cannot run ", 11);
    (void)!write(STDERR_FILENO, o->path, strlen(o->path));
    (void)!write(STDERR_FILENO, ": ", 2);
    (void)!write(STDERR_FILENO, why, strlen(why));
    (void)!write(STDERR_FILENO, "\n", 1);
    _exit(127);
}

/* Installs the forwarding handlers with the signals blocked (they are
 * delivered in ppoll(), never between a check and a wait). */
static void sig_install(const struct ncd_spawn_opts *o, struct sigstate *ss)
{
    memset(ss, 0, sizeof *ss);
    sigset_t block;
    sigemptyset(&block);
    if (o->forward_signals) {
        for (size_t k = 0; k < NFWD; k++)
            sigaddset(&block, fwd_sigs[k]);
        sigaddset(&block, SIGCHLD);
    }
    if (o->passthrough)
        sigaddset(&block, SIGPIPE); /* a closed reader: EPIPE, no death */
    sigprocmask(SIG_BLOCK, &block, &ss->oldmask);
    if (!o->forward_signals)
        return;
    ss->active = 1;
    struct sigaction sa = {.sa_handler = on_fwd_signal};
    sigemptyset(&sa.sa_mask);
    for (size_t k = 0; k < NFWD; k++) {
        fwd_pending[k] = 0;
        sigaction(fwd_sigs[k], NULL, &ss->old[k]);
        if (ss->old[k].sa_handler == SIG_IGN)
            continue;
        sigaction(fwd_sigs[k], &sa, NULL);
        ss->caught[k] = 1;
    }
    struct sigaction sc = {.sa_handler = on_sigchld,
                           .sa_flags = SA_NOCLDSTOP};
    sigemptyset(&sc.sa_mask);
    sigaction(SIGCHLD, &sc, &ss->oldchld);
}

/* Undoes sig_install; a SIGPIPE our writes raised is discarded. */
static void sig_restore(const struct ncd_spawn_opts *o, struct sigstate *ss)
{
    if (ss->active) {
        for (size_t k = 0; k < NFWD; k++)
            if (ss->caught[k])
                sigaction(fwd_sigs[k], &ss->old[k], NULL);
        sigaction(SIGCHLD, &ss->oldchld, NULL);
    }
    if (o->passthrough && !sigismember(&ss->oldmask, SIGPIPE)) {
        sigset_t pipe_only;
        sigemptyset(&pipe_only);
        sigaddset(&pipe_only, SIGPIPE);
        struct timespec zero = {0, 0};
        while (sigtimedwait(&pipe_only, NULL, &zero) == SIGPIPE)
            ;
    }
    sigprocmask(SIG_SETMASK, &ss->oldmask, NULL);
}

/* Writes all of buf to fd (blocking semantics, also on a non-blocking
 * fd).  0, or the errno of the failure. */
static int write_all(int fd, const char *buf, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, buf, n);
        if (w > 0) {
            buf += w;
            n -= (size_t)w;
        } else if (w < 0 && errno == EAGAIN) {
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            poll(&p, 1, 100);
        } else if (w < 0 && errno != EINTR) {
            return errno;
        }
    }
    return 0;
}

/* Passthrough: one chunk of stream i to its pass-through fd and log. */
static void copy_chunk(const char *buf, size_t n, int *pass, int *log,
                       struct ncd_spawn_result *r)
{
    if (*log >= 0) {
        int e = write_all(*log, buf, n);
        if (e) {
            if (!r->log_errno)
                r->log_errno = e;
            *log = -1;
        }
    }
    if (*pass >= 0 && write_all(*pass, buf, n))
        *pass = -1;
}

/* Sends the signals received since the last call on to the child. */
static void forward_pending(pid_t target, struct ncd_spawn_result *r)
{
    for (size_t k = 0; k < NFWD; k++)
        while (fwd_pending[k] > 0) {
            fwd_pending[k]--;
            kill(target, fwd_sigs[k]);
            if (!r->forwarded++)
                r->first_forwarded = fwd_sigs[k];
        }
}

/* The terminal to hand over: stdin when it is our controlling terminal
 * and we are its foreground group; -1 otherwise. */
static int foreground_tty(const struct ncd_spawn_opts *o)
{
    if (!o->foreground || !o->own_group || !isatty(STDIN_FILENO))
        return -1;
    return tcgetpgrp(STDIN_FILENO) == getpgrp() ? STDIN_FILENO : -1;
}

/* Gives the terminal to group pg (SIGTTOU blocked: we may be in the
 * background when taking it back). */
static void give_tty(int tty, pid_t pg)
{
    sigset_t tt, old;
    sigemptyset(&tt);
    sigaddset(&tt, SIGTTOU);
    sigprocmask(SIG_BLOCK, &tt, &old);
    tcsetpgrp(tty, pg);
    sigprocmask(SIG_SETMASK, &old, NULL);
}

int ncd_spawn(struct ncd_ctx *ctx, const struct ncd_spawn_opts *o,
              struct ncd_spawn_result *r)
{
    size_t max = o->max_output;
    memset(r, 0, sizeof *r);
    r->out.max = r->err.max = max;
    char **owned = NULL;
    char **env = build_env(o->envp ? o->envp : environ, o->vars, o->nvars,
                           &owned);
    if (!env)
        return NCD_ENOMEM;
    int po[2] = {-1, -1}, pe[2] = {-1, -1};
    if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0) {
        int e = errno;
        for (int i = 0; i < 2; i++) {
            if (po[i] >= 0)
                close(po[i]);
            if (pe[i] >= 0)
                close(pe[i]);
        }
        free_env(env, owned);
        return ncd_fail(ctx, NCD_ESYS, "pipe: %s", strerror(e));
    }
    int tty = foreground_tty(o);
    struct sigstate ss;
    sig_install(o, &ss);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0)
        child(o, env, po[1], pe[1], &ss, tty >= 0);
    int fork_errno = errno;
    close(po[1]);
    close(pe[1]);
    free_env(env, owned);
    if (pid < 0) {
        sig_restore(o, &ss);
        close(po[0]);
        close(pe[0]);
        return ncd_fail(ctx, NCD_ESYS, "fork: %s", strerror(fork_errno));
    }
    r->pid = pid;
    pid_t target = pid;
    if (o->own_group) {
        setpgid(pid, pid); /* also here: no race with a forwarded signal */
        target = -pid;
        if (tty >= 0)
            give_tty(tty, pid);
    }
    ncd_sock_set_nonblock(po[0]);
    ncd_sock_set_nonblock(pe[0]);
    struct pollfd pf[2] = {{.fd = po[0], .events = POLLIN},
                           {.fd = pe[0], .events = POLLIN}};
    struct ncd_rdbuf *bufs[2] = {&r->out, &r->err};
    int pass[2] = {o->passthrough ? o->out_fd : -1,
                   o->passthrough ? o->err_fd : -1};
    int logs[2] = {o->passthrough ? o->log_out_fd : -1,
                   o->passthrough ? o->log_err_fd : -1};
    /* the mask during the wait: the caller's, without what we handle */
    sigset_t waitmask = ss.oldmask;
    if (ss.active) {
        for (size_t k = 0; k < NFWD; k++)
            sigdelset(&waitmask, fwd_sigs[k]);
        sigdelset(&waitmask, SIGCHLD);
    }
    sigaddset(&waitmask, SIGPIPE);
    if (!o->passthrough && !sigismember(&ss.oldmask, SIGPIPE))
        sigdelset(&waitmask, SIGPIPE);
    double start = ncd_sock_now(), exited_at = 0, term_at = 0;
    double tmo_term_at = 0;
    int ws = 0, exited = 0, open_fds = 2, killed = 0;
    r->end = NCD_SPAWN_EXITED;
    for (;;) {
        if (ss.active && !exited)
            forward_pending(target, r);
        if (!exited) {
            int st;
            pid_t w = waitpid(pid, &st, WNOHANG | (tty >= 0 ? WUNTRACED : 0));
            if (w == pid && WIFSTOPPED(st)) {
                /* Ctrl-Z: stop with the child, as a shell job would */
                give_tty(tty, getpgrp());
                kill(getpid(), SIGSTOP);
                give_tty(tty, pid);
                kill(-pid, SIGCONT);
            } else if (w == pid) {
                ws = st;
                exited = 1;
                exited_at = ncd_sock_now();
                if (tty >= 0)
                    give_tty(tty, getpgrp());
            }
        }
        /* pipes drained (or grandchildren kept them open for 1 s) */
        if (exited && (open_fds == 0 || ncd_sock_now() - exited_at > 1.0))
            break;
        double now = ncd_sock_now();
        if (!exited && !killed && o->timeout_ms > 0 &&
            now - start > o->timeout_ms / 1000.0) {
            r->end = NCD_SPAWN_TIMED_OUT;
            if (o->kill_grace_ms > 0 && !tmo_term_at) {
                kill(target, SIGTERM);
                tmo_term_at = now;
            } else if (!tmo_term_at ||
                       now - tmo_term_at > o->kill_grace_ms / 1000.0) {
                kill(target, SIGKILL);
                killed = 1;
            }
        }
        if (!exited && !killed && o->cancel && atomic_load(o->cancel) &&
            r->end != NCD_SPAWN_TIMED_OUT) {
            if (!term_at) {
                kill(target, SIGTERM);
                term_at = now;
                r->end = NCD_SPAWN_CANCELLED;
            } else if (now - term_at > 1.0) {
                kill(target, SIGKILL);
                killed = 1;
            }
        }
        int wait_ms = open_fds ? 50 : 20;
        struct timespec tmo = {0, (long)wait_ms * 1000000L};
        int pr = ppoll(pf, 2, &tmo, &waitmask);
        if (pr < 0 && errno != EINTR)
            break;
        if (pr <= 0)
            continue;
        for (int i = 0; i < 2; i++) {
            if (pf[i].fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            ssize_t n;
            if (o->passthrough) {
                char chunk[65536];
                n = read(pf[i].fd, chunk, sizeof chunk);
                if (n > 0)
                    copy_chunk(chunk, (size_t)n, &pass[i], &logs[i], r);
            } else {
                n = ncd_rdbuf_fill(bufs[i], pf[i].fd);
            }
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
                close(pf[i].fd);
                pf[i].fd = -1;
                open_fds--;
            }
        }
    }
    for (int i = 0; i < 2; i++)
        if (pf[i].fd >= 0)
            close(pf[i].fd);
    if (!exited) {
        waitpid(pid, &ws, 0);
        if (tty >= 0)
            give_tty(tty, getpgrp());
    }
    sig_restore(o, &ss);
    for (int i = 0; i < 2; i++)
        if (!bufs[i]->data && (bufs[i]->data = calloc(1, 1)) == NULL)
            return NCD_ENOMEM;
    if (r->end == NCD_SPAWN_EXITED && WIFSIGNALED(ws))
        r->end = NCD_SPAWN_SIGNALED;
    r->status = WIFSIGNALED(ws) ? WTERMSIG(ws) : WEXITSTATUS(ws);
    return 0;
}

void ncd_spawn_result_release(struct ncd_spawn_result *r)
{
    if (!r)
        return;
    ncd_rdbuf_release(&r->out);
    ncd_rdbuf_release(&r->err);
}
