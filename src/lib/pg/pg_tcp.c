/* SPDX-License-Identifier: MIT */
/*
 * The TCP process group (include/ncd/pg.h): a rendezvous root in the style
 * of NCCL's unique id.  Proc 0 accepts one connection per process and
 * relays every allgather.  Every frame is validated (magic, protocol
 * version, job token, round, lengths bounded); every wait has the group's
 * deadline and honours its abort flag; a process that goes away is named
 * with its index and address, and the root tells the others why the job
 * stops.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ncd/error.h"
#include "ncd/sock.h"
#include "ncd/strbuf.h"
#include "pg/pg_int.h"

/* The frames (struct pg_hello, struct pg_hdr) and their decoders are in
 * pg_int.h; the decoders take buffers (tests/fuzz/fuzz_wire.c). */

const char *ncd__pg_hello_check(const void *buf, size_t len, int nprocs,
                                uint64_t token, const int *fds, int *kind,
                                struct pg_hello *out)
{
    struct pg_hello h;
    *kind = PG_HELLO_STRAY;
    if (len < sizeof h)
        return "no hello";
    memcpy(&h, buf, sizeof h);
    *out = h;
    if (h.magic != PG_MAGIC)
        return "bad magic (not an nccl-doctor process)";
    if (h.version != PG_PROTO_VERSION)
        return "protocol version mismatch";
    if (h.token && h.token != token)
        return "wrong job token (another job)";
    /* A process of this job with the wrong job size is fatal (NCCL's
     * "Bootstrap Root : mismatch in info from procs"); one with an index
     * out of range or already held is refused. */
    if (h.nprocs != (uint32_t)nprocs) {
        *kind = PG_HELLO_FATAL;
        return "mismatch in the number of processes";
    }
    *kind = PG_HELLO_REFUSE;
    if (h.proc == 0 || h.proc >= (uint32_t)nprocs)
        return "process index out of range";
    if (fds[h.proc] >= 0) {
        *kind = PG_HELLO_TAKEN;
        return "process index has already checked in";
    }
    *kind = PG_HELLO_JOIN;
    return NULL;
}

int ncd__pg_hdr_check(const void *buf, size_t len, uint32_t round,
                      uint64_t want_len, struct pg_hdr *out)
{
    struct pg_hdr h;
    if (len < sizeof h)
        return -1;
    memcpy(&h, buf, sizeof h);
    *out = h;
    return h.magic == PG_MAGIC && h.status == 0 && h.round == round &&
                   h.len == want_len
               ? 0
               : -1;
}

int ncd__pg_reply_check(const void *buf, size_t len, uint32_t round,
                        uint64_t want_len, struct pg_hdr *out)
{
    struct pg_hdr h;
    if (len < sizeof h)
        return PG_REPLY_BAD;
    memcpy(&h, buf, sizeof h);
    *out = h;
    if (h.magic != PG_MAGIC)
        return PG_REPLY_BAD;
    if (h.status != 0) {
        if (out->len > PG_MAX_ERRTEXT)
            out->len = PG_MAX_ERRTEXT;
        return PG_REPLY_ERROR;
    }
    if (h.round != round || h.len != want_len)
        return PG_REPLY_OUT_OF_STEP;
    return PG_REPLY_OK;
}

struct pg_tcp {
    struct ncd_pg pg;   /* first: the common part */
    int root_fd;        /* non-root: connection to the root */
    int *fds;           /* root: fds[p] for p >= 1 */
    char (*addrs)[64];  /* root: address of each proc */
    char root_addr[300];
    char dup[256];      /* root: indices two connections claimed */
};

static struct pg_tcp *T(struct ncd_pg *pg)
{
    return (struct pg_tcp *)pg;
}

static void pg_fail_all(struct pg_tcp *t, const char *msg)
{
    struct ncd_pg *pg = &t->pg;
    /* Root: tell everyone still connected why the job stops. */
    struct pg_hdr h = {.magic = PG_MAGIC, .status = 1, .round = pg->round,
                       .len = strlen(msg)};
    for (int p = 1; p < pg->nprocs; p++) {
        if (t->fds[p] < 0)
            continue;
        int err;
        double d = ncd_sock_now() + 1.0;
        if (ncd_sock_io(t->fds[p], &h, sizeof h, 1, d, NULL, &err) == 0)
            ncd_sock_io(t->fds[p], (void *)msg, h.len, 1, d, NULL, &err);
        close(t->fds[p]);
        t->fds[p] = -1;
    }
}

static int tcp_allgather(struct ncd_ctx *ctx, struct ncd_pg *pg,
                         const void *mine, size_t len, void *all)
{
    struct pg_tcp *t = T(pg);
    double deadline = ncd_sock_now() + pg->timeout_ms / 1000.0;
    int err, rc;
    if (pg->proc != 0) {
        struct pg_hdr h = {.magic = PG_MAGIC, .round = pg->round, .len = len};
        rc = ncd_sock_io(t->root_fd, &h, sizeof h, 1, deadline,
                          pg->abort_flag, &err);
        if (!rc)
            rc = ncd_sock_io(t->root_fd, (void *)mine, len, 1, deadline,
                              pg->abort_flag, &err);
        struct pg_hdr rep;
        if (!rc)
            rc = ncd_sock_io(t->root_fd, &rep, sizeof rep, 0, deadline,
                              pg->abort_flag, &err);
        if (rc)
            return ncd_fail(ctx, rc,
                            "%s the rendezvous root (process 0 at %s)",
                            rc == NCD_ETIMEOUT
                                ? "timed out waiting for the other processes "
                                  "through"
                                : "lost the connection to",
                            t->root_addr);
        int rk = ncd__pg_reply_check(&rep, sizeof rep, pg->round,
                                     len * (size_t)pg->nprocs, &rep);
        if (rk == PG_REPLY_BAD)
            return ncd_fail(ctx, NCD_EPROTO, "bad frame from the root %s",
                            t->root_addr);
        if (rk == PG_REPLY_ERROR) {
            char msg[PG_MAX_ERRTEXT + 1] = "";
            size_t ml = (size_t)rep.len;
            ncd_sock_io(t->root_fd, msg, ml, 0, ncd_sock_now() + 1.0, NULL,
                         &err);
            msg[ml] = '\0';
            return ncd_fail(ctx, NCD_EPEER, "%s", msg);
        }
        if (rk == PG_REPLY_OUT_OF_STEP)
            return ncd_fail(ctx, NCD_EPROTO,
                            "processes disagree on the allgather (round %u "
                            "len %llu, expected round %u len %zu)",
                            rep.round, (unsigned long long)rep.len, pg->round,
                            len * (size_t)pg->nprocs);
        rc = ncd_sock_io(t->root_fd, all, len * (size_t)pg->nprocs, 0,
                          deadline, pg->abort_flag, &err);
        if (rc)
            return ncd_fail(ctx, rc, "lost the connection to the root %s",
                            t->root_addr);
        return 0;
    }
    /* root */
    memcpy(all, mine, len);
    for (int p = 1; p < pg->nprocs; p++) {
        struct pg_hdr h;
        char msg[700];
        rc = ncd_sock_io(t->fds[p], &h, sizeof h, 0, deadline,
                          pg->abort_flag, &err);
        if (!rc && ncd__pg_hdr_check(&h, sizeof h, pg->round, len, &h)) {
            snprintf(msg, sizeof msg,
                     "process %d (%s) is out of step: round %u len %llu, "
                     "expected round %u len %zu",
                     p, t->addrs[p], h.round, (unsigned long long)h.len,
                     pg->round, len);
            pg_fail_all(t, msg);
            return ncd_fail(ctx, NCD_EPROTO, "%s", msg);
        }
        if (!rc)
            rc = ncd_sock_io(t->fds[p], (char *)all + (size_t)p * len, len,
                              0, deadline, pg->abort_flag, &err);
        if (rc) {
            snprintf(msg, sizeof msg,
                     "process %d (%s) %s%s%s", p, t->addrs[p],
                     rc == NCD_ETIMEOUT
                         ? "did not answer before the timeout"
                         : "closed its connection to the rendezvous root "
                           "(process died?)",
                     t->dup[0] ? "; at the rendezvous " : "", t->dup);
            pg_fail_all(t, msg);
            return ncd_fail(ctx, rc, "%s", msg);
        }
    }
    struct pg_hdr rep = {.magic = PG_MAGIC, .round = pg->round,
                         .len = len * (size_t)pg->nprocs};
    for (int p = 1; p < pg->nprocs; p++) {
        rc = ncd_sock_io(t->fds[p], &rep, sizeof rep, 1, deadline,
                          pg->abort_flag, &err);
        if (!rc)
            rc = ncd_sock_io(t->fds[p], all, rep.len, 1, deadline,
                              pg->abort_flag, &err);
        if (rc) {
            char msg[300];
            snprintf(msg, sizeof msg,
                     "process %d (%s) closed its connection to the "
                     "rendezvous root",
                     p, t->addrs[p]);
            pg_fail_all(t, msg);
            return ncd_fail(ctx, rc, "%s", msg);
        }
    }
    return 0;
}

/* A hello at the root (ncd_hello_fn). */
struct root_arg {
    struct pg_tcp *t;
    struct ncd_ctx *ctx;
    int joined;
    /* processes whose index another connection claimed too */
    char dup[256];
};

/* 1 when the connection has been closed by its peer (EOF pending). */
static int peer_gone(int fd)
{
    char c;
    ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
                      errno != EINTR);
}

/* Tells a refused process of this job why, before the root closes. */
static void refuse(int fd, const char *msg)
{
    struct pg_hdr h = {.magic = PG_MAGIC, .status = 1, .len = strlen(msg)};
    int err;
    double d = ncd_sock_now() + 0.5;
    if (ncd_sock_io(fd, &h, sizeof h, 1, d, NULL, &err) == 0)
        ncd_sock_io(fd, (void *)msg, h.len, 1, d, NULL, &err);
}

static int judge_hello(void *arg, int fd, const void *hello, const char *peer,
                       char *why, size_t whylen)
{
    struct root_arg *a = arg;
    struct pg_tcp *t = a->t;
    struct ncd_pg *pg = &t->pg;
    struct pg_hello h = {0};
    int kind;
    /* the decoder the wire fuzzer (tests/fuzz/fuzz_wire.c) exercises */
    const char *w = ncd__pg_hello_check(hello, sizeof h, pg->nprocs,
                                        pg->token, t->fds, &kind, &h);
    int p = (int)h.proc;
    switch (kind) {
    case PG_HELLO_STRAY:
        if (h.magic == PG_MAGIC && h.version != PG_PROTO_VERSION)
            snprintf(why, whylen, "protocol version %u, not %u", h.version,
                     PG_PROTO_VERSION);
        else
            snprintf(why, whylen, "%s", w);
        return 0;
    case PG_HELLO_FATAL: {
        /* two jobs share the address, or the processes disagree on the
         * job size */
        char msg[400];
        snprintf(msg, sizeof msg,
                 "rendezvous root: process %u from %s: mismatch in the number "
                 "of processes (it says nprocs %u, root has %d): two jobs "
                 "share the rendezvous address, or processes disagree on the "
                 "job size or their index",
                 h.proc, peer, h.nprocs, pg->nprocs);
        refuse(fd, msg);
        return ncd_fail(a->ctx, NCD_EPROTO, "%s", msg);
    }
    case PG_HELLO_REFUSE: {
        snprintf(why, whylen, "says process %u, out of range 1-%d", h.proc,
                 pg->nprocs - 1);
        char msg[300];
        snprintf(msg, sizeof msg,
                 "rendezvous root refused this process: index %u is out of "
                 "range 1-%d",
                 h.proc, pg->nprocs - 1);
        refuse(fd, msg);
        return 0;
    }
    case PG_HELLO_TAKEN:
        if (!peer_gone(t->fds[p])) {
            /* the first claim holds; the root cannot tell which is
             * genuine, so both addresses go into the messages */
            snprintf(why, whylen, "says process %d, which %s holds", p,
                     t->addrs[p]);
            char msg[300];
            snprintf(msg, sizeof msg,
                     "rendezvous root refused this process: process %d has "
                     "already checked in from %s",
                     p, t->addrs[p]);
            refuse(fd, msg);
            size_t l = strlen(a->dup);
            if (l < sizeof a->dup - 80)
                snprintf(a->dup + l, sizeof a->dup - l,
                         "%sprocess %d claimed by %s and %s", l ? ", " : "",
                         p, t->addrs[p], peer);
            return 0;
        }
        /* its earlier connection is gone: a restart */
        close(t->fds[p]);
        a->joined--;
        break;
    default:
        break;
    }
    t->fds[p] = fd;
    snprintf(t->addrs[p], sizeof t->addrs[0], "%.63s", peer);
    a->joined++;
    return 1;
}

/* Hellos must come at once: a connection has this long to send its own. */
#define HELLO_MS 2000

static int pg_root_accept(struct ncd_ctx *ctx, struct pg_tcp *t, int lfd,
                          double deadline)
{
    struct ncd_pg *pg = &t->pg;
    struct root_arg a = {.t = t, .ctx = ctx, .joined = 1};
    struct ncd_hello_stats st;
    memset(&st, 0, sizeof st);
    int rc = 0;
    /* a process may restart and take its slot again: loop until every
     * slot is held */
    while (a.joined < pg->nprocs && !rc)
        rc = ncd_sock_accept_hellos(ctx, lfd, sizeof(struct pg_hello),
                                    pg->nprocs - a.joined, deadline,
                                    HELLO_MS, pg->abort_flag, judge_hello, &a,
                                    &st, "processes to join the rendezvous");
    if (rc == NCD_ETIMEOUT || rc == NCD_EPEER) {
        /* Name the processes that never came: that is where to look; and
         * the connections that were no process of this job. */
        char missing[256] = "";
        int nm = 0;
        for (int p = 1; p < pg->nprocs; p++) {
            if (t->fds[p] >= 0)
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
        char strangers[700];
        ncd_hello_stats_text(&st, HELLO_MS, strangers, sizeof strangers);
        ncd_ctx_clear_error(ctx);
        return ncd_fail(ctx, rc,
                        "rendezvous root: only %d of %d processes "
                        "joined before the timeout (%d s); never joined: "
                        "process %s%s%s%s%s",
                        a.joined, pg->nprocs, pg->timeout_ms / 1000, missing,
                        strangers[0] ? "; meanwhile " : "", strangers,
                        a.dup[0] ? "; " : "", a.dup);
    }
    if (rc)
        return rc;
    snprintf(t->dup, sizeof t->dup, "%s", a.dup);
    struct pg_hdr rep = {.magic = PG_MAGIC, .len = pg->token};
    for (int p = 1; p < pg->nprocs; p++) {
        int err;
        if (ncd_sock_io(t->fds[p], &rep, sizeof rep, 1, deadline,
                        pg->abort_flag, &err))
            return ncd_fail(ctx, NCD_EPEER,
                            "rendezvous root: process %d (%s) went away "
                            "during the rendezvous",
                            p, t->addrs[p]);
    }
    return 0;
}

static void tcp_release(struct ncd_pg *pg)
{
    struct pg_tcp *t = T(pg);
    if (t->root_fd >= 0)
        close(t->root_fd);
    if (t->fds)
        for (int i = 0; i < pg->nprocs; i++)
            if (t->fds[i] >= 0)
                close(t->fds[i]);
    free(t->fds);
    free(t->addrs);
}

static const struct ncd_pg_ops tcp_ops = {
    .name = "tcp",
    .allgather = tcp_allgather,
    .release = tcp_release,
};

int ncd_pg_tcp(struct ncd_ctx *ctx, const struct ncd_pg_params *p,
               struct ncd_pg **out)
{
    if (p->nprocs < 1 || p->nprocs > NCD_PG_MAX_PROCS || p->proc < 0 ||
        p->proc >= p->nprocs)
        return ncd_fail(ctx, NCD_EINVAL, "process %d of %d is out of range",
                        p->proc, p->nprocs);
    struct pg_tcp *t = calloc(1, sizeof *t);
    if (!t)
        return NCD_ENOMEM;
    struct ncd_pg *pg = &t->pg;
    ncd__pg_init(pg, &tcp_ops, p->nprocs, p->proc, 0);
    t->root_fd = -1;
    if (p->timeout_ms > 0)
        pg->timeout_ms = p->timeout_ms;
    snprintf(t->root_addr, sizeof t->root_addr, "%s:%d",
             p->host ? p->host : "", p->port);
    double deadline = ncd_sock_now() + pg->timeout_ms / 1000.0;
    int rc = 0;
    if (p->proc == 0) {
        pg->token = p->token ? p->token : ncd__pg_draw_token();
        t->fds = malloc(sizeof(int) * (size_t)p->nprocs);
        t->addrs = calloc((size_t)p->nprocs, sizeof t->addrs[0]);
        if (!t->fds || !t->addrs) {
            ncd_pg_free(pg);
            return NCD_ENOMEM;
        }
        for (int i = 0; i < p->nprocs; i++)
            t->fds[i] = -1;
        int lfd = p->listen_fd;
        if (lfd < 0 && p->nprocs > 1) {
            struct sockaddr_storage ss;
            socklen_t sl;
            rc = ncd_sock_resolve(ctx, p->host, p->port, &ss, &sl);
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
            rc = pg_root_accept(ctx, t, lfd, deadline);
        if (lfd >= 0)
            close(lfd);
    } else {
        if (p->listen_fd >= 0)
            close(p->listen_fd);
        int fd = ncd_sock_connect_retry(ctx, p->host, p->port, deadline,
                                        "rendezvous root", 0);
        if (fd < 0) {
            ncd_pg_free(pg);
            return fd;
        }
        t->root_fd = fd;
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
            ncd_sock_addr_str((struct sockaddr *)&ss, pg->local_addr,
                          sizeof pg->local_addr, NULL);
        struct pg_hello h = {PG_MAGIC, PG_PROTO_VERSION, (uint32_t)p->nprocs,
                             (uint32_t)p->proc, p->token};
        int err;
        rc = ncd_sock_io(fd, &h, sizeof h, 1, deadline, NULL, &err);
        struct pg_hdr rep;
        if (!rc)
            rc = ncd_sock_io(fd, &rep, sizeof rep, 0, deadline, NULL, &err);
        if (rc)
            rc = ncd_fail(ctx, rc,
                          "rendezvous with root %s failed: %s (root "
                          "rejected this process, or not all %d processes "
                          "started)",
                          t->root_addr,
                          rc == NCD_ETIMEOUT ? "timed out" : "connection closed",
                          p->nprocs);
        else if (rep.magic == PG_MAGIC && rep.status != 0) {
            char msg[400] = "";
            size_t ml = rep.len < sizeof msg - 1 ? rep.len : sizeof msg - 1;
            ncd_sock_io(fd, msg, ml, 0, ncd_sock_now() + 1.0, NULL, &err);
            msg[ml] = '\0';
            ncd_utf8_sanitize(msg);
            rc = ncd_fail(ctx, NCD_EPROTO, "rendezvous with root %s: %s",
                          t->root_addr, msg);
        } else if (rep.magic != PG_MAGIC)
            rc = ncd_fail(ctx, NCD_EPROTO,
                          "rendezvous root %s answered with a bad frame",
                          t->root_addr);
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

