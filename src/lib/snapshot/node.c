/* SPDX-License-Identifier: MIT */
/* The node snapshot: runs the components of components.def once each and
 * answers questions about the result (see ncd/node.h). */
#define _GNU_SOURCE
#include "ncd/error.h"
#include "ncd/node.h"
#include "ncd/version.h"
#include "snapshot/snapshot_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*fill_fn)(struct ncd_ctx *, const struct ncd_node_opts *,
                       struct ncd_node *);

static const struct component {
    enum ncd_node_part part;
    unsigned requires;
    fill_fn fill;
} components[] = {
#define NCD_COMPONENT(part, requires, fill) {part, requires, fill},
#include "snapshot/components.def"
#undef NCD_COMPONENT
};

static const char *const part_names[NCD_PART__N] = {
    "env", "catalog", "system", "platform", "pci", "rdma",
    "net", "shm",     "container", "libs",   "ports",
};

const char *ncd_node_part_name(enum ncd_node_part p)
{
    return (unsigned)p < NCD_PART__N ? part_names[p] : "?";
}

/* The parts `want` needs, transitively. */
static unsigned closure(unsigned want)
{
    for (int again = 1; again;) {
        again = 0;
        for (size_t i = 0; i < sizeof components / sizeof *components; i++)
            if ((want & NCD_PART_BIT(components[i].part)) &&
                (components[i].requires & ~want)) {
                want |= components[i].requires;
                again = 1;
            }
    }
    return want;
}

int ncd_node_probe(struct ncd_ctx *ctx, const struct ncd_node_opts *opts,
                   unsigned parts, struct ncd_node *n)
{
    static const struct ncd_node_opts none = {0};
    if (!opts)
        opts = &none;
    unsigned want = closure(parts);
    for (size_t i = 0; i < sizeof components / sizeof *components; i++) {
        const struct component *c = &components[i];
        unsigned bit = NCD_PART_BIT(c->part);
        if (!(want & bit) || (n->filled & bit))
            continue;
        struct ncd_node_status *st = &n->status[c->part];
        ncd_ctx_clear_error(ctx);
        if (opts->on_component)
            opts->on_component(opts->on_component_arg, c->part);
        st->runs++;
        st->rc = c->fill(ctx, opts, n);
        n->filled |= bit;
        if (st->rc < 0)
            snprintf(st->detail, sizeof st->detail, "%s",
                     ncd_ctx_errdetail(ctx));
        if (st->rc == NCD_ENOMEM)
            return st->rc;
        /* a bad --nccl-version is the caller's mistake, not the node's */
        if (c->part == NCD_PART_SYSTEM && st->rc == NCD_EINVAL)
            return st->rc;
    }
    ncd_ctx_clear_error(ctx);
    return 0;
}

int ncd_node_probe_net(struct ncd_ctx *ctx, int version, struct ncd_node *n)
{
    char v[16];
    struct ncd_node_opts o = {
        .nccl_version = ncd_nccl_version_str(version ? version
                                                     : NCD_NCCL_NEWEST,
                                             v, sizeof v),
        .nvml = NCD_NVML_NEVER};
    int rc = ncd_node_probe(ctx, &o, NCD_PART_BIT(NCD_PART_NET), n);
    if (rc < 0)
        return rc;
    if (ncd_node_has(n, NCD_PART_NET))
        return 0;
    const struct ncd_node_status *st = &n->status[NCD_PART_NET];
    return ncd_fail(ctx, st->rc < 0 ? st->rc : NCD_EIO, "%s", st->detail);
}

int ncd_node_has(const struct ncd_node *n, enum ncd_node_part p)
{
    return (n->filled & NCD_PART_BIT(p)) && n->status[p].rc == 0;
}

const char *ncd_node_getenv(const struct ncd_node *n, const char *name)
{
    for (size_t i = 0; i < n->env.n; i++)
        if (strcmp(n->env.v[i].name, name) == 0)
            return n->env.v[i].value;
    return NULL;
}

void ncd_node_release(struct ncd_node *n)
{
    for (size_t i = 0; i < n->env.n; i++) {
        free(n->env.v[i].name);
        free(n->env.v[i].value);
    }
    free(n->env.v);
    ncd_nccl_conf_release(&n->env.conf);
    if (n->filled & NCD_PART_BIT(NCD_PART_CATALOG))
        ncd_var_catalog_release(&n->catalog);
    ncd_known_bugs_release(&n->known_bugs);
    ncd_topo_release(&n->topo);
    ncd_rdma_release(&n->rdma.r);
    free(n->rdma.prov);
    ncd_recommendation_release(&n->net.rec);
    ncd_netif_list_release(&n->net.nl);
    for (size_t i = 0; i < n->shm.n_limits_lines; i++)
        free(n->shm.limits_lines[i]);
    free(n->shm.limits_lines);
    ncd_nccl_scan_release(&n->libs.scan);
    free(n->ports.listen);
    memset(n, 0, sizeof *n);
}

int ncd__strlist_add(char ***v, size_t *n, const char *s)
{
    char **nv = realloc(*v, (*n + 1) * sizeof *nv);
    if (!nv)
        return NCD_ENOMEM;
    *v = nv;
    if (!(nv[*n] = strdup(s)))
        return NCD_ENOMEM;
    (*n)++;
    return 0;
}

/* ---- the NCCL version policy ------------------------------------------------ */

int ncd_nccl_target(struct ncd_ctx *ctx, const char *opt, int *version,
                    char *source, size_t sourcesz)
{
    *version = 0;
    if (opt) {
        if (ncd_nccl_version_parse(opt, version) < 0 || *version < 20000 ||
            *version >= 30000) {
            *version = 0;
            return ncd_fail(ctx, NCD_EINVAL,
                            "--nccl-version takes an NCCL 2.x version such as "
                            "2.21.5, not '%s'",
                            opt);
        }
        snprintf(source, sourcesz, "--nccl-version");
        return 0;
    }
    struct ncd_nccl_lib lib;
    ncd_sys_nccl_version(ctx, &lib);
    if (lib.found) {
        *version = lib.version;
        snprintf(source, sourcesz, "%s", lib.path[0] ? lib.path : "libnccl.so.2");
    } else {
        char vb[16];
        snprintf(source, sourcesz, "libnccl.so.2 not found: newest known, %s",
                 ncd_nccl_version_str(NCD_NCCL_NEWEST, vb, sizeof vb));
    }
    return 0;
}

/* ---- derived facts ---------------------------------------------------------- */

int ncd_node_pci_gpus(const struct ncd_node *n)
{
    int g = 0;
    for (size_t i = 0; i < n->topo.pci.n; i++)
        g += n->topo.pci.v[i].role == NCD_PCI_GPU;
    return g;
}

int ncd_node_local_gpus(const struct ncd_node *n)
{
    int g = ncd_container_visible_gpus(&n->container, ncd_node_pci_gpus(n));
    const char *v = ncd_node_getenv(n, "CUDA_VISIBLE_DEVICES");
    if (v && *v && ncd_list_count(v) < g)
        g = ncd_list_count(v);
    return g;
}

long long ncd_node_shm_need(const struct ncd_node *n)
{
    const char *bs = ncd_node_getenv(n, "NCCL_BUFFSIZE");
    long long simple = bs && *bs ? strtoll(bs, NULL, 0) : 0;
    return ncd_shm_need_bytes(ncd_node_local_gpus(n), simple);
}
