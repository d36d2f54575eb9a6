/* SPDX-License-Identifier: MIT */
/*
 * probe: the pair tests (connect, handshake, round trips, burst,
 * don't-fragment datagrams) and the lock-step run over the caller's
 * allgather.  See include/ncd/probe.h for the flow.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ncd/error.h"
#include "ncd/probe.h"
#include "ncd/sock.h"
#include "probe/probe_int.h"

/* ---- client side -------------------------------------------------------- */

static enum ncd_probe_status status_of_errno(int e)
{
    switch (e) {
    case ECONNREFUSED: return NCD_PROBE_REFUSED;
    case ETIMEDOUT:
    case EAGAIN:
    case EINPROGRESS: return NCD_PROBE_TIMEOUT;
    case ENETUNREACH:
    case EHOSTUNREACH:
    case ENETDOWN:
    case EHOSTDOWN: return NCD_PROBE_NO_ROUTE;
    case ECONNRESET:
    case ENODATA:
    case EPIPE:
    case ECONNABORTED: return NCD_PROBE_RESET;
    default: return NCD_PROBE_ERROR;
    }
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/*
 * One TCP test to `peer`'s (addr, port): connect, handshake (the answer
 * must come from rank `peer` of this job), optionally round trips and a
 * burst.  Fills status/err/detail and the measures given non-NULL.
 */
struct tcp_out {
    enum ncd_probe_status status;
    int err;
    char detail[96];
    float connect_us, rtt_us, bw_gbps;
    char src[48];
};

static void tcp_test(struct ncd_probe *p, int peer, const char *addr,
                     const char *ifname, int port, int kind, int rtt_iters,
                     size_t burst, struct tcp_out *t)
{
    memset(t, 0, sizeof *t);
    int err = 0;
    double t0 = ncd__probe_now_us();
    int fd = ncd_sock_connect_timeout(addr, ifname, port, p->o.timeout_ms, &err,
                                      t->src, sizeof t->src);
    if (fd < 0) {
        t->status = status_of_errno(err);
        t->err = err;
        if (t->status == NCD_PROBE_TIMEOUT)
            snprintf(t->detail, sizeof t->detail,
                     "no answer to the connection within %d ms",
                     p->o.timeout_ms);
        else
            snprintf(t->detail, sizeof t->detail, "connect: %s",
                     strerror(err));
        return;
    }
    t->connect_us = (float)(ncd__probe_now_us() - t0);
    ncd_sock_set_timeouts(fd, p->o.timeout_ms);
    ncd_sock_nodelay(fd);
    struct hello h = {.magic = PROBE_MAGIC,
                      .kind = (uint32_t)kind,
                      .token = p->o.token,
                      .src = p->rank,
                      .dst = peer},
                 a;
    err = ncd_sock_send_all(fd, &h, sizeof h);
    if (!err)
        err = ncd_sock_recv_all(fd, &a, sizeof a);
    if (err) {
        t->status = status_of_errno(err);
        t->err = err;
        if (err == ENODATA) {
            t->status = NCD_PROBE_WRONG_PEER;
            snprintf(t->detail, sizeof t->detail,
                     "accepted, then closed without the probe's answer "
                     "(another program or job on that address)");
        } else {
            snprintf(t->detail, sizeof t->detail,
                     "connected, then the handshake failed: %s",
                     strerror(err));
        }
        close(fd);
        return;
    }
    if (a.magic != PROBE_MAGIC || a.token != p->o.token || a.src != peer) {
        t->status = NCD_PROBE_WRONG_PEER;
        if (a.magic != PROBE_MAGIC)
            snprintf(t->detail, sizeof t->detail,
                     "the answer is not nccl-doctor's: another program "
                     "listens there");
        else if (a.token != p->o.token)
            snprintf(t->detail, sizeof t->detail,
                     "answered by another nccl-doctor job");
        else
            snprintf(t->detail, sizeof t->detail,
                     "answered by rank %d instead of rank %d (the same "
                     "address on two hosts?)",
                     a.src, peer);
        close(fd);
        return;
    }
    t->status = NCD_PROBE_OK;
    if (rtt_iters > 0) {
        float *v = calloc((size_t)rtt_iters, sizeof *v);
        int ok = 0;
        for (int i = 0; v && i < rtt_iters; i++) {
            char op = 'P';
            double s0 = ncd__probe_now_us();
            if (ncd_sock_send_all(fd, &op, 1) || ncd_sock_recv_all(fd, &op, 1))
                break;
            v[ok++] = (float)(ncd__probe_now_us() - s0);
        }
        if (ok) {
            qsort(v, (size_t)ok, sizeof *v, cmp_float);
            t->rtt_us = v[ok / 2];
        }
        free(v);
    }
    if (burst > 0) {
        static char buf[262144];
        char op = 'B';
        uint64_t len = burst;
        double s0 = ncd__probe_now_us();
        err = ncd_sock_send_all(fd, &op, 1);
        if (!err)
            err = ncd_sock_send_all(fd, &len, sizeof len);
        size_t left = burst;
        while (!err && left) {
            size_t n = left < sizeof buf ? left : sizeof buf;
            err = ncd_sock_send_all(fd, buf, n);
            left -= n;
        }
        if (!err)
            err = ncd_sock_recv_all(fd, &op, 1);
        double dt = ncd__probe_now_us() - s0;
        if (!err && dt > 0)
            t->bw_gbps = (float)((double)burst / dt / 1e3);
        if (err) {
            t->status = status_of_errno(err);
            t->err = err;
            snprintf(t->detail, sizeof t->detail,
                     "connected, but the %zu-byte burst failed: %s", burst,
                     strerror(err));
        }
    }
    char q = 'Q';
    ncd_sock_send_all(fd, &q, 1);
    close(fd);
}

/*
 * DF-marked UDP datagrams of increasing size to the peer's echo port:
 * records the largest packet answered and the smallest lost.
 */
static void mtu_test(struct ncd_probe *p, const struct ncd_probe_rank *peer,
                     struct ncd_probe_cell *c)
{
    struct sockaddr_storage ss;
    socklen_t sl = ncd_sock_make_addr(peer->nccl_addr, p->self.nccl_if,
                                      peer->udp_port, &ss);
    if (!sl)
        return;
    int fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return;
    int hdr = ss.ss_family == AF_INET ? 28 : 48;
    if (ss.ss_family == AF_INET) {
        int v = IP_PMTUDISC_PROBE; /* DF set, ignore the cached path MTU */
        setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &v, sizeof v);
    } else {
        int v = IPV6_PMTUDISC_PROBE;
        setsockopt(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &v, sizeof v);
    }
    if (connect(fd, (struct sockaddr *)&ss, sl) < 0) {
        close(fd);
        return;
    }
    int sizes[12], ns = 0;
    static const int std[] = {576, 1280, 1500, 2048, 4096, 8192, 9000};
    int limit = p->self.mtu > 0 ? p->self.mtu : 1500;
    if (peer->mtu > limit)
        limit = peer->mtu; /* try up to the larger: shows a mismatch */
    for (size_t i = 0; i < sizeof std / sizeof std[0]; i++)
        if (std[i] < limit)
            sizes[ns++] = std[i];
    if (p->self.mtu > 0 && p->self.mtu != limit)
        sizes[ns++] = p->self.mtu;
    sizes[ns++] = limit;
    /* ascending, unique */
    for (int i = 0; i < ns; i++)
        for (int j = i + 1; j < ns; j++)
            if (sizes[j] < sizes[i]) {
                int t = sizes[i];
                sizes[i] = sizes[j];
                sizes[j] = t;
            }
    static char buf[65536];
    uint32_t seq = 0;
    for (int i = 0; i < ns; i++) {
        if (i && sizes[i] == sizes[i - 1])
            continue;
        int sz = sizes[i];
        if (sz - hdr < (int)sizeof(struct udp_hdr) || sz > 65000)
            continue;
        int got = 0, toobig = 0;
        for (int tr = 0; tr < 3 && !got && !toobig; tr++) {
            struct udp_hdr h = {.magic = PROBE_MAGIC,
                                .seq = ++seq,
                                .token = p->o.token,
                                .size = sz,
                                .rank = p->rank};
            memset(buf, 0x5a, (size_t)(sz - hdr));
            memcpy(buf, &h, sizeof h);
            if (send(fd, buf, (size_t)(sz - hdr), 0) < 0) {
                if (errno == EMSGSIZE)
                    toobig = 1;
                continue;
            }
            double end = ncd__probe_now_us() + 250e3;
            for (;;) {
                int left = (int)((end - ncd__probe_now_us()) / 1000.0);
                if (left <= 0)
                    break;
                struct pollfd pf = {.fd = fd, .events = POLLIN};
                if (poll(&pf, 1, left) <= 0)
                    break;
                struct udp_hdr a;
                ssize_t r = recv(fd, &a, sizeof a, MSG_DONTWAIT);
                if (r == (ssize_t)sizeof a && a.magic == PROBE_MAGIC &&
                    a.seq == h.seq && a.token == p->o.token) {
                    got = 1;
                    break;
                }
                if (r < 0 && errno != EAGAIN && errno != EINTR)
                    break; /* ICMP error: port unreachable etc. */
            }
        }
        if (toobig) {
            c->mtu_local = sizes[i - (i > 0)];
            break;
        }
        if (got) {
            c->mtu_ok = sz;
        } else {
            c->mtu_lost = sz;
            break;
        }
    }
    if (!c->mtu_local)
        c->mtu_local = limit;
    close(fd);
}

static void test_peer(struct ncd_probe *p, int j, struct ncd_probe_cell *c)
{
    const struct ncd_probe_rank *pr = &p->res.ranks[j];
    struct tcp_out t;
    c->port = pr->tcp_port;
    if (!pr->nccl_addr[0] || !pr->tcp_port) {
        c->status = NCD_PROBE_NO_ADDR;
        snprintf(c->detail, sizeof c->detail, "%s",
                 pr->nccl_addr[0] ? "the peer could not listen on it"
                                  : "NCCL finds no interface on the peer");
    } else if (!p->self.nccl_addr[0]) {
        c->status = NCD_PROBE_NO_ADDR;
        snprintf(c->detail, sizeof c->detail,
                 "NCCL finds no interface on this rank");
    } else {
        tcp_test(p, j, pr->nccl_addr, p->self.nccl_if, pr->tcp_port, 0,
                 p->o.rtt_iters, p->o.burst_bytes, &t);
        c->status = t.status;
        c->err = t.err;
        c->connect_us = t.connect_us;
        c->rtt_us = t.rtt_us;
        c->bw_gbps = t.bw_gbps;
        snprintf(c->src_addr, sizeof c->src_addr, "%s", t.src);
        snprintf(c->detail, sizeof c->detail, "%s", t.detail);
        if (pr->ctl_port) {
            struct tcp_out u;
            tcp_test(p, j, pr->nccl_addr, p->self.nccl_if, pr->ctl_port, 1,
                     0, 0, &u);
            c->ctl_status = u.status;
        }
        if (c->status == NCD_PROBE_OK && pr->udp_port && p->o.mtu_probe)
            mtu_test(p, pr, c);
    }
    /* the recommended interface matters between hosts only (ranks of one
     * host talk through SHM/P2P; this also keeps -np runs on loopback) */
    int same_host = !strcmp(pr->host, p->self.host) &&
                    !strcmp(pr->boot_id, p->self.boot_id);
    if (same_host) {
        c->rec_status = NCD_PROBE_NOT_TRIED;
    } else if (pr->rec_port && pr->rec_addr[0]) {
        tcp_test(p, j, pr->rec_addr, p->self.rec_if, pr->rec_port, 2, 0,
                 p->o.burst_bytes, &t);
        c->rec_status = t.status;
        c->rec_bw_gbps = t.bw_gbps;
    } else if (pr->rec_addr[0] && !strcmp(pr->rec_addr, pr->nccl_addr)) {
        c->rec_status = c->status;
        c->rec_bw_gbps = c->bw_gbps;
    }
}

int ncd_probe_run(struct ncd_ctx *ctx, struct ncd_probe *p,
                  ncd_probe_allgather_fn ag, void *ag_arg,
                  const struct ncd_probe_result **res)
{
    int n = p->nranks, rc;
    *res = NULL;
    if (p->have_res) {
        *res = &p->res;
        return 0;
    }
    struct ncd_probe_result *r = &p->res;
    r->nranks = n;
    r->timeout_ms = p->o.timeout_ms;
    r->burst_bytes = p->o.burst_bytes;
    r->ranks = calloc((size_t)n, sizeof *r->ranks);
    r->cells = calloc((size_t)n * (size_t)n, sizeof *r->cells);
    struct ncd_probe_cell *row = calloc((size_t)n, sizeof *row);
    if (!r->ranks || !r->cells || !row) {
        rc = NCD_ENOMEM;
        goto fail;
    }
    rc = ag(ag_arg, &p->self, sizeof p->self, r->ranks);
    if (rc)
        goto fail;
    for (int j = 0; j < n; j++) {
        if (r->ranks[j].rank != j) {
            rc = ncd_fail(ctx, NCD_EPROTO,
                          "rank %d's record says rank %d: ranks of different "
                          "builds or jobs",
                          j, r->ranks[j].rank);
            goto fail;
        }
        /* never trust a peer's strings to be terminated */
        struct ncd_probe_rank *k = &r->ranks[j];
#define TERM(f) k->f[sizeof k->f - 1] = 0
        TERM(host);
        TERM(boot_id);
        TERM(nccl_if);
        TERM(nccl_addr);
        TERM(nccl_pass);
        TERM(rec_if);
        TERM(rec_addr);
        TERM(rec_ifname);
        TERM(socket_ifname);
        TERM(nccl_version_src);
        TERM(rdv_addr);
        TERM(rdv_if);
        TERM(listen_error);
#undef TERM
        if (k->n_addrs < 0 || k->n_addrs > 8)
            k->n_addrs = 0;
        for (int a = 0; a < 8; a++)
            k->addrs[a][sizeof k->addrs[a] - 1] = 0;
    }
    /* how this rank resolves every host name */
    ncd__probe_resolve_all(r, row, p->o.timeout_ms);
    for (int s = 1; s < n; s++) {
        int j = (p->rank + s) % n;
        test_peer(p, j, &row[j]);
        char b = 1, *all = malloc((size_t)n);
        if (!all) {
            rc = NCD_ENOMEM;
            goto fail;
        }
        rc = ag(ag_arg, &b, 1, all);
        free(all);
        if (rc)
            goto fail;
    }
    rc = ag(ag_arg, row, (size_t)n * sizeof *row, r->cells);
    if (rc)
        goto fail;
    free(row);
    row = NULL;
    for (int i = 0; i < n * n; i++) {
        struct ncd_probe_cell *c = &r->cells[i];
        c->detail[sizeof c->detail - 1] = 0;
        c->resolved[sizeof c->resolved - 1] = 0;
        c->resolve_err[sizeof c->resolve_err - 1] = 0;
        c->src_addr[sizeof c->src_addr - 1] = 0;
    }
    rc = ncd_probe_result_index(r);
    if (rc)
        goto fail;
    p->have_res = 1;
    *res = r;
    return 0;
fail:
    free(row);
    free(r->ranks);
    free(r->cells);
    memset(r, 0, sizeof *r);
    return rc;
}
