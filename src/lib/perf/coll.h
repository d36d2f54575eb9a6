/* SPDX-License-Identifier: MIT */
/*
 * A collective is one row: everything nccl-doctor knows about it, as
 * nccl-tests' struct testColl (src/common.h, v2.19.6) holds a collective's
 * byte counts, data and bandwidth functions and its NCCL call.
 *
 * How to add a collective: write src/lib/perf/coll/<name>.c defining
 * `const struct ncd__coll ncd__coll_<name>` (copy broadcast.c: a rooted
 * collective, or all_gather.c: a per-rank block one).  That is the only
 * file: CMake lists src/lib/perf/coll/ into gen/ncd_colls.def, which makes
 * the enum NCD_COLL_<NAME> (include/ncd/perf.h), the table below, and the
 * `<name>_perf` link; the unit tests (tests/unit/test_coll.c) then check
 * the row's counts, bandwidth and data against its own declarations.
 * Internal.
 */
#ifndef NCD_PERF_COLL_H
#define NCD_PERF_COLL_H

#include <stddef.h>

#include "ncd/perf.h"

struct ncd__sock_rank;
struct ncd__sock_args;
struct ncd__nccl_call;

/* What the redop column shows (nccl-tests src/<coll>.cu). */
enum ncd__redop_col {
    NCD__REDOP_OP,    /* the op's name; the sweep loops over -o (sendrecv
                         too: nccl-tests passes the op and ignores it) */
    NCD__REDOP_NONE,  /* "none" */
    NCD__REDOP_EMPTY, /* "" (hypercube) */
};

/* Below this many bytes sent per rank, --algo auto takes a row's
 * sock_small: on loopback one exchange costs ~10-20 us, so the ring's
 * 2(n-1) dependent steps dominate up to tens of KiB. */
#define NCD__SOCK_SMALL_MAX (64u << 10)

struct ncd__coll {
    const char *name;  /* "all_reduce": the binary is <name>_perf */
    const char *alias; /* another accepted spelling ("all_to_all"), NULL */
    int reduces;       /* applies the reduction op (all_reduce, reduce,
                          reduce_scatter) */
    enum ncd__redop_col redop_col;
    int has_root;      /* root column and -r (broadcast, reduce...) */
    int needs_pow2;    /* a power-of-two number of ranks (hypercube) */
    int root_result;   /* only the root's result is defined and checked */
    int inplace_unchecked; /* nccl-tests does not check in-place (N/A) */

    /* nccl-tests' GetCollByteCount: fills send/recv/param counts and the
     * in-place offsets of `out` for `count` = bytes / esize elements on n
     * ranks, rank r; base = (count / n) rounded down to 16 bytes.
     * out->traffic is set on entry (alltoallv's matrix), bytes is 0: a
     * row may set it (the largest rank's max(send, recv) x esize), else
     * max(sendcount, recvcount) x esize is used. */
    void (*counts)(size_t count, size_t base, size_t n, size_t r,
                   size_t esize, struct ncd_perf_counts *out);
    /* Whether the run fits a job of nranks ranks beyond the generic rules
     * (ncd_perf_validate()): 0, or nccl-tests' status with its message in
     * why (alltoallv's traffic matrix against nranks, -b and -e).  NULL:
     * always fits. */
    int (*validate)(const struct ncd_perf_opts *o, int nranks, char *why,
                    size_t whylen);
    /* Bus bandwidth factor (doc/PERFORMANCE.md; GetBw). */
    double (*busbw_factor)(int nranks);
    /* Bytes algbw divides by the time; NULL = the size column (k->bytes).
     * hypercube: paramcount * esize * (n - 1). */
    double (*algbw_bytes)(const struct ncd_perf_counts *k, size_t esize,
                          int nranks);
    /* Where rank c->rank's result elements [e0, e0 + *len) come from:
     * rank *from's input elements from *src0 on, or (*from = -1) the
     * reduction over every rank's input from *src0 on.  May shorten *len
     * to stay within one source block. */
    void (*expect)(const struct ncd_perf_check *c, size_t e0, size_t *len,
                   int *from, size_t *src0);

    /* socket backend (nranks > 1): the ring and the direct algorithm
     * (direct may be NULL: the ring one serves both); which one --algo
     * auto takes */
    int (*sock_ring)(struct ncd__sock_rank *R,
                     const struct ncd__sock_args *a);
    int (*sock_direct)(struct ncd__sock_rank *R,
                       const struct ncd__sock_args *a);
    int ring_by_default;
    /* --algo auto below NCD__SOCK_SMALL_MAX bytes sent per rank ((nranks
     * - 1) x the buffer): a latency-bound algorithm (one exchange), or
     * NULL */
    int (*sock_small)(struct ncd__sock_rank *R,
                      const struct ncd__sock_args *a);
    /* forwards through a scratch buffer as large as its send buffer
     * (ncd__sock_scratch(): reduce_scatter, scatter, in-place alltoall) */
    int sock_scratch;

    /* nccl backend: the NCCL calls of one operation (ncclResult_t; < 0
     * after a failure the call reported itself) */
    int (*nccl)(const struct ncd__nccl_call *c);
};

/* The row of a collective (NULL for a value out of range). */
const struct ncd__coll *ncd__coll(enum ncd_perf_coll c);

/* Helpers for rows ---------------------------------------------------- */

/* busbw factors of doc/PERFORMANCE.md */
double ncd__busbw_1(int nranks);          /* broadcast, reduce... */
double ncd__busbw_n1_n(int nranks);       /* (n - 1) / n */
double ncd__busbw_2n1_n(int nranks);      /* 2 (n - 1) / n */

/* counts: every rank passes and receives `count` (all_reduce...) */
void ncd__counts_whole(size_t count, size_t base, size_t n, size_t r,
                       size_t esize, struct ncd_perf_counts *out);
/* counts: each rank sends `base`, receives n blocks (all_gather...) */
void ncd__counts_gather(size_t count, size_t base, size_t n, size_t r,
                        size_t esize, struct ncd_perf_counts *out);
/* counts: each rank sends n blocks, receives `base` (reduce_scatter...) */
void ncd__counts_scatter(size_t count, size_t base, size_t n, size_t r,
                         size_t esize, struct ncd_perf_counts *out);

/* expect: result element e is rank (e / base)'s element e % base (the
 * gathers); stays within one block */
void ncd__expect_gathered(const struct ncd_perf_check *c, size_t e0,
                          size_t *len, int *from, size_t *src0);
/* expect: the reduction over all ranks of element e (all_reduce, reduce) */
void ncd__expect_reduced(const struct ncd_perf_check *c, size_t e0,
                         size_t *len, int *from, size_t *src0);

#endif
