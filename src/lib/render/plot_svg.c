/* SPDX-License-Identifier: MIT */
/* busbw against size as SVG (include/ncd/plot.h). */
#define _GNU_SOURCE
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncd/error.h"
#include "ncd/plot.h"
#include "render/svg.h"

/* Colours told apart also by people with the common colour-vision
 * deficiencies (Okabe & Ito's palette, then darker tones). */
static const char *const palette[] = {
    "#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9",
    "#000000", "#8c564b", "#7f7f7f", "#bcbd22", "#17becf", "#9467bd",
};
#define NPAL (sizeof palette / sizeof palette[0])

int ncd_plot_next_color(struct ncd_plot *p)
{
    return p->ncolors++;
}

int ncd_plot_add(struct ncd_plot *p, const char *label, int color,
                 int dashed, double bytes, double busbw)
{
    size_t i;
    for (i = 0; i < p->n; i++)
        if (strcmp(p->s[i].label, label) == 0)
            break;
    if (i == p->n) {
        if (p->n == p->cap) {
            size_t nc = p->cap ? p->cap * 2 : 8;
            struct ncd_plot_series *ns = realloc(p->s, nc * sizeof *ns);
            if (!ns)
                return NCD_ENOMEM;
            p->s = ns;
            p->cap = nc;
        }
        struct ncd_plot_series *s = &p->s[p->n++];
        memset(s, 0, sizeof *s);
        snprintf(s->label, sizeof s->label, "%s", label);
        s->dashed = dashed;
        s->color = color >= 0 ? color : ncd_plot_next_color(p);
    }
    struct ncd_plot_series *s = &p->s[i];
    if (!isfinite(busbw) || busbw < 0 || !isfinite(bytes) || bytes <= 0)
        return (int)i;
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 16;
        double *nx = realloc(s->x, nc * sizeof *nx);
        if (!nx)
            return NCD_ENOMEM;
        s->x = nx;
        double *ny = realloc(s->y, nc * sizeof *ny);
        if (!ny)
            return NCD_ENOMEM;
        s->y = ny;
        s->cap = nc;
    }
    s->x[s->n] = bytes;
    s->y[s->n] = busbw;
    s->n++;
    return (int)i;
}

/* Adds a row's two sides under "<run> <type> <redop>[ root R]". */
static int add_sides(struct ncd_plot *p, const char *run, const char *type,
                     const char *redop, int root, double bytes, double oop,
                     double ip)
{
    char label[160];
    int n = snprintf(label, sizeof label, "%s %s%s%s", run, type,
                     redop && *redop ? " " : "", redop ? redop : "");
    if (root >= 0 && n > 0 && (size_t)n < sizeof label)
        snprintf(label + n, sizeof label - (size_t)n, " root %d", root);
    int color = -1;
    for (size_t i = 0; i < p->n; i++)
        if (strcmp(p->s[i].label, label) == 0)
            color = p->s[i].color;
    int k = ncd_plot_add(p, label, color, 0, bytes, oop);
    if (k < 0)
        return k;
    char ipl[180];
    snprintf(ipl, sizeof ipl, "%s in-place", label);
    k = ncd_plot_add(p, ipl, p->s[k].color, 1, bytes, ip);
    return k < 0 ? k : 0;
}

int ncd_plot_add_perf_row(struct ncd_plot *p, const char *run,
                          const struct ncd_perf_row *r)
{
    /* nccl-tests prints root -1 for collectives without a root */
    return add_sides(p, run, r->type ? r->type : "", r->redop, r->root,
                     (double)r->bytes, r->oop.busbw, r->ip.busbw);
}

static double side_bw(json_t *row, const char *side)
{
    json_t *v = json_object_get(json_object_get(row, side), "bus_bw");
    return json_is_number(v) ? json_number_value(v) : NAN;
}

int ncd_plot_add_perf_json(struct ncd_plot *p, const char *run,
                           const char *json_text, char *err, size_t errlen)
{
    json_error_t je;
    json_t *doc = json_loads(json_text, 0, &je);
    if (!doc) {
        snprintf(err, errlen, "not JSON: %s (line %d)", je.text, je.line);
        return NCD_EPARSE;
    }
    json_t *res = json_object_get(doc, "results");
    if (!json_is_array(res)) {
        json_decref(doc);
        snprintf(err, errlen, "no \"results\" array: not an nccl-tests -J "
                              "document");
        return NCD_EPARSE;
    }
    size_t i;
    json_t *row;
    int rc = 0, n = 0;
    json_array_foreach(res, i, row)
    {
        json_t *sz = json_object_get(row, "size");
        const char *type = json_string_value(json_object_get(row, "type"));
        const char *redop = json_string_value(json_object_get(row, "redop"));
        const char *root = json_string_value(json_object_get(row, "root"));
        if (!json_is_number(sz) || !type) {
            snprintf(err, errlen, "results[%zu] has no size or type", i);
            rc = NCD_EPARSE;
            break;
        }
        rc = add_sides(p, run, type, redop, root ? atoi(root) : -1,
                       json_number_value(sz), side_bw(row, "out_of_place"),
                       side_bw(row, "in_place"));
        if (rc)
            break;
        n++;
    }
    json_decref(doc);
    return rc ? rc : n;
}

void ncd_plot_release(struct ncd_plot *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->s[i].x);
        free(p->s[i].y);
    }
    free(p->s);
    memset(p, 0, sizeof *p);
}

/* "512", "4K", "1M", "2G": a power of two in binary units. */
static void size_label(double b, char *buf, size_t len)
{
    static const char *const unit[] = {"", "K", "M", "G", "T"};
    int u = 0;
    while (b >= 1024 && u < 4) {
        b /= 1024;
        u++;
    }
    snprintf(buf, len, "%g%s", b, unit[u]);
}

/* A round step for about `want` intervals over [0, max]. */
static double nice_step(double max, int want)
{
    double raw = max / want, mag = pow(10, floor(log10(raw)));
    double f = raw / mag;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

struct frame {
    double x0, y0, w, h;       /* plot area, px */
    double lx_min, lx_max;     /* log2 of the size range */
    double y_max;              /* GB/s at the top */
};

static double px_x(const struct frame *f, double bytes)
{
    double span = f->lx_max - f->lx_min;
    return f->x0 + (span > 0 ? (log2(bytes) - f->lx_min) / span : 0.5) * f->w;
}

static double px_y(const struct frame *f, double bw)
{
    return f->y0 + f->h - bw / f->y_max * f->h;
}

static int by_x(const void *a, const void *b, void *xs)
{
    const double *x = xs;
    double d = x[*(const size_t *)a] - x[*(const size_t *)b];
    return d < 0 ? -1 : d > 0;
}

static void axes(const struct frame *f, struct ncd_strbuf *out)
{
    char lab[32];
    ncd_sb_printf(out,
                  "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                  "fill=\"none\" stroke=\"#333333\"/>\n",
                  f->x0, f->y0, f->w, f->h);
    double step = nice_step(f->y_max, 5);
    for (double v = 0; v <= f->y_max * 1.0001; v += step) {
        double y = px_y(f, v);
        ncd_sb_printf(out,
                      "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                      "stroke=\"#dddddd\"/>\n",
                      f->x0, y, f->x0 + f->w, y);
        snprintf(lab, sizeof lab, "%g", v);
        ncd__svg_text(out, f->x0 - 6, y + 4, 11, "end", 0, "#333333", lab);
    }
    int lo = (int)ceil(f->lx_min), hi = (int)floor(f->lx_max);
    int every = (hi - lo) / 12 + 1; /* at most ~12 labels */
    for (int e = lo; e <= hi; e++) {
        if ((e - lo) % every)
            continue;
        double x = px_x(f, ldexp(1, e));
        ncd_sb_printf(out,
                      "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                      "stroke=\"#dddddd\"/>\n",
                      x, f->y0, x, f->y0 + f->h);
        size_label(ldexp(1, e), lab, sizeof lab);
        ncd__svg_text(out, x, f->y0 + f->h + 16, 11, "middle", 0, "#333333",
                      lab);
    }
    ncd__svg_text(out, f->x0 + f->w / 2, f->y0 + f->h + 36, 12, "middle", 0,
                  "#000000", "message size (bytes)");
    ncd_sb_printf(out,
                  "<text x=\"16\" y=\"%.1f\" font-size=\"12\" "
                  "text-anchor=\"middle\" fill=\"#000000\" "
                  "transform=\"rotate(-90 16 %.1f)\">busbw (GB/s)</text>\n",
                  f->y0 + f->h / 2, f->y0 + f->h / 2);
}

static void series(const struct frame *f, const struct ncd_plot_series *s,
                   struct ncd_strbuf *out)
{
    size_t *ord = malloc((s->n ? s->n : 1) * sizeof *ord);
    if (!ord) {
        out->oom = 1;
        return;
    }
    for (size_t i = 0; i < s->n; i++)
        ord[i] = i;
    qsort_r(ord, s->n, sizeof *ord, by_x, s->x);
    const char *col = palette[(size_t)s->color % NPAL];
    ncd_sb_printf(out,
                  "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s "
                  "points=\"",
                  col, s->dashed ? " stroke-dasharray=\"6,4\"" : "");
    for (size_t i = 0; i < s->n; i++)
        ncd_sb_printf(out, "%s%.1f,%.1f", i ? " " : "", px_x(f, s->x[ord[i]]),
                      px_y(f, s->y[ord[i]]));
    ncd_sb_puts(out, "\"/>\n");
    for (size_t i = 0; i < s->n; i++)
        ncd_sb_printf(out,
                      "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n",
                      px_x(f, s->x[ord[i]]), px_y(f, s->y[ord[i]]),
                      s->dashed ? "#ffffff" : col);
    free(ord);
}

void ncd_plot_svg(const struct ncd_plot *p, struct ncd_strbuf *out)
{
    double xmin = INFINITY, xmax = -INFINITY, ymax = 0, legend_w = 0;
    size_t npts = 0;
    for (size_t i = 0; i < p->n; i++) {
        const struct ncd_plot_series *s = &p->s[i];
        for (size_t k = 0; k < s->n; k++) {
            xmin = fmin(xmin, s->x[k]);
            xmax = fmax(xmax, s->x[k]);
            ymax = fmax(ymax, s->y[k]);
        }
        npts += s->n;
        legend_w = fmax(legend_w, ncd__svg_text_w(s->label, 12) + 40);
    }
    legend_w = fmin(legend_w, 640);
    struct frame f = {.x0 = 70, .y0 = 40, .w = 640, .h = 380};
    double legend_h = 20.0 * (double)p->n + 20;
    double W = f.x0 + f.w + 20 + legend_w + 10;
    W = fmax(W, ncd__svg_text_w(p->title, 15) + 20);
    double H = fmax(f.y0 + f.h + 50, f.y0 + legend_h);
    if (!npts) {
        xmin = 1024;
        xmax = 1 << 30;
    }
    f.lx_min = floor(log2(xmin));
    f.lx_max = ceil(log2(xmax));
    if (f.lx_max <= f.lx_min)
        f.lx_max = f.lx_min + 1;
    f.y_max = ymax > 0 ? ymax * 1.1 : 1;
    f.y_max = ceil(f.y_max / nice_step(f.y_max, 5)) * nice_step(f.y_max, 5);
    ncd__svg_begin(out, W, H);
    if (p->title[0])
        ncd__svg_text(out, 10, 24, 15, "start", 1, "#000000", p->title);
    axes(&f, out);
    if (!npts)
        ncd__svg_text(out, f.x0 + f.w / 2, f.y0 + f.h / 2, 16, "middle", 0,
                      "#999999", "no data");
    for (size_t i = 0; i < p->n; i++)
        series(&f, &p->s[i], out);
    double lx = f.x0 + f.w + 20, ly = f.y0 + 10;
    for (size_t i = 0; i < p->n; i++, ly += 20) {
        const struct ncd_plot_series *s = &p->s[i];
        ncd_sb_printf(out,
                      "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                      "stroke=\"%s\" stroke-width=\"2\"%s/>\n",
                      lx, ly, lx + 28, ly, palette[(size_t)s->color % NPAL],
                      s->dashed ? " stroke-dasharray=\"6,4\"" : "");
        ncd__svg_text(out, lx + 34, ly + 4, 12, "start", 0, "#000000",
                      s->label);
    }
    ncd__svg_end(out);
}
