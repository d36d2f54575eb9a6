/* SPDX-License-Identifier: MIT */
/* Check: RDMA (InfiniBand / RoCE) as NCCL's IB transport will see it.
 * NCCL facts: shared/reference/nccl-facts.md §4 (plugin fallback, IB_HCA
 * syntax, GID selection, GPU Direct RDMA) and §6 (memlock, RoCE). */
#define _GNU_SOURCE
#include "ncd/check.h"
#include "check/check_internal.h"
#include "ncd/error.h"
#include "ncd/nccl.h"
#include "ncd/pci.h"
#include "ncd/node.h"
#include "ncd/rdma.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

int ncd_check_rdma(const struct ncd_node *n, const struct ncd_check_opts *opts,
                   struct ncd_findings *out);


static int port_active(const struct ncd_ib_port *p)
{
    return p->state == 4;
}

int ncd_check_rdma(const struct ncd_node *n, const struct ncd_check_opts *opts,
                   struct ncd_findings *out)
{
    (void)opts;
    const struct ncd_rdma *r = &n->rdma.r;
    const struct ncd_gid_prefs *prefs = &n->rdma.prefs;
    struct ncd_finding *f;
    int rc = 0;
    if (!r->n) {
        ADD("net.ib.none", NCD_CAT_NET_IB, NCD_SEV_INFO,
            "No RDMA device (%s): NCCL will use TCP sockets between nodes",
            r->sysfs_present ? "/sys/class/infiniband is empty"
                            : "no /sys/class/infiniband");
        goto done;
    }
    const char *ib_disable = ncd_node_getenv(n, "NCCL_IB_DISABLE");
    int disabled = ib_disable && *ib_disable && strtol(ib_disable, NULL, 0) != 0;
    /* NCCL_IB_HCA against the devices. */
    const char *hca = ncd_node_getenv(n, "NCCL_IB_HCA");
    struct ncd_nccl_iflist hl;
    ncd_nccl_hca_parse(hca, &hl);
    int selected_active = 0, active = 0, n_ib = 0, n_eth = 0;
    for (size_t i = 0; i < r->n; i++)
        for (size_t k = 0; k < r->v[i].n_ports; k++) {
            const struct ncd_ib_port *p = &r->v[i].ports[k];
            if (!port_active(p))
                continue;
            active++;
            if (hl.set && !ncd_nccl_iflist_match(&hl, r->v[i].name, p->port))
                continue;
            selected_active++;
            if (p->is_ethernet)
                n_eth++;
            else
                n_ib++;
        }
    if (disabled) {
        ADD("net.ib.disabled", NCD_CAT_NET_IB, NCD_SEV_WARNING,
            "NCCL_IB_DISABLE=%s: %d active RDMA port(s) will not be used",
            ib_disable, active);
        ncd_finding_cause(f, "NCCL's IB plugin is off, so inter-node traffic "
                             "goes over TCP sockets.");
        ncd_finding_fix(f, "Unset NCCL_IB_DISABLE unless RDMA is known "
                           "broken here.");
        ncd_finding_env(f, "NCCL_IB_DISABLE", NULL);
    }
    /* libibverbs and providers. */
    const struct ncd_dl_probe *dl = &n->rdma.verbs;
    int usable = !disabled;
    if (dl->known && !dl->ok) {
        usable = 0;
        ADD("net.ib.no-libibverbs", NCD_CAT_NET_IB, NCD_SEV_WARNING,
            "%zu RDMA device(s) present but libibverbs cannot be loaded: NCCL "
            "will silently use sockets",
            r->n);
        ncd_finding_evidence(f, "dlopen(%s): %s", n->rdma.verbs_lib,
                             dl->detail);
        ncd_finding_cause(f, "NCCL dlopens libibverbs (NCCL_IBVERBS_LIB, then "
                             "libibverbs.so, libibverbs.so.1); when that "
                             "fails it logs only an INFO line and falls back "
                             "to the Socket transport.");
        ncd_finding_fix(f, "Install rdma-core (Debian/Ubuntu: `apt install "
                           "libibverbs1 ibverbs-providers`; RHEL: `dnf "
                           "install rdma-core libibverbs`), or MLNX_OFED / "
                           "DOCA-OFED, inside the container too.");
    } else if (!dl->known) {
        ADD("net.ib.libibverbs-unknown", NCD_CAT_NET_IB, NCD_SEV_INFO,
            "Whether libibverbs loads is not visible in this capture");
        ncd_finding_evidence(f, "no libibverbs line in /.ncd/dlopen");
    }
    /* Providers: /etc/libibverbs.d/<name>.driver for each kernel driver. */
    if (dl->ok) {
        for (size_t i = 0; i < r->n; i++) {
            const struct ncd_rdma_provider *pv = &n->rdma.prov[i];
            if (!*pv->name || !n->rdma.libibverbs_d)
                continue;
            char p[96];
            snprintf(p, sizeof p, "/etc/libibverbs.d/%s.driver", pv->name);
            if (pv->config && pv->dirs > 0 && !*pv->lib) {
                ADD("net.ib.no-provider", NCD_CAT_NET_IB, NCD_SEV_WARNING,
                    "The verbs provider library for %s (%s) is missing: NCCL "
                    "will not open it",
                    r->v[i].name, pv->name);
                ncd_finding_evidence(f, "%s exists, but no lib%s-rdmav*.so in "
                                        "the libibverbs provider directories",
                                     p, pv->name);
                ncd_finding_fix(f, "Install the provider package "
                                   "(ibverbs-providers / rdma-core).");
                break;
            }
            if (!pv->config) {
                ADD("net.ib.no-provider", NCD_CAT_NET_IB, NCD_SEV_WARNING,
                    "No verbs provider for %s (driver %s): NCCL will not "
                    "open it",
                    r->v[i].name, r->v[i].driver);
                ncd_finding_evidence(f, "%s: missing", p);
                ncd_finding_fix(f, "Install the provider package "
                                   "(ibverbs-providers / rdma-core).");
                break;
            }
        }
    }
    /* Only our own captures (with /.ncd) record /dev/infiniband; in a
     * foreign one (hwloc-gather-topology) its absence proves nothing. */
    if (r->n_uverbs == -1 && !n->sys.answers_visible) {
        ADD("net.ib.uverbs-unknown", NCD_CAT_NET_IB, NCD_SEV_INFO,
            "Whether /dev/infiniband holds the verbs devices is not visible "
            "in this capture");
    } else if (r->n_uverbs == 0 || r->n_uverbs == -1) {
        usable = 0;
        ADD("net.ib.no-uverbs", NCD_CAT_NET_IB, NCD_SEV_WARNING,
            "RDMA devices are in sysfs but /dev/infiniband has no uverbs "
            "device: NCCL cannot open them");
        ncd_finding_evidence(f, "/dev/infiniband: %s",
                             r->n_uverbs == -1 ? "missing" : "no uverbs*");
        ncd_finding_cause(f, "Typical of containers started without the RDMA "
                             "devices: ibv_open_device fails and NCCL falls "
                             "back to sockets.");
        ncd_finding_fix(f, "Docker: `--device=/dev/infiniband` (plus "
                           "`--cap-add=IPC_LOCK`); Kubernetes: the RDMA "
                           "shared device plugin or SR-IOV network operator "
                           "resource (e.g. rdma/rdma_shared_device_a: 1).");
    }
    if (!active) {
        usable = 0;
        ADD("net.ib.no-active-port", NCD_CAT_NET_IB, NCD_SEV_WARNING,
            "No RDMA port is ACTIVE: NCCL will silently use sockets");
        for (size_t i = 0; i < r->n; i++)
            for (size_t k = 0; k < r->v[i].n_ports; k++)
                ncd_finding_evidence(f, "%s port %d: state %s, physical %s",
                                     r->v[i].name, r->v[i].ports[k].port,
                                     r->v[i].ports[k].state_text,
                                     r->v[i].ports[k].phys_text);
        ncd_finding_cause(f, "NCCL counts only IBV_PORT_ACTIVE ports; with "
                             "none it logs 'NET/IB : No device found.' and "
                             "falls back to TCP.  'Polling' = no cable/peer; "
                             "'INIT' with LinkUp = no subnet manager.");
        ncd_finding_fix(f, "Check cables and `ibstat`; on InfiniBand start "
                           "a subnet manager (opensm or the switch's).");
    } else if (hl.set && !selected_active) {
        usable = 0;
        ADD("net.ib.hca-no-match", NCD_CAT_NET_IB, NCD_SEV_WARNING,
            "NCCL_IB_HCA='%s' matches no active port: NCCL will silently use "
            "sockets",
            hca);
        for (size_t i = 0; i < r->n; i++)
            for (size_t k = 0; k < r->v[i].n_ports; k++)
                ncd_finding_evidence(f, "%s:%d %s", r->v[i].name,
                                     r->v[i].ports[k].port,
                                     r->v[i].ports[k].state_text);
        ncd_finding_cause(f, "Tokens are device names (mlx5_0), optionally "
                             ":port; a port that does not exist or is down "
                             "matches nothing, and NCCL then only logs "
                             "'NET/IB : No device found.'.");
        ncd_finding_fix(f, "Use the names above, e.g. NCCL_IB_HCA='=%s:1'.",
                        r->v[0].name);
    }
    /* Tokens of an include list that select nothing: typos (mlx5_O), a
     * device of another node, or a port the device does not have. */
    for (int t = 0; hl.set && !hl.exclude && t < hl.n; t++) {
        int any = 0;
        for (size_t i = 0; i < r->n && !any; i++) {
            size_t tl = strlen(hl.tok[t].name);
            int nm = hl.exact ? strcmp(r->v[i].name, hl.tok[t].name) == 0
                              : strncmp(r->v[i].name, hl.tok[t].name, tl) == 0;
            for (size_t k = 0; nm && k < r->v[i].n_ports; k++)
                any |= hl.tok[t].port < 0 ||
                       r->v[i].ports[k].port == hl.tok[t].port;
        }
        if (any)
            continue;
        char tok[80];
        if (hl.tok[t].port >= 0)
            snprintf(tok, sizeof tok, "%s:%d", hl.tok[t].name, hl.tok[t].port);
        else
            snprintf(tok, sizeof tok, "%s", hl.tok[t].name);
        ADD("net.ib.hca-token-unmatched", NCD_CAT_NET_IB, NCD_SEV_WARNING,
            "NCCL_IB_HCA token '%s' matches no RDMA device or port here", tok);
        ncd_finding_evidence(f, "NCCL_IB_HCA=%s", hca);
        for (size_t i = 0; i < r->n; i++)
            ncd_finding_evidence(f, "%s: %zu port(s)", r->v[i].name,
                                 r->v[i].n_ports);
        ncd_finding_cause(f, "NCCL skips it without a message; the job uses "
                             "fewer NICs than intended (or none).");
        ncd_finding_fix(f, "Use the device names and ports listed above.");
    }
    if (hl.set && !hl.exact) {
        /* mlx5_1 also matches mlx5_10..19 */
        for (int t = 0; t < hl.n; t++) {
            int exact = 0, more = 0;
            char extra[64] = "";
            for (size_t i = 0; i < r->n; i++) {
                size_t tl = strlen(hl.tok[t].name);
                if (strcmp(r->v[i].name, hl.tok[t].name) == 0)
                    exact = 1;
                else if (strncmp(r->v[i].name, hl.tok[t].name, tl) == 0) {
                    more = 1;
                    snprintf(extra, sizeof extra, "%s", r->v[i].name);
                }
            }
            if (exact && more) {
                ADD("net.ib.hca-prefix", NCD_CAT_NET_IB, NCD_SEV_WARNING,
                    "NCCL_IB_HCA token '%s' is a prefix: it also selects %s",
                    hl.tok[t].name, extra);
                ncd_finding_evidence(f, "NCCL_IB_HCA=%s", hca);
                ncd_finding_fix(f, "Use '=' for exact names: NCCL_IB_HCA='%s%s'",
                                hl.exclude ? "^=" : "=", hca + hl.exclude);
                break;
            }
        }
    }
    if (n_ib && n_eth) {
        ADD("net.ib.mixed-link-layer", NCD_CAT_NET_IB, NCD_SEV_WARNING,
            "NCCL would use both InfiniBand (%d port(s)) and RoCE (%d "
            "port(s))",
            n_ib, n_eth);
        for (size_t i = 0; i < r->n; i++)
            for (size_t k = 0; k < r->v[i].n_ports; k++)
                if (port_active(&r->v[i].ports[k]))
                    ncd_finding_evidence(f, "%s:%d %s", r->v[i].name,
                                         r->v[i].ports[k].port,
                                         r->v[i].ports[k].link_layer);
        ncd_finding_cause(f, "An IB port cannot talk to a RoCE port: NCCL "
                             "fails with 'Attempted to connect incompatible "
                             "devices' when ranks pair them.");
        ncd_finding_fix(f, "Select one link type with NCCL_IB_HCA (exact "
                           "names, '=' prefix).");
    }
    /* RoCE GIDs: NCCL's auto choice and the user's NCCL_IB_GID_INDEX. */
    const char *gidx = ncd_node_getenv(n, "NCCL_IB_GID_INDEX");
    int user_gid = gidx && *gidx ? (int)strtol(gidx, NULL, 0) : -1;
    int old_default = n->sys.nccl_version && n->sys.nccl_version < 22100;
    struct ncd_finding *ignored_f = NULL;
    for (size_t i = 0; i < r->n; i++)
        for (size_t k = 0; k < r->v[i].n_ports; k++) {
            const struct ncd_ib_port *p = &r->v[i].ports[k];
            if (!port_active(p) ||
                (hl.set && !ncd_nccl_iflist_match(&hl, r->v[i].name, p->port)))
                continue;
            if (!p->is_ethernet) {
                if (user_gid >= 0 && !ignored_f) {
                    ADD("net.ib.gid-index-ignored", NCD_CAT_ENV_INVALID,
                        NCD_SEV_INFO,
                        "NCCL_IB_GID_INDEX=%d is ignored on InfiniBand ports",
                        user_gid);
                    ncd_finding_cause(f, "On IB links NCCL (2.22+) uses GID 0 "
                                         "or NCCL_IB_ROUTABLE_FLID_GID_INDEX; "
                                         "the variable only matters for "
                                         "RoCE.");
                    ncd_finding_env(f, "NCCL_IB_GID_INDEX", NULL);
                    ignored_f = f;
                }
                if (ignored_f)
                    ncd_finding_evidence(ignored_f, "%s:%d link layer %s",
                                         r->v[i].name, p->port, p->link_layer);
                continue;
            }
            int autoi = ncd_ib_gid_auto(p, prefs);
            const struct ncd_ib_gid *ag = ncd_ib_port_gid(p, autoi);
            int good = ag && ag->valid && ag->family == prefs->family &&
                       (int)ag->type == prefs->roce_version;
            if (!good && user_gid < 0) {
                ADD("net.ib.roce-no-ipv4-v2-gid", NCD_CAT_NET_IB,
                    NCD_SEV_ERROR,
                    "RoCE port %s:%d has no %s RoCE v%d GID: NCCL falls back "
                    "to GID %d",
                    r->v[i].name, p->port,
                    prefs->family == AF_INET ? "IPv4" : "IPv6",
                    prefs->roce_version, autoi);
                for (size_t g = 0; g < p->n_gids && g < 8; g++)
                    ncd_finding_evidence(
                        f, "%s:%d gid %d %s %s%s%s", r->v[i].name, p->port,
                        p->gids[g].index, p->gids[g].text,
                        p->gids[g].type == NCD_GID_TYPE_V2   ? "RoCE v2"
                        : p->gids[g].type == NCD_GID_TYPE_V1 ? "RoCE v1"
                                                             : "type ?",
                        *p->gids[g].ndev ? " " : "", p->gids[g].ndev);
                if (!p->n_gids)
                    ncd_finding_evidence(f, "%s:%d: no GID entries readable",
                                         r->v[i].name, p->port);
                ncd_finding_cause(
                    f, "The RoCE netdev%s%s has no IPv4 address (or the GID "
                       "types are not mapped into this container), so the "
                       "GID table has only link-local entries; connecting "
                       "fails with 'Call to ibv_modify_qp failed with error "
                       "Invalid argument'.",
                    *r->v[i].netdev ? " " : "", r->v[i].netdev);
                ncd_finding_fix(f, "Give %s an IPv4 address on the RDMA "
                                   "network (then the kernel adds the RoCE "
                                   "v2 GID), or select another HCA with "
                                   "NCCL_IB_HCA.",
                                *r->v[i].netdev ? r->v[i].netdev
                                               : "the port's netdev");
            } else if (user_gid >= 0 && user_gid != autoi) {
                const struct ncd_ib_gid *ug = ncd_ib_port_gid(p, user_gid);
                int ugood = ug && ug->valid && ug->type != NCD_GID_TYPE_UNKNOWN;
                ADD("net.ib.gid-index", NCD_CAT_NET_IB,
                    ugood ? NCD_SEV_WARNING : NCD_SEV_ERROR,
                    "NCCL_IB_GID_INDEX=%d on %s:%d %s; NCCL's own choice "
                    "would be %d",
                    user_gid, r->v[i].name, p->port,
                    !ug ? "points at an empty GID entry"
                    : !ug->valid ? "points at a link-local GID"
                                 : "overrides the automatic choice",
                    autoi);
                if (ug)
                    ncd_finding_evidence(f, "gid %d: %s %s", ug->index,
                                         ug->text,
                                         ug->type == NCD_GID_TYPE_V2 ? "RoCE v2"
                                                                     : "RoCE v1");
                if (ag)
                    ncd_finding_evidence(f, "auto gid %d: %s", ag->index,
                                         ag->text);
                ncd_finding_cause(f, "A forced GID index that is not the "
                                     "IPv4 RoCE v2 entry fails with "
                                     "'ibv_modify_qp failed ... Invalid "
                                     "argument' or 'Network is unreachable'; "
                                     "NCCL 2.21+ picks the right one itself.");
                ncd_finding_fix(f, "Unset NCCL_IB_GID_INDEX (needs NCCL "
                                   ">= 2.21), or set it to %d.",
                                autoi);
                if (old_default) {
                    char v[16];
                    snprintf(v, sizeof v, "%d", autoi);
                    ncd_finding_env(f, "NCCL_IB_GID_INDEX", v);
                } else {
                    ncd_finding_env(f, "NCCL_IB_GID_INDEX", NULL);
                }
            } else if (good && user_gid < 0 && old_default) {
                ADD("net.ib.gid-index-old-nccl", NCD_CAT_NET_IB,
                    NCD_SEV_WARNING,
                    "NCCL before 2.21 uses GID 0 on RoCE; this port needs %d",
                    autoi);
                ncd_finding_fix(f, "Set NCCL_IB_GID_INDEX=%d or upgrade NCCL.",
                                autoi);
            }
        }
    /* GPUDirect RDMA. */
    int gpus = ncd_node_pci_gpus(n);
    if (gpus && usable && selected_active && !r->peermem) {
        const char *ver = n->topo.nvrm_version;
        int open_drv = strstr(ver, "Open Kernel Module") != NULL;
        ADD("net.ib.no-gdr", NCD_CAT_PERF_CONFIG,
            open_drv ? NCD_SEV_INFO : NCD_SEV_WARNING,
            "No GPUDirect RDMA peer-memory module is loaded%s",
            open_drv ? " (DMA-BUF may still work: open kernel driver)" : "");
        ncd_finding_evidence(f, "missing: /sys/kernel/mm/memory_peers/nv_mem/"
                                "version, /sys/module/nvidia_peermem");
        if (*ver)
            ncd_finding_evidence(f, "%s", ver);
        ncd_finding_cause(f, "Without nvidia-peermem (or DMA-BUF, which needs "
                             "Linux >= 5.12 and the open GPU kernel modules) "
                             "NCCL stages every transfer through host "
                             "memory: 'GPU Direct RDMA Disabled' in the log, "
                             "lower bandwidth.");
        ncd_finding_fix(f, "`modprobe nvidia-peermem` (add it to "
                           "/etc/modules-load.d), or use the open driver "
                           "with a 5.12+ kernel for DMA-BUF.");
    }
    if (usable && selected_active) {
        ADD("net.ib.ok", NCD_CAT_NET_IB, NCD_SEV_OK,
            "%d active RDMA port(s) (%d IB, %d RoCE selected)%s", active,
            n_ib, n_eth, r->peermem ? "; GPUDirect peer memory loaded" : "");
        for (size_t i = 0; i < r->n; i++)
            for (size_t k = 0; k < r->v[i].n_ports; k++) {
                const struct ncd_ib_port *p = &r->v[i].ports[k];
                ncd_finding_evidence(f, "%s:%d %s %s %s (pci %s, netdev %s)",
                                     r->v[i].name, p->port, p->state_text,
                                     p->link_layer, p->rate,
                                     *r->v[i].bdf ? r->v[i].bdf : "-",
                                     *r->v[i].netdev ? r->v[i].netdev : "-");
            }
    }
done:
    return rc;
}
