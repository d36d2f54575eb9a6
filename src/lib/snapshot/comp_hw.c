/* SPDX-License-Identifier: MIT */
/* Components: the PCI tree with GPUs, NICs and NVLink; RDMA devices with
 * their verbs library and providers (see ncd/node.h). */
#define _GNU_SOURCE
#include "ncd/error.h"
#include "ncd/fs.h"
#include "ncd/node.h"
#include "snapshot/snapshot_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ncd__comp_pci(struct ncd_ctx *ctx, const struct ncd_node_opts *o,
                  struct ncd_node *n)
{
    struct ncd_topo *t = &n->topo;
    if (o->topology_xml)
        return ncd_topo_load_xml(ctx, o->topology_xml, t);
    int rc = ncd_topo_probe(ctx, 0, t);
    if (rc < 0 || o->nvml == NCD_NVML_NEVER)
        return rc;
    /* NVML init costs 0.1-2 s on a GPU node: it is asked only when NVLink
     * can change a finding, i.e. when some GPU pair is not under one PCIe
     * switch, unless the answer is a file read (a recording). */
    int need = o->nvml == NCD_NVML_ALWAYS || !ncd_sys_nvml_costly(ctx);
    for (size_t a = 0; a < t->n_gpu && !need; a++)
        for (size_t b = a + 1; b < t->n_gpu; b++)
            if (ncd_topo_link(t, a, b, NULL) >= NCD_LINK_PHB)
                need = 1;
    return need ? ncd_topo_nvml(ctx, t) : 0;
}

/* The verbs provider of a kernel driver (rdma-core's
 * /etc/libibverbs.d/<name>.driver and lib<name>-rdmav<N>.so). */
static const char *provider_of(const char *drv)
{
    if (strncmp(drv, "mlx5", 4) == 0)
        return "mlx5";
    if (strncmp(drv, "mlx4", 4) == 0)
        return "mlx4";
    if (strcmp(drv, "bnxt_en") == 0)
        return "bnxt_re";
    if (strcmp(drv, "efa") == 0)
        return "efa";
    if (strcmp(drv, "irdma") == 0 || strcmp(drv, "ice") == 0)
        return "irdma";
    return "";
}

/* rdma-core's provider directories, listed once. */
static const char *const prov_dirs[] = {
    "/usr/lib/x86_64-linux-gnu/libibverbs",
    "/usr/lib/aarch64-linux-gnu/libibverbs",
    "/usr/lib/powerpc64le-linux-gnu/libibverbs", "/usr/lib64/libibverbs",
    "/usr/lib/libibverbs"};
#define N_PROV_DIRS (sizeof prov_dirs / sizeof *prov_dirs)

struct prov_listing {
    char **names[N_PROV_DIRS];
    int n[N_PROV_DIRS]; /* < 0: the directory does not exist */
};

/* Looks for lib<prov>-rdmav<N>.so in the provider directories.  Returns
 * how many of those directories exist (0: cannot tell); `out` receives the
 * first match. */
static int provider_lib(const struct prov_listing *pl, const char *prov,
                        char *out, size_t outsz)
{
    char pre[48];
    snprintf(pre, sizeof pre, "lib%s-rdmav", prov);
    int seen = 0;
    out[0] = '\0';
    for (size_t d = 0; d < N_PROV_DIRS && !*out; d++) {
        if (pl->n[d] < 0)
            continue;
        seen++;
        for (int i = 0; i < pl->n[d] && !*out; i++)
            if (strncmp(pl->names[d][i], pre, strlen(pre)) == 0)
                snprintf(out, outsz, "%s/%s", prov_dirs[d], pl->names[d][i]);
    }
    return seen;
}

int ncd__comp_rdma(struct ncd_ctx *ctx, const struct ncd_node_opts *o,
                   struct ncd_node *n)
{
    (void)o;
    struct ncd_rdma *r = &n->rdma.r;
    int rc = ncd_rdma_probe(ctx, r);
    if (rc < 0)
        return rc;
    ncd_gid_prefs_from_env(ctx, &n->rdma.prefs);
    /* NCCL's IB transport takes only IBV_PORT_ACTIVE ports (NCCL
     * src/transport/net_ib/init.cc); state reads "4: ACTIVE". */
    for (size_t i = 0; i < r->n; i++)
        for (size_t k = 0; k < r->v[i].n_ports; k++) {
            if (!strstr(r->v[i].ports[k].state_text, "ACTIVE"))
                continue;
            n->rdma.active_ports++;
            size_t l = strlen(n->rdma.hca_list);
            snprintf(n->rdma.hca_list + l, sizeof n->rdma.hca_list - l,
                     "%s%s:%d", l ? "," : "=", r->v[i].name,
                     r->v[i].ports[k].port);
        }
    if (!r->n)
        return 0;
    const char *lib = ncd_getenv(ctx, "NCCL_IBVERBS_LIB");
    snprintf(n->rdma.verbs_lib, sizeof n->rdma.verbs_lib, "%s",
             lib && *lib ? lib : "libibverbs.so.1");
    if ((rc = ncd_sys_dlopen(ctx, n->rdma.verbs_lib, &n->rdma.verbs)) < 0)
        return rc;
    n->rdma.libibverbs_d = ncd_fs_exists(ctx, "/etc/libibverbs.d");
    n->rdma.prov = calloc(r->n, sizeof *n->rdma.prov);
    if (!n->rdma.prov)
        return NCD_ENOMEM;
    struct prov_listing pl = {0};
    int listed = 0;
    for (size_t i = 0; i < r->n && rc == 0; i++) {
        struct ncd_rdma_provider *p = &n->rdma.prov[i];
        snprintf(p->name, sizeof p->name, "%s", provider_of(r->v[i].driver));
        if (!*p->name || !n->rdma.libibverbs_d)
            continue;
        /* the same provider for every port of a vendor: asked once */
        const struct ncd_rdma_provider *same = NULL;
        for (size_t k = 0; k < i && !same; k++)
            if (strcmp(n->rdma.prov[k].name, p->name) == 0)
                same = &n->rdma.prov[k];
        if (same) {
            *p = *same;
            continue;
        }
        char path[96];
        snprintf(path, sizeof path, "/etc/libibverbs.d/%s.driver", p->name);
        p->config = ncd_fs_exists(ctx, path);
        for (size_t d = 0; d < N_PROV_DIRS && !listed; d++)
            if ((pl.n[d] = ncd_fs_list(ctx, prov_dirs[d], &pl.names[d])) ==
                NCD_ENOMEM)
                rc = NCD_ENOMEM;
        listed = 1;
        p->dirs = provider_lib(&pl, p->name, p->lib, sizeof p->lib);
    }
    for (size_t d = 0; d < N_PROV_DIRS; d++)
        if (pl.n[d] > 0)
            ncd_fs_list_free(pl.names[d], pl.n[d]);
    ncd_ctx_clear_error(ctx);
    return rc;
}
