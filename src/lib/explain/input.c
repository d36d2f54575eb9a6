/* SPDX-License-Identifier: MIT */
/*
 * explain's inputs: files (plain or gzip, sniffed), directories of per-rank
 * logs, stdin, and directories of user rules.  A client of the scan API
 * (ncd_explain_begin/feed/end) and of ncd_rules_load_buf(); problems with
 * one input are reported through the caller's callback and the scan goes
 * on, since the lines read before a problem still count.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <pthread.h>
#include <stdint.h>
#include <unistd.h>
#include <zlib.h>

#include "core/dl.h"
#include "explain/session.h"
#include "ncd/error.h"
#include "ncd/fs.h"

#define READ_CHUNK (1u << 18) /* bytes per read() / gzread(): the copy stays
                                * in L2 for the scan (1 MiB measured ~4% more
                                * CPU on bench/explain) */
#define MAX_DEPTH 4           /* directory levels walked below an input */
#define MAX_RULES_FILE (16u << 20)

struct walk {
    struct ncd_explain *ex;
    struct ncd_explain_inputs *in;
    char *buf;
    int rc; /* the last problem's code, 0 when none */
};

/*
 * Adds (dev, ino) to the scan's set of files and directories read; 1 when
 * it is new, 0 when it was there, NCD_ENOMEM.  Keyed on the inode, so a
 * file named twice, hard links, symlinks and bind mounts of one directory
 * are all read once, and a directory symlink cycle ends.
 */
static int seen_add(struct ncd_explain *ex, const struct stat *st)
{
    unsigned long long dev = (unsigned long long)st->st_dev,
                       ino = (unsigned long long)st->st_ino;
    if (ino == 0)
        return 1; /* no identity to compare: read it */
    if (2 * (ex->nseen + 1) > ex->capseen) {
        size_t nc = ex->capseen ? 2 * ex->capseen : 64;
        struct ncd__fileid *nv = calloc(nc, sizeof *nv);
        if (!nv)
            return NCD_ENOMEM;
        for (size_t i = 0; i < ex->capseen; i++) {
            if (!ex->seen[i].ino)
                continue;
            size_t k = (size_t)((ex->seen[i].ino * 0x9E3779B97F4A7C15ull) ^
                                ex->seen[i].dev) & (nc - 1);
            while (nv[k].ino)
                k = (k + 1) & (nc - 1);
            nv[k] = ex->seen[i];
        }
        free(ex->seen);
        ex->seen = nv;
        ex->capseen = nc;
    }
    size_t k = (size_t)((ino * 0x9E3779B97F4A7C15ull) ^ dev) &
               (ex->capseen - 1);
    while (ex->seen[k].ino) {
        if (ex->seen[k].ino == ino && ex->seen[k].dev == dev)
            return 0;
        k = (k + 1) & (ex->capseen - 1);
    }
    ex->seen[k].dev = dev;
    ex->seen[k].ino = ino;
    ex->nseen++;
    return 1;
}

static void problem(struct walk *w, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void problem(struct walk *w, int code, const char *fmt, ...)
{
    w->in->nfailed++;
    w->rc = code;
    if (!w->in->problem)
        return;
    char *msg = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&msg, fmt, ap);
    va_end(ap);
    w->in->problem(w->in->arg, n >= 0 ? msg : "out of memory");
    if (n >= 0)
        free(msg);
}

static int cmp_names(const void *x, const void *y)
{
    return ncd_natcmp(*(char *const *)x, *(char *const *)y);
}

/*
 * The names in `dir` that `keep` accepts (names starting with '.' never),
 * in natural order ("rank2" before "rank10").  Caller frees each name and
 * the array.  Returns the count or the negative errno of opendir.
 */
static long list_dir(const char *dir, int (*keep)(const char *name),
                     char ***out)
{
    *out = NULL;
    DIR *d = opendir(dir);
    if (!d)
        return -errno;
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.' || (keep && !keep(de->d_name)))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **nv = realloc(names, cap * sizeof *nv);
            if (!nv)
                break;
            names = nv;
        }
        if ((names[n] = strdup(de->d_name)))
            n++;
    }
    closedir(d);
    if (n > 1)
        qsort(names, n, sizeof *names, cmp_names);
    *out = names;
    return (long)n;
}

static void free_names(char **names, long n)
{
    for (long i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* zlib is dlopen'ed on first use, as libarchive is (archive/libarchive.c):
 * only gzip input and pipes need it, and linked, it was mapped and
 * relocated at every start of every command.  The names below stand for
 * the loaded functions. */
#define NCD__Z_FUNCS(X)                                                       \
    X(dopen, gzdopen)                                                         \
    X(buffer, gzbuffer)                                                       \
    X(read, gzread)                                                           \
    X(direct, gzdirect)                                                       \
    X(error, gzerror)                                                         \
    X(close, gzclose)

static struct {
#define NCD__Z_FIELD(field, sym) __typeof__(sym) *field;
    NCD__Z_FUNCS(NCD__Z_FIELD)
#undef NCD__Z_FIELD
} zl;
static char z_error[256];
static int z_loaded;
static pthread_once_t z_once = PTHREAD_ONCE_INIT;

static void z_load(void)
{
    /* libz.so.1: zlib's soname since 1.x (Debian zlib1g); the dev symlink
     * as a last resort for builds elsewhere. */
    static const char *const names[] = {"libz.so.1", "libz.so"};
    static const char *const syms[] = {NCD__Z_FUNCS(NCD__DL_NAME)};
    void *fn[sizeof syms / sizeof *syms];
    if (ncd__dl_load("zlib", "zlib1g", names,
                     sizeof names / sizeof *names, syms, fn,
                     sizeof fn / sizeof *fn, z_error, sizeof z_error) < 0)
        return;
    size_t i = 0;
#define NCD__Z_SET(field, sym)                                               \
    zl.field = (__typeof__(zl.field))(uintptr_t)fn[i++];
    NCD__Z_FUNCS(NCD__Z_SET)
#undef NCD__Z_SET
    /* never dlclose'd: the table points into it for the process' life */
    z_loaded = 1;
}

/* "<fd:3>: message" (zlib's prefix) -> "message" */
static const char *gz_message(gzFile gz, int *errnum)
{
    const char *msg = zl.error(gz, errnum);
    if (strncmp(msg, "<fd:", 4) == 0 && strstr(msg, ": "))
        msg = strstr(msg, ": ") + 2;
    return msg;
}

/* Reads a regular file with read(): no copy through zlib's buffers; a
 * large one with the scan's threads when it has several. */
static void feed_plain(struct walk *w, int fd, const char *name, off_t size)
{
    if (w->ex->threads > 1 && size >= (off_t)2 << 20) {
        int rc = ncd__explain_feed_fd(w->ex, fd, (size_t)size);
        if (rc == 0)
            return;
        if (rc != NCD_ENOMEM) {
            problem(w, ncd_err_from_errno(-rc),
                    "%s: %s (the lines before it were used)", name,
                    rc == -EIO ? "the file shrank while it was read"
                               : strerror(-rc));
            return;
        }
        /* no memory for the threads' blocks: one thread reads it */
    }
    for (;;) {
        ssize_t n = read(fd, w->buf, READ_CHUNK);
        if (n > 0) {
            ncd_explain_feed(w->ex, w->buf, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            problem(w, ncd_err_from_errno(errno),
                    "%s: %s (the lines before it were used)", name,
                    strerror(errno));
        return;
    }
}

/* gzip data, or a pipe / device that zlib reads transparently. */
static void feed_gz(struct walk *w, gzFile gz, const char *name)
{
    zl.buffer(gz, 256 * 1024);
    unsigned long long cap = w->in->max_inflated ? w->in->max_inflated
                                                 : NCD_EXPLAIN_MAX_INFLATED,
                       total = 0;
    for (;;) {
        int n = zl.read(gz, w->buf, READ_CHUNK);
        if (n > 0) {
            if (!zl.direct(gz) && total + (unsigned long long)n > cap) {
                /* the lines up to the cap count; the rest is dropped */
                ncd_explain_feed(w->ex, w->buf, (size_t)(cap - total));
                problem(w, NCD_ERANGE,
                        "%s: stopped after %llu MiB of decompressed data "
                        "(the cap for one gzip input; the lines before it "
                        "were used)",
                        name, cap >> 20);
                return;
            }
            total += (unsigned long long)n;
            ncd_explain_feed(w->ex, w->buf, (size_t)n);
            continue;
        }
        int errnum;
        const char *msg = gz_message(gz, &errnum);
        if (n < 0)
            /* a truncated .gz still gave us its lines: say so, go on */
            problem(w, NCD_EIO, "%s: %s (the lines before it were used)", name,
                    errnum == Z_ERRNO ? strerror(errno) : msg);
        else if (errnum != Z_OK) /* end of input: truncation is Z_BUF_ERROR */
            problem(w, NCD_EIO, "%s: %s%s (the lines before it were used)",
                    name, msg,
                    errnum == Z_BUF_ERROR ? ", truncated gzip file" : "");
        return;
    }
}

/*
 * What a regular file's first bytes say it is when it is no log: an
 * executable or core file, or an archive or compression explain does not
 * open (it reads gzip itself); NULL for anything else.  `how` gets the
 * command that makes a log of it, or "".  Magic numbers: elf(5), bzip2
 * "BZh1".."BZh9", xz FD 37 7A 58 5A 00, zstd frame 28 B5 2F FD, lz4 frame
 * 04 22 4D 18, zip 50 4B 03 04, 7z 37 7A BC AF 27 1C.
 */
static const char *not_a_log(const unsigned char *m, size_t n, const char **how)
{
    static const struct {
        unsigned char magic[6];
        size_t len;
        const char *what, *how;
    } kinds[] = {
        {{0x7f, 'E', 'L', 'F'}, 4,
         "an ELF binary (program, library or core file)", ""},
        {{0xfd, '7', 'z', 'X', 'Z', 0}, 6, "xz-compressed", "xzcat"},
        {{0x28, 0xb5, 0x2f, 0xfd}, 4, "zstd-compressed", "zstdcat"},
        {{0x04, 0x22, 0x4d, 0x18}, 4, "lz4-compressed", "lz4cat"},
        {{'P', 'K', 3, 4}, 4, "a zip archive", "unzip -p"},
        {{'7', 'z', 0xbc, 0xaf, 0x27, 0x1c}, 6, "a 7z archive", "7z x -so"},
    };
    *how = "";
    if (n >= 4 && m[0] == 'B' && m[1] == 'Z' && m[2] == 'h' && m[3] >= '1' &&
        m[3] <= '9') {
        *how = "bzcat";
        return "bzip2-compressed";
    }
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (n >= kinds[i].len && memcmp(m, kinds[i].magic, kinds[i].len) == 0) {
            *how = kinds[i].how;
            return kinds[i].what;
        }
    return NULL;
}

/* Feeds one open file descriptor (closed here) as source `name`. */
static void feed_fd(struct walk *w, int fd, const char *name)
{
    struct stat st;
    unsigned char magic[6];
    int reg = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    ssize_t nm = reg ? pread(fd, magic, sizeof magic, 0) : -1;
    const char *how, *what = nm > 0 ? not_a_log(magic, (size_t)nm, &how) : NULL;
    if (what) {
        close(fd);
        if (*how)
            problem(w, NCD_EUNSUPPORTED,
                    "%s: %s, not read (decompress it first: %s '%s' | "
                    "nccl-doctor explain -)",
                    name, what, how, name);
        else
            problem(w, NCD_EUNSUPPORTED, "%s: %s, not a log: not read", name,
                    what);
        return;
    }
    int plain = reg && !(nm >= 2 && magic[0] == 0x1f && magic[1] == 0x8b);
    gzFile gz = NULL;
    if (!plain) {
        pthread_once(&z_once, z_load);
        if (!z_loaded) {
            close(fd);
            problem(w, NCD_EDLOPEN, "%s: cannot read: %s", name, z_error);
            return;
        }
    }
    if (!plain && !(gz = zl.dopen(fd, "rb"))) {
        close(fd);
        problem(w, NCD_ENOMEM, "%s: cannot read: out of memory", name);
        return;
    }
    int rc = ncd_explain_begin(w->ex, name);
    if (rc < 0) {
        const char *why = ncd_ctx_errdetail(w->ex->ctx);
        problem(w, rc, "%s: %s", name, *why ? why : ncd_strerror(rc));
        if (gz)
            zl.close(gz);
        else
            close(fd);
        return;
    }
    if (gz)
        feed_gz(w, gz, name);
    else
        feed_plain(w, fd, name, st.st_size);
    ncd_explain_end(w->ex);
    if (gz)
        zl.close(gz);
    else
        close(fd);
    w->in->nread++;
}

static void feed_path(struct walk *w, const char *path, int depth)
{
    if (depth == 0 && strcmp(path, "-") == 0) {
        int fd = dup(STDIN_FILENO);
        if (fd < 0) {
            problem(w, ncd_err_from_errno(errno), "stdin: %s", strerror(errno));
            return;
        }
        feed_fd(w, fd, "<stdin>");
        return;
    }
    /* inside directories only regular files and directories: a FIFO or a
     * device there would block or never end; and, as grep -r, a symbolic
     * link to a directory is not followed (one to /proc or / would walk
     * files without end), while one to a file is read (kubelet's
     * /var/log/containers files are links) */
    struct stat pre, lpre;
    if (depth > 0 && stat(path, &pre) == 0) {
        if (!S_ISREG(pre.st_mode) && !S_ISDIR(pre.st_mode))
            return;
        if (S_ISDIR(pre.st_mode) && lstat(path, &lpre) == 0 &&
            S_ISLNK(lpre.st_mode)) {
            w->in->nlinkdirs++;
            return;
        }
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        problem(w, ncd_err_from_errno(errno), "%s: %s", path, strerror(errno));
        return;
    }
    struct stat st;
    int isdir = fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
    if ((isdir || S_ISREG(st.st_mode))) {
        int fresh = seen_add(w->ex, &st);
        if (fresh <= 0) {
            close(fd);
            if (fresh == 0)
                w->in->nagain++;
            else
                problem(w, fresh, "%s: out of memory", path);
            return;
        }
    }
    if (!isdir) {
        feed_fd(w, fd, path);
        return;
    }
    close(fd);
    if (depth >= MAX_DEPTH)
        return;
    char **names;
    long n = list_dir(path, NULL, &names);
    if (n < 0) {
        problem(w, ncd_err_from_errno((int)-n), "%s: %s", path,
                strerror((int)-n));
        return;
    }
    for (long i = 0; i < n; i++) {
        char *p = NULL;
        if (asprintf(&p, "%s/%s", path, names[i]) >= 0) {
            feed_path(w, p, depth + 1);
            free(p);
        }
    }
    free_names(names, n);
}

int ncd_explain_feed_path(struct ncd_explain *ex, const char *path,
                          struct ncd_explain_inputs *in)
{
    struct walk w = {.ex = ex, .in = in};
    if (!(w.buf = calloc(1, READ_CHUNK)))
        return NCD_ENOMEM;
    feed_path(&w, path, 0);
    free(w.buf);
    return w.rc;
}

static int is_yaml(const char *name)
{
    size_t l = strlen(name);
    return l >= 6 && (strcmp(name + l - 5, ".yaml") == 0 ||
                      strcmp(name + l - 4, ".yml") == 0);
}

/* The whole regular file `path` into a new buffer (*len bytes, plus a
 * NUL).  0 or a negative NCD_E* code with the detail in ctx. */
static int read_file(struct ncd_ctx *ctx, const char *path, char **out,
                     size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return ncd_fail(ctx, ncd_err_from_errno(errno), "%s: %s", path,
                        strerror(errno));
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
        (size_t)st.st_size > MAX_RULES_FILE) {
        close(fd);
        return ncd_fail(ctx, NCD_EINVAL, "%s: not a regular file of at most "
                        "%u MiB", path, MAX_RULES_FILE >> 20);
    }
    struct ncd_strbuf sb = {0};
    char tmp[8192];
    ssize_t n;
    while ((n = read(fd, tmp, sizeof tmp)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            close(fd);
            ncd_sb_release(&sb);
            return ncd_fail(ctx, ncd_err_from_errno(e), "%s: %s", path,
                            strerror(e));
        }
        ncd_sb_add(&sb, tmp, (size_t)n);
    }
    close(fd);
    if (sb.oom) {
        ncd_sb_release(&sb);
        return NCD_ENOMEM;
    }
    *len = sb.len;
    *out = sb.len ? ncd_sb_detach(&sb) : strdup("");
    return *out ? 0 : NCD_ENOMEM;
}

int ncd_rules_load_dir(struct ncd_ctx *ctx, struct ncd_rules *rules,
                       const char *dir)
{
    char **names;
    long n = list_dir(dir, is_yaml, &names);
    if (n < 0)
        return ncd_fail(ctx, ncd_err_from_errno((int)-n), "%s: %s", dir,
                        strerror((int)-n));
    int total = 0, rc = 0;
    for (long i = 0; i < n && rc >= 0; i++) {
        char *p = NULL, *buf = NULL;
        size_t len = 0;
        if (asprintf(&p, "%s/%s", dir, names[i]) < 0) {
            rc = NCD_ENOMEM;
            break;
        }
        if ((rc = read_file(ctx, p, &buf, &len)) == 0 &&
            (rc = ncd__rules_load_doc(ctx, rules, p, buf, len, 0, 0)) >= 0)
            total += rc;
        free(buf);
        free(p);
    }
    free_names(names, n);
    if (rules->prefilter_stale && ncd__prefilter_build(rules) < 0 && rc >= 0)
        rc = NCD_ENOMEM;
    return rc < 0 ? rc : total;
}
