/* SPDX-License-Identifier: MIT */
/* Unpacking a capture tarball into a private sysroot (see ncd/archive.h). */
#define _GNU_SOURCE
#include "archive/libarchive.h"
#include "ncd/archive.h"
#include "ncd/error.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Normalised entry path: no leading "./" or "/", no "." components.
 * Returns the number of components, -1 when unsafe ("..", absolute). */
static int clean_path(const char *in, char *out, size_t outsz)
{
    if (in[0] == '/')
        return -1;
    size_t o = 0;
    int comps = 0;
    const char *p = in;
    while (*p) {
        while (*p == '/')
            p++;
        if (!*p)
            break;
        const char *e = strchr(p, '/');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == 2 && p[0] == '.' && p[1] == '.')
            return -1;
        if (!(l == 1 && p[0] == '.')) {
            if (o + l + 2 > outsz)
                return -1;
            if (o)
                out[o++] = '/';
            memcpy(out + o, p, l);
            o += l;
            comps++;
        }
        p += l;
    }
    out[o] = '\0';
    return comps;
}

/* A symlink may only climb with leading ".." (no deeper than its own
 * directory) and then name plain components: what sysfs links look like. */
static int safe_link(const char *target, int depth)
{
    if (!*target || target[0] == '/')
        return 0;
    int up = 0, names = 0;
    const char *p = target;
    while (*p) {
        const char *e = strchr(p, '/');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == 0) {
            p++;
            continue;
        }
        if (l == 2 && p[0] == '.' && p[1] == '.') {
            if (names)
                return 0;
            up++;
        } else if (l == 1 && p[0] == '.') {
            return 0;
        } else {
            names++;
        }
        p += l;
    }
    return up <= depth - 1;
}

/* Opens the directory `path` (relative) below rootfd, creating missing
 * components; never leaves the tree. */
static int open_dir_in(int rootfd, const char *path, int create)
{
    int fd = dup(rootfd);
    if (fd < 0)
        return -1;
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", path);
    char *save = NULL;
    for (char *c = strtok_r(buf, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
        int nfd;
        if (create && mkdirat(fd, c, 0755) < 0 && errno != EEXIST) {
            close(fd);
            return -1;
        }
        /* O_NOFOLLOW: a symlinked directory is never written through. */
        nfd = openat(fd, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        close(fd);
        if (nfd < 0)
            return -1;
        fd = nfd;
    }
    return fd;
}

/* The directory last written to: tar entries come in tree order, so most
 * entries land in the same directory as the one before, or just below. */
struct dircache {
    char path[PATH_MAX];
    int fd; /* -1 when empty */
};

/* Like open_dir_in() but reuses / extends the cached directory.  The fd
 * returned belongs to the cache (do not close it). */
static int cached_dir(int rootfd, struct dircache *dc, const char *path)
{
    if (dc->fd >= 0 && strcmp(dc->path, path) == 0)
        return dc->fd;
    size_t cl = strlen(dc->path);
    int fd;
    if (dc->fd >= 0 && cl && strncmp(path, dc->path, cl) == 0 &&
        path[cl] == '/')
        fd = open_dir_in(dc->fd, path + cl + 1, 1);
    else
        fd = open_dir_in(rootfd, path, 1);
    if (fd < 0)
        return -1;
    if (dc->fd >= 0)
        close(dc->fd);
    dc->fd = fd;
    snprintf(dc->path, sizeof dc->path, "%s", path);
    return fd;
}

static int remove_at(int dfd)
{
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return -1;
    }
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        struct stat st;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            rc = -1;
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            int sub = openat(dirfd(d), de->d_name,
                             O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub < 0 || remove_at(sub) < 0)
                rc = -1;
            if (unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR) < 0)
                rc = -1;
        } else if (unlinkat(dirfd(d), de->d_name, 0) < 0) {
            rc = -1;
        }
    }
    closedir(d);
    return rc;
}

int ncd_sysroot_remove(const char *top)
{
    int fd = open(top, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = remove_at(fd);
    if (rmdir(top) < 0)
        rc = -1;
    return rc;
}

/* The directory an entry goes in (created as needed; cached), and the
 * entry's own name in *base.  -1 when it cannot be made. */
static int parent_dir(int rootfd, struct dircache *dc, const char *path,
                      const char **base)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash) {
        *base = path;
        return rootfd;
    }
    *slash = '\0';
    *base = path + (slash - dir) + 1;
    return cached_dir(rootfd, dc, dir);
}

static int write_file(const struct ncd__archive_api *A, int rootfd,
                      struct dircache *dc, const char *path, struct archive *a,
                      long long size, char *err, size_t errsz)
{
    const char *base;
    int dfd = parent_dir(rootfd, dc, path, &base);
    if (dfd < 0)
        return ncd_errbuf(err, errsz, NCD_EPARSE, "%s: cannot create its directory "
                      "(an entry above it is not a directory)", path);
    int fd = openat(dfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                    0644);
    if (fd < 0)
        return ncd_errbuf(err, errsz, errno == EEXIST ? NCD_EPARSE : NCD_EIO,
                      "%s: %s", path, strerror(errno));
    char buf[65536];
    long long left = size;
    int rc = 0;
    while (left > 0) {
        la_ssize_t r = A->read_data(a, buf, sizeof buf);
        if (r < 0) {
            rc = ncd_errbuf(err, errsz, NCD_EPARSE, "%s: %s", path,
                        A->error_string(a));
            break;
        }
        if (r == 0)
            break;
        if (write(fd, buf, (size_t)r) != r) {
            rc = ncd_errbuf(err, errsz, errno == ENOSPC ? NCD_ENOSPC : NCD_EIO,
                        "%s: %s", path, strerror(errno));
            break;
        }
        left -= r;
    }
    close(fd);
    return rc;
}

static int make_link(int rootfd, struct dircache *dc, const char *path,
                     const char *target, char *err, size_t errsz)
{
    const char *base;
    int dfd = parent_dir(rootfd, dc, path, &base);
    if (dfd < 0)
        return ncd_errbuf(err, errsz, NCD_EPARSE, "%s: cannot create its directory",
                      path);
    int rc = symlinkat(target, dfd, base);
    int e = errno;
    if (rc < 0)
        return ncd_errbuf(err, errsz, e == EEXIST ? NCD_EPARSE : NCD_EIO, "%s: %s",
                      path, strerror(e));
    return 0;
}

/* hwloc-gather-topology captures hold one top folder: root there. */
static void pick_root(const char *top, char *dir, size_t dirsz)
{
    snprintf(dir, dirsz, "%s", top);
    char p[PATH_MAX];
    const char *marks[] = {"sys", "proc", ".ncd", "etc"};
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s/%s", top, marks[i]);
        if (access(p, F_OK) == 0)
            return;
    }
    DIR *d = opendir(top);
    if (!d)
        return;
    struct dirent *de;
    char only[NAME_MAX + 1] = "";
    int n = 0;
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
            n++;
            snprintf(only, sizeof only, "%s", de->d_name);
        }
    closedir(d);
    if (n != 1)
        return;
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s/%s/%s", top, only, marks[i]);
        if (access(p, F_OK) == 0) {
            snprintf(dir, dirsz, "%s/%s", top, only);
            return;
        }
    }
}

typedef int (*open_fn_t)(const struct ncd__archive_api *A, struct archive *a,
                         const void *arg);

/* tar only (gather writes pax; hwloc-gather-topology and users' own
 * `tar czf` give ustar/gnutar), any compression. */
static int open_tar(const struct ncd__archive_api *A, struct archive *a,
                    open_fn_t open_fn, const void *arg)
{
    A->read_support_filter_all(a);
    A->read_support_format_tar(a);
    A->read_support_format_gnutar(a);
    return open_fn(A, a, arg);
}

/* Counts the entries, headers only, before anything is written: an archive
 * of a million empty files is refused in a fraction of a second instead of
 * after half a million files were created.  Read errors are left to the
 * unpacking pass, which reports them.  @return 0 or NCD_ERANGE/NCD_ENOMEM. */
static int check_entry_count(const struct ncd__archive_api *A,
                             const char *tarball, open_fn_t open_fn,
                             const void *arg, char *err, size_t errsz)
{
    struct archive *a = A->read_new();
    if (!a)
        return ncd_errbuf(err, errsz, NCD_ENOMEM, "%s: out of memory",
                          tarball);
    int rc = 0;
    long entries = 0;
    struct archive_entry *e;
    if (open_tar(A, a, open_fn, arg) == ARCHIVE_OK)
        while (A->read_next_header(a, &e) == ARCHIVE_OK)
            if (++entries > NCD_SYSROOT_MAX_ENTRIES) {
                rc = ncd_errbuf(err, errsz, NCD_ERANGE,
                                "%s: more than %d entries, refused (a "
                                "capture from `gather` has about 200, an "
                                "hwloc-gather-topology one up to ~12,000)",
                                tarball, NCD_SYSROOT_MAX_ENTRIES);
                break;
            }
    A->read_free(a);
    return rc;
}

/* Unpacks the archive open_fn(A, a, arg) opens; `tarball` names it in
 * messages. */
static int unpack(const char *tarball,
                  int (*open_fn)(const struct ncd__archive_api *A,
                                 struct archive *a, const void *arg),
                  const void *arg, char *dir, size_t dirsz, char *top,
                  size_t topsz, char *err, size_t errsz)
{
    dir[0] = top[0] = '\0';
    if (err && errsz)
        err[0] = '\0';
    const struct ncd__archive_api *A = ncd__archive(err, errsz);
    if (!A)
        return NCD_EDLOPEN;
    int crc = check_entry_count(A, tarball, open_fn, arg, err, errsz);
    if (crc < 0)
        return crc;
    const char *tmpd = getenv("TMPDIR");
    char tmpl[PATH_MAX];
    snprintf(tmpl, sizeof tmpl, "%s/ncd-sysroot-XXXXXX",
             tmpd && *tmpd ? tmpd : "/tmp");
    if (!mkdtemp(tmpl))
        return ncd_errbuf(err, errsz, NCD_EIO, "mkdtemp %s: %s", tmpl,
                      strerror(errno));
    int rootfd = open(tmpl, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct archive *a = A->read_new();
    struct dircache dc = {.fd = -1};
    int rc = 0;
    if (rootfd < 0 || !a) {
        rc = ncd_errbuf(err, errsz, a ? NCD_EIO : NCD_ENOMEM, "cannot set up %s",
                    tmpl);
        goto out;
    }
    if (open_tar(A, a, open_fn, arg) != ARCHIVE_OK) {
        rc = ncd_errbuf(err, errsz, NCD_EPARSE,
                        "%s: not a capture tarball (%s); expected a capture "
                        "directory or a tarball made by `nccl-doctor gather`",
                        tarball, A->error_string(a));
        goto out;
    }
    long long total = 0;
    long entries = 0;
    struct archive_entry *e;
    for (;;) {
        int r = A->read_next_header(a, &e);
        if (r == ARCHIVE_EOF)
            break;
        if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
            rc = ncd_errbuf(err, errsz, NCD_EPARSE, "%s: %s", tarball,
                        A->error_string(a));
            break;
        }
        if (++entries > NCD_SYSROOT_MAX_ENTRIES) {
            rc = ncd_errbuf(err, errsz, NCD_ERANGE, "%s: more than %d entries",
                        tarball, NCD_SYSROOT_MAX_ENTRIES);
            break;
        }
        char path[PATH_MAX];
        const char *name = A->entry_pathname(e);
        int depth = name ? clean_path(name, path, sizeof path) : -1;
        if (depth < 0) {
            rc = ncd_errbuf(err, errsz, NCD_EPARSE,
                        "%s: unsafe entry '%s' (absolute or '..')", tarball,
                        name ? name : "(null)");
            break;
        }
        if (depth == 0)
            continue; /* "./" itself */
        if (A->entry_hardlink(e)) {
            rc = ncd_errbuf(err, errsz, NCD_EPARSE, "%s: hard link '%s' refused",
                        tarball, name);
            break;
        }
        mode_t type = A->entry_filetype(e);
        if (type == AE_IFDIR) {
            if (cached_dir(rootfd, &dc, path) < 0) {
                rc = ncd_errbuf(err, errsz, NCD_EPARSE, "%s: cannot create '%s'",
                            tarball, path);
                break;
            }
        } else if (type == AE_IFLNK) {
            const char *t = A->entry_symlink(e);
            if (!t || !safe_link(t, depth)) {
                rc = ncd_errbuf(err, errsz, NCD_EPARSE,
                            "%s: symlink '%s' -> '%s' points outside the "
                            "capture",
                            tarball, path, t ? t : "");
                break;
            }
            if ((rc = make_link(rootfd, &dc, path, t, err, errsz)) < 0)
                break;
        } else if (type == AE_IFREG) {
            long long sz = A->entry_size(e);
            if (sz > NCD_SYSROOT_MAX_FILE) {
                rc = ncd_errbuf(err, errsz, NCD_ERANGE, "%s: '%s' is %lld bytes "
                            "(limit %lld)", tarball, path, sz,
                            (long long)NCD_SYSROOT_MAX_FILE);
                break;
            }
            total += sz;
            if (total > NCD_SYSROOT_MAX_TOTAL) {
                rc = ncd_errbuf(err, errsz, NCD_ERANGE,
                            "%s: more than %lld bytes unpacked", tarball,
                            (long long)NCD_SYSROOT_MAX_TOTAL);
                break;
            }
            if ((rc = write_file(A, rootfd, &dc, path, a, sz, err, errsz)) < 0)
                break;
        }
        /* device nodes, FIFOs, sockets: skipped, never created */
    }
    if (!rc && entries == 0)
        rc = ncd_errbuf(err, errsz, NCD_EPARSE, "%s: empty archive", tarball);
out:
    if (dc.fd >= 0)
        close(dc.fd);
    if (a)
        A->read_free(a);
    if (rootfd >= 0)
        close(rootfd);
    if (rc < 0) {
        ncd_sysroot_remove(tmpl);
        return rc;
    }
    snprintf(top, topsz, "%s", tmpl);
    pick_root(tmpl, dir, dirsz);
    return 0;
}

static int open_file(const struct ncd__archive_api *A, struct archive *a,
                     const void *arg)
{
    return A->read_open_filename(a, (const char *)arg, 65536);
}

int ncd_sysroot_unpack(const char *tarball, char *dir, size_t dirsz,
                       char *top, size_t topsz, char *err, size_t errsz)
{
    return unpack(tarball, open_file, tarball, dir, dirsz, top, topsz, err,
                  errsz);
}

struct membuf {
    const void *buf;
    size_t len;
};

static int open_mem(const struct ncd__archive_api *A, struct archive *a,
                    const void *arg)
{
    const struct membuf *m = arg;
    return A->read_open_memory(a, m->buf, m->len);
}

int ncd__sysroot_unpack_mem(const void *buf, size_t len, const char *label,
                            char *dir, size_t dirsz, char *top, size_t topsz,
                            char *err, size_t errsz)
{
    struct membuf m = {buf, len};
    return unpack(label, open_mem, &m, dir, dirsz, top, topsz, err, errsz);
}
