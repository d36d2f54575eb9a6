/* SPDX-License-Identifier: MIT */
/*
 * How `probe` and `tune` start a job of N processes, like `perf`: -np N
 * (fork on this host), an external launcher (torchrun, Paddle, mpirun,
 * srun: ncd_perf_detect_launcher()), MPI, or --rendezvous HOST:PORT with
 * WORLD_SIZE and RANK.  The process group comes from perf.h.
 */
#ifndef NCD_CLI_LAUNCH_H
#define NCD_CLI_LAUNCH_H

#include "ncd/ctx.h"
#include "ncd/perf.h"

struct cli_launch {
    const char *cmd;        /* "probe", for messages */
    int np;                 /* -np N (0 = not given) */
    const char *rendezvous; /* --rendezvous HOST:PORT or NULL */
    int timeout_ms;         /* rendezvous and each exchange */
    int *argc;              /* for MPI_Init */
    char ***argv;
};

/* What the job function learns about its place in the job. */
struct cli_job {
    struct ncd_pg *pg;
    int nprocs, proc, local_proc;
    const char *launcher;   /* "-np", "torchrun", "--rendezvous"... */
    char rdv_host[256];     /* rendezvous host ("" for -np/MPI/single) */
    int rdv_port;
};

typedef int (*cli_job_fn)(void *arg, struct ncd_ctx *ctx,
                          const struct cli_job *job);

/*
 * Starts the job and runs `fn` in every process of it on this host.
 * -np N: forks N children (each runs fn; the parent waits, reports a child
 * killed by a signal, and returns process 0's status, or 3 when a process
 * died).  On a rendezvous failure prints which address was tried and the
 * local interface that leads there, and returns 3.
 */
int cli_launch_run(struct ncd_ctx *ctx, const struct cli_launch *L,
                   cli_job_fn fn, void *arg);

#endif
