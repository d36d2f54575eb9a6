/* SPDX-License-Identifier: MIT */
/**
 * @file probe.h
 * @brief `nccl-doctor probe`: can every rank reach every rank on the
 *        address NCCL would use, how fast, and do the hosts agree?
 *
 * Flow (every rank runs it, in lock step with the others):
 *  1. ncd_probe_new(): local facts (host name, boot id, NCCL's predicted
 *     interface and address, the interface nccl-doctor recommends, the NCCL
 *     version, NCCL_SOCKET_IFNAME, the interface MTU, the ephemeral port
 *     range) and the listeners: a TCP socket on NCCL's address with a port
 *     from the kernel's ephemeral range (as NCCL's own listeners get), a
 *     second TCP socket on a port outside that range (the control that
 *     tells a port filter from a dead path), a UDP echo socket for the
 *     don't-fragment probes, and the same two TCP sockets on the
 *     recommended interface when it differs from NCCL's.  A server thread
 *     answers them, one connection at a time.
 *  2. ncd_probe_run(): allgather of the rank records, name resolution of
 *     every host name on every rank, then n-1 steps; in step s rank r tests
 *     rank (r+s) mod n, so each rank sends to one peer and receives from
 *     one peer at a time.  A step has two phases separated by barriers:
 *     first the connections (on NCCL's address and on the recommended
 *     interface: the listener in the ephemeral range, the control listener
 *     outside it, and the control listener again from a source port
 *     outside this host's range, all at once with one timeout), the
 *     identity handshakes, the round trips and the DF-marked UDP datagrams
 *     of increasing size; then the bandwidth bursts.  No round trip is
 *     timed while a burst fills a link.  Finally an allgather of the result
 *     rows: every rank holds the whole matrix.
 *  3. ncd_probe_analyze(): findings (pure function of the result, so unit
 *     tests drive it with made-up results); ncd_probe_json() and
 *     ncd_probe_render_text() render it.
 *
 * The communication between ranks is a caller-supplied allgather (the CLI
 * uses the job's process group, pg.h and job.h), so this layer does not
 * depend on how the job was launched.
 *
 * Units: times in µs, bandwidth in GB/s (1e9 B/s), sizes in bytes, MTU as
 * the IP packet size in bytes (what `ip link` shows).
 */
#ifndef NCD_PROBE_H
#define NCD_PROBE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "ncd/ctx.h"
#include "ncd/finding.h"
#include "ncd/report.h"
#include "ncd/strbuf.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Most ranks a probe handles (the result matrix is nranks^2 cells). */
#define NCD_PROBE_MAX_RANKS 512

/** Largest bandwidth burst a rank sends or accepts, bytes. */
#define NCD_PROBE_MAX_BURST (1ull << 30)

/** How a connection attempt ended.  ncd_probe_status_name() = JSON text. */
enum ncd_probe_status {
    NCD_PROBE_NOT_TRIED = 0, /**< "not-tried": self, or the run stopped */
    NCD_PROBE_OK,            /**< "ok" */
    NCD_PROBE_REFUSED,       /**< "refused": RST to the SYN (ECONNREFUSED) */
    NCD_PROBE_TIMEOUT,       /**< "timed-out": no answer within the timeout
                                  (a firewall that drops, a black hole) */
    NCD_PROBE_NO_ROUTE,      /**< "no-route": ENETUNREACH / EHOSTUNREACH */
    NCD_PROBE_RESET,         /**< "reset": accepted, then reset or closed */
    NCD_PROBE_WRONG_PEER,    /**< "wrong-peer": another process answered */
    NCD_PROBE_NO_ADDR,       /**< "no-address": the peer has no address
                                  for this path (NCCL finds no interface) */
    NCD_PROBE_ERROR,         /**< "error": any other local failure */
};

/** Static JSON/text name of a status ("timed-out"...). */
const char *ncd_probe_status_name(enum ncd_probe_status s);

/** Severity order used to merge cells (larger = worse); OK is 0. */
int ncd_probe_status_badness(enum ncd_probe_status s);

/**
 * What every rank publishes (fixed size, sent as bytes between ranks of
 * the same build; all strings NUL-terminated).
 */
struct ncd_probe_rank {
    int32_t rank;
    int32_t pid;
    char host[64];        /**< gethostname(), full */
    char boot_id[40];     /**< /proc/sys/kernel/random/boot_id, "" unknown */
    char nccl_if[24];     /**< NCCL's predicted Socket interface ("" none) */
    char nccl_addr[64];   /**< its address (what peers connect to) */
    char nccl_pass[64];   /**< how NCCL chose it ("user list", "ib"...) */
    char rec_if[24];      /**< the interface nccl-doctor recommends */
    char rec_addr[64];
    char rec_ifname[24];  /**< NCCL_SOCKET_IFNAME value to select rec_if */
    char socket_ifname[64]; /**< NCCL_SOCKET_IFNAME as set ("" unset) */
    int32_t ifname_set;   /**< 1 when NCCL_SOCKET_IFNAME is set */
    int32_t nccl_version; /**< code (22803), 0 unknown */
    char nccl_version_src[48]; /**< "libnccl.so.2", "--nccl-version"... */
    int32_t mtu;          /**< MTU of nccl_if, 0 unknown */
    int32_t rec_mtu;      /**< MTU of rec_if, 0 unknown */
    int32_t port_lo, port_hi; /**< net.ipv4.ip_local_port_range, 0 unknown */
    int32_t tcp_port;     /**< listener on nccl_addr, ephemeral range */
    int32_t ctl_port;     /**< listener on nccl_addr outside it, 0 none */
    int32_t udp_port;     /**< UDP echo on nccl_addr, 0 none */
    int32_t rec_port;     /**< listener on rec_addr, 0 when rec = nccl */
    int32_t rec_ctl_port; /**< control listener on rec_addr, 0 none */
    int32_t n_addrs;
    char addrs[8][48];    /**< this host's routable addresses */
    char rdv_addr[64];    /**< local address of the rendezvous connection */
    char rdv_if[24];      /**< its interface */
    char listen_error[128]; /**< why nccl_addr could not be listened on */
};

/**
 * The connection tests of one ordered pair on one path (NCCL's address, or
 * the recommended interface's).  Three listeners on the peer's address
 * tell the causes apart: the data port is in the peer's ephemeral range
 * (where NCCL's listeners are), the control port is outside it, and the
 * control port is tried a second time from a source port outside this
 * host's ephemeral range.  Data fails, control answers: a filter of the
 * peer's ephemeral ports.  Both fail and the fixed source port answers: a
 * firewall on this host drops the replies to its own connections (a
 * stateless rule on its ephemeral range).  All fail: the path.
 */
struct ncd_probe_conn {
    int32_t status;       /**< enum ncd_probe_status: the data port */
    int32_t err;          /**< errno behind status, 0 none */
    int32_t ctl_status;   /**< the control port, NOT_TRIED when none */
    int32_t src_status;   /**< the control port from a source port outside
                               this host's ephemeral range; NOT_TRIED when
                               no such port could be bound */
    int32_t port;         /**< data port tried on the peer */
    float connect_us;     /**< TCP connect time to the data port, µs */
    float bw_gbps;        /**< burst bandwidth, GB/s (0 when not run) */
    char detail[96];      /**< words for the data port's failure */
};

/** One ordered pair (row rank -> column rank). */
struct ncd_probe_cell {
    struct ncd_probe_conn nccl; /**< on the address NCCL would use */
    struct ncd_probe_conn rec;  /**< on the recommended interface: a copy
                                     of `nccl` when the peer recommends
                                     NCCL's own address; NOT_TRIED between
                                     ranks of one host and when the peer
                                     recommends nothing */
    float rtt_us;         /**< median round trip of 8-byte messages on
                               NCCL's address, µs (no burst running) */
    int32_t mtu_ok;       /**< largest DF packet echoed, bytes; 0 none */
    int32_t mtu_lost;     /**< smallest DF packet lost, bytes; 0 none */
    int32_t mtu_local;    /**< largest size the local stack let out */
    char src_addr[48];    /**< local address the kernel used */
    char resolved[48];    /**< the peer's host name as this rank resolves
                               it (first address), "" when it does not */
    char resolve_err[48]; /**< gai_strerror() when it does not resolve */
};

/** The whole probe, as held by every rank after ncd_probe_run(). */
struct ncd_probe_result {
    int nranks;
    struct ncd_probe_rank *ranks;  /**< nranks records, rank order */
    struct ncd_probe_cell *cells;  /**< nranks*nranks, [from*nranks+to] */
    int nhosts;
    int *host_of;                  /**< rank -> host index (order of first
                                        appearance in rank order) */
    char (*hosts)[64];             /**< host names */
    int timeout_ms;                /**< per connection attempt */
    size_t burst_bytes;
};

/** Options of a probe. */
struct ncd_probe_opts {
    int timeout_ms;        /**< per connect / handshake step (default 2000) */
    size_t burst_bytes;    /**< bandwidth burst (default 4 MiB; 0 = none) */
    int rtt_iters;         /**< round trips per pair (default 20) */
    int mtu_probe;         /**< 1: DF-marked UDP probes (default 1) */
    int nccl_version;      /**< version whose selection to predict; 0 =
                                newest */
    const char *nccl_version_src; /**< where that version came from */
    uint64_t token;        /**< job token (the same on every rank) */
    const char *rdv_addr;  /**< local address of the rendezvous link */
};

/** Fills the defaults above (token 0). */
void ncd_probe_opts_default(struct ncd_probe_opts *o);

/**
 * The exchange the probe runs on: every rank contributes `len` bytes (the
 * same on every rank) and receives nranks*len bytes in rank order.  0 on
 * success, a negative NCD_E* code (with the detail in the caller's ctx,
 * e.g. which rank died) otherwise.
 */
typedef int (*ncd_probe_allgather_fn)(void *arg, const void *mine,
                                      size_t len, void *all);

/** A rank's probe state (listeners, server thread). */
struct ncd_probe;

/**
 * Gathers this rank's facts and opens its listeners (starting the server
 * thread).  Live contexts only (it opens sockets); the interface facts go
 * through ctx's sysroot and environment.
 * @return 0 and *out (free with ncd_probe_free()), or NCD_ENOTLIVE,
 *         NCD_ENOMEM, NCD_ESYS (detail in ctx).  Not finding an interface
 *         for NCCL is not an error: it is recorded and reported.
 */
int ncd_probe_new(struct ncd_ctx *ctx, const struct ncd_probe_opts *o,
                  int rank, int nranks, struct ncd_probe **out);

/** This rank's record (owned by p). */
const struct ncd_probe_rank *ncd_probe_self(const struct ncd_probe *p);

/**
 * Runs the exchange and the pair tests (see the flow above).  Every rank
 * must call it.  Takes about (nranks-1) x (a few round trips + the burst)
 * when all is well, plus timeout_ms per unreachable pair and step.
 * @return 0 and the result (owned by p, valid until ncd_probe_free()), or
 *         the exchange's error (a rank died: the detail names it).
 */
int ncd_probe_run(struct ncd_ctx *ctx, struct ncd_probe *p,
                  ncd_probe_allgather_fn ag, void *ag_arg,
                  const struct ncd_probe_result **res);

/** Stops the server thread, closes the sockets, frees.  NULL allowed. */
void ncd_probe_free(struct ncd_probe *p);

/**
 * Builds the host tables (nhosts, host_of, hosts) of a result whose
 * nranks/ranks/cells are set (used by ncd_probe_run() and by tests).
 * @return 0 or NCD_ENOMEM.  Freed by ncd_probe_result_release().
 */
int ncd_probe_result_index(struct ncd_probe_result *r);

/** Frees what ncd_probe_result_index() allocated plus ranks and cells
 *  (only for results built by the caller, not for ncd_probe_run()'s). */
void ncd_probe_result_release(struct ncd_probe_result *r);

/**
 * Merged status of host `a` -> host `b`: the worst over their rank pairs
 * (for a == b, the pairs of distinct ranks on that host; NOT_TRIED when
 * there is only one).
 */
enum ncd_probe_status ncd_probe_host_status(const struct ncd_probe_result *r,
                                            int a, int b);

/**
 * Findings from a result, one per cause (not per pair: 64 hosts with one
 * bad host give one finding naming it).  Each failed pair is classified by
 * its three connection tests (struct ncd_probe_conn), then the host x host
 * matrix is explained by as few causes as fit:
 *  - net.iface-choice.unreachable: NCCL's address is dead for some pairs
 *    where the recommended interface carries traffic (and alive nowhere
 *    the recommended one is not): set NCCL_SOCKET_IFNAME to it.  Every
 *    finding below is then about that interface, so a second fault on it
 *    (a firewall) is reported too;
 *  - net.unreachable.port-filtered: a firewall blocks the ephemeral ports
 *    of a host (or of hosts that behave alike, e.g. a rack, from the hosts
 *    outside it) while its control port answers; "without tracking
 *    connections" when it also drops the answers to the host's own
 *    connections; net.unreachable.return-filtered when only that;
 *  - net.iface-choice.duplicate-address: another process answers;
 *  - net.unreachable.all / .host / .group / .pair / .asymmetric: dead
 *    paths: nothing works at all (3+ hosts), a host no one reaches or that
 *    reaches no one (3+ hosts), a group of hosts cut off from the others,
 *    and what is left per host pair (16 at most, the rest summed up);
 *  - net.unreachable.mtu: DF probes that show an MTU mismatch;
 *  - net.ifname.*: NCCL_SOCKET_IFNAME matches nothing on a host, or
 *    differs between hosts;
 *  - net.hostname.*: a host name that resolves differently on different
 *    hosts, to loopback, to an address the host does not have, or not at
 *    all; duplicate host names on different machines;
 *  - version.mismatch: different NCCL versions across ranks;
 *  - perf.config.slow-pair: a host pair more than 3x slower than the
 *    median burst bandwidth in both directions;
 *  - net.unreachable.none (ok) when every pair connects.
 * Pure: the same result gives the same findings.  The list is sorted worst
 * first.  @return 0 or NCD_ENOMEM.
 */
int ncd_probe_analyze(const struct ncd_probe_result *r,
                      struct ncd_findings *out);

/**
 * JSON of the result: {"ranks":[...],"hosts":[...],"matrix":{"hosts":[...],
 * "cells":[[{"status","rtt_us","bw_gbps",...}|null]]},"rank_matrix":[[...]]}
 * (the caller adds it to the envelope).  New reference; NULL on ENOMEM.
 */
json_t *ncd_probe_json(const struct ncd_probe_result *r);

/** Text report: rank table, host x host matrix, latency/bandwidth. */
void ncd_probe_render_text(struct ncd_strbuf *out,
                           const struct ncd_probe_result *r,
                           const struct ncd_text_style *st);

#ifdef __cplusplus
}
#endif
#endif
