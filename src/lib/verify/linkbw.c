/* SPDX-License-Identifier: MIT */
/*
 * What the links between GPUs should carry (include/ncd/verify.h): the
 * table of data/link-bandwidth.yaml, PCIe link rates read from sysfs, and
 * the slowest path over GPU pairs.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/embedded.h"
#include "core/yaml.h"
#include "ncd/error.h"
#include "ncd/fs.h"
#include "ncd/verify.h"

#define LINKBW_FILE "data/link-bandwidth.yaml"

struct pcie_row {
    int gen;
    double gt_s, eff;
};

struct nvl_row {
    char *match;
    int gen;
    double per_link;
};

struct ncd_linkbw {
    struct pcie_row *pcie;
    size_t n_pcie;
    struct nvl_row *nvl;
    size_t n_nvl;
};

void ncd_linkbw_free(struct ncd_linkbw *lb)
{
    if (!lb)
        return;
    for (size_t i = 0; i < lb->n_nvl; i++)
        free(lb->nvl[i].match);
    free(lb->nvl);
    free(lb->pcie);
    free(lb);
}

/* A positive number from key `k` of mapping `m`. */
static int num(struct ncd__yaml *y, yaml_node_t *m, const char *k, double *out)
{
    const char *s = ncd__yaml_str(y, m, k);
    char *end;
    double v = s ? strtod(s, &end) : 0;
    if (!s || end == s || *end || !(v > 0))
        return ncd__yaml_fail(y, m, NCD_EPARSE,
                              "`%s` must be a positive number", k);
    *out = v;
    return 0;
}

static int load_rows(struct ncd__yaml *y, struct ncd_linkbw *lb)
{
    yaml_node_t *root = ncd__yaml_root(y);
    yaml_node_t *pcie = ncd__yaml_get(y, root, "pcie");
    yaml_node_t *nvl = ncd__yaml_get(y, root, "nvlink");
    size_t np = ncd__yaml_seq_len(pcie), nn = ncd__yaml_seq_len(nvl);
    if (!np || !nn)
        return ncd__yaml_fail(y, root, NCD_EPARSE,
                              "needs `pcie` and `nvlink` lists");
    lb->pcie = calloc(np, sizeof *lb->pcie);
    lb->nvl = calloc(nn, sizeof *lb->nvl);
    if (!lb->pcie || !lb->nvl)
        return NCD_ENOMEM;
    for (size_t i = 0; i < np; i++) {
        yaml_node_t *m = ncd__yaml_seq_at(y, pcie, i);
        struct pcie_row *r = &lb->pcie[i];
        double g = 0;
        int rc = num(y, m, "generation", &g);
        if (!rc)
            rc = num(y, m, "gt_s", &r->gt_s);
        if (!rc)
            rc = num(y, m, "efficiency", &r->eff);
        if (rc)
            return rc;
        if (r->eff > 1 || !ncd__yaml_str(y, m, "source"))
            return ncd__yaml_fail(y, m, NCD_EPARSE,
                                  "efficiency above 1 or no `source`");
        r->gen = (int)g;
        lb->n_pcie++;
    }
    for (size_t i = 0; i < nn; i++) {
        yaml_node_t *m = ncd__yaml_seq_at(y, nvl, i);
        struct nvl_row *r = &lb->nvl[i];
        double g = 0;
        int rc = num(y, m, "generation", &g);
        if (!rc)
            rc = num(y, m, "gb_s_per_link", &r->per_link);
        if (rc)
            return rc;
        const char *match = ncd__yaml_str(y, m, "match");
        if (!match || !*match || !ncd__yaml_str(y, m, "source"))
            return ncd__yaml_fail(y, m, NCD_EPARSE,
                                  "an nvlink row needs `match` and `source`");
        if (!(r->match = strdup(match)))
            return NCD_ENOMEM;
        r->gen = (int)g;
        lb->n_nvl++;
    }
    return 0;
}

int ncd_linkbw_load(struct ncd_ctx *ctx, struct ncd_linkbw **out)
{
    *out = NULL;
    const struct ncd_embedded_file *f = ncd_embedded_find(LINKBW_FILE);
    if (!f)
        return ncd_fail(ctx, NCD_ENOENT, "%s is not compiled in",
                        LINKBW_FILE);
    struct ncd_linkbw *lb = calloc(1, sizeof *lb);
    if (!lb)
        return NCD_ENOMEM;
    struct ncd__yaml y;
    int rc = ncd__yaml_load(ctx, LINKBW_FILE, (const char *)f->data, f->size,
                            &y);
    if (!rc)
        rc = load_rows(&y, lb);
    ncd__yaml_release(&y);
    if (rc) {
        ncd_linkbw_free(lb);
        return rc;
    }
    *out = lb;
    return 0;
}

int ncd_pcie_speed_parse(const char *s, double *gt_s)
{
    char *end;
    double v = s ? strtod(s, &end) : 0;
    if (!s || end == s || !(v > 0))
        return -1;
    while (*end == ' ')
        end++;
    if (strncmp(end, "GT/s", 4) != 0)
        return -1;
    *gt_s = v;
    return 0;
}

double ncd_linkbw_pcie(const struct ncd_linkbw *lb, double gt_s, int width,
                       int *gen)
{
    for (size_t i = 0; i < lb->n_pcie; i++)
        if (fabs(lb->pcie[i].gt_s - gt_s) < 0.05) {
            if (gen)
                *gen = lb->pcie[i].gen;
            return gt_s * lb->pcie[i].eff / 8.0 * (width > 0 ? width : 0);
        }
    if (gen)
        *gen = 0;
    return 0;
}

double ncd_linkbw_nvlink(const struct ncd_linkbw *lb, const char *gpu,
                         int *gen)
{
    for (size_t i = 0; gpu && i < lb->n_nvl; i++)
        if (strstr(gpu, lb->nvl[i].match)) {
            if (gen)
                *gen = lb->nvl[i].gen;
            return lb->nvl[i].per_link;
        }
    if (gen)
        *gen = 0;
    return 0;
}

/* ---- link rates --------------------------------------------------------- */

struct ncd_verify_links {
    size_t n;
    double *gt_s; /* highest seen per PCI function, 0 none */
    int *width;
};

struct ncd_verify_links *ncd_verify_links_new(const struct ncd_topo *t)
{
    struct ncd_verify_links *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->n = t->pci.n;
    l->gt_s = calloc(l->n + 1, sizeof *l->gt_s);
    l->width = calloc(l->n + 1, sizeof *l->width);
    if (!l->gt_s || !l->width) {
        ncd_verify_links_free(l);
        return NULL;
    }
    return l;
}

void ncd_verify_links_free(struct ncd_verify_links *l)
{
    if (!l)
        return;
    free(l->gt_s);
    free(l->width);
    free(l);
}

/* current_link_speed/width of PCI function i now; 0 when unreadable. */
static void read_current(struct ncd_ctx *ctx, const struct ncd_pci_dev *d,
                         double *gt_s, int *width)
{
    char p[128], s[64];
    long long w = 0;
    *gt_s = 0;
    *width = 0;
    snprintf(p, sizeof p, "/sys/bus/pci/devices/%s/current_link_speed",
             d->bdf);
    if (ncd_fs_read_str(ctx, p, s, sizeof s) == 0)
        ncd_pcie_speed_parse(s, gt_s);
    snprintf(p, sizeof p, "/sys/bus/pci/devices/%s/current_link_width",
             d->bdf);
    if (ncd_fs_read_ll(ctx, p, &w) == 0 && w > 0 && w <= 64)
        *width = (int)w;
    ncd_ctx_clear_error(ctx);
}

/* The functions on the path of a GPU: a and its parents (see path()). */
static int on_path(const struct ncd_topo *t, int gpu_pci, int *chain, int max)
{
    int n = 0;
    for (int i = gpu_pci; i >= 0 && n < max; i = t->pci.v[i].parent)
        chain[n++] = i;
    return n;
}

void ncd_verify_sample_links(struct ncd_ctx *ctx, struct ncd_verify_links *l,
                             const struct ncd_topo *t)
{
    if (!l)
        return;
    for (size_t g = 0; g < t->n_gpu; g++) {
        int chain[64];
        int n = on_path(t, t->dev[g].pci, chain, 64);
        for (int k = 0; k < n; k++) {
            size_t i = (size_t)chain[k];
            if (i >= l->n)
                continue;
            double gt;
            int w;
            read_current(ctx, &t->pci.v[i], &gt, &w);
            if (gt > l->gt_s[i])
                l->gt_s[i] = gt;
            if (w > l->width[i])
                l->width[i] = w;
        }
    }
}

/* The rate of PCI function i's link: sampled, else current, else max. */
static double link_gbps(struct ncd_ctx *ctx, const struct ncd_topo *t,
                        const struct ncd_linkbw *lb,
                        const struct ncd_verify_links *s, int i, char *what,
                        size_t len)
{
    const struct ncd_pci_dev *d = &t->pci.v[i];
    double gt = 0;
    int w = 0;
    const char *src = "current";
    if (s && (size_t)i < s->n && s->gt_s[i] > 0 && s->width[i] > 0) {
        gt = s->gt_s[i];
        w = s->width[i];
        src = "under load";
    } else {
        read_current(ctx, d, &gt, &w);
    }
    if (!(gt > 0) || w <= 0) {
        src = "max";
        if (ncd_pcie_speed_parse(d->link_speed, &gt) < 0)
            gt = 0;
        w = d->link_width;
    }
    int gen = 0;
    double bw = gt > 0 && w > 0 ? ncd_linkbw_pcie(lb, gt, w, &gen) : 0;
    snprintf(what, len, "PCIe %d.0 x%d at %s (%s link rate, %.1f GB/s)", gen,
             w, d->bdf, src, bw);
    return bw;
}

/* What the path between CUDA devices a and b should carry. */
static int pair_path(struct ncd_ctx *ctx, const struct ncd_topo *t,
                     const struct ncd_linkbw *lb, const int *topo_of, int a,
                     int b, const struct ncd_verify_links *s,
                     struct ncd_verify_path *out, char *why, size_t whylen)
{
    int ta = topo_of[a], tb = topo_of[b];
    memset(out, 0, sizeof *out);
    out->a = a;
    out->b = b;
    out->link = ncd_topo_link(t, (size_t)ta, (size_t)tb, &out->nvlinks);
    if (out->link == NCD_LINK_NV && out->nvlinks > 0) {
        int gen = 0;
        double per = ncd_linkbw_nvlink(lb, t->dev[ta].name, &gen);
        if (!(per > 0)) {
            snprintf(why, whylen,
                     "GPU%d and GPU%d are joined by %d NVLinks, but no row "
                     "of data/link-bandwidth.yaml gives the rate of a %s",
                     a, b, out->nvlinks, t->dev[ta].name);
            return NCD_ENOENT;
        }
        out->gbps = per * out->nvlinks;
        snprintf(out->desc, sizeof out->desc,
                 "GPU%d-GPU%d NV%d: %d x NVLink %d at %g GB/s = %.1f GB/s",
                 a, b, out->nvlinks, out->nvlinks, gen, per, out->gbps);
        return 0;
    }
    int ca[64], cb[64];
    int na = on_path(t, t->dev[ta].pci, ca, 64);
    int nb = on_path(t, t->dev[tb].pci, cb, 64);
    /* where the two chains meet: that bridge and above carry no link of
     * this path */
    int meet_a = na, meet_b = nb;
    for (int i = 0; i < na && meet_a == na; i++)
        for (int j = 0; j < nb; j++)
            if (ca[i] == cb[j]) {
                meet_a = i;
                meet_b = j;
                break;
            }
    double best = 0;
    char what[160] = "";
    for (int side = 0; side < 2; side++) {
        int *c = side ? cb : ca, m = side ? meet_b : meet_a;
        for (int k = 0; k < m; k++) {
            char w[160];
            double g = link_gbps(ctx, t, lb, s, c[k], w, sizeof w);
            if (g > 0 && (best == 0 || g < best)) {
                best = g;
                snprintf(what, sizeof what, "%s", w);
            }
        }
    }
    if (!(best > 0)) {
        snprintf(why, whylen,
                 "the PCIe rate of the path GPU%d-GPU%d (%s) is not known "
                 "(no current_link_speed/width, nor max_link_*)",
                 a, b, ncd_link_name(out->link));
        return NCD_ENOENT;
    }
    out->gbps = best;
    snprintf(out->desc, sizeof out->desc, "GPU%d-GPU%d %s: slowest link %s",
             a, b, ncd_link_name(out->link), what);
    return 0;
}

int ncd_verify_expected(struct ncd_ctx *ctx, const struct ncd_topo *t,
                        const struct ncd_linkbw *lb, const int *topo_of,
                        int n, const struct ncd_verify_links *samples,
                        struct ncd_verify_path *slowest, char *why,
                        size_t whylen)
{
    memset(slowest, 0, sizeof *slowest);
    for (int i = 0; i < n; i++)
        if (topo_of[i] < 0 || t->dev[topo_of[i]].pci < 0) {
            snprintf(why, whylen,
                     "CUDA device %d is not in this node's PCI topology", i);
            return NCD_ENOENT;
        }
    int found = 0;
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++) {
            struct ncd_verify_path p;
            int rc = pair_path(ctx, t, lb, topo_of, a, b, samples, &p, why,
                               whylen);
            if (rc)
                return rc;
            if (!found || p.gbps < slowest->gbps)
                *slowest = p;
            found = 1;
        }
    if (!found) {
        snprintf(why, whylen, "fewer than two GPUs");
        return NCD_ENOENT;
    }
    return 0;
}
