/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "ncd/rcfile.h"
#include "ncd/error.h"
#include "ncd/strbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char rc_note[] =
    "# Managed by 'nccl-doctor env --write': re-running replaces this "
    "block; 'nccl-doctor env --remove FILE' deletes it.\n";

/* Line [s, e) equals `marker` (ignoring a trailing '\r'). */
static int line_is(const char *s, const char *e, const char *marker)
{
    size_t n = (size_t)(e - s);
    if (n && s[n - 1] == '\r')
        n--;
    return n == strlen(marker) && memcmp(s, marker, n) == 0;
}

int ncd_rc_splice(struct ncd_ctx *ctx, const char *old, size_t oldlen,
                  const char *body, char **out, size_t *outlen)
{
    const char *bstart = NULL, *bend = NULL; /* block [bstart, bend) */
    int line = 0, bline = 0;
    for (const char *p = old; p < old + oldlen;) {
        const char *nl = memchr(p, '\n', (size_t)(old + oldlen - p));
        const char *e = nl ? nl : old + oldlen;
        line++;
        if (line_is(p, e, NCD_RC_BEGIN)) {
            if (bstart)
                return ncd_fail(ctx, NCD_EPARSE,
                                "line %d: a second '%s' (first at line %d); "
                                "fix the file by hand",
                                line, NCD_RC_BEGIN, bline);
            bstart = p;
            bline = line;
        } else if (line_is(p, e, NCD_RC_END)) {
            if (!bstart || bend)
                return ncd_fail(ctx, NCD_EPARSE,
                                "line %d: '%s' without a matching '%s'; fix "
                                "the file by hand",
                                line, NCD_RC_END, NCD_RC_BEGIN);
            bend = nl ? nl + 1 : e;
        }
        p = nl ? nl + 1 : e;
    }
    if (bstart && !bend)
        return ncd_fail(ctx, NCD_EPARSE,
                        "line %d: '%s' is never closed by '%s'; fix the file "
                        "by hand",
                        bline, NCD_RC_BEGIN, NCD_RC_END);
    struct ncd_strbuf sb = {0};
    if (bstart) {
        ncd_sb_add(&sb, old, (size_t)(bstart - old));
        if (body) {
            ncd_sb_printf(&sb, "%s\n%s%s%s\n", NCD_RC_BEGIN, rc_note, body,
                          NCD_RC_END);
            /* Keep the file's end exactly: no newline was after the end
             * marker, so none is added. */
            if (bend[-1] != '\n')
                sb.buf[--sb.len] = '\0';
        } else if (bstart > old + 1 && bstart[-1] == '\n' &&
                   bstart[-2] == '\n' && bend == old + oldlen) {
            sb.buf[--sb.len] = '\0'; /* drop the blank line we added */
        }
        ncd_sb_add(&sb, bend, (size_t)(old + oldlen - bend));
    } else {
        ncd_sb_add(&sb, old, oldlen);
        if (body) {
            if (oldlen && old[oldlen - 1] != '\n')
                ncd_sb_putc(&sb, '\n');
            if (oldlen)
                ncd_sb_putc(&sb, '\n');
            ncd_sb_printf(&sb, "%s\n%s%s%s\n", NCD_RC_BEGIN, rc_note, body,
                          NCD_RC_END);
        }
    }
    if (sb.oom) {
        ncd_sb_release(&sb);
        return NCD_ENOMEM;
    }
    *outlen = sb.len;
    *out = ncd_sb_detach(&sb);
    return *out ? 0 : NCD_ENOMEM;
}

static int read_all(struct ncd_ctx *ctx, const char *path, char **buf,
                    size_t *len, struct stat *st, int *exists)
{
    *buf = NULL;
    *len = 0;
    *exists = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        int e = errno;
        return ncd_fail(ctx, ncd_err_from_errno(e), "%s: %s", path,
                        strerror(e));
    }
    *exists = 1;
    if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode)) {
        close(fd);
        return ncd_fail(ctx, NCD_EINVAL, "%s: not a regular file", path);
    }
    struct ncd_strbuf sb = {0};
    char chunk[65536];
    for (;;) {
        ssize_t r = read(fd, chunk, sizeof chunk);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            close(fd);
            ncd_sb_release(&sb);
            return ncd_fail(ctx, NCD_EIO, "%s: %s", path, strerror(e));
        }
        if (r == 0)
            break;
        ncd_sb_add(&sb, chunk, (size_t)r);
    }
    close(fd);
    if (sb.oom) {
        ncd_sb_release(&sb);
        return NCD_ENOMEM;
    }
    *len = sb.len;
    *buf = ncd_sb_detach(&sb);
    return *buf ? 0 : NCD_ENOMEM;
}

/* Writes `data` to a new file next to `target` and renames it over
 * `target`.  The original stays intact on any failure. */
static int atomic_replace(struct ncd_ctx *ctx, const char *target,
                          const char *data, size_t len, const struct stat *st,
                          int exists, ncd_write_fn wfn)
{
    char dir[PATH_MAX], tmp[PATH_MAX + 32];
    snprintf(dir, sizeof dir, "%s", target);
    char *d = dirname(dir);
    const char *slash = strrchr(target, '/');
    snprintf(tmp, sizeof tmp, "%s/.%s.ncd-XXXXXX", d,
             slash ? slash + 1 : target);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        int e = errno;
        return ncd_fail(ctx, ncd_err_from_errno(e),
                        "cannot create a temporary file in %s: %s", d,
                        strerror(e));
    }
    int rc = 0;
    mode_t mode = exists ? (st->st_mode & 07777) : 0644;
    if (!exists) {
        mode_t um = umask(0);
        umask(um);
        mode = 0666 & ~um;
    }
    if (fchmod(fd, mode) < 0)
        rc = ncd_fail(ctx, NCD_EPERM, "%s: chmod: %s", tmp, strerror(errno));
    if (rc == 0 && exists && geteuid() == 0 &&
        fchown(fd, st->st_uid, st->st_gid) < 0)
        rc = ncd_fail(ctx, NCD_EPERM, "%s: chown: %s", tmp, strerror(errno));
    for (size_t off = 0; rc == 0 && off < len;) {
        ssize_t w = (wfn ? wfn : write)(fd, data + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = w < 0 ? errno : ENOSPC;
            rc = ncd_fail(ctx, ncd_err_from_errno(e) == NCD_ESYS
                                   ? NCD_EIO
                                   : ncd_err_from_errno(e),
                          "writing %s: %s (the original is unchanged)",
                          target, strerror(e));
            break;
        }
        off += (size_t)w;
    }
    if (rc == 0 && fsync(fd) < 0)
        rc = ncd_fail(ctx, NCD_EIO, "%s: fsync: %s (the original is "
                                    "unchanged)", target, strerror(errno));
    if (close(fd) < 0 && rc == 0)
        rc = ncd_fail(ctx, NCD_EIO, "%s: close: %s (the original is "
                                    "unchanged)", target, strerror(errno));
    if (rc == 0 && rename(tmp, target) < 0)
        rc = ncd_fail(ctx, ncd_err_from_errno(errno), "rename to %s: %s",
                      target, strerror(errno));
    if (rc < 0) {
        unlink(tmp);
        return rc;
    }
    int dfd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return 0;
}

int ncd_rc_update(struct ncd_ctx *ctx, const char *path, const char *body,
                  int dry_run, enum ncd_rc_action *action,
                  char **new_content, ncd_write_fn wfn)
{
    *action = NCD_RC_UNCHANGED;
    if (new_content)
        *new_content = NULL;
    /* Follow symlinks so the link itself survives the rename. */
    char target[PATH_MAX];
    char *rp = realpath(path, NULL);
    struct stat lst;
    if (rp) {
        snprintf(target, sizeof target, "%s", rp);
        free(rp);
    } else if (errno == ENOENT && lstat(path, &lst) == 0 &&
               S_ISLNK(lst.st_mode)) {
        /* A dangling symlink (dotfiles managed elsewhere): create the file
         * it points to, keep the link. */
        char link[PATH_MAX];
        ssize_t n = readlink(path, link, sizeof link - 1);
        if (n < 0)
            return ncd_fail(ctx, NCD_EIO, "%s: %s", path, strerror(errno));
        link[n] = '\0';
        if (link[0] == '/') {
            snprintf(target, sizeof target, "%s", link);
        } else {
            char dir[PATH_MAX];
            snprintf(dir, sizeof dir, "%s", path);
            snprintf(target, sizeof target, "%s/%s", dirname(dir), link);
        }
    } else if (errno == ENOENT) {
        snprintf(target, sizeof target, "%s", path);
    } else {
        return ncd_fail(ctx, ncd_err_from_errno(errno), "%s: %s", path,
                        strerror(errno));
    }
    char *old;
    size_t oldlen;
    struct stat st;
    int exists;
    int rc = read_all(ctx, target, &old, &oldlen, &st, &exists);
    if (rc < 0)
        return rc;
    if (!exists && !body) {
        free(old);
        return 0; /* nothing to remove */
    }
    /* rename() would replace a file the user made read-only. */
    if (exists && !dry_run && access(target, W_OK) < 0) {
        free(old);
        return ncd_fail(ctx, NCD_EPERM, "%s is not writable: %s", target,
                        strerror(errno));
    }
    char *neu;
    size_t newlen;
    rc = ncd_rc_splice(ctx, old ? old : "", oldlen, body, &neu, &newlen);
    if (rc < 0) {
        free(old);
        ncd_fail(ctx, rc, "%s", path); /* keeps the first detail */
        return rc;
    }
    int same = exists && newlen == oldlen && memcmp(neu, old, oldlen) == 0;
    if (!same)
        *action = !exists ? NCD_RC_CREATED
                  : body  ? NCD_RC_UPDATED
                          : NCD_RC_REMOVED;
    if (!same && !dry_run) {
        if (exists) {
            char bak[PATH_MAX + 32];
            snprintf(bak, sizeof bak, "%s.nccl-doctor.bak", target);
            rc = atomic_replace(ctx, bak, old, oldlen, &st, 1, wfn);
        }
        if (rc == 0)
            rc = atomic_replace(ctx, target, neu, newlen, &st, exists, wfn);
    }
    free(old);
    if (rc == 0 && new_content)
        *new_content = neu;
    else
        free(neu);
    if (rc < 0)
        *action = NCD_RC_UNCHANGED;
    return rc;
}
