/* SPDX-License-Identifier: MIT */
/*
 * `nccl-doctor run -- CMD`: the log directory, the environment, running
 * the command through the job runner's ncd_spawn() in pass-through mode,
 * and the record of the run (include/ncd/run.h).  Live only: it runs a
 * program and writes files in this file system, never through a sysroot.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ncd/error.h"
#include "ncd/fs.h"
#include "ncd/gather.h"
#include "ncd/report.h"
#include "ncd/run.h"
#include "ncd/sock.h"
#include "ncd/strbuf.h"
#include "ncd/sysops.h"

/* ---- the launcher ------------------------------------------------------- */

static const char *base_name(const char *s)
{
    const char *b = strrchr(s, '/');
    return b ? b + 1 : s;
}

/* python, python3, python3.11 */
static int is_python(const char *w)
{
    return strncmp(base_name(w), "python", 6) == 0;
}

const char *ncd_run_detect(char *const *argv, int *pytorch)
{
    static const char *const torch_words[] = {"torchrun", "accelerate",
                                              "deepspeed", NULL};
    static const char *const torch_mods[] = {"torch.distributed.run",
                                             "torch.distributed.launch",
                                             "accelerate.commands.launch",
                                             NULL};
    static const char *const mpi_words[] = {"mpirun", "mpiexec", "orterun",
                                            "prterun", "mpiexec.hydra", NULL};
    const char *found = NULL;
    *pytorch = 0;
    for (int i = 0; argv && argv[i]; i++) {
        const char *b = base_name(argv[i]);
        for (int k = 0; torch_words[k]; k++)
            if (!strcmp(b, torch_words[k])) {
                *pytorch = 1;
                return "torchrun";
            }
        if (!strcmp(b, "fleetrun"))
            return "paddle.distributed.launch";
        if (is_python(argv[i]) && argv[i + 1] && !strcmp(argv[i + 1], "-m") &&
            argv[i + 2]) {
            for (int k = 0; torch_mods[k]; k++)
                if (!strcmp(argv[i + 2], torch_mods[k])) {
                    *pytorch = 1;
                    return "torchrun";
                }
            if (!strcmp(argv[i + 2], "paddle.distributed.launch"))
                return "paddle.distributed.launch";
        }
        /* the outermost MPI or Slurm launcher is remembered, but a
         * framework launcher under it decides the flight recorder */
        for (int k = 0; !found && mpi_words[k]; k++)
            if (!strcmp(b, mpi_words[k]))
                found = "mpirun";
        if (!found && !strcmp(b, "srun"))
            found = "srun";
        if (!found && is_python(argv[i]))
            found = "python";
    }
    return found ? found : "command";
}

/* ---- the command -------------------------------------------------------- */

static int executable_file(const char *p)
{
    struct stat st;
    if (stat(p, &st) < 0 || !S_ISREG(st.st_mode))
        return 0;
    return access(p, X_OK) == 0 ? 1 : -1;
}

int ncd_run_resolve_cmd(struct ncd_ctx *ctx, const char *cmd, char *out,
                        size_t len)
{
    if (!cmd || !*cmd)
        return ncd_fail(ctx, NCD_ENOENT, "no command given");
    if (strchr(cmd, '/')) {
        int x = executable_file(cmd);
        if (x == 0)
            return ncd_fail(ctx, NCD_ENOENT, "%s: %s", cmd,
                            access(cmd, F_OK) == 0 ? "not a regular file"
                                                   : "No such file or "
                                                     "directory");
        if (x < 0)
            return ncd_fail(ctx, NCD_EPERM, "%s: Permission denied", cmd);
        snprintf(out, len, "%s", cmd);
        return 0;
    }
    const char *path = ncd_getenv(ctx, "PATH");
    if (!path)
        path = "/usr/bin:/bin";
    int denied = 0;
    const char *p = path;
    for (;;) {
        const char *colon = strchr(p, ':');
        size_t n = colon ? (size_t)(colon - p) : strlen(p);
        char cand[PATH_MAX];
        /* an empty PATH entry means the current directory */
        if (snprintf(cand, sizeof cand, "%.*s%s%s", (int)n, p, n ? "/" : "",
                     cmd) < (int)sizeof cand) {
            int x = executable_file(cand);
            if (x > 0) {
                snprintf(out, len, "%s", cand);
                return 0;
            }
            denied |= x < 0;
        }
        if (!colon)
            break;
        p = colon + 1;
    }
    if (denied)
        return ncd_fail(ctx, NCD_EPERM, "%s: Permission denied", cmd);
    return ncd_fail(ctx, NCD_ENOENT, "%s: command not found in PATH", cmd);
}

/* ---- the directory ------------------------------------------------------ */

/* mkdir -p of the parents of `dir` (default modes), then `dir` itself with
 * mode 700.  0, or -1 with errno. */
static int mkdir_p(const char *dir)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s", dir) >= (int)sizeof tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    size_t n = strlen(tmp);
    while (n > 1 && tmp[n - 1] == '/')
        tmp[--n] = '\0';
    for (char *s = tmp + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(tmp, 0777) < 0 && errno != EEXIST)
            return -1;
        *s = '/';
    }
    return mkdir(tmp, 0700);
}

static int dir_is_empty(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    struct dirent *e;
    int empty = 1;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            empty = 0;
            break;
        }
    closedir(d);
    return empty;
}

static int absolute(struct ncd_ctx *ctx, const char *dir, char *out,
                    size_t len)
{
    char real[PATH_MAX];
    if (!realpath(dir, real))
        return ncd_fail(ctx, NCD_ESYS, "%s: %s", dir, strerror(errno));
    if (snprintf(out, len, "%s", real) >= (int)len)
        return ncd_fail(ctx, NCD_ERANGE, "%s: path too long", real);
    return 0;
}

int ncd_run_make_dir(struct ncd_ctx *ctx, const char *asked, char *out,
                     size_t len)
{
    if (asked) {
        struct stat st;
        if (stat(asked, &st) == 0) {
            if (!S_ISDIR(st.st_mode))
                return ncd_fail(ctx, NCD_EINVAL,
                                "--logs %s: exists and is not a directory",
                                asked);
            int e = dir_is_empty(asked);
            if (e < 0)
                return ncd_fail(ctx, NCD_ESYS, "--logs %s: %s", asked,
                                strerror(errno));
            if (!e)
                return ncd_fail(ctx, NCD_EEXISTS,
                                "--logs %s: the directory is not empty; "
                                "give a new or empty one (run never "
                                "mixes its logs with other files), or "
                                "leave --logs out for a fresh "
                                "./nccl-doctor-logs/<time>/",
                                asked);
        } else if (mkdir_p(asked) < 0) {
            return ncd_fail(ctx, NCD_ESYS, "--logs %s: cannot create it: %s",
                            asked, strerror(errno));
        }
        return absolute(ctx, asked, out, len);
    }
    const char *top = "nccl-doctor-logs";
    if (mkdir(top, 0700) < 0 && errno != EEXIST)
        return ncd_fail(ctx, NCD_ESYS, "cannot create ./%s: %s", top,
                        strerror(errno));
    char stamp[32], suffix[32] = "";
    time_t t = time(NULL);
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    struct ncd_launch ln;
    if (ncd_job_detect_launcher(ctx, &ln) == 1)
        snprintf(suffix, sizeof suffix, "-rank%d", ln.rank);
    ncd_ctx_clear_error(ctx);
    char dir[PATH_MAX];
    for (int k = 1; k < 1000; k++) {
        if (k == 1)
            snprintf(dir, sizeof dir, "%s/%s%s", top, stamp, suffix);
        else
            snprintf(dir, sizeof dir, "%s/%s%s.%d", top, stamp, suffix, k);
        if (mkdir(dir, 0700) == 0)
            return absolute(ctx, dir, out, len);
        if (errno != EEXIST)
            return ncd_fail(ctx, NCD_ESYS, "cannot create ./%s: %s", dir,
                            strerror(errno));
    }
    return ncd_fail(ctx, NCD_EEXISTS, "./%s/%s%s.*: every name is taken",
                    top, stamp, suffix);
}

/* ---- the environment ---------------------------------------------------- */

/* One row: the names the user may have set (the first is the one run sets
 * when none is), and the value (printf format with the directory). */
struct env_row {
    const char *names[3];
    const char *value;
    int pytorch; /* 1: only with a PyTorch launcher */
    int nccl_path; /* 1: the directory as NCCL reads it ('%' doubled) */
};

static const struct env_row env_rows[] = {
    {{"NCCL_DEBUG"}, "INFO", 0, 0},
    {{"NCCL_DEBUG_SUBSYS"}, "INIT,BOOTSTRAP,ENV,NET,GRAPH", 0, 0},
    {{"NCCL_DEBUG_FILE"}, "%s/nccl.%%h.%%p.log", 0, 1},
    /* the flight recorder: both names of a row are set, since which one a
     * PyTorch reads depends on its version */
    {{"TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE"}, "2000", 1, 0},
    {{"TORCH_NCCL_DUMP_ON_TIMEOUT"}, "1", 1, 0},
    {{"TORCH_FR_DUMP_TEMP_FILE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE"},
     "%s/torch-fr-rank", 1, 0},
};

/* The directory with each '%' doubled (NCCL_DEBUG_FILE expands %h, %p
 * and %%, NCCL src/debug.cc). */
static void nccl_escape(const char *dir, char *out, size_t len)
{
    size_t o = 0;
    for (; *dir && o + 2 < len; dir++) {
        if (*dir == '%')
            out[o++] = '%';
        out[o++] = *dir;
    }
    out[o] = '\0';
}

void ncd_run_env(struct ncd_ctx *ctx, struct ncd_run_plan *plan)
{
    char esc[PATH_MAX];
    nccl_escape(plan->dir, esc, sizeof esc);
    plan->nvars = 0;
    for (size_t i = 0; i < sizeof env_rows / sizeof env_rows[0]; i++) {
        const struct env_row *r = &env_rows[i];
        if (r->pytorch && !plan->pytorch)
            continue;
        int user = 0;
        for (int k = 0; k < 3 && r->names[k]; k++)
            user |= ncd_getenv(ctx, r->names[k]) != NULL;
        for (int k = 0; k < 3 && r->names[k]; k++) {
            if (plan->nvars == NCD_RUN_MAX_VARS)
                return;
            struct ncd_run_var *v = &plan->vars[plan->nvars++];
            v->name = r->names[k];
            v->kept = user;
            if (user) {
                const char *cur = ncd_getenv(ctx, r->names[k]);
                snprintf(v->value, sizeof v->value, "%s", cur ? cur : "");
                if (!cur) /* an alias of a name the user set: untouched */
                    plan->nvars--;
                continue;
            }
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
            snprintf(v->value, sizeof v->value, r->value,
                     r->nccl_path ? esc : plan->dir);
#pragma GCC diagnostic pop
        }
    }
}

int ncd_run_prepare(struct ncd_ctx *ctx, char *const *argv,
                    const struct ncd_run_opts *o, struct ncd_run_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    plan->argv = argv;
    int rc = ncd_run_resolve_cmd(ctx, argv ? argv[0] : NULL, plan->path,
                                 sizeof plan->path);
    if (rc)
        return rc;
    plan->launcher = ncd_run_detect(argv, &plan->pytorch);
    rc = ncd_run_make_dir(ctx, o->logs, plan->dir, sizeof plan->dir);
    if (rc)
        return rc;
    ncd_run_env(ctx, plan);
    return 0;
}

/* ---- running ------------------------------------------------------------ */

static int open_new(struct ncd_ctx *ctx, const char *dir, const char *name,
                    int *fd)
{
    char p[PATH_MAX + 32];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    *fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (*fd >= 0)
        return 0;
    return ncd_fail(ctx, errno == EEXIST ? NCD_EEXISTS : NCD_ESYS, "%s: %s",
                    p, strerror(errno));
}

static void write_record(const struct ncd_run_plan *plan,
                         const struct ncd_run_result *res)
{
    json_t *j = ncd_run_json(plan, res);
    if (!j)
        return;
    char *text = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(j);
    if (!text)
        return;
    char p[PATH_MAX + 32];
    snprintf(p, sizeof p, "%s/run.json", plan->dir);
    int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
                  0600);
    if (fd >= 0) {
        size_t n = strlen(text);
        (void)!write(fd, text, n);
        (void)!write(fd, "\n", 1);
        close(fd);
    }
    free(text);
}

int ncd_run_exec(struct ncd_ctx *ctx, const struct ncd_run_plan *plan,
                 const struct ncd_run_opts *o, struct ncd_run_result *res)
{
    memset(res, 0, sizeof *res);
    int lo = -1, le = -1;
    int rc = open_new(ctx, plan->dir, "stdout.log", &lo);
    if (!rc)
        rc = open_new(ctx, plan->dir, "stderr.log", &le);
    if (rc) {
        if (lo >= 0)
            close(lo);
        return rc;
    }
    struct ncd_spawn_var vars[NCD_RUN_MAX_VARS];
    int nv = 0;
    for (int i = 0; i < plan->nvars; i++)
        if (!plan->vars[i].kept)
            vars[nv++] = (struct ncd_spawn_var){plan->vars[i].name,
                                                plan->vars[i].value};
    struct ncd_spawn_opts so = {.path = plan->path,
                                .argv = plan->argv,
                                .vars = vars,
                                .nvars = nv,
                                .timeout_ms = o->timeout_s * 1000,
                                .kill_grace_ms = 10000,
                                .passthrough = 1,
                                .out_fd = o->out_fd,
                                .err_fd = o->err_fd,
                                .log_out_fd = lo,
                                .log_err_fd = le,
                                .own_group = 1,
                                .forward_signals = 1,
                                .foreground = o->interactive};
    time_t t = time(NULL);
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(res->started, sizeof res->started, "%Y-%m-%dT%H:%M:%S", &tm);
    double t0 = ncd_sock_now();
    rc = ncd_spawn(ctx, &so, &res->spawn);
    res->seconds = ncd_sock_now() - t0;
    close(lo);
    close(le);
    if (rc)
        return rc;
    const struct ncd_spawn_result *s = &res->spawn;
    switch (s->end) {
    case NCD_SPAWN_TIMED_OUT:
        res->status = 124;
        break;
    case NCD_SPAWN_SIGNALED:
        res->status = 128 + s->status;
        break;
    default:
        res->status = s->status;
    }
    res->failed = res->status != 0;
    write_record(plan, res);
    return 0;
}

void ncd_run_result_release(struct ncd_run_result *res)
{
    if (res)
        ncd_spawn_result_release(&res->spawn);
}

/* ---- the record --------------------------------------------------------- */

/* The name part of "--name=value", "-name", "NAME=value"; copied. */
static void word_name(const char *w, size_t n, char *out, size_t len)
{
    while (n && *w == '-') {
        w++;
        n--;
    }
    snprintf(out, len, "%.*s", (int)n, w);
}

int ncd_run_redact_word(const char *word, int after_secret_opt, char *out,
                        size_t len)
{
    char name[256];
    if (after_secret_opt) {
        snprintf(out, len, "<redacted>");
        return 0;
    }
    const char *eq = strchr(word, '=');
    if (eq) {
        word_name(word, (size_t)(eq - word), name, sizeof name);
        if (name[0] && ncd_env_is_secret(name)) {
            snprintf(out, len, "%.*s=<redacted>", (int)(eq - word), word);
            return 0;
        }
    }
    /* credentials in a URL or host spec anywhere in the word */
    struct ncd_strbuf sb = {0};
    ncd_env_redact(NULL, word, &sb);
    snprintf(out, len, "%s",
             sb.oom ? "<redacted>" : sb.buf ? sb.buf : "");
    ncd_sb_release(&sb);
    if (eq)
        return 0;
    if (word[0] != '-')
        return 0;
    word_name(word, strlen(word), name, sizeof name);
    return name[0] && ncd_env_is_secret(name);
}

static const char *end_name(enum ncd_spawn_end e)
{
    switch (e) {
    case NCD_SPAWN_SIGNALED:
        return "signaled";
    case NCD_SPAWN_TIMED_OUT:
        return "timed-out";
    case NCD_SPAWN_CANCELLED:
        return "cancelled";
    default:
        return "exited";
    }
}

json_t *ncd_run_json(const struct ncd_run_plan *plan,
                     const struct ncd_run_result *res)
{
    json_t *j = json_object(), *cmd = json_array(), *set = json_object(),
           *kept = json_array();
    if (!j || !cmd || !set || !kept) {
        json_decref(j);
        json_decref(cmd);
        json_decref(set);
        json_decref(kept);
        return NULL;
    }
    int secret_next = 0;
    for (int i = 0; plan->argv && plan->argv[i]; i++) {
        char w[4096];
        secret_next = ncd_run_redact_word(plan->argv[i], secret_next, w,
                                          sizeof w);
        json_array_append_new(cmd, ncd_json_string(w));
    }
    for (int i = 0; i < plan->nvars; i++) {
        if (plan->vars[i].kept)
            json_array_append_new(kept, json_string(plan->vars[i].name));
        else
            json_object_set_new(set, plan->vars[i].name,
                                ncd_json_string(plan->vars[i].value));
    }
    json_object_set_new(j, "command", cmd);
    json_object_set_new(j, "path", ncd_json_string(plan->path));
    json_object_set_new(j, "launcher", json_string(plan->launcher));
    json_object_set_new(j, "logs", ncd_json_string(plan->dir));
    json_object_set_new(j, "env_set", set);
    json_object_set_new(j, "env_kept", kept);
    if (!res)
        return j;
    const struct ncd_spawn_result *s = &res->spawn;
    json_object_set_new(j, "started", json_string(res->started));
    json_object_set_new(j, "seconds", json_real(res->seconds));
    json_object_set_new(j, "exit_status", json_integer(res->status));
    json_object_set_new(j, "end", json_string(end_name(s->end)));
    json_object_set_new(j, "signal",
                        s->end == NCD_SPAWN_EXITED ? json_null()
                                                   : json_integer(s->status));
    json_object_set_new(j, "forwarded_signals", json_integer(s->forwarded));
    json_object_set_new(j, "log_error",
                        s->log_errno ? json_string(strerror(s->log_errno))
                                     : json_null());
    return j;
}

/* ---- explain ------------------------------------------------------------ */

static int is_log(const char *name)
{
    size_t n = strlen(name);
    return name[0] != '.' && n > 4 && strcmp(name + n - 4, ".log") == 0;
}

static int cmp_nat(const void *a, const void *b)
{
    return ncd_natcmp(*(char *const *)a, *(char *const *)b);
}

int ncd_run_explain_feed(struct ncd_ctx *ctx, const char *dir,
                         struct ncd_explain *ex,
                         struct ncd_explain_inputs *in)
{
    (void)ctx;
    DIR *d = opendir(dir);
    if (!d) {
        char msg[PATH_MAX + 64];
        snprintf(msg, sizeof msg, "%s: %s", dir, strerror(errno));
        if (in->problem)
            in->problem(in->arg, msg);
        in->nfailed++;
        return NCD_ESYS;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d)) != NULL) {
        if (!is_log(e->d_name))
            continue;
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            char **nn = realloc(names, nc * sizeof *nn);
            if (!nn) {
                rc = NCD_ENOMEM;
                break;
            }
            names = nn;
            cap = nc;
        }
        if (!(names[n] = strdup(e->d_name))) {
            rc = NCD_ENOMEM;
            break;
        }
        n++;
    }
    closedir(d);
    if (!rc)
        qsort(names, n, sizeof *names, cmp_nat);
    for (size_t i = 0; !rc && i < n; i++) {
        char p[PATH_MAX + 256];
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        struct stat st;
        if (lstat(p, &st) < 0 || !S_ISREG(st.st_mode))
            continue; /* only what run and NCCL wrote: no links, FIFOs */
        int r = ncd_explain_feed_path(ex, p, in);
        if (r == NCD_ENOMEM)
            rc = r;
        else if (r)
            rc = rc ? rc : r;
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc;
}
