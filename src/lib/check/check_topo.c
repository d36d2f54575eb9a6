/* SPDX-License-Identifier: MIT */
/* Checks: GPUs and their topology (topo), PCI ACS / IOMMU / VM (pci).
 * NCCL facts: shared/reference/nccl-facts.md §4 (PCI files, GDR level) and
 * §6 (ACS/IOMMU, GPU Direct RDMA). */
#define _GNU_SOURCE
#include "ncd/check.h"
#include "check/check_internal.h"
#include "ncd/container.h"
#include "ncd/error.h"
#include "node/node_internal.h"
#include "ncd/fs.h"
#include "ncd/pci.h"
#include "ncd/topo.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ncd_check_topo(struct ncd_ctx *ctx, const struct ncd_check_opts *opts,
                   struct ncd_findings *out, json_t *facts);
int ncd_check_pci(struct ncd_ctx *ctx, const struct ncd_check_opts *opts,
                  struct ncd_findings *out, json_t *facts);


/* CUDA_VISIBLE_DEVICES against the GPUs present. */
static int check_visible(struct ncd_ctx *ctx, const struct ncd_topo *t,
                         struct ncd_findings *out)
{
    const char *v = ncd_getenv(ctx, "CUDA_VISIBLE_DEVICES");
    struct ncd_finding *f;
    int rc = 0;
    if (!v || !t->n_gpu)
        return 0;
    /* CUDA numbers the GPUs this container was given, not the host's. */
    size_t ngpu = (size_t)ncd_container_gpu_count(ctx, (int)t->n_gpu);
    if (!*v || strcmp(v, "-1") == 0 || strcasecmp(v, "none") == 0 ||
        strcasecmp(v, "NoDevFiles") == 0) {
        ADD("gpu.cuda.no-visible-device", NCD_CAT_GPU_CUDA, NCD_SEV_ERROR,
            "CUDA_VISIBLE_DEVICES='%s' hides every GPU from CUDA", v);
        ncd_finding_evidence(f, "%zu NVIDIA GPU(s) given to this process",
                             ngpu);
        ncd_finding_cause(f, "CUDA enumerates no device, so NCCL cannot "
                             "create a communicator on this node.");
        ncd_finding_fix(f, "Unset CUDA_VISIBLE_DEVICES or list the GPUs this "
                           "rank may use (e.g. 0,1,2,3).");
        return 0;
    }
    char buf[512];
    snprintf(buf, sizeof buf, "%s", v);
    int seen[256] = {0}, bad = 0, dup = 0, n = 0;
    char badtok[64] = "";
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save), n++) {
        while (*tok == ' ')
            tok++;
        if (strncmp(tok, "GPU-", 4) == 0 || strncmp(tok, "MIG-", 4) == 0)
            continue; /* UUIDs: only NVML can resolve them */
        char *end;
        long idx = strtol(tok, &end, 10);
        if (end == tok || *end || idx < 0 || idx >= (long)ngpu) {
            /* CUDA stops at the first invalid entry. */
            bad = 1;
            snprintf(badtok, sizeof badtok, "%.60s", tok);
            break;
        }
        if (idx < 256 && seen[idx]++)
            dup = 1;
    }
    if (bad) {
        ADD("gpu.cuda.visible-devices-invalid", NCD_CAT_GPU_CUDA,
            n == 0 ? NCD_SEV_ERROR : NCD_SEV_WARNING,
            "CUDA_VISIBLE_DEVICES entry '%s' is not one of the %zu GPUs", badtok,
            ngpu);
        ncd_finding_evidence(f, "CUDA_VISIBLE_DEVICES=%s", v);
        ncd_finding_cause(f,
                          "CUDA ignores the list from the first invalid entry "
                          "on, so %s; a rank mapped to a missing device fails "
                          "with 'invalid device ordinal'.",
                          n == 0 ? "no GPU is visible"
                                 : "only the entries before it are visible");
        ncd_finding_fix(f, "Use indices 0..%zu (or GPU UUIDs from "
                           "`nvidia-smi -L`).",
                        ngpu ? ngpu - 1 : 0);
    } else if (dup) {
        ADD("gpu.cuda.visible-devices-duplicate", NCD_CAT_USAGE_DUPLICATE_GPU,
            NCD_SEV_ERROR, "CUDA_VISIBLE_DEVICES lists a GPU twice");
        ncd_finding_evidence(f, "CUDA_VISIBLE_DEVICES=%s", v);
        ncd_finding_cause(f, "CUDA rejects duplicate entries; ranks that end "
                             "up on one GPU make NCCL fail with 'Duplicate "
                             "GPU detected'.");
        ncd_finding_fix(f, "List each GPU once.");
    }
done:
    return rc;
}

static const char *gpu_driver_state(struct ncd_ctx *ctx,
                                    const struct ncd_topo *t, char *drv,
                                    size_t drvsz)
{
    drv[0] = '\0';
    if (ncd_fs_exists(ctx, "/proc/driver/nvidia/version"))
        return "loaded";
    for (size_t i = 0; i < t->n_gpu; i++) {
        const struct ncd_topo_dev *d = &t->dev[i];
        if (d->pci < 0)
            continue;
        const char *dv = t->pci.v[d->pci].driver;
        if (strcmp(dv, "nvidia") == 0)
            return "loaded";
        if (*dv)
            snprintf(drv, drvsz, "%s", dv);
    }
    return *drv ? "other" : "unknown";
}

int ncd_check_topo(struct ncd_ctx *ctx, const struct ncd_check_opts *opts,
                   struct ncd_findings *out, json_t *facts)
{
    (void)opts;
    struct ncd_topo t;
    struct ncd_finding *f;
    /* NVML init costs 0.1-2 s on a GPU node: it is loaded only when NVLink
     * can change a finding, i.e. when some GPU pair is not under one PCIe
     * switch (a recorded capture just reads .ncd/nvml). */
    int rc = ncd_topo_probe(ctx, 0, &t);
    if (rc < 0) {
        ncd_topo_release(&t);
        return rc;
    }
    int need_nvml = !ncd_ctx_is_live(ctx);
    for (size_t a = 0; a < t.n_gpu && !need_nvml; a++)
        for (size_t b = a + 1; b < t.n_gpu; b++)
            if (ncd_topo_link(&t, a, b, NULL) >= NCD_LINK_PHB)
                need_nvml = 1;
    if (need_nvml && (rc = ncd_topo_nvml(ctx, &t)) < 0) {
        ncd_topo_release(&t);
        return rc;
    }
    json_t *tj = ncd_topo_to_json(&t);
    if (tj)
        json_object_set_new(facts, "topo", tj);
    if (!t.pci.present) {
        ADD("gpu.not-visible", NCD_CAT_SYS_VIRT, NCD_SEV_INFO,
            "The PCI tree is not visible (no /sys/bus/pci/devices)");
        ncd_finding_cause(f, "Without it GPUs, NICs and their topology "
                             "cannot be checked; NCCL sees the same gap and "
                             "builds a poor topology.");
        goto done;
    }
    size_t unknown_display = 0;
    for (size_t i = 0; i < t.pci.n; i++)
        unknown_display += (t.pci.v[i].class_code >> 16) == 0x03 &&
                           t.pci.v[i].vendor == 0;
    if (!t.n_gpu && unknown_display) {
        ADD("gpu.vendor-not-visible", NCD_CAT_SYS_VIRT, NCD_SEV_INFO,
            "%zu display controller(s) whose PCI vendor is not visible: "
            "cannot tell whether they are NVIDIA GPUs",
            unknown_display);
        ncd_finding_cause(f, "The capture lacks their `vendor` files (NCCL "
                             "reads them too); GPU checks are skipped.");
        goto done;
    }
    if (!t.n_gpu) {
        ADD("gpu.none", NCD_CAT_GPU_DRIVER, NCD_SEV_INFO,
            "No NVIDIA GPU on this node's PCI bus (%zu PCI functions read)",
            t.pci.n);
        ncd_finding_cause(f, "Nothing for NCCL to run on here; GPU, NVLink "
                             "and GPU-NIC checks are skipped.");
        goto done;
    }
    char drv[32];
    const char *ds = gpu_driver_state(ctx, &t, drv, sizeof drv);
    if (strcmp(ds, "other") == 0) {
        ADD("gpu.driver.not-loaded", NCD_CAT_GPU_DRIVER, NCD_SEV_ERROR,
            "The GPUs are bound to '%s', not to the NVIDIA driver", drv);
        ncd_finding_evidence(f, "/proc/driver/nvidia/version: missing");
        ncd_finding_cause(f, "%s", strcmp(drv, "vfio-pci") == 0
                                       ? "vfio-pci reserves them for VM "
                                         "passthrough; CUDA sees no device."
                                       : "CUDA needs the nvidia kernel "
                                         "module; nouveau cannot run CUDA.");
        ncd_finding_fix(f, "Install/load the NVIDIA driver (and blacklist "
                           "nouveau), then check `nvidia-smi`.");
    } else if (strcmp(ds, "unknown") == 0) {
        ADD("gpu.driver.unknown", NCD_CAT_GPU_DRIVER, NCD_SEV_INFO,
            "Cannot tell whether the NVIDIA driver is loaded");
        ncd_finding_evidence(f, "/proc/driver/nvidia/version: missing; no "
                                "driver link on the GPU functions");
    }
    if ((rc = check_visible(ctx, &t, out)) < 0)
        goto done;
    /* GPU pairs joined only through the CPU. */
    int far = 0;
    for (size_t a = 0; a < t.n_gpu; a++)
        for (size_t b = a + 1; b < t.n_gpu; b++) {
            enum ncd_link l = ncd_topo_link(&t, a, b, NULL);
            if (l == NCD_LINK_NODE || l == NCD_LINK_SYS)
                far++;
        }
    if (far) {
        ADD("gpu.p2p.cpu-path", NCD_CAT_GPU_P2P, NCD_SEV_WARNING,
            "%d GPU pair(s) are joined only through the CPU (NODE/SYS), "
            "without NVLink",
            far);
        int shown = 0;
        for (size_t a = 0; a < t.n_gpu && shown < 8; a++)
            for (size_t b = a + 1; b < t.n_gpu && shown < 8; b++) {
                enum ncd_link l = ncd_topo_link(&t, a, b, NULL);
                if (l == NCD_LINK_NODE || l == NCD_LINK_SYS) {
                    ncd_finding_evidence(f, "%s (%s) - %s (%s): %s",
                                         t.dev[a].label, t.dev[a].bdf,
                                         t.dev[b].label, t.dev[b].bdf,
                                         ncd_link_name(l));
                    shown++;
                }
            }
        ncd_finding_evidence(f, "NVLink data: %s", t.nvlink_source);
        ncd_finding_cause(f, "Peer-to-peer traffic between these GPUs crosses "
                             "the host bridges / CPU interconnect: it is slow, "
                             "and NCCL's default P2P level does not use P2P "
                             "that far, so it copies through host shared "
                             "memory (the SHM transport) instead.");
        ncd_finding_fix(f, "Expected on PCIe servers with GPUs on both "
                           "sockets; keep each job's GPUs on one socket "
                           "(CUDA_VISIBLE_DEVICES) when it matters.  Do not "
                           "force NCCL_P2P_LEVEL=SYS unless `nvidia-smi topo "
                           "-p2p r` shows P2P works and is faster.");
    }
    /* GPUs without a close NIC. */
    size_t n_rdma = 0;
    for (size_t i = t.n_gpu; i < t.n_dev; i++)
        n_rdma += t.dev[i].rdma;
    /* Without RDMA, locality does not change NCCL's data path (sockets
     * copy through host memory anyway): only RDMA NICs are judged. */
    if (n_rdma) {
        int bad = 0;
        char lines[16][200];
        for (size_t g = 0; g < t.n_gpu; g++) {
            enum ncd_link best = NCD_LINK_UNKNOWN;
            size_t bi = 0;
            for (size_t n = t.n_gpu; n < t.n_dev; n++) {
                if (n_rdma && !t.dev[n].rdma)
                    continue;
                enum ncd_link l = ncd_topo_link(&t, g, n, NULL);
                if (l < best) {
                    best = l;
                    bi = n;
                }
            }
            if (best == NCD_LINK_UNKNOWN || best <= NCD_LINK_PXB)
                continue;
            if (bad < 16)
                snprintf(lines[bad], sizeof lines[0],
                         "%s (%s): closest %s is %s (%s) at %s",
                         t.dev[g].label, t.dev[g].bdf,
                         n_rdma ? "RDMA NIC" : "NIC", t.dev[bi].label,
                         t.dev[bi].name, ncd_link_name(best));
            bad++;
        }
        struct ncd_virt vm;
        ncd_virt_probe(ctx, &vm);
        if (bad) {
            ADD("perf.config.nic-far-from-gpu", NCD_CAT_PERF_CONFIG,
                vm.vm ? NCD_SEV_INFO : NCD_SEV_WARNING,
                "%d GPU(s) have no RDMA NIC under the same PCIe switch%s", bad,
                vm.vm ? " (as far as this VM's virtual PCI tree shows)" : "");
            for (int i = 0; i < bad && i < 16; i++)
                ncd_finding_evidence(f, "%s", lines[i]);
            ncd_finding_cause(
                f, "NCCL uses GPUDirect RDMA only when the NIC is within "
                   "NCCL_NET_GDR_LEVEL of the GPU (default PXB; P2C with "
                   "NCCL_NET_GDR_C2C=1 on C2C systems).  Farther (PHB, NODE, "
                   "SYS) the data is staged through host memory, costing "
                   "bandwidth and CPU.");
            if (vm.vm)
                ncd_finding_fix(f, "In a VM the real placement is hidden: use "
                                   "the cloud provider's NCCL topology file "
                                   "(NCCL_TOPO_FILE) so NCCL knows which NIC "
                                   "is near which GPU.");
            else
                ncd_finding_fix(
                f, "Physically, put one NIC per GPU pair under the same PCIe "
                   "switch (the DGX layout).  Otherwise keep the default: "
                   "NCCL_NET_GDR_LEVEL=SYS forces GDR across the CPU and is "
                   "often slower; NCCL_CROSS_NIC=1 (default 2 = auto) lets "
                   "rings use a NIC on another rail when rails are not "
                   "symmetric between nodes.");
        }
    }
    ADD("gpu.topo.summary", NCD_CAT_GPU_P2P, NCD_SEV_OK,
        "%zu GPU(s), %zu NIC(s) (%zu RDMA); topology from %s", t.n_gpu,
        t.n_nic, n_rdma, t.source);
    ncd_finding_evidence(f, "NVLink: %s", t.nvlink_source);
    if (*t.driver_version)
        ncd_finding_evidence(f, "NVIDIA driver %s", t.driver_version);
done:
    ncd_topo_release(&t);
    return rc;
}

/* ---- PCI ACS / IOMMU / virtualisation ------------------------------------- */

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

int ncd_check_pci(struct ncd_ctx *ctx, const struct ncd_check_opts *opts,
                  struct ncd_findings *out, json_t *facts)
{
    (void)opts;
    struct ncd_pci_list pl;
    struct ncd_finding *f = NULL;
    struct ncd_iommu io;
    struct ncd_virt vm;
    int rc = ncd_pci_scan(ctx, &pl);
    if (rc < 0)
        return rc;
    ncd_iommu_probe(ctx, &io);
    ncd_virt_probe(ctx, &vm);
    int gpus = 0, ends = 0;
    for (size_t i = 0; i < pl.n; i++) {
        gpus += pl.v[i].role == NCD_PCI_GPU;
        ends += pl.v[i].role == NCD_PCI_GPU || pl.v[i].role == NCD_PCI_NIC;
    }
    /* ACS on bridges between two endpoints that would otherwise talk
     * through the switch (PIX/PXB), GPU-GPU or GPU-NIC. */
    char acs_lines[8][200];
    int n_acs = 0, n_unknown = 0, pairs = 0;
    unsigned char *flag = calloc(pl.n + 1, 1);
    if (!flag) {
        ncd_pci_list_release(&pl);
        return NCD_ENOMEM;
    }
    for (size_t a = 0; a < pl.n; a++) {
        if (pl.v[a].role != NCD_PCI_GPU)
            continue;
        for (size_t b = 0; b < pl.n; b++) {
            if (b == a || (pl.v[b].role != NCD_PCI_GPU &&
                           pl.v[b].role != NCD_PCI_NIC))
                continue;
            if (pl.v[b].role == NCD_PCI_GPU && b < a)
                continue;
            enum ncd_link l = ncd_pci_link(&pl, (int)a, (int)b);
            if (l != NCD_LINK_PIX && l != NCD_LINK_PXB)
                continue;
            int br[64];
            int nbr = path_bridges(&pl, (int)a, (int)b, br, 64);
            int hit = 0;
            for (int k = 0; k < nbr; k++) {
                const struct ncd_pci_dev *d = &pl.v[br[k]];
                if (d->acs == 1 && (d->acs_ctrl & NCD_ACS_P2P_BITS)) {
                    hit = 1;
                    if (!(flag[br[k]] & 1) && n_acs < 8) {
                        char cs[120];
                        snprintf(acs_lines[n_acs], sizeof acs_lines[0],
                                 "bridge %s: ACSCtl: %s", d->bdf,
                                 ncd_acs_ctrl_str(d->acs_ctrl, cs, sizeof cs));
                        n_acs++;
                    }
                    flag[br[k]] |= 1;
                } else if (d->acs == -1 && !(flag[br[k]] & 2)) {
                    flag[br[k]] |= 2;
                    n_unknown++;
                }
            }
            pairs += hit;
        }
    }
    free(flag);
    json_t *pj = json_pack("{s:i,s:i,s:i,s:i,s:o,s:b,s:o,s:i}", "iommu_groups",
                           io.groups, "iommu_translated_groups", io.translated,
                           "iommu_identity_groups", io.identity,
                           "acs_redirecting_bridges", n_acs,
                           "iommu_cmdline", ncd__jstr(io.cmdline_opts), "vm",
                           vm.vm, "hypervisor", ncd__jstr(vm.hypervisor),
                           "acs_paths", pairs);
    if (pj)
        json_object_set_new(facts, "pci", pj);
    if (n_acs) {
        ADD("sys.pci.acs-redirect", NCD_CAT_SYS_PCI,
            vm.vm ? NCD_SEV_INFO : NCD_SEV_ERROR,
            "PCIe ACS redirects peer-to-peer traffic on %d path(s) between "
            "GPUs/NICs",
            pairs);
        for (int i = 0; i < n_acs; i++)
            ncd_finding_evidence(f, "%s", acs_lines[i]);
        if (vm.vm) {
            ncd_finding_cause(f, "Inside a VM (%s) ACS is what keeps devices "
                                 "isolated and must stay on.",
                              *vm.hypervisor ? vm.hypervisor : "hypervisor");
            ncd_finding_fix(f, "Enable ATS on the NICs (mlxconfig "
                               "ATS_ENABLED=true) so GPUDirect traffic can "
                               "bypass the root complex; ask the cloud for "
                               "its NCCL topology file.");
        } else {
            ncd_finding_cause(
                f, "With ReqRedir/CmpltRedir set on switch ports, every "
                   "GPU-GPU and GPU-NIC transfer is sent up to the root "
                   "complex (and through the IOMMU) instead of across the "
                   "switch: NCCL hangs at the first collective, runs far "
                   "below PCIe speed, or fails with IB completion error 4 "
                   "(LOC_PROT_ERR).");
            ncd_finding_fix(
                f, "Disable ACS in the BIOS (or VT-d/IOMMU), or clear it per "
                   "bridge after every boot: `setpci -s <bdf> "
                   "ECAP_ACS+0x6.w=0000` for each bridge above.  Check with "
                   "`lspci -vvv | grep ACSCtl` (SrcValid- ReqRedir- "
                   "CmpltRedir-).");
        }
    } else if (n_unknown && gpus) {
        ADD("sys.pci.acs-unknown", NCD_CAT_SYS_PCI, NCD_SEV_INFO,
            "ACS state of %d bridge(s) above the GPUs cannot be read",
            n_unknown);
        ncd_finding_cause(f, "The PCIe extended configuration space (where "
                             "ACS lives) is only readable by root.");
        ncd_finding_fix(f, "Run nccl-doctor as root, or `sudo lspci -vvv | "
                           "grep ACSCtl`.");
    }
    if (io.translated > 0 && gpus && !vm.vm) {
        ADD("sys.pci.iommu-translated", NCD_CAT_SYS_PCI, NCD_SEV_WARNING,
            "The IOMMU translates DMA for %d device group(s) on this bare-metal "
            "GPU node",
            io.translated);
        ncd_finding_evidence(f, "/sys/kernel/iommu_groups: %d groups, %d DMA, "
                                "%d identity",
                             io.groups, io.translated, io.identity);
        if (*io.cmdline_opts)
            ncd_finding_evidence(f, "/proc/cmdline: %s", io.cmdline_opts);
        ncd_finding_cause(f, "Peer-to-peer and GPUDirect RDMA addresses then "
                             "go through IOMMU translation: P2P between GPUs "
                             "can hang or corrupt data, and GPUDirect can "
                             "fail (NVIDIA's docs call for IOMMU off or "
                             "passthrough on bare metal).");
        ncd_finding_fix(f, "Boot with `iommu=pt` (keeps the IOMMU for VMs, "
                           "identity-maps host devices) or disable VT-d / "
                           "AMD-Vi (`intel_iommu=off` / `amd_iommu=off`).");
    } else if (io.groups > 0 || *io.cmdline_opts) {
        ADD("sys.pci.iommu", NCD_CAT_SYS_PCI, NCD_SEV_OK,
            "IOMMU: %d group(s), %d translated, %d passthrough%s%s",
            io.groups > 0 ? io.groups : 0, io.translated, io.identity,
            *io.cmdline_opts ? "; cmdline: " : "", io.cmdline_opts);
    }
    if (vm.wsl) {
        ADD("sys.virt.wsl", NCD_CAT_SYS_VIRT, NCD_SEV_WARNING,
            "Running under WSL: no RDMA, no NVLink topology, limited P2P");
        ncd_finding_evidence(f, "%s", vm.evidence);
        ncd_finding_cause(f, "WSL exposes GPUs through a paravirtual driver; "
                             "NCCL sees no PCI topology and no InfiniBand.");
        ncd_finding_fix(f, "Use native Linux for multi-node NCCL.");
    } else if (vm.vm) {
        ADD("sys.virt.vm", NCD_CAT_SYS_VIRT, ends ? NCD_SEV_INFO : NCD_SEV_OK,
            "Virtual machine (%s): the PCI topology NCCL sees may be virtual",
            *vm.hypervisor ? vm.hypervisor : "hypervisor present");
        ncd_finding_evidence(f, "%s", vm.evidence);
        ncd_finding_cause(f, "Hypervisors often flatten the PCI tree, so NCCL "
                             "cannot tell which NIC is near which GPU.");
        ncd_finding_fix(f, "Cloud GPU images ship a topology file (e.g. "
                           "Azure's ndv4-topo.xml); point NCCL_TOPO_FILE at "
                           "it.  NCCL also reads "
                           "/var/run/nvidia-topologyd/virtualTopology.xml.");
    }
done:
    ncd_pci_list_release(&pl);
    return rc;
}
