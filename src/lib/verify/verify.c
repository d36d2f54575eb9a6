/* SPDX-License-Identifier: MIT */
/*
 * verify's steps on one node (include/ncd/verify.h): the check run, the
 * single cards, the topology with peer access, and the all_reduce sweep
 * over every GPU judged against what the slowest path should carry.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ncd/error.h"
#include "ncd/node_report.h"
#include "ncd/pg.h"
#include "verify/verify_int.h"

void ncd_verify_opts_default(struct ncd_verify_opts *o)
{
    memset(o, 0, sizeof *o);
    o->minbytes = 1u << 20;
    o->maxbytes = 1u << 30;
    o->stepfactor = 2;
    o->iters = 20;
    o->warmup_iters = 1;
    o->timeout_s = 120;
    o->min_ratio = 0.5;
    o->nccl_source = "newest known";
}

/* ---- step "node" -------------------------------------------------------- */

void verify__step_node(struct ncd_ctx *ctx, const struct ncd_verify_opts *o,
                       struct ncd_verify_step *s)
{
    struct ncd_findings l = {0};
    struct ncd_node n = {0};
    struct ncd_check_opts co = {0};
    struct ncd_node_opts no = {.nccl_version = o->nccl_version};
    int rc = ncd_node_probe(ctx, &no, ncd_checks_parts(&co), &n);
    if (rc >= 0)
        rc = ncd_run_checks(&n, &co, &l);
    ncd_node_release(&n);
    if (rc < 0) {
        s->status = NCD_VERIFY_FAIL;
        ncd_verify_reason(s, "the node checks could not run: %s",
                          rc == NCD_EINVAL ? ncd_ctx_errdetail(ctx)
                                           : ncd_strerror(rc));
        ncd_findings_release(&l);
        return;
    }
    int errors = 0, warnings = 0;
    const char *first = NULL;
    for (size_t i = 0; i < l.n; i++) {
        const struct ncd_finding *f = &l.v[i];
        if (f->severity < NCD_SEV_WARNING)
            continue;
        if (f->severity == NCD_SEV_ERROR && !errors++)
            first = f->title;
        if (f->severity == NCD_SEV_WARNING)
            warnings++;
        ncd_verify_evidence(s, "%s %s: %s", ncd_severity_name(f->severity),
                            f->id, f->title);
    }
    if (errors) {
        s->status = NCD_VERIFY_FAIL;
        ncd_verify_reason(s,
                          "%d error finding%s (%s%s); `nccl-doctor check` "
                          "gives the cause and fix of each",
                          errors, errors == 1 ? "" : "s", first,
                          errors > 1 ? ", ..." : "");
    } else {
        s->status = NCD_VERIFY_PASS;
        ncd_verify_reason(s, "no error finding (%d warning%s)", warnings,
                          warnings == 1 ? "" : "s");
    }
    ncd_findings_release(&l);
}

/* ---- the sweep ---------------------------------------------------------- */

size_t verify__clamp_max(size_t min, size_t max, size_t factor,
                         size_t free_bytes)
{
    size_t reserve = free_bytes / 10;
    if (reserve < (512u << 20))
        reserve = 512u << 20;
    if (free_bytes <= reserve || min == 0)
        return 0;
    size_t room = (free_bytes - reserve) / 2; /* send + recv */
    size_t best = 0;
    for (size_t b = min; b <= max && b <= room; b *= factor) {
        best = b;
        if (factor < 2 || b > (size_t)-1 / factor)
            break;
    }
    return best;
}

struct sweep_sink {
    struct ncd_verify_step *s;
    double best;
    long long wrong;
    void (*sample)(void *);
    void *sample_arg;
};

static void on_preamble(void *arg, int nccl_version,
                        const char *backend_desc,
                        const struct ncd_perf_device *devs, int ndevs)
{
    struct sweep_sink *k = arg;
    (void)nccl_version;
    ncd_verify_evidence(k->s, "backend: %s", backend_desc);
    for (int i = 0; i < ndevs; i++)
        ncd_verify_evidence(k->s, "rank %d on %s: device %d [%s] %s",
                            devs[i].rank, devs[i].host, devs[i].device,
                            devs[i].busid, devs[i].name);
    ncd_verify_evidence(k->s, "%12s %14s %14s %8s", "size (B)",
                        "busbw oop GB/s", "busbw ip GB/s", "#wrong");
}

static void on_row(void *arg, const struct ncd_perf_row *r)
{
    struct sweep_sink *k = arg;
    double b = r->oop.busbw > r->ip.busbw ? r->oop.busbw : r->ip.busbw;
    if (b > k->best)
        k->best = b;
    long long w = (r->oop.wrong > 0 ? r->oop.wrong : 0) +
                  (r->ip.wrong > 0 ? r->ip.wrong : 0);
    k->wrong += w;
    ncd_verify_evidence(k->s, "%12zu %14.2f %14.2f %8lld", r->bytes,
                        r->oop.busbw, r->ip.busbw, w);
}

static void on_progress(void *arg, size_t i, size_t n, size_t bytes)
{
    struct sweep_sink *k = arg;
    (void)i;
    (void)n;
    (void)bytes;
    if (k->sample)
        k->sample(k->sample_arg);
}

double verify__sweep(struct ncd_ctx *ctx, const struct ncd_verify_opts *o,
                     const struct ncd_perf_job *pj, int ngpus, size_t maxb,
                     void (*sample)(void *), void *sample_arg,
                     struct ncd_verify_step *s)
{
    struct ncd_perf_opts po;
    ncd_perf_opts_default(&po);
    po.coll = NCD_COLL_ALL_REDUCE;
    po.prog = ncd_perf_coll_prog(po.coll);
    po.ngpus = ngpus;
    po.nthreads = 1;
    po.minbytes = o->minbytes;
    po.maxbytes = maxb;
    po.stepfactor = o->stepfactor;
    po.iters = o->iters;
    po.warmup_iters = o->warmup_iters;
    po.op = NCD_OP_SUM;
    po.dtype = NCD_DT_FLOAT;
    po.check = 1;
    po.timeout_s = o->timeout_s;
    struct ncd_perf_job job = *pj;
    job.backend = NCD_PERF_BACKEND_NCCL;
    job.nccl_path = o->nccl_path;
    job.cudart_path = o->cudart_path;
    job.ranks_per_proc = ngpus;
    job.progress = sample != NULL;
    struct sweep_sink k = {.s = s, .sample = sample, .sample_arg = sample_arg};
    struct ncd_perf_sink sink = {.arg = &k,
                                 .preamble = on_preamble,
                                 .row = on_row,
                                 .progress = on_progress};
    struct ncd_perf_summary sum;
    memset(&sum, 0, sizeof sum);
    int st = ncd_perf_run(ctx, &po, &job, &sink, &sum);
    if (st) {
        s->status = NCD_VERIFY_FAIL;
        if (st == 7 || k.wrong)
            ncd_verify_reason(s,
                              "all_reduce gave wrong results: %lld wrong "
                              "element%s over the sweep (nccl-tests' "
                              "#wrong)%s%s",
                              k.wrong, k.wrong == 1 ? "" : "s",
                              sum.error[0] ? ": " : "", sum.error);
        else
            ncd_verify_reason(s,
                              "the all_reduce sweep stopped (nccl-tests "
                              "status %d): %s",
                              st, sum.error[0] ? sum.error : "no detail");
        return -1;
    }
    s->status = NCD_VERIFY_PASS;
    return k.best;
}

/* ---- the steps of this node ------------------------------------------- */

struct node_run {
    struct ncd_ctx *ctx;
    const struct ncd_verify_opts *o;
    struct ncd_verify_report *r;
    struct verify__gpu *g;
    struct ncd_topo topo;
    int have_topo;
    int *topo_of; /* CUDA device -> topology device, -1 */
    struct ncd_verify_links *links;
};

static void finish(struct node_run *nr, struct ncd_verify_step *s, double t0)
{
    s->seconds = verify__now() - t0;
    nr->r->seconds += s->seconds;
    if (nr->o->on_step)
        nr->o->on_step(nr->o->arg, s);
}

static void step_topology(struct node_run *nr, struct ncd_verify_step *s)
{
    struct verify__gpu *g = nr->g;
    if (nr->have_topo) {
        struct ncd_strbuf sb = {0};
        ncd_topo_matrix_text(&nr->topo, &sb);
        ncd_verify_evidence_lines(s, ncd_sb_str(&sb));
        ncd_sb_release(&sb);
    }
    if (!g->ndev) {
        s->status = NCD_VERIFY_SKIP;
        ncd_verify_reason(s, "peer access not checked: no usable GPU (step "
                             "gpu says why); the matrix is in the evidence");
        return;
    }
    int n = g->ndev, bad_a = -1, bad_b = -1, unknown = 0;
    enum ncd_link bad_link = NCD_LINK_UNKNOWN;
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++) {
            int nv = 0;
            enum ncd_link l = NCD_LINK_UNKNOWN;
            if (nr->topo_of[a] >= 0 && nr->topo_of[b] >= 0)
                l = ncd_topo_link(&nr->topo, (size_t)nr->topo_of[a],
                                  (size_t)nr->topo_of[b], &nv);
            int ab = verify__gpu_peer(g, a, b), ba = verify__gpu_peer(g, b, a);
            int can = ab < 0 || ba < 0 ? -1 : ab && ba;
            char path[16];
            if (l == NCD_LINK_NV)
                snprintf(path, sizeof path, "NV%d", nv);
            else
                snprintf(path, sizeof path, "%s", ncd_link_name(l));
            ncd_verify_evidence(s, "GPU%d-GPU%d: %-4s peer access %s", a, b,
                                path,
                                can < 0 ? "unknown" : can ? "yes" : "no");
            unknown |= can < 0;
            if (can == 0 && bad_a < 0 &&
                (l == NCD_LINK_NV || l == NCD_LINK_PIX || l == NCD_LINK_PXB)) {
                bad_a = a;
                bad_b = b;
                bad_link = l;
            }
        }
    if (bad_a >= 0) {
        s->status = NCD_VERIFY_FAIL;
        ncd_verify_reason(s,
                          "GPU%d and GPU%d are %s apart, yet CUDA denies "
                          "peer access between them: PCIe ACS or the IOMMU "
                          "redirect peer-to-peer traffic, or a hypervisor "
                          "hides it (NCCL then copies through host memory; "
                          "`nccl-doctor check` looks at ACS and the IOMMU)",
                          bad_a, bad_b, ncd_link_name(bad_link));
        return;
    }
    s->status = NCD_VERIFY_PASS;
    if (n < 2)
        ncd_verify_reason(s, "1 GPU: no pair to check; the matrix is in the "
                             "evidence");
    else
        ncd_verify_reason(s,
                          "%d GPUs: peer access wherever the path allows it "
                          "(NV#, PIX, PXB)%s",
                          n, unknown ? "; some pairs could not be asked" : "");
}

static void sample_links(void *arg)
{
    struct node_run *nr = arg;
    ncd_verify_sample_links(nr->ctx, nr->links, &nr->topo);
}

static void step_all_gpus(struct node_run *nr, struct ncd_verify_step *s)
{
    struct verify__gpu *g = nr->g;
    const struct ncd_verify_opts *o = nr->o;
    if (!g->ndev) {
        s->status = NCD_VERIFY_SKIP;
        ncd_verify_reason(s, "no usable GPU (step gpu says why)");
        return;
    }
    int n = g->ndev;
    if (n < 2) {
        s->status = NCD_VERIFY_SKIP;
        ncd_verify_reason(s, "1 GPU visible: nothing to reduce across (step "
                             "gpu0 ran the single card)");
        return;
    }
    size_t fr = 0;
    int fr_dev = 0;
    for (int d = 0; d < n; d++) {
        size_t f = verify__gpu_free_mem(g, d);
        if (d == 0 || f < fr) {
            fr = f;
            fr_dev = d;
        }
    }
    size_t maxb = verify__clamp_max(o->minbytes, o->maxbytes, o->stepfactor,
                                    fr);
    if (!maxb) {
        s->status = NCD_VERIFY_FAIL;
        ncd_verify_reason(s,
                          "not enough free GPU memory for the sweep: GPU %d "
                          "has %.2f GiB free, two buffers of %zu bytes plus "
                          "NCCL's own need more",
                          fr_dev, fr / 1073741824.0, o->minbytes);
        return;
    }
    ncd_verify_evidence(s,
                        "all_reduce float sum, -b %zu -e %zu -f %zu -n %d "
                        "over %d GPUs%s (%.2f GiB free on GPU %d)",
                        o->minbytes, maxb, o->stepfactor, o->iters, n,
                        maxb < o->maxbytes ? ", -e clamped to fit" : "",
                        fr / 1073741824.0, fr_dev);
    struct ncd_pg *pg = NULL;
    if (ncd_pg_single(&pg)) {
        s->status = NCD_VERIFY_FAIL;
        ncd_verify_reason(s, "out of memory");
        return;
    }
    struct ncd_perf_job pj = {.nprocs = 1, .pg = pg, .device0 = -1};
    double best = verify__sweep(nr->ctx, o, &pj, n,  maxb,
                                nr->have_topo ? sample_links : NULL, nr, s);
    ncd_pg_free(pg);
    if (best < 0)
        return;
    struct ncd_linkbw *lb = NULL;
    struct ncd_verify_path path;
    char why[512] = "";
    int rc = nr->have_topo ? ncd_linkbw_load(nr->ctx, &lb) : NCD_ENOENT;
    if (rc && nr->have_topo)
        snprintf(why, sizeof why, "%s", ncd_ctx_errdetail(nr->ctx));
    else if (rc)
        snprintf(why, sizeof why, "no PCI topology");
    if (!rc)
        rc = ncd_verify_expected(nr->ctx, &nr->topo, lb, nr->topo_of, n,
                                 nr->links, &path, why, sizeof why);
    ncd_linkbw_free(lb);
    if (rc) {
        s->status = NCD_VERIFY_PASS;
        ncd_verify_reason(s,
                          "results correct, best busbw %.2f GB/s; not judged "
                          "against the links: %s",
                          best, why);
        return;
    }
    double ratio = best / path.gbps;
    ncd_verify_evidence(s, "slowest path: %s", path.desc);
    if (ratio < o->min_ratio) {
        s->status = NCD_VERIFY_FAIL;
        ncd_verify_reason(s,
                          "best busbw %.2f GB/s is %.3g%% of the %.1f GB/s "
                          "the slowest path should carry (%s); under %.0f%% "
                          "fails",
                          best, 100 * ratio, path.gbps, path.desc,
                          100 * o->min_ratio);
        return;
    }
    s->status = NCD_VERIFY_PASS;
    ncd_verify_reason(s,
                      "results correct, best busbw %.2f GB/s = %.3g%% of the "
                      "%.1f GB/s the slowest path should carry",
                      best, 100 * ratio, path.gbps);
}

/* CUDA device i -> topology GPU, by PCI address. */
static int map_devices(struct node_run *nr)
{
    int n = nr->g->ndev;
    nr->topo_of = calloc((size_t)(n > 0 ? n : 1), sizeof *nr->topo_of);
    if (!nr->topo_of)
        return NCD_ENOMEM;
    for (int i = 0; i < n; i++) {
        char bdf[32];
        verify__gpu_bdf(nr->g, i, bdf, sizeof bdf);
        nr->topo_of[i] = -1;
        for (size_t k = 0; nr->have_topo && k < nr->topo.n_gpu; k++)
            if (bdf[0] && !strcasecmp(nr->topo.dev[k].bdf, bdf))
                nr->topo_of[i] = (int)k;
    }
    return 0;
}

int ncd_verify_node(struct ncd_ctx *ctx, const struct ncd_verify_opts *o,
                    struct ncd_verify_report *r)
{
    struct node_run nr = {.ctx = ctx, .o = o, .r = r};
    int rc = NCD_ENOMEM;
    double t0 = verify__now();
    struct ncd_verify_step *s = ncd_verify_add(r, "node", NCD_VERIFY_PASS);
    if (!s)
        return NCD_ENOMEM;
    verify__step_node(ctx, o, s);
    finish(&nr, s, t0);

    t0 = verify__now();
    if (!(nr.g = calloc(1, sizeof *nr.g)))
        return NCD_ENOMEM;
    verify__gpu_open(ctx, o, nr.g);
    if (!nr.g->ndev) {
        if (!(s = ncd_verify_add(r, "gpu", NCD_VERIFY_FAIL)))
            goto out;
        ncd_verify_reason(s, "%s", nr.g->why);
        ncd_verify_evidence(s, "%s", nr.g->info);
        finish(&nr, s, t0);
    }
    for (int d = 0; d < nr.g->ndev; d++) {
        char name[16];
        snprintf(name, sizeof name, "gpu%d", d);
        if (!(s = ncd_verify_add(r, name, NCD_VERIFY_PASS)))
            goto out;
        if (d == 0)
            ncd_verify_evidence(s, "%s", nr.g->info);
        verify__step_gpu(o, nr.g, d, s);
        finish(&nr, s, t0);
        t0 = verify__now();
    }

    t0 = verify__now();
    if (ncd_topo_probe(ctx, 1, &nr.topo) == 0)
        nr.have_topo = 1;
    ncd_ctx_clear_error(ctx);
    if (map_devices(&nr))
        goto out;
    if (nr.have_topo && !(nr.links = ncd_verify_links_new(&nr.topo)))
        goto out;
    if (!(s = ncd_verify_add(r, "topology", NCD_VERIFY_PASS)))
        goto out;
    step_topology(&nr, s);
    finish(&nr, s, t0);

    t0 = verify__now();
    if (!(s = ncd_verify_add(r, "all-gpus", NCD_VERIFY_PASS)))
        goto out;
    step_all_gpus(&nr, s);
    finish(&nr, s, t0);
    rc = 0;
out:
    ncd_verify_links_free(nr.links);
    free(nr.topo_of);
    if (nr.have_topo)
        ncd_topo_release(&nr.topo);
    free(nr.g); /* the libraries stay loaded (see verify_int.h) */
    return rc;
}
