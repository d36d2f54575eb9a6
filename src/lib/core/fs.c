/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "ncd/fs.h"
#include "core/ctx_internal.h"
#include "ncd/error.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<linux/openat2.h>)
#include <linux/openat2.h>
#define NCD_HAVE_OPENAT2 1
#endif
#endif

static const char *rel(const char *path)
{
    while (*path == '/')
        path++;
    return *path ? path : ".";
}

/* open(2) below the sysroot, untraced: the fd, or -1 with errno. */
static int fs_open_raw(struct ncd_ctx *ctx, const char *path, int flags)
{
    flags |= O_CLOEXEC;
#if defined(NCD_HAVE_OPENAT2) && defined(SYS_openat2)
    if (!ncd_ctx_is_live(ctx)) {
        struct open_how how = {.flags = (unsigned long long)flags,
                               .resolve = RESOLVE_IN_ROOT};
        int fd = (int)syscall(SYS_openat2, ncd_ctx_rootfd(ctx), rel(path),
                              &how, sizeof how);
        if (fd >= 0 || (errno != ENOSYS && errno != EPERM))
            return fd;
    }
#endif
    return openat(ncd_ctx_rootfd(ctx), rel(path), flags);
}

int ncd_fs_open(struct ncd_ctx *ctx, const char *path, int flags)
{
    ncd__ctx_fs_traced(ctx, NCD_FS_OPEN, path);
    int fd = fs_open_raw(ctx, path, flags);
    if (fd < 0) {
        int e = errno;
        return ncd_fail(ctx, ncd_err_from_errno(e), "%s: %s", path,
                        strerror(e));
    }
    return fd;
}

/* ---- the per-context read cache -----------------------------------------
 * Two probes asking for one file (the loader's view of /etc/ld.so.cache,
 * a PCI device's vendor and numa_node, a directory listing) open it once
 * per context: the first successful read is kept and later reads get a
 * copy.  Not kept: /proc (process state, counters that move) and sysfs
 * counters (statistics/, counters/, hw_counters/), which callers read
 * twice on purpose to see them change; files over 4 MiB; more than 32 MiB
 * in all.  The trace still sees every access (gather records it). */

#define FS_CACHE_BUCKETS 512
#define FS_CACHE_MAX_FILE (4u << 20)
#define FS_CACHE_MAX_ALL (32u << 20)

struct fs_ent {
    struct fs_ent *next;
    int is_list;
    int absent; /* NCD_ENOENT the first time: absent for the whole run;
                 * for a readlink entry: not a symbolic link */
    char *data; /* file content (NUL-terminated) */
    size_t len;
    char **names; /* directory listing */
    int n;
    char path[];
};

/* The directories files were last read from, open (O_PATH), so that the
 * next file of the same directory is opened by its name alone: the kernel
 * walks "sys/class/net/eth0/" (and the link behind it) once per directory
 * instead of once per file (a third of check's system time was that
 * walk).  A name that is a symbolic link, "." or ".." is not opened this
 * way but by its whole path, so every answer is the one the whole path
 * gives. */
#define FS_DIRS 32
#define DIR_ABSENT (-2)   /* dfd of a directory that does not exist */
#define DIR_UNUSABLE (-3) /* of one that could not be opened otherwise */

struct ncd__fs_cache {
    size_t bytes;
    struct fs_ent *b[FS_CACHE_BUCKETS];
    char *dpath[FS_DIRS]; /* NULL: slot unused */
    int dfd[FS_DIRS];     /* or DIR_ABSENT, DIR_UNUSABLE */
};

void ncd__fs_cache_free(struct ncd__fs_cache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < FS_CACHE_BUCKETS; i++)
        for (struct fs_ent *e = c->b[i], *nx; e; e = nx) {
            nx = e->next;
            free(e->data);
            for (int k = 0; k < e->n; k++)
                free(e->names[k]);
            free(e->names);
            free(e);
        }
    for (int i = 0; i < FS_DIRS; i++) {
        if (c->dpath[i] && c->dfd[i] >= 0)
            close(c->dfd[i]);
        free(c->dpath[i]);
    }
    free(c);
}

/* Opens `path` for reading through its directory's kept descriptor (see
 * FS_DIRS).  Returns the fd; NCD_ENOENT (detail as ncd_fs_open's) when
 * the directory has no such entry or is itself absent; -1 when the whole
 * path must be opened instead (no directory part, a link or a special
 * name, no memory, all slots taken, any other error: the whole path gives
 * the exact answer).  A directory is opened at most once per context
 * (slots are never reused), as every other path is. */
static int fs_open_in_dir(struct ncd_ctx *ctx, const char *path, int flags)
{
    const char *slash = strrchr(path, '/');
    if (!slash || slash == path || !slash[1] || strcmp(slash + 1, ".") == 0 ||
        strcmp(slash + 1, "..") == 0)
        return -1;
    size_t pl = (size_t)(slash - path);
    struct ncd__fs_cache **slot = ncd__ctx_fs_cache(ctx);
    if (!*slot && !(*slot = calloc(1, sizeof **slot)))
        return -1;
    struct ncd__fs_cache *c = *slot;
    int i = 0;
    while (i < FS_DIRS && c->dpath[i] &&
           !(strncmp(c->dpath[i], path, pl) == 0 && c->dpath[i][pl] == '\0'))
        i++;
    if (i == FS_DIRS)
        return -1;
    if (!c->dpath[i]) {
        if (!(c->dpath[i] = strndup(path, pl)))
            return -1;
        c->dfd[i] = fs_open_raw(ctx, c->dpath[i], O_PATH | O_DIRECTORY);
        if (c->dfd[i] < 0)
            c->dfd[i] = errno == ENOENT ? DIR_ABSENT : DIR_UNUSABLE;
    }
    int dfd = c->dfd[i];
    if (dfd == DIR_ABSENT) /* no directory: no file in it either */
        return ncd_fail(ctx, NCD_ENOENT, "%s: %s", path, strerror(ENOENT));
    if (dfd < 0)
        return -1;
    int fd = openat(dfd, slash + 1, flags | O_CLOEXEC | O_NOFOLLOW);
    if (fd >= 0)
        return fd;
    if (errno == ENOENT) /* the directory is there, the name is not */
        return ncd_fail(ctx, NCD_ENOENT, "%s: %s", path, strerror(ENOENT));
    return -1;
}

static int cacheable(const char *path)
{
    while (path[0] == '/' && path[1] == '/')
        path++;
    return strncmp(path, "/proc/", 6) != 0 && strcmp(path, "/proc") != 0 &&
           !strstr(path, "statistics") && !strstr(path, "counters");
}

static unsigned path_hash(const char *p)
{
    unsigned h = 2166136261u;
    for (; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    return h % FS_CACHE_BUCKETS;
}

static struct fs_ent *cache_find(struct ncd_ctx *ctx, const char *path,
                                 int is_list)
{
    struct ncd__fs_cache *c = *ncd__ctx_fs_cache(ctx);
    if (!c)
        return NULL;
    for (struct fs_ent *e = c->b[path_hash(path)]; e; e = e->next)
        if (e->is_list == is_list && strcmp(e->path, path) == 0)
            return e;
    return NULL;
}

/* Keeps a copy; silently keeps nothing when memory or the budget is short.
 * Returns the entry or NULL. */
static struct fs_ent *cache_put(struct ncd_ctx *ctx, const char *path, const char *data,
                      size_t len, char **names, int n)
{
    struct ncd__fs_cache **slot = ncd__ctx_fs_cache(ctx);
    size_t cost = len + strlen(path) + sizeof(struct fs_ent);
    for (int i = 0; i < n; i++)
        cost += strlen(names[i]) + 1 + sizeof(char *);
    if (len > FS_CACHE_MAX_FILE)
        return NULL;
    if (!*slot && !(*slot = calloc(1, sizeof **slot)))
        return NULL;
    if ((*slot)->bytes + cost > FS_CACHE_MAX_ALL)
        return NULL;
    size_t pl = strlen(path);
    struct fs_ent *e = calloc(1, sizeof *e + pl + 1);
    if (!e)
        return NULL;
    memcpy(e->path, path, pl + 1);
    if (names) {
        e->is_list = 1;
        if (n && !(e->names = calloc((size_t)n, sizeof *e->names)))
            goto fail;
        for (; e->n < n; e->n++)
            if (!(e->names[e->n] = strdup(names[e->n])))
                goto fail;
    } else {
        if (!(e->data = malloc(len + 1)))
            goto fail;
        memcpy(e->data, data, len);
        e->data[len] = '\0';
        e->len = len;
    }
    unsigned h = path_hash(path);
    e->next = (*slot)->b[h];
    (*slot)->b[h] = e;
    (*slot)->bytes += cost;
    return e;
fail:
    for (int k = 0; k < e->n; k++)
        free(e->names[k]);
    free(e->names);
    free(e->data);
    free(e);
    return NULL;
}

static int fs_read_uncached(struct ncd_ctx *ctx, const char *path, size_t max,
                            char **buf, size_t *len);

static void cache_absent(struct ncd_ctx *ctx, const char *path, int is_list)
{
    struct ncd__fs_cache **slot = ncd__ctx_fs_cache(ctx);
    size_t pl = strlen(path);
    if (!*slot && !(*slot = calloc(1, sizeof **slot)))
        return;
    if ((*slot)->bytes + pl + sizeof(struct fs_ent) > FS_CACHE_MAX_ALL)
        return;
    struct fs_ent *e = calloc(1, sizeof *e + pl + 1);
    if (!e)
        return;
    memcpy(e->path, path, pl + 1);
    e->is_list = is_list;
    e->absent = 1;
    unsigned h = path_hash(path);
    e->next = (*slot)->b[h];
    (*slot)->b[h] = e;
    (*slot)->bytes += pl + sizeof *e;
}

int ncd_fs_read(struct ncd_ctx *ctx, const char *path, size_t max, char **buf,
                size_t *len)
{
    *buf = NULL;
    if (len)
        *len = 0;
    if (!max)
        max = NCD_FS_MAX_DEFAULT;
    int use = cacheable(path);
    struct fs_ent *e = use ? cache_find(ctx, path, 0) : NULL;
    if (e) {
        ncd__ctx_fs_traced(ctx, NCD_FS_OPEN, path);
        if (e->absent)
            return ncd_fail(ctx, NCD_ENOENT, "%s: %s", path, strerror(ENOENT));
        if (e->len > max)
            return ncd_fail(ctx, NCD_ERANGE, "%s: larger than %zu bytes",
                            path, max);
        if (!(*buf = malloc(e->len + 1)))
            return NCD_ENOMEM;
        memcpy(*buf, e->data, e->len + 1);
        if (len)
            *len = e->len;
        return 0;
    }
    size_t l = 0;
    int rc = fs_read_uncached(ctx, path, max, buf, &l);
    if (len)
        *len = l;
    if (rc == 0 && use)
        cache_put(ctx, path, *buf, l, NULL, 0);
    else if (rc == NCD_ENOENT && use)
        cache_absent(ctx, path, 0);
    return rc;
}

/* The size sysfs reports for a text attribute: PAGE_SIZE, 4096 on the
 * architectures NCCL runs on (x86_64, aarch64 with 4K pages; a 64K-page
 * kernel only misses the shortcut below). */
#define SYSFS_ATTR_SIZE 4096

static int fs_read_uncached(struct ncd_ctx *ctx, const char *path, size_t max,
                            char **buf, size_t *len)
{
    /* O_NONBLOCK so that a FIFO planted in a capture cannot block open();
     * only regular files are read (sysfs and procfs files are). */
    ncd__ctx_fs_traced(ctx, NCD_FS_OPEN, path);
    int fd = fs_open_in_dir(ctx, path, O_RDONLY | O_NONBLOCK);
    if (fd == NCD_ENOENT)
        return fd;
    if (fd < 0) {
        fd = fs_open_raw(ctx, path, O_RDONLY | O_NONBLOCK);
        if (fd < 0) {
            int e = errno;
            return ncd_fail(ctx, ncd_err_from_errno(e), "%s: %s", path,
                            strerror(e));
        }
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return ncd_fail(ctx, NCD_EINVAL, "%s: not a regular file", path);
    }
    /* O_NONBLOCK stays: it means nothing to a regular file's read (sysfs,
     * procfs and disk files), and two fcntl calls per file were 20% of
     * check's system calls */
    int rc, e;
    if (st.st_size == SYSFS_ATTR_SIZE) {
        /* A sysfs attribute (kernfs says PAGE_SIZE for every text one)
         * gives its whole value to the first read() at offset 0, so a
         * shorter answer is all of it: the read() that would return 0 is
         * skipped (one system call of five per file, ~100 files per
         * check).  A disk file of that size (a capture) answers a full
         * read, which goes on below as before. */
        char one[SYSFS_ATTR_SIZE];
        ssize_t r;
        do
            r = read(fd, one, sizeof one);
        while (r < 0 && errno == EINTR);
        if (r >= 0 && r < (ssize_t)sizeof one) {
            close(fd);
            if ((size_t)r > max)
                return ncd_fail(ctx, NCD_ERANGE, "%s: larger than %zu bytes",
                                path, max);
            if (!(*buf = malloc((size_t)r + 1)))
                return NCD_ENOMEM;
            memcpy(*buf, one, (size_t)r);
            (*buf)[r] = '\0';
            *len = (size_t)r;
            return 0;
        }
        if (r < 0) {
            e = errno;
            close(fd);
            return ncd_fail(ctx, e == EINVAL ? NCD_EINVAL : NCD_EIO, "%s: %s",
                            path, strerror(e));
        }
        if (lseek(fd, 0, SEEK_SET) != 0) {
            e = errno;
            close(fd);
            return ncd_fail(ctx, NCD_EIO, "%s: %s", path, strerror(e));
        }
    }
    rc = ncd_read_fd_bounded(fd, max, -1, buf, len);
    e = errno;
    close(fd);
    if (rc == NCD_ERANGE)
        return ncd_fail(ctx, rc, "%s: larger than %zu bytes", path, max);
    /* sysfs answers EINVAL for e.g. the speed of a down link. */
    if (rc == NCD_EIO)
        return ncd_fail(ctx, e == EINVAL ? NCD_EINVAL : NCD_EIO, "%s: %s",
                        path, strerror(e));
    return rc;
}

int ncd_fs_read_str(struct ncd_ctx *ctx, const char *path, char *out,
                    size_t outsz)
{
    char *b;
    size_t n;
    if (outsz)
        out[0] = '\0';
    int rc = ncd_fs_read(ctx, path, 1 << 16, &b, &n);
    if (rc < 0)
        return rc;
    while (n && isspace((unsigned char)b[n - 1]))
        n--;
    if (outsz) {
        size_t c = n < outsz - 1 ? n : outsz - 1;
        memcpy(out, b, c);
        out[c] = '\0';
    }
    free(b);
    return 0;
}

int ncd_fs_read_ll(struct ncd_ctx *ctx, const char *path, long long *out)
{
    char s[64];
    int rc = ncd_fs_read_str(ctx, path, s, sizeof s);
    if (rc < 0)
        return rc;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 0);
    if (end == s || *end || errno)
        return ncd_fail(ctx, NCD_EPARSE, "%s: not an integer: '%s'", path, s);
    *out = v;
    return 0;
}

/* readlinkat() through the cache (is_list 2): symbolic links do not move
 * during a run, and realpath walks the same components again and again
 * (/sys, /sys/bus, /sys/bus/pci... for every device).  Returns the
 * target's length, or -1 with errno. */
static ssize_t readlink_cached(struct ncd_ctx *ctx, const char *path,
                               char *out, size_t outsz)
{
    int use = cacheable(path);
    struct fs_ent *e = use ? cache_find(ctx, path, 2) : NULL;
    if (e) {
        if (e->absent) {
            errno = EINVAL;
            return -1;
        }
        size_t n = e->len < outsz ? e->len : outsz;
        memcpy(out, e->data, n);
        return (ssize_t)n;
    }
    ssize_t n = readlinkat(ncd_ctx_rootfd(ctx), rel(path), out, outsz);
    int err = errno;
    if (use && n >= 0) {
        struct fs_ent *ne = cache_put(ctx, path, out, (size_t)n, NULL, 0);
        if (ne)
            ne->is_list = 2;
    } else if (use && (err == EINVAL || err == ENOENT)) {
        cache_absent(ctx, path, 2);
    }
    errno = err;
    return n;
}

int ncd_fs_readlink(struct ncd_ctx *ctx, const char *path, char *out,
                    size_t outsz)
{
    ncd__ctx_fs_traced(ctx, NCD_FS_READLINK, path);
    ssize_t n = readlink_cached(ctx, path, out, outsz - 1);
    if (n < 0) {
        int e = errno;
        out[0] = '\0';
        return ncd_fail(ctx, ncd_err_from_errno(e), "%s: %s", path,
                        strerror(e));
    }
    out[n] = '\0';
    return 0;
}

/* Resolves like the kernel's path walk, but with the sysroot as "/". */
int ncd_fs_realpath(struct ncd_ctx *ctx, const char *path, char *out,
                    size_t outsz)
{
    char res[PATH_MAX] = "";   /* resolved so far, "" = root */
    char todo[PATH_MAX * 2];   /* what is left to walk */
    int links = 0;
    ncd__ctx_fs_traced(ctx, NCD_FS_REALPATH, path);
    if (snprintf(todo, sizeof todo, "%s", path) >= (int)sizeof todo)
        return ncd_fail(ctx, NCD_ERANGE, "%s: path too long", path);
    char *p = todo;
    while (*p) {
        while (*p == '/')
            p++;
        if (!*p)
            break;
        char *end = strchr(p, '/');
        size_t clen = end ? (size_t)(end - p) : strlen(p);
        char comp[NAME_MAX + 1];
        if (clen > NAME_MAX)
            return ncd_fail(ctx, NCD_ERANGE, "%s: name too long", path);
        memcpy(comp, p, clen);
        comp[clen] = '\0';
        p += clen;
        if (strcmp(comp, ".") == 0)
            continue;
        if (strcmp(comp, "..") == 0) {
            char *slash = strrchr(res, '/');
            if (slash)
                *slash = '\0';
            continue;
        }
        size_t rl = strlen(res);
        if (rl + 1 + clen + 1 > sizeof res)
            return ncd_fail(ctx, NCD_ERANGE, "%s: path too long", path);
        res[rl] = '/';
        memcpy(res + rl + 1, comp, clen + 1);
        char target[PATH_MAX];
        ssize_t tn = readlink_cached(ctx, res, target, sizeof target - 1);
        if (tn < 0)
            continue; /* not a link, or does not exist: keep as is */
        target[tn] = '\0';
        if (++links > 40)
            return ncd_fail(ctx, NCD_ERANGE, "%s: too many symlinks", path);
        res[rl] = '\0'; /* drop the link itself */
        if (target[0] == '/')
            res[0] = '\0';
        char rest[PATH_MAX * 2];
        if (snprintf(rest, sizeof rest, "%s/%s", target, p) >=
            (int)sizeof rest)
            return ncd_fail(ctx, NCD_ERANGE, "%s: path too long", path);
        memcpy(todo, rest, strlen(rest) + 1);
        p = todo;
    }
    if (snprintf(out, outsz, "%s", res[0] ? res : "/") >= (int)outsz)
        return ncd_fail(ctx, NCD_ERANGE, "%s: path too long", path);
    return 0;
}

DIR *ncd_fs_opendir(struct ncd_ctx *ctx, const char *path, int *err)
{
    int fd = ncd_fs_open(ctx, path, O_RDONLY | O_DIRECTORY);
    if (fd < 0) {
        if (err)
            *err = fd;
        return NULL;
    }
    DIR *d = fdopendir(fd);
    if (!d) {
        int e = errno;
        close(fd);
        if (err)
            *err = ncd_err_from_errno(e);
    }
    return d;
}

int ncd_fs_exists(struct ncd_ctx *ctx, const char *path)
{
    struct stat st;
    int fd = -1;
    ncd__ctx_fs_traced(ctx, NCD_FS_STAT, path);
#if defined(NCD_HAVE_OPENAT2) && defined(SYS_openat2)
    if (!ncd_ctx_is_live(ctx)) {
        struct open_how how = {.flags = O_PATH | O_CLOEXEC,
                               .resolve = RESOLVE_IN_ROOT};
        fd = (int)syscall(SYS_openat2, ncd_ctx_rootfd(ctx), rel(path), &how,
                          sizeof how);
        if (fd >= 0) {
            close(fd);
            return 1;
        }
        if (errno != ENOSYS && errno != EPERM)
            return 0;
    }
#endif
    (void)fd;
    return fstatat(ncd_ctx_rootfd(ctx), rel(path), &st, 0) == 0;
}

/* Natural order: digit runs compare by value, so eth2 < eth10. */
int ncd_natcmp(const char *a, const char *b)
{
    while (*a && *b) {
        if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
            while (*a == '0' && isdigit((unsigned char)a[1]))
                a++;
            while (*b == '0' && isdigit((unsigned char)b[1]))
                b++;
            size_t la = 0, lb = 0;
            while (isdigit((unsigned char)a[la]))
                la++;
            while (isdigit((unsigned char)b[lb]))
                lb++;
            if (la != lb)
                return la < lb ? -1 : 1;
            int c = strncmp(a, b, la);
            if (c)
                return c;
            a += la;
            b += lb;
            continue;
        }
        if (*a != *b)
            return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
        a++;
        b++;
    }
    return (unsigned char)*a - (unsigned char)*b;
}

static int natcmp_q(const void *a, const void *b)
{
    return ncd_natcmp(*(char *const *)a, *(char *const *)b);
}

static int list_copy(struct fs_ent *e, const char *pfx, char ***names)
{
    size_t pl = pfx ? strlen(pfx) : 0;
    int k = 0;
    for (int i = 0; i < e->n; i++)
        k += !pl || !strncmp(e->names[i], pfx, pl);
    char **v = k ? calloc((size_t)k, sizeof *v) : NULL;
    if (k && !v)
        return NCD_ENOMEM;
    k = 0;
    for (int i = 0; i < e->n; i++) {
        if (pl && strncmp(e->names[i], pfx, pl))
            continue;
        if (!(v[k] = strdup(e->names[i]))) {
            ncd_fs_list_free(v, k);
            return NCD_ENOMEM;
        }
        k++;
    }
    *names = v;
    return k;
}

static int fs_list_uncached(struct ncd_ctx *ctx, const char *path,
                            char ***names);
static int natcmp_q(const void *a, const void *b);

/* The listing of `path`, unsorted, all names or those starting with pfx. */
static int list_any(struct ncd_ctx *ctx, const char *path, const char *pfx,
                    char ***names)
{
    *names = NULL;
    int use = cacheable(path);
    struct fs_ent *e = use ? cache_find(ctx, path, 1) : NULL;
    if (!e) {
        char **all = NULL;
        int n = fs_list_uncached(ctx, path, &all);
        if (n == NCD_ENOENT && use)
            cache_absent(ctx, path, 1);
        if (n < 0)
            return n;
        if (use)
            e = cache_put(ctx, path, NULL, 0, all ? all : (char *[]){NULL}, n);
        if (!e) { /* not kept: filter this copy */
            int k = 0;
            for (int i = 0; i < n; i++)
                if (!pfx || !strncmp(all[i], pfx, strlen(pfx)))
                    all[k++] = all[i];
                else
                    free(all[i]);
            *names = all;
            return k;
        }
        ncd_fs_list_free(all, n);
    } else {
        ncd__ctx_fs_traced(ctx, NCD_FS_OPEN, path);
    }
    if (e->absent)
        return ncd_fail(ctx, NCD_ENOENT, "%s: %s", path, strerror(ENOENT));
    return list_copy(e, pfx, names);
}

int ncd_fs_list(struct ncd_ctx *ctx, const char *path, char ***names)
{
    return ncd_fs_list_prefix(ctx, path, NULL, names);
}

int ncd_fs_list_prefix(struct ncd_ctx *ctx, const char *path, const char *pfx,
                       char ***names)
{
    int n = list_any(ctx, path, pfx, names);
    if (n > 1)
        qsort(*names, (size_t)n, sizeof **names, natcmp_q);
    return n;
}

static int fs_list_uncached(struct ncd_ctx *ctx, const char *path,
                            char ***names)
{
    int err = 0;
    DIR *d = ncd_fs_opendir(ctx, path, &err);
    if (!d)
        return err;
    char **v = NULL;
    int n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            char **nv = realloc(v, (size_t)cap * sizeof *v);
            if (!nv)
                goto oom;
            v = nv;
        }
        if (!(v[n] = strdup(de->d_name)))
            goto oom;
        n++;
    }
    closedir(d);
    *names = v; /* sorted by ncd_fs_list_prefix(), after filtering */
    return n;
oom:
    closedir(d);
    ncd_fs_list_free(v, n);
    return NCD_ENOMEM;
}

void ncd_fs_list_free(char **names, int n)
{
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
}
