/* SPDX-License-Identifier: MIT */
/*
 * The topology as a picture (ncd_topo_svg(), include/ncd/topo.h): nested
 * boxes as lstopo draws a machine (machine > NUMA node > host bridge >
 * PCIe switch > GPU / NIC / NVSwitch), then the coloured path-type matrix.
 *
 * Layout: boxes are created parents first (get-or-create along each
 * device's chain), so sizes are computed children first by walking the
 * array backwards, and positions parents first by walking it forwards.
 * A container lays its children left to right and starts a new row past
 * ROW_MAX pixels.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncd/node_report.h"
#include "ncd/topo.h"
#include "render/svg.h"

enum box_kind { B_MACHINE, B_NUMA, B_HOST, B_SWITCH, B_GPU, B_NIC, B_NVSW };

struct box {
    enum box_kind kind;
    int parent;       /* index, -1 for the machine */
    int key;          /* NUMA number, PCI index of the switch/device */
    char root[32];    /* host bridge name */
    char line[3][112];/* title, then details */
    double x, y, w, h;
};

struct layout {
    struct box *b;
    size_t n, cap;
    int oom;
};

#define PAD 8.0
#define GAP 8.0
#define LEAF_W 176.0
#define LEAF_H 60.0
#define ROW_MAX 1500.0
#define MATRIX_MAX 40

static const struct {
    const char *fill, *stroke;
} style[] = {
    [B_MACHINE] = {"#ffffff", "#333333"}, [B_NUMA] = {"#fff6e5", "#d99a2b"},
    [B_HOST] = {"#fafafa", "#8c8c8c"},    [B_SWITCH] = {"#eef0f3", "#5b6b80"},
    [B_GPU] = {"#e6f4cf", "#5d8f00"},     [B_NIC] = {"#dcebf7", "#2f6fb0"},
    [B_NVSW] = {"#f1e3f3", "#8a4b93"},
};

static int add_box(struct layout *L, enum box_kind k, int parent, int key,
                   const char *root)
{
    if (L->n == L->cap) {
        size_t nc = L->cap ? L->cap * 2 : 32;
        struct box *nb = realloc(L->b, nc * sizeof *nb);
        if (!nb) {
            L->oom = 1;
            return -1;
        }
        L->b = nb;
        L->cap = nc;
    }
    struct box *b = &L->b[L->n];
    memset(b, 0, sizeof *b);
    b->kind = k;
    b->parent = parent;
    b->key = key;
    snprintf(b->root, sizeof b->root, "%s", root ? root : "");
    return (int)L->n++;
}

/* The child of `parent` of that kind and key (and root), made when new. */
static int get_box(struct layout *L, enum box_kind k, int parent, int key,
                   const char *root)
{
    for (size_t i = 0; i < L->n; i++) {
        const struct box *b = &L->b[i];
        if (b->kind == k && b->parent == parent && b->key == key &&
            strcmp(b->root, root ? root : "") == 0)
            return (int)i;
    }
    return add_box(L, k, parent, key, root);
}

/* The box a PCI function sits in: machine > NUMA > host bridge >
 * switches, made as needed.  -1 when out of memory. */
static int container_of(struct layout *L, const struct ncd_topo *t, int pci,
                        int numa)
{
    int c = 0;
    if (numa >= 0 && (c = get_box(L, B_NUMA, 0, numa, NULL)) < 0)
        return -1;
    if (pci < 0)
        return c;
    const struct ncd_pci_list *l = &t->pci;
    if (l->v[pci].root[0] &&
        (c = get_box(L, B_HOST, c, 0, l->v[pci].root)) < 0)
        return -1;
    int chain[64], n = 0;
    for (int a = l->v[pci].parent; a >= 0 && n < 64; a = l->v[a].parent)
        if (l->v[a].parent >= 0 && ncd_pci_switch_of(l, a) == a &&
            l->v[a].role == NCD_PCI_BRIDGE)
            chain[n++] = a; /* a switch's upstream port, not a root port */
    while (n-- > 0)
        if ((c = get_box(L, B_SWITCH, c, chain[n], NULL)) < 0)
            return -1;
    return c;
}

/* "16.0 GT/s x16" from sysfs' max_link_speed ("16.0 GT/s PCIe") and
 * max_link_width. */
static void link_text(const struct ncd_pci_dev *p, char *buf, size_t len)
{
    char sp[32];
    snprintf(sp, sizeof sp, "%s", p ? p->link_speed : "");
    char *suffix = strstr(sp, " PCIe");
    if (suffix)
        *suffix = '\0';
    if (p && sp[0] && p->link_width > 0)
        snprintf(buf, len, "%s x%d", sp, p->link_width);
    else if (p && sp[0])
        snprintf(buf, len, "%s", sp);
    else
        snprintf(buf, len, "%s", p ? "" : "not on PCI");
}

static void fill_dev(struct box *b, const struct ncd_topo *t,
                     const struct ncd_topo_dev *d)
{
    const struct ncd_pci_dev *p = d->pci >= 0 ? &t->pci.v[d->pci] : NULL;
    char lk[64];
    link_text(p, lk, sizeof lk);
    if (d->kind == NCD_TOPO_GPU) {
        snprintf(b->line[0], sizeof b->line[0], "%s", d->label);
        snprintf(b->line[1], sizeof b->line[1], "%.26s",
                 d->name[0] ? d->name : "NVIDIA GPU");
    } else {
        snprintf(b->line[0], sizeof b->line[0], "%s %.20s", d->label, d->name);
        snprintf(b->line[1], sizeof b->line[1], "%s%.20s%s",
                 d->rdma ? "RDMA" : "Ethernet", d->netdev[0] ? " " : "",
                 d->netdev);
    }
    snprintf(b->line[2], sizeof b->line[2], "%s%s%s", d->bdf,
             d->bdf[0] && lk[0] ? "  " : "", lk);
}

static void build(struct layout *L, const struct ncd_topo *t,
                  const char *host)
{
    int m = add_box(L, B_MACHINE, -1, 0, NULL);
    if (m < 0)
        return;
    snprintf(L->b[m].line[0], sizeof L->b[m].line[0], "Machine%s%.80s",
             host ? " " : "", host ? host : "");
    snprintf(L->b[m].line[1], sizeof L->b[m].line[1],
             "%zu GPU%s, %zu NIC%s (%.60s)", t->n_gpu,
             t->n_gpu == 1 ? "" : "s", t->n_nic, t->n_nic == 1 ? "" : "s",
             t->source);
    /* devices in PCI order (physical neighbours side by side), then the
     * ones not on PCI */
    for (size_t i = 0; i < t->pci.n && !L->oom; i++) {
        const struct ncd_pci_dev *p = &t->pci.v[i];
        const struct ncd_topo_dev *d = NULL;
        for (size_t k = 0; k < t->n_dev && !d; k++)
            if (t->dev[k].pci == (int)i)
                d = &t->dev[k];
        if (!d && p->role != NCD_PCI_NVSWITCH)
            continue;
        int c = container_of(L, t, (int)i, d ? d->numa_node : p->numa_node);
        int k = c < 0 ? -1
                      : add_box(L, d ? (d->kind == NCD_TOPO_GPU ? B_GPU : B_NIC)
                                     : B_NVSW,
                                c, (int)i, NULL);
        if (k < 0)
            return;
        if (d) {
            fill_dev(&L->b[k], t, d);
        } else {
            char lk[64];
            link_text(p, lk, sizeof lk);
            snprintf(L->b[k].line[0], sizeof L->b[k].line[0], "NVSwitch");
            snprintf(L->b[k].line[1], sizeof L->b[k].line[1], "%s", p->bdf);
            snprintf(L->b[k].line[2], sizeof L->b[k].line[2], "%s", lk);
        }
    }
    for (size_t k = 0; k < t->n_dev && !L->oom; k++) {
        const struct ncd_topo_dev *d = &t->dev[k];
        if (d->pci >= 0)
            continue;
        int c = container_of(L, t, -1, d->numa_node);
        int b = c < 0 ? -1
                      : add_box(L, d->kind == NCD_TOPO_GPU ? B_GPU : B_NIC, c,
                                -1, NULL);
        if (b < 0)
            return;
        fill_dev(&L->b[b], t, d);
    }
    /* titles of the containers */
    for (size_t i = 0; i < L->n; i++) {
        struct box *b = &L->b[i];
        if (b->kind == B_NUMA) {
            snprintf(b->line[0], sizeof b->line[0], "NUMA node %d", b->key);
            for (size_t k = 0; k < t->n_dev; k++)
                if (t->dev[k].numa_node == b->key && t->dev[k].cpulist[0]) {
                    snprintf(b->line[1], sizeof b->line[1], "CPUs %.90s",
                             t->dev[k].cpulist);
                    break;
                }
        } else if (b->kind == B_HOST) {
            snprintf(b->line[0], sizeof b->line[0], "Host bridge %s",
                     b->root);
        } else if (b->kind == B_SWITCH) {
            snprintf(b->line[0], sizeof b->line[0], "PCIe switch %s",
                     t->pci.v[b->key].bdf);
        }
    }
}

static int is_leaf(enum box_kind k)
{
    return k == B_GPU || k == B_NIC || k == B_NVSW;
}

static double header_h(const struct box *b)
{
    return b->line[1][0] ? 36 : 20;
}

/* Places the children of box i in rows from (x, y); returns the used
 * width and height through *w, *h.  `place` 0 only measures. */
static void rows(struct layout *L, size_t i, double x, double y, int place,
                 double *w, double *h)
{
    double rx = 0, ry = 0, row_h = 0, max_w = 0;
    for (size_t c = i + 1; c < L->n; c++) {
        struct box *k = &L->b[c];
        if (k->parent != (int)i)
            continue;
        if (rx > 0 && rx + k->w > ROW_MAX) { /* new row */
            ry += row_h + GAP;
            rx = 0;
            row_h = 0;
        }
        if (place) {
            k->x = x + rx;
            k->y = y + ry;
        }
        rx += k->w + GAP;
        if (rx - GAP > max_w)
            max_w = rx - GAP;
        if (k->h > row_h)
            row_h = k->h;
    }
    *w = max_w;
    *h = ry + row_h;
}

static void measure(struct layout *L)
{
    for (size_t i = L->n; i-- > 0;) {
        struct box *b = &L->b[i];
        if (is_leaf(b->kind)) {
            b->w = LEAF_W;
            b->h = LEAF_H;
            continue;
        }
        double w, h;
        rows(L, i, 0, 0, 0, &w, &h);
        double tw = ncd__svg_text_w(b->line[0], 13) + 2 * PAD;
        double sw = ncd__svg_text_w(b->line[1], 11) + 2 * PAD;
        b->w = w + 2 * PAD;
        if (b->w < tw)
            b->w = tw;
        if (b->w < sw)
            b->w = sw;
        if (b->w < 120)
            b->w = 120;
        b->h = header_h(b) + h + PAD + (h > 0 ? 0 : 4);
        if (b->kind == B_MACHINE && h == 0)
            b->h += 18; /* room for "no GPU or NIC found" */
    }
}

static void place(struct layout *L, double x0, double y0)
{
    L->b[0].x = x0;
    L->b[0].y = y0;
    for (size_t i = 0; i < L->n; i++) {
        struct box *b = &L->b[i];
        if (is_leaf(b->kind))
            continue;
        double w, h;
        rows(L, i, b->x + PAD, b->y + header_h(b), 1, &w, &h);
    }
}

static void draw_box(const struct box *b, struct ncd_strbuf *out)
{
    ncd_sb_printf(out,
                  "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                  "height=\"%.1f\" rx=\"4\" fill=\"%s\" stroke=\"%s\" "
                  "stroke-width=\"%s\"/>\n",
                  b->x, b->y, b->w, b->h, style[b->kind].fill,
                  style[b->kind].stroke, is_leaf(b->kind) ? "1.5" : "1");
    if (is_leaf(b->kind)) {
        ncd__svg_text(out, b->x + 6, b->y + 16, 12.5, "start", 1, "#000000",
                      b->line[0]);
        ncd__svg_text(out, b->x + 6, b->y + 33, 11, "start", 0, "#222222",
                      b->line[1]);
        ncd__svg_text(out, b->x + 6, b->y + 50, 9.5, "start", 0, "#444444",
                      b->line[2]);
        return;
    }
    ncd__svg_text(out, b->x + PAD, b->y + 15, 13, "start", 1, "#000000",
                  b->line[0]);
    if (b->line[1][0])
        ncd__svg_text(out, b->x + PAD, b->y + 30, 11, "start", 0, "#333333",
                      b->line[1]);
}

static const char *link_color(enum ncd_link l)
{
    static const char *const c[] = {
        [NCD_LINK_X] = "#e0e0e0",    [NCD_LINK_NV] = "#1a9850",
        [NCD_LINK_PIX] = "#91cf60",  [NCD_LINK_PXB] = "#d9ef8b",
        [NCD_LINK_PHB] = "#fee08b",  [NCD_LINK_NODE] = "#fc8d59",
        [NCD_LINK_SYS] = "#d73027",  [NCD_LINK_UNKNOWN] = "#ffffff",
    };
    return (unsigned)l <= NCD_LINK_UNKNOWN ? c[l] : "#ffffff";
}

/* Height of the matrix panel for n devices. */
static double matrix_h(size_t n)
{
    if (!n)
        return 0;
    return n > MATRIX_MAX ? 40 : 40 + 22.0 * (double)(n + 1) + 130;
}

static void draw_matrix(const struct ncd_topo *t, double x, double y,
                        struct ncd_strbuf *out)
{
    size_t n = t->n_dev;
    if (!n)
        return;
    if (n > MATRIX_MAX) {
        char msg[128];
        snprintf(msg, sizeof msg,
                 "Path-type matrix left out: %zu devices (nccl-doctor topo "
                 "prints it)",
                 n);
        ncd__svg_text(out, x, y + 20, 12, "start", 0, "#333333", msg);
        return;
    }
    ncd__svg_text(out, x, y + 16, 13, "start", 1, "#000000",
                  "Paths between GPUs and NICs (as nvidia-smi topo -m)");
    const double cw = 44, ch = 22, lx = x + 56;
    double ty = y + 28;
    for (size_t j = 0; j < n; j++)
        ncd__svg_text(out, lx + cw * (double)j + cw / 2, ty + 15, 10.5,
                      "middle", 1, "#000000", t->dev[j].label);
    for (size_t i = 0; i < n; i++) {
        double ry = ty + ch * (double)(i + 1);
        ncd__svg_text(out, x, ry + 15, 10.5, "start", 1, "#000000",
                      t->dev[i].label);
        for (size_t j = 0; j < n; j++) {
            int nv = 0;
            enum ncd_link l = i == j ? NCD_LINK_X
                                     : ncd_topo_link(t, i, j, &nv);
            char lab[16];
            if (l == NCD_LINK_NV)
                snprintf(lab, sizeof lab, "NV%d", nv);
            else
                snprintf(lab, sizeof lab, "%s", ncd_link_name(l));
            ncd_sb_printf(out,
                          "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                          "height=\"%.1f\" fill=\"%s\" stroke=\"#ffffff\"/>\n",
                          lx + cw * (double)j, ry, cw, ch, link_color(l));
            ncd__svg_text(out, lx + cw * (double)j + cw / 2, ry + 15, 10.5,
                          "middle", 0,
                          l == NCD_LINK_SYS || l == NCD_LINK_NV ? "#ffffff"
                                                                : "#000000",
                          lab);
        }
    }
    static const struct {
        enum ncd_link l;
        const char *text;
    } legend[] = {
        {NCD_LINK_NV, "NV#  a bonded set of # NVLinks"},
        {NCD_LINK_PIX, "PIX  at most one PCIe bridge (switch)"},
        {NCD_LINK_PXB, "PXB  several PCIe bridges, no host bridge"},
        {NCD_LINK_PHB, "PHB  through a PCIe host bridge (the CPU)"},
        {NCD_LINK_NODE, "NODE across host bridges within a NUMA node"},
        {NCD_LINK_SYS, "SYS  across the interconnect between NUMA nodes"},
    };
    double ly = ty + ch * (double)(n + 1) + 14;
    for (size_t k = 0; k < sizeof legend / sizeof legend[0]; k++) {
        double yy = ly + 18.0 * (double)k;
        ncd_sb_printf(out,
                      "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"12\" "
                      "fill=\"%s\"/>\n",
                      x, yy, link_color(legend[k].l));
        ncd__svg_text(out, x + 20, yy + 10.5, 11, "start", 0, "#000000",
                      legend[k].text);
    }
}

void ncd_topo_svg(const struct ncd_topo *t, const char *host,
                  struct ncd_strbuf *out)
{
    struct layout L = {0};
    build(&L, t, host);
    if (L.oom || !L.n) {
        free(L.b);
        out->oom = 1;
        return;
    }
    measure(&L);
    place(&L, 10, 10);
    const struct box *m = &L.b[0];
    size_t nmat = t->n_dev;
    double mw = nmat && nmat <= MATRIX_MAX ? 56 + 44.0 * (double)nmat : 0;
    if (mw < 420 && nmat)
        mw = 420;
    double W = (m->w > mw ? m->w : mw) + 20;
    double H = m->h + 20 + matrix_h(nmat) + 10;
    ncd__svg_begin(out, W, H);
    for (size_t i = 0; i < L.n; i++)
        draw_box(&L.b[i], out);
    if (!t->n_dev)
        ncd__svg_text(out, m->x + PAD, m->y + m->h - 10, 12, "start", 0,
                      "#999999", "no GPU or NIC found");
    draw_matrix(t, 10, m->y + m->h + 10, out);
    ncd__svg_end(out);
    free(L.b);
}
