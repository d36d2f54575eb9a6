/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the --sysroot tarball reader (src/lib/archive/unpack.c,
 * through its in-memory entry ncd__sysroot_unpack_mem).  Input: the
 * tarball's bytes (any compression libarchive reads).  It unpacks into a
 * private TMPDIR of this process (under /dev/shm when there is one).
 * Properties, checked with abort():
 *  - the answer is 0 or one of the documented codes, with a message on
 *    failure;
 *  - a failure leaves nothing behind (TMPDIR is empty again);
 *  - a success gives a tree under TMPDIR holding only directories, regular
 *    files with one link each and symlinks whose target, resolved from the
 *    link's directory by name, stays inside the tree; at most
 *    NCD_SYSROOT_MAX_TOTAL bytes; the sysroot is the tree or its one top
 *    folder;
 *  - unpacking is a pure function: a second unpack gives the same tree
 *    (names, types, sizes, link targets);
 *  - ncd_sysroot_remove() removes the whole tree. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ncd/error.h"
#include "ncd/archive.h"
#include "ncd/strbuf.h"
#include "archive/libarchive.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_archive: property violated: %s\n", what);
        abort();
    }
}

static char tmpdir[PATH_MAX];

static void drop_tmpdir(void)
{
    if (tmpdir[0])
        rmdir(tmpdir);
}

static void setup(void)
{
    if (tmpdir[0])
        return;
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(tmpdir, sizeof tmpdir, "%s/ncd-fuzz-archive-%d-XXXXXX", base,
             (int)getpid());
    check(mkdtemp(tmpdir) != NULL, "a private TMPDIR");
    setenv("TMPDIR", tmpdir, 1);
    atexit(drop_tmpdir);
}

static int dir_empty(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return 0;
    struct dirent *de;
    int n = 0;
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
            n++;
    closedir(d);
    return n == 0;
}

/* Whether `target`, read from the directory `rel` (relative to the top,
 * "" for the top itself), names a path inside the top, by name only. */
static int link_inside(const char *rel, const char *target)
{
    if (target[0] == '/')
        return 0;
    int depth = 0;
    for (const char *p = rel; *p;) {
        while (*p == '/')
            p++;
        if (!*p)
            break;
        depth++;
        while (*p && *p != '/')
            p++;
    }
    for (const char *p = target; *p;) {
        while (*p == '/')
            p++;
        if (!*p)
            break;
        const char *e = strchr(p, '/');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == 2 && p[0] == '.' && p[1] == '.') {
            if (--depth < 0)
                return 0;
        } else if (!(l == 1 && p[0] == '.')) {
            depth++;
        }
        p += l;
    }
    return 1;
}

/* Lists the tree under dfd (relative path `rel`) into sb, sorted by
 * name; checks each entry.  Returns the bytes of regular files. */
static long long walk(int dfd, const char *rel, struct ncd_strbuf *sb)
{
    DIR *d = fdopendir(dfd);
    check(d != NULL, "an unpacked directory opens");
    struct dirent **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            names = realloc(names, cap * sizeof *names);
            check(names != NULL, "memory");
        }
        names[n] = malloc(sizeof *de);
        check(names[n] != NULL, "memory");
        memcpy(names[n++], de, sizeof *de);
    }
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && strcmp(names[j - 1]->d_name,
                                           names[j]->d_name) > 0; j--) {
            struct dirent *t = names[j];
            names[j] = names[j - 1];
            names[j - 1] = t;
        }
    long long bytes = 0;
    for (size_t i = 0; i < n; i++) {
        const char *nm = names[i]->d_name;
        char sub[PATH_MAX];
        snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", nm);
        struct stat st;
        check(fstatat(dirfd(d), nm, &st, AT_SYMLINK_NOFOLLOW) == 0,
              "an unpacked entry stats");
        if (S_ISDIR(st.st_mode)) {
            ncd_sb_printf(sb, "d %s\n", sub);
            int c = openat(dirfd(d), nm, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
                                             O_CLOEXEC);
            check(c >= 0, "an unpacked directory opens");
            bytes += walk(c, sub, sb);
        } else if (S_ISREG(st.st_mode)) {
            check(st.st_nlink == 1, "no hard links");
            ncd_sb_printf(sb, "f %s %lld\n", sub, (long long)st.st_size);
            bytes += st.st_size;
        } else if (S_ISLNK(st.st_mode)) {
            char t[PATH_MAX];
            ssize_t tl = readlinkat(dirfd(d), nm, t, sizeof t - 1);
            check(tl >= 0, "a symlink reads");
            t[tl] = '\0';
            check(link_inside(rel, t), "symlinks stay inside the tree");
            ncd_sb_printf(sb, "l %s -> %s\n", sub, t);
        } else {
            check(0, "only directories, files and symlinks");
        }
        free(names[i]);
    }
    free(names);
    closedir(d);
    return bytes;
}

/* One unpack; the listing of its tree in *out (NULL on failure). */
static int unpack_once(const uint8_t *data, size_t size, char **out)
{
    char dir[PATH_MAX], top[PATH_MAX], err[512];
    *out = NULL;
    err[0] = 'x';
    err[1] = '\0';
    int rc = ncd__sysroot_unpack_mem(data, size, "fuzz.tar", dir, sizeof dir,
                                     top, sizeof top, err, sizeof err);
    if (rc < 0) {
        check(rc == NCD_EPARSE || rc == NCD_ERANGE || rc == NCD_EIO ||
                  rc == NCD_ENOMEM || rc == NCD_EDLOPEN,
              "a documented error code");
        check(err[0] != '\0' && strcmp(err, "x") != 0, "a message");
        check(dir_empty(tmpdir), "a failure leaves nothing behind");
        return rc;
    }
    size_t tl = strlen(tmpdir);
    check(!strncmp(top, tmpdir, tl) && top[tl] == '/' &&
              !strchr(top + tl + 1, '/'),
          "the tree is a new directory in TMPDIR");
    size_t pl = strlen(top);
    check(!strncmp(dir, top, pl) &&
              (dir[pl] == '\0' ||
               (dir[pl] == '/' && dir[pl + 1] && !strchr(dir + pl + 1, '/'))),
          "the sysroot is the tree or its one top folder");
    int fd = open(top, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    check(fd >= 0, "the tree opens");
    struct ncd_strbuf sb = {0};
    long long bytes = walk(fd, "", &sb);
    check(bytes <= NCD_SYSROOT_MAX_TOTAL, "the size limit holds");
    *out = strdup(ncd_sb_str(&sb));
    ncd_sb_release(&sb);
    check(*out != NULL, "memory");
    check(ncd_sysroot_remove(top) == 0, "the tree can be removed");
    check(dir_empty(tmpdir), "nothing is left after removal");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup();
    char *a, *b;
    int r1 = unpack_once(data, size, &a);
    int r2 = unpack_once(data, size, &b);
    check(r1 == r2, "the same answer twice");
    check((!a && !b) || (a && b && !strcmp(a, b)), "the same tree twice");
    free(a);
    free(b);
    return 0;
}
