/* SPDX-License-Identifier: MIT */
/*
 * probe: local facts, listeners, the server thread and the pair tests.
 * See include/ncd/probe.h for the flow.
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
#include "ncd/probe.h"
#include "ncd/recommend.h"

#define PROBE_MAGIC 0x4e434450u /* "NCDP" */

/* TCP hello (client -> server) and its answer. */
struct hello {
    uint32_t magic;
    uint32_t kind; /* 0 data port, 1 control port, 2 recommended iface */
    uint64_t token;
    int32_t src;
    int32_t dst;
};

/* UDP datagram header (both ways). */
struct udp_hdr {
    uint32_t magic;
    uint32_t seq;
    uint64_t token;
    int32_t size;  /* packet size the sender meant, bytes */
    int32_t rank;  /* answering rank */
};

struct ncd_probe {
    struct ncd_probe_opts o;
    struct ncd_probe_rank self;
    int rank, nranks;
    int tcp_fd, ctl_fd, rec_fd, udp_fd;
    int family; /* of nccl_addr */
    int stop_pipe[2];
    pthread_t thr;
    int thr_started;
    struct ncd_probe_result res;
    int have_res;
};

static double now_us(void)
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

/* ---- addresses ---------------------------------------------------------- */

/* Fills a sockaddr for a numeric address; link-local IPv6 gets the scope of
 * `ifname`.  Returns the length or 0 when not an address. */
static socklen_t make_sa(const char *addr, const char *ifname, int port,
                         struct sockaddr_storage *ss)
{
    memset(ss, 0, sizeof *ss);
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

static void sa_str(const struct sockaddr *sa, char *out, size_t len)
{
    out[0] = 0;
    if (sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, out,
                  (socklen_t)len);
    else if (sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr,
                  out, (socklen_t)len);
}

void ncd_probe_iface_of(const char *addr, char *ifname, size_t iflen)
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
        sa_str(i->ifa_addr, s, sizeof s);
        if (strcmp(s, addr) == 0) {
            snprintf(ifname, iflen, "%s", i->ifa_name);
            break;
        }
    }
    freeifaddrs(ifa);
}

int ncd_probe_route_to(const char *host, int port, char *ifname, size_t iflen,
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
            sa_str((struct sockaddr *)&ss, addr, addrlen);
            ncd_probe_iface_of(addr, ifname, iflen);
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

/* ---- socket helpers ----------------------------------------------------- */

static void set_timeouts(int fd, int ms)
{
    struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

/* Full write/read; 0 ok, else errno (EAGAIN = timeout, EPIPE/0-read = EOF
 * reported as ECONNRESET). */
static int write_all(int fd, const void *buf, size_t n)
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

static int read_all(int fd, void *buf, size_t n)
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

static int listen_on(const char *addr, const char *ifname, int port,
                     int type, int *out_port)
{
    struct sockaddr_storage ss;
    socklen_t sl = make_sa(addr, ifname, port, &ss);
    if (!sl) {
        errno = EINVAL;
        return -1;
    }
    int fd = socket(ss.ss_family, type | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (bind(fd, (struct sockaddr *)&ss, sl) < 0 ||
        (type == SOCK_STREAM && listen(fd, 64) < 0)) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    sl = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    *out_port = ntohs(ss.ss_family == AF_INET
                          ? ((struct sockaddr_in *)&ss)->sin_port
                          : ((struct sockaddr_in6 *)&ss)->sin6_port);
    return fd;
}

/* ---- server ------------------------------------------------------------- */

static void serve_conn(struct ncd_probe *p, int fd)
{
    set_timeouts(fd, p->o.timeout_ms);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct hello h;
    if (read_all(fd, &h, sizeof h) || h.magic != PROBE_MAGIC ||
        h.token != p->o.token)
        return; /* a stray connection: closed without an answer */
    struct hello a = {.magic = PROBE_MAGIC,
                      .kind = h.kind,
                      .token = p->o.token,
                      .src = p->rank,
                      .dst = h.src};
    if (write_all(fd, &a, sizeof a))
        return;
    static char sink[65536];
    for (;;) {
        char op;
        if (read_all(fd, &op, 1))
            return;
        if (op == 'P') {
            if (write_all(fd, &op, 1))
                return;
        } else if (op == 'B') {
            uint64_t len;
            if (read_all(fd, &len, sizeof len))
                return;
            while (len) {
                size_t n = len < sizeof sink ? (size_t)len : sizeof sink;
                ssize_t r = recv(fd, sink, n, 0);
                if (r < 0 && errno == EINTR)
                    continue;
                if (r <= 0)
                    return;
                len -= (uint64_t)r;
            }
            op = 'b';
            if (write_all(fd, &op, 1))
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
    if (r < (ssize_t)sizeof(struct udp_hdr))
        return;
    struct udp_hdr h;
    memcpy(&h, buf, sizeof h);
    if (h.magic != PROBE_MAGIC || h.token != p->o.token)
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
        struct pollfd pf[5];
        int n = 0;
        pf[n++] = (struct pollfd){.fd = p->stop_pipe[0], .events = POLLIN};
        int lfds[3] = {p->tcp_fd, p->ctl_fd, p->rec_fd};
        for (int i = 0; i < 3; i++)
            if (lfds[i] >= 0)
                pf[n++] = (struct pollfd){.fd = lfds[i], .events = POLLIN};
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
            serve_conn(p, c);
            close(c);
        }
    }
    return NULL;
}

/* ---- local facts -------------------------------------------------------- */

static void local_facts(struct ncd_ctx *ctx, struct ncd_probe *p)
{
    struct ncd_probe_rank *s = &p->self;
    char hn[256] = "";
    gethostname(hn, sizeof hn - 1);
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

    struct ncd_netif_list nl = {0};
    struct ncd_recommendation rec = {0};
    struct ncd_nccl_choice ch;
    memset(&ch, 0, sizeof ch);
    if (ncd_netif_probe(ctx, &nl) == 0) {
        if (ncd_nccl_select(ctx, &nl, p->o.nccl_version, &ch) == 0 &&
            ch.n_socket > 0) {
            snprintf(s->nccl_if, sizeof s->nccl_if, "%s", ch.socket[0]);
            snprintf(s->nccl_addr, sizeof s->nccl_addr, "%s",
                     ch.socket_addr[0]);
        }
        snprintf(s->nccl_pass, sizeof s->nccl_pass, "%s",
                 ch.pass == 0 && ch.ifname.set ? "NCCL_SOCKET_IFNAME"
                 : ch.pass_name                ? ch.pass_name
                                               : "");
        if (ncd_recommend(ctx, &nl, &rec) == 0 && rec.best &&
            rec.best->addr) {
            snprintf(s->rec_if, sizeof s->rec_if, "%s", rec.best->ni->name);
            snprintf(s->rec_addr, sizeof s->rec_addr, "%s",
                     rec.best->addr->addr);
            snprintf(s->rec_ifname, sizeof s->rec_ifname, "%s",
                     rec.socket_ifname);
            s->rec_mtu = rec.best->ni->mtu;
        }
        for (size_t i = 0; i < rec.n && s->n_addrs < 8; i++) {
            const struct ncd_if_rank *r = &rec.ranks[i];
            if (!r->usable || !r->addr)
                continue;
            snprintf(s->addrs[s->n_addrs++], sizeof s->addrs[0], "%s",
                     r->addr->addr);
        }
        if (s->nccl_if[0]) {
            const struct ncd_netif *ni = ncd_netif_find(&nl, s->nccl_if);
            if (ni)
                s->mtu = ni->mtu;
        }
    }
    ncd_recommendation_release(&rec);
    ncd_netif_list_release(&nl);
    if (p->o.rdv_addr && *p->o.rdv_addr) {
        snprintf(s->rdv_addr, sizeof s->rdv_addr, "%s", p->o.rdv_addr);
        ncd_probe_iface_of(p->o.rdv_addr, s->rdv_if, sizeof s->rdv_if);
    }
}

int ncd_probe_new(struct ncd_ctx *ctx, const struct ncd_probe_opts *o,
                  int rank, int nranks, struct ncd_probe **out)
{
    *out = NULL;
    if (!ncd_ctx_is_live(ctx))
        return ncd_fail(ctx, NCD_ENOTLIVE,
                        "probe opens sockets: it cannot run on a recorded "
                        "sysroot");
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
    p->tcp_fd = p->ctl_fd = p->rec_fd = p->udp_fd = -1;
    p->stop_pipe[0] = p->stop_pipe[1] = -1;
    p->self.rank = rank;
    p->self.pid = (int32_t)getpid();
    local_facts(ctx, p);
    struct ncd_probe_rank *s = &p->self;
    int port;
    if (s->nccl_addr[0]) {
        p->tcp_fd = listen_on(s->nccl_addr, s->nccl_if, 0, SOCK_STREAM,
                              &port);
        if (p->tcp_fd < 0) {
            snprintf(s->listen_error, sizeof s->listen_error,
                     "cannot listen on %s (%s): %s", s->nccl_addr,
                     s->nccl_if, strerror(errno));
        } else {
            s->tcp_port = port;
            /* control: a port just outside the ephemeral range */
            for (int k = 0; k < 64 && p->ctl_fd < 0; k++) {
                int cand = s->port_lo > 1100 ? s->port_lo - 1 - k * 7
                                             : (s->port_hi ? s->port_hi
                                                           : 60999) +
                                                   1 + k * 7;
                if (cand <= 1024 || cand > 65535)
                    continue;
                p->ctl_fd = listen_on(s->nccl_addr, s->nccl_if, cand,
                                      SOCK_STREAM, &port);
                if (p->ctl_fd >= 0)
                    s->ctl_port = port;
            }
            if (o->mtu_probe) {
                p->udp_fd = listen_on(s->nccl_addr, s->nccl_if, 0,
                                      SOCK_DGRAM, &port);
                if (p->udp_fd >= 0)
                    s->udp_port = port;
            }
        }
    }
    if (s->rec_addr[0] && strcmp(s->rec_addr, s->nccl_addr) != 0) {
        p->rec_fd = listen_on(s->rec_addr, s->rec_if, 0, SOCK_STREAM, &port);
        if (p->rec_fd >= 0)
            s->rec_port = port;
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
    int fds[6] = {p->tcp_fd, p->ctl_fd, p->rec_fd, p->udp_fd, p->stop_pipe[0],
                  p->stop_pipe[1]};
    for (int i = 0; i < 6; i++)
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

/* Connects with a timeout; returns the fd, or -1 with *err set. */
static int connect_to(const char *addr, const char *ifname, int port,
                      int timeout_ms, int *err, char *src, size_t srclen)
{
    struct sockaddr_storage ss;
    socklen_t sl = make_sa(addr, ifname, port, &ss);
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
    int rc = connect(fd, (struct sockaddr *)&ss, sl);
    if (rc < 0 && errno != EINPROGRESS) {
        *err = errno;
        close(fd);
        return -1;
    }
    if (rc < 0) {
        struct pollfd pf = {.fd = fd, .events = POLLOUT};
        double end = now_us() + timeout_ms * 1000.0;
        for (;;) {
            int left = (int)((end - now_us()) / 1000.0);
            if (left < 0)
                left = 0;
            int pr = poll(&pf, 1, left);
            if (pr < 0 && errno == EINTR)
                continue;
            if (pr == 0) {
                *err = ETIMEDOUT;
                close(fd);
                return -1;
            }
            break;
        }
        int so = 0;
        socklen_t l = sizeof so;
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &l);
        if (so) {
            *err = so;
            close(fd);
            return -1;
        }
    }
    int fl = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    struct sockaddr_storage ls;
    socklen_t ll = sizeof ls;
    if (src && getsockname(fd, (struct sockaddr *)&ls, &ll) == 0)
        sa_str((struct sockaddr *)&ls, src, srclen);
    *err = 0;
    return fd;
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
    double t0 = now_us();
    int fd = connect_to(addr, ifname, port, p->o.timeout_ms, &err, t->src,
                        sizeof t->src);
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
    t->connect_us = (float)(now_us() - t0);
    set_timeouts(fd, p->o.timeout_ms);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct hello h = {.magic = PROBE_MAGIC,
                      .kind = (uint32_t)kind,
                      .token = p->o.token,
                      .src = p->rank,
                      .dst = peer},
                 a;
    err = write_all(fd, &h, sizeof h);
    if (!err)
        err = read_all(fd, &a, sizeof a);
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
            double s0 = now_us();
            if (write_all(fd, &op, 1) || read_all(fd, &op, 1))
                break;
            v[ok++] = (float)(now_us() - s0);
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
        double s0 = now_us();
        err = write_all(fd, &op, 1);
        if (!err)
            err = write_all(fd, &len, sizeof len);
        size_t left = burst;
        while (!err && left) {
            size_t n = left < sizeof buf ? left : sizeof buf;
            err = write_all(fd, buf, n);
            left -= n;
        }
        if (!err)
            err = read_all(fd, &op, 1);
        double dt = now_us() - s0;
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
    write_all(fd, &q, 1);
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
    socklen_t sl = make_sa(peer->nccl_addr, p->self.nccl_if, peer->udp_port,
                           &ss);
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
            double end = now_us() + 250e3;
            for (;;) {
                int left = (int)((end - now_us()) / 1000.0);
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

/* First address of a getaddrinfo() answer, IPv4 first (as most launchers'
 * and NCCL's own lookups prefer). */
static void first_addr(const struct addrinfo *ai, char *out, size_t outlen)
{
    out[0] = 0;
    for (int pass = 0; pass < 2 && !out[0]; pass++)
        for (const struct addrinfo *a = ai; a; a = a->ai_next)
            if ((pass == 0) == (a->ai_family == AF_INET)) {
                sa_str(a->ai_addr, out, outlen);
                break;
            }
}

/*
 * Name resolution with a deadline: a dead DNS server must not stall the
 * probe.  A worker thread resolves the distinct names one after the other
 * into a job it shares with the caller (reference counted); at the deadline
 * the caller takes what is done and leaves; the last one out frees the job.
 */
struct rjob {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs, n, done;
    char (*names)[64];
    char (*addr)[48];
    char (*err)[48];
};

static void rjob_put(struct rjob *j)
{
    pthread_mutex_lock(&j->mu);
    int last = --j->refs == 0;
    pthread_mutex_unlock(&j->mu);
    if (!last)
        return;
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    free(j->names);
    free(j->addr);
    free(j->err);
    free(j);
}

static void *resolver_main(void *arg)
{
    struct rjob *j = arg;
    for (int i = 0; i < j->n; i++) {
        char a[48] = "", e[48] = "";
        struct addrinfo hints = {.ai_family = AF_UNSPEC,
                                 .ai_socktype = SOCK_STREAM};
        struct addrinfo *ai = NULL;
        int g = getaddrinfo(j->names[i], NULL, &hints, &ai);
        if (g)
            snprintf(e, sizeof e, "%s", gai_strerror(g));
        else
            first_addr(ai, a, sizeof a);
        if (ai)
            freeaddrinfo(ai);
        pthread_mutex_lock(&j->mu);
        memcpy(j->addr[i], a, sizeof a);
        memcpy(j->err[i], e, sizeof e);
        j->done = i + 1;
        pthread_cond_broadcast(&j->cv);
        pthread_mutex_unlock(&j->mu);
    }
    rjob_put(j);
    return NULL;
}

/* Resolves every rank's host name as this rank sees it (row[j].resolved,
 * or row[j].resolve_err), within timeout_ms in all. */
static void resolve_all(struct ncd_probe_result *r, struct ncd_probe_cell *row,
                        int timeout_ms)
{
    int n = r->nranks;
    struct rjob *j = calloc(1, sizeof *j);
    int *of = calloc((size_t)n, sizeof *of);
    if (j) {
        j->names = calloc((size_t)n, sizeof *j->names);
        j->addr = calloc((size_t)n, sizeof *j->addr);
        j->err = calloc((size_t)n, sizeof *j->err);
    }
    if (!j || !of || !j->names || !j->addr || !j->err) {
        if (j) {
            free(j->names);
            free(j->addr);
            free(j->err);
        }
        free(j);
        free(of);
        for (int k = 0; k < n; k++)
            snprintf(row[k].resolve_err, sizeof row[k].resolve_err,
                     "out of memory");
        return;
    }
    for (int k = 0; k < n; k++) {
        int m;
        for (m = 0; m < j->n; m++)
            if (!strcmp(j->names[m], r->ranks[k].host))
                break;
        if (m == j->n)
            snprintf(j->names[j->n++], sizeof j->names[0], "%s",
                     r->ranks[k].host);
        of[k] = m;
    }
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    j->refs = 2;
    pthread_t t;
    if (pthread_create(&t, NULL, resolver_main, j) != 0) {
        j->refs = 1;
        rjob_put(j);
        free(of);
        for (int k = 0; k < n; k++)
            snprintf(row[k].resolve_err, sizeof row[k].resolve_err,
                     "cannot start the resolver");
        return;
    }
    pthread_detach(t);
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += timeout_ms / 1000;
    dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (dl.tv_nsec >= 1000000000L) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&j->mu);
    while (j->done < j->n)
        if (pthread_cond_timedwait(&j->cv, &j->mu, &dl) != 0)
            break;
    for (int k = 0; k < n; k++) {
        int m = of[k];
        if (m < j->done) {
            memcpy(row[k].resolved, j->addr[m], sizeof row[k].resolved);
            memcpy(row[k].resolve_err, j->err[m], sizeof row[k].resolve_err);
        } else {
            snprintf(row[k].resolve_err, sizeof row[k].resolve_err,
                     "no answer within %d ms", timeout_ms);
        }
    }
    pthread_mutex_unlock(&j->mu);
    rjob_put(j);
    free(of);
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
    resolve_all(r, row, p->o.timeout_ms);
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
