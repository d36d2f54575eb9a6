/* SPDX-License-Identifier: MIT */
/*
 * Backend function table of the perf runner (internal).  A backend moves
 * data between ranks; the runner (run.c) owns the sweep, timing, data
 * check and aggregation.  One thread per rank; the process-level state is
 * struct ncd__rt.
 */
#ifndef NCD_PERF_BACKEND_H
#define NCD_PERF_BACKEND_H

#include <pthread.h>
#include <stdatomic.h>

#include "ncd/perf.h"

struct ncd__rt;
struct ncd__rank;

struct ncd__backend {
    const char *name;
    /* Per process, before the rank threads start (dlopen...).  Writes a
     * description (rt->desc) and the version code (rt->nccl_version).
     * Returns a nccl-tests status (0 ok). */
    int (*open)(struct ncd__rt *rt);
    void (*close)(struct ncd__rt *rt);
    /* Per rank thread: join the job (may call ncd__rt_allgather).  A
     * failed rank_init frees what it made; rank_fini runs only after a
     * successful one. */
    int (*rank_init)(struct ncd__rank *rk);
    void (*rank_fini)(struct ncd__rank *rk);
    /* The rank's device line. */
    void (*describe)(struct ncd__rank *rk, struct ncd_perf_device *d);
    /* Allocates send and recv buffers of `bytes` each (device memory for
     * nccl), returned in rk->send / rk->recv. */
    int (*alloc)(struct ncd__rank *rk, size_t bytes);
    void (*free)(struct ncd__rank *rk);
    /* Starts (nccl: enqueues) one collective; `group` > 1 fuses ops. */
    int (*run_coll)(struct ncd__rank *rk, enum ncd_perf_coll c,
                    enum ncd_perf_dtype t, enum ncd_perf_op op, int root,
                    const void *send, void *recv,
                    const struct ncd_perf_counts *k);
    int (*group_start)(struct ncd__rank *rk);
    int (*group_end)(struct ncd__rank *rk);
    /* Waits until every started collective is done (-T timeout applies). */
    int (*sync)(struct ncd__rank *rk);
    /* Copies between host memory and backend buffers. */
    int (*to_dev)(struct ncd__rank *rk, void *dev, const void *host, size_t n);
    int (*to_host)(struct ncd__rank *rk, void *host, const void *dev, size_t n);
    /* Optional device timer around the timed loop (nccl: CUDA events on
     * the rank's stream).  timer_stop returns the elapsed seconds, or a
     * negative value when the device timer is not usable (the runner then
     * keeps the wall clock). */
    int (*timer_start)(struct ncd__rank *rk);
    double (*timer_stop)(struct ncd__rank *rk);
    /* Optional -I device timing (nccl: CUDA events on the rank's stream):
     * iter_begin prepares n iterations; iter_mark records the start
     * (end 0) or the end (end 1) of iteration i; iter_read waits for the
     * last mark and writes each iteration's seconds into sec[n].
     * iter_begin returns -1 when the device cannot time (the runner then
     * uses the host clock); the others 0 or -1 after ncd__rt_fail(). */
    int (*iter_begin)(struct ncd__rank *rk, int n);
    int (*iter_mark)(struct ncd__rank *rk, int i, int end);
    int (*iter_read)(struct ncd__rank *rk, int n, double *sec);
    /* -M: memory of this rank in bytes: init, user-allocated, collective */
    void (*mem_usage)(struct ncd__rank *rk, uint64_t mem[3]);
};

extern const struct ncd__backend ncd__backend_socket;
extern const struct ncd__backend ncd__backend_nccl;

struct ncd__rt {
    const struct ncd_perf_opts *o;
    const struct ncd_perf_job *job;
    const struct ncd_perf_sink *sink;
    struct ncd_ctx *ctx;
    const struct ncd__backend *be;
    int nlocal, nranks;
    atomic_int abort;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int bar_count;
    unsigned bar_gen;
    char *blob_mine, *blob_all;
    size_t blob_max;
    int status;          /* first failure's nccl-tests status */
    char error[512];     /* first failure's text */
    char quote[512];     /* what nccl-tests would quote ("" = error) */
    int fail_stage;      /* enum ncd_perf_stage of the first failure */
    atomic_int stage;    /* where the rank threads are (ncd__rt_stage) */
    int nccl_version;
    char desc[512];
    void *be_proc;       /* backend's per-process state */
    struct ncd__rank *ranks;
};

struct ncd__rank {
    struct ncd__rt *rt;
    int local, rank;
    pthread_t th;
    struct ncd_ctx *ctx;  /* this thread's own context */
    void *be;             /* backend's per-rank state */
    char *send, *recv;    /* backend buffers (may be device pointers) */
    size_t buflen;
    char *hsend, *hrecv;  /* host copies for init/check (nccl) */
    int status;
    char err[512];
    uint64_t mem[3];      /* -M figures, filled after the sweep */
    double bw_sum;        /* totals of the sweep (same on every rank) */
    int ncells, oob;
};

/* Records the first failure of the process (thread-safe) and aborts: its
 * nccl-tests status and text, at the stage the rank threads are in. */
void ncd__rt_fail(struct ncd__rt *rt, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same at an explicit stage, with the text nccl-tests would quote in
 * its failure line (`quote`, may be NULL: the text itself). */
void ncd__rt_fail_at(struct ncd__rt *rt, enum ncd_perf_stage stage,
                     int status, const char *quote, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* The stage the rank threads enter (enum ncd_perf_stage). */
void ncd__rt_stage(struct ncd__rt *rt, enum ncd_perf_stage stage);

/* Allgather over all ranks of the job: `len` <= rt->blob_max bytes each. */
int ncd__rt_allgather(struct ncd__rank *rk, const void *mine, size_t len,
                      void *all);

/* nccl-tests statuses (src/common.h testResult_t). */
enum {
    NCD_PT_OK = 0,
    NCD_PT_INTERNAL = 1,
    NCD_PT_CUDA = 2,
    NCD_PT_NCCL = 3,
    NCD_PT_TIMEOUT = 4,
    NCD_PT_NOTIMPL = 5,
    NCD_PT_USAGE = 6,
    NCD_PT_WRONG = 7,
};

#endif
