/* SPDX-License-Identifier: MIT */
/**
 * @file run.h
 * @brief `nccl-doctor run -- CMD ARGS...`: run a job (torchrun,
 *        paddle.distributed.launch, mpirun, srun, plain python...) with
 *        NCCL's logging on, keep everything it prints in one directory, and
 *        hand that directory to explain when the job fails.
 *
 * Flow:
 *  1. ncd_run_prepare(): resolves CMD through PATH (as execvp would),
 *     detects the launcher from the command words (ncd_run_detect()),
 *     creates the log directory (ncd_run_make_dir()) and computes the
 *     environment changes (ncd_run_env()).  Nothing has run yet.
 *  2. ncd_run_exec(): creates DIR/stdout.log and DIR/stderr.log
 *     (O_CREAT|O_EXCL, mode 600), runs CMD through ncd_spawn() (job.h) in
 *     pass-through mode: its own process group, stdin inherited, stdout and
 *     stderr copied as they arrive to the caller's fds and to the two logs,
 *     the terminal handed over when interactive, SIGINT/SIGTERM/SIGHUP/
 *     SIGQUIT/SIGUSR1/SIGUSR2 forwarded to the group, the group stopped at
 *     the timeout (SIGTERM, SIGKILL 10 s later).  Then writes DIR/run.json
 *     (ncd_run_json(): the command with secrets redacted, the variables
 *     set, the outcome).
 *  3. ncd_run_explain_feed(): feeds DIR's logs (every "*.log" file, in
 *     natural order: NCCL's per-process files and the two stream logs) to
 *     an explain scan (explain.h); the caller reports.
 *
 * The environment: only these variables change, and only when the user set
 * none of the names of a row (facts: NCCL src/debug.cc 2.18-2.29 for the
 * NCCL_DEBUG* parsing, unknown subsystem names are ignored by every
 * version; PyTorch docs torch_nccl_environment_variables (2.2+) and
 * pytorch/pytorch#152563, torchtitan#1748 for the TORCH_FR_* names):
 *  - NCCL_DEBUG=INFO;
 *  - NCCL_DEBUG_SUBSYS=INIT,BOOTSTRAP,ENV,NET,GRAPH (NCCL's default is
 *    INIT,BOOTSTRAP,ENV since 2.2x, INIT,ENV before);
 *  - NCCL_DEBUG_FILE=DIR/nccl.%h.%p.log (NCCL expands %h to the host name
 *    and %p to the pid; it opens the file only at a level above VERSION);
 *  - with a PyTorch launcher: the flight recorder, TORCH_FR_BUFFER_SIZE and
 *    TORCH_NCCL_TRACE_BUFFER_SIZE=2000 (the second is the name up to
 *    PyTorch 2.10, a deprecated alias after), TORCH_NCCL_DUMP_ON_TIMEOUT=1,
 *    TORCH_FR_DUMP_TEMP_FILE and TORCH_NCCL_DEBUG_INFO_TEMP_FILE=
 *    DIR/torch-fr-rank (PyTorch appends the rank).
 * Every other variable is passed on untouched.
 *
 * Files: the directory is created with mode 700 and must be new or empty;
 * run never deletes, truncates or replaces a file: its own files are
 * created with O_EXCL.  Nothing of the environment is written to DIR
 * except the variables above; run.json redacts command arguments whose
 * name contains TOKEN, SECRET, PASSWORD, PASSWD, KEY or CREDENTIAL (the
 * rule of ncd_env_is_secret(), gather.h).
 */
#ifndef NCD_RUN_H
#define NCD_RUN_H

#include <limits.h>
#include <stddef.h>

#include <jansson.h>

#include "ncd/ctx.h"
#include "ncd/explain.h"
#include "ncd/job.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Most environment changes a run makes (see the list above). */
#define NCD_RUN_MAX_VARS 12

/** One variable of the list above. */
struct ncd_run_var {
    const char *name;      /**< static */
    char value[PATH_MAX];  /**< what run sets */
    int kept;              /**< 1: the user set it (or an alias of it):
                                left as the user set it */
};

/** What was decided before the command starts. */
struct ncd_run_plan {
    char *const *argv;       /**< CMD ARGS..., NULL-terminated (not owned) */
    char path[PATH_MAX];     /**< CMD as execve() gets it */
    char dir[PATH_MAX];      /**< the log directory, absolute */
    const char *launcher;    /**< what ncd_run_detect() found (static) */
    int pytorch;             /**< 1: a PyTorch launcher: flight recorder */
    struct ncd_run_var vars[NCD_RUN_MAX_VARS];
    int nvars;
};

/** How to run it. */
struct ncd_run_opts {
    const char *logs;  /**< --logs DIR; NULL = ./nccl-doctor-logs/<time>/ */
    int timeout_s;     /**< --timeout; 0 = none */
    int out_fd;        /**< where the command's stdout goes (normally 1) */
    int err_fd;        /**< where its stderr goes (normally 2) */
    int interactive;   /**< 1: hand the terminal to the command when this
                            process has it (ncd_spawn_opts.foreground) */
};

/** How it ended. */
struct ncd_run_result {
    struct ncd_spawn_result spawn; /**< the child's end (nothing captured) */
    int status;       /**< run's exit status: the command's; 128 + n when
                           signal n killed it; 124 when --timeout stopped
                           it (as timeout(1)) */
    int failed;       /**< 1: non-zero exit, a signal, or the timeout */
    double seconds;   /**< wall time of the command */
    char started[32]; /**< local time "YYYY-MM-DDTHH:MM:SS" */
};

/**
 * Which launcher a command line starts, from its words (a wrapper such as
 * `mpirun -np 2 torchrun ...` is looked through): "torchrun" (also
 * `python -m torch.distributed.run|launch`, accelerate, deepspeed: PyTorch
 * launchers), "paddle.distributed.launch" (also fleetrun), "mpirun"
 * (mpiexec, orterun, prterun), "srun", "python", or "command".
 * @param pytorch  receives 1 for a PyTorch launcher.
 * @return a static name.  Pure.
 */
const char *ncd_run_detect(char *const *argv, int *pytorch);

/**
 * CMD as execvp() would find it: a name with '/' as given, else the first
 * executable regular file in ctx's PATH (default "/usr/bin:/bin").
 * @return 0 with `out` set; NCD_ENOENT (not found: exit status 127) or
 *         NCD_EPERM (found, not executable: 126), detail in ctx.
 */
int ncd_run_resolve_cmd(struct ncd_ctx *ctx, const char *cmd, char *out,
                        size_t len);

/**
 * Creates the log directory.  `asked` NULL: ./nccl-doctor-logs/ (mode 700
 * when created) then a new <YYYYmmdd-HHMMSS> below it, with "-rank<N>"
 * when a launcher gave this process a rank and ".2", ".3"... when that
 * name exists (mkdir is the lock: concurrent runs never share one).
 * `asked` given: created (mode 700, parents as mkdir -p) when missing,
 * used when it is an empty directory, refused otherwise.
 * @return 0 with the absolute path in `out`; NCD_EEXISTS (not empty),
 *         NCD_EINVAL (not a directory), NCD_ESYS (detail in ctx).
 */
int ncd_run_make_dir(struct ncd_ctx *ctx, const char *asked, char *out,
                     size_t len);

/**
 * Fills plan->vars from ctx's environment for plan->dir and
 * plan->pytorch (the list in the file comment).  Pure but for ctx.
 */
void ncd_run_env(struct ncd_ctx *ctx, struct ncd_run_plan *plan);

/**
 * Steps 1 of the flow: resolve, detect, make the directory, environment.
 * @return 0, or the error of ncd_run_resolve_cmd() / ncd_run_make_dir()
 *         (nothing is created when the command is not found).
 */
int ncd_run_prepare(struct ncd_ctx *ctx, char *const *argv,
                    const struct ncd_run_opts *o, struct ncd_run_plan *plan);

/**
 * Step 2: runs the command to its end (see the flow) and writes
 * DIR/run.json.  A log that cannot be written any more (disk full) stops
 * being written; the command goes on and spawn.log_errno says so.
 * @return 0 with *res filled (release with ncd_run_result_release()), or
 *         NCD_EEXISTS (a log file exists), NCD_ESYS / NCD_ENOMEM (detail
 *         in ctx) when the command could not be started.
 */
int ncd_run_exec(struct ncd_ctx *ctx, const struct ncd_run_plan *plan,
                 const struct ncd_run_opts *o, struct ncd_run_result *res);

/** Frees what ncd_run_exec() left in *res. */
void ncd_run_result_release(struct ncd_run_result *res);

/**
 * The record of a run: {"command": [...] (redacted), "path", "launcher",
 * "logs", "env_set": {NAME: value}, "env_kept": [NAME...], "started",
 * "seconds", "exit_status", "end": "exited"|"signaled"|"timed-out",
 * "signal": n|null, "forwarded_signals": n, "log_error": text|null}.
 * `res` may be NULL (before the run: no outcome keys).  New reference;
 * NULL on ENOMEM.
 */
json_t *ncd_run_json(const struct ncd_run_plan *plan,
                     const struct ncd_run_result *res);

/**
 * A command-line word as run.json shows it: "NAME=<redacted>" for
 * NAME=value and --NAME=value words whose NAME is a secret name; the word
 * after an option "--NAME" / "-NAME" with a secret name is "<redacted>"
 * (`after_secret_opt` says the previous word was one); in every other word
 * the credentials of a URL or host spec are masked as ncd_env_redact()
 * (sysops.h) masks them ("https://u:pw@h/x" -> "https://<redacted>@h/x";
 * "<redacted>" when memory runs out).  Writes to `out`.
 * @return 1 when this word is such an option (the next one is redacted).
 */
int ncd_run_redact_word(const char *word, int after_secret_opt, char *out,
                        size_t len);

/**
 * Step 3: feeds every regular "*.log" file of `dir` (natural order) to the
 * scan as its own source (ncd_explain_feed_path()).
 * @return 0, NCD_ENOMEM, or the last input problem's code (reported
 *         through in->problem).
 */
int ncd_run_explain_feed(struct ncd_ctx *ctx, const char *dir,
                         struct ncd_explain *ex,
                         struct ncd_explain_inputs *in);

#ifdef __cplusplus
}
#endif
#endif
