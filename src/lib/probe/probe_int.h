/* SPDX-License-Identifier: MIT */
/* Internals shared by the probe's files (src/lib/probe/): the wire format
 * between ranks and its decoders (each takes a buffer, so the fuzz target
 * tests/fuzz/fuzz_wire.c drives them without sockets). */
#ifndef NCD_PROBE_INT_H
#define NCD_PROBE_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "ncd/probe.h"

#define PROBE_MAGIC 0x4e434450u /* "NCDP" */

/* Which listener a TCP hello is for (struct hello.kind). */
enum probe_kind {
    PROBE_K_DATA = 0,    /* NCCL's address, ephemeral port */
    PROBE_K_CTL = 1,     /* NCCL's address, control port */
    PROBE_K_REC = 2,     /* recommended interface, ephemeral port */
    PROBE_K_REC_CTL = 3, /* recommended interface, control port */
    PROBE_K_N
};

/* TCP hello (client -> server) and its answer (server -> client), sent as
 * bytes between ranks of one build. */
struct hello {
    uint32_t magic;
    uint32_t kind; /* enum probe_kind */
    uint64_t token;
    int32_t src;
    int32_t dst;
};

/* After the hello the client sends requests: 'P' (one byte back), 'B'
 * followed by a uint64_t length and that many bytes ('b' back when all
 * arrived), 'Q' (end).  Bytes of each request, 0 for an unknown one. */
size_t ncd__probe_request_size(int op);

/* UDP datagram header (both ways). */
struct udp_hdr {
    uint32_t magic;
    uint32_t seq;
    uint64_t token;
    int32_t size;  /* packet size the sender meant, bytes */
    int32_t rank;  /* answering rank */
};

/*
 * Server side: buf holds the first sizeof(struct hello) bytes of a
 * connection.  0 and *out when it is the hello of rank src of this job
 * (token) to rank `self` for a known kind; -1 for anything else (a stray
 * connection, answered by nothing).
 */
int ncd__probe_hello_decode(const void *buf, size_t len, uint64_t token,
                            int nranks, int self, struct hello *out);

/*
 * Client side: buf holds the answer to our hello of `kind` sent to rank
 * `peer`.  NCD_PROBE_OK, or NCD_PROBE_WRONG_PEER with the reason in detail
 * (another program, another job, another rank answered).
 */
enum ncd_probe_status ncd__probe_answer_decode(const void *buf, size_t len,
                                               uint64_t token, int peer,
                                               int kind, char *detail,
                                               size_t dlen);

/*
 * A request: buf holds ncd__probe_request_size(buf[0]) bytes.  Returns the
 * op ('P', 'B', 'Q') with *burst set for 'B', or 0 for garbage (unknown op,
 * a burst longer than NCD_PROBE_MAX_BURST).
 */
int ncd__probe_request_decode(const void *buf, size_t len, uint64_t *burst);

/* A UDP datagram of this job (token): 0 and *out, or -1. */
int ncd__probe_udp_decode(const void *buf, size_t len, uint64_t token,
                          struct udp_hdr *out);

/*
 * Makes the rank records and cells received from the other ranks safe to
 * use: strings terminated, statuses and counts in range, non-finite or
 * negative measures zeroed.  Returns -1 (and changes nothing else) when
 * record j does not say rank j.
 */
int ncd__probe_sanitize(struct ncd_probe_result *r);

/* The connection tests of a cell on the judged path: the recommended
 * interface's when use_rec and it was tried, else NCCL's. */
const struct ncd_probe_conn *ncd__probe_path(const struct ncd_probe_cell *c,
                                             int use_rec);

/*
 * Whether the findings judge the recommended interface instead of NCCL's:
 * NCCL's address is dead for some pairs of different hosts where the
 * recommended one carries traffic, and alive nowhere it is not.  `common`
 * receives the NCCL_SOCKET_IFNAME value every host recommends ("" when they
 * differ).  Pure (probe_reach.c).
 */
int ncd__probe_use_rec(const struct ncd_probe_result *r, char *common,
                       size_t len);

/* The reachability findings, one per cause (probe_reach.c).  0 or
 * NCD_ENOMEM. */
int ncd__probe_reach_findings(const struct ncd_probe_result *r, int use_rec,
                              const char *common, struct ncd_findings *out);

struct ncd_probe {
    struct ncd_probe_opts o;
    struct ncd_probe_rank self;
    int rank, nranks;
    int tcp_fd, ctl_fd, rec_fd, rec_ctl_fd, udp_fd;
    int family; /* of nccl_addr */
    int stop_pipe[2];
    pthread_t thr;
    int thr_started;
    struct ncd_probe_result res;
    int have_res;
};

/* Monotonic clock in µs. */
double ncd__probe_now_us(void);

/* Resolves every rank's host name as this rank sees it (row[j].resolved,
 * or row[j].resolve_err), within timeout_ms in all (probe_resolve.c). */
void ncd__probe_resolve_all(struct ncd_probe_result *r,
                            struct ncd_probe_cell *row, int timeout_ms);

#endif
