/* SPDX-License-Identifier: MIT */
/**
 * @file perf.h
 * @brief nccl-tests compatible collective benchmarks (`nccl-doctor perf`).
 *
 * Four layers, each usable on its own:
 *
 *  1. The collective table: names, datatypes, reduction ops, the count and
 *     byte derivation of every nccl-tests binary and its bus-bandwidth
 *     factor (NVIDIA/nccl-tests v2.19.6 src/<coll>.cu *GetCollByteCount and
 *     *GetBw; doc/PERFORMANCE.md), the size sweep (src/common.cu), and the
 *     deterministic data pattern plus its checker.
 *  2. The formatter: preamble, device lines, table header, rows, footer and
 *     the -J JSON document as pure functions of the results, byte for byte
 *     the format strings of nccl-tests src/util.cu (v2.19.6).
 *  3. The rank-to-rank connection mesh (struct ncd_peerset): a validated
 *     full mesh of TCP connections between ranks, set up over the job's
 *     process group (pg.h; the job runner, job.h, makes the group).
 *  4. The benchmark runner and its two backends: `socket` (host buffers,
 *     TCP between ranks, ring and direct algorithms) and `nccl`
 *     (libnccl.so.2 and libcudart.so through dlopen).
 *
 * Units everywhere: sizes in bytes, counts in elements, times in
 * microseconds (µs) unless a name says _s (seconds) or _ms, bandwidths in
 * GB/s with 1 GB = 1e9 bytes.  The library never prints and never exits;
 * text is returned in strbufs and rows are handed to a callback.
 */
#ifndef NCD_PERF_H
#define NCD_PERF_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "ncd/pg.h"
#include "ncd/strbuf.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ncd_ctx;

/* ------------------------------------------------------------------ */
/* 1. Collectives, datatypes, ops                                      */
/* ------------------------------------------------------------------ */

/**
 * The collectives of nccl-tests (one binary each, `<name>_perf`):
 * NCD_COLL_ALL_GATHER, NCD_COLL_ALL_REDUCE, NCD_COLL_ALLTOALL,
 * NCD_COLL_ALLTOALLV, NCD_COLL_BROADCAST, NCD_COLL_GATHER, NCD_COLL_HYPERCUBE,
 * NCD_COLL_REDUCE, NCD_COLL_REDUCE_SCATTER, NCD_COLL_SCATTER,
 * NCD_COLL_SENDRECV.  One row per collective (src/lib/perf/coll/<name>.c,
 * see src/lib/perf/coll.h); the build lists the rows in ncd_colls.def
 * (NCD_COLL(name, NAME), alphabetical), so a new row file adds its value.
 */
enum ncd_perf_coll {
#define NCD_COLL(name, NAME) NCD_COLL_##NAME,
#include "ncd_colls.def"
#undef NCD_COLL
    NCD_COLL__COUNT
};

/** Datatypes; the numbers are ncclDataType_t's (NCCL src/nccl.h.in). */
enum ncd_perf_dtype {
    NCD_DT_INT8 = 0,
    NCD_DT_UINT8 = 1,
    NCD_DT_INT32 = 2,
    NCD_DT_UINT32 = 3,
    NCD_DT_INT64 = 4,
    NCD_DT_UINT64 = 5,
    NCD_DT_HALF = 6,
    NCD_DT_FLOAT = 7,
    NCD_DT_DOUBLE = 8,
    NCD_DT_BFLOAT16 = 9,
    NCD_DT_F8E4M3 = 10,
    NCD_DT_F8E5M2 = 11,
    NCD_DT__COUNT
};

/**
 * Reduction ops; SUM..AVG are ncclRedOp_t's numbers.  MULSUM is nccl-tests'
 * "mulsum" (ncclRedOpCreatePreMulSum): every input is multiplied by a
 * scalar before the sum; nccl-doctor uses the scalar NCD_PERF_MULSUM_SCALAR.
 */
enum ncd_perf_op {
    NCD_OP_SUM = 0,
    NCD_OP_PROD = 1,
    NCD_OP_MAX = 2,
    NCD_OP_MIN = 3,
    NCD_OP_AVG = 4,
    NCD_OP_MULSUM = 5,
    NCD_OP__COUNT
};

/** Scalar of the mulsum op (a power of two, so results stay exact). */
#define NCD_PERF_MULSUM_SCALAR 2

/** "all_reduce" ... (static string); NULL for an unknown value. */
const char *ncd_perf_coll_name(enum ncd_perf_coll c);
/** nccl-tests' binary name "all_reduce_perf" ... (static); NULL if unknown. */
const char *ncd_perf_coll_prog(enum ncd_perf_coll c);
/** Appends every collective's name, separated by spaces, in enum order. */
void ncd_perf_coll_list(struct ncd_strbuf *sb);

/**
 * Parses a collective name: "all_reduce", "allreduce", "all_reduce_perf"
 * (a path is allowed: the basename is used), case-insensitive.
 * @return the collective, or -1 when unknown.
 */
int ncd_perf_coll_from_name(const char *s);

/** nccl-tests' type name ("float", "bfloat16"...), static; NULL if unknown. */
const char *ncd_perf_dtype_name(enum ncd_perf_dtype t);
/** Element size in bytes (0 for an unknown type). */
size_t ncd_perf_dtype_size(enum ncd_perf_dtype t);
/** Parses a type name as nccl-tests does (also "fp16", "fp32"...); -1. */
int ncd_perf_dtype_from_name(const char *s);
/** 1 for half, float, double, bfloat16 and the fp8 types. */
int ncd_perf_dtype_is_float(enum ncd_perf_dtype t);

/** nccl-tests' op name ("sum", "mulsum"...), static; NULL if unknown. */
const char *ncd_perf_op_name(enum ncd_perf_op o);
/** Parses an op name; -1 when unknown. */
int ncd_perf_op_from_name(const char *s);

/** 1 when the collective applies the reduction op (all_reduce, reduce,
 *  reduce_scatter). */
int ncd_perf_coll_has_op(enum ncd_perf_coll c);
/** 1 when the collective has a root (broadcast, reduce, gather, scatter). */
int ncd_perf_coll_has_root(enum ncd_perf_coll c);
/** 1 when the collective needs a power-of-two number of ranks (hypercube:
 *  nccl-tests src/hypercube.cu exchanges with rank ^ 2^k). */
int ncd_perf_coll_needs_pow2(enum ncd_perf_coll c);
/** 1 when the redop column shows the op, so -o all runs one row per op
 *  (the reductions and sendrecv, which nccl-tests passes the op to). */
int ncd_perf_coll_loops_ops(enum ncd_perf_coll c);
/** 0 when nccl-tests does not check the in-place result (sendrecv: its
 *  #wrong is N/A). */
int ncd_perf_coll_checks_inplace(enum ncd_perf_coll c);
/**
 * The text of the redop column: the op name for reductions and sendrecv,
 * "none" for all_gather/broadcast/alltoall/gather/scatter, "" for
 * hypercube (nccl-tests src/<coll>.cu).  Static string.
 */
const char *ncd_perf_redop_label(enum ncd_perf_coll c, enum ncd_perf_op o);

/**
 * alltoallv's traffic: how many bytes each rank sends each peer, from
 * nccl-tests' variables (src/alltoallv.cu, v2.19.6):
 *  - generated (default): for a size S, per-peer count c = (S / esize /
 *    nranks) rounded down to 16 bytes, total T = c x nranks x esize; rank
 *    i sends rank j ((1 - spread) x T / n + spread x d x T / (n(n-1)/2))
 *    bytes rounded down to 16, d = (j - i) mod n (spread 1: nothing to
 *    itself, most to the farthest rank; spread 0: uniform);
 *    NCCL_TESTS_ALLTOALLV_SPREAD (strtod, whole value, clamped to 0..1,
 *    default 1.0);
 *  - matrix: NCCL_TESTS_ALLTOALLV_MATRIX_FILE, a square whitespace-
 *    separated matrix of bytes, cell [i][j] = rank i to rank j, each value
 *    x NCCL_TESTS_ALLTOALLV_MATRIX_SCALE (default 1.0, negative = 0),
 *    truncated and rounded down to 16; the first nranks rows and columns
 *    are used; the sizes come from the matrix, not -b/-e (which must be
 *    equal and at least the largest per-rank total), and the count
 *    column is 0;
 *  - NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY (atoi != 0): per-rank bytes and
 *    bandwidths after each measurement (ncd_perf_fmt_traffic_summary()).
 */
struct ncd_perf_traffic {
    int matrix;         /**< 1: matrix mode */
    double spread;      /**< generated: 0..1 */
    double scale;       /**< matrix: factor applied to every cell, >= 0 */
    int print_summary;  /**< NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY */
    int dim;            /**< matrix: rows (= columns) */
    size_t *bytes;      /**< matrix: dim x dim, [i * dim + j] (owned) */
    char *path;         /**< matrix: the file (owned), for messages */
};

/** Generated mode with nccl-tests' defaults (spread 1, scale 1). */
void ncd_perf_traffic_default(struct ncd_perf_traffic *t);

/**
 * Reads nccl-tests' NCCL_TESTS_ALLTOALLV_* variables from ctx's
 * environment into `t` and, when MATRIX_FILE is set, reads and parses that
 * file (ncd_perf_traffic_parse()).
 * @return 0; NCD_EPARSE / NCD_ENOENT... with nccl-tests' message in ctx
 *         ("Unable to open alltoallv traffic matrix file X.", "Invalid
 *         alltoallv traffic matrix ..."); NCD_ENOMEM.
 */
int ncd_perf_traffic_load(struct ncd_ctx *ctx, struct ncd_perf_traffic *t);

/**
 * Parses a traffic matrix (the file's bytes; need not be NUL-terminated)
 * as nccl-tests does: strtod values separated by white space, rows ended
 * by newlines, every row as long as the first, square; each value must be
 * a number followed by white space or the end, >= 0, and value x t->scale
 * must fit a size_t.  Fills t->dim and t->bytes (cells x scale, truncated,
 * rounded down to 16).  `name` appears in the messages.
 * @return 0, or NCD_EPARSE with nccl-tests' message in `why`; NCD_ENOMEM.
 */
int ncd_perf_traffic_parse(struct ncd_perf_traffic *t, const char *buf,
                           size_t len, const char *name, char *why,
                           size_t whylen);

/**
 * Bytes rank i sends rank j: the matrix cell, or the generated count for
 * a per-rank total of `total` bytes (see struct ncd_perf_traffic).  `t`
 * NULL means generated with spread 1.
 */
size_t ncd_perf_traffic_peer(const struct ncd_perf_traffic *t, int i, int j,
                             int nranks, size_t total);

/** Frees the matrix and path; `t` becomes generated mode. */
void ncd_perf_traffic_release(struct ncd_perf_traffic *t);

/** Element counts and offsets of one size of one collective (per rank). */
struct ncd_perf_counts {
    size_t sendcount;        /**< elements in this rank's send buffer */
    size_t recvcount;        /**< elements in this rank's recv buffer */
    size_t paramcount;       /**< the count passed to NCCL: `count` column */
    size_t send_inplace_off; /**< in-place: sendbuf = recvbuf + this (elements) */
    size_t recv_inplace_off; /**< in-place: recvbuf = sendbuf + this (elements) */
    size_t bytes;            /**< `size` column: max(send, recv) * esize
                                  over all ranks */
    const struct ncd_perf_traffic *traffic; /**< the traffic given to
                                  ncd_perf_counts_traffic() (only alltoallv
                                  reads it; NULL: generated, spread 1) */
};

/**
 * Derives counts for `bytes` of `esize`-byte elements on `nranks` ranks
 * (nccl-tests src/<coll>.cu GetCollByteCount, v2.19.6).  With c = bytes /
 * esize and base = (c / nranks) & ~(16 / esize - 1): all_reduce, broadcast,
 * reduce, sendrecv use c; the others use base per rank.  `rank` sets the
 * in-place offsets of all_gather, gather, hypercube (send side) and
 * reduce_scatter, scatter (recv side).
 */
void ncd_perf_counts(enum ncd_perf_coll c, size_t bytes, size_t esize,
                     int nranks, int rank, struct ncd_perf_counts *out);

/**
 * ncd_perf_counts() for alltoallv's `traffic` (ignored by the other
 * collectives; NULL = generated, spread 1): paramcount is the per-peer
 * count c (0 in matrix mode), send/recvcount this rank's totals over its
 * peers, bytes the largest send or receive total of any rank x esize
 * (nccl-tests AlltoAllvGetCollByteCount / ComputeMaxCounts).  `traffic`
 * must outlive `out`.
 */
void ncd_perf_counts_traffic(enum ncd_perf_coll c, size_t bytes,
                             size_t esize, int nranks, int rank,
                             const struct ncd_perf_traffic *traffic,
                             struct ncd_perf_counts *out);

/**
 * Bus-bandwidth factor (doc/PERFORMANCE.md; src/<coll>.cu GetBw):
 * all_reduce 2(n-1)/n; reduce_scatter, all_gather, alltoall, gather,
 * scatter (n-1)/n; broadcast, reduce, sendrecv, hypercube 1.
 */
double ncd_perf_busbw_factor(enum ncd_perf_coll c, int nranks);

/**
 * algbw and busbw in GB/s for `sec` seconds per op.  algbw = bytes / sec,
 * except hypercube: paramcount * esize * (n-1) / sec.
 */
void ncd_perf_bw(enum ncd_perf_coll c, const struct ncd_perf_counts *k,
                 size_t esize, int nranks, double sec, double *algbw,
                 double *busbw);

/**
 * The size sweep of nccl-tests: min, then *factor (factor > 1) or +step,
 * while <= max.  Writes at most `cap` sizes to `out` (may be NULL to
 * count).  @return the number of sizes in the sweep; 0 when step is 0 and
 * factor <= 1 (an endless sweep) or min > max.
 */
size_t ncd_perf_sweep(size_t minb, size_t maxb, size_t step, size_t factor,
                      size_t *out, size_t cap);

/**
 * Parses a size as nccl-tests' parsesize(): a decimal number with an
 * optional K, M or G suffix (binary: 1024, case-insensitive), fractions
 * allowed ("0.5G").  @return 0, or NCD_EINVAL for garbage / negative.
 */
int ncd_perf_parse_size(const char *s, size_t *out);

/* Data pattern ------------------------------------------------------ */

/**
 * Fills `count` elements at `buf` with rank `rank`'s input for elements
 * [first, first+count) of its send buffer, repetition `seed`.  Values are
 * a hash of (seed, rank, index) chosen so every reduction is exact in any
 * order: integers wrap, floats are small integers (sum, min, max, avg) or
 * ±1/±2/±0.5 (prod).  `buf` may be unaligned for the type.
 */
void ncd_perf_fill(enum ncd_perf_dtype t, enum ncd_perf_op op, void *buf,
                   size_t first, size_t count, int rank, uint32_t seed);

/** Checking state for one rank's result buffer. */
struct ncd_perf_check {
    enum ncd_perf_coll coll;
    enum ncd_perf_dtype dtype;
    enum ncd_perf_op op;
    int nranks, rank, root;
    uint32_t seed;
    struct ncd_perf_counts k;
};

/**
 * Counts the wrong elements of rank `chk->rank`'s recv buffer after the
 * collective described by `chk` (every element expected by nccl-tests'
 * semantics; reduce checks only the root, gather only the root).
 * Tolerance 0, except 2 ULP for floating-point avg.
 * @return the number of wrong elements.
 */
int64_t ncd_perf_check(const struct ncd_perf_check *chk, const void *recvbuf);

/* Element-wise kernels used by the socket backend (vectorised). */

/**
 * dst[i] = f(a[i]) OP f(b[i]) for n elements, where f multiplies by the
 * mulsum scalar when `scale_a` / `scale_b` is set and op is MULSUM (MULSUM
 * then sums).  AVG sums.  dst may equal a or b.
 */
void ncd_perf_reduce(enum ncd_perf_dtype t, enum ncd_perf_op op, void *dst,
                     const void *a, const void *b, size_t n, int scale_a,
                     int scale_b);
/**
 * Final step of a reduction on n elements: AVG divides by `nranks`;
 * MULSUM with `scale` multiplies by the scalar (used when one rank's input
 * is the whole result); other ops copy.  dst may equal src.
 */
void ncd_perf_reduce_finish(enum ncd_perf_dtype t, enum ncd_perf_op op,
                            void *dst, const void *src, size_t n, int nranks,
                            int scale);

/* ------------------------------------------------------------------ */
/* 2. Options, results and the nccl-tests formatter                    */
/* ------------------------------------------------------------------ */

/** nccl-tests' options (src/common.cu, defaults as there). */
struct ncd_perf_opts {
    enum ncd_perf_coll coll;
    const char *prog;      /**< "all_reduce_perf" */
    int nthreads;          /**< -t (1) */
    int ngpus;             /**< -g (1) */
    size_t minbytes;       /**< -b (32M) */
    size_t maxbytes;       /**< -e (32M) */
    size_t stepbytes;      /**< -i (1M) */
    size_t stepfactor;     /**< -f (1) */
    int iters;             /**< -n (20) */
    int agg_iters;         /**< -m (1) */
    int warmup_iters;      /**< -w (1) */
    int run_cycles;        /**< -N (1), 0 = forever */
    int parallel_init;     /**< -p (0) */
    int check;             /**< -c (1) */
    int op;                /**< -o: enum ncd_perf_op, or -1 = all */
    int dtype;             /**< -d: enum ncd_perf_dtype, or -1 = all */
    int root;              /**< -r (0), -1 = every root */
    int blocking;          /**< -z (0) */
    int stream_null;       /**< -y (0) */
    int timeout_s;         /**< -T (0 = off) */
    int cudagraph;         /**< graph launches done: always 0 (nccl-doctor
                                captures no CUDA graph) */
    int cudagraph_asked;   /**< -G as given (0): the header says what
                                became of it */
    int report_cputime;    /**< -C (0): the time column is the host time
                                spent issuing the operations (nccl-tests'
                                cputimeSec), rank 0's own */
    int report_timestamps; /**< -S (0) */
    int average;           /**< -a (1): 0 rank 0, 1 avg, 2 min, 3 max */
    int local_register;    /**< -R (0) */
    int memory_report;     /**< -M (0) */
    int unalign;           /**< -u (0) elements */
    int per_iter_timing;   /**< -I (0): per-iteration statistics columns */
    int per_iter_skip;     /**< -K (0): leading iterations left out of the
                                -I statistics */
    const char *json_path; /**< -J, NULL = none */
    double min_bw;         /**< NCCL_TESTS_MIN_BW in GB/s, < 0 = unset */
    const struct ncd_perf_traffic *traffic; /**< alltoallv (NULL:
                                generated, spread 1); not owned */
};

/** Fills `o` with nccl-tests' defaults. */
void ncd_perf_opts_default(struct ncd_perf_opts *o);

/** nccl-tests' getopt string (src/common.cu, v2.19.6): every option but
 *  -h takes a value. */
#define NCD_PERF_GETOPT                                                       \
    "t:g:b:e:i:f:n:m:w:N:p:I:K:c:o:d:r:z:y:T:hG:C:a:R:x:D:V:J:S:M:u:"

/** One nccl-tests option: its letter and long name (--nthreads...). */
struct ncd_perf_option {
    char letter;
    const char *name;
};

/** Number of nccl-tests options (all take a value; -h is not counted). */
size_t ncd_perf_options_count(void);
/** Option i (0 <= i < count), static; NULL out of range. */
const struct ncd_perf_option *ncd_perf_option_at(size_t i);

/** A message from applying an option, for the user. */
struct ncd_perf_optmsg {
    char text[256]; /**< "" when there is nothing to say */
    int to_stdout;  /**< nccl-tests prints it on stdout ("invalid op X,
                         defaulting to sum .. ") */
    int raw;        /**< nccl-tests' own wording: print as is, without a
                         program prefix */
};

/**
 * Applies nccl-tests option `letter` with value `arg` to `o` as nccl-tests
 * parses it: integers with strtol(.., 0) and nccl-doctor's ranges (-t, -g,
 * -m at least 1; -n, -w, -N, -c, -T at least 0; -z, -a 0..3; -u 0..1024);
 * sizes with ncd_perf_parse_size(); an unknown -o/-d falls back to
 * sum/float with nccl-tests' message; -r -1 = every root (a word reads as
 * 0, as strtol does); -J keeps `arg` (not copied); -I and -K are kept
 * (ncd_perf_opts_settle() applies nccl-tests' rules between them); -G N
 * is kept in cudagraph_asked (no graph is captured: the header says so);
 * the GPU-only -x -D -V are accepted and ignored with a note.
 * @param m  receives a message to show, also on success (a note).
 * @return 0; nccl-tests' exit status for a bad value: 6 (usage) or 255
 *         (a bad size); NCD_ENOENT when `letter` is not an nccl-tests
 *         option.
 */
int ncd_perf_opt_apply(struct ncd_perf_opts *o, int letter, const char *arg,
                       struct ncd_perf_optmsg *m);

/**
 * -I statistics of one side of a row (nccl-tests src/util.cu
 * computeIterStats / writePerIterReport, v2.19.6).  Each iteration's time
 * is its -m operations' time / agg_iters, the largest over the ranks of a
 * process (one row per process), then over the processes.
 */
struct ncd_perf_iterstats {
    int n;              /**< iterations (times_us entries) */
    int skipped;        /**< -K: leading iterations not in the statistics */
    double min_us, max_us, avg_us, p50_us, p95_us, p99_us, stdev_us;
    double cv_pct;      /**< stdev / avg x 100 (0 when avg is 0) */
    const double *times_us;      /**< n: per iteration, max over processes */
    int nprocs;                  /**< rows of proc_times_us; 0 with one
                                      process (nccl-tests writes none) */
    const double *proc_times_us; /**< nprocs x n, row-major */
};

/**
 * Statistics of times_us[skip..n): min, max, mean, p50 = sorted[m / 2],
 * p95/p99 by nearest rank (index min(m - 1, (m x p + 99) / 100 - 1)),
 * population standard deviation, cv; m = n - skip >= 1.  Sets n, skipped
 * and times_us (not copied); leaves nprocs / proc_times_us alone.
 * @return 0, or NCD_EINVAL when m < 1; NCD_ENOMEM.
 */
int ncd_perf_iter_stats(const double *times_us, int n, int skip,
                        struct ncd_perf_iterstats *st);

/**
 * nccl-tests' checks after parsing (src/common.cu main(), v2.19.6): -I
 * other than 0/1, -K outside 0..iters-1, and -K without -I are disabled
 * with nccl-tests' message ("per-iteration skip (-K) requires
 * per-iteration timing (-I 1). Disabling."); -I with -n 0 too.  One line
 * per message is appended to `notes` (for stderr).
 */
void ncd_perf_opts_settle(struct ncd_perf_opts *o, struct ncd_strbuf *notes);

/** One side (out-of-place or in-place) of a table row. */
struct ncd_perf_cell {
    double time_us; /**< time (or CPU time with -C) per op, µs */
    double algbw;   /**< GB/s */
    double busbw;   /**< GB/s */
    int64_t wrong;  /**< wrong elements summed over ranks; -1 = N/A */
    double bw_time_us; /**< the time per op algbw/busbw come from: time_us
                            unless -C (0 = time_us) */
    const struct ncd_perf_iterstats *iter; /**< -I: statistics, else NULL
                            (owned by the caller of the row callback) */
};

/** One row of the table. */
struct ncd_perf_row {
    size_t bytes;       /**< size column */
    size_t count;       /**< count column */
    const char *type;   /**< type name */
    const char *redop;  /**< redop column text */
    int root;           /**< root column */
    struct ncd_perf_cell oop, ip;
    char timestamp[32]; /**< -S: "%Y-%m-%d %H:%M:%S" */
};

/** One device line ("#  Rank ..."). */
struct ncd_perf_device {
    int rank, group, pid;
    char host[64];  /**< host name cut at the first '.' */
    int device;     /**< CUDA ordinal (socket: local rank index) */
    char busid[32]; /**< "0000:1b:00" */
    char name[128]; /**< device name */
};

/**
 * Formats a number as nccl-tests' getFloatStr(): the first of %.2f, %.1f,
 * %.0f that fits in `width` characters, else %.1e (width >= 7) or %.0e,
 * right-aligned.  `out` must hold width + 1 bytes.
 */
void ncd_perf_fmt_num(double v, int width, char *out);

/**
 * Appends the preamble: version line, "Collective test starting", the
 * nThread line, optional Blocking / Per-Iteration / Parallel lines, with
 * -G a line saying that no CUDA graph is captured (not applicable on the
 * socket backend; on nccl every operation is launched on its own, so the
 * nThread line says graph: 0), "#", "# Using devices" and one line per
 * device.  `nccl_version` is NCCL's version code (23007), 0 on the socket
 * backend (the -I line then says "host clock timing" where nccl-tests says
 * "CUDA event timing").
 */
void ncd_perf_fmt_preamble(struct ncd_strbuf *sb,
                           const struct ncd_perf_opts *o, int nccl_version,
                           const struct ncd_perf_device *devs, int ndevs);

/** Appends "#" and the three table header lines (trailing spaces kept);
 *  with -I the per-iteration header of nccl-tests (i_min i_max i_p99
 *  i_cv% after each side's #wrong). */
void ncd_perf_fmt_header(struct ncd_strbuf *sb, const struct ncd_perf_opts *o);

/** Appends one table row with its newline; with -I each side's #wrong
 *  is followed by "  %7s  %7s  %7s  %7s" of i_min, i_max, i_p99 (µs) and
 *  i_cv% (cell.iter; "N/A" when NULL). */
void ncd_perf_fmt_row(struct ncd_strbuf *sb, const struct ncd_perf_opts *o,
                      const struct ncd_perf_row *r);

/**
 * Appends the footer: "Out of bounds values", "Avg bus bandwidth" (with
 * OK/FAILED when o->min_bw >= 0: FAILED below 0.9 x min_bw), "#",
 * "Collective test concluded", with -M (`mem` not NULL) the line
 * "# GPU memory usage     : Initialization X | User-Allocated Y |
 * Collective Z | Total  T" (bytes in mem[0..2], printed as nccl-tests'
 * getMemString: B/KB/MB/GB of 1024, 2 decimals below 10, 1 below 100),
 * "#", then "# error: <error>" or an empty line.  `oob` counts failing
 * (thread x row side) instances.
 */
void ncd_perf_fmt_footer(struct ncd_strbuf *sb, const struct ncd_perf_opts *o,
                         int oob, double avg_busbw, const uint64_t *mem,
                         const char *error);

/**
 * Appends NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY's lines for one measurement
 * (nccl-tests src/alltoallv.cu AlltoAllvPrintRankBandwidths): the mode
 * line ("mode=generated nranks=N total_bytes=T spread=S time_usec=U" or
 * "mode=matrix nranks=N matrix_dim=D scale=S time_usec=U") and per rank
 * "#   rank=R send_bytes=.. recv_bytes=.. alg_bw=.. bus_bw=..".
 * nccl-tests prints them in the middle of the row line; nccl-doctor
 * prints them on their own lines before the row.
 * @param total  the generated per-rank total (count column x nranks x
 *               element size; 0 in matrix mode).
 * @param sec    seconds per operation (the time algbw comes from).
 */
void ncd_perf_fmt_traffic_summary(struct ncd_strbuf *sb,
                                  const struct ncd_perf_traffic *t,
                                  int nranks, size_t total, double sec);

/**
 * JSON document of nccl-tests -J (src/util.cu, version 3).  Build with
 * _new, add rows, finish.  Booleans are the strings "true"/"false" and NaN
 * is "nan" as in nccl-tests.  Caller frees with json_decref().
 * Differences from nccl-tests: "env" holds only the variables that matter
 * to the run (ncd_gather_env_wanted(): NCCL_*, CUDA_*, launcher and
 * framework variables), each "NAME=value" redacted by ncd_env_redact()
 * (include/ncd/gather.h), never a token, key or password; after
 * "nccl_version" come "backend" ("nccl" or "socket") and "backend_info"
 * (the preamble's description).
 * @param argv,envp  NULL-terminated; copied.
 * @return NULL when out of memory.
 */
json_t *ncd_perf_json_new(const struct ncd_perf_opts *o, char *const *argv,
                          char *const *envp, int nccl_version,
                          const char *backend, const char *backend_desc,
                          const struct ncd_perf_device *devs, int ndevs,
                          const char *start_time);
/**
 * Appends a row to "results"; with -I each side is followed by its
 * "<side>_per_iter" object (skipped_iterations, min_us, max_us, avg_us,
 * p50_us, p95_us, p99_us, stdev_us, cv_pct, times_us[] and, with several
 * processes, per_process_max_times_us[][]), which nccl-tests'
 * tools/analyze_perf_json.py reads.  @return 0 or NCD_ENOMEM.
 */
int ncd_perf_json_add_row(json_t *doc, const struct ncd_perf_opts *o,
                          const struct ncd_perf_row *r, const char *name);
/** Adds out_of_bounds, average_bus_bandwidth, errors, end_time. */
int ncd_perf_json_finish(json_t *doc, const struct ncd_perf_opts *o, int oob,
                         double avg_busbw, const char *error,
                         const char *end_time);

/**
 * Checks the options before any rank starts, as nccl-tests does: -J must
 * end in ".json" (status 6), min <= max and a sweep that ends (status
 * 255, nccl-tests' message).  @return 0 or the status, message in `msg`.
 */
int ncd_perf_opts_check(const struct ncd_perf_opts *o, char *msg,
                        size_t msglen);

/* ------------------------------------------------------------------ */
/* 3. The rank-to-rank connection mesh (socket backend)                */
/* ------------------------------------------------------------------ */

struct ncd_ctx;

/** What every rank publishes at rendezvous. */
struct ncd_rank_info {
    int32_t rank;
    int32_t pid;
    char host[64];  /**< gethostname(), cut at the first '.' */
    char ifname[16]; /**< interface the data sockets listen on */
    char addr[64];  /**< numeric address of the listener */
    int32_t port;   /**< listener port */
};

/**
 * A rank's full mesh of TCP connections: `nsocks` sockets to every peer.
 * Typical use (what `perf` does per rank): ncd_peer_listen() on the chosen
 * address, ncd_pg_allgather() of the struct ncd_rank_info, then
 * ncd_peerset_connect() with ncd_pg_token() and the gathered infos.
 * Every accepted connection is validated (magic, job token, destination
 * rank, source rank in range, socket index, no duplicate) before it is
 * used; stray connections are closed.
 */
struct ncd_peerset;

/**
 * Creates a listening socket on `addr` (numeric, "" = any) with an
 * ephemeral port and fills info->addr/port/ifname/host/pid.
 * @return the listening fd, or a negative NCD_E* code.
 */
int ncd_peer_listen(struct ncd_ctx *ctx, const char *addr, const char *ifname,
                    int rank, struct ncd_rank_info *info);

/**
 * Connects rank `rank` to every other rank of `infos[nranks]`: the lower
 * rank of each pair connects (nsocks sockets), the higher accepts on
 * `listen_fd` (which this call closes).  Each step has `timeout_ms`.
 * @return 0 and *out (free with ncd_peerset_free()), or NCD_ETIMEOUT /
 * NCD_ECONNREFUSED / NCD_EPROTO with a detail naming the peer's rank,
 * host and address.
 */
int ncd_peerset_connect(struct ncd_ctx *ctx, int listen_fd, int rank,
                        int nranks, const struct ncd_rank_info *infos,
                        int nsocks, uint64_t token, int timeout_ms,
                        struct ncd_peerset **out);

/** The fd of socket `s` (0..nsocks-1) to `peer`; -1 for self. */
int ncd_peerset_fd(const struct ncd_peerset *ps, int peer, int s);
/** Sockets per peer. */
int ncd_peerset_nsocks(const struct ncd_peerset *ps);
/** Peer description "rank 3 (host node2, 10.0.0.2:41234)"; static per ps. */
const char *ncd_peerset_describe(const struct ncd_peerset *ps, int peer);
/** Closes all sockets. NULL allowed. */
void ncd_peerset_free(struct ncd_peerset *ps);

/* ------------------------------------------------------------------ */
/* 4. Runner and backends                                              */
/* ------------------------------------------------------------------ */

/**
 * Backends.  nccl is the default: a plain invocation exercises NCCL's path
 * and fails (nccl-tests' failure lines, exit 2 or 3) when NCCL or CUDA
 * cannot run; there is no silent fallback.  socket (TCP between ranks on
 * NCCL's interface, no GPU) runs only when asked for.
 */
enum ncd_perf_backend_kind {
    NCD_PERF_BACKEND_NCCL,
    NCD_PERF_BACKEND_SOCKET,
};

/** Algorithms of the socket backend. */
enum ncd_perf_algo {
    NCD_PERF_ALGO_AUTO,   /**< ring for all_reduce, all_gather, reduce_scatter,
                               broadcast, reduce; direct for the rest */
    NCD_PERF_ALGO_RING,
    NCD_PERF_ALGO_DIRECT,
};

/** How this process is placed in the job. */
struct ncd_perf_job {
    int nprocs, proc;       /**< processes and this one's index */
    int local_proc;         /**< index among the processes of this host */
    int ranks_per_proc;     /**< nthreads * ngpus */
    struct ncd_pg *pg;      /**< process group (owned by the caller) */
    enum ncd_perf_backend_kind backend;
    enum ncd_perf_algo algo;
    char bind_addr[64];     /**< socket: address to listen on ("" any) */
    char ifname[64];        /**< socket: its interface name (for display) */
    char iface_origin[256]; /**< socket: why that interface (for display) */
    int sock_nthreads;      /**< NCCL_SOCKET_NTHREADS (0..16) */
    int sock_nsocks;        /**< NCCL_NSOCKS_PERTHREAD (>= 1) */
    int peer_timeout_ms;    /**< max time without progress on a socket */
    const char *nccl_path;  /**< override for libnccl.so.2 (NULL = default) */
    const char *cudart_path;/**< override for libcudart.so (NULL = default) */
    int device0;            /**< NCCL_TESTS_DEVICE, -1 = unset */
    int progress;           /**< 1: call the progress callback */
};

/** Callbacks of the runner (called on global rank 0's thread only). */
struct ncd_perf_sink {
    void *arg;
    /** Preamble is ready (devices of every rank). */
    void (*preamble)(void *arg, int nccl_version, const char *backend_desc,
                     const struct ncd_perf_device *devs, int ndevs);
    /** A row is complete. */
    void (*row)(void *arg, const struct ncd_perf_row *r);
    /** Progress: size index i of n for the current type/op/root. */
    void (*progress)(void *arg, size_t i, size_t n, size_t bytes);
};

/**
 * Where a run stopped, each standing for the nccl-tests v2.19.6 call that
 * fails there (the failure lines of ncd_perf_fmt_failure() name its
 * src/common.cu / util.cu line).
 */
enum ncd_perf_stage {
    NCD_PERF_STAGE_NONE,      /**< no failure */
    NCD_PERF_STAGE_OPEN,      /**< loading NCCL and CUDA, counting devices
                                   (writeDeviceReport) */
    NCD_PERF_STAGE_UNIQUE_ID, /**< ncclGetUniqueId */
    NCD_PERF_STAGE_DEVICE,    /**< cudaSetDevice, the rank's stream */
    NCD_PERF_STAGE_INIT,      /**< the communicator; socket: the rank mesh
                                   (initComms) */
    NCD_PERF_STAGE_ALLOC,     /**< the buffers (AllocateBuffs) */
    NCD_PERF_STAGE_RUN,       /**< starting a collective (runColl) */
    NCD_PERF_STAGE_SYNC,      /**< waiting for it: asynchronous and network
                                   errors, -T (testStreamSynchronize) */
    NCD_PERF_STAGE_RESULT,    /**< wrong data or below NCCL_TESTS_MIN_BW */
};

/** What a run ended with. */
struct ncd_perf_summary {
    int oob;             /**< failing (thread x row side) instances */
    double avg_busbw;    /**< mean busbw over all printed cells, GB/s */
    int ncells;
    int status;          /**< nccl-tests exit status (0, 1..7) */
    uint64_t mem[3];     /**< rank 0's memory, bytes: initialization (comm
                              set-up), user-allocated (send + recv
                              buffers), collective (staging and scratch);
                              device memory on nccl, host on socket */
    int nccl_version;    /**< NCCL's version code, 0 when not loaded */
    enum ncd_perf_stage stage; /**< where it stopped (NONE when it ran) */
    char error[512];     /**< first error text ("" when none): what went
                              wrong, in words */
    char quote[512];     /**< the text nccl-tests quotes in its failure
                              line ("no CUDA-capable device is detected",
                              "<ncclGetErrorString> / <last error>"); ""
                              = error */
};

/**
 * Runs the benchmark for this process: creates the backend's ranks
 * (threads), connects them, sweeps sizes/types/ops/roots, and hands rows to
 * `sink` on global rank 0.  Returns the nccl-tests status (0 ok, 1
 * internal, 2 CUDA, 3 NCCL/network, 4 timeout, 5 not implemented, 6 invalid
 * usage, 7 wrong data / below NCCL_TESTS_MIN_BW) and fills `sum`.
 */
int ncd_perf_run(struct ncd_ctx *ctx, const struct ncd_perf_opts *o,
                 const struct ncd_perf_job *job,
                 const struct ncd_perf_sink *sink,
                 struct ncd_perf_summary *sum);

/**
 * The output of one run on global rank 0, assembled event by event from
 * the runner's sink: nccl-tests' text (the preamble with nccl-doctor's
 * "#  Backend: <desc>" line; the header; rows; the footer) and the JSON
 * document (-J, or --json on stdout) with nccl-tests' local-time stamps,
 * its "backend" key and the environment filtered and redacted
 * (ncd_perf_json_new()).
 */
struct ncd_perf_report;

/**
 * @param json_stdout  --json: build the document for the caller to print
 *                     (ignored when o->json_path is set: -J writes the
 *                     file nccl-tests would, ncd_perf_json_pick_path()).
 * @param argv,envp    recorded in the document (not copied: must outlive
 *                     r).
 * @param backend      the backend that runs (its name goes in the JSON).
 * @return NULL when out of memory; free with ncd_perf_report_free().
 */
struct ncd_perf_report *ncd_perf_report_new(const struct ncd_perf_opts *o,
                                            int json_stdout, char *const *argv,
                                            char *const *envp,
                                            enum ncd_perf_backend_kind backend);
/**
 * The CPUs this process may run on (sched_getaffinity), 0 unknown: when
 * rank 0's host runs more ranks than that, the preamble says so in a
 * "#  Warning: N ranks on HOST share M CPUs ..." line and the JSON
 * document gets a "warnings" array (nccl-doctor's key, after nccl-tests').
 */
void ncd_perf_report_cpus(struct ncd_perf_report *r, int ncpus);
/** That warning once the preamble is out ("" when none); owned by r. */
const char *ncd_perf_report_warning(const struct ncd_perf_report *r);
/** Appends what nccl-tests prints about -J first: "# Writing JSON output
 *  to PATH", or "# skipping json output; failed to probe destination". */
void ncd_perf_report_start(struct ncd_perf_report *r, struct ncd_strbuf *sb);
/** Appends the preamble and the table header (sink.preamble), with
 *  nccl-doctor's "#  Backend:", fallback, CPU warning and -C lines. */
void ncd_perf_report_preamble(struct ncd_perf_report *r,
                              struct ncd_strbuf *sb, int nccl_version,
                              const char *backend_desc,
                              const struct ncd_perf_device *devs, int ndevs);
/** Appends a row (sink.row), after alltoallv's PRINT_SUMMARY lines
 *  when the traffic asks for them. */
void ncd_perf_report_row(struct ncd_perf_report *r, struct ncd_strbuf *sb,
                         const struct ncd_perf_row *row);
/**
 * Fills the runner's `sink` so that the preamble and each row, formatted
 * by r, are handed to out(arg, text) as they come, and progress goes to
 * progress(arg, ...) (may be NULL).  r must outlive the run.
 */
void ncd_perf_report_sink(struct ncd_perf_report *r,
                          void (*out)(void *arg, const char *text),
                          void (*progress)(void *arg, size_t i, size_t n,
                                           size_t bytes),
                          void *arg, struct ncd_perf_sink *sink);
/**
 * Appends the footer when the run had no error, finishes the JSON
 * document and writes the -J file (atomically, ncd_perf_json_write()).
 * @param stdout_doc  receives the --json document (owned by r), else NULL.
 * @return 0, or the write's NCD_E* code (detail in ctx).
 */
int ncd_perf_report_finish(struct ncd_perf_report *r, struct ncd_ctx *ctx,
                           struct ncd_strbuf *sb,
                           const struct ncd_perf_summary *sum,
                           json_t **stdout_doc);
void ncd_perf_report_free(struct ncd_perf_report *r);

/**
 * The failure lines of a run that stopped, exactly as nccl-tests v2.19.6
 * prints them on stdout (src/common.h CUDACHECK / NCCLCHECK / TESTCHECK,
 * src/common.cu testStreamSynchronize), so that health checks that grep
 * stdout for "Test failure" and explain recognise them:
 *  - "<host>: Test CUDA failure <file>:<line> '<quote>'" (status 2),
 *    "<host>: Test NCCL failure <file>:<line> '<quote>'" (3; the socket
 *    backend's quote starts with ncclRemoteError's string, "remote process
 *    exited or there was a network error / "), "<host>: Test timeout
 *    (<timeout_s>s) common.cu:526" (4 while waiting for a collective);
 *    none for status 5 (nccl-tests prints "Invalid number of GPUs" on
 *    stderr) and 7 (wrong data: the footer says so);
 *  - then one " .. <host> pid <pid>: Test failure <file>:<line>" per
 *    TESTCHECK level up to main().
 * <file>:<line> are those of the v2.19.6 call that fails at `stage`
 * (util.cu:674 cudaGetDeviceCount, common.cu:1550 ncclGetUniqueId,
 * common.cu:222 the ncclGroupEnd of initComms, common.cu:1111 cudaMalloc,
 * <coll>.cu runColl, common.cu:514 ncclCommGetAsyncError), with that
 * call's stack.  `coll` names the <coll>.cu frames.  Appends nothing for
 * status 0.
 */
void ncd_perf_fmt_failure(struct ncd_strbuf *sb, const char *host, int pid,
                          int status, enum ncd_perf_stage stage,
                          enum ncd_perf_coll coll, int timeout_s,
                          enum ncd_perf_backend_kind backend,
                          const char *quote);

/* ------------------------------------------------------------------ */
/* 5. The data interface of the socket backend                         */
/* ------------------------------------------------------------------ */

/** Where the socket backend's ranks listen and what they advertise. */
struct ncd_perf_iface {
    char ifname[64];      /**< interface of the data sockets */
    char addr[64];        /**< its numeric address (no port: ephemeral) */
    char boot_ifname[64]; /**< NCCL's bootstrap interface ("" with --iface) */
    char boot_addr[64];
    char origin[160];     /**< why this interface, in words ("NCCL 2.28.9's
                               Socket interface, chosen from ...") */
};

/**
 * The interface and address the socket backend's ranks listen on and
 * advertise: `iface` (--iface) when given, else exactly the one NCCL
 * `nccl_version` (0 = newest known) would use on this host for its Socket
 * transport (the first device of ncd_nccl_select(), include/ncd/nccl.h:
 * NCCL_SOCKET_IFNAME, NCCL_SOCKET_FAMILY, NCCL_COMM_ID's subnet and the
 * release's selection order), never another guess: a wrong default
 * interface then fails here as it fails in NCCL.
 * @return 0 with `out` filled, or NCD_ENOENT with `why` saying what NCCL
 *         would say (no interface matches NCCL_SOCKET_IFNAME, an invalid
 *         NCCL_COMM_ID, no interface at all).
 */
int ncd_perf_pick_iface(struct ncd_ctx *ctx, const char *iface,
                        int nccl_version, struct ncd_perf_iface *out,
                        char *why, size_t whylen);

/* ------------------------------------------------------------------ */
/* 6. Setting up a run                                                 */
/* ------------------------------------------------------------------ */

/** --backend names: "nccl" (also NULL: the default) and "socket"; -1 for
 *  anything else ("auto" included: nothing falls back silently). */
int ncd_perf_backend_from_name(const char *s);
/** "nccl" or "socket" (static). */
const char *ncd_perf_backend_name(enum ncd_perf_backend_kind b);
/** --algo names: "ring", "direct", "auto" (NULL = auto); -1 unknown. */
int ncd_perf_algo_from_name(const char *s);

/**
 * Whether the run fits a job of `nranks` ranks on backend `be`: 0, or
 * nccl-tests' status with the message in `why`: the collective's own rules
 * first (alltoallv with a traffic matrix: status 1 with nccl-tests' message
 * when nranks exceeds the matrix, -e is below the largest per-rank total
 * or -b differs from -e); 6 when the
 * collective needs a power-of-two number of ranks; 3 when the root is not
 * a rank (NCCL's ncclInvalidArgument, as nccl-tests reports it); 5 for
 * fp8 types on the socket backend.
 */
int ncd_perf_validate(const struct ncd_perf_opts *o, int nranks,
                      enum ncd_perf_backend_kind be, char *why,
                      size_t whylen);

/**
 * Bytes of each rank's send and of its receive buffer for this sweep: the
 * largest send or receive count over the sizes and the types it runs,
 * times the element size, plus -u elements of 8 bytes.  Pure.
 */
size_t ncd_perf_buffer_bytes(const struct ncd_perf_opts *o, int nranks);

/**
 * Host buffers one rank holds for this sweep, in bytes: its send and
 * receive buffers (ncd_perf_buffer_bytes()) and, on the socket backend,
 * the scratch buffer of the collectives that forward through one
 * (reduce_scatter, scatter, in-place alltoall), as large again.  *nbufs =
 * how many buffers that is.  0 for the nccl backend (device memory).
 * Excludes the program itself and the socket backend's 512 KiB staging
 * per socket, so it is a floor: a sweep above it cannot fit.  Pure.
 */
uint64_t ncd_perf_rank_host_bytes(const struct ncd_perf_opts *o, int nranks,
                                  enum ncd_perf_backend_kind be, int *nbufs);

/**
 * Whether the buffers of `local_ranks` ranks of this sweep (of `nranks` in
 * all) fit this host: their ncd_perf_rank_host_bytes() against
 * MemAvailable of /proc/meminfo, read through ctx's file layer (kernel
 * 3.14+; without the field the check passes).  Made before any rank
 * starts, so that a sweep that cannot fit is refused with the figure it
 * needs rather than walking the host into the OOM killer.
 * @return 0 (fits, or nothing to check), or 6 with a message in `why`
 *         naming the bytes needed (ranks x buffers x size) and available.
 */
int ncd_perf_mem_fit(struct ncd_ctx *ctx, const struct ncd_perf_opts *o,
                     int nranks, int local_ranks,
                     enum ncd_perf_backend_kind be, char *why, size_t whylen);

/**
 * NCCL_SOCKET_NTHREADS and NCCL_NSOCKS_PERTHREAD from ctx's environment
 * as NCCL's socket transport reads them (NCCL src/transport/net_socket.cc
 * ncclNetSocketGetNsockNthread, 2.30): integers parsed as NCCL_PARAM does
 * (ncd_nccl_int_parse()); unset, empty, unparsable or -2 is NCCL's default
 * NCD_PERF_SOCK_AUTO (detected per interface: ncd_perf_socket_auto());
 * NTHREADS above the catalog's maximum (16, NCCL's MAX_THREADS) is
 * clamped; when threads x sockets exceed the catalog's
 * NCCL_NSOCKS_PERTHREAD maximum (64, NCCL's MAX_SOCKETS), NSOCKS_PERTHREAD
 * becomes 64 / NTHREADS.  Other negative threads count as 0, fewer than
 * one socket per thread as 1.  The maxima come from data/nccl-vars.yaml.
 * @return 0, or NCD_EPARSE / NCD_ENOMEM when the catalog cannot be read.
 */
int ncd_perf_socket_settings(struct ncd_ctx *ctx, int *nthreads, int *nsocks);

/** NCCL's default (-2) of NCCL_SOCKET_NTHREADS / NCCL_NSOCKS_PERTHREAD. */
#define NCD_PERF_SOCK_AUTO (-2)

/**
 * Resolves NCD_PERF_SOCK_AUTO in *nthreads / *nsocks for interface
 * `ifname` as NCCL does (src/transport/net_socket.cc, 2.12+): PCI vendor
 * /sys/class/net/IF/device/vendor 0x1d0f (AWS) gives 2 threads x 8
 * sockets, 0x1ae0 (GCP) 4 x 1, anything else (or no PCI device) 0 x 1;
 * then clamps as ncd_perf_socket_settings().  Values already set stay.
 * Reads through ctx's file layer (sysroot, replay).
 * @return 0, or the catalog's error.
 */
int ncd_perf_socket_auto(struct ncd_ctx *ctx, const char *ifname,
                         int *nthreads, int *nsocks);

/**
 * The socket backend's data interface and address in `pj` for this
 * process (ncd_perf_pick_iface() with `iface` and `nccl_version`).  A
 * no-op for nccl.  The thread and socket counts are the caller's
 * (ncd_perf_socket_settings(), read once per job).
 * @return 0, or 3 (nccl-tests' status: no usable interface) with the
 *         message in ctx.
 */
int ncd_perf_prepare_socket(struct ncd_ctx *ctx, const char *iface,
                            int nccl_version, struct ncd_perf_job *pj);

/**
 * nccl-tests' variables from ctx's environment: NCCL_TESTS_MIN_BW into
 * o->min_bw (GB/s, strtod), NCCL_TESTS_DEVICE into *device0 (-1 unset).
 */
void ncd_perf_env(struct ncd_ctx *ctx, struct ncd_perf_opts *o, int *device0);

/** 0 when a -J path ends in ".json" (nccl-tests' rule), else NCD_EINVAL. */
int ncd_perf_json_check_name(const char *path);

/**
 * The file -J writes, as nccl-tests picks it: `asked` when it does not
 * exist, else the first free of asked.0, asked.1, ... asked.9999.
 * @return 0 with `out` set; NCD_EINVAL (not .json); NCD_EEXISTS when all
 *         are taken (`out` is "": nccl-tests then skips the JSON output).
 */
int ncd_perf_json_pick_path(const char *asked, char *out, size_t outlen);

/**
 * Writes the document (compact, key order kept, newline ended) to a
 * temporary file next to `path` and renames it into place, so no partial
 * file is ever seen.  @return 0 or NCD_E* with the detail in ctx.
 */
int ncd_perf_json_write(struct ncd_ctx *ctx, const json_t *doc,
                        const char *path);

#ifdef __cplusplus
}
#endif
#endif
