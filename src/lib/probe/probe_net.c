/* SPDX-License-Identifier: MIT */
/*
 * probe: a rank's local facts, its listeners and the server thread that
 * answers the other ranks.  See include/ncd/probe.h for the flow; the
 * pair tests are in probe_pair.c.
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
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "ncd/error.h"
#include "ncd/fs.h"
#include "ncd/nccl.h"
#include "ncd/netif.h"
#include "ncd/node.h"
#include "ncd/probe.h"
#include "ncd/recommend.h"
#include "ncd/sock.h"
#include "ncd/sysops.h"

#include "probe/probe_int.h"

double ncd__probe_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

const char *ncd_probe_status_name(enum ncd_probe_status s)
{
    switch (s) {
    case NCD_PROBE_NOT_TRIED: return "not-tried";
    case NCD_PROBE_OK: return "ok";
    case NCD_PROBE_REFUSED: return "refused";
    case NCD_PROBE_TIMEOUT: return "timed-out";
    case NCD_PROBE_NO_ROUTE: return "no-route";
    case NCD_PROBE_RESET: return "reset";
    case NCD_PROBE_WRONG_PEER: return "wrong-peer";
    case NCD_PROBE_NO_ADDR: return "no-address";
    case NCD_PROBE_ERROR: return "error";
    }
    return "unknown";
}

int ncd_probe_status_badness(enum ncd_probe_status s)
{
    switch (s) {
    case NCD_PROBE_OK: return 0;
    case NCD_PROBE_NOT_TRIED: return -1;
    case NCD_PROBE_ERROR: return 1;
    case NCD_PROBE_RESET: return 2;
    case NCD_PROBE_WRONG_PEER: return 3;
    case NCD_PROBE_REFUSED: return 4;
    case NCD_PROBE_NO_ROUTE: return 5;
    case NCD_PROBE_NO_ADDR: return 6;
    case NCD_PROBE_TIMEOUT: return 7;
    }
    return 1;
}

void ncd_probe_opts_default(struct ncd_probe_opts *o)
{
    memset(o, 0, sizeof *o);
    o->timeout_ms = 2000;
    o->burst_bytes = 4u << 20;
    o->rtt_iters = 20;
    o->mtu_probe = 1;
}

/* ---- server ------------------------------------------------------------- */

static void serve_conn(struct ncd_probe *p, int fd, int kind)
{
    ncd_sock_set_timeouts(fd, p->o.timeout_ms);
    ncd_sock_nodelay(fd);
    unsigned char hb[sizeof(struct hello)];
    struct hello h;
    if (ncd_sock_recv_all(fd, hb, sizeof hb) ||
        ncd__probe_hello_decode(hb, sizeof hb, p->o.token, p->nranks,
                                p->rank, &h) ||
        h.kind != (uint32_t)kind)
        return; /* a stray connection: closed without an answer */
    struct hello a = {.magic = PROBE_MAGIC,
                      .kind = h.kind,
                      .token = p->o.token,
                      .src = p->rank,
                      .dst = h.src};
    if (ncd_sock_send_all(fd, &a, sizeof a))
        return;
    static char sink[65536];
    for (;;) {
        unsigned char rq[16];
        uint64_t len = 0;
        if (ncd_sock_recv_all(fd, rq, 1))
            return;
        size_t need = ncd__probe_request_size(rq[0]);
        if (need > 1 && ncd_sock_recv_all(fd, rq + 1, need - 1))
            return;
        int op = ncd__probe_request_decode(rq, need, &len);
        if (op == 'P') {
            if (ncd_sock_send_all(fd, rq, 1))
                return;
        } else if (op == 'B') {
            while (len) {
                size_t n = len < sizeof sink ? (size_t)len : sizeof sink;
                ssize_t r = recv(fd, sink, n, 0);
                if (r < 0 && errno == EINTR)
                    continue;
                if (r <= 0)
                    return;
                len -= (uint64_t)r;
            }
            char done = 'b';
            if (ncd_sock_send_all(fd, &done, 1))
                return;
        } else {
            return; /* 'Q' or garbage */
        }
    }
}

static void serve_udp(struct ncd_probe *p)
{
    static char buf[65536];
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    ssize_t r = recvfrom(p->udp_fd, buf, sizeof buf, MSG_DONTWAIT,
                         (struct sockaddr *)&ss, &sl);
    struct udp_hdr h;
    if (r < 0 || ncd__probe_udp_decode(buf, (size_t)r, p->o.token, &h))
        return;
    h.rank = p->rank;
    /* the answer is small: only the way out is tested at `size` */
    sendto(p->udp_fd, &h, sizeof h, MSG_DONTWAIT, (struct sockaddr *)&ss,
           sl);
}

static void *server_main(void *arg)
{
    struct ncd_probe *p = arg;
    for (;;) {
        struct pollfd pf[2 + PROBE_K_N];
        int kinds[2 + PROBE_K_N];
        int n = 0;
        pf[n++] = (struct pollfd){.fd = p->stop_pipe[0], .events = POLLIN};
        int lfds[PROBE_K_N] = {[PROBE_K_DATA] = p->tcp_fd,
                               [PROBE_K_CTL] = p->ctl_fd,
                               [PROBE_K_REC] = p->rec_fd,
                               [PROBE_K_REC_CTL] = p->rec_ctl_fd};
        for (int i = 0; i < PROBE_K_N; i++)
            if (lfds[i] >= 0) {
                kinds[n] = i;
                pf[n++] = (struct pollfd){.fd = lfds[i], .events = POLLIN};
            }
        if (p->udp_fd >= 0)
            pf[n++] = (struct pollfd){.fd = p->udp_fd, .events = POLLIN};
        if (poll(pf, (nfds_t)n, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (pf[0].revents)
            break;
        for (int i = 1; i < n; i++) {
            if (!(pf[i].revents & POLLIN))
                continue;
            if (pf[i].fd == p->udp_fd) {
                serve_udp(p);
                continue;
            }
            int c = accept4(pf[i].fd, NULL, NULL, SOCK_CLOEXEC);
            if (c < 0)
                continue;
            serve_conn(p, c, kinds[i]);
            close(c);
        }
    }
    return NULL;
}

/* ---- local facts -------------------------------------------------------- */

static void local_facts(struct ncd_ctx *ctx, struct ncd_probe *p)
{
    struct ncd_probe_rank *s = &p->self;
    char hn[256];
    ncd_sys_live_hostname(hn, sizeof hn);
    snprintf(s->host, sizeof s->host, "%s", hn);
    ncd_fs_read_str(ctx, "/proc/sys/kernel/random/boot_id", s->boot_id,
                    sizeof s->boot_id);
    char pr[64];
    if (ncd_fs_read_str(ctx, "/proc/sys/net/ipv4/ip_local_port_range", pr,
                        sizeof pr) == 0) {
        int lo = 0, hi = 0;
        if (sscanf(pr, "%d %d", &lo, &hi) == 2) {
            s->port_lo = lo;
            s->port_hi = hi;
        }
    }
    const char *ifn = ncd_getenv(ctx, "NCCL_SOCKET_IFNAME");
    if (ifn) {
        s->ifname_set = 1;
        snprintf(s->socket_ifname, sizeof s->socket_ifname, "%s", ifn);
    }
    s->nccl_version = p->o.nccl_version;
    snprintf(s->nccl_version_src, sizeof s->nccl_version_src, "%s",
             p->o.nccl_version_src ? p->o.nccl_version_src : "");

    /* the interfaces, NCCL's choice and the recommendation: the node
     * snapshot's NET part */
    struct ncd_node node;
    memset(&node, 0, sizeof node);
    if (ncd_node_probe_net(ctx, p->o.nccl_version, &node) == 0) {
        const struct ncd_netif_list *nl = &node.net.nl;
        const struct ncd_recommendation *rec = &node.net.rec;
        const struct ncd_nccl_choice *ch = &node.net.ch;
        if (ch->n_socket > 0) {
            snprintf(s->nccl_if, sizeof s->nccl_if, "%s", ch->socket[0]);
            snprintf(s->nccl_addr, sizeof s->nccl_addr, "%s",
                     ch->socket_addr[0]);
        }
        snprintf(s->nccl_pass, sizeof s->nccl_pass, "%s",
                 ch->pass == 0 && ch->ifname.set ? "NCCL_SOCKET_IFNAME"
                 : ch->pass_name                 ? ch->pass_name
                                                 : "");
        if (rec->best && rec->best->addr) {
            snprintf(s->rec_if, sizeof s->rec_if, "%s", rec->best->ni->name);
            snprintf(s->rec_addr, sizeof s->rec_addr, "%s",
                     rec->best->addr->addr);
            snprintf(s->rec_ifname, sizeof s->rec_ifname, "%s",
                     rec->socket_ifname);
            s->rec_mtu = rec->best->ni->mtu;
        }
        for (size_t i = 0; i < rec->n && s->n_addrs < 8; i++) {
            const struct ncd_if_rank *r = &rec->ranks[i];
            if (!r->usable || !r->addr)
                continue;
            snprintf(s->addrs[s->n_addrs++], sizeof s->addrs[0], "%s",
                     r->addr->addr);
        }
        if (s->nccl_if[0]) {
            const struct ncd_netif *ni = ncd_netif_find(nl, s->nccl_if);
            if (ni)
                s->mtu = ni->mtu;
        }
    }
    ncd_node_release(&node);
    ncd_ctx_clear_error(ctx);
    if (p->o.rdv_addr && *p->o.rdv_addr) {
        snprintf(s->rdv_addr, sizeof s->rdv_addr, "%s", p->o.rdv_addr);
        ncd_sock_iface_of(p->o.rdv_addr, s->rdv_if, sizeof s->rdv_if);
    }
}

/* A listener on addr on a port just outside the host's ephemeral range
 * (below it when there is room, else above): the control that tells a
 * filter of the range from a dead path.  -1 when none could be bound. */
static int listen_outside(const struct ncd_probe_rank *s, const char *addr,
                          const char *ifname, int32_t *port_out)
{
    for (int k = 0; k < 64; k++) {
        int cand = s->port_lo > 1100
                       ? s->port_lo - 1 - k * 7
                       : (s->port_hi ? s->port_hi : 60999) + 1 + k * 7;
        if (cand <= 1024 || cand > 65535)
            continue;
        int port;
        int fd = ncd_sock_listen(addr, ifname, cand, SOCK_STREAM, 64, &port);
        if (fd >= 0) {
            *port_out = port;
            return fd;
        }
    }
    return -1;
}

int ncd_probe_new(struct ncd_ctx *ctx, const struct ncd_probe_opts *o,
                  int rank, int nranks, struct ncd_probe **out)
{
    *out = NULL;
    int lrc = ncd_sys_require_live(ctx, "probe opens sockets");
    if (lrc < 0)
        return lrc;
    if (nranks < 1 || nranks > NCD_PROBE_MAX_RANKS || rank < 0 ||
        rank >= nranks)
        return ncd_fail(ctx, NCD_EINVAL, "rank %d of %d: out of range 1..%d",
                        rank, nranks, NCD_PROBE_MAX_RANKS);
    struct ncd_probe *p = calloc(1, sizeof *p);
    if (!p)
        return NCD_ENOMEM;
    p->o = *o;
    p->rank = rank;
    p->nranks = nranks;
    p->tcp_fd = p->ctl_fd = p->rec_fd = p->rec_ctl_fd = p->udp_fd = -1;
    p->stop_pipe[0] = p->stop_pipe[1] = -1;
    p->self.rank = rank;
    p->self.pid = (int32_t)getpid();
    local_facts(ctx, p);
    struct ncd_probe_rank *s = &p->self;
    int port;
    if (s->nccl_addr[0]) {
        p->tcp_fd = ncd_sock_listen(s->nccl_addr, s->nccl_if, 0, SOCK_STREAM,
                                    64, &port);
        if (p->tcp_fd < 0) {
            snprintf(s->listen_error, sizeof s->listen_error,
                     "cannot listen on %s (%s): %s", s->nccl_addr,
                     s->nccl_if, strerror(errno));
        } else {
            s->tcp_port = port;
            p->ctl_fd = listen_outside(s, s->nccl_addr, s->nccl_if,
                                       &s->ctl_port);
            if (o->mtu_probe) {
                p->udp_fd = ncd_sock_listen(s->nccl_addr, s->nccl_if, 0,
                                           SOCK_DGRAM, 0, &port);
                if (p->udp_fd >= 0)
                    s->udp_port = port;
            }
        }
    }
    if (s->rec_addr[0] && strcmp(s->rec_addr, s->nccl_addr) != 0) {
        p->rec_fd = ncd_sock_listen(s->rec_addr, s->rec_if, 0, SOCK_STREAM, 64,
                                   &port);
        if (p->rec_fd >= 0) {
            s->rec_port = port;
            p->rec_ctl_fd = listen_outside(s, s->rec_addr, s->rec_if,
                                           &s->rec_ctl_port);
        }
    }
    if (pipe2(p->stop_pipe, O_CLOEXEC) < 0 ||
        pthread_create(&p->thr, NULL, server_main, p) != 0) {
        int e = errno;
        ncd_probe_free(p);
        return ncd_fail(ctx, NCD_ESYS, "probe server thread: %s",
                        strerror(e));
    }
    p->thr_started = 1;
    *out = p;
    return 0;
}

const struct ncd_probe_rank *ncd_probe_self(const struct ncd_probe *p)
{
    return &p->self;
}

void ncd_probe_free(struct ncd_probe *p)
{
    if (!p)
        return;
    if (p->thr_started) {
        char c = 'q';
        if (write(p->stop_pipe[1], &c, 1) < 0) {
            /* the thread also ends when the pipe closes below */
        }
        pthread_join(p->thr, NULL);
    }
    int fds[7] = {p->tcp_fd,     p->ctl_fd,        p->rec_fd,
                  p->rec_ctl_fd, p->udp_fd,        p->stop_pipe[0],
                  p->stop_pipe[1]};
    for (int i = 0; i < 7; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    if (p->have_res) {
        free(p->res.ranks);
        free(p->res.cells);
        free(p->res.host_of);
        free(p->res.hosts);
    }
    free(p);
}

