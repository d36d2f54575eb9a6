/* SPDX-License-Identifier: MIT */
/**
 * @file sock.h
 * @brief Socket helpers shared by the process group (pg.h), perf's rank
 *        mesh (perf.h) and probe (probe.h): deadline I/O, connect and
 *        accept with a deadline, listening sockets, numeric address
 *        strings, "host:port" parsing, and which local interface routes
 *        to a host.
 *
 * Two I/O styles, both here so every caller uses the same code:
 *  - non-blocking sockets driven by poll() against an absolute deadline
 *    (ncd_sock_io(), ncd_sock_accept(), ncd_sock_connect_retry()): the
 *    process group and the rank mesh, where a whole exchange has a
 *    deadline and a shared abort flag must stop it;
 *  - blocking sockets with a per-call timeout (ncd_sock_set_timeouts(),
 *    ncd_sock_send_all(), ncd_sock_recv_all()): probe's pair tests, where
 *    each round trip or burst chunk has the timeout.
 *
 * Deadlines are absolute times in seconds on ncd_sock_now()'s clock
 * (CLOCK_MONOTONIC).  Addresses are numeric strings ("10.0.0.1",
 * "fe80::1%eth0" for a scoped link-local address); IPv6 addresses with a
 * port are written "[addr]:port".  Functions that take a ctx put the
 * detail of a failure there (error.h); the others return -1 with errno,
 * or an errno value, as each says.  Nothing here prints.
 */
#ifndef NCD_SOCK_H
#define NCD_SOCK_H

#include <stdatomic.h>
#include <stddef.h>
#include <sys/socket.h>

#include "ncd/ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Seconds on CLOCK_MONOTONIC: the clock of every deadline here. */
double ncd_sock_now(void);

/**
 * Milliseconds left until `deadline` (ncd_sock_now() seconds), rounded up
 * so that a positive remainder never reads as 0; 0 when it has passed.
 */
int ncd_sock_remaining_ms(double deadline);

/** Sets O_NONBLOCK.  @return 0, or -1 with errno. */
int ncd_sock_set_nonblock(int fd);

/** Sets TCP_NODELAY (small control messages are latency-bound). */
void ncd_sock_nodelay(int fd);

/**
 * Reads (is_write 0) or writes exactly `len` bytes on a non-blocking
 * socket before `deadline`.  `abort_flag` (may be NULL) is checked every
 * 100 ms while waiting: a non-zero value stops the transfer.
 * @param err  receives the errno behind a failure (0 for EOF or timeout).
 * @return 0; NCD_ETIMEOUT; NCD_EPEER for EOF, ECONNRESET, EPIPE or an
 *         abort; NCD_ESYS for any other socket error.
 */
int ncd_sock_io(int fd, void *buf, size_t len, int is_write, double deadline,
                const atomic_int *abort_flag, int *err);

/**
 * Splits "host:port" or "[v6addr]:port" (port 1..65535, decimal).  The
 * host may be a name.  @return 0, or NCD_EINVAL (no port, port out of
 * range, host longer than hostlen - 1).
 */
int ncd_sock_split_hostport(const char *s, char *host, size_t hostlen,
                            int *port);

/**
 * Numeric address of an AF_INET/AF_INET6 sockaddr into `out` ("?" for
 * another family); its port into *port when `port` is not NULL.
 */
void ncd_sock_addr_str(const struct sockaddr *sa, char *out, size_t len,
                       int *port);

/** "addr:port", or "[addr]:port" when addr contains ':' (IPv6). */
void ncd_sock_hostport_str(const char *addr, int port, char *out,
                           size_t len);

/**
 * Fills a sockaddr for a numeric IPv4 or IPv6 address and a port.  A
 * link-local IPv6 address gets the scope of its "%ifname" suffix, else of
 * `ifname` (may be NULL).
 * @return the sockaddr's length, or 0 when `addr` is not a numeric address.
 */
socklen_t ncd_sock_make_addr(const char *addr, const char *ifname, int port,
                             struct sockaddr_storage *ss);

/**
 * Resolves a host name or numeric address and a port (getaddrinfo, first
 * answer; AI_ADDRCONFIG first, then without it).
 * @return 0, or NCD_EUNREACH with the resolver's message in ctx.
 */
int ncd_sock_resolve(struct ncd_ctx *ctx, const char *host, int port,
                     struct sockaddr_storage *ss, socklen_t *sl);

/**
 * A socket bound to numeric `addr` ("" or NULL: every IPv4 address) and
 * `port` (0: an ephemeral port the kernel draws), of `type` SOCK_STREAM
 * (then listening with `backlog`) or SOCK_DGRAM; close-on-exec.
 * @param out_port  receives the bound port (may be NULL).
 * @return the fd, or -1 with errno (EINVAL when addr is not numeric).
 */
int ncd_sock_listen(const char *addr, const char *ifname, int port, int type,
                    int backlog, int *out_port);

/**
 * A port that was free on the wildcard address of `host`'s family (IPv6
 * when `host` is an IPv6 literal, else IPv4) a moment ago: bound to port 0
 * and closed.  Another process may take it before the caller binds it.
 * @return the port, or -1 with errno.
 */
int ncd_sock_free_port(const char *host);

/**
 * One TCP connection attempt to numeric `addr`:`port` with a timeout; the
 * returned socket is blocking again.  `src` (may be NULL) receives the
 * local address the kernel chose.
 * @param err  receives the errno of a failure (ETIMEDOUT when the timeout
 *             passed, EINVAL for a non-numeric address), 0 on success.
 * @return the fd, or -1.
 */
int ncd_sock_connect_timeout(const char *addr, const char *ifname, int port,
                             int timeout_ms, int *err, char *src,
                             size_t srclen);

/** ncd_sock_connect_retry() flags. */
enum {
    /** Retry only what NCCL's sockets retry (ECONNREFUSED, ETIMEDOUT: NCCL
     *  src/misc/socket.cc socketPollConnect, 2.24+) and fail at once on any
     *  other error ("No route to host", "Network is unreachable"). */
    NCD_SOCK_RETRY_NCCL = 1,
};

/**
 * Starts a non-blocking TCP connection to numeric `addr`:`port` (several
 * can then be waited for at once with poll(POLLOUT)).  With `src_port` > 0
 * the socket is first bound to that local port (any address,
 * SO_REUSEADDR) instead of one the kernel draws from
 * net.ipv4.ip_local_port_range.
 * @param err  receives the errno of a failure (EADDRINUSE when src_port is
 *             taken, EINVAL for a non-numeric address), 0 otherwise.
 * @return the fd (connection in progress or made), or -1.
 */
int ncd_sock_connect_start(const char *addr, const char *ifname, int port,
                           int src_port, int *err);

/**
 * Ends what ncd_sock_connect_start() began once poll() reported the fd
 * writable (or the wait ended): the socket is blocking again on success.
 * @return 0, or the errno of the failed connection (the fd stays open:
 *         the caller closes it).
 */
int ncd_sock_connect_finish(int fd);

/**
 * Connects to `host`:`port` (a name or a numeric address), retrying every
 * 100 ms while the peer is not listening yet, until `deadline`.  The
 * socket is non-blocking, close-on-exec, with TCP_NODELAY.
 * @param what   words for the peer in the message ("rendezvous root").
 * @param flags  0, or NCD_SOCK_RETRY_NCCL.
 * @return the fd, or NCD_ECONNREFUSED / NCD_ETIMEOUT / NCD_EUNREACH /
 *         NCD_ESYS with a detail naming host:port, the last error and the
 *         number of attempts.
 */
int ncd_sock_connect_retry(struct ncd_ctx *ctx, const char *host, int port,
                           double deadline, const char *what, unsigned flags);

/**
 * Accepts one connection on listening socket `lfd` before `deadline`;
 * `abort_flag` (may be NULL) is checked every 100 ms.  The socket is
 * non-blocking, close-on-exec, with TCP_NODELAY.
 * @param peer  receives "addr:port" of the peer.
 * @param what  words for what is awaited ("peers to connect").
 * @return the fd, or NCD_ETIMEOUT / NCD_EPEER (aborted) with a detail.
 */
int ncd_sock_accept(struct ncd_ctx *ctx, int lfd, double deadline,
                    const atomic_int *abort_flag, char *peer, size_t peerlen,
                    const char *what);

/* ---- Accepting a job's members among strangers -------------------------- */

/** Rejected and silent connections remembered for messages. */
#define NCD_HELLO_NOTED 4

/** What ncd_sock_accept_hellos() dropped. */
struct ncd_hello_stats {
    int silent;   /**< connections that sent no whole hello before their
                       deadline, or closed first */
    int rejected; /**< whole hellos the caller refused */
    char silent_from[NCD_HELLO_NOTED][64];   /**< "addr:port" of the first */
    char rejected_from[NCD_HELLO_NOTED][64];
    char rejected_why[NCD_HELLO_NOTED][128]; /**< the caller's reason */
};

/**
 * Judges one whole hello read from `fd` (non-blocking) coming from
 * `peer` ("addr:port").
 * @return 1: accepted, the callee keeps `fd`; 0: refused, `why` says why
 *         (it may write an answer on `fd` first), fd is then closed; a
 *         negative NCD_E*: the wait ends with that code (detail in ctx).
 */
typedef int (*ncd_hello_fn)(void *arg, int fd, const void *hello,
                            const char *peer, char *why, size_t whylen);

/**
 * Accepts connections on listening socket `lfd` until `need` hellos of
 * `hello_len` bytes (<= 256) were accepted by `fn`.  The hellos of all
 * pending connections are read at once (one poll()), each connection
 * within `hello_ms` of its accept (and before `deadline`): a connection
 * that is silent, too slow (slowloris) or closes early is dropped and
 * counted, so strangers never delay the members.  At most 256 connections
 * wait at once (the oldest is dropped for a new one).  `abort_flag` (may
 * be NULL) stops the wait.  `st` (zeroed by the caller) counts what was
 * dropped; ncd_hello_stats_text() words it.
 * @return 0; NCD_ETIMEOUT at `deadline` (detail names `what`); NCD_EPEER
 *         when aborted; NCD_ESYS; NCD_ENOMEM; or `fn`'s negative code.
 */
int ncd_sock_accept_hellos(struct ncd_ctx *ctx, int lfd, size_t hello_len,
                           int need, double deadline, int hello_ms,
                           const atomic_int *abort_flag, ncd_hello_fn fn,
                           void *arg, struct ncd_hello_stats *st,
                           const char *what);

/**
 * "10 connections sent no hello within 2.0 s (from a:p, ...); 1
 * connection rejected (a:p: wrong job token)", or "" when nothing was
 * dropped.
 */
void ncd_hello_stats_text(const struct ncd_hello_stats *st, int hello_ms,
                          char *out, size_t len);

/** SO_RCVTIMEO and SO_SNDTIMEO of `ms` on a blocking socket. */
void ncd_sock_set_timeouts(int fd, int ms);

/**
 * Sends all `n` bytes on a blocking socket (MSG_NOSIGNAL).
 * @return 0, or the errno of the failure (EAGAIN when the socket's send
 *         timeout passed).
 */
int ncd_sock_send_all(int fd, const void *buf, size_t n);

/**
 * Receives exactly `n` bytes on a blocking socket.
 * @return 0, or the errno of the failure: EAGAIN when the socket's receive
 *         timeout passed, ENODATA when the peer closed the connection.
 */
int ncd_sock_recv_all(int fd, void *buf, size_t n);

/**
 * Which local interface and address the kernel would use to reach
 * `host`:`port` (a UDP connect: nothing is sent).
 * @return 0 with ifname/addr filled, or NCD_ENOENT (the name does not
 *         resolve) / NCD_EUNREACH (no route) with `why` filled.
 */
int ncd_sock_route_to(const char *host, int port, char *ifname, size_t iflen,
                      char *addr, size_t addrlen, char *why, size_t whylen);

/** Interface holding the local address `addr` ("" when none). */
void ncd_sock_iface_of(const char *addr, char *ifname, size_t iflen);

#ifdef __cplusplus
}
#endif
#endif
