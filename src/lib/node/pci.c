/* SPDX-License-Identifier: MIT */
/* PCI tree, ACS, IOMMU and VM detection from sysfs (see ncd/pci.h). */
#define _GNU_SOURCE
#include "ncd/pci.h"
#include "ncd/error.h"
#include "ncd/fs.h"
#include "node_internal.h"

#include <ctype.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ncd_pci_cfg_pcie_type(const unsigned char *cfg, size_t len)
{
    if (len < 64)
        return NCD_PCIE_UNKNOWN;
    /* Status register bit 4: capability list present. */
    if (!(cfg[6] & 0x10))
        return NCD_PCIE_UNKNOWN;
    unsigned off = cfg[0x34] & 0xfc;
    for (int guard = 0; off >= 0x40 && off + 4 <= len && off < 256 &&
                        guard < 48;
         guard++) {
        if (cfg[off] == 0x10) /* PCI Express capability */
            return (cfg[off + 2] >> 4) & 0xf;
        off = cfg[off + 1] & 0xfc;
    }
    return NCD_PCIE_UNKNOWN;
}

int ncd_pci_cfg_acs(const unsigned char *cfg, size_t len, unsigned *cap,
                    unsigned *ctrl)
{
    if (len <= 256)
        return NCD_ERANGE;
    unsigned off = 0x100;
    for (int guard = 0; guard < 512; guard++) {
        if (off < 0x100 || off + 8 > len || (off & 3))
            return NCD_EPARSE;
        unsigned hdr = (unsigned)cfg[off] | (unsigned)cfg[off + 1] << 8 |
                       (unsigned)cfg[off + 2] << 16 |
                       (unsigned)cfg[off + 3] << 24;
        if (hdr == 0 || hdr == 0xffffffffu)
            return 0;
        if ((hdr & 0xffff) == 0x000d) {
            *cap = (unsigned)cfg[off + 4] | (unsigned)cfg[off + 5] << 8;
            *ctrl = (unsigned)cfg[off + 6] | (unsigned)cfg[off + 7] << 8;
            return 1;
        }
        unsigned next = (hdr >> 20) & 0xffc;
        if (next == 0)
            return 0;
        off = next;
    }
    return NCD_EPARSE;
}

const char *ncd_acs_ctrl_str(unsigned ctrl, char *buf, size_t len)
{
    static const char *names[] = {"SrcValid",   "TransBlk",    "ReqRedir",
                                  "CmpltRedir", "UpstreamFwd", "EgressCtrl",
                                  "DirectTrans"};
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < 7 && o < len; i++)
        o += (size_t)snprintf(buf + o, len - o, "%s%s%c", i ? " " : "",
                              names[i], (ctrl >> i) & 1 ? '+' : '-');
    return buf;
}

static unsigned read_hex(struct ncd_ctx *ctx, const char *dir,
                         const char *file, int *ok)
{
    char p[400];
    long long v;
    snprintf(p, sizeof p, "%s/%s", dir, file);
    if (ncd_fs_read_ll(ctx, p, &v) < 0 || v < 0) {
        *ok = 0;
        return 0;
    }
    *ok = 1;
    return (unsigned)v;
}

enum ncd_pci_role ncd_pci_role_of(unsigned vendor, unsigned cls)
{
    unsigned base = cls >> 16, sub = (cls >> 8) & 0xff;
    if (base == 0x06 && sub == 0x04)
        return NCD_PCI_BRIDGE;
    if (vendor == 0x10de && base == 0x03)
        return NCD_PCI_GPU;
    if (vendor == 0x10de && base == 0x06 && sub == 0x80)
        return NCD_PCI_NVSWITCH;
    if (base == 0x02)
        return NCD_PCI_NIC;
    return NCD_PCI_OTHER;
}

static int cmp_depth(const void *a, const void *b)
{
    const struct ncd_pci_dev *x = a, *y = b;
    if (x->depth != y->depth)
        return x->depth - y->depth;
    int r = strcmp(x->root, y->root);
    return r ? r : strcmp(x->bdf, y->bdf);
}

/* Reads the parts of a configuration space the parsers look at: the
 * first 256 bytes, then only the extended capability headers along the
 * list and the ACS registers.  Each dword of sysfs `config` is a real PCI
 * config cycle; reading all 4096 bytes of hundreds of bridges would cost
 * a large part of check's time budget on a big node.  Bytes not read stay
 * zero; *len is 4096 when the extended space is readable (root), else what
 * the standard read returned. */
static int read_config(struct ncd_ctx *ctx, const char *path,
                       unsigned char *cfg, size_t *len)
{
    memset(cfg, 0, 4096);
    int fd = ncd_fs_open(ctx, path, O_RDONLY);
    if (fd < 0)
        return fd;
    ssize_t n = pread(fd, cfg, 256, 0);
    if (n <= 0) {
        close(fd);
        return NCD_EIO;
    }
    *len = (size_t)n;
    unsigned off = 0x100;
    if (n == 256 && pread(fd, cfg + off, 4, off) == 4) {
        *len = 4096;
        for (int guard = 0; guard < 64; guard++) {
            unsigned hdr = (unsigned)cfg[off] | (unsigned)cfg[off + 1] << 8 |
                           (unsigned)cfg[off + 2] << 16 |
                           (unsigned)cfg[off + 3] << 24;
            if (hdr == 0 || hdr == 0xffffffffu)
                break;
            if ((hdr & 0xffff) == 0x000d) {
                if (pread(fd, cfg + off + 4, 4, off + 4) != 4)
                    memset(cfg + off, 0, 4); /* unreadable: "no ACS" */
                break;
            }
            unsigned next = (hdr >> 20) & 0xffc;
            if (next < 0x100 || next + 8 > 4096 || next == off)
                break;
            off = next;
            if (pread(fd, cfg + off, 4, off) != 4)
                break;
        }
    }
    close(fd);
    return 0;
}

static void probe_details(struct ncd_ctx *ctx, struct ncd_pci_dev *d)
{
    char dir[64], p[400], link[400];
    long long v;
    snprintf(dir, sizeof dir, "/sys/bus/pci/devices/%s", d->bdf);
    int ok;
    d->subsys_vendor = read_hex(ctx, dir, "subsystem_vendor", &ok);
    d->subsys_device = read_hex(ctx, dir, "subsystem_device", &ok);
    snprintf(p, sizeof p, "%s/numa_node", dir);
    d->numa_node = ncd_fs_read_ll(ctx, p, &v) == 0 ? (int)v : -1;
    if (d->numa_node < -1)
        d->numa_node = -1;
    snprintf(p, sizeof p, "%s/local_cpulist", dir);
    ncd_fs_read_str(ctx, p, d->cpulist, sizeof d->cpulist);
    snprintf(p, sizeof p, "%s/max_link_speed", dir);
    ncd_fs_read_str(ctx, p, d->link_speed, sizeof d->link_speed);
    snprintf(p, sizeof p, "%s/max_link_width", dir);
    d->link_width = ncd_fs_read_ll(ctx, p, &v) == 0 ? (int)v : 0;
    snprintf(p, sizeof p, "%s/driver", dir);
    if (ncd_fs_readlink(ctx, p, link, sizeof link) == 0) {
        const char *b = strrchr(link, '/');
        ncd__scpy(d->driver, sizeof d->driver, b ? b + 1 : link);
    }
    if (d->role != NCD_PCI_BRIDGE)
        return;
    snprintf(p, sizeof p, "%s/config", dir);
    unsigned char cfg[4096];
    size_t len = 0;
    if (read_config(ctx, p, cfg, &len) < 0)
        return;
    d->pcie_type = (enum ncd_pcie_type)ncd_pci_cfg_pcie_type(cfg, len);
    unsigned cap = 0, ctrl = 0;
    int r = ncd_pci_cfg_acs(cfg, len, &cap, &ctrl);
    if (r == 1) {
        d->acs = 1;
        d->acs_cap = cap;
        d->acs_ctrl = ctrl;
    } else if (r == 0) {
        d->acs = 0;
    }
}

int ncd_pci_scan(struct ncd_ctx *ctx, struct ncd_pci_list *out)
{
    memset(out, 0, sizeof *out);
    char **names;
    int n = ncd_fs_list(ctx, "/sys/bus/pci/devices", &names);
    if (n == NCD_ENOMEM)
        return n;
    if (n < 0) {
        ncd_ctx_clear_error(ctx);
        return 0;
    }
    out->present = 1;
    out->v = calloc((size_t)n + 1, sizeof *out->v);
    if (!out->v) {
        ncd_fs_list_free(names, n);
        return NCD_ENOMEM;
    }
    for (int i = 0; i < n; i++) {
        struct ncd_pci_dev *d = &out->v[out->n];
        char dir[300], path[400];
        char chain[32][16];
        if (strlen(names[i]) >= sizeof d->bdf)
            continue;
        memset(d, 0, sizeof *d);
        for (size_t k = 0; names[i][k]; k++)
            d->bdf[k] = (char)tolower((unsigned char)names[i][k]);
        snprintf(dir, sizeof dir, "/sys/bus/pci/devices/%s", names[i]);
        if (ncd_fs_realpath(ctx, dir, path, sizeof path) < 0)
            ncd__scpy(path, sizeof path, dir);
        ncd__scpy(d->path, sizeof d->path, path);
        int depth = ncd_pci_path_split(path, d->root, chain, 32);
        d->depth = depth > 0 ? depth - 1 : 0;
        int ok;
        d->vendor = read_hex(ctx, dir, "vendor", &ok);
        d->device = read_hex(ctx, dir, "device", &ok);
        d->class_code = read_hex(ctx, dir, "class", &ok);
        d->role = ncd_pci_role_of(d->vendor, d->class_code);
        d->numa_node = -1;
        d->pcie_type = NCD_PCIE_UNKNOWN;
        d->acs = -1;
        d->parent = -1;
        if (d->role != NCD_PCI_OTHER)
            probe_details(ctx, d);
        out->n++;
    }
    ncd_fs_list_free(names, n);
    ncd_ctx_clear_error(ctx);
    if (out->n)
        qsort(out->v, out->n, sizeof *out->v, cmp_depth);
    for (size_t i = 0; i < out->n; i++) {
        char root[32], chain[32][16];
        int c = ncd_pci_path_split(out->v[i].path, root, chain, 32);
        if (c >= 2)
            out->v[i].parent = ncd_pci_find(out, chain[c - 2]);
    }
    return 0;
}

void ncd_pci_list_release(struct ncd_pci_list *l)
{
    free(l->v);
    memset(l, 0, sizeof *l);
}

int ncd_pci_find(const struct ncd_pci_list *l, const char *bdf)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcasecmp(l->v[i].bdf, bdf) == 0)
            return (int)i;
    return -1;
}

/* ---- IOMMU -------------------------------------------------------------- */

void ncd_iommu_parse_cmdline(const char *buf, size_t len,
                             struct ncd_iommu *out)
{
    size_t o = 0;
    out->cmdline_opts[0] = '\0';
    out->cmdline_pt = out->cmdline_on = out->cmdline_off = 0;
    size_t i = 0;
    while (i < len) {
        while (i < len && isspace((unsigned char)buf[i]))
            i++;
        size_t s = i;
        while (i < len && buf[i] && !isspace((unsigned char)buf[i]))
            i++;
        size_t tl = i - s;
        if (tl == 0) {
            if (i < len && !buf[i])
                break;
            continue;
        }
        const char *t = buf + s;
        int rel = 0;
#define TOK_IS(lit) (tl == sizeof(lit) - 1 && memcmp(t, lit, tl) == 0)
#define TOK_HAS(pre) (tl >= sizeof(pre) - 1 && memcmp(t, pre, sizeof(pre) - 1) == 0)
        if (TOK_HAS("intel_iommu=") || TOK_HAS("amd_iommu=") ||
            TOK_HAS("iommu=") || TOK_HAS("iommu.passthrough=")) {
            rel = 1;
            if (TOK_IS("iommu=pt") || TOK_IS("iommu.passthrough=1") ||
                TOK_IS("iommu=soft"))
                out->cmdline_pt = 1;
            if (TOK_HAS("intel_iommu=on") || TOK_IS("amd_iommu=on") ||
                TOK_IS("amd_iommu=force") || TOK_IS("iommu=force") ||
                TOK_IS("iommu=on"))
                out->cmdline_on = 1;
            if (TOK_IS("intel_iommu=off") || TOK_IS("amd_iommu=off") ||
                TOK_IS("iommu=off"))
                out->cmdline_off = 1;
        }
#undef TOK_IS
#undef TOK_HAS
        if (rel && o + tl + 2 < sizeof out->cmdline_opts) {
            if (o)
                out->cmdline_opts[o++] = ' ';
            memcpy(out->cmdline_opts + o, t, tl);
            o += tl;
            out->cmdline_opts[o] = '\0';
        }
    }
}

int ncd_iommu_probe(struct ncd_ctx *ctx, struct ncd_iommu *out)
{
    memset(out, 0, sizeof *out);
    char **names;
    int n = ncd_fs_list(ctx, "/sys/kernel/iommu_groups", &names);
    out->groups = n >= 0 ? n : -1;
    for (int i = 0; i < n; i++) {
        char p[128], t[32];
        snprintf(p, sizeof p, "/sys/kernel/iommu_groups/%s/type", names[i]);
        if (ncd_fs_read_str(ctx, p, t, sizeof t) == 0) {
            if (strncmp(t, "DMA", 3) == 0)
                out->translated++;
            else if (strcmp(t, "identity") == 0)
                out->identity++;
        }
    }
    if (n >= 0)
        ncd_fs_list_free(names, n);
    n = ncd_fs_list(ctx, "/sys/class/iommu", &names);
    out->units = n > 0 ? n : 0;
    if (n >= 0)
        ncd_fs_list_free(names, n);
    char *cl;
    size_t len;
    if (ncd_fs_read(ctx, "/proc/cmdline", 1 << 16, &cl, &len) == 0) {
        ncd_iommu_parse_cmdline(cl, len, out);
        free(cl);
    }
    ncd_ctx_clear_error(ctx);
    return 0;
}

/* ---- virtualisation ------------------------------------------------------ */

const char *ncd_cpuinfo_arch(const char *buf, size_t len)
{
    /* the field names of /proc/cpuinfo differ by architecture */
#define HAS(lit) (memmem(buf, len, lit, sizeof(lit) - 1) != NULL)
    const char *arch = "";
    if (HAS("vendor_id") || HAS("\nflags"))
        arch = "x86_64";
    else if (HAS("CPU implementer") || HAS("\nFeatures"))
        arch = "aarch64";
    else if (HAS("\ncpu\t\t: POWER") || HAS("\nplatform\t: pSeries") ||
             HAS("\nplatform\t: PowerNV"))
        arch = "ppc64le";
#undef HAS
    return arch;
}

static int virt_detect(struct ncd_ctx *ctx, struct ncd_virt *out,
                       const char *ci, size_t cilen);

/* The CPU architecture from /proc/cpuinfo (read once here for it and for
 * the hypervisor flag); "" when unknown.  Returns the buffer or NULL. */
static char *cpuinfo_read(struct ncd_ctx *ctx, struct ncd_virt *out,
                          size_t *len)
{
    char *ci = NULL;
    if (ncd_fs_read(ctx, "/proc/cpuinfo", 16u << 20, &ci, len) != 0)
        return NULL;
    snprintf(out->arch, sizeof out->arch, "%s", ncd_cpuinfo_arch(ci, *len));
    return ci;
}

int ncd_virt_probe(struct ncd_ctx *ctx, struct ncd_virt *out)
{
    memset(out, 0, sizeof *out);
    size_t cilen = 0;
    char *ci = cpuinfo_read(ctx, out, &cilen);
    int rc = virt_detect(ctx, out, ci, cilen);
    free(ci);
    ncd_ctx_clear_error(ctx);
    return rc;
}

static int virt_detect(struct ncd_ctx *ctx, struct ncd_virt *out,
                       const char *ci, size_t cilen)
{
    char s[256];
    if (ncd_fs_read_str(ctx, "/proc/version", s, sizeof s) == 0 &&
        (strcasestr(s, "microsoft") || strcasestr(s, "WSL"))) {
        out->wsl = 1;
        out->vm = 1;
        snprintf(out->hypervisor, sizeof out->hypervisor, "WSL");
        snprintf(out->evidence, sizeof out->evidence, "/proc/version: %.200s",
                 s);
        ncd_ctx_clear_error(ctx);
        return 0;
    }
    static const struct {
        const char *needle, *name;
    } dmi[] = {
        {"QEMU", "QEMU/KVM"},        {"KVM", "KVM"},
        {"Amazon EC2", "Amazon EC2"}, {"Google Compute Engine", "Google Compute Engine"},
        {"Virtual Machine", "Microsoft Hyper-V"}, {"VMware", "VMware"},
        {"VirtualBox", "VirtualBox"}, {"OpenStack", "OpenStack"},
        {"Alibaba Cloud", "Alibaba Cloud ECS"}, {"Xen", "Xen"},
        {"BHYVE", "bhyve"},
    };
    const char *files[] = {"/sys/class/dmi/id/product_name",
                           "/sys/class/dmi/id/sys_vendor"};
    for (size_t f = 0; f < 2; f++) {
        if (ncd_fs_read_str(ctx, files[f], s, sizeof s) < 0)
            continue;
        for (size_t i = 0; i < sizeof dmi / sizeof dmi[0]; i++)
            if (strstr(s, dmi[i].needle)) {
                out->vm = 1;
                snprintf(out->hypervisor, sizeof out->hypervisor, "%s",
                         dmi[i].name);
                snprintf(out->evidence, sizeof out->evidence, "%s: %.200s",
                         files[f], s);
                ncd_ctx_clear_error(ctx);
                return 0;
            }
    }
    if (ncd_fs_read_str(ctx, "/sys/hypervisor/type", s, sizeof s) == 0 &&
        *s) {
        out->vm = 1;
        snprintf(out->hypervisor, sizeof out->hypervisor, "%.60s", s);
        snprintf(out->evidence, sizeof out->evidence,
                 "/sys/hypervisor/type: %.200s", s);
        ncd_ctx_clear_error(ctx);
        return 0;
    }
    /* The CPUID hypervisor bit, as the kernel shows it in the flags. */
    const char *fl = ci ? memmem(ci, cilen, "\nflags", 6) : NULL;
    if (fl) {
        const char *eol = memchr(fl + 1, '\n', (size_t)(ci + cilen - fl - 1));
        size_t fl_len = eol ? (size_t)(eol - fl) : (size_t)(ci + cilen - fl);
        if (memmem(fl, fl_len, " hypervisor", 11)) {
            out->vm = 1;
            snprintf(out->evidence, sizeof out->evidence,
                     "/proc/cpuinfo: CPU flag 'hypervisor'");
        }
    }
    return 0;
}
