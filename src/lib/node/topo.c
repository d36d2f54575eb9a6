/* SPDX-License-Identifier: MIT */
/* GPU/NIC topology: sysfs or hwloc XML, NVML, nvidia-smi style matrix. */
#define _GNU_SOURCE
#include "core/dl.h"
#include "ncd/topo.h"
#include "ncd/error.h"
#include "ncd/fs.h"
#include "node_internal.h"
#include "ncd/sysops.h"

#include <ctype.h>
#include <errno.h>
#include <hwloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* hwloc is dlopen'ed on first use, as libarchive is (archive/libarchive.c):
 * only `topo --topology FILE.xml` reads an hwloc export, and linked, hwloc
 * and the libudev it needs would be mapped and relocated at every start
 * (the live topology is read from sysfs, below).  The names below stand
 * for the loaded functions; the header's inline helpers that call others
 * (hwloc_get_root_obj) are not used. */
#define NCD__HWLOC_FUNCS(X)                                                   \
    X(topology_init, hwloc_topology_init)                                     \
    X(topology_set_io_types_filter, hwloc_topology_set_io_types_filter)       \
    X(topology_set_xmlbuffer, hwloc_topology_set_xmlbuffer)                   \
    X(topology_set_xml, hwloc_topology_set_xml)                               \
    X(topology_load, hwloc_topology_load)                                     \
    X(topology_destroy, hwloc_topology_destroy)                               \
    X(get_obj_by_depth, hwloc_get_obj_by_depth)                               \
    X(bitmap_iszero, hwloc_bitmap_iszero)                                     \
    X(bitmap_weight, hwloc_bitmap_weight)                                     \
    X(bitmap_first, hwloc_bitmap_first)                                       \
    X(bitmap_list_snprintf, hwloc_bitmap_list_snprintf)                       \
    X(distances_get_by_name, hwloc_distances_get_by_name)                     \
    X(distances_release, hwloc_distances_release)

static struct {
#define NCD__HWLOC_FIELD(field, sym) __typeof__(sym) *field;
    NCD__HWLOC_FUNCS(NCD__HWLOC_FIELD)
#undef NCD__HWLOC_FIELD
} hw;
static char hw_error[256];
static int hw_loaded;
static pthread_once_t hw_once = PTHREAD_ONCE_INIT;

static void hw_load(void)
{
    /* libhwloc.so.15: hwloc 2.x's soname (Debian libhwloc15); the dev
     * symlink as a last resort for builds elsewhere. */
    static const char *const names[] = {"libhwloc.so.15", "libhwloc.so"};
    static const char *const syms[] = {NCD__HWLOC_FUNCS(NCD__DL_NAME)};
    void *fn[sizeof syms / sizeof *syms];
    if (ncd__dl_load("hwloc", "libhwloc15", names,
                     sizeof names / sizeof *names, syms, fn,
                     sizeof fn / sizeof *fn, hw_error, sizeof hw_error) < 0)
        return;
    size_t i = 0;
#define NCD__HWLOC_SET(field, sym)                                           \
    hw.field = (__typeof__(hw.field))(uintptr_t)fn[i++];
    NCD__HWLOC_FUNCS(NCD__HWLOC_SET)
#undef NCD__HWLOC_SET
    /* never dlclose'd: the table points into it for the process' life */
    hw_loaded = 1;
}

#define hwloc_topology_init (hw.topology_init)
#define hwloc_topology_set_io_types_filter (hw.topology_set_io_types_filter)
#define hwloc_topology_set_xmlbuffer (hw.topology_set_xmlbuffer)
#define hwloc_topology_set_xml (hw.topology_set_xml)
#define hwloc_topology_load (hw.topology_load)
#define hwloc_topology_destroy (hw.topology_destroy)
#define hwloc_get_obj_by_depth (hw.get_obj_by_depth)
#define hwloc_bitmap_iszero (hw.bitmap_iszero)
#define hwloc_bitmap_weight (hw.bitmap_weight)
#define hwloc_bitmap_first (hw.bitmap_first)
#define hwloc_bitmap_list_snprintf (hw.bitmap_list_snprintf)
#define hwloc_distances_get_by_name (hw.distances_get_by_name)
#define hwloc_distances_release (hw.distances_release)

const char *ncd_link_name(enum ncd_link l)
{
    static const char *n[] = {"X", "NV", "PIX", "PXB", "PHB", "NODE", "SYS", "?"};
    return (unsigned)l <= NCD_LINK_UNKNOWN ? n[l] : "?";
}

int ncd_pci_switch_of(const struct ncd_pci_list *l, int i)
{
    const struct ncd_pci_dev *d = &l->v[i];
    int p = d->parent;
    if (p < 0)
        return i;
    if (d->pcie_type == NCD_PCIE_DOWNSTREAM)
        return l->v[p].pcie_type == NCD_PCIE_UPSTREAM ||
                       l->v[p].pcie_type == NCD_PCIE_UNKNOWN
                   ? p
                   : i;
    if (d->pcie_type == NCD_PCIE_UNKNOWN && l->v[p].pcie_type == NCD_PCIE_UNKNOWN) {
        /* No port types: root port at depth 0, then upstream (odd depth)
         * / downstream (even depth) pairs. */
        if (d->depth >= 2 && d->depth % 2 == 0)
            return p;
    }
    return i;
}

static int chain_of(const struct ncd_pci_list *l, int i, int *chain, int max)
{
    int tmp[64], n = 0;
    while (i >= 0 && n < 64) {
        tmp[n++] = i;
        i = l->v[i].parent;
    }
    int c = n < max ? n : max;
    for (int k = 0; k < c; k++)
        chain[k] = tmp[n - 1 - k];
    return c;
}

enum ncd_link ncd_pci_link(const struct ncd_pci_list *l, int a, int b)
{
    if (a < 0 || b < 0)
        return NCD_LINK_UNKNOWN;
    if (a == b)
        return NCD_LINK_X;
    const struct ncd_pci_dev *A = &l->v[a], *B = &l->v[b];
    int ca[64], cb[64];
    int na = chain_of(l, a, ca, 64), nb = chain_of(l, b, cb, 64);
    int same_root = strcmp(A->root, B->root) == 0;
    if (!same_root || l->v[ca[0]].parent != -1 || ca[0] != cb[0]) {
        if (same_root && *A->root && ca[0] != cb[0])
            return NCD_LINK_PHB; /* two root ports of one host bridge */
        int na_ = A->numa_node, nb_ = B->numa_node;
        if (na_ >= 0 && nb_ >= 0 && na_ != nb_)
            return NCD_LINK_SYS;
        return NCD_LINK_NODE;
    }
    int k = 0;
    while (k < na && k < nb && ca[k] == cb[k])
        k++;
    /* Bridges crossed: the common ancestor and each side's bridges below
     * it, endpoints excluded; count distinct switches. */
    int sw[130], ns = 0;
    for (int s = 0; s < 2; s++) {
        const int *c = s ? cb : ca;
        int n = s ? nb : na;
        for (int i = s ? k : k - 1; i < n - 1; i++) {
            if (i < 0)
                continue;
            int id = ncd_pci_switch_of(l, c[i]);
            int dup = 0;
            for (int j = 0; j < ns; j++)
                dup |= sw[j] == id;
            if (!dup && ns < 130)
                sw[ns++] = id;
        }
    }
    return ns <= 1 ? NCD_LINK_PIX : NCD_LINK_PXB;
}

/* Bridges crossed on the path between two PCI functions (below their
 * common ancestor, plus that ancestor).  Returns how many were stored. */
static int path_bridges(const struct ncd_pci_list *l, int a, int b, int *out,
                        int max)
{
    int ca[64], cb[64], na = 0, nb = 0;
    for (int i = a; i >= 0 && na < 64; i = l->v[i].parent)
        ca[na++] = i;
    for (int i = b; i >= 0 && nb < 64; i = l->v[i].parent)
        cb[nb++] = i;
    int n = 0;
    /* ca/cb are bottom-up; find the deepest common ancestor. */
    int common = -1;
    for (int i = 0; i < na && common < 0; i++)
        for (int j = 0; j < nb; j++)
            if (ca[i] == cb[j]) {
                common = ca[i];
                break;
            }
    for (int i = 1; i < na && ca[i] != common && n < max; i++)
        out[n++] = ca[i];
    for (int j = 1; j < nb && cb[j] != common && n < max; j++)
        out[n++] = cb[j];
    if (common >= 0 && n < max)
        out[n++] = common;
    return n;
}


int ncd_pci_acs_report(const struct ncd_pci_list *pl, struct ncd_acs_report *out)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < pl->n; i++) {
        out->gpus += pl->v[i].role == NCD_PCI_GPU;
        out->ends += pl->v[i].role == NCD_PCI_GPU || pl->v[i].role == NCD_PCI_NIC;
    }
    /* ACS on bridges between two endpoints that would otherwise talk
     * through the switch (PIX/PXB), GPU-GPU or GPU-NIC. */
    unsigned char *flag = calloc(pl->n + 1, 1);
    if (!flag)
        return NCD_ENOMEM;
    for (size_t a = 0; a < pl->n; a++) {
        if (pl->v[a].role != NCD_PCI_GPU)
            continue;
        for (size_t b = 0; b < pl->n; b++) {
            if (b == a || (pl->v[b].role != NCD_PCI_GPU &&
                           pl->v[b].role != NCD_PCI_NIC))
                continue;
            if (pl->v[b].role == NCD_PCI_GPU && b < a)
                continue;
            enum ncd_link l = ncd_pci_link(pl, (int)a, (int)b);
            if (l != NCD_LINK_PIX && l != NCD_LINK_PXB)
                continue;
            int br[64];
            int nbr = path_bridges(pl, (int)a, (int)b, br, 64);
            int hit = 0;
            for (int k = 0; k < nbr; k++) {
                const struct ncd_pci_dev *d = &pl->v[br[k]];
                if (d->acs == 1 && (d->acs_ctrl & NCD_ACS_P2P_BITS)) {
                    hit = 1;
                    if (!(flag[br[k]] & 1) && out->n_lines < 8) {
                        char cs[120];
                        snprintf(out->lines[out->n_lines],
                                 sizeof out->lines[0], "bridge %s: ACSCtl: %s",
                                 d->bdf,
                                 ncd_acs_ctrl_str(d->acs_ctrl, cs, sizeof cs));
                        out->n_lines++;
                    }
                    flag[br[k]] |= 1;
                } else if (d->acs == -1 && !(flag[br[k]] & 2)) {
                    flag[br[k]] |= 2;
                    out->unknown++;
                }
            }
            out->paths += hit;
        }
    }
    free(flag);
    return 0;
}

enum ncd_link ncd_topo_link(const struct ncd_topo *t, size_t a, size_t b,
                            int *nv)
{
    if (nv)
        *nv = 0;
    if (a == b)
        return NCD_LINK_X;
    if (a < t->n_gpu && b < t->n_gpu && t->nvlinks) {
        int c = t->nvlinks[a * t->n_gpu + b];
        if (c > 0) {
            if (nv)
                *nv = c;
            return NCD_LINK_NV;
        }
    }
    const struct ncd_topo_dev *A = &t->dev[a], *B = &t->dev[b];
    if (A->pci < 0 || B->pci < 0) {
        if (A->numa_node >= 0 && B->numa_node >= 0)
            return A->numa_node == B->numa_node ? NCD_LINK_NODE : NCD_LINK_SYS;
        return NCD_LINK_UNKNOWN;
    }
    return ncd_pci_link(&t->pci, A->pci, B->pci);
}

/* ---- building the device list ------------------------------------------- */

static int add_dev(struct ncd_topo *t, enum ncd_topo_kind kind)
{
    struct ncd_topo_dev *nd = realloc(t->dev, (t->n_dev + 1) * sizeof *nd);
    if (!nd)
        return NCD_ENOMEM;
    t->dev = nd;
    memset(&nd[t->n_dev], 0, sizeof nd[0]);
    nd[t->n_dev].kind = kind;
    nd[t->n_dev].pci = -1;
    nd[t->n_dev].numa_node = -1;
    return (int)t->n_dev++;
}

static void fill_from_pci(struct ncd_topo *t, struct ncd_topo_dev *d, int pi)
{
    d->pci = pi;
    if (pi < 0)
        return;
    const struct ncd_pci_dev *p = &t->pci.v[pi];
    ncd__scpy(d->bdf, sizeof d->bdf, p->bdf);
    d->numa_node = p->numa_node;
    ncd__scpy(d->cpulist, sizeof d->cpulist, p->cpulist);
}

static int cmp_bdf(const void *a, const void *b)
{
    const struct ncd_topo_dev *x = a, *y = b;
    return strcmp(x->bdf, y->bdf);
}

static int nic_has_bdf(const struct ncd_topo *t, const char *bdf)
{
    for (size_t i = t->n_gpu; i < t->n_dev; i++)
        if (*bdf && strcmp(t->dev[i].bdf, bdf) == 0)
            return 1;
    return 0;
}

static void bdf_of_link(struct ncd_ctx *ctx, const char *link, char *bdf)
{
    char path[400], root[32], chain[32][16];
    bdf[0] = '\0';
    if (ncd_fs_realpath(ctx, link, path, sizeof path) < 0)
        return;
    int n = ncd_pci_path_split(path, root, chain, 32);
    if (n > 0)
        snprintf(bdf, 16, "%s", chain[n - 1]);
}

static int probe_nics(struct ncd_ctx *ctx, struct ncd_topo *t)
{
    char **names;
    int n = ncd_fs_list(ctx, "/sys/class/infiniband", &names);
    for (int i = 0; i < n; i++) {
        char p[300], bdf[16];
        snprintf(p, sizeof p, "/sys/class/infiniband/%s/device", names[i]);
        bdf_of_link(ctx, p, bdf);
        int pi = *bdf ? ncd_pci_find(&t->pci, bdf) : -1;
        if (pi < 0)
            continue; /* soft RoCE / iWARP without PCI: not a matrix row */
        int di = add_dev(t, NCD_TOPO_NIC);
        if (di < 0) {
            ncd_fs_list_free(names, n);
            return di;
        }
        struct ncd_topo_dev *d = &t->dev[di];
        d->rdma = 1;
        ncd__scpy(d->name, sizeof d->name, names[i]);
        fill_from_pci(t, d, pi);
        char **nets;
        snprintf(p, sizeof p, "/sys/class/infiniband/%s/device/net", names[i]);
        int nn = ncd_fs_list(ctx, p, &nets);
        if (nn > 0)
            ncd__scpy(d->netdev, sizeof d->netdev, nets[0]);
        if (nn >= 0)
            ncd_fs_list_free(nets, nn);
    }
    if (n >= 0)
        ncd_fs_list_free(names, n);
    n = ncd_fs_list(ctx, "/sys/class/net", &names);
    for (int i = 0; i < n; i++) {
        char p[300], bdf[16];
        snprintf(p, sizeof p, "/sys/class/net/%s/device", names[i]);
        bdf_of_link(ctx, p, bdf);
        int pi = *bdf ? ncd_pci_find(&t->pci, bdf) : -1;
        if (pi < 0 || t->pci.v[pi].role != NCD_PCI_NIC)
            continue;
        if (nic_has_bdf(t, bdf)) {
            for (size_t k = t->n_gpu; k < t->n_dev; k++)
                if (strcmp(t->dev[k].bdf, bdf) == 0 && !*t->dev[k].netdev)
                    snprintf(t->dev[k].netdev, sizeof t->dev[k].netdev, "%s",
                             names[i]);
            continue;
        }
        int di = add_dev(t, NCD_TOPO_NIC);
        if (di < 0) {
            ncd_fs_list_free(names, n);
            return di;
        }
        struct ncd_topo_dev *d = &t->dev[di];
        ncd__scpy(d->name, sizeof d->name, names[i]);
        ncd__scpy(d->netdev, sizeof d->netdev, names[i]);
        fill_from_pci(t, d, pi);
    }
    if (n >= 0)
        ncd_fs_list_free(names, n);
    ncd_ctx_clear_error(ctx);
    return 0;
}

static void label_devs(struct ncd_topo *t)
{
    size_t g = 0, nn = 0;
    for (size_t i = 0; i < t->n_dev; i++) {
        if (t->dev[i].kind == NCD_TOPO_GPU)
            snprintf(t->dev[i].label, sizeof t->dev[i].label, "GPU%zu", g++);
        else
            snprintf(t->dev[i].label, sizeof t->dev[i].label, "NIC%zu", nn++);
    }
}

static int gpu_index(const struct ncd_topo *t, const char *bdf)
{
    for (size_t i = 0; i < t->n_gpu; i++)
        if (strcasecmp(t->dev[i].bdf, bdf) == 0)
            return (int)i;
    return -1;
}

static int ensure_nvlinks(struct ncd_topo *t)
{
    if (t->nvlinks || !t->n_gpu)
        return 0;
    t->nvlinks = calloc(t->n_gpu * t->n_gpu, sizeof *t->nvlinks);
    return t->nvlinks ? 0 : NCD_ENOMEM;
}

/* Links to NVSwitches per GPU, combined afterwards: a pair of GPUs both on
 * the switch fabric gets the smaller of their link counts. */
static void apply_switch_links(struct ncd_topo *t, const int *sw)
{
    for (size_t a = 0; a < t->n_gpu; a++)
        for (size_t b = 0; b < t->n_gpu; b++)
            if (a != b && sw[a] > 0 && sw[b] > 0) {
                int m = sw[a] < sw[b] ? sw[a] : sw[b];
                t->nvlinks[a * t->n_gpu + b] += m;
            }
}

int ncd_topo_apply_nvml(struct ncd_topo *t, const struct ncd_nvml_answer *a)
{
    if (*a->driver)
        snprintf(t->driver_version, sizeof t->driver_version, "%s",
                 a->driver);
    if (a->cuda)
        t->cuda_driver_version = a->cuda;
    if (ensure_nvlinks(t) < 0)
        return NCD_ENOMEM;
    for (size_t i = 0; i < a->n_gpu; i++) {
        int g = gpu_index(t, a->gpu[i].bdf);
        if (g >= 0 && *a->gpu[i].name)
            ncd__scpy(t->dev[g].name, sizeof t->dev[g].name, a->gpu[i].name);
    }
    if (!a->known) {
        snprintf(t->nvlink_source, sizeof t->nvlink_source, "%s", a->error);
        return 0;
    }
    int *sw = calloc(t->n_gpu + 1, sizeof *sw);
    if (!sw)
        return NCD_ENOMEM;
    for (size_t i = 0; i < a->n_link; i++) {
        int ga = gpu_index(t, a->link[i].bdf);
        if (ga < 0)
            continue; /* a GPU NVML sees but sysfs does not (or MIG) */
        if (!*a->link[i].peer) {
            sw[ga] += a->link[i].count;
            continue;
        }
        int gb = gpu_index(t, a->link[i].peer);
        if (gb >= 0)
            t->nvlinks[(size_t)ga * t->n_gpu + (size_t)gb] = a->link[i].count;
    }
    apply_switch_links(t, sw);
    free(sw);
    t->nvlink_known = 1;
    snprintf(t->nvlink_source, sizeof t->nvlink_source, "%s", a->source);
    return 0;
}

/* "Model:  NVIDIA A100-SXM4-80GB" from the driver's per-GPU file: the GPU
 * name without loading NVML (also present in captures). */
static void gpu_names_from_proc(struct ncd_ctx *ctx, struct ncd_topo *t)
{
    for (size_t i = 0; i < t->n_gpu; i++) {
        char p[128], *buf;
        size_t len;
        snprintf(p, sizeof p, "/proc/driver/nvidia/gpus/%s/information",
                 t->dev[i].bdf);
        if (ncd_fs_read(ctx, p, 1 << 16, &buf, &len) < 0)
            continue;
        const char *m = strstr(buf, "Model:");
        if (m) {
            m += 6;
            while (*m == ' ' || *m == '\t')
                m++;
            size_t l = strcspn(m, "\n");
            while (l && (m[l - 1] == ' ' || m[l - 1] == '\t'))
                l--;
            if (l && l < sizeof t->dev[i].name) {
                memcpy(t->dev[i].name, m, l);
                t->dev[i].name[l] = '\0';
            }
        }
        free(buf);
    }
    ncd_ctx_clear_error(ctx);
}

int ncd_topo_probe(struct ncd_ctx *ctx, int use_nvml, struct ncd_topo *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->source, sizeof out->source, "sysfs");
    int rc = ncd_pci_scan(ctx, &out->pci);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < out->pci.n; i++) {
        const struct ncd_pci_dev *p = &out->pci.v[i];
        if (p->role != NCD_PCI_GPU)
            continue;
        int di = add_dev(out, NCD_TOPO_GPU);
        if (di < 0)
            return di;
        fill_from_pci(out, &out->dev[di], (int)i);
        snprintf(out->dev[di].name, sizeof out->dev[di].name,
                 "NVIDIA GPU [10de:%04x]", p->device);
    }
    if (out->n_dev)
        qsort(out->dev, out->n_dev, sizeof *out->dev, cmp_bdf);
    out->n_gpu = out->n_dev;
    rc = probe_nics(ctx, out);
    if (rc < 0)
        return rc;
    out->n_nic = out->n_dev - out->n_gpu;
    label_devs(out);
    char v[200];
    if (ncd_fs_read_str(ctx, "/proc/driver/nvidia/version", v, sizeof v) == 0) {
        out->nvrm_present = 1;
        snprintf(out->nvrm_version, sizeof out->nvrm_version, "%.*s",
                 (int)strcspn(v, "\n"), v);
        /* "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05 ..." */
        char *k = strstr(v, "Kernel Module");
        if (k && sscanf(k + 13, " %31s", out->driver_version) != 1)
            out->driver_version[0] = '\0';
    } else {
        out->nvrm_present = ncd_fs_exists(ctx, "/proc/driver/nvidia/version");
    }
    ncd_ctx_clear_error(ctx);
    if (!out->n_gpu) {
        snprintf(out->nvlink_source, sizeof out->nvlink_source, "no GPU");
        return 0;
    }
    gpu_names_from_proc(ctx, out);
    if (!use_nvml) {
        snprintf(out->nvlink_source, sizeof out->nvlink_source,
                 "NVML not queried");
        return 0;
    }
    return ncd_topo_nvml(ctx, out);
}

int ncd_topo_nvml(struct ncd_ctx *ctx, struct ncd_topo *out)
{
    if (!out->n_gpu || out->nvlink_known)
        return 0;
    struct ncd_nvml_answer a;
    int rc = ncd_sys_nvml(ctx, &a);
    if (rc == 0)
        rc = ncd_topo_apply_nvml(out, &a);
    ncd_nvml_answer_release(&a);
    return rc;
}

void ncd_topo_release(struct ncd_topo *t)
{
    ncd_pci_list_release(&t->pci);
    free(t->dev);
    free(t->nvlinks);
    memset(t, 0, sizeof *t);
}

/* ---- hwloc XML ------------------------------------------------------------ */

static int hw_pci_index(hwloc_obj_t *objs, size_t n, hwloc_obj_t o)
{
    for (size_t i = 0; i < n; i++)
        if (objs[i] == o)
            return (int)i;
    return -1;
}

static int hw_is_pcifn(hwloc_obj_t o)
{
    return o->type == HWLOC_OBJ_PCI_DEVICE ||
           (o->type == HWLOC_OBJ_BRIDGE &&
            o->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI);
}

static int xml_load_v3_as_v2(const char *file, hwloc_topology_t *topo)
{
    FILE *f = fopen(file, "re");
    if (!f)
        return NCD_ENOENT;
    char *buf = malloc(64u << 20);
    size_t n = buf ? fread(buf, 1, (64u << 20) - 1, f) : 0;
    fclose(f);
    if (!buf)
        return NCD_ENOMEM;
    buf[n] = '\0';
    char *v = strstr(buf, "<topology version=\"3.0\"");
    int rc = NCD_EPARSE;
    if (v && v - buf < 512) {
        v[sizeof "<topology version=\"" - 1] = '2';
        if (hwloc_topology_init(topo) == 0) {
            hwloc_topology_set_io_types_filter(*topo,
                                               HWLOC_TYPE_FILTER_KEEP_ALL);
            if (hwloc_topology_set_xmlbuffer(*topo, buf, (int)n + 1) == 0 &&
                hwloc_topology_load(*topo) == 0)
                rc = 0;
            else
                hwloc_topology_destroy(*topo);
        }
    }
    free(buf);
    return rc;
}

/* Says what is wrong with a --topology file that hwloc would only call
 * "invalid": unreadable, a directory, or not XML at all.  0 when it may
 * be hwloc XML. */
static int xml_precheck(struct ncd_ctx *ctx, const char *file)
{
    FILE *f = fopen(file, "rb");
    if (!f)
        return ncd_fail(ctx, errno == EACCES ? NCD_EPERM : NCD_ENOENT,
                        "%s: %s", file, strerror(errno));
    char head[256];
    size_t n = fread(head, 1, sizeof head, f);
    int err = ferror(f), e = errno;
    fclose(f);
    if (err)
        return ncd_fail(ctx, NCD_EIO, "%s: %s%s", file, strerror(e),
                        e == EISDIR ? " (a captured / goes to --sysroot)"
                                    : "");
    size_t i = 0;
    if (n >= 3 && !memcmp(head, "\xef\xbb\xbf", 3)) /* UTF-8 BOM */
        i = 3;
    while (i < n && isspace((unsigned char)head[i]))
        i++;
    if (n == 0)
        return ncd_fail(ctx, NCD_EPARSE,
                        "%s is empty, not an hwloc XML export (lstopo "
                        "FILE.xml writes one)", file);
    if (i == n || head[i] != '<')
        return ncd_fail(ctx, NCD_EPARSE,
                        "%s is not XML: --topology reads an hwloc XML "
                        "export (lstopo FILE.xml, or hwloc-gather-topology)",
                        file);
    return 0;
}

int ncd_topo_load_xml(struct ncd_ctx *ctx, const char *file,
                      struct ncd_topo *out)
{
    memset(out, 0, sizeof *out);
    int pre = xml_precheck(ctx, file);
    if (pre < 0)
        return pre;
    snprintf(out->source, sizeof out->source, "hwloc XML %s", file);
    pthread_once(&hw_once, hw_load);
    if (!hw_loaded)
        return ncd_fail(ctx, NCD_EDLOPEN, "%s: %s", file, hw_error);
    hwloc_topology_t topo;
    int rc = 0;
    if (hwloc_topology_init(&topo) < 0)
        return NCD_ENOMEM;
    hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_ALL);
    if (hwloc_topology_set_xml(topo, file) < 0) {
        hwloc_topology_destroy(topo);
        return ncd_fail(ctx, NCD_EPARSE, "%s: XML, but not an hwloc "
                        "topology export", file);
    }
    if (hwloc_topology_load(topo) < 0) {
        /* hwloc 3 writes <topology version="3.0">, which hwloc 2 refuses
         * although the objects, attributes and distances we read are
         * unchanged: retry once from memory with the version lowered. */
        hwloc_topology_destroy(topo);
        rc = xml_load_v3_as_v2(file, &topo);
        if (rc < 0)
            return ncd_fail(ctx, NCD_EPARSE, "%s: hwloc %s could not load it",
                            file, HWLOC_VERSION);
        snprintf(out->source, sizeof out->source,
                 "hwloc XML %.240s (version 3.0 read by hwloc %s)", file,
                 HWLOC_VERSION);
    }
    /* Collect PCI functions (devices and PCI-PCI bridges), parents first:
     * hwloc's depth-first order already is. */
    size_t cap = 64, n = 0;
    hwloc_obj_t *objs = malloc(cap * sizeof *objs);
    rc = objs ? 0 : NCD_ENOMEM;
    /* Walk the whole tree depth-first to get parents before children. */
    hwloc_obj_t stack[256];
    int sp = 0;
    stack[sp++] = hwloc_get_obj_by_depth(topo, 0, 0);
    while (sp > 0 && !rc) {
        hwloc_obj_t o = stack[--sp];
        if (hw_is_pcifn(o)) {
            if (n == cap) {
                hwloc_obj_t *no = realloc(objs, cap * 2 * sizeof *no);
                if (!no) {
                    rc = NCD_ENOMEM;
                    break;
                }
                objs = no;
                cap *= 2;
            }
            objs[n++] = o;
        }
        /* push children in reverse so the first child is handled first */
        hwloc_obj_t kids[256];
        int nk = 0;
        for (hwloc_obj_t c = o->first_child; c && nk < 256; c = c->next_sibling)
            kids[nk++] = c;
        for (hwloc_obj_t c = o->memory_first_child; c && nk < 256; c = c->next_sibling)
            kids[nk++] = c;
        for (hwloc_obj_t c = o->io_first_child; c && nk < 256; c = c->next_sibling)
            kids[nk++] = c;
        for (int k = nk - 1; k >= 0 && sp < 256; k--)
            stack[sp++] = kids[k];
    }
    if (!rc) {
        out->pci.v = calloc(n + 1, sizeof *out->pci.v);
        if (!out->pci.v)
            rc = NCD_ENOMEM;
    }
    for (size_t i = 0; i < n && !rc; i++) {
        hwloc_obj_t o = objs[i];
        struct ncd_pci_dev *d = &out->pci.v[i];
        struct hwloc_pcidev_attr_s *pa = o->type == HWLOC_OBJ_PCI_DEVICE
                                             ? &o->attr->pcidev
                                             : &o->attr->bridge.upstream.pci;
        snprintf(d->bdf, sizeof d->bdf, "%04x:%02x:%02x.%01x",
                 (unsigned)pa->domain, pa->bus, pa->dev, pa->func);
        d->vendor = pa->vendor_id;
        d->device = pa->device_id;
        d->subsys_vendor = pa->subvendor_id;
        d->subsys_device = pa->subdevice_id;
        d->class_code = (unsigned)pa->class_id << 8;
        d->role = ncd_pci_role_of(d->vendor, d->class_code);
        d->numa_node = -1;
        d->pcie_type = NCD_PCIE_UNKNOWN;
        d->acs = -1;
        d->parent = -1;
        if (pa->linkspeed > 0)
            snprintf(d->link_speed, sizeof d->link_speed, "%.1f GB/s",
                     (double)pa->linkspeed);
        hwloc_obj_t par = o->parent;
        int depth = 0;
        for (hwloc_obj_t q = par; q && hw_is_pcifn(q); q = q->parent)
            depth++;
        d->depth = depth;
        if (par && hw_is_pcifn(par))
            d->parent = hw_pci_index(objs, i, par);
        hwloc_obj_t top = o;
        while (top->parent && top->parent->type == HWLOC_OBJ_BRIDGE)
            top = top->parent;
        if (top->type == HWLOC_OBJ_BRIDGE)
            snprintf(d->root, sizeof d->root, "hostbridge%u",
                     (unsigned)top->gp_index);
        else if (top->parent)
            snprintf(d->root, sizeof d->root, "parent%u",
                     (unsigned)top->parent->gp_index);
        hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, o);
        if (anc && anc->nodeset && !hwloc_bitmap_iszero(anc->nodeset) &&
            hwloc_bitmap_weight(anc->nodeset) == 1)
            d->numa_node = hwloc_bitmap_first(anc->nodeset);
        if (anc && anc->cpuset)
            hwloc_bitmap_list_snprintf(d->cpulist, sizeof d->cpulist,
                                       anc->cpuset);
        snprintf(d->path, sizeof d->path, "hwloc:%s", d->bdf);
    }
    out->pci.n = rc ? 0 : n;
    out->pci.present = 1;
    /* GPUs and NICs from the PCI devices and their OS devices. */
    for (size_t pass = 0; pass < 2 && !rc; pass++) {
        size_t first = out->n_dev;
        for (size_t i = 0; i < n && !rc; i++) {
            hwloc_obj_t o = objs[i];
            const struct ncd_pci_dev *p = &out->pci.v[i];
            if (pass == 0 && p->role != NCD_PCI_GPU)
                continue;
            if (pass == 1 && p->role != NCD_PCI_NIC)
                continue;
            int di = add_dev(out, pass ? NCD_TOPO_NIC : NCD_TOPO_GPU);
            if (di < 0) {
                rc = di;
                break;
            }
            struct ncd_topo_dev *d = &out->dev[di];
            fill_from_pci(out, d, (int)i);
            if (pass == 0)
                snprintf(d->name, sizeof d->name, "NVIDIA GPU [10de:%04x]",
                         p->device);
            else
                ncd__scpy(d->name, sizeof d->name, p->bdf);
            for (hwloc_obj_t c = o->io_first_child; c; c = c->next_sibling) {
                if (c->type != HWLOC_OBJ_OS_DEVICE || !c->name)
                    continue;
                const char *model = hwloc_obj_get_info_by_name(c, "GPUModel");
                if (pass == 0 && model)
                    ncd__scpy(d->name, sizeof d->name, model);
                if (pass == 1 &&
                    c->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS) {
                    ncd__scpy(d->name, sizeof d->name, c->name);
                    d->rdma = 1;
                }
                if (pass == 1 &&
                    c->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK &&
                    !*d->netdev) {
                    ncd__scpy(d->netdev, sizeof d->netdev, c->name);
                    if (!d->rdma)
                        ncd__scpy(d->name, sizeof d->name, c->name);
                }
            }
        }
        if (pass == 0) {
            if (out->n_dev > first)
                qsort(out->dev + first, out->n_dev - first, sizeof *out->dev,
                      cmp_bdf);
            out->n_gpu = out->n_dev;
        }
    }
    out->n_nic = out->n_dev - out->n_gpu;
    label_devs(out);
    /* NVLink from the "NVLinkBandwidth" distances (MB/s per pair). */
    snprintf(out->nvlink_source, sizeof out->nvlink_source,
             "no NVLinkBandwidth matrix in the XML");
    unsigned nr = 1;
    struct hwloc_distances_s *dist = NULL;
    if (!rc && out->n_gpu &&
        hwloc_distances_get_by_name(topo, "NVLinkBandwidth", &nr, &dist, 0) == 0 &&
        nr >= 1 && ensure_nvlinks(out) == 0) {
        int *sw = calloc(out->n_gpu + 1, sizeof *sw);
        int *map = calloc(dist->nbobjs + 1, sizeof *map);
        if (sw && map) {
            for (unsigned k = 0; k < dist->nbobjs; k++) {
                hwloc_obj_t o = dist->objs[k];
                while (o && o->type == HWLOC_OBJ_OS_DEVICE)
                    o = o->parent;
                int pi = o ? hw_pci_index(objs, n, o) : -1;
                /* -1: a PCI device that is not a GPU (an NVSwitch); -2:
                 * anything else (a CPU package on POWER / Grace C2C), whose
                 * links join no GPU pair. */
                map[k] = pi >= 0 ? -1 : -2;
                if (pi >= 0)
                    for (size_t g = 0; g < out->n_gpu; g++)
                        if (out->dev[g].pci == pi)
                            map[k] = (int)g;
            }
            for (unsigned a = 0; a < dist->nbobjs; a++)
                for (unsigned b = 0; b < dist->nbobjs; b++) {
                    hwloc_uint64_t v = dist->values[a * dist->nbobjs + b];
                    if (!v || a == b || map[a] < 0 || map[b] == -2)
                        continue;
                    /* 20 GB/s per NVLink 1 link, 25 GB/s from NVLink 2 on,
                     * as hwloc's NVML backend records them. */
                    int links = (int)(v % 25000 == 0 ? v / 25000
                                      : v % 20000 == 0 ? v / 20000
                                                       : (v + 12500) / 25000);
                    if (map[b] >= 0)
                        out->nvlinks[(size_t)map[a] * out->n_gpu +
                                     (size_t)map[b]] = links;
                    else
                        sw[map[a]] += links;
                }
            apply_switch_links(out, sw);
            out->nvlink_known = 1;
            snprintf(out->nvlink_source, sizeof out->nvlink_source,
                     "hwloc XML NVLinkBandwidth");
        }
        free(sw);
        free(map);
        hwloc_distances_release(topo, dist);
    }
    free(objs);
    hwloc_topology_destroy(topo);
    return rc;
}
