/* SPDX-License-Identifier: MIT */
/*
 * Launcher resolution (include/ncd/job.h): the variables of torchrun,
 * paddle.distributed.launch, Open MPI, MPICH, MVAPICH2 and Slurm, then the
 * plan: fork, TCP rendezvous, MPI or a single process.  Facts:
 * ../shared/reference/ecosystem.md section 2.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncd/error.h"
#include "ncd/job.h"
#include "ncd/sock.h"

/* A whole decimal number 0..1e9: 1 found, 0 unset, NCD_EPARSE garbage. */
static int env_int(struct ncd_ctx *ctx, const char *name, int *out)
{
    const char *v = ncd_getenv(ctx, name);
    if (!v)
        return 0;
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (end == v || *end || errno || x < 0 || x > 1000000000)
        return ncd_fail(ctx, NCD_EPARSE, "%s='%s' is not a number", name, v);
    *out = (int)x;
    return 1;
}

/* Optional variables: a value that is not a number counts as unset. */
static int env_int_opt(struct ncd_ctx *ctx, const char *name, int dflt)
{
    int v = dflt;
    if (env_int(ctx, name, &v) < 0) {
        ncd_ctx_clear_error(ctx);
        return dflt;
    }
    return v;
}

enum master_rule { M_NONE, M_PADDLE, M_SLURM };

struct layout {
    const char *name, *rank, *size, *lrank, *lrank2, *lsize;
    int mpi;
    enum master_rule master;
};

/* First match wins; Slurm twice: the step's task count before the job's. */
static const struct layout layouts[] = {
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", NULL, "LOCAL_WORLD_SIZE",
     0, M_NONE},
    {"paddle", "PADDLE_TRAINER_ID", "PADDLE_TRAINERS_NUM",
     "PADDLE_RANK_IN_NODE", "PADDLE_LOCAL_RANK", "PADDLE_LOCAL_SIZE", 0,
     M_PADDLE},
    {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
     "OMPI_COMM_WORLD_LOCAL_RANK", NULL, "OMPI_COMM_WORLD_LOCAL_SIZE", 1,
     M_NONE},
    {"MPICH", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", NULL,
     "MPI_LOCALNRANKS", 1, M_NONE},
    {"MVAPICH2", "MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE",
     "MV2_COMM_WORLD_LOCAL_RANK", NULL, "MV2_COMM_WORLD_LOCAL_SIZE", 1,
     M_NONE},
    {"Slurm srun", "SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_LOCALID",
     NULL, "SLURM_STEP_TASKS_PER_NODE", 0, M_SLURM},
    {"Slurm srun", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", NULL, NULL,
     0, M_SLURM},
};

static void set_master(struct ncd_launch *l, const char *hp)
{
    char host[256];
    int port;
    if (hp && ncd_sock_split_hostport(hp, host, sizeof host, &port) == 0) {
        snprintf(l->master_addr, sizeof l->master_addr, "%s", host);
        l->master_port = port;
    }
}

/*
 * First host of a Slurm host list ("gpu[07-10,12],login1" -> "gpu07"):
 * the prefix plus the first number of the first bracket, zero padding
 * kept.  Returns 0, or -1 when the list is empty or malformed.
 */
static int slurm_first_host(const char *list, char *out, size_t len)
{
    if (!list || !*list || len < 2)
        return -1;
    size_t n = 0;
    const char *p = list;
    while (*p && *p != ',' && *p != '[' && n + 1 < len)
        out[n++] = *p++;
    if (*p == '[') {
        p++;
        while (*p >= '0' && *p <= '9' && n + 1 < len)
            out[n++] = *p++;
        if (*p != '-' && *p != ',' && *p != ']')
            return -1;
    }
    out[n] = '\0';
    return n ? 0 : -1;
}

static void paddle_master(struct ncd_ctx *ctx, struct ncd_launch *out)
{
    const char *m = ncd_getenv(ctx, "PADDLE_MASTER");
    if (m && *m) {
        set_master(out, m);
        return;
    }
    const char *eps = ncd_getenv(ctx, "PADDLE_TRAINER_ENDPOINTS");
    if (eps && *eps) {
        char first[300];
        snprintf(first, sizeof first, "%s", eps);
        char *comma = strchr(first, ',');
        if (comma)
            *comma = '\0';
        set_master(out, first);
    }
}

/* Rank 0 runs on the first node of the step; the port is derived from the
 * job and step ids so every task agrees without talking. */
static void slurm_master(struct ncd_ctx *ctx, struct ncd_launch *out)
{
    const char *nl = ncd_getenv(ctx, "SLURM_STEP_NODELIST");
    if (!nl || !*nl)
        nl = ncd_getenv(ctx, "SLURM_JOB_NODELIST");
    int job = 0;
    if (slurm_first_host(nl, out->master_addr, sizeof out->master_addr) ==
            0 &&
        env_int(ctx, "SLURM_JOB_ID", &job) == 1) {
        int step = env_int_opt(ctx, "SLURM_STEP_ID", 0);
        out->master_port = 20000 + (job * 7 + step) % 10000;
    } else {
        out->master_addr[0] = '\0';
    }
    ncd_ctx_clear_error(ctx);
}

int ncd_job_detect_launcher(struct ncd_ctx *ctx, struct ncd_launch *out)
{
    memset(out, 0, sizeof *out);
    out->local_rank = out->local_size = -1;
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++) {
        const struct layout *L = &layouts[i];
        int rank = 0, size = 0;
        int a = env_int(ctx, L->rank, &rank);
        if (a < 0)
            return a;
        int b = env_int(ctx, L->size, &size);
        if (b < 0) {
            /* SLURM_STEP_TASKS_PER_NODE-style values are lists */
            if (L->master == M_SLURM) {
                ncd_ctx_clear_error(ctx);
                continue;
            }
            return b;
        }
        if (!a || !b)
            continue;
        if (size < 1 || rank >= size)
            return ncd_fail(ctx, NCD_EPARSE,
                            "%s=%d is out of range for %s=%d", L->rank, rank,
                            L->size, size);
        out->launcher = L->name;
        out->rank = rank;
        out->size = size;
        out->is_mpi = L->mpi;
        out->local_rank = env_int_opt(ctx, L->lrank, -1);
        if (out->local_rank < 0 && L->lrank2)
            out->local_rank = env_int_opt(ctx, L->lrank2, -1);
        if (L->lsize)
            out->local_size = env_int_opt(ctx, L->lsize, -1);
        if (L->master == M_PADDLE)
            paddle_master(ctx, out);
        else if (L->master == M_SLURM)
            slurm_master(ctx, out);
        const char *ma = ncd_getenv(ctx, "MASTER_ADDR");
        int mp = 0;
        if (ma && *ma && env_int(ctx, "MASTER_PORT", &mp) == 1) {
            snprintf(out->master_addr, sizeof out->master_addr, "%s", ma);
            out->master_port = mp;
        }
        ncd_ctx_clear_error(ctx);
        return size > 1 || out->master_port ? 1 : 0;
    }
    return 0;
}

/* WORLD_SIZE and RANK beside --rendezvous when no launcher set them. */
static int world_from_env(struct ncd_ctx *ctx, int *nprocs, int *proc)
{
    const char *ws = ncd_getenv(ctx, "WORLD_SIZE");
    const char *rk = ncd_getenv(ctx, "RANK");
    int n = 1, r = 0;
    int a = env_int(ctx, "WORLD_SIZE", &n);
    int b = env_int(ctx, "RANK", &r);
    ncd_ctx_clear_error(ctx);
    if (a < 0 || b < 0 || n < 1 || r >= n)
        return ncd_fail(ctx, NCD_EUSAGE,
                        "WORLD_SIZE=%s RANK=%s: need 0 <= RANK < WORLD_SIZE",
                        ws ? ws : "(unset)", rk ? rk : "(unset)");
    *nprocs = n;
    *proc = r;
    return 0;
}

int ncd_job_resolve(struct ncd_ctx *ctx, const struct ncd_job_request *req,
                    struct ncd_job_plan *out)
{
    memset(out, 0, sizeof *out);
    int lr = ncd_job_detect_launcher(ctx, &out->env);
    if (lr < 0)
        return lr;
    const struct ncd_launch *ln = &out->env;
    if (req->np > 0 && lr == 1)
        return ncd_fail(ctx, NCD_EUSAGE,
                        "-np %d given, but this process was started by %s as "
                        "rank %d of %d: drop -np",
                        req->np, ln->launcher, ln->rank, ln->size);
    if (req->np > 0 && req->rendezvous)
        return ncd_fail(ctx, NCD_EUSAGE,
                        "-np forks the ranks on this host; --rendezvous joins "
                        "ranks started elsewhere: give one of them");
    if (req->np > 1) {
        out->kind = NCD_JOB_FORK;
        out->launcher = "-np";
        out->nprocs = req->np;
        out->proc = -1;
        return 0;
    }
    if (lr != 1 && !req->rendezvous) {
        out->kind = NCD_JOB_SINGLE;
        out->launcher = "single";
        out->nprocs = 1;
        return 0;
    }
    if (lr == 1 && ln->is_mpi && !req->rendezvous && ncd_pg_mpi_available()) {
        out->kind = NCD_JOB_MPI;
        out->launcher = "MPI";
        out->nprocs = ln->size;
        out->proc = ln->rank;
        return 0;
    }
    out->kind = NCD_JOB_TCP;
    if (req->rendezvous) {
        if (ncd_sock_split_hostport(req->rendezvous, out->rdv_host,
                                    sizeof out->rdv_host, &out->rdv_port))
            return ncd_fail(ctx, NCD_EUSAGE,
                            "--rendezvous takes HOST:PORT, not '%s'",
                            req->rendezvous);
        out->launcher = "--rendezvous";
    } else if (ln->master_addr[0] && ln->master_port) {
        snprintf(out->rdv_host, sizeof out->rdv_host, "%s", ln->master_addr);
        out->rdv_port = ln->master_port;
        if (ncd_getenv(ctx, "TORCHELASTIC_RUN_ID"))
            out->rdv_port = out->rdv_port == 65535 ? 65534 : out->rdv_port + 1;
        out->launcher = ln->launcher;
    } else {
        return ncd_fail(ctx, NCD_EUSAGE,
                        "started by %s as rank %d of %d, but there is no "
                        "rendezvous address: pass --rendezvous HOST:PORT "
                        "(HOST = rank 0's node) or set MASTER_ADDR and "
                        "MASTER_PORT%s",
                        ln->launcher, ln->rank, ln->size,
                        ln->is_mpi ? ", or build with -DNCD_WITH_MPI=ON" : "");
    }
    if (lr == 1) {
        out->nprocs = ln->size;
        out->proc = ln->rank;
        return 0;
    }
    return world_from_env(ctx, &out->nprocs, &out->proc);
}
