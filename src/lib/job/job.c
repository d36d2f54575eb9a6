/* SPDX-License-Identifier: MIT */
/*
 * The job runner (include/ncd/job.h): builds this process's group for the
 * resolved plan, computes where it sits, runs the job function; -np goes
 * to fork.c.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "job/job_int.h"
#include "ncd/error.h"
#include "ncd/fs.h"
#include "ncd/sock.h"
#include "ncd/sysops.h"

void ncd_job_hostname(char *out, size_t len)
{
    char h[256];
    ncd_sys_live_hostname(h, sizeof h);
    char *dot = strchr(h, '.');
    if (dot)
        *dot = '\0';
    snprintf(out, len, "%s", h);
}

/* What each process publishes to find its neighbours. */
struct place {
    char host[128];  /* host name / boot id (nccl-tests' host hash input) */
    char netns[64];  /* network namespace: does loopback reach everyone? */
};

int ncd_job_locality(struct ncd_ctx *ctx, struct ncd_pg *pg, int *local_proc,
                     int *all_local)
{
    int n = ncd_pg_nprocs(pg), me = ncd_pg_proc(pg);
    *local_proc = 0;
    *all_local = 1;
    if (n <= 1)
        return 0;
    struct place id, *all = malloc(sizeof id * (size_t)n);
    if (!all)
        return NCD_ENOMEM;
    char bid[64] = "", hn[64] = "";
    ncd_sys_live_hostname(hn, sizeof hn);
    if (ncd_fs_read_str(ctx, "/proc/sys/kernel/random/boot_id", bid,
                        sizeof bid) < 0)
        ncd_ctx_clear_error(ctx);
    memset(&id, 0, sizeof id);
    snprintf(id.host, sizeof id.host, "%.63s/%.63s", hn, bid);
    ssize_t nl = readlink("/proc/self/ns/net", id.netns, sizeof id.netns - 1);
    if (nl < 0)
        snprintf(id.netns, sizeof id.netns, "pid-%d", (int)getpid());
    int rc = ncd_pg_allgather(ctx, pg, &id, sizeof id, all);
    if (rc) {
        free(all);
        return rc;
    }
    int same = 1, before = 0;
    for (int p = 0; p < n; p++) {
        all[p].host[sizeof all[p].host - 1] = '\0';
        all[p].netns[sizeof all[p].netns - 1] = '\0';
        int eq = strcmp(all[p].host, id.host) == 0;
        same &= eq && strcmp(all[p].netns, id.netns) == 0;
        if (eq && p < me)
            before++;
    }
    free(all);
    *local_proc = before;
    *all_local = same;
    return 0;
}

void ncd_job_rdv_report(struct ncd_ctx *ctx, const struct ncd_job_plan *plan,
                        struct ncd_strbuf *out)
{
    const char *detail = ncd_ctx_errdetail(ctx);
    char hp[300];
    ncd_sock_hostport_str(plan->rdv_host, plan->rdv_port, hp, sizeof hp);
    if (plan->proc == 0) {
        /* the root is the rendezvous: the others did not reach it */
        ncd_sb_printf(out, "the rendezvous at %s (process 0) failed: %s\n",
                      hp, detail);
        return;
    }
    ncd_sb_printf(out, "process %d cannot reach the rendezvous at %s: %s\n",
                  plan->proc, hp, detail);
    char ifn[32], addr[64], why[256];
    if (ncd_sock_route_to(plan->rdv_host, plan->rdv_port, ifn, sizeof ifn,
                          addr, sizeof addr, why, sizeof why) == 0)
        ncd_sb_printf(out,
                      "process %d tried %s from local interface %s "
                      "(address %s)\n",
                      plan->proc, hp, ifn[0] ? ifn : "?", addr);
    else
        ncd_sb_printf(out, "process %d: %s\n", plan->proc, why);
}

/* This process's group for a TCP, MPI or single-process plan. */
static int join(struct ncd_ctx *ctx, const struct ncd_job_plan *plan,
                const struct ncd_job_opts *o, struct ncd_pg **pg)
{
    switch (plan->kind) {
    case NCD_JOB_MPI:
        return ncd_pg_mpi(ctx, o->argc, o->argv, pg);
    case NCD_JOB_TCP: {
        struct ncd_pg_params pp = {.nprocs = plan->nprocs,
                                   .proc = plan->proc,
                                   .host = plan->rdv_host,
                                   .port = plan->rdv_port,
                                   .listen_fd = -1,
                                   .timeout_ms = o->timeout_ms};
        return ncd_pg_tcp(ctx, &pp, pg);
    }
    default:
        return ncd_pg_single(pg);
    }
}

int ncd_job_run(struct ncd_ctx *ctx, const struct ncd_job_plan *plan,
                const struct ncd_job_opts *o, ncd_job_fn fn, void *arg,
                struct ncd_job_result *res)
{
    memset(res, 0, sizeof *res);
    /* A rank keeps (ranks - 1) x sockets-per-peer connections: lift the
     * soft open-files limit to the hard one. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    if (plan->nprocs < 1 || (plan->kind == NCD_JOB_FORK && plan->nprocs < 2))
        return ncd_fail(ctx, NCD_EINVAL, "a job of %d processes",
                        plan->nprocs);
    if (plan->kind == NCD_JOB_FORK)
        return ncd__job_fork(ctx, plan, o, fn, arg, res);
    struct ncd_pg *pg = NULL;
    int rc = join(ctx, plan, o, &pg);
    if (rc) {
        res->error = rc;
        res->status = o->fail_status;
        return 0;
    }
    ncd_ctx_clear_error(ctx);
    ncd_pg_set_timeout(pg, o->exchange_timeout_ms);
    struct ncd_job job = {.plan = plan,
                          .pg = pg,
                          .nprocs = ncd_pg_nprocs(pg),
                          .proc = ncd_pg_proc(pg)};
    rc = ncd_job_locality(ctx, pg, &job.local_proc, &job.all_local);
    if (rc) {
        ncd_pg_free(pg);
        res->error = rc;
        res->joined = 1;
        res->status = o->fail_status;
        return 0;
    }
    res->status = fn(arg, ctx, &job);
    ncd_pg_free(pg);
    return 0;
}
