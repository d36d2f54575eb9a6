/* SPDX-License-Identifier: MIT */
/*
 * What a collective's socket algorithms (the sock_ring / sock_direct
 * members of struct ncd__coll) build on: the engine of sock.c.
 *
 * An algorithm adds ops for this rank (sends to and receives from peers,
 * a receive that reduces into a buffer, a send that waits for a receive's
 * chunks), then runs them as one batch; every rank runs its batches in
 * the same order.  Ops return their index (>= 0), used as the dependency
 * of a later send, or NCD_ENOMEM.  Lengths are in bytes.  Internal.
 */
#ifndef NCD_PERF_SOCK_COLL_H
#define NCD_PERF_SOCK_COLL_H

#include <stddef.h>

#include "ncd/error.h"
#include "ncd/perf.h"

struct ncd__sock_rank;

/* One collective call on this rank. */
struct ncd__sock_args {
    const char *send; /* as nccl-tests passes it (in-place: aliased) */
    char *recv;
    size_t count;     /* the count column: per rank block or whole buffer */
    size_t es;        /* element size */
    int root;
    int rank, nranks; /* nranks > 1 */
    enum ncd_perf_dtype dt;
    enum ncd_perf_op op;
    const struct ncd_perf_counts *k; /* the counts (alltoallv's traffic) */
};

/* Sends len bytes of buf to peer; with dep >= 0, chunk j goes out only
 * once chunk j of receive op dep has arrived (and been reduced). */
int ncd__sock_send(struct ncd__sock_rank *R, int peer, const void *buf,
                   size_t len, int dep);
/* Receives len bytes from peer into dst. */
int ncd__sock_recv(struct ncd__sock_rank *R, int peer, void *dst, size_t len);
/* Receives len bytes from peer and writes dst = in OP src chunk by chunk
 * (scale_in / scale_src: apply the mulsum scalar to that side); with
 * `finish`, the AVG division (by nranks) follows. */
int ncd__sock_reduce(struct ncd__sock_rank *R, int peer, void *dst,
                     const void *src, size_t len, int scale_in, int scale_src,
                     int finish);
/* Receives len bytes from peer and accumulates dst OP= in (several
 * receives may accumulate into one buffer; chunks are locked). */
int ncd__sock_acc(struct ncd__sock_rank *R, int peer, void *dst, size_t len,
                  int scale_in);
/* Runs the ops added since the last batch.  0 or an NCD_E* code (the
 * detail names the peer: ncd__sock_rank_error()). */
int ncd__sock_run(struct ncd__sock_rank *R);
/* The rank's scratch buffer of at least len bytes (kept between calls,
 * counted in -M), or NULL after recording NCD_ENOMEM. */
char *ncd__sock_scratch(struct ncd__sock_rank *R, size_t len);
/* Records an out-of-memory failure; returns NCD_ENOMEM. */
int ncd__sock_nomem(struct ncd__sock_rank *R);

/* Shared direct algorithms (sock_algos.c): every rank sends each peer its
 * block of `send` and reduces the blocks it receives into dst
 * (reduce-scatter), or sends its block `mine` to every peer and receives
 * theirs into `recv` (all-gather).  Blocks are a->count elements each
 * when equal_blocks, else a->count elements cut in nranks segments. */
int ncd__sock_direct_rs(struct ncd__sock_rank *R,
                        const struct ncd__sock_args *a, const char *send,
                        char *dst, int equal_blocks);
int ncd__sock_direct_ag(struct ncd__sock_rank *R,
                        const struct ncd__sock_args *a, const char *mine,
                        int equal_blocks);

/* One-shot all-reduce for small sizes: every rank sends its whole input to
 * every peer and reduces what it receives into a->recv, one exchange
 * instead of the ring's 2(n-1) dependent steps (in-place inputs are sent
 * from a scratch copy). */
int ncd__sock_oneshot(struct ncd__sock_rank *R,
                      const struct ncd__sock_args *a);

/* Copies n bytes with the vectorised kernel (perf_int.h). */
void ncd__copy(void *dst, const void *src, size_t n);

static inline int ncd__mod(int a, int n)
{
    return ((a % n) + n) % n;
}

/* Segment i of `count` elements cut in n parts (the first count % n get
 * one element more): byte offset and length. */
static inline void ncd__seg(size_t count, int n, int i, size_t es,
                            size_t *off, size_t *len)
{
    size_t base = count / (size_t)n, rem = count % (size_t)n;
    size_t ui = (size_t)i;
    *off = (ui * base + (ui < rem ? ui : rem)) * es;
    *len = (base + (ui < rem ? 1 : 0)) * es;
}

/* Rank i's block: `count` elements each when the blocks are equal
 * (all_gather/reduce_scatter), else ncd__seg()'s split of count. */
static inline void ncd__block(size_t count, int n, int i, size_t es,
                              int equal_blocks, size_t *off, size_t *len)
{
    if (equal_blocks) {
        *off = (size_t)i * count * es;
        *len = count * es;
    } else {
        ncd__seg(count, n, i, es, off, len);
    }
}

/* Evaluates an op-adding call; on NCD_ENOMEM records it and returns. */
#define NCD__SOCK_CHK(R, x)                                                    \
    do {                                                                       \
        if ((x) < 0)                                                           \
            return ncd__sock_nomem(R);                                         \
    } while (0)

#endif
