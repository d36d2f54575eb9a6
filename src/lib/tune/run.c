/* SPDX-License-Identifier: MIT */
/*
 * tune: running the measurements (include/ncd/tune.h, "Running").  Every
 * run is a child `perf ... --json` with the candidate's environment
 * (ncd_spawn(), job.h), so both backends and every launcher work as perf
 * does:
 *  - one host: tune -np N -> child `perf -np N`;
 *  - several hosts (mpirun/srun/torchrun/--rendezvous): every process of
 *    tune starts its own child with --rendezvous on rank 0's host and a
 *    fresh port rank 0 picked; the processes stay in step through the
 *    job's process group and rank 0 collects the results.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncd/error.h"
#include "ncd/job.h"
#include "ncd/netif.h"
#include "ncd/node.h"
#include "ncd/recommend.h"
#include "ncd/sock.h"
#include "ncd/tune.h"

static int cmp_pt(const void *a, const void *b)
{
    const double *x = a, *y = b;
    return (x[0] > y[0]) - (x[0] < y[0]);
}

/* perf's -J document, parsed; NULL with the reason in err when it is not
 * JSON. */
static json_t *perf_json(const char *json_text, char *err, size_t errlen)
{
    json_error_t je;
    json_t *j = json_loads(json_text, 0, &je);
    if (!j)
        snprintf(err, errlen, "perf's JSON is unreadable: %s (line %d)",
                 je.text, je.line);
    return j;
}

int ncd_tune_perf_curve(const char *json_text, double *size, double *busbw,
                        int max, char *err, size_t errlen)
{
    json_t *j = perf_json(json_text, err, errlen);
    if (!j)
        return NCD_EPARSE;
    /* (size, sum, count) per distinct size */
    double pt[NCD_TUNE_MAX_POINTS * 4][3];
    int n = 0, cap = (int)(sizeof pt / sizeof pt[0]);
    json_t *res = json_object_get(j, "results"), *row;
    size_t i;
    json_array_foreach(res, i, row)
    {
        double sz = json_number_value(json_object_get(row, "size"));
        int k = 0;
        while (k < n && pt[k][0] != sz)
            k++;
        if (k == n && n < cap) {
            pt[n][0] = sz;
            pt[n][1] = pt[n][2] = 0;
            n++;
        }
        if (k == n)
            continue;
        static const char *side[] = {"out_of_place", "in_place"};
        for (int s = 0; s < 2; s++) {
            json_t *v = json_object_get(json_object_get(row, side[s]),
                                        "bus_bw");
            if (json_is_number(v)) {
                pt[k][1] += json_number_value(v);
                pt[k][2]++;
            }
        }
    }
    json_decref(j);
    qsort(pt, (size_t)n, sizeof pt[0], cmp_pt);
    int out = 0;
    for (int k = 0; k < n && out < max; k++)
        if (pt[k][2] > 0) {
            size[out] = pt[k][0];
            busbw[out] = pt[k][1] / pt[k][2];
            out++;
        }
    if (!out) {
        snprintf(err, errlen, "perf's JSON has no bus bandwidth");
        return NCD_EPARSE;
    }
    return out;
}

int ncd_tune_perf_busbw(const char *json_text, int metric_avg, double *out,
                        char *err, size_t errlen)
{
    if (!metric_avg) { /* the last point: the largest size */
        double size[NCD_TUNE_MAX_POINTS * 4], bw[NCD_TUNE_MAX_POINTS * 4];
        int n = ncd_tune_perf_curve(json_text, size, bw, NCD_TUNE_MAX_POINTS * 4,
                                    err, errlen);
        if (n > 0)
            *out = bw[n - 1];
        return n > 0 ? 0 : n;
    }
    json_t *j = perf_json(json_text, err, errlen);
    if (!j)
        return NCD_EPARSE;
    int rc = NCD_EPARSE;
    json_t *b = json_object_get(json_object_get(j, "average_bus_bandwidth"),
                                "bandwidth");
    if (json_is_number(b)) {
        *out = json_number_value(b);
        rc = 0;
    } else {
        snprintf(err, errlen, "perf's JSON has no bus bandwidth");
    }
    json_decref(j);
    return rc;
}

/* First line of a child's output that is not empty and not a comment. */
static void first_error(const char *text, char *out, size_t len)
{
    out[0] = '\0';
    for (const char *l = text; l && *l;) {
        const char *nl = strchr(l, '\n');
        size_t n = nl ? (size_t)(nl - l) : strlen(l);
        if (n && *l != '#') {
            snprintf(out, len, "%.*s", (int)n, l);
            return;
        }
        l = nl ? nl + 1 : NULL;
    }
}

void ncd_tune_run_perf(struct ncd_ctx *ctx, const struct ncd_tune_exec *ex,
                       const struct ncd_tune_cand *cand, int np,
                       const char *rdv, int nprocs, int proc, int want_json,
                       struct ncd_tune_result *rep)
{
    memset(rep, 0, sizeof *rep);
    const char *argv[NCD_TUNE_MAX_PERF_ARGS + 16];
    int a = 0;
    char npbuf[16], rbuf[16], wbuf[16];
    argv[a++] = "nccl-doctor";
    argv[a++] = "perf";
    for (int i = 0; i < ex->nperf && i < NCD_TUNE_MAX_PERF_ARGS; i++)
        argv[a++] = ex->perf_args[i];
    if (ex->backend) {
        argv[a++] = "--backend";
        argv[a++] = ex->backend;
    }
    if (np > 1) {
        snprintf(npbuf, sizeof npbuf, "%d", np);
        argv[a++] = "-np";
        argv[a++] = npbuf;
    }
    if (rdv) {
        argv[a++] = "--rendezvous";
        argv[a++] = rdv;
    }
    if (want_json)
        argv[a++] = "--json";
    argv[a] = NULL;
    struct ncd_spawn_var vars[NCD_TUNE_MAX_VARS + 2];
    int nv = 0;
    for (int i = 0; i < cand->nvars && i < NCD_TUNE_MAX_VARS; i++)
        vars[nv++] = (struct ncd_spawn_var){
            cand->vars[i].name, cand->vars[i].unset ? NULL
                                                    : cand->vars[i].value};
    if (rdv) {
        snprintf(rbuf, sizeof rbuf, "%d", proc);
        snprintf(wbuf, sizeof wbuf, "%d", nprocs);
        vars[nv++] = (struct ncd_spawn_var){"RANK", rbuf};
        vars[nv++] = (struct ncd_spawn_var){"WORLD_SIZE", wbuf};
    }
    struct ncd_spawn_opts so = {.path = ex->self,
                                .argv = (char *const *)argv,
                                .vars = vars,
                                .nvars = nv,
                                .timeout_ms = ex->run_timeout_s * 1000,
                                .cancel = ex->cancel};
    struct ncd_spawn_result r;
    if (ncd_spawn(ctx, &so, &r)) {
        rep->status = -1;
        snprintf(rep->error, sizeof rep->error, "%s", ncd_ctx_errdetail(ctx));
        ncd_ctx_clear_error(ctx);
        return;
    }
    if (r.end == NCD_SPAWN_TIMED_OUT) {
        rep->status = -1;
        snprintf(rep->error, sizeof rep->error,
                 "perf ran longer than %d s and was killed (--run-timeout)",
                 ex->run_timeout_s);
    } else if (r.end == NCD_SPAWN_CANCELLED) {
        rep->status = -1;
        snprintf(rep->error, sizeof rep->error, "interrupted");
    } else if (r.end == NCD_SPAWN_SIGNALED) {
        rep->status = -1;
        snprintf(rep->error, sizeof rep->error, "perf died (signal %d)",
                 r.status);
    } else if ((rep->status = r.status) != 0) {
        first_error(r.err.data, rep->error, sizeof rep->error);
        if (!rep->error[0])
            first_error(r.out.data, rep->error, sizeof rep->error);
        if (!rep->error[0])
            snprintf(rep->error, sizeof rep->error,
                     "perf exited with status %d", rep->status);
    } else if (want_json &&
               ncd_tune_perf_busbw(r.out.data, ex->metric_avg, &rep->busbw,
                                   rep->error, sizeof rep->error)) {
        rep->status = -1;
    } else if (want_json) {
        char err[64];
        int n = ncd_tune_perf_curve(r.out.data, rep->size, rep->curve,
                                    NCD_TUNE_MAX_POINTS, err, sizeof err);
        rep->npts = n > 0 ? n : 0;
    }
    ncd_spawn_result_release(&r);
    /* a signal to tune reaches perf's process group too: whatever perf
     * said, the run was stopped, not failed by the settings */
    if (ex->cancel && atomic_load(ex->cancel)) {
        rep->interrupted = 1;
        rep->status = -1;
        snprintf(rep->error, sizeof rep->error, "interrupted");
    }
}

/* Adds one run's outcome to a candidate's record. */
static void record(struct ncd_tune_runs *ru, const struct ncd_tune_result *r,
                   const char *who)
{
    if (r->interrupted)
        return;
    if (r->status == 0 && ru->n < NCD_TUNE_MAX_RUNS) {
        if (!ru->npts && r->npts > 0) { /* the sweep's sizes */
            ru->npts = r->npts;
            memcpy(ru->size, r->size, sizeof ru->size);
        }
        for (int k = 0; k < ru->npts; k++) /* same sweep: same sizes */
            ru->curve[ru->n][k] = k < r->npts && r->size[k] == ru->size[k]
                                      ? r->curve[k]
                                      : -1;
        ru->busbw[ru->n++] = r->busbw;
    } else if (r->status) {
        if (!ru->failed)
            snprintf(ru->error, sizeof ru->error, "%s%.200s", who, r->error);
        ru->failed++;
    }
}

static void progress(const struct ncd_tune_exec *ex,
                     const struct ncd_tune_cand *c, int rep,
                     const struct ncd_tune_result *r)
{
    if (ex->progress)
        ex->progress(ex->progress_arg, c->label, rep, r->status != 0,
                     r->busbw);
}

static int cancelled(const struct ncd_tune_exec *ex)
{
    return ex->cancel && atomic_load(ex->cancel);
}

/* perf exited with nccl-tests' status for bad options (6) or bad sizes
 * (255): the command line is wrong, whatever the candidate's settings. */
static int perf_usage_error(struct ncd_ctx *ctx,
                            const struct ncd_tune_result *r, const char *who)
{
    if (r->interrupted ||
        (r->status != NCD_TUNE_PERF_USAGE && r->status != NCD_TUNE_PERF_SIZES))
        return 0;
    return ncd_fail(ctx, NCD_EUSAGE,
                    "perf rejected its options (exit status %d), so no "
                    "candidate was measured: %s%.200s",
                    r->status, who, r->error);
}

int ncd_tune_measure_local(struct ncd_ctx *ctx,
                           const struct ncd_tune_exec *ex,
                           const struct ncd_tune_set *set, int reps, int np,
                           struct ncd_tune_runs *runs)
{
    memset(runs, 0, sizeof *runs * (size_t)set->n);
    if (ex->planned)
        ex->planned(ex->progress_arg, set, reps);
    int done = 0;
    for (int r = 0; r < reps; r++)
        for (int i = 0; i < set->n; i++) { /* interleaved: drift hits all */
            if (set->c[i].skip[0])
                continue;
            if (cancelled(ex))
                return done;
            struct ncd_tune_result rep;
            ncd_tune_run_perf(ctx, ex, &set->c[i], np, NULL, 1, 0, 1, &rep);
            if (rep.interrupted)
                return done;
            int bad = perf_usage_error(ctx, &rep, "");
            if (bad)
                return bad;
            record(&runs[i], &rep, "");
            done++;
            progress(ex, &set->c[i], r, &rep);
        }
    return done;
}

int ncd_tune_build_set(struct ncd_ctx *ctx, const char *cands, size_t len,
                       int families, int local_only, const char *common,
                       struct ncd_tune_set *out)
{
    if (cands)
        return ncd_tune_parse_file(ctx, cands, len, out);
    /* the interfaces and the recommendation: the node snapshot */
    struct ncd_node node;
    memset(&node, 0, sizeof node);
    int rc = ncd_node_probe_net(ctx, 0, &node);
    if (rc == 0)
        rc = ncd_tune_default_set(ctx, &node.net.nl, &node.net.rec, families,
                                  local_only, common, out);
    ncd_node_release(&node);
    return rc == NCD_ERANGE ? 0 : rc;
}

enum { NAMES = 512 };

void ncd_tune_usable_names(struct ncd_ctx *ctx, int loopback, char *out,
                           size_t len)
{
    memset(out, 0, len);
    struct ncd_node node;
    memset(&node, 0, sizeof node);
    size_t off = 0;
    const struct ncd_recommendation *rec = &node.net.rec;
    if (ncd_node_probe_net(ctx, 0, &node) == 0)
        for (size_t i = 0; i < rec->n; i++) {
            const struct ncd_netif *ni = rec->ranks[i].ni;
            const char *n = ni->name;
            int lo = loopback && ni->kind == NCD_IFK_LOOPBACK &&
                     ni->n_addrs > 0;
            if (!(rec->ranks[i].usable || lo) || off + strlen(n) + 2 > len)
                continue;
            memcpy(out + off, n, strlen(n) + 1);
            off += strlen(n) + 1;
        }
    ncd_node_release(&node);
    ncd_ctx_clear_error(ctx);
}

/* Rank 0's names that appear in every process's list. */
static void intersect(const char *all, int n, char *common)
{
    size_t off = 0;
    memset(common, 0, NAMES);
    for (const char *p = all; *p; p += strlen(p) + 1) {
        int everywhere = 1;
        for (int r = 1; r < n && everywhere; r++) {
            int found = 0;
            for (const char *q = all + (size_t)r * NAMES; *q;
                 q += strlen(q) + 1)
                found |= !strcmp(p, q);
            everywhere = found;
        }
        if (everywhere && off + strlen(p) + 2 <= NAMES) {
            memcpy(common + off, p, strlen(p) + 1);
            off += strlen(p) + 1;
        }
    }
}

/* Never trust a peer's candidate set: bounds and terminators. */
static void sanitize(struct ncd_tune_set *set)
{
    if (set->n < 0 || set->n > NCD_TUNE_MAX_CANDS)
        set->n = 0;
    for (int i = 0; i < set->n; i++) {
        struct ncd_tune_cand *c = &set->c[i];
        c->label[sizeof c->label - 1] = 0;
        c->skip[sizeof c->skip - 1] = 0;
        if (c->nvars < 0 || c->nvars > NCD_TUNE_MAX_VARS)
            c->nvars = 0;
        for (int k = 0; k < c->nvars; k++) {
            c->vars[k].name[sizeof c->vars[k].name - 1] = 0;
            c->vars[k].value[sizeof c->vars[k].value - 1] = 0;
        }
    }
}

/* Agrees on a set: rank 0 builds it from the names usable everywhere. */
static int agree_set(struct ncd_ctx *ctx, const struct ncd_job *job,
                     const char *cands, size_t len, int families,
                     const struct ncd_tune_scope *sc,
                     struct ncd_tune_set *set)
{
    int n = job->nprocs, rc;
    char *mine = calloc(1, NAMES), *all = calloc((size_t)n, NAMES);
    struct ncd_tune_set *sets = calloc((size_t)n, sizeof *sets);
    if (!mine || !all || !sets) {
        rc = NCD_ENOMEM;
        goto out;
    }
    ncd_tune_usable_names(ctx, 0, mine, NAMES);
    rc = ncd_pg_allgather(ctx, job->pg, mine, NAMES, all);
    if (rc)
        goto out;
    memset(set, 0, sizeof *set);
    int bad = 0;
    if (job->proc == 0) {
        char common[NAMES];
        intersect(all, n, common);
        bad = ncd_tune_build_set(ctx, cands, len, families, sc->one_host,
                                 common, set);
        if (bad)
            set->n = 0;
        else if (sc->one_host) { /* what NCCL could pick here, lo too */
            char here[NAMES];
            ncd_tune_usable_names(ctx, 1, here, sizeof here);
            ncd_tune_mark_skips(ctx, set, sc, here);
        } else {
            ncd_tune_mark_skips(ctx, set, sc, NULL);
        }
    }
    rc = ncd_pg_allgather(ctx, job->pg, set, sizeof *set, sets);
    if (rc)
        goto out;
    *set = sets[0];
    sanitize(set);
    if (bad)
        rc = bad;
    else if (set->n == 0)
        rc = ncd_fail(ctx, NCD_EINVAL,
                      "rank 0 has no candidates to run (its output says why)");
out:
    free(mine);
    free(all);
    free(sets);
    return rc;
}

/* One interleaved run of candidate i on every process; rank 0 records. */
static int run_everywhere(struct ncd_ctx *ctx, const struct ncd_tune_exec *ex,
                          const struct ncd_job *job,
                          const struct ncd_tune_cand *c, int rep,
                          struct ncd_tune_runs *ru,
                          struct ncd_tune_result *reps, int *stop)
{
    int n = job->nprocs, me = job->proc;
    const char *host = job->plan->rdv_host;
    int32_t port = me == 0 ? ncd_sock_free_port(host) : 0;
    int32_t *ports = calloc((size_t)n, sizeof *ports);
    if (!ports)
        return NCD_ENOMEM;
    int rc = ncd_pg_allgather(ctx, job->pg, &port, sizeof port, ports);
    port = ports[0];
    free(ports);
    if (rc)
        return rc;
    if (port <= 0)
        return ncd_fail(ctx, NCD_ESYS, "no free port on %s", host);
    char rdv[300];
    ncd_sock_hostport_str(host, port, rdv, sizeof rdv);
    struct ncd_tune_result mine;
    ncd_tune_run_perf(ctx, ex, c, 0, rdv, n, me, me == 0, &mine);
    rc = ncd_pg_allgather(ctx, job->pg, &mine, sizeof mine, reps);
    if (rc)
        return rc;
    for (int k = 0; k < n; k++)
        if (reps[k].interrupted) { /* every process sees it: all stop */
            *stop = 1;
            return 0;
        }
    for (int k = 0; k < n; k++) { /* every process sees it: all fail */
        char who[32];
        snprintf(who, sizeof who, "rank %d: ", k);
        reps[k].error[sizeof reps[k].error - 1] = '\0';
        int bad = perf_usage_error(ctx, &reps[k], who);
        if (bad)
            return bad;
    }
    if (me != 0)
        return 0;
    int failed = -1;
    for (int k = 0; k < n && failed < 0; k++)
        if (reps[k].status)
            failed = k;
    char who[32] = "";
    if (failed >= 0) {
        reps[failed].error[sizeof reps[failed].error - 1] = '\0';
        snprintf(who, sizeof who, "rank %d: ", failed);
    }
    struct ncd_tune_result r0 = failed >= 0 ? reps[failed] : reps[0];
    r0.busbw = reps[0].busbw;
    record(ru, &r0, who);
    progress(ex, c, rep, &r0);
    return 0;
}

int ncd_tune_measure_job(struct ncd_ctx *ctx, const struct ncd_tune_exec *ex,
                         const struct ncd_job *job, const char *cands,
                         size_t len, int families, int reps,
                         const struct ncd_tune_scope *sc,
                         struct ncd_tune_set *set, struct ncd_tune_runs *runs)
{
    if (!job->plan->rdv_host[0])
        return ncd_fail(ctx, NCD_EUSAGE,
                        "several processes need a TCP rendezvous host for "
                        "their perf runs: pass --rendezvous HOST:PORT or set "
                        "MASTER_ADDR/MASTER_PORT");
    int rc = agree_set(ctx, job, cands, len, families, sc, set);
    if (rc)
        return rc;
    memset(runs, 0, sizeof *runs * (size_t)set->n);
    if (job->proc == 0 && ex->planned)
        ex->planned(ex->progress_arg, set, reps);
    struct ncd_tune_result *all = calloc((size_t)job->nprocs, sizeof *all);
    if (!all)
        return NCD_ENOMEM;
    int stop = 0;
    for (int r = 0; r < reps && !rc && !stop; r++)
        for (int i = 0; i < set->n && !rc && !stop; i++)
            if (!set->c[i].skip[0]) /* the same set on every process */
                rc = run_everywhere(ctx, ex, job, &set->c[i], r, &runs[i],
                                    all, &stop);
    free(all);
    return rc;
}
