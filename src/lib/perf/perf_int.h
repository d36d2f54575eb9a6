/* SPDX-License-Identifier: MIT */
/* Internal helpers of the perf library (not installed). */
#ifndef NCD_PERF_INT_H
#define NCD_PERF_INT_H

#include <stddef.h>
#include <stdint.h>

#include "ncd/perf.h"

/* IEEE half / bfloat16 <-> float, round to nearest even. */
uint16_t ncd__f32_to_half(float f);
float ncd__half_to_f32(uint16_t h);
uint16_t ncd__f32_to_bf16(float f);
float ncd__bf16_to_f32(uint16_t b);

/* Copies n bytes with the vectorised kernel (large copies). */
void ncd__copy(void *dst, const void *src, size_t n);

/* ---- the rank mesh's hello (mesh.c) ------------------------------------
 * Sent once by the connecting (higher) rank on each of its nsocks
 * connections to a lower rank; raw struct between ranks of one build. */
#define NCD_PEER_MAGIC 0x4e434453u /* "NCDS" */
#define NCD_PEER_PROTO_VERSION 1u

struct ncd__peer_hello {
    uint32_t magic, version;
    uint64_t token;
    uint32_t from, to, sock, nsocks;
};

/*
 * Accepting side (rank `rank`): buf holds what a connection sent first
 * (len < sizeof: nothing).  NULL, *from and *sock when it is rank from's
 * connection number sock (rank < from < nranks, sock < nsocks) of this job
 * (token) and fds[from * nsocks + sock] is not taken yet; else why not.
 */
const char *ncd__peer_hello_check(const void *buf, size_t len, uint64_t token,
                                  int rank, int nranks, int nsocks,
                                  const int *fds, int *from, int *sock);

#endif
