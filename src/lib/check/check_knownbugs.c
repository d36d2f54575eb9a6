/* SPDX-License-Identifier: MIT */
/* Check: known, fixed bugs of the libnccl versions installed on the node
 * (data/nccl-known-bugs.yaml, from NCCL's release notes), kept to those
 * that can bite this node's communication: InfiniBand bugs only where
 * there are RDMA devices, NVLink/NVSwitch fabric bugs only with NVLink or
 * several GPUs, peer-to-peer and PCI bugs only with two GPUs or more,
 * virtualisation bugs only in a VM or WSL, a bug of one CPU architecture
 * only on a node known to have it; the rest (bootstrap, sockets,
 * shared memory, hangs, crashes, data corruption) everywhere. */
#define _GNU_SOURCE
#include "check/check_internal.h"
#include "ncd/check.h"
#include "ncd/error.h"
#include "ncd/knownbugs.h"
#include "ncd/libs.h"
#include "ncd/node.h"
#include "ncd/version.h"

#include <stdio.h>
#include <string.h>

int ncd_check_knownbugs(const struct ncd_node *n,
                        const struct ncd_check_opts *opts,
                        struct ncd_findings *out);

/* Whether bug `b` can concern this node. */
static int relevant(const struct ncd_node *n, const struct ncd_known_bug *b)
{
    enum ncd_category cat = b->area;
    if (b->arch && strcmp(b->arch, n->platform.virt.arch) != 0)
        return 0; /* another CPU architecture, or not known here */
    const struct ncd_topo *t = &n->topo;
    int nvlink = 0;
    if (t->nvlinks)
        for (size_t i = 0; i < t->n_gpu * t->n_gpu; i++)
            nvlink |= t->nvlinks[i] > 0;
    switch (cat) {
    case NCD_CAT_NET_IB:
        return n->rdma.r.n > 0;
    case NCD_CAT_GPU_FABRIC:
        return nvlink || (!t->nvlink_known && t->n_gpu >= 2);
    case NCD_CAT_GPU_P2P:
    case NCD_CAT_SYS_PCI:
        return t->n_gpu >= 2;
    case NCD_CAT_SYS_VIRT:
        return n->platform.virt.vm || n->platform.virt.wsl;
    default:
        return 1;
    }
}

/* One finding for the libnccl files of version `v`. */
static int report(const struct ncd_node *n, int v, struct ncd_findings *out)
{
    const struct ncd_known_bugs *kb = &n->known_bugs;
    const struct ncd_nccl_scan *sc = &n->libs.scan;
    struct ncd_finding *f = NULL;
    int rc = 0, nbugs = 0, severe = 0, fixed = 0;
    char vb[24], fb[24];
    for (size_t i = 0; i < kb->n; i++) {
        const struct ncd_known_bug *b = &kb->v[i];
        if (!ncd_known_bug_affects(b, v) || !relevant(n, b))
            continue;
        nbugs++;
        severe |= strcmp(b->kind, "performance") != 0;
        if (b->fixed_code > fixed)
            fixed = b->fixed_code;
    }
    if (!nbugs)
        return 0;
    ncd_nccl_version_str(v, vb, sizeof vb);
    ncd_nccl_version_str(fixed, fb, sizeof fb);
    ADD("lib.nccl.known-bugs", NCD_CAT_VERSION_KNOWN_BUG,
        severe ? NCD_SEV_WARNING : NCD_SEV_INFO,
        "NCCL %s has %d known bug%s fixed in later releases (all fixed in "
        "%s)", vb, nbugs, nbugs == 1 ? "" : "s", fb);
    for (size_t i = 0; i < sc->n; i++)
        if (sc->v[i].version == v)
            ncd_finding_evidence(f, "%s: NCCL %s (%s)%s", sc->v[i].path, vb,
                                 sc->v[i].origin,
                                 (int)i == sc->winner
                                     ? "  <- dlopen(\"libnccl.so.2\") picks this"
                                     : "");
    for (size_t i = 0; i < kb->n; i++) {
        const struct ncd_known_bug *b = &kb->v[i];
        if (!ncd_known_bug_affects(b, v) || !relevant(n, b))
            continue;
        ncd_finding_evidence(f, "%s (%s, %s; NCCL %s, fixed in %s): %s%s%s",
                             b->id, b->kind, ncd_category_name(b->area),
                             b->affected, b->fixed, b->summary,
                             b->workaround ? "; workaround: " : "",
                             b->workaround ? b->workaround : "");
    }
    ncd_finding_cause(f, "These bugs are listed as fixed in NCCL's release "
                         "notes for releases after %s and concern what this "
                         "node uses (InfiniBand, NVLink, several GPUs or a "
                         "VM only where present). A job that hits one fails, "
                         "hangs or slows down in ways no setting explains; "
                         "`nccl-doctor explain` ties a log's signature to "
                         "them.",
                      vb);
    ncd_finding_fix(f, "Upgrade NCCL to %s or newer (pip install -U "
                       "nvidia-nccl-cu12, or the libnccl2 package of NVIDIA's "
                       "repository), the same on every node; until then the "
                       "workarounds above apply.",
                    fb);
done:
    return rc;
}

int ncd_check_knownbugs(const struct ncd_node *n,
                        const struct ncd_check_opts *opts,
                        struct ncd_findings *out)
{
    (void)opts;
    const struct ncd_nccl_scan *sc = &n->libs.scan;
    int seen[16], nseen = 0;
    for (size_t i = 0; i < sc->n; i++) {
        int v = sc->v[i].version, dup = 0;
        if (!v)
            continue;
        for (int k = 0; k < nseen; k++)
            dup |= seen[k] == v;
        if (dup || nseen == 16)
            continue;
        seen[nseen++] = v;
        int rc = report(n, v, out);
        if (rc < 0)
            return rc;
    }
    return 0;
}
