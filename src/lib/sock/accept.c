/* SPDX-License-Identifier: MIT */
/*
 * Accepting the members of a job on a listening socket while strangers
 * connect too (include/ncd/sock.h, ncd_sock_accept_hellos): every pending
 * connection's hello is read at once through one poll(), each within its
 * own short deadline, so silent, slow or garbage-sending connections cost
 * nothing but their own slot and are counted for the messages.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ncd/error.h"
#include "ncd/sock.h"

/* Most connections waiting for their hello at once; the oldest is dropped
 * (counted as silent) to make room. */
#define MAX_PENDING 256
#define MAX_HELLO 256

struct pending {
    int fd;
    size_t got;
    double deadline;
    char peer[64];
    unsigned char buf[MAX_HELLO];
};

static void note(char (*list)[64], int count, const char *peer)
{
    if (count < NCD_HELLO_NOTED)
        snprintf(list[count], sizeof list[0], "%s", peer);
}

static void drop(struct pending *p, int *n, int i)
{
    close(p[i].fd);
    p[i] = p[*n - 1];
    (*n)--;
}

static void silent(struct ncd_hello_stats *st, const char *peer)
{
    note(st->silent_from, st->silent, peer);
    st->silent++;
}

int ncd_sock_accept_hellos(struct ncd_ctx *ctx, int lfd, size_t hello_len,
                           int need, double deadline, int hello_ms,
                           const atomic_int *abort_flag, ncd_hello_fn fn,
                           void *arg, struct ncd_hello_stats *st,
                           const char *what)
{
    if (hello_len == 0 || hello_len > MAX_HELLO || need < 0)
        return ncd_fail(ctx, NCD_EINVAL, "bad hello length %zu", hello_len);
    struct pending *p = calloc(MAX_PENDING, sizeof *p);
    struct pollfd *pf = calloc(MAX_PENDING + 1, sizeof *pf);
    if (!p || !pf) {
        free(p);
        free(pf);
        return NCD_ENOMEM;
    }
    int n = 0, taken = 0, rc = 0;
    while (taken < need && !rc) {
        if (abort_flag && atomic_load(abort_flag)) {
            rc = ncd_fail(ctx, NCD_EPEER, "aborted while waiting for %s",
                          what);
            break;
        }
        double now = ncd_sock_now();
        /* connections past their hello deadline */
        for (int i = 0; i < n;)
            if (now >= p[i].deadline) {
                silent(st, p[i].peer);
                drop(p, &n, i);
            } else {
                i++;
            }
        if (now >= deadline) {
            rc = ncd_fail(ctx, NCD_ETIMEOUT, "timed out waiting for %s",
                          what);
            break;
        }
        double wake = deadline;
        for (int i = 0; i < n; i++)
            if (p[i].deadline < wake)
                wake = p[i].deadline;
        int ms = ncd_sock_remaining_ms(wake);
        pf[0] = (struct pollfd){.fd = lfd, .events = POLLIN};
        for (int i = 0; i < n; i++)
            pf[i + 1] = (struct pollfd){.fd = p[i].fd, .events = POLLIN};
        int r = poll(pf, (nfds_t)n + 1, ms < 100 ? ms : 100);
        if (r < 0 && errno != EINTR) {
            rc = ncd_fail(ctx, NCD_ESYS, "poll: %s", strerror(errno));
            break;
        }
        if (r <= 0)
            continue;
        /* hellos first (indices shift when one is dropped: walk down) */
        for (int i = n - 1; i >= 0 && taken < need && !rc; i--) {
            if (!(pf[i + 1].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            ssize_t k = recv(p[i].fd, p[i].buf + p[i].got,
                             hello_len - p[i].got, MSG_DONTWAIT);
            if (k < 0 && (errno == EAGAIN || errno == EINTR))
                continue;
            if (k <= 0) { /* closed (or reset) before a whole hello */
                silent(st, p[i].peer);
                drop(p, &n, i);
                continue;
            }
            p[i].got += (size_t)k;
            if (p[i].got < hello_len)
                continue;
            char why[128] = "";
            int fd = p[i].fd;
            int v = fn(arg, fd, p[i].buf, p[i].peer, why, sizeof why);
            if (v == 1) { /* the caller owns fd now */
                p[i] = p[n - 1];
                n--;
                taken++;
            } else {
                if (v == 0) {
                    note(st->rejected_from, st->rejected, p[i].peer);
                    if (st->rejected < NCD_HELLO_NOTED)
                        snprintf(st->rejected_why[st->rejected],
                                 sizeof st->rejected_why[0], "%s", why);
                    st->rejected++;
                } else {
                    rc = v; /* fatal: the callback set ctx's detail */
                }
                drop(p, &n, i);
            }
        }
        if (rc || !(pf[0].revents & POLLIN))
            continue;
        /* new connections: take every one the backlog holds (lfd may be
         * blocking and is shared with other processes: ask poll first) */
        for (int first = 1;; first = 0) {
            struct pollfd lp = {.fd = lfd, .events = POLLIN};
            if (!first && (poll(&lp, 1, 0) != 1 || !(lp.revents & POLLIN)))
                break;
            struct sockaddr_storage ss;
            socklen_t sl = sizeof ss;
            int fd = accept4(lfd, (struct sockaddr *)&ss, &sl,
                             SOCK_CLOEXEC | SOCK_NONBLOCK);
            if (fd < 0)
                break;
            if (n == MAX_PENDING) { /* the oldest waits longest: drop it */
                int old = 0;
                for (int i = 1; i < n; i++)
                    if (p[i].deadline < p[old].deadline)
                        old = i;
                silent(st, p[old].peer);
                drop(p, &n, old);
            }
            ncd_sock_nodelay(fd);
            struct pending *q = &p[n++];
            memset(q, 0, sizeof *q);
            q->fd = fd;
            q->deadline = ncd_sock_now() + hello_ms / 1000.0;
            if (q->deadline > deadline)
                q->deadline = deadline;
            int port;
            char ip[INET6_ADDRSTRLEN];
            ncd_sock_addr_str((struct sockaddr *)&ss, ip, sizeof ip, &port);
            ncd_sock_hostport_str(ip, port, q->peer, sizeof q->peer);
        }
    }
    for (int i = 0; i < n; i++)
        close(p[i].fd);
    free(p);
    free(pf);
    return rc;
}

void ncd_hello_stats_text(const struct ncd_hello_stats *st, int hello_ms,
                          char *out, size_t len)
{
    size_t o = 0;
    out[0] = '\0';
    if (st->silent) {
        o += (size_t)snprintf(out + o, len - o,
                              "%d connection%s sent no hello within %.1f s "
                              "(from ",
                              st->silent, st->silent == 1 ? "" : "s",
                              hello_ms / 1000.0);
        for (int i = 0; i < st->silent && i < NCD_HELLO_NOTED && o < len; i++)
            o += (size_t)snprintf(out + o, len - o, "%s%s", i ? ", " : "",
                                  st->silent_from[i]);
        if (o < len)
            o += (size_t)snprintf(out + o, len - o, "%s)",
                                  st->silent > NCD_HELLO_NOTED ? ", ..." : "");
    }
    if (st->rejected && o < len) {
        o += (size_t)snprintf(out + o, len - o,
                              "%s%d connection%s rejected (", o ? "; " : "",
                              st->rejected, st->rejected == 1 ? "" : "s");
        for (int i = 0; i < st->rejected && i < NCD_HELLO_NOTED && o < len;
             i++)
            o += (size_t)snprintf(out + o, len - o, "%s%s: %s", i ? ", " : "",
                                  st->rejected_from[i], st->rejected_why[i]);
        if (o < len)
            snprintf(out + o, len - o, "%s)",
                     st->rejected > NCD_HELLO_NOTED ? ", ..." : "");
    }
}
