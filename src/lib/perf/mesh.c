/* SPDX-License-Identifier: MIT */
/*
 * The rank-to-rank connection mesh of the socket backend (perf.h
 * section 3): every rank listens on its data address, the lower rank of
 * each pair connects, and every accepted connection is validated (magic,
 * protocol version, job token, ranks and socket index in range, no
 * duplicate) before it is used; a failure names the peer's rank, host,
 * pid and address.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ncd/ctx.h"
#include "ncd/error.h"
#include "ncd/job.h"
#include "ncd/perf.h"
#include "ncd/sock.h"
#include "perf/perf_int.h"

/* The hello (struct ncd__peer_hello) and its decoder are in perf_int.h. */

const char *ncd__peer_hello_check(const void *buf, size_t len, uint64_t token,
                                  int rank, int nranks, int nsocks,
                                  const int *fds, int *from, int *sock)
{
    struct ncd__peer_hello h;
    if (len < sizeof h)
        return "no hello";
    memcpy(&h, buf, sizeof h);
    if (h.magic != NCD_PEER_MAGIC)
        return "not an nccl-doctor rank (bad magic)";
    if (h.version != NCD_PEER_PROTO_VERSION)
        return "protocol version mismatch";
    if (h.token != token)
        return "wrong job token (another job)";
    if (h.to != (uint32_t)rank)
        return "addressed to another rank";
    /* unsigned compares: an index above INT_MAX is not a negative one */
    if (h.from <= (uint32_t)rank || h.from >= (uint32_t)nranks ||
        h.nsocks != (uint32_t)nsocks || h.sock >= (uint32_t)nsocks)
        return "rank or socket index out of range";
    if (fds[(size_t)h.from * (size_t)nsocks + h.sock] >= 0)
        return "duplicate connection";
    *from = (int)h.from;
    *sock = (int)h.sock;
    return NULL;
}

struct ncd_peerset {
    int nranks, rank, nsocks;
    int *fds; /* [peer * nsocks + s] */
    char (*desc)[200];
};

int ncd_peer_listen(struct ncd_ctx *ctx, const char *addr, const char *ifname,
                    int rank, struct ncd_rank_info *info)
{
    memset(info, 0, sizeof *info);
    info->rank = rank;
    info->pid = (int32_t)getpid();
    ncd_job_hostname(info->host, sizeof info->host);
    snprintf(info->ifname, sizeof info->ifname, "%s", ifname ? ifname : "");
    int port = 0;
    int fd = ncd_sock_listen(addr, ifname, 0, SOCK_STREAM, 1024, NULL);
    if (fd < 0) {
        int e = errno;
        if (e == EINVAL)
            return ncd_fail(ctx, NCD_EINVAL, "'%s' is not an IP address",
                            addr);
        return ncd_fail(ctx, ncd_err_from_errno(e),
                        "rank %d cannot listen on %s: %s", rank,
                        addr && *addr ? addr : "*", strerror(e));
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    ncd_sock_addr_str((struct sockaddr *)&ss, info->addr, sizeof info->addr,
                      &port);
    info->port = port;
    return fd;
}

static void describe(struct ncd_peerset *ps, const struct ncd_rank_info *in,
                     int peer)
{
    const struct ncd_rank_info *r = &in[peer];
    char hp[96];
    ncd_sock_hostport_str(r->addr, r->port, hp, sizeof hp);
    snprintf(ps->desc[peer], sizeof ps->desc[0],
             "rank %d (host %.63s, pid %d, %s%s%.95s)", peer, r->host, r->pid,
             r->ifname[0] ? r->ifname : "", r->ifname[0] ? " " : "", hp);
}

/* A hello on this rank's listener (ncd_hello_fn). */
struct accept_arg {
    struct ncd_peerset *ps;
    uint64_t token;
};

static int judge_hello(void *arg, int fd, const void *hello, const char *peer,
                       char *why, size_t whylen)
{
    (void)peer;
    struct accept_arg *a = arg;
    struct ncd_peerset *ps = a->ps;
    int from, sock;
    /* the decoder the wire fuzzer (tests/fuzz/fuzz_wire.c) exercises */
    const char *w = ncd__peer_hello_check(hello, sizeof(struct ncd__peer_hello),
                                          a->token, ps->rank, ps->nranks,
                                          ps->nsocks, ps->fds, &from, &sock);
    if (w) {
        struct ncd__peer_hello h;
        memcpy(&h, hello, sizeof h);
        if (h.magic == NCD_PEER_MAGIC && h.token == a->token)
            snprintf(why, whylen, "says rank %u socket %u: %s", h.from,
                     h.sock, w);
        else
            snprintf(why, whylen, "%s", w);
        return 0;
    }
    ps->fds[from * ps->nsocks + sock] = fd;
    return 1;
}

/* Hellos must come at once: a connection has this long to send its own. */
#define HELLO_MS 2000

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
    const struct ncd_rank_info *me = &infos[rank];
    double deadline = ncd_sock_now() + timeout_ms / 1000.0;
    int rc = 0;
    /* Connect to every lower rank's advertised address, retrying as NCCL's
     * sockets do, then accept every higher one. */
    for (int p = 0; p < rank && !rc; p++) {
        for (int s = 0; s < nsocks && !rc; s++) {
            int fd = ncd_sock_connect_retry(ctx, infos[p].addr, infos[p].port,
                                            deadline, "peer",
                                            NCD_SOCK_RETRY_NCCL);
            if (fd < 0) {
                char detail[300];
                snprintf(detail, sizeof detail, "%s", ncd_ctx_errdetail(ctx));
                ncd_ctx_clear_error(ctx);
                rc = ncd_fail(
                    ctx, fd, "rank %d on %s %s cannot connect to %s: %s%s",
                    rank, me->ifname[0] ? me->ifname : "?", me->addr,
                    ps->desc[p],
                    fd == NCD_ECONNREFUSED ? "connection refused"
                    : fd == NCD_ETIMEOUT
                        ? "no answer (firewall, wrong interface or address "
                          "not reachable)"
                        : "unreachable from this interface: ",
                    fd == NCD_ECONNREFUSED || fd == NCD_ETIMEOUT ? ""
                                                                 : detail);
                break;
            }
            ps->fds[p * nsocks + s] = fd;
            struct ncd__peer_hello h = {NCD_PEER_MAGIC, NCD_PEER_PROTO_VERSION,
                                        token,
                                   (uint32_t)rank, (uint32_t)p, (uint32_t)s,
                                   (uint32_t)nsocks};
            int err;
            if (ncd_sock_io(fd, &h, sizeof h, 1, deadline, NULL, &err))
                rc = ncd_fail(ctx, NCD_EPEER,
                              "rank %d: %s closed the connection during the "
                              "handshake",
                              rank, ps->desc[p]);
        }
    }
    int need = (nranks - 1 - rank) * nsocks;
    struct ncd_hello_stats st;
    memset(&st, 0, sizeof st);
    struct accept_arg aa = {ps, token};
    if (!rc && need > 0) {
        rc = ncd_sock_accept_hellos(ctx, lfd, sizeof(struct ncd__peer_hello), need,
                                    deadline, HELLO_MS, NULL, judge_hello,
                                    &aa, &st, "peers to connect");
        if (rc) {
            int missing = -1;
            for (int p = rank + 1; p < nranks && missing < 0; p++)
                for (int s = 0; s < nsocks; s++)
                    if (ps->fds[p * nsocks + s] < 0) {
                        missing = p;
                        break;
                    }
            char strangers[700];
            ncd_hello_stats_text(&st, HELLO_MS, strangers, sizeof strangers);
            char hp[96];
            ncd_sock_hostport_str(me->addr, me->port, hp, sizeof hp);
            ncd_ctx_clear_error(ctx);
            rc = ncd_fail(ctx, rc,
                          "rank %d: %s never connected (timeout %d s): it "
                          "died, or cannot reach %s%s%s",
                          rank, missing >= 0 ? ps->desc[missing] : "a peer",
                          timeout_ms / 1000, hp,
                          strangers[0] ? "; meanwhile " : "", strangers);
        }
    }
    close(lfd);
    if (rc) {
        ncd_peerset_free(ps);
        return rc;
    }
    for (int i = 0; i < nranks * nsocks; i++)
        if (ps->fds[i] >= 0)
            ncd_sock_set_nonblock(ps->fds[i]);
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

