/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "ncd/ctx.h"
#include "core/ctx_internal.h"
#include "ncd/error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct ncd_env_var {
    char *name;
    char *value;
};

struct ncd_ctx {
    char *sysroot;
    int rootfd;
    int live;
    struct ncd_env_var *env;
    size_t nenv, capenv;
    int errcode;
    char errbuf[1024];
    void (*on_free)(void *); /* ncd_ctx_on_free() */
    void *on_free_arg;
    const struct ncd_sysops *ops; /* ncd_ctx_set_sysops(), NULL: default */
    ncd_fs_trace_fn trace;
    void *trace_arg;
    int sysop_depth;
    void *sys_state;
    void (*sys_release)(void *);
    void *sys_memo; /* answers the sys layer computes once; free() */
    struct ncd__fs_cache *fs_cache; /* fs.c: files read in this context */
};

static int env_find(const struct ncd_ctx *ctx, const char *name)
{
    for (size_t i = 0; i < ctx->nenv; i++)
        if (strcmp(ctx->env[i].name, name) == 0)
            return (int)i;
    return -1;
}

static int env_append(struct ncd_ctx *ctx, const char *name, size_t nlen,
                      const char *value)
{
    if (ctx->nenv == ctx->capenv) {
        size_t nc = ctx->capenv ? ctx->capenv * 2 : 32;
        struct ncd_env_var *nv = realloc(ctx->env, nc * sizeof *nv);
        if (!nv)
            return NCD_ENOMEM;
        ctx->env = nv;
        ctx->capenv = nc;
    }
    char *n = strndup(name, nlen);
    char *v = strdup(value);
    if (!n || !v) {
        free(n);
        free(v);
        return NCD_ENOMEM;
    }
    ctx->env[ctx->nenv].name = n;
    ctx->env[ctx->nenv].value = v;
    ctx->nenv++;
    return 0;
}

static void env_free(struct ncd_env_var *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(v[i].name);
        free(v[i].value);
    }
    free(v);
}

/* Appends the NAME=value entries of envp to ctx's copy; first wins. */
static int env_add_all(struct ncd_ctx *ctx, char *const *envp)
{
    for (size_t i = 0; envp && envp[i]; i++) {
        const char *eq = strchr(envp[i], '=');
        if (!eq || eq == envp[i])
            continue;
        size_t nlen = (size_t)(eq - envp[i]);
        /* First definition wins, as getenv() does. */
        int dup = 0;
        for (size_t j = 0; j < ctx->nenv && !dup; j++)
            dup = strlen(ctx->env[j].name) == nlen &&
                  memcmp(ctx->env[j].name, envp[i], nlen) == 0;
        if (!dup && env_append(ctx, envp[i], nlen, eq + 1) < 0)
            return NCD_ENOMEM;
    }
    return 0;
}

int ncd_ctx_new(const char *sysroot, char *const *envp, struct ncd_ctx **out)
{
    *out = NULL;
    struct ncd_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return NCD_ENOMEM;
    if (!sysroot || !*sysroot)
        sysroot = "/";
    ctx->sysroot = strdup(sysroot);
    if (!ctx->sysroot) {
        free(ctx);
        return NCD_ENOMEM;
    }
    ctx->rootfd = open(sysroot, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (ctx->rootfd < 0) {
        int e = errno;
        free(ctx->sysroot);
        free(ctx);
        return ncd_err_from_errno(e) == NCD_EPERM ? NCD_EPERM : NCD_ENOENT;
    }
    /* "/" spelled any way ("//", "/./") is still this machine. */
    char *rp = realpath(sysroot, NULL);
    ctx->live = rp && strcmp(rp, "/") == 0;
    free(rp);
    if (env_add_all(ctx, envp) < 0) {
        ncd_ctx_free(ctx);
        return NCD_ENOMEM;
    }
    *out = ctx;
    return 0;
}

void ncd_ctx_free(struct ncd_ctx *ctx)
{
    if (!ctx)
        return;
    if (ctx->rootfd >= 0)
        close(ctx->rootfd);
    if (ctx->on_free)
        ctx->on_free(ctx->on_free_arg);
    if (ctx->sys_release)
        ctx->sys_release(ctx->sys_state);
    free(ctx->sys_memo);
    ncd__fs_cache_free(ctx->fs_cache);
    env_free(ctx->env, ctx->nenv);
    free(ctx->sysroot);
    free(ctx);
}

struct ncd__fs_cache **ncd__ctx_fs_cache(struct ncd_ctx *ctx)
{
    return &ctx->fs_cache;
}

int ncd_ctx_is_live(const struct ncd_ctx *ctx)
{
    return ctx->live;
}

const char *ncd_ctx_sysroot(const struct ncd_ctx *ctx)
{
    return ctx->sysroot;
}

int ncd_ctx_rootfd(const struct ncd_ctx *ctx)
{
    return ctx->rootfd;
}

const char *ncd_getenv(const struct ncd_ctx *ctx, const char *name)
{
    int i = env_find(ctx, name);
    return i < 0 ? NULL : ctx->env[i].value;
}

int ncd_setenv(struct ncd_ctx *ctx, const char *name, const char *value,
               int overwrite)
{
    if (!name || !*name || strchr(name, '='))
        return NCD_EINVAL;
    int i = env_find(ctx, name);
    if (!value) {
        if (i >= 0) {
            free(ctx->env[i].name);
            free(ctx->env[i].value);
            memmove(&ctx->env[i], &ctx->env[i + 1],
                    (ctx->nenv - (size_t)i - 1) * sizeof ctx->env[0]);
            ctx->nenv--;
        }
        return 0;
    }
    if (i >= 0) {
        if (!overwrite)
            return 0;
        char *v = strdup(value);
        if (!v)
            return NCD_ENOMEM;
        free(ctx->env[i].value);
        ctx->env[i].value = v;
        return 0;
    }
    return env_append(ctx, name, strlen(name), value);
}

size_t ncd_env_count(const struct ncd_ctx *ctx)
{
    return ctx->nenv;
}

void ncd_env_at(const struct ncd_ctx *ctx, size_t i, const char **name,
                const char **value)
{
    *name = ctx->env[i].name;
    *value = ctx->env[i].value;
}

int ncd_ctx_replace_env(struct ncd_ctx *ctx, char *const *envp)
{
    struct ncd_ctx tmp = {0};
    if (env_add_all(&tmp, envp) < 0) {
        env_free(tmp.env, tmp.nenv);
        return NCD_ENOMEM;
    }
    env_free(ctx->env, ctx->nenv);
    ctx->env = tmp.env;
    ctx->nenv = tmp.nenv;
    ctx->capenv = tmp.capenv;
    return (int)tmp.nenv;
}

int ncd_vfail(struct ncd_ctx *ctx, int code, const char *fmt, va_list ap)
{
    if (ctx && ctx->errcode == NCD_OK) {
        ctx->errcode = code;
        vsnprintf(ctx->errbuf, sizeof ctx->errbuf, fmt, ap);
    }
    return code;
}

int ncd_fail(struct ncd_ctx *ctx, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ncd_vfail(ctx, code, fmt, ap);
    va_end(ap);
    return code;
}

const char *ncd_ctx_errdetail(const struct ncd_ctx *ctx)
{
    return ctx->errcode == NCD_OK ? "" : ctx->errbuf;
}

int ncd_ctx_errcode(const struct ncd_ctx *ctx)
{
    return ctx->errcode;
}

void ncd_ctx_clear_error(struct ncd_ctx *ctx)
{
    ctx->errcode = NCD_OK;
    ctx->errbuf[0] = '\0';
}

int ncd_ctx_on_free(struct ncd_ctx *ctx, void (*fn)(void *), void *arg)
{
    if (ctx->on_free)
        return NCD_EEXISTS;
    ctx->on_free = fn;
    ctx->on_free_arg = arg;
    return 0;
}

int ncd_ctx_set_sysroot_label(struct ncd_ctx *ctx, const char *label)
{
    char *l = strdup(label);
    if (!l)
        return NCD_ENOMEM;
    free(ctx->sysroot);
    ctx->sysroot = l;
    return 0;
}

void ncd_ctx_set_sysops(struct ncd_ctx *ctx, const struct ncd_sysops *ops)
{
    ctx->ops = ops;
    free(ctx->sys_memo); /* answers of the previous table */
    ctx->sys_memo = NULL;
}

const struct ncd_sysops *ncd_ctx_sysops(const struct ncd_ctx *ctx)
{
    return ctx->ops;
}

void ncd_ctx_set_fs_trace(struct ncd_ctx *ctx, ncd_fs_trace_fn fn, void *arg)
{
    ctx->trace = fn;
    ctx->trace_arg = arg;
}

void ncd__ctx_fs_traced(struct ncd_ctx *ctx, enum ncd_fs_access what,
                        const char *path)
{
    if (ctx->trace)
        ctx->trace(ctx->trace_arg, what, path, ctx->sysop_depth > 0);
}

void ncd__ctx_sysop_enter(struct ncd_ctx *ctx)
{
    ctx->sysop_depth++;
}

void ncd__ctx_sysop_leave(struct ncd_ctx *ctx)
{
    ctx->sysop_depth--;
}

void *ncd__ctx_sys_state(const struct ncd_ctx *ctx)
{
    return ctx->sys_state;
}

void ncd__ctx_set_sys_state(struct ncd_ctx *ctx, void *state,
                            void (*release)(void *))
{
    ctx->sys_state = state;
    ctx->sys_release = release;
}

void *ncd__ctx_sys_memo(const struct ncd_ctx *ctx)
{
    return ctx->sys_memo;
}

void ncd__ctx_set_sys_memo(struct ncd_ctx *ctx, void *memo)
{
    free(ctx->sys_memo);
    ctx->sys_memo = memo;
}
