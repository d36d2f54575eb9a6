/* SPDX-License-Identifier: MIT */
/* The managed rc-file block on disk: symlink chains, flock, the check for
 * edits made meanwhile, temporary files (signal-safe record, sweep of stale
 * ones), atomic replacement.  The content itself is rcfile.c's. */
#define _GNU_SOURCE
#include "ncd/rcfile.h"
#include "ncd/error.h"
#include "ncd/strbuf.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define RC_MAX_LINKS 40          /* Linux's MAXSYMLINKS (linux/namei.h) */
#define RC_MAX_BYTES (16u << 20) /* far above any shell rc file */
#define RC_STALE_SECONDS (24 * 3600)
#define RC_UNLOCKED_MIN_AGE 60 /* seconds */
#define RC_CREATE_TRIES 4      /* the file created by another process */
#define RC_TMP_TAG ".ncd-tmp."
#define RC_TMP_BASE_MAX 200 /* of the file's name in a temporary name */
#define RC_LOCK_DEFAULT_MS 30000
#define RC_OPEN_TRIES 20 /* the name given to another file while we wait */

/* The file at the end of the symlink chain. */
struct rc_file {
    char path[PATH_MAX];
    char dir[PATH_MAX];
    const char *base; /* in path */
    int exists;
    int fd;     /* open while it exists; -1 otherwise */
    int locked; /* flock held on fd */
    struct stat st; /* of fd, after locking: what was read */
};

typedef char rc_tmpname[sizeof ((struct ncd_rc_guard *)0)->path];

void ncd_rc_guard_cleanup(struct ncd_rc_guard *g)
{
    if (!g || !g->armed)
        return;
    int e = errno;
    atomic_signal_fence(memory_order_seq_cst);
    unlink(g->path);
    errno = e;
}

static void guard_disarm(struct ncd_rc_guard *g)
{
    if (g) {
        atomic_signal_fence(memory_order_seq_cst);
        g->armed = 0;
    }
}

static int fail_errno(struct ncd_ctx *ctx, int e, const char *what,
                      const char *path)
{
    int code = e == ELOOP || e == ENAMETOOLONG ? NCD_EINVAL
               : e == EDQUOT                   ? NCD_ENOSPC
               : e == EROFS                    ? NCD_EPERM
                                               : ncd_err_from_errno(e);
    return ncd_fail(ctx, code == NCD_ESYS ? NCD_EIO : code, "%s%s%s: %s",
                    what, what[0] ? " " : "", path, strerror(e));
}

/* Follows `path` through symbolic links to the file (or free name) at the
 * end.  *st is that file's lstat, *exists 0 when the name is free. */
static int resolve(struct ncd_ctx *ctx, const char *path, char *out,
                   struct stat *st, int *exists)
{
    char cur[PATH_MAX];
    if (snprintf(cur, sizeof cur, "%s", path) >= (int)sizeof cur)
        return ncd_fail(ctx, NCD_EINVAL, "%.80s...: file name too long",
                        path);
    struct {
        dev_t dev;
        ino_t ino;
    } seen[RC_MAX_LINKS];
    *exists = 1;
    for (int n = 0;; n++) {
        if (lstat(cur, st) < 0) {
            if (errno == ENOENT) {
                *exists = 0;
                break;
            }
            return fail_errno(ctx, errno, "", cur);
        }
        if (!S_ISLNK(st->st_mode))
            break;
        for (int k = 0; k < n; k++)
            if (seen[k].dev == st->st_dev && seen[k].ino == st->st_ino)
                return ncd_fail(ctx, NCD_EINVAL,
                                "%s: the symbolic links form a loop (%s is "
                                "reached twice); nothing was changed",
                                path, cur);
        if (n == RC_MAX_LINKS)
            return ncd_fail(ctx, NCD_EINVAL,
                            "%s: a chain of more than %d symbolic links "
                            "(the most Linux follows); nothing was changed",
                            path, RC_MAX_LINKS);
        seen[n].dev = st->st_dev;
        seen[n].ino = st->st_ino;
        char to[PATH_MAX];
        ssize_t len = readlink(cur, to, sizeof to);
        if (len < 0)
            return fail_errno(ctx, errno, "reading the link", cur);
        if ((size_t)len >= sizeof to)
            return ncd_fail(ctx, NCD_EINVAL, "%s: link target too long",
                            cur);
        to[len] = '\0';
        /* A relative target is relative to the link's directory. */
        const char *sl = strrchr(cur, '/');
        size_t dlen = to[0] == '/' || !sl ? 0 : (size_t)(sl - cur) + 1;
        if (dlen + (size_t)len + 1 > sizeof cur)
            return ncd_fail(ctx, NCD_EINVAL, "%s: file name too long", cur);
        memcpy(cur + dlen, to, (size_t)len + 1);
    }
    memcpy(out, cur, strlen(cur) + 1);
    return 0;
}

static int split_path(struct ncd_ctx *ctx, struct rc_file *f)
{
    char *sl = strrchr(f->path, '/');
    if (!sl) {
        strcpy(f->dir, ".");
        f->base = f->path;
    } else {
        size_t n = sl == f->path ? 1 : (size_t)(sl - f->path);
        memcpy(f->dir, f->path, n);
        f->dir[n] = '\0';
        f->base = sl + 1;
    }
    if (!*f->base || strcmp(f->base, ".") == 0 || strcmp(f->base, "..") == 0)
        return ncd_fail(ctx, NCD_EINVAL, "%s: not a file name", f->path);
    return 0;
}

static long ms_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0->tv_sec) * 1000 +
           (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/* flock(LOCK_EX), waiting up to the timeout.  Where flock is not available
 * (ENOLCK: an NFS mount without a lock manager; EBADF: NFS and a read-only
 * descriptor) the file goes unlocked: the check before the rename still
 * catches an edit made meanwhile. */
static int lock_fd(struct ncd_ctx *ctx, struct rc_file *f,
                   const struct ncd_rc_opts *o)
{
    unsigned ms = o->lock_timeout_ms ? o->lock_timeout_ms
                                     : RC_LOCK_DEFAULT_MS;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        if (flock(f->fd, LOCK_EX | LOCK_NB) == 0) {
            f->locked = 1;
            return 0;
        }
        if (errno == EINTR)
            continue;
        if (errno != EWOULDBLOCK)
            return 0;
        if (ms_since(&t0) >= (long)ms)
            return ncd_fail(ctx, NCD_ETIMEOUT,
                            "%s is locked by another process (another "
                            "'nccl-doctor env --write'?) for more than %u "
                            "ms; nothing was changed, re-run when it is done",
                            f->path, ms);
        struct timespec nap = {0, 10 * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
}

/* Resolves, opens and locks the file; retries when the name was given to
 * another file meanwhile (an editor saving by rename, or another nccl-doctor
 * that held the lock). */
static int open_file(struct ncd_ctx *ctx, const char *path,
                     const struct ncd_rc_opts *o, struct rc_file *f)
{
    for (int tries = 0; tries < RC_OPEN_TRIES; tries++) {
        struct stat lst;
        int rc = resolve(ctx, path, f->path, &lst, &f->exists);
        if (rc == 0)
            rc = split_path(ctx, f);
        if (rc < 0)
            return rc;
        if (!f->exists)
            return 0;
        if (!S_ISREG(lst.st_mode))
            return ncd_fail(ctx, NCD_EINVAL,
                            "%s: not a regular file; nothing was changed",
                            f->path);
        /* Read-write where allowed: NFS grants an exclusive lock only to a
         * descriptor open for writing.  Read-only otherwise (a refusal
         * follows if a change is needed). */
        const int fl = O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
        int fd = o->dry_run ? -1 : open(f->path, O_RDWR | fl);
        if (fd < 0)
            fd = open(f->path, O_RDONLY | fl);
        if (fd < 0) {
            if (errno == ENOENT || errno == ELOOP)
                continue; /* removed or replaced by a link meanwhile */
            return fail_errno(ctx, errno, "", f->path);
        }
        f->fd = fd;
        if (!o->dry_run && (rc = lock_fd(ctx, f, o)) < 0)
            return rc;
        if (fstat(fd, &f->st) < 0)
            return fail_errno(ctx, errno, "", f->path);
        if (lstat(f->path, &lst) == 0 && lst.st_dev == f->st.st_dev &&
            lst.st_ino == f->st.st_ino && S_ISREG(f->st.st_mode))
            return 0;
        close(fd);
        f->fd = -1;
        f->locked = 0;
    }
    return ncd_fail(ctx, NCD_EIO,
                    "%s keeps being replaced by another program; nothing "
                    "was changed, re-run",
                    path);
}

static int read_fd(struct ncd_ctx *ctx, const struct rc_file *f, char **buf,
                   size_t *len)
{
    *buf = NULL;
    *len = 0;
    struct ncd_strbuf sb = {0};
    char chunk[65536];
    for (off_t off = 0;;) {
        ssize_t r = pread(f->fd, chunk, sizeof chunk, off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            ncd_sb_release(&sb);
            return fail_errno(ctx, e, "reading", f->path);
        }
        if (r == 0)
            break;
        off += r;
        if ((size_t)off > RC_MAX_BYTES) {
            ncd_sb_release(&sb);
            return ncd_fail(ctx, NCD_EINVAL,
                            "%s is over %u MiB: not a shell rc file; "
                            "nothing was changed",
                            f->path, RC_MAX_BYTES >> 20);
        }
        ncd_sb_add(&sb, chunk, (size_t)r);
    }
    if (sb.oom) {
        ncd_sb_release(&sb);
        return NCD_ENOMEM;
    }
    *len = sb.len;
    *buf = ncd_sb_detach(&sb);
    return *buf ? 0 : NCD_ENOMEM;
}

/* Refusals that apply only when the file is to change. */
static int check_policy(struct ncd_ctx *ctx, const struct rc_file *f)
{
    if (!f->exists)
        return 0;
    if (f->st.st_nlink > 1)
        return ncd_fail(ctx, NCD_EPERM,
                        "%s has %lu hard links: a rename would split them "
                        "(this name would get a new file, the other names "
                        "keep the old content) and rewriting it in place is "
                        "not crash-safe, so nccl-doctor leaves it unchanged; "
                        "--dry-run prints the new content to apply by hand",
                        f->path, (unsigned long)f->st.st_nlink);
    /* root passes access(2) for any file: judge by the mode bits. */
    if (geteuid() == 0 && !(f->st.st_mode & 0222))
        return ncd_fail(ctx, NCD_EPERM,
                        "%s is read-only (mode %04o), so not writable: "
                        "nccl-doctor does not replace a read-only file, even "
                        "as root; it is unchanged (chmod u+w it first if you "
                        "mean it)",
                        f->path, (unsigned)(f->st.st_mode & 07777));
    if (geteuid() != 0 && faccessat(AT_FDCWD, f->path, W_OK, AT_EACCESS) < 0)
        return ncd_fail(ctx, NCD_EPERM, "%s is not writable: %s", f->path,
                        strerror(errno));
    return 0;
}

/* Writes `data` to a new temporary file next to the target, with the
 * target's mode (and owner, as root); fsync'ed and closed.  Recorded in the
 * guard from before it exists until the caller renames or drops it. */
static int tmp_write(struct ncd_ctx *ctx, const struct rc_file *f,
                     const char *dest, const char *data, size_t len,
                     const struct ncd_rc_opts *o, char *tmp)
{
    struct ncd_rc_guard *g = o->guard;
    int n = snprintf(tmp, sizeof(rc_tmpname), "%s/.%.*s" RC_TMP_TAG "%ld.XXXXXX",
                     f->dir, RC_TMP_BASE_MAX, f->base, (long)getpid());
    if (n < 0 || (size_t)n >= sizeof(rc_tmpname))
        return ncd_fail(ctx, NCD_EINVAL, "%s: file name too long", dest);
    int fd;
    if (g) {
        memcpy(g->path, tmp, (size_t)n + 1);
        atomic_signal_fence(memory_order_seq_cst);
        g->armed = 1;
        atomic_signal_fence(memory_order_seq_cst);
        fd = mkostemp(g->path, O_CLOEXEC);
        memcpy(tmp, g->path, (size_t)n + 1);
    } else {
        fd = mkostemp(tmp, O_CLOEXEC);
    }
    if (fd < 0) {
        int e = errno;
        guard_disarm(g);
        return ncd_fail(ctx,
                        e == ENOSPC || e == EDQUOT ? NCD_ENOSPC
                        : e == EACCES || e == EPERM || e == EROFS
                            ? NCD_EPERM
                            : NCD_EIO,
                        "cannot create a temporary file in %s: %s; %s is "
                        "unchanged",
                        f->dir, strerror(e), f->path);
    }
    int rc = 0;
    mode_t mode;
    if (f->exists) {
        mode = f->st.st_mode & 07777;
    } else {
        mode_t um = umask(0);
        umask(um);
        mode = 0666 & ~um;
    }
    if (fchmod(fd, mode) < 0)
        rc = fail_errno(ctx, errno, "chmod", tmp);
    if (rc == 0 && f->exists && geteuid() == 0 &&
        fchown(fd, f->st.st_uid, f->st.st_gid) < 0)
        rc = fail_errno(ctx, errno, "chown", tmp);
    ncd_write_fn wr = o->write_fn ? o->write_fn : write;
    for (size_t off = 0; rc == 0 && off < len;) {
        ssize_t w = wr(fd, data + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = w < 0 ? errno : ENOSPC;
            rc = ncd_fail(ctx,
                          e == ENOSPC || e == EDQUOT ? NCD_ENOSPC : NCD_EIO,
                          "writing %s: %s (%s is unchanged)", dest,
                          strerror(e), f->path);
            break;
        }
        off += (size_t)w;
    }
    if (rc == 0 && fsync(fd) < 0)
        rc = ncd_fail(ctx, errno == ENOSPC ? NCD_ENOSPC : NCD_EIO,
                      "writing %s: fsync: %s (%s is unchanged)", dest,
                      strerror(errno), f->path);
    if (close(fd) < 0 && rc == 0)
        rc = ncd_fail(ctx, errno == ENOSPC ? NCD_ENOSPC : NCD_EIO,
                      "writing %s: close: %s (%s is unchanged)", dest,
                      strerror(errno), f->path);
    if (rc < 0) {
        unlink(tmp);
        guard_disarm(g);
    }
    return rc;
}

static void tmp_drop(const char *tmp, struct ncd_rc_guard *g)
{
    unlink(tmp);
    guard_disarm(g);
}

/* The file is still what was read: same inode under its name, same
 * metadata, same bytes. */
static int check_unchanged(struct ncd_ctx *ctx, const struct rc_file *f,
                           const char *old, size_t oldlen)
{
    struct stat now, byname;
    const char *why = NULL;
    if (fstat(f->fd, &now) < 0)
        return fail_errno(ctx, errno, "", f->path);
    if (lstat(f->path, &byname) < 0) {
        if (errno != ENOENT)
            return fail_errno(ctx, errno, "", f->path);
        why = "removed";
    } else if (byname.st_dev != f->st.st_dev ||
               byname.st_ino != f->st.st_ino) {
        why = "replaced by a new file";
    } else if (now.st_size != f->st.st_size ||
               now.st_mtim.tv_sec != f->st.st_mtim.tv_sec ||
               now.st_mtim.tv_nsec != f->st.st_mtim.tv_nsec) {
        why = "written to";
    } else if (now.st_mode != f->st.st_mode || now.st_uid != f->st.st_uid ||
               now.st_gid != f->st.st_gid ||
               now.st_nlink != f->st.st_nlink) {
        why = "given another mode, owner or link count";
    } else if (now.st_ctim.tv_sec != f->st.st_ctim.tv_sec ||
               now.st_ctim.tv_nsec != f->st.st_ctim.tv_nsec) {
        why = "changed";
    } else {
        char *cur;
        size_t curlen;
        int rc = read_fd(ctx, f, &cur, &curlen);
        if (rc < 0)
            return rc;
        if (curlen != oldlen || memcmp(cur, old, oldlen) != 0)
            why = "written to";
        free(cur);
    }
    if (!why)
        return 0;
    return ncd_fail(ctx, NCD_EIO,
                    "%s was %s by another program while nccl-doctor was "
                    "editing it; nothing was written and its current "
                    "content is kept: re-run the command",
                    f->path, why);
}

/* Renames the temporary file over the target, or to the free name without
 * replacing a file created there meanwhile. */
static int commit(struct ncd_ctx *ctx, const struct rc_file *f,
                  const char *tmp, int *raced)
{
    if (f->exists) {
        if (rename(tmp, f->path) < 0)
            return fail_errno(ctx, errno, "renaming the new content to",
                              f->path);
        return 0;
    }
    int e = 0;
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, f->path, RENAME_NOREPLACE) < 0) {
        e = errno;
        if (e == EINVAL || e == ENOSYS || e == EOPNOTSUPP) {
            /* No RENAME_NOREPLACE here (NFS): link(2) never replaces. */
            e = link(tmp, f->path) < 0 ? errno : 0;
            if (e == 0)
                unlink(tmp);
        }
    }
    if (e == EEXIST) {
        *raced = 1;
        return ncd_fail(ctx, NCD_EEXISTS,
                        "%s was created by another program while "
                        "nccl-doctor was writing it, again and again; "
                        "nothing was written: re-run the command",
                        f->path);
    }
    return e ? fail_errno(ctx, e, "creating", f->path) : 0;
}

/* Removes temporary files of this target left by a process that died
 * (SIGKILL, crash, power loss): their pid is gone, or they are over a day
 * old.  With the lock held no live writer of this file is between its
 * mkstemp and its rename.  Without it (the file does not exist yet: nothing
 * to lock), only files over a minute old go: a pid from another host
 * sharing the directory over NFS says nothing, but no write takes that
 * long. */
static void sweep_stale(const struct rc_file *f)
{
    char prefix[RC_TMP_BASE_MAX + 32];
    int plen = snprintf(prefix, sizeof prefix, ".%.*s" RC_TMP_TAG,
                        RC_TMP_BASE_MAX, f->base);
    DIR *d = opendir(f->dir);
    if (!d)
        return;
    time_t now = time(NULL);
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *name = de->d_name, *p = name + plen;
        if (strncmp(name, prefix, (size_t)plen) != 0 ||
            !isdigit((unsigned char)*p))
            continue;
        char *end;
        errno = 0;
        long pid = strtol(p, &end, 10);
        if (errno || pid <= 0 || pid > INT_MAX || *end != '.' ||
            strlen(end + 1) != 6 || pid == (long)getpid())
            continue;
        struct stat st;
        if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
            !S_ISREG(st.st_mode) ||
            (st.st_uid != geteuid() &&
             (!f->exists || st.st_uid != f->st.st_uid)))
            continue;
        int alive = kill((pid_t)pid, 0) == 0 || errno == EPERM;
        time_t age = now - st.st_mtime;
        if ((alive && age < RC_STALE_SECONDS) ||
            (!f->locked && age < RC_UNLOCKED_MIN_AGE))
            continue;
        unlinkat(dirfd(d), name, 0);
    }
    closedir(d);
}

static int write_out(struct ncd_ctx *ctx, const struct rc_file *f,
                     const char *old, size_t oldlen, const char *neu,
                     size_t newlen, const struct ncd_rc_opts *o, int *raced)
{
    rc_tmpname tmp;
    int rc;
    if (f->exists) {
        char bak[PATH_MAX + 32];
        snprintf(bak, sizeof bak, "%s.nccl-doctor.bak", f->path);
        rc = tmp_write(ctx, f, bak, old, oldlen, o, tmp);
        if (rc < 0)
            return rc;
        if (rename(tmp, bak) < 0) {
            int e = errno;
            tmp_drop(tmp, o->guard);
            return ncd_fail(ctx, NCD_EIO,
                            "cannot keep a backup in %s: %s; %s is unchanged",
                            bak, strerror(e), f->path);
        }
        guard_disarm(o->guard);
    }
    rc = tmp_write(ctx, f, f->path, neu, newlen, o, tmp);
    if (rc < 0)
        return rc;
    if (o->before_commit && o->before_commit(o->hook_arg, tmp) != 0)
        rc = ncd_fail(ctx, NCD_EIO,
                      "%s: the update was abandoned before the rename; the "
                      "file is unchanged",
                      f->path);
    if (rc == 0 && f->exists)
        rc = check_unchanged(ctx, f, old, oldlen);
    if (rc == 0)
        rc = commit(ctx, f, tmp, raced);
    if (rc < 0) {
        tmp_drop(tmp, o->guard);
        return rc;
    }
    guard_disarm(o->guard);
    int dfd = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return 0;
}

/* One attempt; *raced is set when the file appeared while it was being
 * created, so that the caller starts over with it. */
static int update_once(struct ncd_ctx *ctx, const char *path,
                       const char *body, const struct ncd_rc_opts *o,
                       enum ncd_rc_action *action, char **new_content,
                       int *raced)
{
    struct rc_file f = {.fd = -1};
    char *old = NULL, *neu = NULL;
    size_t oldlen = 0, newlen = 0;
    int rc = open_file(ctx, path, o, &f);
    if (rc == 0 && f.exists)
        rc = read_fd(ctx, &f, &old, &oldlen);
    if (rc < 0 || (!f.exists && !body))
        goto out; /* an error, or nothing to remove */
    if (!o->dry_run && (f.locked || !f.exists))
        sweep_stale(&f);
    int had_error = ncd_ctx_errcode(ctx) != NCD_OK;
    rc = ncd_rc_splice(ctx, old ? old : "", oldlen, body, &neu, &newlen);
    if (rc < 0) {
        if (!had_error) { /* name the file in the splice's detail */
            char d[900];
            snprintf(d, sizeof d, "%s", ncd_ctx_errdetail(ctx));
            ncd_ctx_clear_error(ctx);
            ncd_fail(ctx, rc, "%s: %s", f.path, d);
        }
        goto out;
    }
    if (f.exists && newlen == oldlen && memcmp(neu, old, oldlen) == 0)
        goto done;
    if (!o->dry_run) {
        rc = check_policy(ctx, &f);
        if (rc == 0)
            rc = write_out(ctx, &f, old, oldlen, neu, newlen, o, raced);
        if (rc < 0)
            goto out;
    }
    *action = !f.exists ? NCD_RC_CREATED
              : body    ? NCD_RC_UPDATED
                        : NCD_RC_REMOVED;
done:
    if (new_content) {
        *new_content = neu;
        neu = NULL;
    }
out:
    if (f.fd >= 0)
        close(f.fd); /* releases the lock */
    free(old);
    free(neu);
    return rc;
}

int ncd_rc_update(struct ncd_ctx *ctx, const char *path, const char *body,
                  const struct ncd_rc_opts *opts, enum ncd_rc_action *action,
                  char **new_content)
{
    static const struct ncd_rc_opts defaults;
    const struct ncd_rc_opts *o = opts ? opts : &defaults;
    *action = NCD_RC_UNCHANGED;
    if (new_content)
        *new_content = NULL;
    if (!path || !*path)
        return ncd_fail(ctx, NCD_EINVAL, "no file name given");
    /* A file created by someone else while this one was being created is
     * no conflict: start over with it (as when every node of a cluster
     * writes the same file in a shared home). */
    int had_error = ncd_ctx_errcode(ctx) != NCD_OK, rc;
    for (int tries = 1;; tries++) {
        int raced = 0;
        rc = update_once(ctx, path, body, o, action, new_content, &raced);
        if (!raced || tries == RC_CREATE_TRIES)
            break;
        if (!had_error)
            ncd_ctx_clear_error(ctx);
    }
    return rc;
}
