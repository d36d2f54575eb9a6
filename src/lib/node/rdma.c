/* SPDX-License-Identifier: MIT */
/* RDMA devices, GID tables, NCCL's GID choice, dlopen probes. */
#define _GNU_SOURCE
#include "ncd/rdma.h"
#include "ncd/error.h"
#include "ncd/fs.h"
#include "ncd/pciaddr.h"
#include "node_internal.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

int ncd_ib_gid_parse(const char *s, struct ncd_ib_gid *g)
{
    unsigned char b[16];
    int nb = 0;
    for (const char *p = s; *p && !isspace((unsigned char)*p); p++) {
        if (*p == ':')
            continue;
        if (!isxdigit((unsigned char)p[0]) || !isxdigit((unsigned char)p[1]) ||
            nb >= 16)
            return NCD_EPARSE;
        char h[3] = {p[0], p[1], 0};
        b[nb++] = (unsigned char)strtoul(h, NULL, 16);
        p++;
    }
    if (nb != 16)
        return NCD_EPARSE;
    memcpy(g->raw, b, 16);
    ncd__scpy(g->text, sizeof g->text, s);
    static const unsigned char v4pre[12] = {0, 0, 0, 0, 0, 0,
                                            0, 0, 0, 0, 0xff, 0xff};
    g->family = memcmp(b, v4pre, 12) == 0 ? AF_INET : AF_INET6;
    int zero = 1;
    for (int i = 0; i < 16; i++)
        zero &= b[i] == 0;
    int ll = b[0] == 0xfe && (b[1] & 0xc0) == 0x80;
    g->valid = !zero && !ll;
    return 0;
}

enum ncd_gid_type ncd_ib_gid_type_parse(const char *s)
{
    if (strstr(s, "v2"))
        return NCD_GID_TYPE_V2;
    if (strstr(s, "v1"))
        return NCD_GID_TYPE_V1;
    return NCD_GID_TYPE_UNKNOWN;
}

void ncd_gid_prefs_from_env(struct ncd_ctx *ctx, struct ncd_gid_prefs *p)
{
    memset(p, 0, sizeof *p);
    p->family = AF_INET;
    p->roce_version = 2;
    const char *v = ncd_getenv(ctx, "NCCL_IB_ADDR_FAMILY");
    if (v && strcmp(v, "AF_INET6") == 0)
        p->family = AF_INET6;
    v = ncd_getenv(ctx, "NCCL_IB_ROCE_VERSION_NUM");
    if (v && *v)
        p->roce_version = (int)strtol(v, NULL, 0);
    v = ncd_getenv(ctx, "NCCL_IB_ADDR_RANGE");
    if (v && *v) {
        char tmp[80];
        ncd__scpy(tmp, sizeof tmp, v);
        char *sl = strchr(tmp, '/');
        if (sl) {
            *sl = '\0';
            int bits = atoi(sl + 1);
            unsigned char a[16] = {0};
            if (inet_pton(AF_INET, tmp, a + 12) == 1 && bits >= 0 &&
                bits <= 32) {
                a[10] = a[11] = 0xff;
                memcpy(p->range, a, 16);
                p->range_prefix = 96 + bits;
                p->have_range = 1;
            } else if (inet_pton(AF_INET6, tmp, a) == 1 && bits >= 0 &&
                       bits <= 128) {
                memcpy(p->range, a, 16);
                p->range_prefix = bits;
                p->have_range = 1;
            }
        }
    }
}

static int in_range(const struct ncd_ib_gid *g, const struct ncd_gid_prefs *p)
{
    if (!p->have_range)
        return 1;
    int bits = p->range_prefix;
    for (int i = 0; i < 16 && bits > 0; i++, bits -= 8) {
        unsigned char m = bits >= 8 ? 0xff : (unsigned char)(0xff << (8 - bits));
        if ((g->raw[i] & m) != (p->range[i] & m))
            return 0;
    }
    return 1;
}

const struct ncd_ib_gid *ncd_ib_port_gid(const struct ncd_ib_port *p,
                                         int index)
{
    for (size_t i = 0; i < p->n_gids; i++)
        if (p->gids[i].index == index)
            return &p->gids[i];
    return NULL;
}

int ncd_ib_gid_auto(const struct ncd_ib_port *p,
                    const struct ncd_gid_prefs *prefs)
{
    int cur = 0;
    for (int c = 1; c < p->gid_tbl_len; c++) {
        const struct ncd_ib_gid *cg = ncd_ib_port_gid(p, c);
        const struct ncd_ib_gid *g0 = ncd_ib_port_gid(p, cur);
        if (!cg)
            continue; /* unreadable entry */
        int fam_ok = cg->family == prefs->family;
        int rng_ok = in_range(cg, prefs);
        int cur_family = g0 ? g0->family : AF_INET6;
        if (fam_ok && rng_ok && cg->valid && cg->family != cur_family) {
            cur = c;
            continue;
        }
        if (!fam_ok || !cg->valid || !rng_ok)
            continue;
        if (cg->type == NCD_GID_TYPE_UNKNOWN)
            continue;
        int cur_ver = g0 ? (int)g0->type : 0;
        int cur_valid = g0 ? g0->valid : 0;
        if ((int)cg->type == prefs->roce_version &&
            (cur_ver != (int)cg->type || !cur_valid))
            cur = c;
    }
    return cur;
}

/* ---- probe ------------------------------------------------------------------ */

static int leading_int(const char *s)
{
    return isdigit((unsigned char)*s) ? atoi(s) : -1;
}

static int probe_port(struct ncd_ctx *ctx, const char *dev, const char *pn,
                      struct ncd_ib_port *pt)
{
    char base[200], p[300], s[128];
    long long v;
    snprintf(base, sizeof base, "/sys/class/infiniband/%s/ports/%s", dev, pn);
    pt->port = atoi(pn);
    pt->state = pt->phys_state = pt->lid = pt->sm_lid = -1;
    snprintf(p, sizeof p, "%s/state", base);
    if (ncd_fs_read_str(ctx, p, pt->state_text, sizeof pt->state_text) == 0)
        pt->state = leading_int(pt->state_text);
    snprintf(p, sizeof p, "%s/phys_state", base);
    if (ncd_fs_read_str(ctx, p, pt->phys_text, sizeof pt->phys_text) == 0)
        pt->phys_state = leading_int(pt->phys_text);
    snprintf(p, sizeof p, "%s/link_layer", base);
    ncd_fs_read_str(ctx, p, pt->link_layer, sizeof pt->link_layer);
    pt->is_ethernet = strcmp(pt->link_layer, "Ethernet") == 0;
    snprintf(p, sizeof p, "%s/rate", base);
    ncd_fs_read_str(ctx, p, pt->rate, sizeof pt->rate);
    snprintf(p, sizeof p, "%s/lid", base);
    if (ncd_fs_read_ll(ctx, p, &v) == 0)
        pt->lid = (int)v;
    snprintf(p, sizeof p, "%s/sm_lid", base);
    if (ncd_fs_read_ll(ctx, p, &v) == 0)
        pt->sm_lid = (int)v;
    char **names;
    snprintf(p, sizeof p, "%s/gids", base);
    int n = ncd_fs_list(ctx, p, &names);
    if (n == NCD_ENOMEM)
        return n;
    if (n <= 0) {
        if (n == 0)
            ncd_fs_list_free(names, n);
        return 0;
    }
    /* IB links use index 0 or the FLID index (default 1) only. */
    int lim = pt->is_ethernet ? n : (n < 2 ? n : 2);
    pt->gids = calloc((size_t)lim, sizeof *pt->gids);
    if (!pt->gids) {
        ncd_fs_list_free(names, n);
        return NCD_ENOMEM;
    }
    for (int i = 0; i < n; i++) {
        int idx = atoi(names[i]);
        if (!pt->is_ethernet && idx > 1)
            continue;
        if (idx + 1 > pt->gid_tbl_len)
            pt->gid_tbl_len = idx + 1;
        if ((int)pt->n_gids >= lim)
            break;
        snprintf(p, sizeof p, "%s/gids/%s", base, names[i]);
        if (ncd_fs_read_str(ctx, p, s, sizeof s) < 0)
            continue;
        struct ncd_ib_gid g = {.index = idx};
        if (ncd_ib_gid_parse(s, &g) < 0)
            continue;
        /* Skip the all-zero padding of the table: it is never chosen. */
        int zero = 1;
        for (int k = 0; k < 16; k++)
            zero &= g.raw[k] == 0;
        if (zero)
            continue;
        snprintf(p, sizeof p, "%s/gid_attrs/types/%s", base, names[i]);
        if (ncd_fs_read_str(ctx, p, s, sizeof s) == 0)
            g.type = ncd_ib_gid_type_parse(s);
        snprintf(p, sizeof p, "%s/gid_attrs/ndevs/%s", base, names[i]);
        ncd_fs_read_str(ctx, p, g.ndev, sizeof g.ndev);
        pt->gids[pt->n_gids++] = g;
    }
    ncd_fs_list_free(names, n);
    ncd_ctx_clear_error(ctx);
    return 0;
}

static const char *peer_files[] = {
    "/sys/kernel/mm/memory_peers/nv_mem/version",
    "/sys/kernel/mm/memory_peers/nv_mem_nc/version",
    "/sys/module/nvidia_peermem/version",
};

int ncd_rdma_probe(struct ncd_ctx *ctx, struct ncd_rdma *out)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < sizeof peer_files / sizeof *peer_files; i++)
        if (ncd_fs_exists(ctx, peer_files[i])) {
            out->peermem = 1;
            ncd__scpy(out->peermem_file, sizeof out->peermem_file,
                      peer_files[i]);
            break;
        }
    /* nvidia_peermem without a version file still shows as a module dir */
    if (!out->peermem && ncd_fs_exists(ctx, "/sys/module/nvidia_peermem")) {
        out->peermem = 1;
        ncd__scpy(out->peermem_file, sizeof out->peermem_file,
                  "/sys/module/nvidia_peermem");
    }
    char **names;
    int n = ncd_fs_list(ctx, "/dev/infiniband", &names);
    out->n_uverbs = -1;
    if (n >= 0) {
        out->n_uverbs = 0;
        for (int i = 0; i < n; i++)
            out->n_uverbs += strncmp(names[i], "uverbs", 6) == 0;
        ncd_fs_list_free(names, n);
    }
    n = ncd_fs_list(ctx, "/sys/class/infiniband", &names);
    if (n == NCD_ENOMEM)
        return n;
    if (n < 0) {
        ncd_ctx_clear_error(ctx);
        return 0;
    }
    out->sysfs_present = 1;
    out->v = calloc((size_t)n + 1, sizeof *out->v);
    if (!out->v) {
        ncd_fs_list_free(names, n);
        return NCD_ENOMEM;
    }
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        struct ncd_ib_dev *d = &out->v[out->n++];
        char p[300], path[400], root[32], chain[32][16], link[300];
        long long v;
        ncd__scpy(d->name, sizeof d->name, names[i]);
        d->numa_node = -1;
        snprintf(p, sizeof p, "/sys/class/infiniband/%s/device", names[i]);
        if (ncd_fs_realpath(ctx, p, path, sizeof path) == 0) {
            int c = ncd_pci_path_split(path, root, chain, 32);
            if (c > 0)
                ncd__scpy(d->bdf, sizeof d->bdf, chain[c - 1]);
        }
        snprintf(p, sizeof p, "/sys/class/infiniband/%s/device/driver",
                 names[i]);
        if (ncd_fs_readlink(ctx, p, link, sizeof link) == 0) {
            const char *b = strrchr(link, '/');
            ncd__scpy(d->driver, sizeof d->driver, b ? b + 1 : link);
        }
        snprintf(p, sizeof p, "/sys/class/infiniband/%s/device/numa_node",
                 names[i]);
        if (ncd_fs_read_ll(ctx, p, &v) == 0 && v >= 0)
            d->numa_node = (int)v;
        snprintf(p, sizeof p, "/sys/class/infiniband/%s/fw_ver", names[i]);
        ncd_fs_read_str(ctx, p, d->fw, sizeof d->fw);
        char **nets;
        snprintf(p, sizeof p, "/sys/class/infiniband/%s/device/net",
                 names[i]);
        int nn = ncd_fs_list(ctx, p, &nets);
        if (nn > 0)
            ncd__scpy(d->netdev, sizeof d->netdev, nets[0]);
        if (nn >= 0)
            ncd_fs_list_free(nets, nn);
        char **ports;
        snprintf(p, sizeof p, "/sys/class/infiniband/%s/ports", names[i]);
        int np = ncd_fs_list(ctx, p, &ports);
        if (np > 0) {
            d->ports = calloc((size_t)np, sizeof *d->ports);
            if (!d->ports)
                rc = NCD_ENOMEM;
            for (int k = 0; k < np && !rc; k++)
                rc = probe_port(ctx, names[i], ports[k],
                                &d->ports[d->n_ports++]);
        }
        if (np >= 0)
            ncd_fs_list_free(ports, np);
    }
    ncd_fs_list_free(names, n);
    ncd_ctx_clear_error(ctx);
    return rc;
}

void ncd_rdma_release(struct ncd_rdma *r)
{
    for (size_t i = 0; i < r->n; i++) {
        for (size_t k = 0; k < r->v[i].n_ports; k++)
            free(r->v[i].ports[k].gids);
        free(r->v[i].ports);
    }
    free(r->v);
    memset(r, 0, sizeof *r);
}
