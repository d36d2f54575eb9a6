/* SPDX-License-Identifier: MIT */
/**
 * @file verify.h
 * @brief `nccl-doctor verify`: the verification ladder people walk by hand
 *        (a single card as paddle.utils.run_check() does, `nvidia-smi topo
 *        -m`, all_reduce_perf over the GPUs, then across the nodes) as one
 *        command with one status per step.
 *
 * Steps, in order (each PASS, FAIL or SKIP with a reason, its evidence and
 * the seconds it took):
 *  - "node": the check run (check.h); an error finding fails it.
 *  - "gpu<N>" for each visible GPU: CUDA context, two device buffers, a
 *    one-rank NCCL communicator, an all_reduce of known data compared with
 *    the expected result, teardown.  Without a usable GPU one step "gpu"
 *    fails and says exactly why (ncd_verify_gpu_usable()).
 *  - "topology": the matrix of `nvidia-smi topo -m` (topo.h) and, for each
 *    GPU pair, CUDA's peer access next to the path type; no peer access on
 *    an NV#, PIX or PXB path fails it (ACS or the IOMMU redirect P2P).
 *  - "all-gpus": nccl-tests' all_reduce sweep on the nccl backend over
 *    every GPU in this process (perf.h, ncd_perf_run(); -b 1M -e 1G -f 2,
 *    --full -b 1G -e 4G, sizes clamped to the free GPU memory); wrong
 *    results fail it, and so does a bus bandwidth under opts.min_ratio of
 *    what the slowest path between two GPUs should carry
 *    (ncd_verify_expected(), data/link-bandwidth.yaml).
 *  - "multi-node" (only when a launcher started several processes, job.h):
 *    `probe` between the processes (not with a recorded sysroot: probe
 *    works on this machine's sockets), then the same all_reduce with one GPU
 *    per process; the other nodes' own steps come back as one step each,
 *    "host:<name>".
 * A SKIP never fails the run by itself; a machine without a usable GPU
 * fails at "gpu", so verify is never green there.
 *
 * The CUDA runtime and NCCL are loaded with dlopen through perf's one
 * loader (src/lib/perf/nccl_api.h); nothing is linked.  The GPU steps run
 * on the live machine also when ctx reads a recorded sysroot (then only
 * "node" and the topology's PCI tree come from the recording).
 */
#ifndef NCD_VERIFY_H
#define NCD_VERIFY_H

#include <stddef.h>

#include <jansson.h>

#include "ncd/check.h"
#include "ncd/node.h"
#include "ncd/ctx.h"
#include "ncd/job.h"
#include "ncd/report.h"
#include "ncd/strbuf.h"
#include "ncd/topo.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Steps and the report                                                */
/* ------------------------------------------------------------------ */

enum ncd_verify_status {
    NCD_VERIFY_PASS = 0,
    NCD_VERIFY_FAIL,
    NCD_VERIFY_SKIP,
};

/** "PASS", "FAIL", "SKIP"; static. */
const char *ncd_verify_status_name(enum ncd_verify_status s);

/** One step. */
struct ncd_verify_step {
    char name[48];                 /**< "node", "gpu0", "topology"... */
    enum ncd_verify_status status;
    char reason[1024];             /**< one line */
    double seconds;
    char **evidence;               /**< owned lines, no newline */
    size_t n_evidence;
};

/** The steps run so far, in order. */
struct ncd_verify_report {
    struct ncd_verify_step *steps; /**< owned */
    size_t n, cap;
    double seconds;                /**< all steps */
};

/** Frees the steps.  Safe on a zeroed report. */
void ncd_verify_report_release(struct ncd_verify_report *r);

/** Appends a step (name and status; reason and evidence follow).  NULL
 *  when out of memory. */
struct ncd_verify_step *ncd_verify_add(struct ncd_verify_report *r,
                                       const char *name,
                                       enum ncd_verify_status st);
/** Sets a step's reason (printf). */
void ncd_verify_reason(struct ncd_verify_step *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/** Appends one evidence line (printf; text after a '\n' is dropped).
 *  0 or NCD_ENOMEM. */
int ncd_verify_evidence(struct ncd_verify_step *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/** Appends every line of `text` as evidence. */
int ncd_verify_evidence_lines(struct ncd_verify_step *s, const char *text);

/** Counts of PASS, FAIL, SKIP. */
void ncd_verify_count(const struct ncd_verify_report *r, int *pass,
                      int *fail, int *skip);

/** Exit status when the tool itself failed. */
#define NCD_VERIFY_EXIT_TOOL 3

/** 0 when no step failed, 2 otherwise (the documented exit statuses). */
int ncd_verify_exit_status(const struct ncd_verify_report *r);

/**
 * The report: "[PASS] name  1.2 s  reason" per step, the evidence of
 * failed steps (of every step with `verbose`) indented below it, then one
 * summary line "verify: P passed, F failed, S skipped in T s: PASS|FAIL".
 */
void ncd_verify_text(const struct ncd_verify_report *r, int verbose,
                     const struct ncd_text_style *st, struct ncd_strbuf *out);

/** One step as printed by ncd_verify_text() (for printing as it ends). */
void ncd_verify_step_text(const struct ncd_verify_step *s, int verbose,
                          const struct ncd_text_style *st,
                          struct ncd_strbuf *out);

/** The summary line of ncd_verify_text(). */
void ncd_verify_summary_text(const struct ncd_verify_report *r,
                             struct ncd_strbuf *out);

/**
 * The envelope of report.h (`host` may be NULL) with "steps": [{"name",
 * "status", "reason", "seconds", "evidence": [...]}] and "summary":
 * {"passed", "failed", "skipped", "seconds", "status": "PASS"|"FAIL"}.
 * New reference; NULL on ENOMEM.
 */
json_t *ncd_verify_json(const struct ncd_verify_report *r, const char *host);

/* ------------------------------------------------------------------ */
/* Running the steps                                                   */
/* ------------------------------------------------------------------ */

/** Called after each step, for printing as the run goes. */
typedef void (*ncd_verify_step_fn)(void *arg, const struct ncd_verify_step *s);

/** What to run. */
struct ncd_verify_opts {
    const char *nccl_path;    /**< libnccl.so.2 to load (NULL = default) */
    const char *cudart_path;  /**< libcudart.so to load (NULL = default) */
    size_t minbytes, maxbytes, stepfactor; /**< the sweep (1M, 1G, 2) */
    int iters;                /**< timed iterations per size, -n (20) */
    int warmup_iters;         /**< untimed iterations per size, -w (1) */
    int timeout_s;            /**< bound of every wait on a GPU and of
                                   each exchange between processes (120) */
    double min_ratio;         /**< busbw below this share of the
                                   expectation fails "all-gpus" (0.5) */
    const char *nccl_version; /**< --nccl-version as given ("2.21.5") for
                                   the "node" step's check run, or NULL
                                   (node.h's version policy) */
    int nccl_code;            /**< the version probe predicts (version.h
                                   code; 0 = newest known) */
    const char *nccl_source;  /**< where nccl_code came from, in words */
    ncd_verify_step_fn on_step; /**< may be NULL */
    void *arg;
};

/** Fills the defaults above (no --nccl-version, probe: newest known). */
void ncd_verify_opts_default(struct ncd_verify_opts *o);

/**
 * Runs the steps of this node ("node", "gpu*", "topology", "all-gpus")
 * and appends them to `r`.
 * @return 0 (failures are steps), NCD_ENOMEM.
 */
int ncd_verify_node(struct ncd_ctx *ctx, const struct ncd_verify_opts *o,
                    struct ncd_verify_report *r);

/**
 * A job function (job.h) for a launched verify: local process 0 of each
 * host runs ncd_verify_node(); then every process joins "multi-node";
 * process 0 ends up with the whole report (its node's steps, one
 * "host:<name>" step per other host, "multi-node").  `arg` is a struct
 * ncd_verify_job.  Returns ncd_verify_exit_status() of the whole report
 * (the same on every process), 3 when the tool failed.
 */
struct ncd_verify_job {
    struct ncd_verify_opts o;
    struct ncd_verify_report report; /**< filled on every process; whole
                                          on process 0 */
    int is_root;                     /**< set: this process is 0 */
};
int ncd_verify_job_fn(void *arg, struct ncd_ctx *ctx,
                      const struct ncd_job *job);

/* ------------------------------------------------------------------ */
/* Whether a GPU can be used                                           */
/* ------------------------------------------------------------------ */

/**
 * Loads libnccl.so.2 and libcudart.so and asks for the devices.  On
 * failure `why` starts with one of these keys, then the details:
 *  - "no libnccl: " the library could not be loaded (and where the
 *    dynamic linker looked);
 *  - "no libcudart: " the CUDA runtime could not be loaded;
 *  - "no driver: " cudaGetDeviceCount failed and cudaDriverGetVersion
 *    reports no driver (with whether libcuda.so.1 can be loaded);
 *  - "driver too old: " the driver supports an older CUDA than the
 *    runtime (cudaErrorInsufficientDriver, both versions named);
 *  - "no GPU visible: " no device (cudaErrorNoDevice or a count of 0;
 *    CUDA_VISIBLE_DEVICES named when set);
 *  - "CUDA error: " any other cudaGetDeviceCount error, by name.
 * @param info  receives "NCCL 2.28.9 (path), CUDA runtime 13.0 (path),
 *              driver CUDA 12.4" as far as known.
 * @return the number of devices (> 0), or 0 with `why` set.
 */
int ncd_verify_gpu_usable(struct ncd_ctx *ctx, const char *nccl_path,
                          const char *cudart_path, char *why, size_t whylen,
                          char *info, size_t infolen);

/* ------------------------------------------------------------------ */
/* What the links should carry (data/link-bandwidth.yaml)              */
/* ------------------------------------------------------------------ */

/** The table, loaded from the embedded data file. */
struct ncd_linkbw;

/** @return 0 and *out (free with ncd_linkbw_free()), or NCD_EPARSE /
 *  NCD_ENOMEM (detail in ctx, "data/link-bandwidth.yaml:12:3: ..."). */
int ncd_linkbw_load(struct ncd_ctx *ctx, struct ncd_linkbw **out);
void ncd_linkbw_free(struct ncd_linkbw *lb);

/**
 * Parses a sysfs link speed: "16.0 GT/s PCIe", "8 GT/s", "2.5 GT/s".
 * @return 0 with *gt_s set, -1 for "Unknown" or anything else.  Pure.
 */
int ncd_pcie_speed_parse(const char *s, double *gt_s);

/**
 * Per-direction bandwidth in GB/s of a PCIe link of `width` lanes at
 * `gt_s`, and its generation in *gen (may be NULL).  0 when the rate is
 * not one of the table's.
 */
double ncd_linkbw_pcie(const struct ncd_linkbw *lb, double gt_s, int width,
                       int *gen);

/**
 * Per-direction bandwidth in GB/s of one NVLink of a GPU named `gpu`
 * (NVML or CUDA name), and its NVLink generation in *gen (may be NULL).
 * 0 when no row matches.
 */
double ncd_linkbw_nvlink(const struct ncd_linkbw *lb, const char *gpu,
                         int *gen);

/** The slowest path found between GPUs. */
struct ncd_verify_path {
    int a, b;             /**< CUDA device ordinals */
    enum ncd_link link;   /**< path type */
    int nvlinks;          /**< NVLink count for NCD_LINK_NV */
    double gbps;          /**< what it should carry per direction, GB/s */
    char desc[256];       /**< "GPU0-GPU3 PXB: PCIe 4.0 x8 at 0000:07:00.0"
                               or "GPU0-GPU1 NV12: 12 x NVLink 3 (25 GB/s)" */
};

/**
 * The expectation for an all_reduce over `n` GPUs: the minimum over GPU
 * pairs of what their path should carry.  An NVLink path carries links x
 * the per-link rate of the GPU's family; a PCIe path the slowest link on
 * the way from each GPU up to where the two paths meet (or to the root
 * port), each link at the negotiated rate and width read from
 * <device>/current_link_speed and current_link_width (the maximum seen
 * over `samples` calls of ncd_verify_sample_links(), else the files'
 * values now, else max_link_*).
 * @param topo_of  topology device index of CUDA device i (-1 unknown).
 * @return 0 with *slowest set; NCD_ENOENT with `why` when a GPU is not in
 *         the topology or a link's rate is unknown.
 */
struct ncd_verify_links;
int ncd_verify_expected(struct ncd_ctx *ctx, const struct ncd_topo *t,
                        const struct ncd_linkbw *lb, const int *topo_of,
                        int n, const struct ncd_verify_links *samples,
                        struct ncd_verify_path *slowest, char *why,
                        size_t whylen);

/**
 * Link rates sampled while the GPUs are busy (GPUs lower their PCIe rate
 * when idle): ncd_verify_links_new() for the PCI functions of topology
 * `t`, ncd_verify_sample_links() during the sweep keeps the highest rate
 * and width each function reported.  Reads go through ctx's sysroot.
 */
struct ncd_verify_links *ncd_verify_links_new(const struct ncd_topo *t);
void ncd_verify_sample_links(struct ncd_ctx *ctx, struct ncd_verify_links *l,
                             const struct ncd_topo *t);
void ncd_verify_links_free(struct ncd_verify_links *l);

#ifdef __cplusplus
}
#endif
#endif
