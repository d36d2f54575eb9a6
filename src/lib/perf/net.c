/* SPDX-License-Identifier: MIT */
/*
 * Process group (rendezvous + small allgathers) and the rank-to-rank
 * connection mesh.  Every frame is validated: magic, protocol version, job
 * token, ranks in range, lengths bounded; every blocking step polls with a
 * deadline; a closed connection is reported with the peer's rank, host and
 * address.
 */
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
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ncd/ctx.h"
#include "ncd/error.h"
#include "ncd/perf.h"
#include "perf/net_int.h"
#include "perf/perf_int.h"

#define PG_MAGIC 0x4e434450u   /* "NCDP" */
#define PEER_MAGIC 0x4e434453u /* "NCDS" */
#define PROTO_VERSION 1u
#define PG_MAX_BLOB (1u << 20)
#define PG_MAX_PROCS 65536

/* I/O helpers ---------------------------------------------------------- */

int ncd__set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static int remaining_ms(double deadline)
{
    double left = deadline - ncd__now();
    if (left <= 0)
        return 0;
    return left > 1e6 ? 1000000000 : (int)(left * 1000) + 1;
}

/*
 * Reads or writes exactly `len` bytes on a non-blocking fd before
 * `deadline` (ncd__now() seconds).  `abort` (may be NULL) is checked every
 * 100 ms.  Returns 0, NCD_ETIMEOUT, NCD_EPEER (EOF / reset; errno kept in
 * *err) or NCD_ESYS.
 */
int ncd__io_full(int fd, void *buf, size_t len, int is_write, double deadline,
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
        if (n == 0 && !is_write) {
            *err = 0;
            return NCD_EPEER;
        }
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
            int ms = remaining_ms(deadline);
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

static void tune_socket(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* Parses "host:port", "[v6]:port".  host buffer >= 256. */
int ncd__split_hostport(const char *s, char *host, size_t hostlen, int *port)
{
    const char *colon;
    if (*s == '[') {
        const char *rb = strchr(s, ']');
        if (!rb || rb[1] != ':')
            return NCD_EINVAL;
        if ((size_t)(rb - s - 1) >= hostlen)
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
    long p = strtol(colon + 1, &end, 10);
    if (*end || p <= 0 || p > 65535)
        return NCD_EINVAL;
    *port = (int)p;
    return 0;
}

static int resolve(struct ncd_ctx *ctx, const char *host, int port,
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

void ncd__addr_str(const struct sockaddr *sa, char *out, size_t len, int *port)
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

/* Connects with retries (peer not listening yet) until the deadline. */
static int connect_retry(struct ncd_ctx *ctx, const char *host, int port,
                         double deadline, const char *what)
{
    struct sockaddr_storage ss;
    socklen_t sl;
    int rc = resolve(ctx, host, port, &ss, &sl);
    if (rc)
        return rc;
    int last = 0, tries = 0;
    for (;;) {
        int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return ncd_fail(ctx, NCD_ESYS, "socket(): %s", strerror(errno));
        ncd__set_nonblock(fd);
        int r = connect(fd, (struct sockaddr *)&ss, sl);
        if (r < 0 && errno == EINPROGRESS) {
            struct pollfd pfd = {.fd = fd, .events = POLLOUT};
            int ms = remaining_ms(deadline);
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
            tune_socket(fd);
            return fd;
        }
        last = errno;
        tries++;
        close(fd);
        if (ncd__now() >= deadline)
            break;
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

static int accept_deadline(struct ncd_ctx *ctx, int lfd, double deadline,
                           const atomic_int *abort_flag, char *peer,
                           size_t peerlen, const char *what)
{
    for (;;) {
        if (abort_flag && atomic_load(abort_flag))
            return ncd_fail(ctx, NCD_EPEER, "aborted while waiting for %s",
                            what);
        int ms = remaining_ms(deadline);
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
        tune_socket(fd);
        int port;
        char ip[INET6_ADDRSTRLEN];
        ncd__addr_str((struct sockaddr *)&ss, ip, sizeof ip, &port);
        snprintf(peer, peerlen, "%s:%d", ip, port);
        return fd;
    }
}

/* Process group -------------------------------------------------------- */

struct pg_hello {
    uint32_t magic, version, nprocs, proc;
    uint64_t token;
};

struct pg_hdr {
    uint32_t magic, status; /* status: 0 ok, else error text follows */
    uint32_t round, pad;
    uint64_t len;
};

struct ncd_pg {
    int kind; /* 0 single, 1 tcp, 2 mpi */
    int nprocs, proc;
    uint64_t token;
    int root_fd;        /* non-root: connection to the root */
    int *fds;           /* root: fds[p] for p >= 1 */
    char (*addrs)[64];  /* root: address of each proc */
    char root_addr[300];
    char local_addr[64];
    uint32_t round;
    int timeout_ms;
    const atomic_int *abort_flag;
    char *buf;
    size_t buflen;
};

int ncd_pg_single(struct ncd_pg **out)
{
    struct ncd_pg *pg = calloc(1, sizeof *pg);
    if (!pg)
        return NCD_ENOMEM;
    pg->nprocs = 1;
    pg->root_fd = -1;
    if (getrandom(&pg->token, sizeof pg->token, 0) != sizeof pg->token)
        pg->token = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull ^
                    (uint64_t)(ncd__now() * 1e9);
    *out = pg;
    return 0;
}

static uint64_t draw_token(void)
{
    uint64_t t = 0;
    if (getrandom(&t, sizeof t, 0) != sizeof t)
        t = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull ^
            (uint64_t)(ncd__now() * 1e9);
    return t ? t : 1;
}

void ncd__pg_set_abort(struct ncd_pg *pg, const atomic_int *flag)
{
    if (pg)
        pg->abort_flag = flag;
}

void ncd__pg_set_timeout(struct ncd_pg *pg, int timeout_ms)
{
    if (pg && timeout_ms > 0)
        pg->timeout_ms = timeout_ms;
}

static int pg_root_accept(struct ncd_ctx *ctx, struct ncd_pg *pg, int lfd,
                          double deadline)
{
    int joined = 1;
    while (joined < pg->nprocs) {
        char peer[96];
        int fd = accept_deadline(ctx, lfd, deadline, pg->abort_flag, peer,
                                 sizeof peer, "processes to join the "
                                              "rendezvous");
        if (fd < 0) {
            /* Name the processes that never came: that is where to look. */
            char missing[256] = "";
            int nm = 0;
            for (int p = 1; p < pg->nprocs; p++) {
                if (pg->fds[p] >= 0)
                    continue;
                size_t l = strlen(missing);
                if (nm++ < 16 && l < sizeof missing - 16)
                    snprintf(missing + l, sizeof missing - l, "%s%d",
                             l ? ", " : "", p);
            }
            if (nm > 16)
                snprintf(missing + strlen(missing),
                         sizeof missing - strlen(missing), " and %d more",
                         nm - 16);
            ncd_ctx_clear_error(ctx);
            return ncd_fail(ctx, fd,
                            "rendezvous root: only %d of %d processes "
                            "joined before the timeout (%d s); never joined: "
                            "process %s",
                            joined, pg->nprocs, pg->timeout_ms / 1000,
                            missing);
        }
        struct pg_hello h;
        int err;
        double hd = ncd__now() + 5.0;
        if (hd > deadline)
            hd = deadline;
        int rc = ncd__io_full(fd, &h, sizeof h, 0, hd, pg->abort_flag, &err);
        const char *why = NULL;
        if (rc)
            why = "no hello";
        else if (h.magic != PG_MAGIC)
            why = "bad magic (not an nccl-doctor process)";
        else if (h.version != PROTO_VERSION)
            why = "protocol version mismatch";
        else if ((int)h.nprocs != pg->nprocs)
            why = "mismatch in the number of processes";
        else if ((int)h.proc <= 0 || (int)h.proc >= pg->nprocs)
            why = "process index out of range";
        else if (pg->fds[h.proc] >= 0)
            why = "process index has already checked in";
        else if (h.token && h.token != pg->token)
            why = "wrong job token";
        if (why) {
            close(fd);
            /* A process of this job with the wrong job size or a duplicate
             * index is fatal (NCCL's "Bootstrap Root : mismatch in info
             * from procs" / "has already checked in"); anything else is a
             * stray connection: drop it and keep waiting. */
            if (rc == 0 && h.magic == PG_MAGIC && h.version == PROTO_VERSION &&
                ((int)h.nprocs != pg->nprocs ||
                 ((int)h.proc > 0 && (int)h.proc < pg->nprocs &&
                  pg->fds[h.proc] >= 0)))
                return ncd_fail(ctx, NCD_EPROTO,
                                "rendezvous root: process %u from %s: %s "
                                "(it says nprocs %u, root has %d): two jobs "
                                "share the rendezvous address, or processes "
                                "disagree on the job size or their index",
                                h.proc, peer, why, h.nprocs, pg->nprocs);
            continue;
        }
        pg->fds[h.proc] = fd;
        snprintf(pg->addrs[h.proc], sizeof pg->addrs[0], "%.63s", peer);
        joined++;
    }
    struct pg_hdr rep = {.magic = PG_MAGIC, .len = pg->token};
    for (int p = 1; p < pg->nprocs; p++) {
        int err;
        int rc = ncd__io_full(pg->fds[p], &rep, sizeof rep, 1, deadline,
                              pg->abort_flag, &err);
        if (rc)
            return ncd_fail(ctx, NCD_EPEER,
                            "rendezvous root: process %d (%s) went away "
                            "during the rendezvous",
                            p, pg->addrs[p]);
    }
    return 0;
}

int ncd_pg_tcp(struct ncd_ctx *ctx, const struct ncd_pg_params *p,
               struct ncd_pg **out)
{
    if (p->nprocs < 1 || p->nprocs > PG_MAX_PROCS || p->proc < 0 ||
        p->proc >= p->nprocs)
        return ncd_fail(ctx, NCD_EINVAL, "process %d of %d is out of range",
                        p->proc, p->nprocs);
    struct ncd_pg *pg = calloc(1, sizeof *pg);
    if (!pg)
        return NCD_ENOMEM;
    pg->kind = 1;
    pg->nprocs = p->nprocs;
    pg->proc = p->proc;
    pg->root_fd = -1;
    pg->timeout_ms = p->timeout_ms > 0 ? p->timeout_ms : 60000;
    snprintf(pg->root_addr, sizeof pg->root_addr, "%s:%d",
             p->host ? p->host : "", p->port);
    double deadline = ncd__now() + pg->timeout_ms / 1000.0;
    int rc = 0;
    if (p->proc == 0) {
        pg->token = p->token ? p->token : draw_token();
        pg->fds = malloc(sizeof(int) * (size_t)p->nprocs);
        pg->addrs = calloc((size_t)p->nprocs, sizeof pg->addrs[0]);
        if (!pg->fds || !pg->addrs) {
            ncd_pg_free(pg);
            return NCD_ENOMEM;
        }
        for (int i = 0; i < p->nprocs; i++)
            pg->fds[i] = -1;
        int lfd = p->listen_fd;
        if (lfd < 0 && p->nprocs > 1) {
            struct sockaddr_storage ss;
            socklen_t sl;
            rc = resolve(ctx, p->host, p->port, &ss, &sl);
            if (rc) {
                ncd_pg_free(pg);
                return rc;
            }
            lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
            int one = 1;
            if (lfd >= 0)
                setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
            if (lfd < 0 || bind(lfd, (struct sockaddr *)&ss, sl) < 0 ||
                listen(lfd, 1024) < 0) {
                int e = errno;
                if (lfd >= 0)
                    close(lfd);
                ncd_pg_free(pg);
                return ncd_fail(ctx, ncd_err_from_errno(e),
                                "rendezvous root cannot listen on %s:%d: %s "
                                "(is the address one of this host's, and "
                                "the port free?)",
                                p->host, p->port, strerror(e));
            }
        }
        if (p->nprocs > 1)
            rc = pg_root_accept(ctx, pg, lfd, deadline);
        if (lfd >= 0)
            close(lfd);
    } else {
        if (p->listen_fd >= 0)
            close(p->listen_fd);
        int fd = connect_retry(ctx, p->host, p->port, deadline,
                               "rendezvous root");
        if (fd < 0) {
            ncd_pg_free(pg);
            return fd;
        }
        pg->root_fd = fd;
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
            ncd__addr_str((struct sockaddr *)&ss, pg->local_addr,
                          sizeof pg->local_addr, NULL);
        struct pg_hello h = {PG_MAGIC, PROTO_VERSION, (uint32_t)p->nprocs,
                             (uint32_t)p->proc, p->token};
        int err;
        rc = ncd__io_full(fd, &h, sizeof h, 1, deadline, NULL, &err);
        struct pg_hdr rep;
        if (!rc)
            rc = ncd__io_full(fd, &rep, sizeof rep, 0, deadline, NULL, &err);
        if (rc)
            rc = ncd_fail(ctx, rc,
                          "rendezvous with root %s failed: %s (root "
                          "rejected this process, or not all %d processes "
                          "started)",
                          pg->root_addr,
                          rc == NCD_ETIMEOUT ? "timed out" : "connection closed",
                          p->nprocs);
        else if (rep.magic != PG_MAGIC || rep.status != 0)
            rc = ncd_fail(ctx, NCD_EPROTO,
                          "rendezvous root %s answered with a bad frame",
                          pg->root_addr);
        else
            pg->token = rep.len;
    }
    if (rc) {
        ncd_pg_free(pg);
        return rc;
    }
    *out = pg;
    return 0;
}

int ncd_pg_nprocs(const struct ncd_pg *pg)
{
    return pg->nprocs;
}

int ncd_pg_proc(const struct ncd_pg *pg)
{
    return pg->proc;
}

uint64_t ncd_pg_token(const struct ncd_pg *pg)
{
    return pg->token;
}

const char *ncd_pg_local_addr(const struct ncd_pg *pg)
{
    return pg->local_addr;
}

static int pg_fail_all(struct ncd_pg *pg, const char *msg)
{
    /* Root: tell everyone still connected why the job stops. */
    struct pg_hdr h = {.magic = PG_MAGIC, .status = 1, .round = pg->round,
                       .len = strlen(msg)};
    for (int p = 1; p < pg->nprocs; p++) {
        if (pg->fds[p] < 0)
            continue;
        int err;
        double d = ncd__now() + 1.0;
        if (ncd__io_full(pg->fds[p], &h, sizeof h, 1, d, NULL, &err) == 0)
            ncd__io_full(pg->fds[p], (void *)msg, h.len, 1, d, NULL, &err);
        close(pg->fds[p]);
        pg->fds[p] = -1;
    }
    return 0;
}

#ifdef NCD_WITH_MPI
int ncd__pg_mpi_allgather(struct ncd_pg *pg, const void *mine, size_t len,
                          void *all);
#endif

int ncd_pg_allgather(struct ncd_ctx *ctx, struct ncd_pg *pg, const void *mine,
                     size_t len, void *all)
{
    if (len > PG_MAX_BLOB)
        return ncd_fail(ctx, NCD_EINVAL, "allgather of %zu bytes is too big",
                        len);
    pg->round++;
    if (pg->nprocs == 1 || pg->kind == 0) {
        memcpy(all, mine, len);
        return 0;
    }
#ifdef NCD_WITH_MPI
    if (pg->kind == 2) {
        int rc = ncd__pg_mpi_allgather(pg, mine, len, all);
        return rc ? ncd_fail(ctx, NCD_EPEER, "MPI_Allgather failed") : 0;
    }
#endif
    double deadline = ncd__now() + pg->timeout_ms / 1000.0;
    int err, rc;
    if (pg->proc != 0) {
        struct pg_hdr h = {.magic = PG_MAGIC, .round = pg->round, .len = len};
        rc = ncd__io_full(pg->root_fd, &h, sizeof h, 1, deadline,
                          pg->abort_flag, &err);
        if (!rc)
            rc = ncd__io_full(pg->root_fd, (void *)mine, len, 1, deadline,
                              pg->abort_flag, &err);
        struct pg_hdr rep;
        if (!rc)
            rc = ncd__io_full(pg->root_fd, &rep, sizeof rep, 0, deadline,
                              pg->abort_flag, &err);
        if (rc)
            return ncd_fail(ctx, rc,
                            "%s the rendezvous root (process 0 at %s)",
                            rc == NCD_ETIMEOUT
                                ? "timed out waiting for the other processes "
                                  "through"
                                : "lost the connection to",
                            pg->root_addr);
        if (rep.magic != PG_MAGIC)
            return ncd_fail(ctx, NCD_EPROTO, "bad frame from the root %s",
                            pg->root_addr);
        if (rep.status != 0) {
            char msg[512] = "";
            size_t ml = rep.len < sizeof msg - 1 ? rep.len : sizeof msg - 1;
            ncd__io_full(pg->root_fd, msg, ml, 0, ncd__now() + 1.0, NULL,
                         &err);
            msg[ml] = '\0';
            return ncd_fail(ctx, NCD_EPEER, "%s", msg);
        }
        if (rep.round != pg->round || rep.len != len * (size_t)pg->nprocs)
            return ncd_fail(ctx, NCD_EPROTO,
                            "processes disagree on the allgather (round %u "
                            "len %llu, expected round %u len %zu)",
                            rep.round, (unsigned long long)rep.len, pg->round,
                            len * (size_t)pg->nprocs);
        rc = ncd__io_full(pg->root_fd, all, len * (size_t)pg->nprocs, 0,
                          deadline, pg->abort_flag, &err);
        if (rc)
            return ncd_fail(ctx, rc, "lost the connection to the root %s",
                            pg->root_addr);
        return 0;
    }
    /* root */
    memcpy(all, mine, len);
    for (int p = 1; p < pg->nprocs; p++) {
        struct pg_hdr h;
        char msg[400];
        rc = ncd__io_full(pg->fds[p], &h, sizeof h, 0, deadline,
                          pg->abort_flag, &err);
        if (!rc && (h.magic != PG_MAGIC || h.round != pg->round ||
                    h.len != len)) {
            snprintf(msg, sizeof msg,
                     "process %d (%s) is out of step: round %u len %llu, "
                     "expected round %u len %zu",
                     p, pg->addrs[p], h.round, (unsigned long long)h.len,
                     pg->round, len);
            pg_fail_all(pg, msg);
            return ncd_fail(ctx, NCD_EPROTO, "%s", msg);
        }
        if (!rc)
            rc = ncd__io_full(pg->fds[p], (char *)all + (size_t)p * len, len,
                              0, deadline, pg->abort_flag, &err);
        if (rc) {
            snprintf(msg, sizeof msg,
                     "process %d (%s) %s", p, pg->addrs[p],
                     rc == NCD_ETIMEOUT
                         ? "did not answer before the timeout"
                         : "closed its connection to the rendezvous root "
                           "(process died?)");
            pg_fail_all(pg, msg);
            return ncd_fail(ctx, rc, "%s", msg);
        }
    }
    struct pg_hdr rep = {.magic = PG_MAGIC, .round = pg->round,
                         .len = len * (size_t)pg->nprocs};
    for (int p = 1; p < pg->nprocs; p++) {
        rc = ncd__io_full(pg->fds[p], &rep, sizeof rep, 1, deadline,
                          pg->abort_flag, &err);
        if (!rc)
            rc = ncd__io_full(pg->fds[p], all, rep.len, 1, deadline,
                              pg->abort_flag, &err);
        if (rc) {
            char msg[300];
            snprintf(msg, sizeof msg,
                     "process %d (%s) closed its connection to the "
                     "rendezvous root",
                     p, pg->addrs[p]);
            pg_fail_all(pg, msg);
            return ncd_fail(ctx, rc, "%s", msg);
        }
    }
    return 0;
}

int ncd_pg_barrier(struct ncd_ctx *ctx, struct ncd_pg *pg)
{
    char c = 0;
    char *all = malloc((size_t)pg->nprocs);
    if (!all)
        return NCD_ENOMEM;
    int rc = ncd_pg_allgather(ctx, pg, &c, 1, all);
    free(all);
    return rc;
}

#ifdef NCD_WITH_MPI
void ncd__pg_mpi_free(struct ncd_pg *pg);
#endif

void ncd_pg_free(struct ncd_pg *pg)
{
    if (!pg)
        return;
#ifdef NCD_WITH_MPI
    if (pg->kind == 2)
        ncd__pg_mpi_free(pg);
#endif
    if (pg->root_fd >= 0)
        close(pg->root_fd);
    if (pg->fds)
        for (int i = 0; i < pg->nprocs; i++)
            if (pg->fds[i] >= 0)
                close(pg->fds[i]);
    free(pg->fds);
    free(pg->addrs);
    free(pg->buf);
    free(pg);
}

struct ncd_pg *ncd__pg_new_kind(int kind, int nprocs, int proc,
                                uint64_t token)
{
    struct ncd_pg *pg = calloc(1, sizeof *pg);
    if (!pg)
        return NULL;
    pg->kind = kind;
    pg->nprocs = nprocs;
    pg->proc = proc;
    pg->token = token;
    pg->root_fd = -1;
    pg->timeout_ms = 60000;
    return pg;
}

/* Peer mesh ------------------------------------------------------------ */

struct peer_hello {
    uint32_t magic, version;
    uint64_t token;
    uint32_t from, to, sock, nsocks;
};

struct ncd_peerset {
    int nranks, rank, nsocks;
    int *fds; /* [peer * nsocks + s] */
    char (*desc)[160];
};

static void host_short(char *out, size_t len)
{
    char h[256];
    if (gethostname(h, sizeof h - 1) < 0)
        snprintf(h, sizeof h, "unknown");
    h[sizeof h - 1] = '\0';
    char *dot = strchr(h, '.');
    if (dot)
        *dot = '\0';
    snprintf(out, len, "%s", h);
}

int ncd_peer_listen(struct ncd_ctx *ctx, const char *addr, const char *ifname,
                    int rank, struct ncd_rank_info *info)
{
    memset(info, 0, sizeof *info);
    info->rank = rank;
    info->pid = (int32_t)getpid();
    host_short(info->host, sizeof info->host);
    snprintf(info->ifname, sizeof info->ifname, "%s", ifname ? ifname : "");
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    socklen_t sl;
    if (addr && *addr) {
        struct sockaddr_in *in = (void *)&ss;
        struct sockaddr_in6 *in6 = (void *)&ss;
        if (inet_pton(AF_INET, addr, &in->sin_addr) == 1) {
            in->sin_family = AF_INET;
            sl = sizeof *in;
        } else if (inet_pton(AF_INET6, addr, &in6->sin6_addr) == 1) {
            in6->sin6_family = AF_INET6;
            sl = sizeof *in6;
            if (ifname && *ifname)
                in6->sin6_scope_id = if_nametoindex(ifname);
        } else {
            return ncd_fail(ctx, NCD_EINVAL, "'%s' is not an IP address",
                            addr);
        }
    } else {
        struct sockaddr_in *in = (void *)&ss;
        in->sin_family = AF_INET;
        in->sin_addr.s_addr = htonl(INADDR_ANY);
        sl = sizeof *in;
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return ncd_fail(ctx, NCD_ESYS, "socket(): %s", strerror(errno));
    if (bind(fd, (struct sockaddr *)&ss, sl) < 0 || listen(fd, 1024) < 0) {
        int e = errno;
        close(fd);
        return ncd_fail(ctx, ncd_err_from_errno(e),
                        "rank %d cannot listen on %s: %s", rank,
                        addr && *addr ? addr : "*", strerror(e));
    }
    sl = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    int port;
    ncd__addr_str((struct sockaddr *)&ss, info->addr, sizeof info->addr,
                  &port);
    info->port = port;
    return fd;
}

static void describe(struct ncd_peerset *ps, const struct ncd_rank_info *in,
                     int peer)
{
    const struct ncd_rank_info *r = &in[peer];
    int v6 = strchr(r->addr, ':') != NULL;
    snprintf(ps->desc[peer], sizeof ps->desc[0],
             "rank %d (host %s, pid %d, %s%s%s:%d)", peer, r->host, r->pid,
             v6 ? "[" : "", r->addr, v6 ? "]" : "", r->port);
}

int ncd_peerset_connect(struct ncd_ctx *ctx, int lfd, int rank, int nranks,
                        const struct ncd_rank_info *infos, int nsocks,
                        uint64_t token, int timeout_ms,
                        struct ncd_peerset **out)
{
    struct ncd_peerset *ps = calloc(1, sizeof *ps);
    if (!ps) {
        close(lfd);
        return NCD_ENOMEM;
    }
    ps->nranks = nranks;
    ps->rank = rank;
    ps->nsocks = nsocks;
    ps->fds = malloc(sizeof(int) * (size_t)nranks * (size_t)nsocks);
    ps->desc = calloc((size_t)nranks, sizeof ps->desc[0]);
    if (!ps->fds || !ps->desc) {
        close(lfd);
        ncd_peerset_free(ps);
        return NCD_ENOMEM;
    }
    for (int i = 0; i < nranks * nsocks; i++)
        ps->fds[i] = -1;
    for (int p = 0; p < nranks; p++)
        describe(ps, infos, p);
    double deadline = ncd__now() + timeout_ms / 1000.0;
    int rc = 0;
    /* Connect to every lower rank, then accept every higher one. */
    for (int p = 0; p < rank && !rc; p++) {
        for (int s = 0; s < nsocks && !rc; s++) {
            int fd = connect_retry(ctx, infos[p].addr, infos[p].port,
                                   deadline, "peer");
            if (fd < 0) {
                ncd_ctx_clear_error(ctx);
                rc = ncd_fail(ctx, fd, "rank %d cannot connect to %s: %s",
                              rank, ps->desc[p],
                              fd == NCD_ECONNREFUSED
                                  ? "connection refused"
                                  : "no answer (firewall, wrong interface "
                                    "or address not reachable)");
                break;
            }
            ps->fds[p * nsocks + s] = fd;
            struct peer_hello h = {PEER_MAGIC, PROTO_VERSION, token,
                                   (uint32_t)rank, (uint32_t)p, (uint32_t)s,
                                   (uint32_t)nsocks};
            int err;
            if (ncd__io_full(fd, &h, sizeof h, 1, deadline, NULL, &err))
                rc = ncd_fail(ctx, NCD_EPEER,
                              "rank %d: %s closed the connection during the "
                              "handshake",
                              rank, ps->desc[p]);
        }
    }
    int need = (nranks - 1 - rank) * nsocks;
    while (!rc && need > 0) {
        char peer[96];
        int fd = accept_deadline(ctx, lfd, deadline, NULL, peer, sizeof peer,
                                 "peers to connect");
        if (fd < 0) {
            ncd_ctx_clear_error(ctx);
            int missing = -1;
            for (int p = rank + 1; p < nranks && missing < 0; p++)
                for (int s = 0; s < nsocks; s++)
                    if (ps->fds[p * nsocks + s] < 0) {
                        missing = p;
                        break;
                    }
            rc = ncd_fail(ctx, fd,
                          "rank %d: %s never connected (timeout %d s): it "
                          "died, or cannot reach %s:%d",
                          rank, missing >= 0 ? ps->desc[missing] : "a peer",
                          timeout_ms / 1000, infos[rank].addr,
                          infos[rank].port);
            break;
        }
        struct peer_hello h;
        int err;
        double hd = ncd__now() + 5.0;
        if (hd > deadline)
            hd = deadline;
        int r = ncd__io_full(fd, &h, sizeof h, 0, hd, NULL, &err);
        if (r || h.magic != PEER_MAGIC || h.version != PROTO_VERSION ||
            h.token != token || (int)h.to != rank || (int)h.from <= rank ||
            (int)h.from >= nranks || (int)h.nsocks != nsocks ||
            (int)h.sock >= nsocks ||
            ps->fds[(int)h.from * nsocks + (int)h.sock] >= 0) {
            close(fd); /* stray or foreign connection: reject */
            continue;
        }
        ps->fds[(int)h.from * nsocks + (int)h.sock] = fd;
        need--;
    }
    close(lfd);
    if (rc) {
        ncd_peerset_free(ps);
        return rc;
    }
    for (int i = 0; i < nranks * nsocks; i++)
        if (ps->fds[i] >= 0)
            ncd__set_nonblock(ps->fds[i]);
    *out = ps;
    return 0;
}

int ncd_peerset_fd(const struct ncd_peerset *ps, int peer, int s)
{
    if (peer < 0 || peer >= ps->nranks || s < 0 || s >= ps->nsocks)
        return -1;
    return ps->fds[peer * ps->nsocks + s];
}

int ncd_peerset_nsocks(const struct ncd_peerset *ps)
{
    return ps->nsocks;
}

const char *ncd_peerset_describe(const struct ncd_peerset *ps, int peer)
{
    if (peer < 0 || peer >= ps->nranks)
        return "rank ?";
    return ps->desc[peer];
}

void ncd_peerset_free(struct ncd_peerset *ps)
{
    if (!ps)
        return;
    if (ps->fds)
        for (int i = 0; i < ps->nranks * ps->nsocks; i++)
            if (ps->fds[i] >= 0)
                close(ps->fds[i]);
    free(ps->fds);
    free(ps->desc);
    free(ps);
}

int ncd_perf_split_hostport(const char *s, char *host, size_t hostlen,
                            int *port)
{
    return s ? ncd__split_hostport(s, host, hostlen, port) : NCD_EINVAL;
}

#ifdef NCD_WITH_MPI
int ncd__pg_mpi_local(int *local_rank);
#endif

int ncd_pg_local_index(struct ncd_pg *pg)
{
#ifdef NCD_WITH_MPI
    int lr;
    if (pg->kind == 2 && ncd__pg_mpi_local(&lr) == 0)
        return lr;
#endif
    (void)pg;
    return -1;
}
