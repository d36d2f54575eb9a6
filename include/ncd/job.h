/* SPDX-License-Identifier: MIT */
/**
 * @file job.h
 * @brief The job runner: how every command that starts ranks (perf, probe,
 *        tune; next verify and run) finds its launcher, starts or joins
 *        its processes, and watches them.
 *
 * Flow of a command:
 *  1. ncd_job_resolve(): the launcher, resolved once and validated: -np N
 *     (fork N local ranks), torchrun, Slurm srun, Open MPI, MPICH/Intel
 *     MPI, MVAPICH2 and paddle.distributed.launch variables
 *     (ncd_job_detect_launcher()), --rendezvous HOST:PORT with WORLD_SIZE
 *     and RANK, or MPI.  Every variable is parsed as a whole decimal
 *     number; garbage or a rank out of range is refused with the variable
 *     named.
 *  2. ncd_job_run(): for -np, forks the local ranks (each dies with the
 *     launcher: PR_SET_PDEATHSIG), joins them in a TCP process group on
 *     loopback and watches them: SIGINT, SIGTERM and SIGHUP received by
 *     the launcher are forwarded to every rank; a rank killed by a signal
 *     is reported (pid, ranks, signal); once one rank has failed, ranks
 *     still running after the straggler timeout are killed and reported,
 *     so a hung rank never hangs the launcher.  Otherwise it builds this
 *     process's group (pg.h: TCP rendezvous, MPI, or a single process).
 *     Then it computes where each process sits (ncd_job_locality()) and
 *     runs the command's job function.  It lifts the soft open-files limit
 *     to the hard one first: a rank holds a socket per peer and stream.
 *  3. ncd_spawn(): one child program with extra environment, a timeout,
 *     cancellation and captured output (tune's perf runs).
 *
 * Reporting: the library never prints.  What a launcher must tell the
 * user while it watches forked ranks (a rank killed by a signal, a
 * straggler killed, a rank whose rendezvous failed) is handed to the
 * caller's report callback, one line at a time, without prefix or newline.
 *
 * Facts: launcher variables from ../shared/reference/ecosystem.md section
 * 2 (torchrun, Slurm, Open MPI, MPICH, MVAPICH2, PaddlePaddle docs); the
 * local-rank rule (same host name and boot id) from nccl-tests
 * src/common.cu and os/linux.cc getHostHash (v2.19.6).
 */
#ifndef NCD_JOB_H
#define NCD_JOB_H

#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/types.h>

#include "ncd/ctx.h"
#include "ncd/pg.h"
#include "ncd/readall.h"
#include "ncd/strbuf.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Launchers                                                           */
/* ------------------------------------------------------------------ */

/** A job started by an external launcher, as its variables say. */
struct ncd_launch {
    const char *launcher;  /**< "torchrun", "paddle", "Open MPI", "MPICH",
                                "MVAPICH2", "Slurm srun"; static; NULL
                                when no launcher was found */
    int rank, size;        /**< process index and number of processes */
    int local_rank;        /**< index on this node, -1 when unknown */
    int local_size;        /**< processes on this node, -1 when unknown */
    char master_addr[256]; /**< rendezvous host, "" when the launcher has
                                none (MPI, Slurm without a node list) */
    int master_port;       /**< 0 when unknown */
    int is_mpi;            /**< launched by an MPI launcher */
};

/**
 * Reads the launcher variables from ctx's environment, first match wins:
 *  - torchrun: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
 *    MASTER_ADDR, MASTER_PORT;
 *  - paddle.distributed.launch: PADDLE_TRAINER_ID, PADDLE_TRAINERS_NUM,
 *    PADDLE_RANK_IN_NODE or PADDLE_LOCAL_RANK, PADDLE_LOCAL_SIZE, and
 *    PADDLE_MASTER or the first PADDLE_TRAINER_ENDPOINTS entry;
 *  - Open MPI: OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK,LOCAL_SIZE};
 *  - MPICH / Intel MPI: PMI_RANK, PMI_SIZE, MPI_LOCALRANKID,
 *    MPI_LOCALNRANKS;
 *  - MVAPICH2: MV2_COMM_WORLD_{RANK,SIZE,LOCAL_RANK,LOCAL_SIZE};
 *  - Slurm srun: SLURM_PROCID, SLURM_STEP_NUM_TASKS (else SLURM_NTASKS),
 *    SLURM_LOCALID; the rendezvous host is the first node of
 *    SLURM_STEP_NODELIST (else SLURM_JOB_NODELIST) and the port
 *    20000 + (7 x SLURM_JOB_ID + SLURM_STEP_ID) mod 10000, below Linux's
 *    ephemeral port range, so every task derives the same address.
 * MASTER_ADDR and MASTER_PORT, when both set, override the launcher's
 * rendezvous address.  Rank and size must be whole decimal numbers with
 * 0 <= rank < size; a local rank or local size that is not a number is
 * ignored (-1); SLURM_STEP_TASKS_PER_NODE-style lists are skipped.
 * @return 1 found (a job of several processes, or one with a rendezvous
 *         port), 0 no launcher, NCD_EPARSE when a rank or size variable is
 *         garbage or out of range (the detail names the variable).
 */
int ncd_job_detect_launcher(struct ncd_ctx *ctx, struct ncd_launch *out);

/** Where the job's processes come from. */
enum ncd_job_kind {
    NCD_JOB_SINGLE, /**< one process, nothing to join */
    NCD_JOB_FORK,   /**< -np N: this process forks N local ranks */
    NCD_JOB_TCP,    /**< started elsewhere, TCP rendezvous at host:port */
    NCD_JOB_MPI,    /**< started by an MPI launcher, MPI_COMM_WORLD */
};

/** What the command asks for (its launch options). */
struct ncd_job_request {
    int np;                 /**< -np N; 0 or 1 = not forking */
    const char *rendezvous; /**< --rendezvous HOST:PORT, or NULL */
};

/** The resolved job. */
struct ncd_job_plan {
    enum ncd_job_kind kind;
    const char *launcher;  /**< for reports: "single", "-np", "MPI",
                                "--rendezvous" or ncd_launch.launcher */
    int nprocs;            /**< processes in the job */
    int proc;              /**< this process's index; -1 for FORK (the
                                launcher itself is no rank) */
    char rdv_host[256];    /**< TCP: rank 0's rendezvous host, else "" */
    int rdv_port;          /**< TCP: its port, else 0 */
    struct ncd_launch env; /**< the launcher variables found */
};

/**
 * Resolves the launcher once.  TCP: the address is --rendezvous, else the
 * launcher's (MASTER_ADDR/MASTER_PORT, Paddle's master, Slurm's derived
 * one; under torchrun's agent, TORCHELASTIC_RUN_ID set, MASTER_PORT + 1
 * because the agent's TCPStore holds MASTER_PORT); the size and rank are
 * the launcher's, else WORLD_SIZE (default 1) and RANK (default 0).  MPI
 * is used for an MPI launcher without --rendezvous when this build has
 * MPI (ncd_pg_mpi_available()).
 * @return 0, or NCD_EUSAGE (-np under a launcher, -np with --rendezvous,
 *         a malformed --rendezvous, no rendezvous address, WORLD_SIZE or
 *         RANK wrong) / NCD_EPARSE (a launcher variable is garbage), with
 *         a message for the user in ctx.
 */
int ncd_job_resolve(struct ncd_ctx *ctx, const struct ncd_job_request *req,
                    struct ncd_job_plan *out);

/* ------------------------------------------------------------------ */
/* Running                                                             */
/* ------------------------------------------------------------------ */

/** What the job function learns about its place in the job. */
struct ncd_job {
    const struct ncd_job_plan *plan;
    struct ncd_pg *pg;  /**< this process's group (owned by the runner) */
    int nprocs, proc;   /**< as the group says */
    int local_proc;     /**< index among the processes on this host */
    int all_local;      /**< 1: every process runs on this host in this
                             network namespace (loopback reaches them) */
};

/** The command's work in one process; returns its exit status. */
typedef int (*ncd_job_fn)(void *arg, struct ncd_ctx *ctx,
                          const struct ncd_job *job);

/** Receives one report line (no prefix, no newline). */
typedef void (*ncd_job_report_fn)(void *arg, const char *line);

/** How the runner starts and watches the job. */
struct ncd_job_opts {
    int timeout_ms;       /**< the whole rendezvous wait, and each exchange
                               of the group unless exchange_timeout_ms */
    int exchange_timeout_ms; /**< > 0: each exchange after the rendezvous
                                  (a job whose steps take longer than the
                                  rendezvous may wait); 0 = timeout_ms */
    int ranks_per_proc;   /**< > 0: death reports name the process's ranks
                               "ranks a-b"; 0: they do not */
    int straggler_ms;     /**< -np: once a process has failed, kill those
                               still running after this long; 0 = never */
    int fail_status;      /**< exit status standing for a process killed
                               by a signal or whose rendezvous failed */
    int *argc;            /**< for MPI_Init (may be NULL) */
    char ***argv;
    ncd_job_report_fn report; /**< may be NULL */
    void *report_arg;
};

/** How a job ended. */
struct ncd_job_result {
    int status; /**< the job's exit status: the job function's; for -np,
                     process 0's when non-zero, else the first non-zero
                     status of another process (a death by a signal counts
                     as fail_status), and 128 + signal when the launcher
                     was interrupted */
    int signal; /**< the signal the launcher forwarded, 0 none */
    int error;  /**< NCD_E* when the job could not start in this process
                     (rendezvous failed, fork failed): status is then
                     fail_status and the detail is in ctx */
    int joined; /**< with error: 1 when the group was made and the first
                     exchange (ncd_job_locality()) failed, 0 when joining
                     itself failed */
};

/**
 * Runs `fn` in every process of the job that lives here (see the flow
 * above).  -np: `fn` runs in the forked children, which exit with its
 * status; the caller's process only watches.
 * @return 0 with *res filled (also when the job failed: see res), or
 *         NCD_EINVAL for a bad plan.
 */
int ncd_job_run(struct ncd_ctx *ctx, const struct ncd_job_plan *plan,
                const struct ncd_job_opts *o, ncd_job_fn fn, void *arg,
                struct ncd_job_result *res);

/**
 * Where this process sits: an allgather of (host name and boot id,
 * network namespace) over the group, as nccl-tests computes the local
 * rank.  *local_proc = the processes before this one with the same host
 * and boot id; *all_local = 1 when every process shares both and the
 * network namespace.  One process: 0 and 1 without communication.
 * @return 0, or the allgather's error (detail in ctx).
 */
int ncd_job_locality(struct ncd_ctx *ctx, struct ncd_pg *pg, int *local_proc,
                     int *all_local);

/**
 * Lines saying why the rendezvous of this process failed, for the user:
 * proc 0: "the rendezvous at H:P (process 0) failed: <detail>"; others:
 * "process N cannot reach the rendezvous at H:P: <detail>" then which
 * local interface and address the kernel routes H:P through (or why it
 * cannot).  `detail` is ctx's error detail when NULL.  Lines end in '\n'.
 */
void ncd_job_rdv_report(struct ncd_ctx *ctx, const struct ncd_job_plan *plan,
                        struct ncd_strbuf *out);

/** This host's name cut at the first '.', as NCCL and nccl-tests print
 *  it ("unknown" when gethostname() fails). */
void ncd_job_hostname(char *out, size_t len);

/* ------------------------------------------------------------------ */
/* One child program (tune's perf runs, `run -- CMD`)                  */
/* ------------------------------------------------------------------ */

/** An environment change: set name=value, or unset name (value NULL). */
struct ncd_spawn_var {
    const char *name;
    const char *value;
};

/** What to run. */
struct ncd_spawn_opts {
    const char *path;               /**< program to execve */
    char *const *argv;              /**< NULL-terminated */
    char *const *envp;              /**< base environment; NULL = environ */
    const struct ncd_spawn_var *vars; /**< applied on top, in order */
    int nvars;
    int timeout_ms;                 /**< SIGKILL after this; 0 = none */
    const atomic_int *cancel;       /**< may be NULL: when non-zero, the
                                         child gets SIGTERM, then SIGKILL
                                         1 s later */
    size_t max_output;              /**< bytes kept of stdout and of
                                         stderr each; 0 = 64 MiB */
    /* Pass-through (`nccl-doctor run`); all 0 = capture, as above. */
    int passthrough;    /**< 1: stdin is inherited, and what the child
                             writes on stdout / stderr is copied, chunk by
                             chunk as it arrives (no line buffering), to
                             out_fd / err_fd and to log_out_fd / log_err_fd
                             (each -1 = none); nothing is captured.  A
                             pass-through fd that fails (EPIPE: the reader
                             left) is dropped, the logs go on. */
    int out_fd, err_fd;         /**< passthrough: where the streams go */
    int log_out_fd, log_err_fd; /**< passthrough: copies (log files) */
    int own_group;      /**< 1: the child leads a new process group; the
                             timeout, cancellation and forwarded signals
                             go to the whole group (a launcher's ranks) */
    int forward_signals;/**< 1: SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1
                             and SIGUSR2 reaching this process while the
                             child runs are sent on to it (its group with
                             own_group), each as often as received; ones
                             this process ignores stay ignored.  Not
                             reentrant: one such spawn per process. */
    int foreground;     /**< with own_group, when stdin is this process's
                             controlling terminal and this process is in
                             the terminal's foreground group: the child's
                             group becomes the foreground group while it
                             runs (Ctrl-C reaches it directly; Ctrl-Z stops
                             it and this process, `fg` resumes both), and
                             the terminal is taken back at the end */
    int kill_grace_ms;  /**< at the timeout: SIGTERM, then SIGKILL this
                             long after; 0 = SIGKILL at once */
};

/** How the child ended. */
enum ncd_spawn_end {
    NCD_SPAWN_EXITED,    /**< status = its exit status */
    NCD_SPAWN_SIGNALED,  /**< status = the signal that killed it */
    NCD_SPAWN_TIMED_OUT, /**< killed at the timeout */
    NCD_SPAWN_CANCELLED, /**< stopped because *cancel became non-zero */
};

/** The outcome and the captured output (stdin was /dev/null). */
struct ncd_spawn_result {
    enum ncd_spawn_end end;
    int status;
    pid_t pid;
    struct ncd_rdbuf out; /**< stdout, NUL-terminated (see readall.h) */
    struct ncd_rdbuf err; /**< stderr */
    int forwarded;        /**< signals forwarded (forward_signals) */
    int first_forwarded;  /**< the first of them, 0 none */
    int log_errno;        /**< passthrough: errno of the first failed
                               write to a log fd (that log stops), 0 */
};

/**
 * Runs one child to its end, reading its stdout and stderr through pipes
 * (no temporary files).  Grandchildren that keep the pipes open after the
 * child ends are waited for at most 1 s.  Exec failures show as exit
 * status 127 with the reason on the captured (passthrough: copied)
 * stderr.  The child is execve'd with o->path as given (no PATH search).
 * @return 0 with *r filled (release with ncd_spawn_result_release()), or
 *         NCD_ESYS / NCD_ENOMEM (pipe, fork; detail in ctx).
 */
int ncd_spawn(struct ncd_ctx *ctx, const struct ncd_spawn_opts *o,
              struct ncd_spawn_result *r);

/** Frees the captured output.  Safe on a zeroed result. */
void ncd_spawn_result_release(struct ncd_spawn_result *r);

#ifdef __cplusplus
}
#endif
#endif
