/* SPDX-License-Identifier: MIT */
/* GPU/NIC topology: sysfs or hwloc XML, NVML, nvidia-smi style matrix. */
#define _GNU_SOURCE
#include "ncd/topo.h"
#include "ncd/error.h"
#include "ncd/fs.h"
#include "node_internal.h"
#include "topo_internal.h"

#include <ctype.h>
#include <errno.h>
#include <dlfcn.h>
#include <hwloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *ncd_link_name(enum ncd_link l)
{
    static const char *n[] = {"X", "NV", "PIX", "PXB", "PHB", "NODE", "SYS", "?"};
    return (unsigned)l <= NCD_LINK_UNKNOWN ? n[l] : "?";
}

/* The "bridge" a PCI function stands for when counting bridges on a path:
 * a switch's downstream ports fold into its upstream port. */
static int switch_of(const struct ncd_pci_list *l, int i)
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
            int id = switch_of(l, c[i]);
            int dup = 0;
            for (int j = 0; j < ns; j++)
                dup |= sw[j] == id;
            if (!dup && ns < 130)
                sw[ns++] = id;
        }
    }
    return ns <= 1 ? NCD_LINK_PIX : NCD_LINK_PXB;
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

/* NVML bus ids are "00000000:07:00.0" (8-digit domain): normalise. */
static void norm_bdf(const char *in, char *out)
{
    const char *c = strchr(in, ':');
    if (c && c - in > 4)
        in = c - 4;
    size_t k = 0;
    for (; in[k] && k < 15; k++)
        out[k] = (char)tolower((unsigned char)in[k]);
    out[k] = '\0';
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

int ncd_topo_parse_nvml(struct ncd_ctx *ctx, struct ncd_topo *t,
                        const char *buf, size_t len)
{
    if (ensure_nvlinks(t) < 0)
        return NCD_ENOMEM;
    int *sw = calloc(t->n_gpu + 1, sizeof *sw);
    if (!sw)
        return NCD_ENOMEM;
    size_t i = 0;
    int lineno = 0, rc = 0;
    while (i < len) {
        size_t s = i;
        while (i < len && buf[i] != '\n')
            i++;
        char line[512];
        size_t ll = i - s < sizeof line - 1 ? i - s : sizeof line - 1;
        memcpy(line, buf + s, ll);
        line[ll] = '\0';
        i++;
        lineno++;
        if (!*line || *line == '#')
            continue;
        char key[16], a[64], b[64];
        int cnt, off = 0;
        if (sscanf(line, "%15s %n", key, &off) != 1)
            continue;
        const char *rest = line + off;
        if (strcmp(key, "driver") == 0) {
            ncd__scpy(t->driver_version, sizeof t->driver_version, rest);
        } else if (strcmp(key, "cuda") == 0) {
            t->cuda_driver_version = atoi(rest);
        } else if (strcmp(key, "gpu") == 0) {
            char nb[16];
            int o2 = 0;
            if (sscanf(rest, "%63s %n", a, &o2) < 1) {
                rc = ncd_fail(ctx, NCD_EPARSE, ".ncd/nvml line %d: %s",
                              lineno, line);
                break;
            }
            norm_bdf(a, nb);
            int g = gpu_index(t, nb);
            if (g >= 0 && rest[o2])
                snprintf(t->dev[g].name, sizeof t->dev[g].name, "%s",
                         rest + o2);
        } else if (strcmp(key, "nvlink") == 0) {
            char na[16], nb[16];
            if (sscanf(rest, "%63s %63s %d", a, b, &cnt) != 3 || cnt < 0) {
                rc = ncd_fail(ctx, NCD_EPARSE, ".ncd/nvml line %d: %s",
                              lineno, line);
                break;
            }
            norm_bdf(a, na);
            int ga = gpu_index(t, na);
            if (ga < 0)
                continue;
            if (strcmp(b, "nvswitch") == 0) {
                sw[ga] += cnt;
                continue;
            }
            norm_bdf(b, nb);
            int gb = gpu_index(t, nb);
            if (gb >= 0)
                t->nvlinks[(size_t)ga * t->n_gpu + (size_t)gb] = cnt;
        } else if (strcmp(key, "error") == 0) {
            snprintf(t->nvlink_source, sizeof t->nvlink_source,
                     "recorded NVML error: %.100s", rest);
        }
    }
    if (!rc) {
        apply_switch_links(t, sw);
        if (strncmp(t->nvlink_source, "recorded NVML error", 19) != 0) {
            t->nvlink_known = 1;
            snprintf(t->nvlink_source, sizeof t->nvlink_source, ".ncd/nvml");
        }
    }
    free(sw);
    return rc;
}

/* ---- NVML (live) ---------------------------------------------------------- */

/* nvmlPciInfo_t (NVML API v3+): char busIdLegacy[16]; unsigned domain, bus,
 * device, pciDeviceId, pciSubSystemId; char busId[32].  A larger buffer is
 * passed so a grown struct cannot overrun. */
struct nvml_pci {
    char bus_legacy[16];
    unsigned domain, bus, device, devid, subsys;
    char bus_id[32];
    char spare[256];
};

int ncd__topo_nvml_fill(struct ncd_topo *t, const struct ncd__nvml_api *api)
{
    int r = api->init();
    if (r != 0) {
        snprintf(t->nvlink_source, sizeof t->nvlink_source,
                 "nvmlInit_v2 failed (NVML error %d)", r);
        return 0;
    }
    if (api->driver_version)
        api->driver_version(t->driver_version, sizeof t->driver_version);
    if (api->cuda_version)
        api->cuda_version(&t->cuda_driver_version);
    unsigned n = 0;
    int rc = 0;
    int *sw = calloc(t->n_gpu + 1, sizeof *sw);
    if (!sw || ensure_nvlinks(t) < 0) {
        rc = NCD_ENOMEM;
    } else if ((r = api->count(&n)) != 0) {
        snprintf(t->nvlink_source, sizeof t->nvlink_source,
                 "nvmlDeviceGetCount_v2 failed (NVML error %d)", r);
    } else {
        for (unsigned i = 0; i < n; i++) {
            void *dev;
            struct nvml_pci pi;
            char bdf[16];
            memset(&pi, 0, sizeof pi);
            if (api->handle(i, &dev) != 0 || api->pci(dev, &pi) != 0)
                continue;
            pi.bus_id[sizeof pi.bus_id - 1] = '\0';
            norm_bdf(pi.bus_id, bdf);
            int g = gpu_index(t, bdf);
            if (g < 0)
                continue; /* a GPU NVML sees but sysfs does not (or MIG) */
            char nm[96];
            if (api->name && api->name(dev, nm, sizeof nm) == 0) {
                nm[sizeof nm - 1] = '\0';
                ncd__scpy(t->dev[g].name, sizeof t->dev[g].name, nm);
            }
            if (!api->link_state || !api->link_remote)
                continue;
            /* NVML_NVLINK_MAX_LINKS is 18 today; stop at the first link
             * NVML refuses (NOT_SUPPORTED / INVALID_ARGUMENT). */
            for (unsigned l = 0; l < 64; l++) {
                int active = 0;
                if (api->link_state(dev, l, &active) != 0)
                    break;
                if (!active)
                    continue;
                struct nvml_pci rp;
                char rb[16];
                memset(&rp, 0, sizeof rp);
                if (api->link_remote(dev, l, &rp) != 0)
                    continue;
                rp.bus_id[sizeof rp.bus_id - 1] = '\0';
                norm_bdf(rp.bus_id, rb);
                int peer = gpu_index(t, rb);
                if (peer >= 0)
                    t->nvlinks[(size_t)g * t->n_gpu + (size_t)peer]++;
                else
                    sw[g]++; /* an NVSwitch (or a CPU on C2C systems) */
            }
        }
        apply_switch_links(t, sw);
        t->nvlink_known = 1;
        snprintf(t->nvlink_source, sizeof t->nvlink_source, "NVML");
    }
    free(sw);
    api->shutdown();
    return rc;
}

static int nvml_live(struct ncd_topo *t)
{
    void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(t->nvlink_source, sizeof t->nvlink_source,
                 "libnvidia-ml.so.1 not loadable: %.90s", e ? e : "?");
        return 0;
    }
#define SYM(field, name)                                                      \
    api.field = (__typeof__(api.field))(uintptr_t)dlsym(h, name)
    struct ncd__nvml_api api;
    memset(&api, 0, sizeof api);
    SYM(init, "nvmlInit_v2");
    SYM(shutdown, "nvmlShutdown");
    SYM(count, "nvmlDeviceGetCount_v2");
    SYM(handle, "nvmlDeviceGetHandleByIndex_v2");
    SYM(name, "nvmlDeviceGetName");
    SYM(pci, "nvmlDeviceGetPciInfo_v3");
    SYM(link_state, "nvmlDeviceGetNvLinkState");
    SYM(link_remote, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
    SYM(driver_version, "nvmlSystemGetDriverVersion");
    SYM(cuda_version, "nvmlSystemGetCudaDriverVersion_v2");
#undef SYM
    int rc = 0;
    if (!api.init || !api.shutdown || !api.count || !api.handle || !api.pci)
        snprintf(t->nvlink_source, sizeof t->nvlink_source,
                 "libnvidia-ml.so.1 lacks the NVML v2/v3 entry points");
    else
        rc = ncd__topo_nvml_fill(t, &api);
    dlclose(h);
    return rc;
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
    char v[64];
    if (ncd_fs_read_str(ctx, "/proc/driver/nvidia/version", v, sizeof v) == 0) {
        /* "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05 ..." */
        char *k = strstr(v, "Kernel Module");
        if (k && sscanf(k + 13, " %31s", out->driver_version) != 1)
            out->driver_version[0] = '\0';
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
    if (ncd_ctx_is_live(ctx))
        return nvml_live(out);
    char *buf;
    size_t len;
    if (ncd_fs_read(ctx, "/.ncd/nvml", 1 << 20, &buf, &len) == 0) {
        int rc = ncd_topo_parse_nvml(ctx, out, buf, len);
        free(buf);
        if (rc == NCD_ENOMEM)
            return rc;
        if (rc < 0) {
            snprintf(out->nvlink_source, sizeof out->nvlink_source,
                     "%.120s", ncd_ctx_errdetail(ctx));
            ncd_ctx_clear_error(ctx);
        }
    } else {
        ncd_ctx_clear_error(ctx);
        snprintf(out->nvlink_source, sizeof out->nvlink_source,
                 "not visible in this capture (no .ncd/nvml)");
    }
    return 0;
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
    stack[sp++] = hwloc_get_root_obj(topo);
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

/* ---- rendering -------------------------------------------------------------- */

void ncd_topo_matrix_text(const struct ncd_topo *t, struct ncd_strbuf *out)
{
    if (!t->n_dev) {
        ncd_sb_puts(out, "No NVIDIA GPU and no NIC found on the PCI bus");
        ncd_sb_printf(out, " (%s).\n", t->pci.present
                                           ? "/sys/bus/pci/devices read"
                                           : "/sys/bus/pci/devices missing");
        return;
    }
    ncd_sb_puts(out, "\t");
    for (size_t j = 0; j < t->n_dev; j++)
        ncd_sb_printf(out, "%s\t", t->dev[j].label);
    ncd_sb_puts(out, "CPU Affinity\tNUMA Affinity\n");
    for (size_t i = 0; i < t->n_dev; i++) {
        ncd_sb_printf(out, "%s\t", t->dev[i].label);
        for (size_t j = 0; j < t->n_dev; j++) {
            int nv;
            enum ncd_link l = ncd_topo_link(t, i, j, &nv);
            if (l == NCD_LINK_X)
                ncd_sb_puts(out, " X \t");
            else if (l == NCD_LINK_NV)
                ncd_sb_printf(out, "NV%d\t", nv);
            else
                ncd_sb_printf(out, "%s\t", ncd_link_name(l));
        }
        const struct ncd_topo_dev *d = &t->dev[i];
        if (d->kind == NCD_TOPO_GPU) {
            ncd_sb_printf(out, "%s\t", *d->cpulist ? d->cpulist : "N/A");
            if (d->numa_node >= 0)
                ncd_sb_printf(out, "%d", d->numa_node);
            else
                ncd_sb_puts(out, "N/A");
        }
        ncd_sb_putc(out, '\n');
    }
    ncd_sb_puts(
        out,
        "\nLegend:\n\n"
        "  X    = Self\n"
        "  SYS  = Connection traversing PCIe as well as the SMP interconnect "
        "between NUMA nodes (e.g., QPI/UPI)\n"
        "  NODE = Connection traversing PCIe as well as the interconnect "
        "between PCIe Host Bridges within a NUMA node\n"
        "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge "
        "(typically the CPU)\n"
        "  PXB  = Connection traversing multiple PCIe bridges (without "
        "traversing the PCIe Host Bridge)\n"
        "  PIX  = Connection traversing at most a single PCIe bridge\n"
        "  NV#  = Connection traversing a bonded set of # NVLinks\n");
    if (t->n_nic) {
        ncd_sb_puts(out, "\nNIC Legend:\n\n");
        for (size_t i = t->n_gpu; i < t->n_dev; i++) {
            const struct ncd_topo_dev *d = &t->dev[i];
            ncd_sb_printf(out, "  %s: %s", d->label, d->name);
            if (*d->netdev && strcmp(d->netdev, d->name) != 0)
                ncd_sb_printf(out, " (%s)", d->netdev);
            if (!d->rdma)
                ncd_sb_puts(out, " [no RDMA]");
            ncd_sb_putc(out, '\n');
        }
    }
    if (t->n_gpu) {
        ncd_sb_puts(out, "\nGPU Legend:\n\n");
        for (size_t i = 0; i < t->n_gpu; i++)
            ncd_sb_printf(out, "  %s: %s %s\n", t->dev[i].label,
                          t->dev[i].bdf, t->dev[i].name);
        ncd_sb_printf(out, "\nNVLink: %s\n",
                      t->nvlink_known ? t->nvlink_source
                                      : t->nvlink_source[0]
                                            ? t->nvlink_source
                                            : "unknown");
    }
}

json_t *ncd_topo_to_json(const struct ncd_topo *t)
{
    json_t *o = json_object();
    json_t *gpus = json_array(), *nics = json_array(), *mat = json_array();
    if (!o || !gpus || !nics || !mat) {
        json_decref(o);
        json_decref(gpus);
        json_decref(nics);
        json_decref(mat);
        return NULL;
    }
    json_object_set_new(o, "source", ncd__jstr(t->source));
    for (size_t i = 0; i < t->n_dev; i++) {
        const struct ncd_topo_dev *d = &t->dev[i];
        json_t *e = json_pack("{s:s,s:o,s:o,s:o,s:o}", "label", d->label,
                              "name", ncd__jstr(d->name), "bdf",
                              ncd__jstr(d->bdf), "numa_node",
                              d->numa_node >= 0 ? json_integer(d->numa_node)
                                                : json_null(),
                              "cpu_affinity",
                              *d->cpulist ? ncd__jstr(d->cpulist)
                                          : json_null());
        if (!e)
            continue;
        if (d->kind == NCD_TOPO_NIC) {
            json_object_set_new(e, "rdma", json_boolean(d->rdma));
            json_object_set_new(e, "netdev", *d->netdev
                                                 ? ncd__jstr(d->netdev)
                                                 : json_null());
        }
        json_array_append_new(d->kind == NCD_TOPO_GPU ? gpus : nics, e);
        json_t *row = json_array();
        for (size_t j = 0; row && j < t->n_dev; j++) {
            int nv;
            enum ncd_link l = ncd_topo_link(t, i, j, &nv);
            char s[16];
            if (l == NCD_LINK_NV)
                snprintf(s, sizeof s, "NV%d", nv);
            else
                ncd__scpy(s, sizeof s, ncd_link_name(l));
            json_array_append_new(row, json_string(s));
        }
        json_array_append_new(mat, row);
    }
    json_object_set_new(o, "gpus", gpus);
    json_object_set_new(o, "nics", nics);
    json_object_set_new(o, "matrix", mat);
    json_object_set_new(o, "nvlink_source", ncd__jstr(t->nvlink_source));
    json_object_set_new(o, "driver_version", *t->driver_version
                                                 ? ncd__jstr(t->driver_version)
                                                 : json_null());
    return o;
}
