/* SPDX-License-Identifier: MIT */
/* The one grow-buffer reader (see ncd_read_fd() in ncd/fs.h). */
#define _GNU_SOURCE
#include "ncd/error.h"
#include "ncd/fs.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static long elapsed_ms(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (t1.tv_sec - t0->tv_sec) * 1000 +
           (t1.tv_nsec - t0->tv_nsec) / 1000000;
}

int ncd_read_fd(int fd, size_t max, int timeout_ms, char **buf, size_t *len)
{
    *buf = NULL;
    if (len)
        *len = 0;
    if (!max)
        max = NCD_FS_MAX_DEFAULT;
    size_t cap = max < 4096 ? max : 4096, n = 0;
    char *b = malloc(cap + 1);
    if (!b)
        return NCD_ENOMEM;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = 0;
    for (;;) {
        if (n == cap) {
            if (cap >= max) {
                rc = NCD_ERANGE;
                break;
            }
            size_t nc = cap * 2 > max ? max : cap * 2;
            char *nb = realloc(b, nc + 1);
            if (!nb) {
                rc = NCD_ENOMEM;
                break;
            }
            b = nb;
            cap = nc;
        }
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
        ssize_t r = read(fd, b + n, cap - n);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            rc = NCD_EIO;
            break;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    if (rc < 0) {
        int e = errno;
        free(b);
        errno = e; /* NCD_EIO: the caller names the read(2) error */
        return rc;
    }
    b[n] = '\0';
    *buf = b;
    if (len)
        *len = n;
    return 0;
}
