/* SPDX-License-Identifier: MIT */
/**
 * @file tune.h
 * @brief `nccl-doctor tune`: measured A/B of NCCL settings.
 *
 * A set of candidate environments (built from the node, or read from a
 * file) is run under the same `perf` sweep, several repetitions each, and
 * compared with the current environment: median bus bandwidth, spread,
 * ratio, and whether a difference is larger than the noise.
 *
 * Two layers:
 *  - data (candidates, statistics, findings, rendering): pure functions;
 *  - running (section "Running" below): every measurement is a child
 *    `perf ... --json` started with ncd_spawn() (job.h) under the
 *    candidate's environment; several hosts stay in step through the
 *    job's process group.  Nothing here prints: progress goes to a
 *    callback.
 * Bandwidths in GB/s (1e9 B/s).
 */
#ifndef NCD_TUNE_H
#define NCD_TUNE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "ncd/ctx.h"
#include "ncd/finding.h"
#include "ncd/job.h"
#include "ncd/netif.h"
#include "ncd/recommend.h"
#include "ncd/strbuf.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NCD_TUNE_MAX_CANDS 32
#define NCD_TUNE_MAX_VARS 8
#define NCD_TUNE_MAX_RUNS 64
/** Longest name and value of a setting, and longest label (characters);
 *  longer ones are refused, never cut.  A label holds every setting of a
 *  candidate: 8 x (47 + 1 + 255) + 7 < 2560. */
#define NCD_TUNE_NAME_MAX 47
#define NCD_TUNE_VALUE_MAX 255
#define NCD_TUNE_LABEL_MAX 2559
/** Sizes of a sweep kept for `tune --plot` (perf's -b..-e points). */
#define NCD_TUNE_MAX_POINTS 32
/** perf's exit statuses for a bad command line, as nccl-tests'
 *  (src/common.h testInvalidUsage, and 255 for -b > -e): no candidate's
 *  settings cause them. */
#define NCD_TUNE_PERF_USAGE 6
#define NCD_TUNE_PERF_SIZES 255

/** One setting of a candidate. */
struct ncd_tune_var {
    char name[NCD_TUNE_NAME_MAX + 1];
    char value[NCD_TUNE_VALUE_MAX + 1];
    int unset; /**< 1: remove the variable (value ignored) */
};

/** A candidate environment: the current one plus these changes. */
struct ncd_tune_cand {
    char label[NCD_TUNE_LABEL_MAX + 1]; /**< "NCCL_SOCKET_IFNAME==ens3",
                                             "(current)" */
    int nvars;
    struct ncd_tune_var vars[NCD_TUNE_MAX_VARS];
    int baseline;   /**< 1 for the current environment (no changes) */
    char skip[240]; /**< why it cannot change the measurement and is not
                         run (ncd_tune_mark_skips()); "" = run it */
};

/** A list of candidates, baseline first.  Plain data (sent between ranks
 *  as bytes). */
struct ncd_tune_set {
    int n;
    struct ncd_tune_cand c[NCD_TUNE_MAX_CANDS];
};

/** Families of default candidates (bit mask). */
enum {
    NCD_TUNE_IFNAME = 1,  /**< NCCL_SOCKET_IFNAME = each usable interface */
    NCD_TUNE_IB = 2,      /**< NCCL_IB_DISABLE 0/1 when an HCA exists */
    NCD_TUNE_SHM = 4,     /**< NCCL_SHM_DISABLE=1 (intra-node path) */
    NCD_TUNE_SOCKETS = 8, /**< NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD */
    NCD_TUNE_ALL = 15,
};

/**
 * Parses a family list "ifname,ib,shm,sockets" or "all".
 * @return the mask, or NCD_EPARSE for an unknown word.
 */
int ncd_tune_families_parse(const char *s);

/**
 * The default candidates of this node: the current environment first, then
 * per family (see the enum) the settings that differ from the current
 * environment (ctx's NCCL_* variables):
 *  - ifname: NCCL_SOCKET_IFNAME==<if> for every interface nccl-doctor
 *    finds usable (recommend.h rule 1) and, when `common` is given, that
 *    appears in it (names usable on every host of the job); names of
 *    container/VM plumbing (ncd_ifname_is_plumbing(): docker0, virbr0,
 *    veth...) only when no other name is usable; loopback only when
 *    `local_only` (a one-host job);
 *  - ib: NCCL_IB_DISABLE=1 and =0 when the node has RDMA devices;
 *  - shm: NCCL_SHM_DISABLE=1 when `local_only` or several ranks per host;
 *  - sockets: NCCL_SOCKET_NTHREADS/NCCL_NSOCKS_PERTHREAD 2x2 and 4x4
 *    (NCCL caps the product at 64: NCCL src/transport/net_socket.cc).
 * @param common  NUL-separated list of interface names usable on all
 *                hosts, terminated by an empty name; NULL = no filter.
 * @return 0, or NCD_ERANGE when the list is full (the rest is dropped).
 */
int ncd_tune_default_set(struct ncd_ctx *ctx, const struct ncd_netif_list *nl,
                         const struct ncd_recommendation *rec, int families,
                         int local_only, const char *common,
                         struct ncd_tune_set *out);

/**
 * Parses a candidates file: one candidate per line, `[label:] NAME=VALUE
 * ... | -NAME` (a leading '-' unsets NAME), '#' comments, blank lines
 * ignored; values may be quoted with '...' or "...".  The current
 * environment is added first as the baseline.
 * @return 0 or NCD_EPARSE (detail names the line) / NCD_ERANGE (too many
 *         candidates or variables; a label, name or value longer than
 *         NCD_TUNE_LABEL_MAX / _NAME_MAX / _VALUE_MAX: nothing is cut).
 */
int ncd_tune_parse_file(struct ncd_ctx *ctx, const char *buf, size_t len,
                        struct ncd_tune_set *out);

/**
 * What the runs measure, and so which settings can matter: the backend
 * perf runs (ncd_perf_select_backend() of tune's --backend) and whether
 * every rank is on this host.
 */
struct ncd_tune_scope {
    int backend;  /**< enum ncd_perf_backend_kind: SOCKET or NCCL */
    int one_host; /**< every rank on this host (-np, one process, or a
                       launcher that placed every process here) */
};

/**
 * One paragraph saying what the runs measure: with the socket backend,
 * TCP between the ranks (over loopback on one host) exercising only the
 * socket-transport settings NCCL shares with it, not NCCL's GPU path; with
 * nccl, NCCL on the GPUs (on one host P2P/SHM, no network).
 */
void ncd_tune_scope_text(const struct ncd_tune_scope *sc,
                         struct ncd_strbuf *out);

/**
 * Marks the candidates whose settings cannot change what the runs measure
 * (c->skip gets the reason; the baseline is never skipped).  A candidate
 * is skipped when none of its settings can matter:
 *  - NCCL_SOCKET_IFNAME on one host, when the value selects an interface
 *    of `names` (or unsets it): every rank is local, so connections to any
 *    interface's address are routed through loopback; a value selecting
 *    none is kept (the run then fails, as NCCL would);
 *  - socket backend: any other NCCL_* variable (NCCL_TESTS_* excepted)
 *    than the ones it reads (NCCL_SOCKET_IFNAME, NCCL_SOCKET_FAMILY,
 *    NCCL_COMM_ID, NCCL_SOCKET_NTHREADS, NCCL_NSOCKS_PERTHREAD): NCCL_SHM_*,
 *    NCCL_IB_*, NCCL_ALGO... act inside NCCL only;
 *  - nccl backend on one host: network settings (NCCL_IB_*, NCCL_NET_*,
 *    NCCL_SOCKET_NTHREADS, NCCL_NSOCKS_PERTHREAD), since NCCL joins the GPUs
 *    of one host by P2P/SHM, unless the environment or the candidate
 *    disables both P2P and SHM.
 * @param ctx    the current environment (NCCL_P2P_DISABLE, NCCL_SHM_DISABLE).
 * @param names  NUL-separated names of the interfaces NCCL could select
 *               on this host (ncd_tune_usable_names() with loopback),
 *               ended by an empty name; NULL: unknown (NCCL_SOCKET_IFNAME
 *               candidates are then kept).
 * @return the number of candidates skipped.
 */
int ncd_tune_mark_skips(struct ncd_ctx *ctx, struct ncd_tune_set *set,
                        const struct ncd_tune_scope *sc, const char *names);

/**
 * The command that keeps a candidate's settings in a shell rc file, as
 * `nccl-doctor env --write` writes them (the same managed block and value
 * syntax): "nccl-doctor env --write ~/.bashrc --set NAME=VALUE ...
 * --unset NAME", each argument shell-quoted where needed.
 */
void ncd_tune_keep_command(const struct ncd_tune_cand *c,
                           struct ncd_strbuf *out);

/** Measured runs of one candidate. */
struct ncd_tune_runs {
    int n;                              /**< successful runs */
    double busbw[NCD_TUNE_MAX_RUNS];    /**< GB/s, one per run */
    int failed;                         /**< runs that failed */
    char error[256];                    /**< first failure */
    /** busbw against size of each successful run (GB/s; the sizes of
     *  the first run, bytes, in size[]; npts 0 when perf gave none). */
    int npts;
    double size[NCD_TUNE_MAX_POINTS];
    double curve[NCD_TUNE_MAX_RUNS][NCD_TUNE_MAX_POINTS];
};

/** Statistics of one candidate. */
struct ncd_tune_stat {
    double median, min, max; /**< GB/s; 0 when no run succeeded */
    double spread;           /**< (max - min) / median, 0..; 0 when n < 2 */
    double ratio;            /**< median / baseline median; 0 unknown */
    int within_noise;        /**< the ranges [min,max] of this candidate
                                  and the baseline overlap */
    int ok;                  /**< at least one run succeeded */
};

/**
 * Statistics, winner and findings.  The winner is the candidate with the
 * highest median whose range lies entirely above the baseline's (not
 * within noise); -1 means "keep the current settings".
 * @param stats   receives set->n entries.
 * @param interrupted  the measuring was stopped (a signal to tune): no
 *                winner is chosen from the incomplete runs and an info
 *                finding says so instead of the winner's; the runs that
 *                did fail before are still reported.
 * @param out     gets a perf.config finding for the winner (with its env)
 *                or an ok finding when nothing beats the current settings,
 *                and a warning per candidate that failed.
 * @return the winner's index or -1.
 */
int ncd_tune_summarize(const struct ncd_tune_set *set,
                       const struct ncd_tune_runs *runs, int interrupted,
                       struct ncd_tune_stat *stats, struct ncd_findings *out);

/** The candidate's changes as one line "A=x B=y -C" ("(current)"). */
void ncd_tune_cand_str(const struct ncd_tune_cand *c, struct ncd_strbuf *out);

/**
 * JSON: {"candidates":[{"label","env":{NAME:value|null},"runs":[GB/s],
 * "failed","error","skipped":reason|null,"keep_command" (not on the
 * baseline),"median","min","max","spread","ratio","within_noise"}],
 * "winner":label|null,"keep_command":the winner's|null}.
 * New reference, NULL on ENOMEM.
 */
json_t *ncd_tune_json(const struct ncd_tune_set *set,
                      const struct ncd_tune_runs *runs,
                      const struct ncd_tune_stat *stats, int winner);

struct ncd_plot;
/**
 * Adds the candidates to a plot (plot.h): per candidate with measured
 * curves one series, the per-size median over its runs, labelled with the
 * candidate's label, "(current)" for the baseline and "(winner)" for
 * `winner`.  Sets the title.  @return 0 or NCD_ENOMEM.
 */
int ncd_tune_plot(const struct ncd_tune_set *set,
                  const struct ncd_tune_runs *runs, int winner,
                  struct ncd_plot *p);

/**
 * The table as text (GB/s with 4 significant digits).  Labels are never
 * cut: the label column is as wide as the longest label up to 60
 * characters; a longer label takes its own line, the figures follow on
 * the next.  Skipped candidates show "skipped [k]" and the reasons follow
 * the table as numbered notes; a candidate with neither a successful nor
 * a failed run (the measuring was interrupted first) shows "not run".
 */
void ncd_tune_render_text(struct ncd_strbuf *out,
                          const struct ncd_tune_set *set,
                          const struct ncd_tune_runs *runs,
                          const struct ncd_tune_stat *stats, int winner,
                          const char *metric);

/* ------------------------------------------------------------------ */
/* Running                                                             */
/* ------------------------------------------------------------------ */

/** Most arguments handed to perf. */
#define NCD_TUNE_MAX_PERF_ARGS 56

/** How each measurement runs. */
struct ncd_tune_exec {
    const char *self;             /**< the nccl-doctor binary to run as
                                       `perf` ("/proc/self/exe") */
    const char *const *perf_args; /**< perf's arguments (collective and
                                       options), nperf of them */
    int nperf;
    const char *backend;          /**< perf's --backend, or NULL */
    int run_timeout_s;            /**< a run is killed after this */
    int metric_avg;               /**< 1: nccl-tests' average bus bandwidth;
                                       0: busbw at the largest size */
    const atomic_int *cancel;     /**< may be NULL: a non-zero value stops
                                       the running perf and the measuring
                                       (tune sets it from SIGINT/SIGTERM/
                                       SIGHUP); the stopped run counts
                                       against no candidate */
    /** Called after each run (rank 0): candidate label, repetition
     *  (0-based), whether it failed, its busbw.  May be NULL. */
    void (*progress)(void *arg, const char *label, int rep, int failed,
                     double busbw);
    /** Called once on rank 0 when the set is known, before any run (may
     *  be NULL): the runs to come are reps x the candidates not skipped. */
    void (*planned)(void *arg, const struct ncd_tune_set *set, int reps);
    void *progress_arg;
};

/** What one perf run gave (plain data: sent between processes). */
struct ncd_tune_result {
    int32_t status; /**< perf's exit status; -1 killed, timed out,
                         interrupted or unreadable */
    int32_t interrupted; /**< 1: *ex->cancel was set when the run ended
                              (a signal to tune): the run is not counted,
                              its settings are not blamed */
    int32_t npts;   /**< points of the curve below (when its JSON was
                         read) */
    double busbw;   /**< GB/s (when its JSON was read) */
    double size[NCD_TUNE_MAX_POINTS];  /**< bytes, ascending */
    double curve[NCD_TUNE_MAX_POINTS]; /**< busbw at size[i], GB/s */
    char error[200];/**< the first line of perf's error output */
};

/**
 * busbw against size of a `perf --json` document: per size (ascending) the
 * mean of the out-of-place and in-place bus bandwidths of every row of
 * that size.  At most `max` points (the smallest sizes kept).
 * @return the number of points, or NCD_EPARSE with the reason in `err`.
 */
int ncd_tune_perf_curve(const char *json_text, double *size, double *busbw,
                        int max, char *err, size_t errlen);

/**
 * busbw of a `perf --json` document: the mean of the out-of-place and
 * in-place bus bandwidth at the largest size, or (metric_avg) nccl-tests'
 * average_bus_bandwidth.
 * @return 0, or NCD_EPARSE with the reason in `err`.
 */
int ncd_tune_perf_busbw(const char *json_text, int metric_avg, double *out,
                        char *err, size_t errlen);

/**
 * Runs perf once under candidate `c`: `np` > 1 adds -np (one host);
 * `rdv` adds --rendezvous with RANK=`proc` and WORLD_SIZE=`nprocs`;
 * `want_json` reads the bus bandwidth from its --json output.
 */
void ncd_tune_run_perf(struct ncd_ctx *ctx, const struct ncd_tune_exec *ex,
                       const struct ncd_tune_cand *c, int np,
                       const char *rdv, int nprocs, int proc, int want_json,
                       struct ncd_tune_result *out);

/**
 * Every candidate not skipped (c->skip) `reps` times on this host
 * (interleaved, so drift hits all candidates alike); runs[] receives
 * set->n records.  Stops when *ex->cancel becomes non-zero: the run it
 * stopped is not recorded (no candidate is charged with it).  A run that
 * perf ends with NCD_TUNE_PERF_USAGE or NCD_TUNE_PERF_SIZES stops the
 * measurement: perf's options are wrong, not the candidate's settings.
 * @return the number of runs recorded (successful or failed), or
 *         NCD_EUSAGE when perf rejected its options (detail in ctx: the
 *         status and perf's first error line).
 */
int ncd_tune_measure_local(struct ncd_ctx *ctx,
                            const struct ncd_tune_exec *ex,
                            const struct ncd_tune_set *set, int reps, int np,
                            struct ncd_tune_runs *runs);

/**
 * The candidate set: `cands` (a candidates file's text, see
 * ncd_tune_parse_file()), or when NULL the node's defaults
 * (ncd_tune_default_set(); a full list is not an error).
 * @return 0 or NCD_EPARSE / NCD_ERANGE / a probe error (detail in ctx).
 */
int ncd_tune_build_set(struct ncd_ctx *ctx, const char *cands, size_t len,
                       int families, int local_only, const char *common,
                       struct ncd_tune_set *out);

/**
 * Measures on every process of a multi-host job (stopping, on every
 * process alike, after a run that ended on some process while its
 * *ex->cancel was set; that run is not recorded): the interface names
 * usable everywhere are gathered, rank 0 builds the set (from `cands`,
 * read on rank 0 only, or the defaults), marks what cannot matter for
 * `sc` (ncd_tune_mark_skips()) and shares it; then for every
 * repetition and candidate rank 0 picks a free port on its rendezvous
 * host and every process runs its perf child against it.  On rank 0,
 * set and runs[] hold the results (a failure is charged to the first
 * failing rank).
 * A run that perf ends, on any process, with NCD_TUNE_PERF_USAGE or
 * NCD_TUNE_PERF_SIZES stops every process with NCD_EUSAGE (as
 * ncd_tune_measure_local()).
 * @return 0, or NCD_EUSAGE (the job has no TCP rendezvous host: MPI;
 *         perf rejected its options),
 *         the process group's error, or rank 0's set error (on the other
 *         ranks NCD_EINVAL: rank 0 says why).
 */
int ncd_tune_measure_job(struct ncd_ctx *ctx, const struct ncd_tune_exec *ex,
                         const struct ncd_job *job, const char *cands,
                         size_t len, int families, int reps,
                         const struct ncd_tune_scope *sc,
                         struct ncd_tune_set *set, struct ncd_tune_runs *runs);

/**
 * The names of this host's usable interfaces (recommend.h; with
 * `loopback`, also loopback interfaces that have an address: what NCCL
 * could select on a one-host run), NUL-separated and ended by an empty
 * name, within `len` bytes (names that do not fit are left out); "" when
 * the probe fails.  For ncd_tune_mark_skips().
 */
void ncd_tune_usable_names(struct ncd_ctx *ctx, int loopback, char *out,
                           size_t len);

#ifdef __cplusplus
}
#endif
#endif
