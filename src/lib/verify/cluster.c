/* SPDX-License-Identifier: MIT */
/*
 * verify across nodes (include/ncd/verify.h, ncd_verify_job_fn): local
 * process 0 of every host verifies its node, the hosts' results come back
 * to process 0, then every process takes part in "multi-node": probe
 * (probe.h) and the all_reduce sweep with one GPU per process.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncd/error.h"
#include "ncd/pg.h"
#include "ncd/probe.h"
#include "ncd/sysops.h"
#include "verify/verify_int.h"

/* What each process tells process 0 about its node's steps. */
struct host_summary {
    char host[64];
    int32_t ran;      /* 1: this process verified its node */
    int32_t failed;   /* steps that failed */
    int32_t total;
    char fails[1400]; /* "gpu1: reason; all-gpus: reason" */
};

/* What each process knows before the multi-node sweep. */
struct gpu_state {
    int32_t usable;
    uint64_t free_bytes;
    char host[64];
    char why[200];
};

static int pg_ag(void *arg, const void *mine, size_t len, void *all)
{
    void **a = arg;
    return ncd_pg_allgather(a[0], a[1], mine, len, all);
}

static void summarize(const struct ncd_verify_report *r, int ran,
                      struct host_summary *h)
{
    memset(h, 0, sizeof *h);
    ncd_job_hostname(h->host, sizeof h->host);
    h->ran = ran;
    size_t off = 0;
    for (size_t i = 0; i < r->n; i++) {
        h->total++;
        if (r->steps[i].status != NCD_VERIFY_FAIL)
            continue;
        h->failed++;
        if (off < sizeof h->fails - 1)
            off += (size_t)snprintf(h->fails + off, sizeof h->fails - off,
                                    "%s%s: %s", off ? "; " : "",
                                    r->steps[i].name, r->steps[i].reason);
    }
}

/* Process 0: one step per other host that verified its node. */
static int add_hosts(struct ncd_verify_job *vj, struct host_summary *all,
                     int n)
{
    for (int p = 1; p < n; p++) {
        struct host_summary *h = &all[p];
        h->host[sizeof h->host - 1] = '\0';
        h->fails[sizeof h->fails - 1] = '\0';
        if (!h->ran)
            continue;
        char name[80];
        snprintf(name, sizeof name, "host:%.60s", h->host);
        struct ncd_verify_step *s = ncd_verify_add(
            &vj->report, name, h->failed ? NCD_VERIFY_FAIL : NCD_VERIFY_PASS);
        if (!s)
            return NCD_ENOMEM;
        if (h->failed)
            ncd_verify_reason(s, "%d of %d steps failed on %s (process %d): "
                                 "%s",
                              h->failed, h->total, h->host, p, h->fails);
        else
            ncd_verify_reason(s, "all %d steps passed or were skipped on %s "
                                 "(process %d)",
                              h->total, h->host, p);
        if (vj->o.on_step)
            vj->o.on_step(vj->o.arg, s);
    }
    return 0;
}

/* probe between the processes: 0 clean, 1 not run (a recorded sysroot:
 * probe opens sockets on this machine), -1 error findings (the step says
 * so), -2 the probe itself broke off (its exchanges are out of step:
 * nothing more is run together). */
static int multi_probe(struct ncd_ctx *ctx, struct ncd_verify_job *vj,
                       const struct ncd_job *job, struct ncd_verify_step *s)
{
    if (ncd_sys_require_live(ctx, "probe")) { /* the same on every process */
        ncd_verify_evidence(s, "probe not run: the node's files come from "
                               "the recording %s, probe works on this "
                               "machine's sockets",
                            ncd_ctx_sysroot(ctx));
        ncd_ctx_clear_error(ctx);
        return 1;
    }
    struct ncd_probe_opts po;
    ncd_probe_opts_default(&po);
    po.token = ncd_pg_token(job->pg);
    po.rdv_addr = ncd_pg_local_addr(job->pg);
    po.nccl_version = vj->o.nccl_code;
    po.nccl_version_src = vj->o.nccl_source;
    struct ncd_probe *p = NULL;
    int rc = ncd_probe_new(ctx, &po, job->proc, job->nprocs, &p);
    if (rc) {
        s->status = NCD_VERIFY_FAIL;
        ncd_verify_reason(s, "probe could not start on process %d: %s",
                          job->proc, ncd_ctx_errdetail(ctx));
        /* the others wait in the exchange: it times out there */
        return -2;
    }
    void *ag[2] = {ctx, job->pg};
    const struct ncd_probe_result *res = NULL;
    rc = ncd_probe_run(ctx, p, pg_ag, ag, &res);
    if (rc) {
        s->status = NCD_VERIFY_FAIL;
        ncd_verify_reason(s, "probe stopped: %s", ncd_ctx_errdetail(ctx));
        ncd_probe_free(p);
        return -2;
    }
    struct ncd_findings fl = {0};
    int errors = 0;
    const char *first = NULL;
    if (ncd_probe_analyze(res, &fl) == 0)
        for (size_t i = 0; i < fl.n; i++) {
            if (fl.v[i].severity < NCD_SEV_WARNING)
                continue;
            if (fl.v[i].severity == NCD_SEV_ERROR && !errors++)
                first = fl.v[i].title;
            ncd_verify_evidence(s, "probe %s %s: %s",
                                ncd_severity_name(fl.v[i].severity),
                                fl.v[i].id, fl.v[i].title);
        }
    ncd_verify_evidence(s, "probe: %d processes on %d hosts", res->nranks,
                        res->nhosts);
    if (errors) {
        s->status = NCD_VERIFY_FAIL;
        ncd_verify_reason(s, "probe: %d error finding%s (%s); `nccl-doctor "
                             "probe` under the same launcher shows the "
                             "matrix",
                          errors, errors == 1 ? "" : "s", first);
    }
    ncd_findings_release(&fl);
    ncd_probe_free(p);
    return errors ? -1 : 0;
}

/* The all_reduce with one GPU per process. */
static void multi_sweep(struct ncd_ctx *ctx, struct ncd_verify_job *vj,
                        const struct ncd_job *job, int probed,
                        struct ncd_verify_step *s)
{
    struct verify__gpu *g = calloc(1, sizeof *g);
    struct gpu_state me, *all = calloc((size_t)job->nprocs, sizeof *all);
    if (!g || !all) {
        free(g);
        free(all);
        s->status = NCD_VERIFY_FAIL;
        ncd_verify_reason(s, "out of memory");
        return;
    }
    verify__gpu_open(ctx, &vj->o, g);
    memset(&me, 0, sizeof me);
    ncd_job_hostname(me.host, sizeof me.host);
    if (g->ndev > job->local_proc) {
        me.usable = 1;
        me.free_bytes = verify__gpu_free_mem(g, job->local_proc);
    } else if (g->ndev) {
        snprintf(me.why, sizeof me.why,
                 "local process %d has no GPU of its own (%d visible)",
                 job->local_proc, g->ndev);
    } else {
        snprintf(me.why, sizeof me.why, "%.199s", g->why);
    }
    if (ncd_pg_allgather(ctx, job->pg, &me, sizeof me, all)) {
        s->status = NCD_VERIFY_FAIL;
        ncd_verify_reason(s, "the processes could not exchange their GPU "
                             "state: %s",
                          ncd_ctx_errdetail(ctx));
        goto out;
    }
    uint64_t fr = UINT64_MAX;
    for (int p = 0; p < job->nprocs; p++) {
        if (!all[p].usable) {
            all[p].host[sizeof all[p].host - 1] = '\0';
            all[p].why[sizeof all[p].why - 1] = '\0';
            if (s->status != NCD_VERIFY_FAIL)
                s->status = NCD_VERIFY_SKIP;
            ncd_verify_reason(s,
                              "all_reduce across the nodes not run: process "
                              "%d on %s has no usable GPU (%s)",
                              p, all[p].host, all[p].why);
            goto out;
        }
        if (all[p].free_bytes < fr)
            fr = all[p].free_bytes;
    }
    size_t maxb = verify__clamp_max(vj->o.minbytes, vj->o.maxbytes,
                                    vj->o.stepfactor, (size_t)fr);
    if (!maxb) {
        s->status = NCD_VERIFY_FAIL;
        ncd_verify_reason(s, "not enough free GPU memory for the sweep on "
                             "some process");
        goto out;
    }
    struct ncd_perf_job pj = {.nprocs = job->nprocs,
                              .proc = job->proc,
                              .local_proc = job->local_proc,
                              .pg = job->pg,
                              .device0 = -1};
    int prior = s->status;
    struct ncd_verify_step sw;
    memset(&sw, 0, sizeof sw);
    double best = verify__sweep(ctx, &vj->o, &pj, 1, maxb, NULL, NULL, &sw);
    for (size_t k = 0; k < sw.n_evidence; k++) {
        ncd_verify_evidence(s, "%s", sw.evidence[k]);
        free(sw.evidence[k]);
    }
    free(sw.evidence);
    if (best < 0) {
        s->status = NCD_VERIFY_FAIL;
        ncd_verify_reason(s, "across the nodes: %s", sw.reason);
    } else if (prior != NCD_VERIFY_FAIL) {
        s->status = NCD_VERIFY_PASS;
        ncd_verify_reason(s,
                          "%s; all_reduce over %d processes (one GPU each, "
                          "-e %zu): results correct, best busbw %.2f GB/s",
                          probed ? "probe clean" : "probe not run (sysroot)",
                          job->nprocs, maxb, best);
    }
out:
    free(all);
    free(g);
}

int ncd_verify_job_fn(void *arg, struct ncd_ctx *ctx, const struct ncd_job *job)
{
    struct ncd_verify_job *vj = arg;
    vj->is_root = job->proc == 0;
    if (!vj->is_root)
        vj->o.on_step = NULL; /* process 0 prints */
    int ran = job->local_proc == 0;
    if (ran && ncd_verify_node(ctx, &vj->o, &vj->report))
        return NCD_VERIFY_EXIT_TOOL;
    struct host_summary mine,
        *all = calloc((size_t)job->nprocs, sizeof *all);
    if (!all)
        return NCD_VERIFY_EXIT_TOOL;
    summarize(&vj->report, ran, &mine);
    int rc = ncd_pg_allgather(ctx, job->pg, &mine, sizeof mine, all);
    if (!rc && vj->is_root)
        rc = add_hosts(vj, all, job->nprocs);
    free(all);
    double t0 = verify__now();
    struct ncd_verify_step *s =
        ncd_verify_add(&vj->report, "multi-node", NCD_VERIFY_PASS);
    if (!s)
        return NCD_VERIFY_EXIT_TOOL;
    if (rc) {
        s->status = NCD_VERIFY_FAIL;
        ncd_verify_reason(s, "the processes could not exchange their "
                             "results: %s",
                          ncd_ctx_errdetail(ctx));
    } else {
        int pr = multi_probe(ctx, vj, job, s);
        /* also after error findings: every process takes part, and the
         * all_reduce's own failure says more */
        if (pr != -2)
            multi_sweep(ctx, vj, job, pr != 1, s);
    }
    s->seconds = verify__now() - t0;
    vj->report.seconds += s->seconds;
    if (vj->o.on_step)
        vj->o.on_step(vj->o.arg, s);
    return ncd_verify_exit_status(&vj->report);
}
