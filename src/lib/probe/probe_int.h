/* SPDX-License-Identifier: MIT */
/* Internals shared by the probe's files (src/lib/probe/). */
#ifndef NCD_PROBE_INT_H
#define NCD_PROBE_INT_H

#include <pthread.h>
#include <stdint.h>

#include "ncd/probe.h"

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

/* Monotonic clock in µs. */
double ncd__probe_now_us(void);

/* Resolves every rank's host name as this rank sees it (row[j].resolved,
 * or row[j].resolve_err), within timeout_ms in all (probe_resolve.c). */
void ncd__probe_resolve_all(struct ncd_probe_result *r,
                            struct ncd_probe_cell *row, int timeout_ms);

#endif
