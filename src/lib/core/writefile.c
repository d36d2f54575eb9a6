/* SPDX-License-Identifier: MIT */
/* The atomic whole-file writer (include/ncd/readall.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ncd/readall.h"

/* Writes all of buf to fd, retrying short writes and EINTR. */
static int write_all(int fd, const char *buf, size_t len)
{
    while (len) {
        ssize_t w = write(fd, buf, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        buf += w;
        len -= (size_t)w;
    }
    return 0;
}

/* Creates the temporary file next to `path`: its fd, with *tmpp the
 * malloc'd name, or -1 with errno. */
static int make_tmp(const char *path, char **tmpp)
{
    if (!path || !*path) {
        errno = EINVAL;
        return -1;
    }
    const char *slash = strrchr(path, '/');
    size_t dl = slash ? (size_t)(slash - path) + 1 : 0;
    const char *base = path + dl;
    if (!*base) { /* "dir/" names no file */
        errno = EISDIR;
        return -1;
    }
    size_t tl = dl + strlen(base) + 16;
    char *tmp = malloc(tl);
    if (!tmp) {
        errno = ENOMEM;
        return -1;
    }
    snprintf(tmp, tl, "%.*s.%s.tmp.XXXXXX", (int)dl, path, base);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        free(tmp);
        errno = e;
        return -1;
    }
    *tmpp = tmp;
    return fd;
}

int ncd_file_writable(const char *path)
{
    struct stat st;
    if (path && *path && stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        errno = EISDIR; /* rename() would fail at the end */
        return -1;
    }
    char *tmp = NULL;
    int fd = make_tmp(path, &tmp);
    if (fd < 0)
        return -1;
    close(fd);
    unlink(tmp);
    free(tmp);
    return 0;
}

int ncd_write_file_atomic(const char *path, const void *data, size_t len,
                          unsigned mode)
{
    char *tmp = NULL;
    int fd = make_tmp(path, &tmp);
    if (fd < 0)
        return -1;
    int rc = write_all(fd, data, len);
    if (rc == 0)
        rc = fchmod(fd, (mode_t)mode);
    if (rc == 0)
        rc = fsync(fd);
    int e = errno;
    if (close(fd) != 0 && rc == 0) {
        rc = -1;
        e = errno;
    }
    if (rc == 0 && rename(tmp, path) != 0) {
        rc = -1;
        e = errno;
    }
    if (rc != 0)
        unlink(tmp);
    free(tmp);
    errno = e;
    return rc;
}
