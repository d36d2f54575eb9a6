/* SPDX-License-Identifier: MIT */
/* The socket backend's collective engine (internal). */
#ifndef NCD_PERF_SOCK_INT_H
#define NCD_PERF_SOCK_INT_H

#include <stdatomic.h>

#include "ncd/perf.h"

struct ncd__sock_rank;

/*
 * Creates the engine of one rank over an established peerset (not owned).
 * nthreads: threads driving the sockets (>= 1; NCCL_SOCKET_NTHREADS, 0
 * counted as 1).  timeout_ms: longest time without progress.  abort_flag:
 * the process's abort flag, checked while waiting.
 */
int ncd__sock_rank_new(struct ncd_peerset *ps, int rank, int nranks,
                       int nthreads, int timeout_ms, atomic_int *abort_flag,
                       struct ncd__sock_rank **out);
void ncd__sock_rank_free(struct ncd__sock_rank *R);
/* The first error of this rank ("" if none). */
const char *ncd__sock_rank_error(const struct ncd__sock_rank *R);
/* Bytes of staging buffers and the largest scratch buffer used so far. */
uint64_t ncd__sock_mem(const struct ncd__sock_rank *R);

/* Frees the scratch buffer (reduce_scatter, scatter, in-place alltoall). */
void ncd__sock_release_scratch(struct ncd__sock_rank *R);

/*
 * Runs one collective synchronously.  send/recv as nccl-tests passes them
 * (in-place: aliased at the documented offsets); k from ncd_perf_counts().
 * Returns 0 or an NCD_E* code (detail in ncd__sock_rank_error()).
 */
int ncd__sock_coll(struct ncd__sock_rank *R, enum ncd_perf_coll coll,
                   enum ncd_perf_dtype dt, enum ncd_perf_op op, int root,
                   const void *send, void *recv,
                   const struct ncd_perf_counts *k, enum ncd_perf_algo algo);

#endif
