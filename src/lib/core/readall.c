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
