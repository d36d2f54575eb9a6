/* SPDX-License-Identifier: MIT */
/* `nccl-doctor gather`: the files the probes read (paths.def) plus the
 * answers of the same probes run with the record table (sysops.h), as a
 * tarball (see ncd/gather.h). */
#define _GNU_SOURCE
#include "ncd/gather.h"
#include "ncd/node.h"
#include "ncd/archive.h"
#include "ncd/sysops.h"
#include "ncd/error.h"
#include "ncd/fs.h"
#include "ncd/readall.h"
#include "ncd_version.h"
#include "ncd/strbuf.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum gkind { G_FILE, G_LINK, G_DIR };

static const struct {
    enum gkind kind;
    const char *pattern;
} gather_paths[] = {
#define NCD_GATHER(kind, pattern) {G_##kind, pattern},
#include "paths.def"
#undef NCD_GATHER
};

struct gentry {
    char *path; /* absolute, as in the capture */
    enum gkind kind;
    char *data; /* file content or link target */
    size_t len;
};

struct gather {
    struct ncd_ctx *ctx;
    struct gentry *v;
    size_t n, cap;
    /* open-addressing set of paths -> index+1 */
    size_t *hash;
    size_t hcap;
    struct ncd_gather_stats *st;
    struct ncd_strbuf unreadable, left_out; /* "PATH: reason" lines */
    int oom;
};

static void note_unreadable(struct gather *g, const char *path, int err)
{
    g->st->skipped++;
    ncd_sb_printf(&g->unreadable, "%s: %s\n", path, strerror(err));
}

/* After ncd_fs_read failed with rc: "PATH: why" (the detail names the
 * path itself, usually). */
static void note_failed_read(struct gather *g, const char *path, int rc)
{
    const char *d = ncd_ctx_errdetail(g->ctx);
    g->st->skipped++;
    if (*d && strncmp(d, path, strlen(path)) == 0)
        ncd_sb_printf(&g->unreadable, "%s\n", d);
    else
        ncd_sb_printf(&g->unreadable, "%s: %s\n", path,
                      *d ? d : ncd_strerror(rc));
    ncd_ctx_clear_error(g->ctx);
}

static size_t hstr(const char *s)
{
    size_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static int g_has(struct gather *g, const char *path)
{
    if (!g->hcap)
        return 0;
    for (size_t i = hstr(path) & (g->hcap - 1);; i = (i + 1) & (g->hcap - 1)) {
        if (!g->hash[i])
            return 0;
        if (strcmp(g->v[g->hash[i] - 1].path, path) == 0)
            return 1;
    }
}

static int g_rehash(struct gather *g, size_t ncap)
{
    size_t *nh = calloc(ncap, sizeof *nh);
    if (!nh)
        return NCD_ENOMEM;
    for (size_t k = 0; k < g->n; k++) {
        size_t i = hstr(g->v[k].path) & (ncap - 1);
        while (nh[i])
            i = (i + 1) & (ncap - 1);
        nh[i] = k + 1;
    }
    free(g->hash);
    g->hash = nh;
    g->hcap = ncap;
    return 0;
}

/* Takes ownership of data. */
static int g_add(struct gather *g, const char *path, enum gkind kind,
                 char *data, size_t len)
{
    if (g_has(g, path)) {
        free(data);
        return 0;
    }
    if (g->n == g->cap) {
        size_t nc = g->cap ? g->cap * 2 : 1024;
        struct gentry *nv = realloc(g->v, nc * sizeof *nv);
        if (!nv) {
            free(data);
            return NCD_ENOMEM;
        }
        g->v = nv;
        g->cap = nc;
    }
    if ((g->n + 1) * 2 > g->hcap && g_rehash(g, g->hcap ? g->hcap * 2 : 4096) < 0) {
        free(data);
        return NCD_ENOMEM;
    }
    char *p = strdup(path);
    if (!p) {
        free(data);
        return NCD_ENOMEM;
    }
    g->v[g->n] = (struct gentry){p, kind, data, len};
    size_t i = hstr(path) & (g->hcap - 1);
    while (g->hash[i])
        i = (i + 1) & (g->hcap - 1);
    g->hash[i] = ++g->n;
    if (kind == G_FILE) {
        g->st->files++;
        g->st->bytes += (long long)len;
    } else if (kind == G_LINK) {
        g->st->links++;
    } else {
        g->st->dirs++;
    }
    return 0;
}

static const char *rel(const char *p)
{
    while (*p == '/')
        p++;
    return *p ? p : ".";
}

/* Secrets never leave the machine, even if a pattern would match them. */
static int forbidden(const char *path)
{
    return strncmp(path, "/var/run/secrets/", 17) == 0 ||
           strncmp(path, "/run/secrets/", 13) == 0;
}

/* Relative link text from directory `from` to absolute `to`. */
static void make_relative(const char *from, const char *to, char *out,
                          size_t outsz)
{
    size_t i = 0, last = 0;
    while (from[i] && to[i] && from[i] == to[i]) {
        if (from[i] == '/')
            last = i;
        i++;
    }
    if (!from[i] && (to[i] == '/' || !to[i]))
        last = i;
    out[0] = '\0';
    for (const char *p = from + last; *p; p++)
        if (*p == '/')
            strncat(out, "../", outsz - strlen(out) - 1);
    const char *rest = to + last;
    while (*rest == '/')
        rest++;
    strncat(out, *rest ? rest : ".", outsz - strlen(out) - 1);
}

/* /proc/net/tcp{,6}: the probes need only listening sockets; established
 * connections would reveal peers' addresses in a shared capture.  Keeps
 * the header and the lines in state 0A (LISTEN), in place. */
static size_t keep_listeners(char *buf, size_t len)
{
    size_t o = 0, i = 0;
    int first = 1;
    while (i < len) {
        size_t s = i;
        while (i < len && buf[i] != '\n')
            i++;
        size_t e = i < len ? i + 1 : i;
        i = e;
        char st[4] = "";
        const char *l = buf + s;
        /* "  N: local remote st ..." -> fourth field */
        int field = 0;
        for (size_t k = 0; k < e - s && field < 4;) {
            while (k < e - s && (l[k] == ' ' || l[k] == '\t'))
                k++;
            size_t b = k;
            while (k < e - s && l[k] != ' ' && l[k] != '\t' && l[k] != '\n')
                k++;
            if (++field == 4 && k - b == 2)
                memcpy(st, l + b, 2);
        }
        if (first || strcmp(st, "0A") == 0) {
            memmove(buf + o, l, e - s);
            o += e - s;
        }
        first = 0;
    }
    buf[o] = '\0';
    return o;
}

/* Records `path`: every symlink met on the way, then the file / dir /
 * link itself.  Unreadable things are skipped (counted). */
static int add_path(struct gather *g, const char *path, enum gkind kind)
{
    char todo[PATH_MAX * 2], res[PATH_MAX] = "";
    int links = 0, rc;
    if (forbidden(path) && kind != G_DIR)
        return 0;
    snprintf(todo, sizeof todo, "%s", path);
    char *p = todo;
    for (;;) {
        while (*p == '/')
            p++;
        if (!*p)
            break;
        char *end = strchr(p, '/');
        size_t cl = end ? (size_t)(end - p) : strlen(p);
        char comp[NAME_MAX + 1];
        if (cl > NAME_MAX)
            return 0;
        memcpy(comp, p, cl);
        comp[cl] = '\0';
        p += cl;
        int last = !*p || (*p == '/' && !p[strspn(p, "/")]);
        if (strcmp(comp, ".") == 0)
            continue;
        if (strcmp(comp, "..") == 0) {
            char *s = strrchr(res, '/');
            if (s)
                *s = '\0';
            continue;
        }
        char cand[PATH_MAX];
        if ((size_t)snprintf(cand, sizeof cand, "%s/%s", res, comp) >= sizeof cand)
            return 0;
        struct stat st;
        if (fstatat(ncd_ctx_rootfd(g->ctx), rel(cand), &st,
                    AT_SYMLINK_NOFOLLOW) < 0) {
            if (last && errno != ENOENT)
                note_unreadable(g, cand, errno);
            return 0;
        }
        if (!S_ISLNK(st.st_mode)) {
            snprintf(res, sizeof res, "%s", cand);
            continue;
        }
        char target[PATH_MAX];
        ssize_t tl = readlinkat(ncd_ctx_rootfd(g->ctx), rel(cand), target,
                                sizeof target - 1);
        if (tl < 0)
            return 0;
        target[tl] = '\0';
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s", res[0] ? res : "/");
        char linktext[PATH_MAX];
        if (target[0] == '/')
            make_relative(dir, target, linktext, sizeof linktext);
        else
            snprintf(linktext, sizeof linktext, "%s", target);
        char *data = strdup(linktext);
        if (!data || (rc = g_add(g, cand, G_LINK, data, strlen(linktext))) < 0)
            return NCD_ENOMEM;
        if (last && kind == G_LINK)
            return 0;
        if (++links > 40)
            return 0;
        char next[PATH_MAX * 2];
        snprintf(next, sizeof next, "%s/%s%s", target[0] == '/' ? "" : res,
                 target, p);
        snprintf(todo, sizeof todo, "%s", next);
        p = todo;
        res[0] = '\0';
    }
    if (!res[0] || forbidden(res))
        return 0;
    struct stat st;
    if (fstatat(ncd_ctx_rootfd(g->ctx), rel(res), &st, 0) < 0)
        return 0;
    if (S_ISDIR(st.st_mode))
        return g_add(g, res, G_DIR, NULL, 0);
    /* Device nodes (/dev/nvidia0, /dev/infiniband/uverbs0) and DIR patterns
     * that hit a file: only their existence matters, as an empty file. */
    if (!S_ISREG(st.st_mode) || kind == G_DIR)
        return g_add(g, res, G_FILE, NULL, 0);
    char *buf;
    size_t len;
    errno = 0;
    rc = ncd_fs_read(g->ctx, res, 8u << 20, &buf, &len);
    if (rc == NCD_ENOMEM)
        return rc;
    if (rc == ncd_err_from_errno(EINVAL) && strncmp(res, "/sys/", 5) == 0) {
        /* a sysfs attribute with no value now (carrier or speed of a down
         * interface): an answer, not an unreadable file; the node layer
         * reads it as "unknown" live and, the file being absent, in the
         * replay alike (src/lib/net/netif.c) */
        ncd_ctx_clear_error(g->ctx);
        return 0;
    }
    if (rc < 0) {
        note_failed_read(g, res, rc);
        return 0;
    }
    if (strstr(path, "/proc/net/tcp") == path)
        len = keep_listeners(buf, len);
    return g_add(g, res, G_FILE, buf, len);
}

/* Expands '*' (one component; "node*" = prefix) and adds each match. */
static int expand(struct gather *g, const char *done, const char *rest,
                  enum gkind kind)
{
    while (*rest == '/')
        rest++;
    const char *star = strchr(rest, '*');
    if (!star) {
        char full[PATH_MAX];
        snprintf(full, sizeof full, "%s/%s", done, rest);
        return add_path(g, full, kind);
    }
    /* component containing the star */
    const char *cs = star;
    while (cs > rest && cs[-1] != '/')
        cs--;
    const char *ce = strchr(star, '/');
    char base[PATH_MAX];
    snprintf(base, sizeof base, "%s/%.*s", done, (int)(cs - rest), rest);
    size_t bl = strlen(base);
    while (bl > 1 && base[bl - 1] == '/')
        base[--bl] = '\0';
    char pre[NAME_MAX + 1], post[NAME_MAX + 1];
    snprintf(pre, sizeof pre, "%.*s", (int)(star - cs), cs);
    snprintf(post, sizeof post, "%.*s",
             (int)((ce ? ce : star + strlen(star)) - star - 1), star + 1);
    char **names;
    int n = ncd_fs_list(g->ctx, base[0] ? base : "/", &names);
    if (n < 0) {
        ncd_ctx_clear_error(g->ctx);
        return n == NCD_ENOMEM ? n : 0;
    }
    int rc = 0;
    for (int i = 0; i < n && rc >= 0; i++) {
        size_t nl = strlen(names[i]), pl = strlen(pre), sl = strlen(post);
        if (nl < pl + sl || strncmp(names[i], pre, pl) != 0 ||
            strcmp(names[i] + nl - sl, post) != 0)
            continue;
        char d[PATH_MAX];
        snprintf(d, sizeof d, "%s/%s", base, names[i]);
        rc = expand(g, d, ce ? ce : "", kind);
    }
    ncd_fs_list_free(names, n);
    return rc;
}

/* ---- recorded answers (.ncd/) -------------------------------------------- */

int ncd_looks_like_nccl_conf(const char *buf, size_t len, char *why,
                             size_t whylen)
{
    size_t line = 0;
    for (size_t i = 0; i < len;) {
        const char *l = buf + i;
        const char *nl = memchr(l, '\n', len - i);
        size_t n = nl ? (size_t)(nl - l) : len - i;
        i += n + 1;
        line++;
        if (memchr(l, '\0', n)) {
            if (why)
                snprintf(why, whylen, "line %zu: binary data", line);
            return 0;
        }
        size_t k = 0;
        while (k < n && (l[k] == ' ' || l[k] == '\t' || l[k] == '\r'))
            k++;
        if (k == n || l[k] == '#')
            continue;
        size_t e = k;
        while (e < n && (isalnum((unsigned char)l[e]) || l[e] == '_'))
            e++;
        if (e - k < 6 || strncmp(l + k, "NCCL_", 5) != 0 || e == n ||
            l[e] != '=') {
            if (why)
                snprintf(why, whylen, "line %zu is not NCCL_NAME=value",
                         line);
            return 0;
        }
    }
    return 1;
}

void ncd_gather_stats_release(struct ncd_gather_stats *st)
{
    free(st->unreadable);
    free(st->left_out);
    st->unreadable = st->left_out = NULL;
}

/* NCCL_CONF_FILE or ~/.nccl.conf: copied only when it looks like one. */
static int add_conf(struct gather *g, const char *path, const char *what)
{
    char *buf;
    size_t len;
    int rc = ncd_fs_read(g->ctx, path, 1u << 20, &buf, &len);
    if (rc == NCD_ENOMEM)
        return rc;
    if (rc < 0) {
        if (rc != NCD_ENOENT)
            note_failed_read(g, path, rc);
        ncd_ctx_clear_error(g->ctx);
        return 0;
    }
    char why[96];
    int ok = ncd_looks_like_nccl_conf(buf, len, why, sizeof why);
    free(buf);
    if (!ok) {
        ncd_sb_printf(&g->left_out, "%s: %s does not look like an nccl.conf "
                                    "(%s); not copied\n",
                      path, what, why);
        return 0;
    }
    return add_path(g, path, G_FILE);
}

/* Probing with the record table: every answer the probes get is kept.
 * The libraries a process could load are asked too (a replay answers any
 * of them). */
static int ask_probes(struct ncd_ctx *ctx)
{
    struct ncd_node n = {0};
    struct ncd_node_opts o = {.nvml = NCD_NVML_ALWAYS};
    int rc = ncd_node_probe(ctx, &o, NCD_PARTS_ALL, &n);
    ncd_node_release(&n);
    static const char *const libs[] = {"libibverbs.so.1", "libibverbs.so",
                                       "libnvidia-ml.so.1", "libcuda.so.1",
                                       "libnccl.so.2"};
    for (size_t i = 0; i < sizeof libs / sizeof *libs && rc >= 0; i++) {
        struct ncd_dl_probe dp;
        rc = ncd_sys_dlopen(ctx, libs[i], &dp);
    }
    ncd_ctx_clear_error(ctx);
    return rc == NCD_ENOMEM ? rc : 0;
}

static int add_record(void *arg, const char *name, const char *data,
                      size_t len)
{
    struct gather *g = arg;
    char path[128];
    snprintf(path, sizeof path, "/.ncd/%s", name);
    char *d = malloc(len + 1);
    if (!d)
        return NCD_ENOMEM;
    memcpy(d, data, len);
    d[len] = '\0';
    return g_add(g, path, G_FILE, d, len);
}

static int record(struct gather *g)
{
    struct ncd_ctx *ctx = g->ctx;
    int rc = ncd_sys_record_begin(ctx, "nccl-doctor " NCD_VERSION_STRING);
    if (rc < 0 || (rc = ask_probes(ctx)) < 0)
        return rc;
    /* A recorded sysroot's own .ncd/ files were copied first and win. */
    return rc < 0 ? rc : ncd_sys_record_each(ctx, add_record, g);
}

/* ---- writing ---------------------------------------------------------------- */

static int write_archive(struct gather *g, int fd)
{
    struct ncd_tar_entry *v = calloc(g->n + 1, sizeof *v);
    if (!v)
        return NCD_ENOMEM;
    for (size_t i = 0; i < g->n; i++) {
        const struct gentry *x = &g->v[i];
        v[i].path = rel(x->path);
        v[i].type = x->kind == G_DIR    ? NCD_TAR_DIR
                    : x->kind == G_LINK ? NCD_TAR_LINK
                                        : NCD_TAR_FILE;
        v[i].data = x->data;
        v[i].len = x->len;
    }
    int rc = ncd_tar_write(g->ctx, fd, v, g->n);
    free(v);
    return rc;
}

/* The files of paths.def, and NCCL's config files named by the
 * environment (NCCL src/misc/param.cc: NCCL_CONF_FILE, else ~/.nccl.conf). */
static int copy_files(struct gather *g)
{
    int rc = 0;
    for (size_t i = 0; i < sizeof gather_paths / sizeof *gather_paths && rc >= 0;
         i++)
        rc = expand(g, "", gather_paths[i].pattern, gather_paths[i].kind);
    const char *cf = ncd_getenv(g->ctx, "NCCL_CONF_FILE");
    const char *home = ncd_getenv(g->ctx, "HOME");
    /* NCCL's config files named by the environment (NCCL
     * src/misc/param.cc: NCCL_CONF_FILE, else ~/.nccl.conf) */
    if (rc >= 0 && cf && *cf == '/')
        rc = add_conf(g, cf, "NCCL_CONF_FILE");
    if (rc >= 0 && home && *home == '/') {
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/.nccl.conf", home);
        rc = add_conf(g, p, "~/.nccl.conf");
    }
    return rc;
}

static void gather_release(struct gather *g)
{
    for (size_t i = 0; i < g->n; i++) {
        free(g->v[i].path);
        free(g->v[i].data);
    }
    free(g->v);
    free(g->hash);
    ncd_sb_release(&g->unreadable);
    ncd_sb_release(&g->left_out);
}

int ncd_gather_paths(struct ncd_ctx *ctx,
                     int (*fn)(void *arg, const char *path, int is_dir),
                     void *arg)
{
    struct ncd_gather_stats st = {0};
    struct gather g = {.ctx = ctx, .st = &st};
    int rc = copy_files(&g);
    for (size_t i = 0; i < g.n && rc >= 0; i++)
        rc = fn(arg, g.v[i].path, g.v[i].kind == G_DIR);
    gather_release(&g);
    return rc < 0 ? rc : 0;
}

int ncd_gather(struct ncd_ctx *ctx, const char *out_path,
               struct ncd_gather_stats *stats)
{
    struct ncd_gather_stats dummy;
    if (!stats)
        stats = &dummy;
    memset(stats, 0, sizeof *stats);
    /* checked before gathering: rename() would replace a device node
     * (/dev/full, as root) and an unwritable directory wastes the work */
    struct stat os;
    if (lstat(out_path, &os) == 0 && !S_ISREG(os.st_mode) &&
        !S_ISLNK(os.st_mode))
        return ncd_fail(ctx, NCD_EINVAL,
                        "%s is %s, not a file: give the path of the "
                        "capture to write (FILE.tar.gz)",
                        out_path, S_ISDIR(os.st_mode) ? "a directory"
                                  : S_ISCHR(os.st_mode) ? "a character device"
                                  : S_ISBLK(os.st_mode) ? "a block device"
                                                        : "a special file");
    if (ncd_file_writable(out_path) != 0) {
        int e = errno;
        return ncd_fail(ctx, ncd_err_from_errno(e), "cannot write %s: %s",
                        out_path, strerror(e));
    }
    struct gather g = {.ctx = ctx, .st = stats};
    int rc = copy_files(&g);
    if (rc >= 0)
        rc = record(&g);
    /* what could not be read or was left out, in the capture and for the
     * caller */
    if (g.unreadable.oom || g.left_out.oom)
        rc = NCD_ENOMEM;
    if (rc >= 0 && g.unreadable.len) {
        stats->unreadable = strdup(ncd_sb_str(&g.unreadable));
        rc = stats->unreadable
                 ? add_record(&g, "unreadable", g.unreadable.buf,
                              g.unreadable.len)
                 : NCD_ENOMEM;
    }
    if (rc >= 0 && g.left_out.len) {
        stats->left_out = strdup(ncd_sb_str(&g.left_out));
        rc = stats->left_out
                 ? add_record(&g, "skipped", g.left_out.buf, g.left_out.len)
                 : NCD_ENOMEM;
    }
    if (rc >= 0) {
        char tmp[PATH_MAX];
        if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", out_path) >=
            sizeof tmp) {
            rc = ncd_fail(ctx, NCD_EINVAL, "%s: path too long", out_path);
        } else {
            int fd = mkstemp(tmp);
            if (fd < 0) {
                int e = errno;
                rc = ncd_fail(ctx, ncd_err_from_errno(e), "%s: %s", tmp,
                              strerror(e));
            } else {
                rc = write_archive(&g, fd);
                if (!rc && fsync(fd) < 0) {
                    int e = errno;
                    rc = ncd_fail(ctx, ncd_err_from_errno(e), "%s: %s", tmp,
                                  strerror(e));
                }
                if (close(fd) < 0 && !rc) {
                    int e = errno;
                    rc = ncd_fail(ctx, ncd_err_from_errno(e), "%s: %s", tmp,
                                  strerror(e));
                }
                /* mkstemp's 0600 stays: a capture holds the environment */
                if (!rc && rename(tmp, out_path) < 0) {
                    int e = errno;
                    rc = ncd_fail(ctx, ncd_err_from_errno(e), "rename to %s: %s",
                                  out_path, strerror(e));
                }
                if (rc)
                    unlink(tmp);
            }
        }
    }
    gather_release(&g);
    return rc < 0 ? rc : 0;
}
