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
#include "pg/pg_int.h"

/* The frames (struct pg_hello, struct pg_hdr) and their decoders are in
 * pg_int.h; the decoders take buffers (tests/fuzz/fuzz_wire.c). */

const char *ncd__pg_hello_check(const void *buf, size_t len, int nprocs,
                                uint64_t token, const int *fds, int *fatal,
                                struct pg_hello *out)
{
    struct pg_hello h;
    *fatal = 0;
    if (len < sizeof h)
        return "no hello";
    memcpy(&h, buf, sizeof h);
    *out = h;
    if (h.magic != PG_MAGIC)
        return "bad magic (not an nccl-doctor process)";
    if (h.version != PG_PROTO_VERSION)
        return "protocol version mismatch";
    /* A process of this job with the wrong job size or a duplicate index is
     * fatal (NCCL's "Bootstrap Root : mismatch in info from procs" / "has
     * already checked in"); anything else is a stray connection. */
    if (h.nprocs != (uint32_t)nprocs) {
        *fatal = 1;
        return "mismatch in the number of processes";
    }
    if (h.proc == 0 || h.proc >= (uint32_t)nprocs)
        return "process index out of range";
    if (fds[h.proc] >= 0) {
        *fatal = 1;
        return "process index has already checked in";
    }
    if (h.token && h.token != token)
        return "wrong job token";
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
        char msg[400];
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
                     "process %d (%s) %s", p, t->addrs[p],
                     rc == NCD_ETIMEOUT
                         ? "did not answer before the timeout"
                         : "closed its connection to the rendezvous root "
                           "(process died?)");
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

static int pg_root_accept(struct ncd_ctx *ctx, struct pg_tcp *t, int lfd,
                          double deadline)
{
    struct ncd_pg *pg = &t->pg;
    int joined = 1;
    while (joined < pg->nprocs) {
        char peer[96];
        int fd = ncd_sock_accept(ctx, lfd, deadline, pg->abort_flag, peer,
                                 sizeof peer, "processes to join the "
                                              "rendezvous");
        if (fd < 0) {
            /* Name the processes that never came: that is where to look. */
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
            ncd_ctx_clear_error(ctx);
            return ncd_fail(ctx, fd,
                            "rendezvous root: only %d of %d processes "
                            "joined before the timeout (%d s); never joined: "
                            "process %s",
                            joined, pg->nprocs, pg->timeout_ms / 1000,
                            missing);
        }
        struct pg_hello h;
        int err, fatal = 0;
        double hd = ncd_sock_now() + 5.0;
        if (hd > deadline)
            hd = deadline;
        int rc = ncd_sock_io(fd, &h, sizeof h, 0, hd, pg->abort_flag, &err);
        const char *why = ncd__pg_hello_check(&h, rc ? 0 : sizeof h,
                                              pg->nprocs, pg->token, t->fds,
                                              &fatal, &h);
        if (why) {
            close(fd);
            if (fatal)
                return ncd_fail(ctx, NCD_EPROTO,
                                "rendezvous root: process %u from %s: %s "
                                "(it says nprocs %u, root has %d): two jobs "
                                "share the rendezvous address, or processes "
                                "disagree on the job size or their index",
                                h.proc, peer, why, h.nprocs, pg->nprocs);
            continue;
        }
        t->fds[h.proc] = fd;
        snprintf(t->addrs[h.proc], sizeof t->addrs[0], "%.63s", peer);
        joined++;
    }
    struct pg_hdr rep = {.magic = PG_MAGIC, .len = pg->token};
    for (int p = 1; p < pg->nprocs; p++) {
        int err;
        int rc = ncd_sock_io(t->fds[p], &rep, sizeof rep, 1, deadline,
                              pg->abort_flag, &err);
        if (rc)
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
                               "rendezvous root");
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
        else if (rep.magic != PG_MAGIC || rep.status != 0)
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

