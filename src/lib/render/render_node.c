/* SPDX-License-Identifier: MIT */
/* The node snapshot as `check --json` facts and as the `check` text report
 * (see ncd/node_report.h). */
#define _GNU_SOURCE
#include "ncd/sysops.h"
#include "ncd/node_report.h"
#include "render/render_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

json_t *ncd__jstr(const char *s)
{
    json_t *j = json_string(s);
    if (j || !s)
        return j ? j : json_null();
    char *c = strdup(s);
    if (!c)
        return NULL;
    ncd_utf8_sanitize(c);
    j = json_string(c);
    free(c);
    return j;
}

const char *ncd__text(const char *s, char *buf, size_t len)
{
    snprintf(buf, len, "%s", s ? s : "");
    ncd_utf8_sanitize(buf);
    for (char *p = buf; *p; p++)
        if (*p == '\n' || *p == '\t')
            *p = ' ';
    return buf;
}

/* ---- facts ------------------------------------------------------------------ */

static json_t *nccl_env_json(const struct ncd_node *n)
{
    json_t *o = json_object();
    struct ncd_strbuf v = {0};
    for (size_t i = 0; o && i < n->env.n; i++)
        if (strncmp(n->env.v[i].name, "NCCL_", 5) == 0) {
            /* written down as gather writes it: secrets masked */
            v.len = 0;
            if (v.buf)
                v.buf[0] = '\0';
            ncd_env_redact(n->env.v[i].name, n->env.v[i].value, &v);
            json_object_set_new(o, n->env.v[i].name,
                                ncd_json_string(v.oom  ? "<redacted>"
                                                : v.buf ? v.buf
                                                        : ""));
        }
    ncd_sb_release(&v);
    return o;
}

static json_t *pci_json(const struct ncd_node *n)
{
    struct ncd_acs_report acs;
    if (ncd_pci_acs_report(&n->topo.pci, &acs) < 0)
        return NULL;
    const struct ncd_iommu *io = &n->platform.iommu;
    const struct ncd_virt *vm = &n->platform.virt;
    return json_pack("{s:i,s:i,s:i,s:i,s:o,s:b,s:o,s:i}", "iommu_groups",
                     io->groups, "iommu_translated_groups", io->translated,
                     "iommu_identity_groups", io->identity,
                     "acs_redirecting_bridges", acs.n_lines, "iommu_cmdline",
                     ncd__jstr(io->cmdline_opts), "vm", vm->vm, "hypervisor",
                     ncd__jstr(vm->hypervisor), "acs_paths", acs.paths);
}

static json_t *rdma_json(const struct ncd_node *n)
{
    const struct ncd_rdma *r = &n->rdma.r;
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < r->n; i++) {
        const struct ncd_ib_dev *d = &r->v[i];
        json_t *ports = json_array();
        for (size_t k = 0; ports && k < d->n_ports; k++) {
            const struct ncd_ib_port *p = &d->ports[k];
            json_t *pj = json_pack(
                "{s:i,s:o,s:o,s:o,s:o,s:i}", "port", p->port, "state",
                ncd__jstr(p->state_text), "phys_state", ncd__jstr(p->phys_text),
                "link_layer", ncd__jstr(p->link_layer), "rate",
                ncd__jstr(p->rate), "gids", (int)p->n_gids);
            if (pj && p->is_ethernet)
                json_object_set_new(
                    pj, "nccl_auto_gid_index",
                    json_integer(ncd_ib_gid_auto(p, &n->rdma.prefs)));
            json_array_append_new(ports, pj);
        }
        json_array_append_new(
            arr, json_pack("{s:o,s:o,s:o,s:o,s:o}", "name", ncd__jstr(d->name),
                           "pci", ncd__jstr(d->bdf), "netdev",
                           ncd__jstr(d->netdev), "fw", ncd__jstr(d->fw),
                           "ports", ports ? ports : json_null()));
    }
    if (!arr)
        return NULL;
    return json_pack("{s:o,s:b,s:i}", "devices", arr, "peermem", r->peermem,
                     "uverbs", r->n_uverbs);
}

static json_t *memlock_json(const struct ncd_node *n)
{
    const struct ncd_limit *ml = &n->shm.memlock;
    return json_pack("{s:o,s:o,s:b}", "soft_bytes",
                     ml->known ? json_integer(ml->soft) : json_null(),
                     "hard_bytes",
                     ml->known ? json_integer(ml->hard) : json_null(),
                     "cap_ipc_lock",
                     n->shm.cap_known &&
                         (n->shm.capeff >> NCD_CAP_IPC_LOCK) & 1);
}

static json_t *shm_json(const struct ncd_node *n)
{
    const struct ncd_shm *s = &n->shm.shm;
    return json_pack("{s:b,s:o,s:o,s:I,s:I,s:s,s:i,s:I}", "mounted",
                     s->mounted, "type", ncd__jstr(s->m.type), "options",
                     ncd__jstr(s->m.opts), "size_bytes", (json_int_t)s->size,
                     "free_bytes", (json_int_t)s->free, "size_source",
                     s->size_source, "local_gpus", ncd_node_local_gpus(n),
                     "need_bytes", (json_int_t)ncd_node_shm_need(n));
}

static json_t *container_json(const struct ncd_node *n)
{
    const struct ncd_container *c = &n->container;
    json_t *ev = json_array();
    for (int i = 0; ev && i < c->n_evidence; i++)
        json_array_append_new(ev, ncd__jstr(c->evidence[i]));
    return json_pack("{s:s,s:b,s:b,s:o,s:b,s:o}", "runtime",
                     ncd_runtime_name(c->runtime), "kubernetes", c->kubernetes,
                     "slurm", c->slurm, "slurm_job", ncd__jstr(c->slurm_job),
                     "wsl", c->wsl, "evidence", ev ? ev : json_null());
}

static json_t *libs_json(const struct ncd_node *n)
{
    const struct ncd_nccl_scan *s = &n->libs.scan;
    json_t *arr = json_array();
    char vb[24];
    for (size_t i = 0; arr && i < s->n; i++) {
        const struct ncd_nccl_file *x = &s->v[i];
        json_array_append_new(
            arr, json_pack("{s:o,s:o,s:o,s:o,s:s,s:b}", "path",
                           ncd__jstr(x->path), "real", ncd__jstr(x->real),
                           "version",
                           x->version ? json_string(ncd_nccl_version_str(
                                            x->version, vb, sizeof vb))
                                      : json_null(),
                           "cuda", *x->cuda ? ncd__jstr(x->cuda) : json_null(),
                           "origin", x->origin, "loader_pick",
                           (int)i == s->winner));
    }
    return arr;
}

static json_t *ports_json(const struct ncd_node *n)
{
    json_t *o = json_object();
    if (o)
        json_object_set_new(o, "ip_local_port_range",
                            n->ports.range_known
                                ? json_pack("[i,i]", n->ports.lo, n->ports.hi)
                                : json_null());
    return o;
}

/* Adds `v` under `k` unless it is NULL (allocation failed: left out). */
static void put(json_t *o, const char *k, json_t *v)
{
    if (v)
        json_object_set_new(o, k, v);
}

json_t *ncd_node_facts_json(const struct ncd_node *n)
{
    json_t *f = json_object();
    if (!f)
        return NULL;
    if (ncd_node_has(n, NCD_PART_ENV))
        put(f, "nccl_env", nccl_env_json(n));
    if (ncd_node_has(n, NCD_PART_NET))
        put(f, "network", ncd_node_ifaces_json(n));
    int pci = ncd_node_has(n, NCD_PART_PCI);
    if (pci)
        put(f, "topo", ncd_topo_to_json(&n->topo));
    if (pci && ncd_node_has(n, NCD_PART_PLATFORM))
        put(f, "pci", pci_json(n));
    if (ncd_node_has(n, NCD_PART_RDMA))
        put(f, "rdma", rdma_json(n));
    if (ncd_node_has(n, NCD_PART_SHM)) {
        put(f, "memlock", memlock_json(n));
        put(f, "shm", shm_json(n));
    }
    if (ncd_node_has(n, NCD_PART_CONTAINER))
        put(f, "container", container_json(n));
    if (ncd_node_has(n, NCD_PART_LIBS)) {
        put(f, "nccl_libs", libs_json(n));
        if (n->libs.cuda_driver > 0)
            put(f, "cuda_driver_version", json_integer(n->libs.cuda_driver));
    }
    if (ncd_node_has(n, NCD_PART_PORTS))
        put(f, "ports", ports_json(n));
    return f;
}

/* ---- the check report ------------------------------------------------------- */

static void interfaces_text(struct ncd_strbuf *sb, const struct ncd_node *n)
{
    const struct ncd_recommendation *rec = &n->net.rec;
    char a[256], b[256], c[64];
    ncd_sb_puts(sb, "Network interfaces\n");
    for (size_t i = 0; i < rec->n; i++) {
        const struct ncd_if_rank *r = &rec->ranks[i];
        const struct ncd_netif *ni = r->ni;
        ncd_sb_printf(sb, "  %s %-16s %-16s %-8s", r->rank ? "#" : " ",
                      ncd__text(ni->name, a, sizeof a),
                      ncd_netif_kind_name(ni->kind),
                      ncd__text(ni->operstate, b, sizeof b));
        if (ni->speed_mbps > 0)
            ncd_sb_printf(sb, " %6lldM", ni->speed_mbps);
        else
            ncd_sb_puts(sb, "       ?");
        for (size_t j = 0; j < ni->n_addrs; j++)
            ncd_sb_printf(sb, " %s/%d", ncd__text(ni->addrs[j].addr, c, sizeof c),
                          ni->addrs[j].prefix);
        ncd_sb_puts(sb, "\n");
    }
    ncd_sb_printf(sb, "  recommended: %s; NCCL would bootstrap on: %s\n\n",
                  rec->best ? ncd__text(rec->best->ni->name, a, sizeof a)
                            : "none",
                  n->net.ch.bootstrap[0]
                      ? ncd__text(n->net.ch.bootstrap, b, sizeof b)
                      : "none");
}

void ncd_node_check_text(struct ncd_strbuf *sb, const struct ncd_node *n,
                         const struct ncd_findings *l, json_t *env,
                         const struct ncd_text_style *st)
{
    char vb[16];
    if (n->sys.live)
        ncd_sb_printf(sb, "nccl-doctor %s: check of %s\n", ncd_version(),
                      n->sys.host);
    else
        ncd_sb_printf(sb, "nccl-doctor %s: check of %s (capture %s)\n",
                      ncd_version(), n->sys.host, n->sys.sysroot);
    ncd_sb_printf(sb, "NCCL behaviour predicted: %s (%s)\n\n",
                  ncd_nccl_version_str(n->sys.nccl_version
                                           ? n->sys.nccl_version
                                           : NCD_NCCL_NEWEST,
                                       vb, sizeof vb),
                  n->sys.nccl_version_source);
    if (ncd_node_has(n, NCD_PART_NET))
        interfaces_text(sb, n);
    ncd_sb_puts(sb, "Findings\n");
    ncd_render_findings_text(sb, l, st);
    if (json_object_size(env)) {
        ncd_sb_puts(sb, "\nRecommended environment (nccl-doctor env prints "
                        "it; env --write FILE keeps it)\n");
        const char *k;
        json_t *v;
        json_object_foreach(env, k, v)
        {
            if (json_is_string(v)) {
                ncd_sb_printf(sb, "  export %s=", k);
                ncd_sb_shell_quote(sb, json_string_value(v));
                ncd_sb_putc(sb, '\n');
            } else {
                ncd_sb_printf(sb, "  unset %s\n", k);
            }
        }
    }
}
