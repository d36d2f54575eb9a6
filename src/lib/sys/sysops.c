/* SPDX-License-Identifier: MIT */
/* The system-operations layer: dispatch to the context's table, the trace
 * bracket, and the record table (see ncd/sysops.h). */
#define _GNU_SOURCE
#include "core/ctx_internal.h"
#include "ncd/error.h"
#include "ncd/fs.h"
#include "ncd/resolve.h"
#include "ncd/sysops.h"
#include "sys/sys_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- dispatch --------------------------------------------------------------- */

const struct ncd_sysops *ncd_sys(struct ncd_ctx *ctx)
{
    const struct ncd_sysops *o = ncd_ctx_sysops(ctx);
    if (o)
        return o;
    /* The one branch on live versus capture (HWLOC_FSROOT's is_thissystem). */
    return ncd_ctx_is_live(ctx) ? &ncd__sys_live : &ncd__sys_replay;
}

/* The default table, for members a table leaves unset. */
static const struct ncd_sysops *fallback(struct ncd_ctx *ctx)
{
    return ncd_ctx_is_live(ctx) ? &ncd__sys_live : &ncd__sys_replay;
}

#define OP(ctx, member) \
    (ncd_sys(ctx)->member ? ncd_sys(ctx)->member : fallback(ctx)->member)

/* Runs a call with the trace saying "inside a system operation". */
#define CALL(ctx, expr)                                                       \
    do {                                                                      \
        ncd__ctx_sysop_enter(ctx);                                            \
        rc = (expr);                                                          \
        ncd__ctx_sysop_leave(ctx);                                            \
    } while (0)

void ncd_sys_ifaddrs_release(struct ncd_sys_ifaddrs *a)
{
    free(a->v);
    free(a->link);
    memset(a, 0, sizeof *a);
}

void ncd_nccl_scan_release(struct ncd_nccl_scan *s)
{
    free(s->v);
    memset(s, 0, sizeof *s);
}

int ncd_sys_getifaddrs(struct ncd_ctx *ctx, struct ncd_sys_ifaddrs *out)
{
    int rc;
    memset(out, 0, sizeof *out);
    CALL(ctx, OP(ctx, getifaddrs)(ctx, out));
    if (rc < 0)
        ncd_sys_ifaddrs_release(out);
    return rc;
}

int ncd_sys_statvfs(struct ncd_ctx *ctx, const char *dir,
                    struct ncd_sys_space *out)
{
    int rc;
    memset(out, 0, sizeof *out);
    out->size_bytes = out->avail_bytes = -1;
    CALL(ctx, OP(ctx, statvfs)(ctx, dir, out));
    return rc;
}

int ncd_sys_dlopen(struct ncd_ctx *ctx, const char *soname,
                   struct ncd_dl_probe *out)
{
    int rc;
    memset(out, 0, sizeof *out);
    CALL(ctx, OP(ctx, dlopen)(ctx, soname, out));
    return rc;
}

/* Asked by the version policy and by the library scan: answered once per
 * context (the memo is dropped when the operations table changes). */
struct nccl_memo {
    const struct ncd_sysops *ops;
    struct ncd_nccl_lib lib;
};

int ncd_sys_nccl_version(struct ncd_ctx *ctx, struct ncd_nccl_lib *out)
{
    int rc;
    struct nccl_memo *m = ncd__ctx_sys_memo(ctx);
    if (m && m->ops == ncd_sys(ctx)) {
        *out = m->lib;
        return 0;
    }
    memset(out, 0, sizeof *out);
    CALL(ctx, OP(ctx, nccl_version)(ctx, out));
    if (rc == 0 && (m = malloc(sizeof *m)) != NULL) {
        m->ops = ncd_sys(ctx);
        m->lib = *out;
        ncd__ctx_set_sys_memo(ctx, m);
    }
    return rc;
}

int ncd_sys_nccl_libs(struct ncd_ctx *ctx, ncd_sys_scan_fn scan,
                      struct ncd_nccl_scan *out)
{
    int rc;
    memset(out, 0, sizeof *out);
    out->winner = -1;
    CALL(ctx, OP(ctx, nccl_libs)(ctx, scan, out));
    return rc;
}

int ncd_sys_cuda_driver(struct ncd_ctx *ctx, char *src, size_t srcsz)
{
    int rc;
    if (srcsz)
        src[0] = '\0';
    CALL(ctx, OP(ctx, cuda_driver)(ctx, src, srcsz));
    return rc;
}

int ncd_sys_nvml(struct ncd_ctx *ctx, struct ncd_nvml_answer *out)
{
    int rc;
    memset(out, 0, sizeof *out);
    snprintf(out->source, sizeof out->source, "NVML");
    CALL(ctx, OP(ctx, nvml)(ctx, out));
    return rc;
}

int ncd_sys_nvml_costly(struct ncd_ctx *ctx)
{
    return ncd_sys(ctx)->nvml_costly;
}

int ncd_sys_firewall(struct ncd_ctx *ctx, int timeout_ms, char **buf,
                     size_t *len, char *src, size_t srcsz)
{
    int rc;
    *buf = NULL;
    *len = 0;
    CALL(ctx, OP(ctx, firewall)(ctx, timeout_ms, buf, len, src, srcsz));
    return rc;
}

int ncd_sys_hostname(struct ncd_ctx *ctx, char *buf, size_t len)
{
    int rc;
    buf[0] = '\0';
    CALL(ctx, OP(ctx, hostname)(ctx, buf, len));
    ncd_utf8_sanitize(buf); /* a capture may hold anything; JSON needs UTF-8 */
    return rc;
}

int ncd_sys_identity(struct ncd_ctx *ctx, struct ncd_sys_identity *out)
{
    int rc;
    memset(out, 0, sizeof *out);
    out->uid = -1;
    CALL(ctx, OP(ctx, identity)(ctx, out));
    return rc;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Live and replay alike: the files through the sysroot. */
int ncd__sys_listen_ports_files(struct ncd_ctx *ctx, int **ports);
int ncd__sys_listen_ports_files(struct ncd_ctx *ctx, int **ports)
{
    static const char *const files[] = {"/proc/net/tcp", "/proc/net/tcp6"};
    size_t n = 0;
    int rc = 0;
    for (int i = 0; i < 2 && rc == 0; i++) {
        char *buf;
        size_t len;
        if (ncd_fs_read(ctx, files[i], 16u << 20, &buf, &len) == 0) {
            rc = ncd__listen_ports_parse(buf, len, ports, &n);
            free(buf);
        }
    }
    ncd_ctx_clear_error(ctx);
    if (rc < 0)
        return rc;
    if (n)
        qsort(*ports, n, sizeof **ports, cmp_int);
    return (int)n;
}

int ncd_sys_listen_ports(struct ncd_ctx *ctx, int **ports)
{
    int rc;
    *ports = NULL;
    CALL(ctx, OP(ctx, listen_ports)(ctx, ports));
    if (rc < 0) {
        free(*ports);
        *ports = NULL;
    }
    return rc;
}

int ncd_sys_bind_test(struct ncd_ctx *ctx, int family, const char *addr,
                      int scope_id, int *port)
{
    int rc;
    *port = 0;
    CALL(ctx, OP(ctx, bind_test)(ctx, family, addr, scope_id, port));
    return rc;
}

int ncd_resolve_first(struct ncd_ctx *ctx, const char *name, int timeout_ms,
                      struct ncd_if_addr *out, char *why, size_t whylen)
{
    int rc;
    memset(out, 0, sizeof *out);
    if (why && whylen)
        why[0] = '\0';
    if (timeout_ms <= 0)
        timeout_ms = NCD_RESOLVE_TIMEOUT_MS;
    CALL(ctx, OP(ctx, resolve)(ctx, name, timeout_ms, out, why, whylen));
    return rc;
}

int ncd_sys_answers_visible(struct ncd_ctx *ctx)
{
    int v = ncd_sys(ctx)->answers_visible;
    if (v >= 0)
        return v;
    return ncd_fs_exists(ctx, "/.ncd");
}

const char *ncd_sys_where(struct ncd_ctx *ctx)
{
    const char *w = ncd_sys(ctx)->where;
    return w ? w : fallback(ctx)->where;
}

int ncd_sys_require_live(struct ncd_ctx *ctx, const char *what)
{
    if (ncd_ctx_is_live(ctx))
        return 0;
    return ncd_fail(ctx, NCD_ENOTLIVE, "%s: it cannot run on a recorded "
                                       "sysroot",
                    what);
}

/* ---- recording -------------------------------------------------------------- */

enum rec_id {
    REC_ENV,
    REC_IFADDRS,
    REC_STATVFS,
    REC_DLOPEN,
    REC_NCCL_LIBS,
    REC_NCCL_VERSION,
    REC_NVML,
    REC_NFT,
    REC_SELF,
    REC_RESOLVE,
    REC_GATHER_INFO,
    REC_N
};

static const char *const rec_names[REC_N] = {
    "env",          "ifaddrs", "statvfs", "dlopen",  "nccl-libs",
    "nccl-version", "nvml",    "nft.json", "self",   "resolve",
    "gather-info",
};

struct recorder {
    struct ncd_sysops ops;            /* the record table */
    const struct ncd_sysops *base;    /* live or replay underneath */
    struct ncd_strbuf rec[REC_N];
    int have[REC_N];
    struct ncd_nvml_answer nvml;      /* formatted at the end (+ cuda) */
    int have_nvml, cuda;
    struct ncd_strbuf keys;           /* "\n<kind>:<key>\n" seen */
};

static struct recorder *rec_of(struct ncd_ctx *ctx)
{
    return ncd__ctx_sys_state(ctx);
}

/* Whether `kind:key` was recorded before; marks it.  r->keys holds
 * "\n<kind>:<key>\n" for each (it starts with a newline). */
static int seen(struct recorder *r, const char *kind, const char *key)
{
    char k[600];
    snprintf(k, sizeof k, "\n%s:%s\n", kind, key);
    if (strstr(ncd_sb_str(&r->keys), k))
        return 1;
    ncd_sb_puts(&r->keys, k + 1);
    return 0;
}

static struct ncd_strbuf *rec(struct recorder *r, enum rec_id id)
{
    r->have[id] = 1;
    return &r->rec[id];
}

#define BASE(ctx) (rec_of(ctx)->base)
#define BASEOP(ctx, m) (BASE(ctx)->m ? BASE(ctx)->m : fallback(ctx)->m)

static int rec_getifaddrs(struct ncd_ctx *ctx, struct ncd_sys_ifaddrs *out)
{
    struct recorder *r = rec_of(ctx);
    int rc = BASEOP(ctx, getifaddrs)(ctx, out);
    if (rc == 0 && out->known && !r->have[REC_IFADDRS]) {
        struct ncd_strbuf *sb = rec(r, REC_IFADDRS);
        ncd_sb_puts(sb, "# getifaddrs() order: name family address prefix "
                        "flags\n");
        ncd_ifaddrs_format(sb, out->v, out->n);
    }
    return rc;
}

static int rec_statvfs(struct ncd_ctx *ctx, const char *dir,
                       struct ncd_sys_space *out)
{
    struct recorder *r = rec_of(ctx);
    int rc = BASEOP(ctx, statvfs)(ctx, dir, out);
    if (rc == 0 && out->known && !seen(r, "statvfs", dir))
        ncd__record_statvfs_format(rec(r, REC_STATVFS), dir, out);
    return rc;
}

static int rec_dlopen(struct ncd_ctx *ctx, const char *soname,
                      struct ncd_dl_probe *out)
{
    struct recorder *r = rec_of(ctx);
    int rc = BASEOP(ctx, dlopen)(ctx, soname, out);
    /* one line per name, without spaces (the format splits on them) */
    if (rc == 0 && out->known && !strchr(soname, ' ') && *soname &&
        !seen(r, "dlopen", soname))
        ncd__record_dlopen_format(rec(r, REC_DLOPEN), soname, out);
    return rc;
}

static int rec_nccl_version(struct ncd_ctx *ctx, struct ncd_nccl_lib *out)
{
    struct recorder *r = rec_of(ctx);
    int rc = BASEOP(ctx, nccl_version)(ctx, out);
    if (rc == 0 && out->found && !r->have[REC_NCCL_VERSION])
        ncd__record_nccl_version_format(rec(r, REC_NCCL_VERSION),
                                        out->version);
    return rc;
}

static int rec_nccl_libs(struct ncd_ctx *ctx, ncd_sys_scan_fn scan,
                         struct ncd_nccl_scan *out)
{
    struct recorder *r = rec_of(ctx);
    int rc = BASEOP(ctx, nccl_libs)(ctx, scan, out);
    if (rc == 0 && !r->have[REC_NCCL_LIBS])
        ncd_nccl_scan_format(out, rec(r, REC_NCCL_LIBS));
    return rc;
}

static int rec_cuda_driver(struct ncd_ctx *ctx, char *src, size_t srcsz)
{
    struct recorder *r = rec_of(ctx);
    int v = BASEOP(ctx, cuda_driver)(ctx, src, srcsz);
    if (v > 0 && !r->cuda)
        r->cuda = v;
    return v;
}

static int copy_nvml(struct ncd_nvml_answer *dst,
                     const struct ncd_nvml_answer *src)
{
    *dst = *src;
    dst->gpu = NULL;
    dst->link = NULL;
    dst->n_gpu = dst->n_link = 0;
    for (size_t i = 0; i < src->n_gpu; i++)
        if (ncd__nvml_add_gpu(dst, src->gpu[i].bdf, src->gpu[i].name) < 0)
            return NCD_ENOMEM;
    for (size_t i = 0; i < src->n_link; i++)
        if (ncd__nvml_add_link(dst, src->link[i].bdf, src->link[i].peer,
                               src->link[i].count) < 0)
            return NCD_ENOMEM;
    return 0;
}

static int rec_nvml(struct ncd_ctx *ctx, struct ncd_nvml_answer *out)
{
    struct recorder *r = rec_of(ctx);
    int rc = BASEOP(ctx, nvml)(ctx, out);
    if (rc == 0 && !r->have_nvml) {
        r->have_nvml = 1;
        r->have[REC_NVML] = 1;
        rc = copy_nvml(&r->nvml, out);
    }
    return rc;
}

static int rec_firewall(struct ncd_ctx *ctx, int timeout_ms, char **buf,
                        size_t *len, char *src, size_t srcsz)
{
    struct recorder *r = rec_of(ctx);
    int rc = BASEOP(ctx, firewall)(ctx, timeout_ms, buf, len, src, srcsz);
    if (rc == 0 && !r->have[REC_NFT])
        ncd_sb_add(rec(r, REC_NFT), *buf, *len);
    return rc;
}

static int rec_identity(struct ncd_ctx *ctx, struct ncd_sys_identity *out)
{
    struct recorder *r = rec_of(ctx);
    int rc = BASEOP(ctx, identity)(ctx, out);
    if (rc == 0 && out->known && !r->have[REC_SELF])
        ncd__record_self_format(rec(r, REC_SELF), out);
    return rc;
}

static int rec_resolve(struct ncd_ctx *ctx, const char *name, int timeout_ms,
                       struct ncd_if_addr *out, char *why, size_t whylen)
{
    struct recorder *r = rec_of(ctx);
    int rc = BASEOP(ctx, resolve)(ctx, name, timeout_ms, out, why, whylen);
    /* an answer or "does not resolve"; not a timeout or a missing record */
    if ((rc == 0 || rc == NCD_ENOENT) && *name && !strpbrk(name, " \t\n") &&
        !seen(r, "resolve", name))
        ncd__record_resolve_format(rec(r, REC_RESOLVE), name,
                                   rc == 0 ? out : NULL);
    return rc;
}

static void recorder_free(void *arg)
{
    struct recorder *r = arg;
    for (int i = 0; i < REC_N; i++)
        ncd_sb_release(&r->rec[i]);
    ncd_sb_release(&r->keys);
    ncd_nvml_answer_release(&r->nvml);
    free(r);
}

int ncd_sys_record_begin(struct ncd_ctx *ctx, const char *tool)
{
    if (ncd__ctx_sys_state(ctx))
        return NCD_EEXISTS;
    struct recorder *r = calloc(1, sizeof *r);
    if (!r)
        return NCD_ENOMEM;
    r->base = ncd_sys(ctx);
    r->ops = *r->base;
    r->ops.name = "record";
    r->ops.getifaddrs = rec_getifaddrs;
    r->ops.statvfs = rec_statvfs;
    r->ops.dlopen = rec_dlopen;
    r->ops.nccl_version = rec_nccl_version;
    r->ops.nccl_libs = rec_nccl_libs;
    r->ops.cuda_driver = rec_cuda_driver;
    r->ops.nvml = rec_nvml;
    r->ops.firewall = rec_firewall;
    r->ops.identity = rec_identity;
    r->ops.resolve = rec_resolve;
    if (!r->ops.where)
        r->ops.where = fallback(ctx)->where;
    ncd_sb_putc(&r->keys, '\n');
    ncd__record_env_format(ctx, rec(r, REC_ENV));
    ncd__record_gather_info_format(rec(r, REC_GATHER_INFO), tool, time(NULL));
    ncd__ctx_set_sys_state(ctx, r, recorder_free);
    ncd_ctx_set_sysops(ctx, &r->ops);
    return r->rec[REC_ENV].oom || r->rec[REC_GATHER_INFO].oom ? NCD_ENOMEM
                                                              : 0;
}

int ncd_sys_record_each(struct ncd_ctx *ctx,
                        int (*fn)(void *arg, const char *name,
                                  const char *data, size_t len),
                        void *arg)
{
    struct recorder *r = rec_of(ctx);
    if (!r)
        return 0;
    if (r->have_nvml || r->cuda) {
        /* the driver's CUDA version is one line of the NVML record */
        ncd_sb_reset(&r->rec[REC_NVML]);
        if (r->cuda && !r->nvml.cuda)
            r->nvml.cuda = r->cuda;
        ncd_nvml_format(&r->nvml, rec(r, REC_NVML));
    }
    for (int i = 0; i < REC_N; i++) {
        if (!r->have[i])
            continue;
        if (r->rec[i].oom)
            return NCD_ENOMEM;
        int rc = fn(arg, rec_names[i], ncd_sb_str(&r->rec[i]), r->rec[i].len);
        if (rc < 0)
            return rc;
    }
    return 0;
}
