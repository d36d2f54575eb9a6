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
 * One connection of the first phase: to one listener of the peer, from a
 * port the kernel draws or from a fixed one.  All of a step's attempts are
 * started together and waited for with one timeout.
 */
struct attempt {
    const char *addr; /* peer address */
    const char *ifname;
    int port, kind, src_port;
    int fd;
    enum ncd_probe_status status;
    int err;
    double t0;
    float connect_us;
    char src[48];
    char detail[96];
};

static void attempt_fail(struct attempt *a, int err, const char *what)
{
    a->status = status_of_errno(err);
    a->err = err;
    snprintf(a->detail, sizeof a->detail, "%s%s", what ? what : "connect: ",
             strerror(err));
    if (a->fd >= 0)
        close(a->fd);
    a->fd = -1;
}

/* A source port outside this host's ephemeral range, different from the
 * control listeners' (probe_net.c: lo-1-7k), k-th candidate; 0 none. */
static int src_port_candidate(const struct ncd_probe_rank *self, int k)
{
    int c = self->port_lo > 1100
                ? self->port_lo - 4 - 7 * k
                : (self->port_hi ? self->port_hi : 60999) + 4 + 7 * k;
    return c > 1024 && c <= 65535 ? c : 0;
}

static void attempt_hello(struct ncd_probe *p, int peer, struct attempt *a,
                          int more);
static void attempt_answer(struct ncd_probe *p, int peer, struct attempt *a);
static float round_trips(int fd, int iters);

/*
 * Starts every attempt, then waits for them together (one timeout).  Each
 * connection gets its hello as soon as it is made, with 'Q' behind it,
 * except attempt `rtt` (-1 none): once its hello is out, and those of all
 * the others made so far, its answer is read and the round trips timed
 * (*rtt_us).  So the peer's server, which takes one connection at a time
 * in any order, never waits on a hello that is not coming.
 */
static void attempts_connect(struct ncd_probe *p, int peer, struct attempt *at,
                             int n, int rtt, float *rtt_us)
{
    struct pollfd pf[8];
    for (int i = 0; i < n; i++) {
        struct attempt *a = &at[i];
        a->fd = -1;
        a->status = NCD_PROBE_NOT_TRIED;
        int err = 0;
        a->t0 = ncd__probe_now_us();
        if (a->src_port < 0) {
            /* a fixed source port: the next free candidate */
            for (int k = 0; k < 16 && a->fd < 0; k++) {
                int sp = src_port_candidate(&p->self, k);
                if (!sp)
                    break;
                a->fd = ncd_sock_connect_start(a->addr, a->ifname, a->port, sp,
                                               &err);
                if (a->fd < 0 && err != EADDRINUSE && err != EADDRNOTAVAIL)
                    break;
            }
            if (a->fd < 0 && (err == EADDRINUSE || err == EADDRNOTAVAIL ||
                              err == 0)) {
                a->status = NCD_PROBE_NOT_TRIED; /* no port to bind */
                continue;
            }
        } else {
            a->fd = ncd_sock_connect_start(a->addr, a->ifname, a->port, 0, &err);
        }
        if (a->fd < 0)
            attempt_fail(a, err, NULL);
        else
            a->status = NCD_PROBE_OK; /* pending */
    }
    double end = ncd__probe_now_us() + p->o.timeout_ms * 1e3;
    for (;;) {
        int np = 0, map[8];
        for (int i = 0; i < n; i++)
            if (at[i].fd >= 0 && at[i].connect_us == 0) {
                map[np] = i;
                pf[np++] = (struct pollfd){.fd = at[i].fd, .events = POLLOUT};
            }
        if (!np)
            break;
        int left = (int)((end - ncd__probe_now_us()) / 1e3);
        int pr = left > 0 ? poll(pf, (nfds_t)np, left) : 0;
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0) {
            for (int k = 0; k < np; k++) {
                attempt_fail(&at[map[k]], ETIMEDOUT, NULL);
                snprintf(at[map[k]].detail, sizeof at[map[k]].detail,
                         "no answer to the connection within %d ms",
                         p->o.timeout_ms);
            }
            break;
        }
        for (int k = 0; k < np; k++) {
            struct attempt *a = &at[map[k]];
            if (!pf[k].revents)
                continue;
            int e = ncd_sock_connect_finish(a->fd);
            if (e) {
                attempt_fail(a, e, NULL);
                continue;
            }
            a->connect_us = (float)(ncd__probe_now_us() - a->t0);
            if (a->connect_us <= 0)
                a->connect_us = 0.001f;
            struct sockaddr_storage ls;
            socklen_t ll = sizeof ls;
            if (getsockname(a->fd, (struct sockaddr *)&ls, &ll) == 0)
                ncd_sock_addr_str((struct sockaddr *)&ls, a->src,
                                  sizeof a->src, NULL);
            ncd_sock_set_timeouts(a->fd, p->o.timeout_ms);
            ncd_sock_nodelay(a->fd);
            attempt_hello(p, peer, a, map[k] == rtt);
        }
        for (int k = 0; k < np; k++) {
            struct attempt *a = &at[map[k]];
            if (map[k] != rtt || !pf[k].revents || a->fd < 0)
                continue;
            attempt_answer(p, peer, a);
            if (a->fd >= 0 && p->o.rtt_iters > 0)
                *rtt_us = round_trips(a->fd, p->o.rtt_iters);
            if (a->fd >= 0) {
                char q = 'Q';
                ncd_sock_send_all(a->fd, &q, 1);
            }
        }
    }
}

/* Sends the hello on a connected attempt (and 'Q' right behind it when no
 * request follows, so the peer's server never waits on it). */
static void attempt_hello(struct ncd_probe *p, int peer, struct attempt *a,
                          int more)
{
    if (a->fd < 0)
        return;
    struct {
        struct hello h;
        char q;
    } m = {.h = {.magic = PROBE_MAGIC,
                 .kind = (uint32_t)a->kind,
                 .token = p->o.token,
                 .src = p->rank,
                 .dst = peer},
           .q = 'Q'};
    int err = ncd_sock_send_all(a->fd, &m, sizeof m.h + (more ? 0 : 1));
    if (err)
        attempt_fail(a, err, "connected, then the handshake failed: ");
}

static void attempt_answer(struct ncd_probe *p, int peer, struct attempt *a)
{
    if (a->fd < 0)
        return;
    unsigned char ab[sizeof(struct hello)];
    int err = ncd_sock_recv_all(a->fd, ab, sizeof ab);
    if (err == ENODATA) {
        a->status = NCD_PROBE_WRONG_PEER;
        a->err = err;
        snprintf(a->detail, sizeof a->detail,
                 "accepted, then closed without the probe's answer (another "
                 "program or job on that address)");
    } else if (err) {
        attempt_fail(a, err, "connected, then the handshake failed: ");
        return;
    } else {
        a->status = ncd__probe_answer_decode(ab, sizeof ab, p->o.token, peer,
                                             a->kind, a->detail,
                                             sizeof a->detail);
    }
    if (a->status != NCD_PROBE_OK) {
        close(a->fd);
        a->fd = -1;
    }
}

/* Closes an attempt; a fixed source port closes with a reset, so no
 * TIME_WAIT keeps that port from the next run. */
static void attempt_close(struct attempt *a)
{
    if (a->fd < 0)
        return;
    if (a->src_port < 0) {
        struct linger l = {.l_onoff = 1, .l_linger = 0};
        setsockopt(a->fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    }
    close(a->fd);
    a->fd = -1;
}

static float round_trips(int fd, int iters)
{
    float *v = calloc((size_t)iters, sizeof *v), med = 0;
    int ok = 0;
    for (int i = 0; v && i < iters; i++) {
        char op = 'P';
        double s0 = ncd__probe_now_us();
        if (ncd_sock_send_all(fd, &op, 1) || ncd_sock_recv_all(fd, &op, 1))
            break;
        v[ok++] = (float)(ncd__probe_now_us() - s0);
    }
    if (ok) {
        qsort(v, (size_t)ok, sizeof *v, cmp_float);
        med = v[ok / 2];
    }
    free(v);
    return med;
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
                ssize_t r = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
                if (r >= 0 &&
                    ncd__probe_udp_decode(buf, (size_t)r, p->o.token, &a) == 0 &&
                    a.seq == h.seq) {
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

static void aim(struct attempt *a, const char *addr, const char *ifname,
                int port, int kind, int src_port)
{
    memset(a, 0, sizeof *a);
    a->addr = addr;
    a->ifname = ifname;
    a->port = port;
    a->kind = kind;
    a->src_port = src_port;
    a->fd = -1;
}

/* Which of a step's attempts is which. */
enum { A_DATA, A_CTL, A_SRC, A_PER_PATH };

static void conn_from(struct ncd_probe_conn *c, const struct attempt *a)
{
    c->status = a[A_DATA].status;
    c->err = a[A_DATA].err;
    c->port = a[A_DATA].port;
    c->connect_us = a[A_DATA].status == NCD_PROBE_OK ? a[A_DATA].connect_us
                                                     : 0;
    snprintf(c->detail, sizeof c->detail, "%s", a[A_DATA].detail);
    c->ctl_status = a[A_CTL].status;
    c->src_status = a[A_SRC].status;
}

/* The path to test on the recommended interface: 0 none (same host, or
 * the peer recommends nothing), 1 its own listeners, 2 NCCL's address
 * (the peer recommends the address NCCL uses: same results). */
static int rec_path(const struct ncd_probe *p, const struct ncd_probe_rank *pr)
{
    int same_host = !strcmp(pr->host, p->self.host) &&
                    !strcmp(pr->boot_id, p->self.boot_id);
    if (same_host || !pr->rec_addr[0])
        return 0;
    if (pr->rec_port)
        return 1;
    return !strcmp(pr->rec_addr, pr->nccl_addr) ? 2 : 0;
}

/*
 * Phase 1 of a step: every connection to peer j at once (NCCL's address and
 * the recommended interface: data, control, control from a fixed source
 * port), the handshakes, the round trips and the DF probes.  Nothing else
 * runs on the links of this pair meanwhile (every rank is in phase 1).
 */
static void test_peer_links(struct ncd_probe *p, int j,
                            struct ncd_probe_cell *c)
{
    const struct ncd_probe_rank *pr = &p->res.ranks[j];
    struct attempt at[2 * A_PER_PATH];
    memset(at, 0, sizeof at);
    int n = 0, nccl = 0, rec = rec_path(p, pr);
    c->nccl.port = pr->tcp_port;
    if (!pr->nccl_addr[0] || !pr->tcp_port) {
        c->nccl.status = NCD_PROBE_NO_ADDR;
        snprintf(c->nccl.detail, sizeof c->nccl.detail, "%s",
                 pr->nccl_addr[0] ? "the peer could not listen on it"
                                  : "NCCL finds no interface on the peer");
    } else if (!p->self.nccl_addr[0]) {
        c->nccl.status = NCD_PROBE_NO_ADDR;
        snprintf(c->nccl.detail, sizeof c->nccl.detail,
                 "NCCL finds no interface on this rank");
    } else {
        nccl = 1;
        const char *ifn = p->self.nccl_if;
        aim(&at[A_DATA], pr->nccl_addr, ifn, pr->tcp_port, PROBE_K_DATA, 0);
        aim(&at[A_CTL], pr->nccl_addr, ifn, pr->ctl_port, PROBE_K_CTL, 0);
        aim(&at[A_SRC], pr->nccl_addr, ifn, pr->ctl_port, PROBE_K_CTL, -1);
        n = A_PER_PATH;
    }
    if (rec == 1) {
        struct attempt *r = &at[n];
        const char *ifn = p->self.rec_if;
        aim(&r[A_DATA], pr->rec_addr, ifn, pr->rec_port, PROBE_K_REC, 0);
        aim(&r[A_CTL], pr->rec_addr, ifn, pr->rec_ctl_port, PROBE_K_REC_CTL, 0);
        aim(&r[A_SRC], pr->rec_addr, ifn, pr->rec_ctl_port, PROBE_K_REC_CTL, -1);
        n += A_PER_PATH;
    }
    /* a listener the peer does not have is not tried */
    struct attempt run[2 * A_PER_PATH];
    int idx[2 * A_PER_PATH], nr = 0;
    for (int i = 0; i < n; i++) {
        at[i].fd = -1;
        if (at[i].port > 0) {
            idx[nr] = i;
            run[nr++] = at[i];
        }
    }
    int rtt = -1;
    for (int k = 0; k < nr; k++)
        if (nccl && idx[k] == A_DATA)
            rtt = k;
    attempts_connect(p, j, run, nr, rtt, &c->rtt_us);
    for (int k = 0; k < nr; k++) {
        if (k != rtt)
            attempt_answer(p, j, &run[k]);
        attempt_close(&run[k]);
        at[idx[k]] = run[k];
    }
    if (nccl) {
        conn_from(&c->nccl, &at[0]);
        snprintf(c->src_addr, sizeof c->src_addr, "%s", at[A_DATA].src);
        if (c->nccl.status == NCD_PROBE_OK && pr->udp_port && p->o.mtu_probe)
            mtu_test(p, pr, c);
    }
    if (rec == 1)
        conn_from(&c->rec, &at[n - A_PER_PATH]);
}

/* One bandwidth burst on a fresh connection; 0 when it fails. */
static float burst_test(struct ncd_probe *p, int peer, const char *addr,
                        const char *ifname, int port, int kind, size_t burst)
{
    int err = 0;
    int fd = ncd_sock_connect_timeout(addr, ifname, port, p->o.timeout_ms,
                                      &err, NULL, 0);
    if (fd < 0)
        return 0;
    ncd_sock_set_timeouts(fd, p->o.timeout_ms);
    ncd_sock_nodelay(fd);
    struct attempt a = {.addr = addr, .port = port, .kind = kind, .fd = fd};
    attempt_hello(p, peer, &a, 1);
    attempt_answer(p, peer, &a);
    if (a.fd < 0)
        return 0;
    static char buf[262144];
    unsigned char rq[1 + sizeof(uint64_t)] = {'B'};
    uint64_t len = burst;
    memcpy(rq + 1, &len, sizeof len);
    double s0 = ncd__probe_now_us();
    err = ncd_sock_send_all(fd, rq, sizeof rq);
    size_t left = burst;
    while (!err && left) {
        size_t n = left < sizeof buf ? left : sizeof buf;
        err = ncd_sock_send_all(fd, buf, n);
        left -= n;
    }
    char op;
    if (!err)
        err = ncd_sock_recv_all(fd, &op, 1);
    double dt = ncd__probe_now_us() - s0;
    float bw = !err && dt > 0 ? (float)((double)burst / dt / 1e3) : 0;
    char q = 'Q';
    ncd_sock_send_all(fd, &q, 1);
    close(fd);
    return bw;
}

/* Phase 2 of a step: the bursts, on every path whose data port answered. */
static void test_peer_bandwidth(struct ncd_probe *p, int j,
                                struct ncd_probe_cell *c)
{
    const struct ncd_probe_rank *pr = &p->res.ranks[j];
    size_t b = p->o.burst_bytes;
    if (b && c->nccl.status == NCD_PROBE_OK)
        c->nccl.bw_gbps = burst_test(p, j, pr->nccl_addr, p->self.nccl_if,
                                     pr->tcp_port, PROBE_K_DATA, b);
    int rec = rec_path(p, pr);
    if (b && rec == 1 && c->rec.status == NCD_PROBE_OK)
        c->rec.bw_gbps = burst_test(p, j, pr->rec_addr, p->self.rec_if,
                                    pr->rec_port, PROBE_K_REC, b);
    if (rec == 2)
        c->rec = c->nccl;
}

static int barrier(ncd_probe_allgather_fn ag, void *ag_arg, int n)
{
    char b = 1, *all = malloc((size_t)n);
    if (!all)
        return NCD_ENOMEM;
    int rc = ag(ag_arg, &b, 1, all);
    free(all);
    return rc;
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
    if (ncd__probe_sanitize(r)) {
        int j = 0;
        while (j < n && r->ranks[j].rank == j)
            j++;
        rc = ncd_fail(ctx, NCD_EPROTO,
                      "rank %d's record says rank %d: ranks of different "
                      "builds or jobs",
                      j, j < n ? r->ranks[j].rank : -1);
        goto fail;
    }
    /* how this rank resolves every host name */
    ncd__probe_resolve_all(r, row, p->o.timeout_ms);
    for (int s = 1; s < n; s++) {
        int j = (p->rank + s) % n;
        test_peer_links(p, j, &row[j]);
        rc = barrier(ag, ag_arg, n);
        if (rc)
            goto fail;
        test_peer_bandwidth(p, j, &row[j]);
        rc = barrier(ag, ag_arg, n);
        if (rc)
            goto fail;
    }
    rc = ag(ag_arg, row, (size_t)n * sizeof *row, r->cells);
    if (rc)
        goto fail;
    free(row);
    row = NULL;
    ncd__probe_sanitize(r);
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
