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

/* The child: pipes on 1 and 2, /dev/null on 0, then execve. */
static void child(const struct ncd_spawn_opts *o, char **env, int out_w,
                  int err_w)
{
    dup2(out_w, STDOUT_FILENO);
    dup2(err_w, STDERR_FILENO);
    int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (nul >= 0)
        dup2(nul, STDIN_FILENO);
    /* the parent's handlers do not survive execve; SIG_IGN would */
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    execve(o->path, o->argv, env);
    const char *why = strerror(errno);
    (void)!write(STDERR_FILENO, "cannot run ", 11);
    (void)!write(STDERR_FILENO, o->path, strlen(o->path));
    (void)!write(STDERR_FILENO, ": ", 2);
    (void)!write(STDERR_FILENO, why, strlen(why));
    (void)!write(STDERR_FILENO, "\n", 1);
    _exit(127);
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
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0)
        child(o, env, po[1], pe[1]);
    int fork_errno = errno;
    close(po[1]);
    close(pe[1]);
    free_env(env, owned);
    if (pid < 0) {
        close(po[0]);
        close(pe[0]);
        return ncd_fail(ctx, NCD_ESYS, "fork: %s", strerror(fork_errno));
    }
    r->pid = pid;
    ncd_sock_set_nonblock(po[0]);
    ncd_sock_set_nonblock(pe[0]);
    struct pollfd pf[2] = {{.fd = po[0], .events = POLLIN},
                           {.fd = pe[0], .events = POLLIN}};
    struct ncd_rdbuf *bufs[2] = {&r->out, &r->err};
    double start = ncd_sock_now(), exited_at = 0, term_at = 0;
    int ws = 0, exited = 0, open_fds = 2, killed = 0;
    r->end = NCD_SPAWN_EXITED;
    for (;;) {
        if (!exited && waitpid(pid, &ws, WNOHANG) == pid) {
            exited = 1;
            exited_at = ncd_sock_now();
        }
        /* pipes drained (or grandchildren kept them open for 1 s) */
        if (exited && (open_fds == 0 || ncd_sock_now() - exited_at > 1.0))
            break;
        double now = ncd_sock_now();
        if (!exited && !killed && o->timeout_ms > 0 &&
            now - start > o->timeout_ms / 1000.0) {
            kill(pid, SIGKILL);
            killed = 1;
            r->end = NCD_SPAWN_TIMED_OUT;
        }
        if (!exited && !killed && o->cancel && atomic_load(o->cancel)) {
            if (!term_at) {
                kill(pid, SIGTERM);
                term_at = now;
                r->end = NCD_SPAWN_CANCELLED;
            } else if (now - term_at > 1.0) {
                kill(pid, SIGKILL);
                killed = 1;
            }
        }
        int pr = poll(pf, 2, open_fds ? 50 : 0);
        if (pr < 0 && errno != EINTR)
            break;
        if (pr <= 0) {
            if (!open_fds) {
                struct timespec nap = {0, 20 * 1000 * 1000};
                nanosleep(&nap, NULL);
            }
            continue;
        }
        for (int i = 0; i < 2; i++) {
            if (pf[i].fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            ssize_t n = ncd_rdbuf_fill(bufs[i], pf[i].fd);
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
    if (!exited)
        waitpid(pid, &ws, 0);
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
