/* SPDX-License-Identifier: MIT */
/* Socket helpers shared by pg, perf and probe (include/ncd/sock.h). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "ncd/error.h"
#include "ncd/sock.h"

double ncd_sock_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int ncd_sock_remaining_ms(double deadline)
{
    double left = deadline - ncd_sock_now();
    if (left <= 0)
        return 0;
    return left > 1e6 ? 1000000000 : (int)(left * 1000) + 1;
}

int ncd_sock_set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

void ncd_sock_nodelay(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

int ncd_sock_io(int fd, void *buf, size_t len, int is_write, double deadline,
                const atomic_int *abort_flag, int *err)
{
    char *p = buf;
    size_t done = 0;
    *err = 0;
    while (done < len) {
        ssize_t n = is_write ? send(fd, p + done, len - done,
                                    MSG_NOSIGNAL | MSG_DONTWAIT)
                             : recv(fd, p + done, len - done, MSG_DONTWAIT);
        if (n > 0) {
            done += (size_t)n;
            continue;
        }
        if (n == 0 && !is_write)
            return NCD_EPEER;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
            *err = errno;
            return (errno == ECONNRESET || errno == EPIPE) ? NCD_EPEER
                                                           : NCD_ESYS;
        }
        for (;;) {
            if (abort_flag && atomic_load(abort_flag))
                return NCD_EPEER;
            int ms = ncd_sock_remaining_ms(deadline);
            if (ms == 0)
                return NCD_ETIMEOUT;
            struct pollfd pfd = {.fd = fd,
                                 .events = is_write ? POLLOUT : POLLIN};
            int r = poll(&pfd, 1, ms < 100 ? ms : 100);
            if (r < 0 && errno != EINTR) {
                *err = errno;
                return NCD_ESYS;
            }
            if (r > 0)
                break;
        }
    }
    return 0;
}

int ncd_sock_split_hostport(const char *s, char *host, size_t hostlen,
                            int *port)
{
    const char *colon;
    if (!s)
        return NCD_EINVAL;
    if (*s == '[') {
        const char *rb = strchr(s, ']');
        if (!rb || rb[1] != ':' || (size_t)(rb - s - 1) >= hostlen)
            return NCD_EINVAL;
        memcpy(host, s + 1, (size_t)(rb - s - 1));
        host[rb - s - 1] = '\0';
        colon = rb + 1;
    } else {
        colon = strrchr(s, ':');
        if (!colon || (size_t)(colon - s) >= hostlen || colon == s)
            return NCD_EINVAL;
        memcpy(host, s, (size_t)(colon - s));
        host[colon - s] = '\0';
    }
    char *end;
    errno = 0;
    long p = strtol(colon + 1, &end, 10);
    if (end == colon + 1 || *end || errno || p <= 0 || p > 65535)
        return NCD_EINVAL;
    *port = (int)p;
    return 0;
}

void ncd_sock_addr_str(const struct sockaddr *sa, char *out, size_t len,
                       int *port)
{
    char ip[INET6_ADDRSTRLEN] = "?";
    int p = 0;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const void *)sa;
        inet_ntop(AF_INET, &in->sin_addr, ip, sizeof ip);
        p = ntohs(in->sin_port);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const void *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof ip);
        p = ntohs(in6->sin6_port);
    }
    snprintf(out, len, "%s", ip);
    if (port)
        *port = p;
}

void ncd_sock_hostport_str(const char *addr, int port, char *out, size_t len)
{
    int v6 = strchr(addr, ':') != NULL;
    snprintf(out, len, "%s%s%s:%d", v6 ? "[" : "", addr, v6 ? "]" : "",
             port);
}

socklen_t ncd_sock_make_addr(const char *addr, const char *ifname, int port,
                             struct sockaddr_storage *ss)
{
    memset(ss, 0, sizeof *ss);
    if (!addr || !*addr)
        return 0;
    struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, addr, &s4->sin_addr) == 1) {
        s4->sin_family = AF_INET;
        s4->sin_port = htons((uint16_t)port);
        return sizeof *s4;
    }
    char tmp[64];
    snprintf(tmp, sizeof tmp, "%s", addr);
    char *pct = strchr(tmp, '%');
    if (pct)
        *pct = 0;
    if (inet_pton(AF_INET6, tmp, &s6->sin6_addr) == 1) {
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((uint16_t)port);
        if (IN6_IS_ADDR_LINKLOCAL(&s6->sin6_addr)) {
            const char *scope = pct ? pct + 1 : ifname;
            if (scope && *scope)
                s6->sin6_scope_id = if_nametoindex(scope);
        }
        return sizeof *s6;
    }
    return 0;
}

int ncd_sock_resolve(struct ncd_ctx *ctx, const char *host, int port,
                     struct sockaddr_storage *ss, socklen_t *sl)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_ADDRCONFIG};
    struct addrinfo *ai = NULL;
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    int rc = getaddrinfo(host, ps, &hints, &ai);
    if (rc != 0 || !ai) {
        hints.ai_flags = 0;
        rc = getaddrinfo(host, ps, &hints, &ai);
    }
    if (rc != 0 || !ai)
        return ncd_fail(ctx, NCD_EUNREACH, "cannot resolve '%s': %s", host,
                        gai_strerror(rc));
    memcpy(ss, ai->ai_addr, ai->ai_addrlen);
    *sl = ai->ai_addrlen;
    freeaddrinfo(ai);
    return 0;
}

int ncd_sock_listen(const char *addr, const char *ifname, int port, int type,
                    int backlog, int *out_port)
{
    struct sockaddr_storage ss;
    socklen_t sl;
    if (addr && *addr) {
        sl = ncd_sock_make_addr(addr, ifname, port, &ss);
        if (!sl) {
            errno = EINVAL;
            return -1;
        }
    } else {
        struct sockaddr_in *in = (struct sockaddr_in *)&ss;
        memset(&ss, 0, sizeof ss);
        in->sin_family = AF_INET;
        in->sin_addr.s_addr = htonl(INADDR_ANY);
        in->sin_port = htons((uint16_t)port);
        sl = sizeof *in;
    }
    int fd = socket(ss.ss_family, type | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (bind(fd, (struct sockaddr *)&ss, sl) < 0 ||
        (type == SOCK_STREAM && listen(fd, backlog) < 0)) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    if (out_port) {
        sl = sizeof ss;
        getsockname(fd, (struct sockaddr *)&ss, &sl);
        *out_port = ntohs(ss.ss_family == AF_INET6
                              ? ((struct sockaddr_in6 *)&ss)->sin6_port
                              : ((struct sockaddr_in *)&ss)->sin_port);
    }
    return fd;
}

int ncd_sock_free_port(const char *host)
{
    struct in6_addr a6;
    int v6 = host && inet_pton(AF_INET6, host, &a6) == 1;
    int port = -1;
    int fd = ncd_sock_listen(v6 ? "::" : NULL, NULL, 0, SOCK_STREAM, 1, &port);
    if (fd < 0)
        return -1;
    close(fd);
    return port;
}

int ncd_sock_connect_start(const char *addr, const char *ifname, int port,
                           int src_port, int *err)
{
    struct sockaddr_storage ss;
    socklen_t sl = ncd_sock_make_addr(addr, ifname, port, &ss);
    *err = 0;
    if (!sl) {
        *err = EINVAL;
        return -1;
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
                    0);
    if (fd < 0) {
        *err = errno;
        return -1;
    }
    if (src_port > 0) {
        struct sockaddr_storage ls;
        memset(&ls, 0, sizeof ls);
        ls.ss_family = ss.ss_family;
        if (ss.ss_family == AF_INET)
            ((struct sockaddr_in *)&ls)->sin_port = htons((uint16_t)src_port);
        else
            ((struct sockaddr_in6 *)&ls)->sin6_port =
                htons((uint16_t)src_port);
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, (struct sockaddr *)&ls,
                 ss.ss_family == AF_INET ? sizeof(struct sockaddr_in)
                                         : sizeof(struct sockaddr_in6)) < 0) {
            *err = errno;
            close(fd);
            return -1;
        }
    }
    if (connect(fd, (struct sockaddr *)&ss, sl) < 0 && errno != EINPROGRESS) {
        *err = errno;
        close(fd);
        return -1;
    }
    return fd;
}

int ncd_sock_connect_finish(int fd)
{
    int so = 0;
    socklen_t l = sizeof so;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &l) < 0)
        return errno;
    if (so)
        return so;
    /* writable without an error but not connected: still in progress */
    struct sockaddr_storage peer;
    socklen_t pl = sizeof peer;
    if (getpeername(fd, (struct sockaddr *)&peer, &pl) < 0)
        return errno == ENOTCONN ? ETIMEDOUT : errno;
    int fl = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    return 0;
}

int ncd_sock_connect_timeout(const char *addr, const char *ifname, int port,
                             int timeout_ms, int *err, char *src,
                             size_t srclen)
{
    int fd = ncd_sock_connect_start(addr, ifname, port, 0, err);
    if (fd < 0)
        return -1;
    struct pollfd pf = {.fd = fd, .events = POLLOUT};
    double end = ncd_sock_now() + timeout_ms / 1000.0;
    while (poll(&pf, 1, ncd_sock_remaining_ms(end)) < 0 && errno == EINTR)
        ;
    *err = ncd_sock_connect_finish(fd);
    if (*err) {
        close(fd);
        return -1;
    }
    struct sockaddr_storage ls;
    socklen_t ll = sizeof ls;
    if (src && getsockname(fd, (struct sockaddr *)&ls, &ll) == 0)
        ncd_sock_addr_str((struct sockaddr *)&ls, src, srclen, NULL);
    return fd;
}

int ncd_sock_connect_retry(struct ncd_ctx *ctx, const char *host, int port,
                           double deadline, const char *what, unsigned flags)
{
    struct sockaddr_storage ss;
    socklen_t sl;
    int rc = ncd_sock_resolve(ctx, host, port, &ss, &sl);
    if (rc)
        return rc;
    int last = 0, tries = 0;
    for (;;) {
        int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return ncd_fail(ctx, NCD_ESYS, "socket(): %s", strerror(errno));
        ncd_sock_set_nonblock(fd);
        int r = connect(fd, (struct sockaddr *)&ss, sl);
        if (r < 0 && errno == EINPROGRESS) {
            struct pollfd pfd = {.fd = fd, .events = POLLOUT};
            int ms = ncd_sock_remaining_ms(deadline);
            r = poll(&pfd, 1, ms > 1000 ? 1000 : ms);
            if (r > 0) {
                int e = 0;
                socklen_t el = sizeof e;
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el);
                r = e ? -1 : 0;
                errno = e;
            } else {
                /* poll timed out (0) or failed: say which */
                errno = r == 0 ? ETIMEDOUT : errno;
                r = -1;
            }
        }
        if (r == 0) {
            ncd_sock_nodelay(fd);
            return fd;
        }
        last = errno;
        tries++;
        close(fd);
        if (ncd_sock_now() >= deadline)
            break;
        if ((flags & NCD_SOCK_RETRY_NCCL) && last != ECONNREFUSED &&
            last != ETIMEDOUT)
            break; /* NCCL gives up at once on these */
        usleep(100000);
    }
    return ncd_fail(ctx,
                    last == ECONNREFUSED ? NCD_ECONNREFUSED
                    : last == ETIMEDOUT  ? NCD_ETIMEOUT
                                         : NCD_EUNREACH,
                    "connect to %s %s:%d returned %s%s, gave up after %d "
                    "attempts",
                    what, host, port, strerror(last),
                    last == ETIMEDOUT ? " (no answer: host down or packets "
                                        "dropped by a firewall)"
                                      : "",
                    tries);
}

int ncd_sock_accept(struct ncd_ctx *ctx, int lfd, double deadline,
                    const atomic_int *abort_flag, char *peer, size_t peerlen,
                    const char *what)
{
    for (;;) {
        if (abort_flag && atomic_load(abort_flag))
            return ncd_fail(ctx, NCD_EPEER, "aborted while waiting for %s",
                            what);
        int ms = ncd_sock_remaining_ms(deadline);
        if (ms == 0)
            return ncd_fail(ctx, NCD_ETIMEOUT, "timed out waiting for %s",
                            what);
        struct pollfd pfd = {.fd = lfd, .events = POLLIN};
        int r = poll(&pfd, 1, ms < 100 ? ms : 100);
        if (r <= 0)
            continue;
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        int fd = accept4(lfd, (struct sockaddr *)&ss, &sl,
                         SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0)
            continue;
        ncd_sock_nodelay(fd);
        int port;
        char ip[INET6_ADDRSTRLEN];
        ncd_sock_addr_str((struct sockaddr *)&ss, ip, sizeof ip, &port);
        snprintf(peer, peerlen, "%s:%d", ip, port);
        return fd;
    }
}

void ncd_sock_set_timeouts(int fd, int ms)
{
    struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

int ncd_sock_send_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return errno == EWOULDBLOCK ? EAGAIN : errno;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int ncd_sock_recv_all(int fd, void *buf, size_t n)
{
    char *p = buf;
    while (n) {
        ssize_t r = recv(fd, p, n, 0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return errno == EWOULDBLOCK ? EAGAIN : errno;
        }
        if (r == 0)
            return ENODATA; /* orderly close by the peer */
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

void ncd_sock_iface_of(const char *addr, char *ifname, size_t iflen)
{
    ifname[0] = 0;
    struct ifaddrs *ifa = NULL;
    if (!addr || !*addr || getifaddrs(&ifa) < 0)
        return;
    for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
        if (!i->ifa_addr || (i->ifa_addr->sa_family != AF_INET &&
                             i->ifa_addr->sa_family != AF_INET6))
            continue;
        char s[64];
        ncd_sock_addr_str(i->ifa_addr, s, sizeof s, NULL);
        if (strcmp(s, addr) == 0) {
            snprintf(ifname, iflen, "%s", i->ifa_name);
            break;
        }
    }
    freeifaddrs(ifa);
}

int ncd_sock_route_to(const char *host, int port, char *ifname, size_t iflen,
                      char *addr, size_t addrlen, char *why, size_t whylen)
{
    ifname[0] = addr[0] = why[0] = 0;
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_DGRAM};
    struct addrinfo *ai = NULL;
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port > 0 ? port : 9);
    int g = getaddrinfo(host, ps, &hints, &ai);
    if (g != 0) {
        snprintf(why, whylen, "'%s' does not resolve: %s", host,
                 gai_strerror(g));
        return NCD_ENOENT;
    }
    int rc = NCD_EUNREACH;
    for (struct addrinfo *a = ai; a; a = a->ai_next) {
        int fd = socket(a->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            continue;
        if (connect(fd, a->ai_addr, a->ai_addrlen) < 0) {
            snprintf(why, whylen, "no route to %s: %s", host,
                     strerror(errno));
            close(fd);
            continue;
        }
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
            ncd_sock_addr_str((struct sockaddr *)&ss, addr, addrlen, NULL);
            ncd_sock_iface_of(addr, ifname, iflen);
            rc = 0;
            why[0] = 0;
        }
        close(fd);
        if (rc == 0)
            break;
    }
    freeaddrinfo(ai);
    return rc;
}
