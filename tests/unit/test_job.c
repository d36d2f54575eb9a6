/* SPDX-License-Identifier: MIT */
/*
 * The job runner (include/ncd/job.h): the launcher resolution table for
 * every launcher's variables, valid and invalid; forked ranks on a real
 * TCP process group: a rank that dies, a straggler killed after the
 * timeout, signals forwarded from the launcher; ncd_spawn() with output,
 * environment, timeout, cancellation and grandchildren; the grow-buffer
 * reader.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ncd/ctx.h"
#include "ncd/error.h"
#include "ncd/job.h"
#include "ncd/readall.h"
#include "ncd/sock.h"

/* ---- launcher resolution -------------------------------------------- */

struct resolve_case {
    const char *what;
    const char *env[12];
    int np;
    const char *rendezvous;
    int rc;                /* ncd_job_resolve()'s result */
    const char *detail;    /* substring of the error detail (rc != 0) */
    enum ncd_job_kind kind;
    const char *launcher;
    int nprocs, proc, local_rank;
    const char *host;      /* TCP rendezvous host */
    int port;
};

static const struct resolve_case cases[] = {
    {"nothing: one process", {"HOME=/root"}, 0, NULL, 0, NULL,
     NCD_JOB_SINGLE, "single", 1, 0, -1, "", 0},
    {"-np 1 is one process", {NULL}, 1, NULL, 0, NULL, NCD_JOB_SINGLE,
     "single", 1, 0, -1, "", 0},
    {"-np 4 forks", {NULL}, 4, NULL, 0, NULL, NCD_JOB_FORK, "-np", 4, -1,
     -1, "", 0},
    {"torchrun",
     {"RANK=3", "WORLD_SIZE=8", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=4",
      "MASTER_ADDR=node0", "MASTER_PORT=29500"},
     0, NULL, 0, NULL, NCD_JOB_TCP, "torchrun", 8, 3, 1, "node0", 29500},
    {"torchrun's agent holds MASTER_PORT: use the next one",
     {"RANK=1", "WORLD_SIZE=2", "MASTER_ADDR=10.0.0.1", "MASTER_PORT=29500",
      "TORCHELASTIC_RUN_ID=abc"},
     0, NULL, 0, NULL, NCD_JOB_TCP, "torchrun", 2, 1, -1, "10.0.0.1", 29501},
    {"torchrun without MASTER_ADDR: no rendezvous",
     {"RANK=1", "WORLD_SIZE=2"}, 0, NULL, NCD_EUSAGE,
     "no rendezvous address", 0, NULL, 0, 0, 0, NULL, 0},
    {"torchrun with --rendezvous", {"RANK=1", "WORLD_SIZE=2"}, 0,
     "[fd00::1]:4000", 0, NULL, NCD_JOB_TCP, "--rendezvous", 2, 1, -1,
     "fd00::1", 4000},
    {"RANK is garbage", {"RANK=x1", "WORLD_SIZE=2"}, 0, NULL, NCD_EPARSE,
     "RANK='x1' is not a number", 0, NULL, 0, 0, 0, NULL, 0},
    {"RANK with trailing junk", {"RANK=1 ", "WORLD_SIZE=2"}, 0, NULL,
     NCD_EPARSE, "RANK='1 '", 0, NULL, 0, 0, 0, NULL, 0},
    {"RANK negative", {"RANK=-1", "WORLD_SIZE=2"}, 0, NULL, NCD_EPARSE,
     "RANK='-1'", 0, NULL, 0, 0, 0, NULL, 0},
    {"RANK out of range", {"RANK=4", "WORLD_SIZE=2"}, 0, NULL, NCD_EPARSE,
     "RANK=4 is out of range for WORLD_SIZE=2", 0, NULL, 0, 0, 0, NULL, 0},
    {"WORLD_SIZE is garbage", {"RANK=0", "WORLD_SIZE=two"}, 0, NULL,
     NCD_EPARSE, "WORLD_SIZE='two'", 0, NULL, 0, 0, 0, NULL, 0},
    {"LOCAL_RANK garbage is ignored",
     {"RANK=0", "WORLD_SIZE=2", "LOCAL_RANK=zero", "MASTER_ADDR=h",
      "MASTER_PORT=1"},
     0, NULL, 0, NULL, NCD_JOB_TCP, "torchrun", 2, 0, -1, "h", 1},
    {"MASTER_PORT garbage: no rendezvous",
     {"RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=h", "MASTER_PORT=http"}, 0,
     NULL, NCD_EUSAGE, "no rendezvous address", 0, NULL, 0, 0, 0, NULL, 0},
    {"paddle: first trainer endpoint",
     {"PADDLE_TRAINER_ID=0", "PADDLE_TRAINERS_NUM=2", "PADDLE_LOCAL_RANK=0",
      "PADDLE_TRAINER_ENDPOINTS=10.0.0.1:6170,10.0.0.2:6170"},
     0, NULL, 0, NULL, NCD_JOB_TCP, "paddle", 2, 0, 0, "10.0.0.1", 6170},
    {"paddle: PADDLE_MASTER wins, PADDLE_RANK_IN_NODE first",
     {"PADDLE_TRAINER_ID=3", "PADDLE_TRAINERS_NUM=4",
      "PADDLE_RANK_IN_NODE=1", "PADDLE_LOCAL_RANK=7",
      "PADDLE_MASTER=m0:8090", "PADDLE_TRAINER_ENDPOINTS=a:1,b:2"},
     0, NULL, 0, NULL, NCD_JOB_TCP, "paddle", 4, 3, 1, "m0", 8090},
    {"paddle: PADDLE_TRAINERS_NUM garbage",
     {"PADDLE_TRAINER_ID=0", "PADDLE_TRAINERS_NUM=2x"}, 0, NULL, NCD_EPARSE,
     "PADDLE_TRAINERS_NUM='2x'", 0, NULL, 0, 0, 0, NULL, 0},
    {"Open MPI without MASTER_ADDR",
     {"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=2",
      "OMPI_COMM_WORLD_LOCAL_RANK=1"},
     0, NULL, -1 /* MPI or usage: see the test */, NULL, NCD_JOB_MPI, "MPI",
     2, 1, 1, "", 0},
    {"Open MPI with MASTER_ADDR/PORT and --rendezvous",
     {"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=2",
      "MASTER_ADDR=x", "MASTER_PORT=9"},
     0, "10.1.1.1:5000", 0, NULL, NCD_JOB_TCP, "--rendezvous", 2, 1, -1,
     "10.1.1.1", 5000},
    {"Open MPI rank garbage",
     {"OMPI_COMM_WORLD_RANK=one", "OMPI_COMM_WORLD_SIZE=2"}, 0, NULL,
     NCD_EPARSE, "OMPI_COMM_WORLD_RANK='one'", 0, NULL, 0, 0, 0, NULL, 0},
    {"MPICH / Intel MPI with --rendezvous",
     {"PMI_RANK=2", "PMI_SIZE=4", "MPI_LOCALRANKID=0", "MPI_LOCALNRANKS=2"},
     0, "h:7", 0, NULL, NCD_JOB_TCP, "--rendezvous", 4, 2, 0, "h", 7},
    {"MVAPICH2 with --rendezvous",
     {"MV2_COMM_WORLD_RANK=0", "MV2_COMM_WORLD_SIZE=3",
      "MV2_COMM_WORLD_LOCAL_RANK=0"},
     0, "h:8", 0, NULL, NCD_JOB_TCP, "--rendezvous", 3, 0, 0, "h", 8},
    {"Slurm: first node of the job, port from the job and step ids",
     {"SLURM_PROCID=5", "SLURM_NTASKS=16", "SLURM_LOCALID=1",
      "SLURM_JOB_ID=4242", "SLURM_STEP_ID=3",
      "SLURM_JOB_NODELIST=gpu[007-010,012],login1"},
     0, NULL, 0, NULL, NCD_JOB_TCP, "Slurm srun", 16, 5, 1, "gpu007",
     20000 + (4242 * 7 + 3) % 10000},
    {"Slurm: the step's task count and node list before the job's; "
     "MASTER_* override",
     {"SLURM_PROCID=0", "SLURM_STEP_NUM_TASKS=2", "SLURM_NTASKS=8",
      "SLURM_JOB_ID=1", "SLURM_STEP_NODELIST=nodeA,nodeB",
      "MASTER_ADDR=10.0.0.9", "MASTER_PORT=1234"},
     0, NULL, 0, NULL, NCD_JOB_TCP, "Slurm srun", 2, 0, -1, "10.0.0.9",
     1234},
    {"Slurm: SLURM_STEP_NUM_TASKS not a number, SLURM_NTASKS used",
     {"SLURM_PROCID=1", "SLURM_STEP_NUM_TASKS=2(x2)", "SLURM_NTASKS=4",
      "SLURM_JOB_ID=10", "SLURM_STEP_NODELIST=n[1-4]"},
     0, NULL, 0, NULL, NCD_JOB_TCP, "Slurm srun", 4, 1, -1, "n1",
     20000 + 70},
    {"Slurm: malformed node list, no rendezvous",
     {"SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_JOB_ID=10",
      "SLURM_JOB_NODELIST=n[x]"},
     0, NULL, NCD_EUSAGE, "no rendezvous address", 0, NULL, 0, 0, 0, NULL,
     0},
    {"Slurm: SLURM_PROCID garbage", {"SLURM_PROCID=a", "SLURM_NTASKS=2"}, 0,
     NULL, NCD_EPARSE, "SLURM_PROCID='a'", 0, NULL, 0, 0, 0, NULL, 0},
    {"--rendezvous with WORLD_SIZE and RANK unset: one process", {NULL}, 0,
     "127.0.0.1:29500", 0, NULL, NCD_JOB_TCP, "--rendezvous", 1, 0, -1,
     "127.0.0.1", 29500},
    {"--rendezvous with WORLD_SIZE=1", {"WORLD_SIZE=1", "RANK=0"}, 0,
     "h:1", 0, NULL, NCD_JOB_TCP, "--rendezvous", 1, 0, -1, "h", 1},
    {"--rendezvous with only WORLD_SIZE: rank 0",
     {"WORLD_SIZE=3"}, 0, "h:2", 0, NULL, NCD_JOB_TCP, "--rendezvous", 3, 0,
     -1, "h", 2},
    {"--rendezvous: RANK beyond WORLD_SIZE", {"WORLD_SIZE=1", "RANK=1"}, 0,
     "h:2", NCD_EPARSE, "RANK=1 is out of range", 0, NULL, 0, 0, 0, NULL,
     0},
    {"--rendezvous: WORLD_SIZE=0", {"WORLD_SIZE=0"}, 0, "h:2", NCD_EUSAGE,
     "need 0 <= RANK < WORLD_SIZE", 0, NULL, 0, 0, 0, NULL, 0},
    {"--rendezvous: RANK garbage without WORLD_SIZE", {"RANK=zero"}, 0,
     "h:2", NCD_EPARSE, "RANK='zero'", 0, NULL, 0, 0, 0, NULL, 0},
    {"--rendezvous without a port", {NULL}, 0, "nocolon", NCD_EUSAGE,
     "--rendezvous takes HOST:PORT, not 'nocolon'", 0, NULL, 0, 0, 0, NULL,
     0},
    {"--rendezvous with port 0", {NULL}, 0, "h:0", NCD_EUSAGE, "HOST:PORT",
     0, NULL, 0, 0, 0, NULL, 0},
    {"--rendezvous with port 70000", {NULL}, 0, "h:70000", NCD_EUSAGE,
     "HOST:PORT", 0, NULL, 0, 0, 0, NULL, 0},
    {"-np under a launcher", {"RANK=1", "WORLD_SIZE=2"}, 2, NULL, NCD_EUSAGE,
     "started by torchrun as rank 1 of 2: drop -np", 0, NULL, 0, 0, 0, NULL,
     0},
    {"-np with --rendezvous", {NULL}, 2, "h:1", NCD_EUSAGE,
     "give one of them", 0, NULL, 0, 0, 0, NULL, 0},
};

static void test_resolve_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct resolve_case *t = &cases[i];
        struct ncd_ctx *ctx;
        assert_int_equal(ncd_ctx_new(NULL, (char *const *)t->env, &ctx), 0);
        struct ncd_job_request req = {.np = t->np,
                                      .rendezvous = t->rendezvous};
        struct ncd_job_plan plan;
        int rc = ncd_job_resolve(ctx, &req, &plan);
        int want = t->rc;
        if (want == -1) /* an MPI launcher: MPI when built with it */
            want = ncd_pg_mpi_available() ? 0 : NCD_EUSAGE;
        if (rc != want)
            fail_msg("case %zu (%s): rc %d, want %d (%s)", i, t->what, rc,
                     want, ncd_ctx_errdetail(ctx));
        if (rc) {
            const char *d = t->detail ? t->detail : "MPI";
            if (!strstr(ncd_ctx_errdetail(ctx), d))
                fail_msg("case %zu (%s): detail '%s' lacks '%s'", i, t->what,
                         ncd_ctx_errdetail(ctx), d);
            ncd_ctx_free(ctx);
            continue;
        }
        if (plan.kind != t->kind || strcmp(plan.launcher, t->launcher) ||
            plan.nprocs != t->nprocs || plan.proc != t->proc ||
            plan.env.local_rank != t->local_rank ||
            strcmp(plan.rdv_host, t->host) || plan.rdv_port != t->port)
            fail_msg("case %zu (%s): kind %d launcher %s nprocs %d proc %d "
                     "local %d rdv %s:%d",
                     i, t->what, plan.kind, plan.launcher, plan.nprocs,
                     plan.proc, plan.env.local_rank, plan.rdv_host,
                     plan.rdv_port);
        ncd_ctx_free(ctx);
    }
}

static void test_hostport(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        int rc;
        const char *host;
        int port;
    } hp[] = {
        {"[fe80::1]:99", 0, "fe80::1", 99},
        {"node1:29500", 0, "node1", 29500},
        {"10.0.0.1:65535", 0, "10.0.0.1", 65535},
        {"fd00::1:80", 0, "fd00::1", 80}, /* last colon splits */
        {"host:0", NCD_EINVAL, NULL, 0},
        {"host:", NCD_EINVAL, NULL, 0},
        {"host:12a", NCD_EINVAL, NULL, 0},
        {":80", NCD_EINVAL, NULL, 0},
        {"host", NCD_EINVAL, NULL, 0},
        {"[::1]80", NCD_EINVAL, NULL, 0},
    };
    for (size_t i = 0; i < sizeof hp / sizeof hp[0]; i++) {
        char h[64] = "";
        int port = 0;
        int rc = ncd_sock_split_hostport(hp[i].in, h, sizeof h, &port);
        if (rc != hp[i].rc || (!rc && (strcmp(h, hp[i].host) ||
                                       port != hp[i].port)))
            fail_msg("'%s': rc %d host '%s' port %d", hp[i].in, rc, h, port);
    }
    char out[64];
    ncd_sock_hostport_str("fd00::2", 41000, out, sizeof out);
    assert_string_equal(out, "[fd00::2]:41000");
    ncd_sock_hostport_str("10.0.0.2", 41000, out, sizeof out);
    assert_string_equal(out, "10.0.0.2:41000");
}

/* ---- forked ranks ------------------------------------------------------ */

struct reports {
    char text[4096];
};

static void collect(void *arg, const char *line)
{
    struct reports *r = arg;
    size_t n = strlen(r->text);
    snprintf(r->text + n, sizeof r->text - n, "%s\n", line);
}

static double now_s(void)
{
    return ncd_sock_now();
}

struct forkcase {
    int die;         /* proc that kills itself with SIGKILL, -1 none */
    int exit_code;   /* proc 0 exits with this ... */
    int hang;        /* ... while proc `hang` never returns, -1 none */
};

/* Joins the group's barrier (the processes really talk), then acts. */
static int rank_fn(void *arg, struct ncd_ctx *ctx, const struct ncd_job *job)
{
    const struct forkcase *fc = arg;
    if (ncd_pg_barrier(ctx, job->pg))
        return 3;
    if (job->proc == fc->die)
        raise(SIGKILL);
    if (job->proc == fc->hang)
        for (;;)
            pause();
    if (job->proc == 0 && fc->exit_code)
        return fc->exit_code;
    /* the survivors wait for the others, who may never come */
    return ncd_pg_barrier(ctx, job->pg) ? 3 : 0;
}

static void run_forked(const struct forkcase *fc, int np, int straggler_ms,
                       struct ncd_job_result *res, struct reports *rep)
{
    struct ncd_ctx *ctx;
    assert_int_equal(ncd_ctx_new(NULL, NULL, &ctx), 0);
    struct ncd_job_plan plan = {.kind = NCD_JOB_FORK,
                                .launcher = "-np",
                                .nprocs = np,
                                .proc = -1};
    struct ncd_job_opts o = {.timeout_ms = 20000,
                             .ranks_per_proc = 1,
                             .straggler_ms = straggler_ms,
                             .fail_status = 3,
                             .report = collect,
                             .report_arg = rep};
    memset(rep, 0, sizeof *rep);
    assert_int_equal(ncd_job_run(ctx, &plan, &o, rank_fn, (void *)fc, res),
                     0);
    ncd_ctx_free(ctx);
}

static void test_fork_all_ok(void **state)
{
    (void)state;
    struct forkcase fc = {.die = -1, .exit_code = 0, .hang = -1};
    struct ncd_job_result res;
    struct reports rep;
    run_forked(&fc, 3, 5000, &res, &rep);
    assert_int_equal(res.error, 0);
    assert_int_equal(res.status, 0);
    assert_string_equal(rep.text, "");
}

static void test_fork_rank_dies(void **state)
{
    (void)state;
    struct forkcase fc = {.die = 1, .exit_code = 0, .hang = -1};
    struct ncd_job_result res;
    struct reports rep;
    double t0 = now_s();
    run_forked(&fc, 3, 5000, &res, &rep);
    /* the others lose process 1 at their next exchange and fail; the death
     * itself is reported with the process's ranks and signal */
    assert_int_equal(res.status, 3);
    assert_int_equal(res.signal, 0);
    assert_true(now_s() - t0 < 15.0); /* not the 20 s timeout */
    if (!strstr(rep.text, "process 1 (pid ") ||
        !strstr(rep.text, ", ranks 1-1) was killed by signal 9"))
        fail_msg("report: %s", rep.text);
}

static void test_fork_straggler_killed(void **state)
{
    (void)state;
    /* process 0 fails at once; process 1 hangs for ever */
    struct forkcase fc = {.die = -1, .exit_code = 5, .hang = 1};
    struct ncd_job_result res;
    struct reports rep;
    double t0 = now_s();
    run_forked(&fc, 2, 600, &res, &rep);
    double took = now_s() - t0;
    assert_int_equal(res.status, 5); /* process 0's status */
    if (took < 0.5 || took > 15.0) /* the peer timeout is 20 s */
        fail_msg("straggler killed after %.2f s (timeout 0.6 s)", took);
    if (!strstr(rep.text, "process 1 (pid ") ||
        !strstr(rep.text, "did not stop 0 s after another process failed; "
                          "killing it") ||
        !strstr(rep.text, "was killed by signal 9"))
        fail_msg("report: %s", rep.text);
}

/* The launcher in its own process: ranks tell the test they are ready. */
static int ready_fd = -1;

static int waiting_rank(void *arg, struct ncd_ctx *ctx,
                        const struct ncd_job *job)
{
    (void)arg;
    if (ncd_pg_barrier(ctx, job->pg)) /* all three are in the group */
        return 3;
    char line[32];
    int n = snprintf(line, sizeof line, "%d\n", (int)getpid());
    if (write(ready_fd, line, (size_t)n) != n)
        return 3;
    for (;;)
        pause();
}

static void test_fork_signal_forwarded(void **state)
{
    (void)state;
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t launcher = fork();
    assert_true(launcher >= 0);
    if (launcher == 0) {
        close(p[0]);
        ready_fd = p[1];
        struct ncd_ctx *ctx;
        if (ncd_ctx_new(NULL, NULL, &ctx))
            _exit(99);
        struct ncd_job_plan plan = {.kind = NCD_JOB_FORK,
                                    .launcher = "-np",
                                    .nprocs = 3,
                                    .proc = -1};
        struct ncd_job_opts o = {.timeout_ms = 20000, .fail_status = 3};
        struct ncd_job_result res;
        ncd_job_run(ctx, &plan, &o, waiting_rank, NULL, &res);
        _exit(res.status);
    }
    close(p[1]);
    /* three ranks report their pids once the group is up */
    FILE *f = fdopen(p[0], "r");
    int pids[3], n = 0;
    while (n < 3 && fscanf(f, "%d", &pids[n]) == 1)
        n++;
    assert_int_equal(n, 3);
    double t0 = now_s();
    kill(launcher, SIGTERM);
    int ws = 0;
    assert_int_equal(waitpid(launcher, &ws, 0), launcher);
    double took = now_s() - t0;
    fclose(f);
    /* forwarded: every rank ended, the launcher exits 128 + SIGTERM */
    assert_true(WIFEXITED(ws));
    assert_int_equal(WEXITSTATUS(ws), 128 + SIGTERM);
    if (took > 10.0) /* not the 20 s timeout: the ranks were signalled */
        fail_msg("launcher took %.2f s to stop after SIGTERM", took);
    for (int i = 0; i < 3; i++)
        if (kill(pids[i], 0) == 0 || errno != ESRCH)
            fail_msg("rank pid %d still exists", pids[i]);
}

static void test_tcp_rendezvous_failure(void **state)
{
    (void)state;
    /* nobody listens: the runner reports NCD_E*, the report says where */
    int port = ncd_sock_free_port("127.0.0.1");
    assert_true(port > 0);
    struct ncd_ctx *ctx;
    assert_int_equal(ncd_ctx_new(NULL, NULL, &ctx), 0);
    struct ncd_job_plan plan = {.kind = NCD_JOB_TCP,
                                .launcher = "--rendezvous",
                                .nprocs = 2,
                                .proc = 1,
                                .rdv_host = "127.0.0.1",
                                .rdv_port = port};
    struct ncd_job_opts o = {.timeout_ms = 400, .fail_status = 3};
    struct ncd_job_result res;
    assert_int_equal(ncd_job_run(ctx, &plan, &o, rank_fn, NULL, &res), 0);
    assert_int_not_equal(res.error, 0);
    assert_int_equal(res.status, 3);
    struct ncd_strbuf sb = {0};
    ncd_job_rdv_report(ctx, &plan, &sb);
    char want[96];
    snprintf(want, sizeof want,
             "process 1 cannot reach the rendezvous at 127.0.0.1:%d: ", port);
    if (!strstr(ncd_sb_str(&sb), want) ||
        !strstr(ncd_sb_str(&sb), "from local interface lo (address "
                                 "127.0.0.1)"))
        fail_msg("report: %s", ncd_sb_str(&sb));
    ncd_sb_release(&sb);
    ncd_ctx_free(ctx);
}

/* ---- spawn --------------------------------------------------------------- */

static struct ncd_spawn_result spawn_sh(const char *script, int timeout_ms,
                                        const atomic_int *cancel,
                                        const struct ncd_spawn_var *vars,
                                        int nvars, size_t max)
{
    char *argv[] = {"sh", "-c", (char *)script, NULL};
    char *envp[] = {"PATH=/usr/bin:/bin", "BAR=x", NULL};
    struct ncd_spawn_opts o = {.path = "/bin/sh",
                               .argv = argv,
                               .envp = envp,
                               .vars = vars,
                               .nvars = nvars,
                               .timeout_ms = timeout_ms,
                               .cancel = cancel,
                               .max_output = max};
    struct ncd_ctx *ctx;
    assert_int_equal(ncd_ctx_new(NULL, NULL, &ctx), 0);
    struct ncd_spawn_result r;
    assert_int_equal(ncd_spawn(ctx, &o, &r), 0);
    ncd_ctx_free(ctx);
    return r;
}

static void test_spawn_output_env(void **state)
{
    (void)state;
    struct ncd_spawn_var vars[] = {{"FOO", "1 2"}, {"BAR", NULL}};
    struct ncd_spawn_result r =
        spawn_sh("echo \"out $FOO ${BAR-unset}\"; echo err >&2; "
                 "cat; exit 3",
                 5000, NULL, vars, 2, 0);
    assert_int_equal(r.end, NCD_SPAWN_EXITED);
    assert_int_equal(r.status, 3);
    assert_string_equal(r.out.data, "out 1 2 unset\n"); /* stdin: empty */
    assert_string_equal(r.err.data, "err\n");
    ncd_spawn_result_release(&r);

    r = spawn_sh("exec /nonexistent/prog", 5000, NULL, NULL, 0, 0);
    assert_int_equal(r.end, NCD_SPAWN_EXITED);
    assert_int_not_equal(r.status, 0);
    ncd_spawn_result_release(&r);

    char *argv[] = {"x", NULL};
    struct ncd_spawn_opts o = {.path = "/nonexistent/prog", .argv = argv};
    struct ncd_ctx *ctx;
    assert_int_equal(ncd_ctx_new(NULL, NULL, &ctx), 0);
    assert_int_equal(ncd_spawn(ctx, &o, &r), 0);
    assert_int_equal(r.status, 127);
    assert_non_null(strstr(r.err.data, "cannot run /nonexistent/prog"));
    ncd_spawn_result_release(&r);
    ncd_ctx_free(ctx);
}

static void test_spawn_timeout_signal_cap(void **state)
{
    (void)state;
    double t0 = now_s();
    struct ncd_spawn_result r = spawn_sh("sleep 20", 300, NULL, NULL, 0, 0);
    assert_int_equal(r.end, NCD_SPAWN_TIMED_OUT);
    assert_int_equal(r.status, SIGKILL);
    assert_true(now_s() - t0 < 10.0);
    ncd_spawn_result_release(&r);

    r = spawn_sh("kill -9 $$", 5000, NULL, NULL, 0, 0);
    assert_int_equal(r.end, NCD_SPAWN_SIGNALED);
    assert_int_equal(r.status, SIGKILL);
    ncd_spawn_result_release(&r);

    /* a grandchild holding the pipes is not waited for beyond 1 s */
    t0 = now_s();
    r = spawn_sh("sleep 6 & echo hi", 30000, NULL, NULL, 0, 0);
    assert_int_equal(r.end, NCD_SPAWN_EXITED);
    assert_string_equal(r.out.data, "hi\n");
    assert_true(now_s() - t0 < 5.0); /* the grandchild sleeps 6 s */
    ncd_spawn_result_release(&r);

    /* output beyond the cap is drained and dropped */
    r = spawn_sh("i=0; while [ $i -lt 2000 ]; do echo 0123456789; "
                 "i=$((i+1)); done",
                 20000, NULL, NULL, 0, 100);
    assert_int_equal(r.end, NCD_SPAWN_EXITED);
    assert_int_equal(r.status, 0);
    assert_int_equal(r.out.len, 100);
    assert_int_equal(r.out.truncated, 1);
    ncd_spawn_result_release(&r);
}

static void *set_later(void *arg)
{
    usleep(200000);
    atomic_store((atomic_int *)arg, 1);
    return NULL;
}

static void test_spawn_cancel(void **state)
{
    (void)state;
    atomic_int cancel = 0;
    pthread_t t;
    pthread_create(&t, NULL, set_later, &cancel);
    double t0 = now_s();
    struct ncd_spawn_result r = spawn_sh("sleep 20", 0, &cancel, NULL, 0, 0);
    pthread_join(t, NULL);
    assert_int_equal(r.end, NCD_SPAWN_CANCELLED);
    assert_int_equal(r.status, SIGTERM);
    assert_true(now_s() - t0 < 10.0);
    ncd_spawn_result_release(&r);
    /* a child that ignores SIGTERM is killed a second later (cancelled
     * once the shell has set its trap) */
    atomic_store(&cancel, 0);
    pthread_create(&t, NULL, set_later, &cancel);
    r = spawn_sh("trap '' TERM; sleep 4", 0, &cancel, NULL, 0, 0);
    pthread_join(t, NULL);
    assert_int_equal(r.end, NCD_SPAWN_CANCELLED);
    assert_int_equal(r.status, SIGKILL);
    ncd_spawn_result_release(&r);
}

/* ---- grow-buffer reader ------------------------------------------------ */

static void test_readall(void **state)
{
    (void)state;
    char path[] = "/tmp/ncd-test-readall.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    struct ncd_rdbuf b = {0};
    assert_int_equal(ncd_read_file(path, &b), 0);
    assert_non_null(b.data);
    assert_string_equal(b.data, ""); /* empty file: "" */
    assert_int_equal(b.len, 0);
    ncd_rdbuf_release(&b);
    static char big[100000];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (char)('a' + i % 26);
    assert_int_equal(write(fd, big, sizeof big), (ssize_t)sizeof big);
    close(fd);
    assert_int_equal(ncd_read_file(path, &b), 0);
    assert_int_equal(b.len, sizeof big);
    assert_memory_equal(b.data, big, sizeof big);
    assert_int_equal(b.data[b.len], '\0');
    assert_int_equal(b.truncated, 0);
    ncd_rdbuf_release(&b);
    b.max = 5000;
    assert_int_equal(ncd_read_file(path, &b), 0);
    assert_int_equal(b.len, 5000);
    assert_int_equal(b.truncated, 1);
    ncd_rdbuf_release(&b);
    unlink(path);
    errno = 0;
    assert_int_equal(ncd_read_file(path, &b), -1);
    assert_int_equal(errno, ENOENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resolve_table),
        cmocka_unit_test(test_hostport),
        cmocka_unit_test(test_fork_all_ok),
        cmocka_unit_test(test_fork_rank_dies),
        cmocka_unit_test(test_fork_straggler_killed),
        cmocka_unit_test(test_fork_signal_forwarded),
        cmocka_unit_test(test_tcp_rendezvous_failure),
        cmocka_unit_test(test_spawn_output_env),
        cmocka_unit_test(test_spawn_timeout_signal_cap),
        cmocka_unit_test(test_spawn_cancel),
        cmocka_unit_test(test_readall),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
