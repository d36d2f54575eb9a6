/* SPDX-License-Identifier: MIT */
/* `nccl-doctor gather`: the probed files plus recorded answers, as a tarball
 * (see ncd/gather.h; what is copied: paths.def). */
#define _GNU_SOURCE
#include "ncd/gather.h"
#include "ncd/error.h"
#include "ncd/fs.h"
#include "ncd/libs.h"
#include "ncd/nccl.h"
#include "ncd/netif.h"
#include "ncd/ports.h"
#include "ncd/rdma.h"
#include "ncd/report.h"
#include "ncd/strbuf.h"
#include "ncd/topo.h"
#include "node_internal.h"

#include <archive.h>
#include <archive_entry.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
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

void ncd_mask_userinfo(const char *v, struct ncd_strbuf *out)
{
    const char *p = v;
    for (;;) {
        const char *at = strchr(p, '@');
        if (!at) {
            ncd_sb_puts(out, p);
            return;
        }
        /* the token before '@': back to the start of the value, "://",
         * white space or a list separator */
        const char *s = at;
        while (s > p && !strchr(" \t,;=\"'<>/", s[-1]))
            s--;
        const char *colon = memchr(s, ':', (size_t)(at - s));
        if (colon && colon > s && at > colon + 1) {
            ncd_sb_printf(out, "%.*s<redacted>@", (int)(s - p), p);
        } else {
            ncd_sb_printf(out, "%.*s", (int)(at - p + 1), p);
        }
        p = at + 1;
    }
}

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

int ncd_env_is_secret(const char *name)
{
    static const char *bad[] = {"TOKEN", "SECRET", "PASSWORD", "PASSWD",
                                "KEY", "CREDENTIAL"};
    char up[256];
    size_t i = 0;
    for (; name[i] && i < sizeof up - 1; i++)
        up[i] = (char)(name[i] >= 'a' && name[i] <= 'z' ? name[i] - 32 : name[i]);
    up[i] = '\0';
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++)
        if (strstr(up, bad[k]))
            return 1;
    return 0;
}

int ncd_gather_env_wanted(const char *name)
{
    static const char *prefixes[] = {
        "NCCL_", "CUDA_", "NVIDIA_", "OMPI_", "PMI_", "PMIX_", "SLURM_",
        "TORCH", "PADDLE_", "FLAGS_", "GLOO_", "UCX_", "HOROVOD_", "MPI_",
        "KUBERNETES_", "MELLANOX_", "NV_", "LD_LIBRARY_PATH", "LD_PRELOAD",
        "MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK",
        "LOCAL_WORLD_SIZE", "GROUP_RANK", "NODE_RANK", "HOME", "CONDA_PREFIX",
        "VIRTUAL_ENV", "HOSTNAME", "PATH"};
    if (strcmp(name, "container") == 0)
        return 1;
    for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++) {
        size_t l = strlen(prefixes[i]);
        if (strncmp(name, prefixes[i], l) == 0 &&
            (prefixes[i][l - 1] == '_' || name[l] == '\0' ||
             strcmp(prefixes[i], "TORCH") == 0))
            return 1;
    }
    return 0;
}

static int add_record(struct gather *g, const char *name, struct ncd_strbuf *sb)
{
    if (sb->oom) {
        ncd_sb_release(sb);
        return NCD_ENOMEM;
    }
    char path[128];
    snprintf(path, sizeof path, "/.ncd/%s", name);
    size_t len = sb->len;
    char *d = ncd_sb_detach(sb);
    if (!d)
        return NCD_ENOMEM;
    return g_add(g, path, G_FILE, d, len);
}

static int record_live(struct gather *g)
{
    struct ncd_ctx *ctx = g->ctx;
    struct ncd_strbuf sb = {0};
    int rc;
    /* env */
    for (size_t i = 0; i < ncd_env_count(ctx); i++) {
        const char *n, *v;
        ncd_env_at(ctx, i, &n, &v);
        if (!ncd_gather_env_wanted(n))
            continue;
        ncd_sb_printf(&sb, "%s=", n);
        if (ncd_env_is_secret(n))
            ncd_sb_puts(&sb, "<redacted>");
        else
            ncd_mask_userinfo(v, &sb);
        ncd_sb_putc(&sb, '\n');
    }
    if ((rc = add_record(g, "env", &sb)) < 0)
        return rc;
    /* ifaddrs */
    struct ncd_netif_list nl = {0};
    if (ncd_netif_probe(ctx, &nl) == 0 && nl.ifa_known) {
        ncd_sb_puts(&sb, "# getifaddrs() order: name family address prefix flags\n");
        ncd_ifaddrs_format(&sb, nl.ifa, nl.n_ifa);
        rc = add_record(g, "ifaddrs", &sb);
    }
    ncd_netif_list_release(&nl);
    ncd_ctx_clear_error(ctx);
    if (rc < 0)
        return rc;
    /* statvfs */
    struct statvfs sv;
    if (statvfs("/dev/shm", &sv) == 0) {
        ncd_sb_printf(&sb, "/dev/shm %lld %lld\n",
                      (long long)sv.f_blocks * (long long)sv.f_frsize,
                      (long long)sv.f_bavail * (long long)sv.f_frsize);
        if ((rc = add_record(g, "statvfs", &sb)) < 0)
            return rc;
    }
    /* dlopen */
    const char *libs[] = {"libibverbs.so.1", "libibverbs.so",
                          "libnvidia-ml.so.1", "libcuda.so.1", "libnccl.so.2",
                          ncd_getenv(ctx, "NCCL_IBVERBS_LIB")};
    for (size_t i = 0; i < sizeof libs / sizeof *libs; i++) {
        struct ncd_dl_probe dp;
        if (!libs[i] || !*libs[i] || strchr(libs[i], ' '))
            continue;
        ncd_dl_probe(ctx, libs[i], &dp);
        ncd_sb_printf(&sb, "%s %s %s\n", libs[i], dp.ok ? "ok" : "missing",
                      dp.detail);
    }
    if ((rc = add_record(g, "dlopen", &sb)) < 0)
        return rc;
    /* libnccl */
    struct ncd_nccl_scan scan;
    if ((rc = ncd_nccl_scan(ctx, &scan)) == 0) {
        ncd_nccl_scan_format(&scan, &sb);
        rc = add_record(g, "nccl-libs", &sb);
    }
    ncd_nccl_scan_release(&scan);
    if (rc < 0)
        return rc;
    struct ncd_nccl_lib lib;
    if (ncd_nccl_lib_detect(ctx, &lib) == 0 && lib.found) {
        char vb[24];
        ncd_sb_printf(&sb, "%s\n", ncd_nccl_version_str(lib.version, vb, sizeof vb));
        if ((rc = add_record(g, "nccl-version", &sb)) < 0)
            return rc;
    }
    /* NVML */
    struct ncd_topo t;
    if ((rc = ncd_topo_probe(ctx, 1, &t)) == 0 && t.n_gpu) {
        if (t.nvlink_known) {
            if (*t.driver_version)
                ncd_sb_printf(&sb, "driver %s\n", t.driver_version);
            if (t.cuda_driver_version)
                ncd_sb_printf(&sb, "cuda %d\n", t.cuda_driver_version);
            for (size_t i = 0; i < t.n_gpu; i++)
                ncd_sb_printf(&sb, "gpu %s %s\n", t.dev[i].bdf, t.dev[i].name);
            for (size_t a = 0; a < t.n_gpu; a++)
                for (size_t b = 0; b < t.n_gpu; b++)
                    if (t.nvlinks && t.nvlinks[a * t.n_gpu + b])
                        ncd_sb_printf(&sb, "nvlink %s %s %d\n", t.dev[a].bdf,
                                      t.dev[b].bdf,
                                      t.nvlinks[a * t.n_gpu + b]);
        } else {
            ncd_sb_printf(&sb, "error %s\n", t.nvlink_source);
        }
        rc = add_record(g, "nvml", &sb);
    }
    ncd_topo_release(&t);
    ncd_ctx_clear_error(ctx);
    if (rc < 0)
        return rc;
    /* nftables */
    char *nft;
    size_t nlen;
    if (ncd_nft_run(ctx, 2000, &nft, &nlen) == 0) {
        if ((rc = g_add(g, "/.ncd/nft.json", G_FILE, nft, nlen)) < 0)
            return rc;
    }
    ncd_ctx_clear_error(ctx);
    ncd_sb_printf(&sb, "uid %ld\n", (long)getuid());
    if ((rc = add_record(g, "self", &sb)) < 0)
        return rc;
    time_t now = time(NULL);
    struct tm tm;
    char ts[64];
    gmtime_r(&now, &tm);
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
    ncd_sb_printf(&sb, "tool nccl-doctor %s\ntime %s\n", ncd_version(), ts);
    return add_record(g, "gather-info", &sb);
}

/* A recorded sysroot is re-captured with its .ncd/ answers as they are. */
static int record_copy(struct gather *g)
{
    char **names;
    int n = ncd_fs_list(g->ctx, "/.ncd", &names);
    if (n < 0) {
        ncd_ctx_clear_error(g->ctx);
        return n == NCD_ENOMEM ? n : 0;
    }
    int rc = 0;
    for (int i = 0; i < n && rc >= 0; i++) {
        char p[300];
        snprintf(p, sizeof p, "/.ncd/%s", names[i]);
        rc = add_path(g, p, G_FILE);
    }
    ncd_fs_list_free(names, n);
    return rc;
}

/* ---- writing ---------------------------------------------------------------- */

static int write_archive(struct gather *g, int fd)
{
    struct archive *a = archive_write_new();
    if (!a)
        return NCD_ENOMEM;
    int rc = 0;
    if (archive_write_add_filter_gzip(a) != ARCHIVE_OK ||
        archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
        archive_write_open_fd(a, fd) != ARCHIVE_OK) {
        rc = ncd_fail(g->ctx, NCD_EIO, "archive: %s", archive_error_string(a));
        archive_write_free(a);
        return rc;
    }
    struct archive_entry *e = archive_entry_new();
    time_t now = time(NULL);
    for (size_t i = 0; i < g->n && !rc; i++) {
        const struct gentry *x = &g->v[i];
        archive_entry_clear(e);
        archive_entry_set_pathname(e, rel(x->path));
        archive_entry_set_mtime(e, now, 0);
        if (x->kind == G_DIR) {
            archive_entry_set_filetype(e, AE_IFDIR);
            archive_entry_set_perm(e, 0755);
        } else if (x->kind == G_LINK) {
            archive_entry_set_filetype(e, AE_IFLNK);
            archive_entry_set_perm(e, 0777);
            archive_entry_set_symlink(e, x->data);
        } else {
            archive_entry_set_filetype(e, AE_IFREG);
            archive_entry_set_perm(e, 0644);
            archive_entry_set_size(e, (la_int64_t)x->len);
        }
        if (archive_write_header(a, e) != ARCHIVE_OK ||
            (x->kind == G_FILE && x->len &&
             archive_write_data(a, x->data, x->len) != (la_ssize_t)x->len))
            rc = ncd_fail(g->ctx, NCD_EIO, "writing the archive: %s",
                          archive_error_string(a));
    }
    archive_entry_free(e);
    if (archive_write_close(a) != ARCHIVE_OK && !rc)
        rc = ncd_fail(g->ctx, NCD_EIO, "closing the archive: %s",
                      archive_error_string(a));
    archive_write_free(a);
    return rc;
}

int ncd_gather(struct ncd_ctx *ctx, const char *out_path,
               struct ncd_gather_stats *stats)
{
    struct ncd_gather_stats dummy;
    if (!stats)
        stats = &dummy;
    memset(stats, 0, sizeof *stats);
    struct gather g = {.ctx = ctx, .st = stats};
    int rc = 0;
    for (size_t i = 0; i < sizeof gather_paths / sizeof *gather_paths && rc >= 0; i++)
        rc = expand(&g, "", gather_paths[i].pattern, gather_paths[i].kind);
    /* NCCL's config files named by the environment (NCCL
     * src/misc/param.cc: NCCL_CONF_FILE, else ~/.nccl.conf). */
    const char *cf = ncd_getenv(ctx, "NCCL_CONF_FILE");
    const char *home = ncd_getenv(ctx, "HOME");
    if (rc >= 0 && cf && *cf == '/')
        rc = add_conf(&g, cf, "NCCL_CONF_FILE");
    if (rc >= 0 && home && *home == '/') {
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/.nccl.conf", home);
        rc = add_conf(&g, p, "~/.nccl.conf");
    }
    if (rc >= 0)
        rc = ncd_ctx_is_live(ctx) ? record_live(&g) : record_copy(&g);
    /* what could not be read or was left out, in the capture and for the
     * caller (copies: add_record takes the buffers) */
    if (g.unreadable.oom || g.left_out.oom)
        rc = NCD_ENOMEM;
    if (rc >= 0 && g.unreadable.len) {
        stats->unreadable = strdup(ncd_sb_str(&g.unreadable));
        rc = stats->unreadable ? add_record(&g, "unreadable", &g.unreadable)
                               : NCD_ENOMEM;
    }
    if (rc >= 0 && g.left_out.len) {
        stats->left_out = strdup(ncd_sb_str(&g.left_out));
        rc = stats->left_out ? add_record(&g, "skipped", &g.left_out)
                             : NCD_ENOMEM;
    }
    ncd_sb_release(&g.unreadable);
    ncd_sb_release(&g.left_out);
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
    for (size_t i = 0; i < g.n; i++) {
        free(g.v[i].path);
        free(g.v[i].data);
    }
    free(g.v);
    free(g.hash);
    return rc < 0 ? rc : 0;
}
