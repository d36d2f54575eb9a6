/* SPDX-License-Identifier: MIT */
/* Internals of `verify` (src/lib/verify/). */
#ifndef NCD_VERIFY_INT_H
#define NCD_VERIFY_INT_H

#include "ncd/perf.h"
#include "ncd/verify.h"
#include "perf/nccl_api.h"

/* The loaded libraries (never unloaded: their threads may outlive us). */
struct verify__gpu {
    struct ncd__cudart_api cu;
    struct ncd__nccl_api nc;
    int ndev;             /* > 0 when usable */
    char why[1536];       /* when not: "no driver: ..." (verify.h) */
    char info[768];       /* versions and paths */
};

/* Loads both libraries and counts devices; g->ndev 0 with g->why when not
 * usable.  Never fails otherwise. */
void verify__gpu_open(struct ncd_ctx *ctx, const struct ncd_verify_opts *o,
                      struct verify__gpu *g);

/* Step "gpu<dev>": the single-card sequence. */
void verify__step_gpu(const struct ncd_verify_opts *o, struct verify__gpu *g,
                      int dev, struct ncd_verify_step *s);

/* "0000:1b:00.0" of CUDA device dev; "" when unknown. */
void verify__gpu_bdf(struct verify__gpu *g, int dev, char *out, size_t len);

/* The device's name from the CUDA runtime. */
void verify__gpu_name(struct verify__gpu *g, int dev, char *out, size_t len);

/* Peer access from a to b: 1 yes, 0 no, -1 unknown (no symbol, error). */
int verify__gpu_peer(struct verify__gpu *g, int a, int b);

/* Free memory of device dev in bytes (0 when unknown). */
size_t verify__gpu_free_mem(struct verify__gpu *g, int dev);

/* The largest size of the sweep min, min*f, ... <= max that leaves room
 * in `free_bytes` for two buffers and NCCL's own (max(free/10, 512 MiB));
 * 0 when not even `min` fits. */
size_t verify__clamp_max(size_t min, size_t max, size_t factor,
                         size_t free_bytes);

/* One all_reduce sweep on the nccl backend (perf.h) in job `pj` (its pg,
 * nprocs, proc, local_proc filled by the caller; ngpus ranks in this
 * process).  Fills the step's status, reason and evidence for the
 * correctness part and returns the best busbw (GB/s) of the sweep, or a
 * negative value when the sweep failed (the step then says why).
 * `sample` is called on rank 0's thread at each size (may be NULL). */
double verify__sweep(struct ncd_ctx *ctx, const struct ncd_verify_opts *o,
                     const struct ncd_perf_job *pj, int ngpus, size_t maxb,
                     void (*sample)(void *), void *sample_arg,
                     struct ncd_verify_step *s);

/* Step "node": the check run. */
void verify__step_node(struct ncd_ctx *ctx, const struct ncd_verify_opts *o,
                       struct ncd_verify_step *s);

/* Seconds on a monotonic clock. */
double verify__now(void);

#endif
