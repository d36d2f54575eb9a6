/* SPDX-License-Identifier: MIT */
/* The grow-buffer reader (include/ncd/readall.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ncd/readall.h"

#define RD_DEFAULT_MAX ((size_t)64 << 20)
#define RD_FIRST 4096

static size_t max_of(const struct ncd_rdbuf *b)
{
    return b->max ? b->max : RD_DEFAULT_MAX;
}

ssize_t ncd_rdbuf_fill(struct ncd_rdbuf *b, int fd)
{
    size_t max = max_of(b);
    if (b->len < max && b->cap - b->len < RD_FIRST) {
        size_t ncap = b->cap ? b->cap * 2 : RD_FIRST;
        if (ncap > max)
            ncap = max;
        char *nd = realloc(b->data, ncap + 1);
        if (!nd) {
            errno = ENOMEM;
            return -1;
        }
        b->data = nd;
        b->cap = ncap;
        b->data[b->len] = '\0';
    }
    if (b->len >= max) {
        /* full: keep draining so the writer never blocks */
        char sink[4096];
        ssize_t n = read(fd, sink, sizeof sink);
        if (n > 0)
            b->truncated = 1;
        return n;
    }
    ssize_t n = read(fd, b->data + b->len, b->cap - b->len);
    if (n > 0) {
        b->len += (size_t)n;
        b->data[b->len] = '\0';
    }
    return n;
}

int ncd_read_fd(int fd, struct ncd_rdbuf *out)
{
    for (;;) {
        ssize_t n = ncd_rdbuf_fill(out, fd);
        if (n == 0)
            break;
        if (n < 0 && errno != EINTR)
            return -1;
    }
    if (!out->data) {
        /* an empty input is an empty string, not NULL */
        out->data = calloc(1, 1);
        if (!out->data) {
            errno = ENOMEM;
            return -1;
        }
    }
    return 0;
}

int ncd_read_file(const char *path, struct ncd_rdbuf *out)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = ncd_read_fd(fd, out);
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

void ncd_rdbuf_release(struct ncd_rdbuf *b)
{
    if (!b)
        return;
    size_t max = b->max;
    free(b->data);
    memset(b, 0, sizeof *b);
    b->max = max;
}

/* ncd_read_fd_bounded() (ncd/fs.h): the reader above with a cap that is an
 * error and a deadline over the whole read. */
#include <poll.h>
#include <time.h>

#include "ncd/error.h"
#include "ncd/fs.h"

static long elapsed_ms(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (t1.tv_sec - t0->tv_sec) * 1000 +
           (t1.tv_nsec - t0->tv_nsec) / 1000000;
}

int ncd_read_fd_bounded(int fd, size_t max, int timeout_ms, char **buf,
                        size_t *len)
{
    *buf = NULL;
    if (len)
        *len = 0;
    struct ncd_rdbuf b = {.max = max ? max : NCD_FS_MAX_DEFAULT};
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = 0;
    for (;;) {
        if (timeout_ms >= 0) {
            long left = timeout_ms - elapsed_ms(&t0);
            struct pollfd p = {.fd = fd, .events = POLLIN};
            int pr = left > 0 ? poll(&p, 1, (int)left) : 0;
            if (pr < 0 && errno == EINTR)
                continue;
            if (pr <= 0) {
                rc = pr == 0 ? NCD_ETIMEOUT : NCD_EIO;
                break;
            }
        }
        ssize_t r = ncd_rdbuf_fill(&b, fd);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            rc = errno == ENOMEM ? NCD_ENOMEM : NCD_EIO;
            break;
        }
        if (b.truncated) {
            rc = NCD_ERANGE;
            break;
        }
        if (r == 0)
            break;
    }
    if (!rc && !b.data && !(b.data = calloc(1, 1)))
        rc = NCD_ENOMEM;
    if (rc < 0) {
        int e = errno;
        ncd_rdbuf_release(&b);
        errno = e; /* NCD_EIO: the caller names the read(2) error */
        return rc;
    }
    *buf = b.data;
    if (len)
        *len = b.len;
    return 0;
}
