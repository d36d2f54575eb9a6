/* SPDX-License-Identifier: MIT */
/* Checks: GPUs and their topology (topo), PCI ACS / IOMMU / VM (pci).
 * NCCL facts: shared/reference/nccl-facts.md §4 (PCI files, GDR level) and
 * §6 (ACS/IOMMU, GPU Direct RDMA). */
#define _GNU_SOURCE
#include "ncd/check.h"
#include "check/check_internal.h"
#include "ncd/container.h"
#include "ncd/error.h"
#include "ncd/pci.h"
#include "ncd/topo.h"
#include "ncd/node.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ncd_check_topo(const struct ncd_node *n, const struct ncd_check_opts *opts,
                   struct ncd_findings *out);
int ncd_check_pci(const struct ncd_node *n, const struct ncd_check_opts *opts,
                  struct ncd_findings *out);


/* CUDA_VISIBLE_DEVICES against the GPUs present. */
static int check_visible(const struct ncd_node *n, const struct ncd_topo *t,
                         struct ncd_findings *out)
{
    const char *v = ncd_node_getenv(n, "CUDA_VISIBLE_DEVICES");
    struct ncd_finding *f;
    int rc = 0;
    if (!v || !t->n_gpu)
        return 0;
    /* CUDA numbers the GPUs this container was given, not the host's. */
    size_t ngpu =
        (size_t)ncd_container_visible_gpus(&n->container, (int)t->n_gpu);
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
    int seen[256] = {0}, bad = 0, dup = 0, cnt = 0;
    char badtok[64] = "";
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save), cnt++) {
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
            cnt == 0 ? NCD_SEV_ERROR : NCD_SEV_WARNING,
            "CUDA_VISIBLE_DEVICES entry '%s' is not one of the %zu GPUs", badtok,
            ngpu);
        ncd_finding_evidence(f, "CUDA_VISIBLE_DEVICES=%s", v);
        ncd_finding_cause(f,
                          "CUDA ignores the list from the first invalid entry "
                          "on, so %s; a rank mapped to a missing device fails "
                          "with 'invalid device ordinal'.",
                          cnt == 0 ? "no GPU is visible"
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

static const char *gpu_driver_state(const struct ncd_topo *t, char *drv,
                                    size_t drvsz)
{
    drv[0] = '\0';
    if (t->nvrm_present)
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

int ncd_check_topo(const struct ncd_node *n, const struct ncd_check_opts *opts,
                   struct ncd_findings *out)
{
    (void)opts;
    const struct ncd_topo *tp = &n->topo;
    struct ncd_finding *f;
    int rc = 0;
    if (!tp->pci.present) {
        ADD("gpu.not-visible", NCD_CAT_SYS_VIRT, NCD_SEV_INFO,
            "The PCI tree is not visible (no /sys/bus/pci/devices)");
        ncd_finding_cause(f, "Without it GPUs, NICs and their topology "
                             "cannot be checked; NCCL sees the same gap and "
                             "builds a poor topology.");
        goto done;
    }
    size_t unknown_display = 0;
    for (size_t i = 0; i < tp->pci.n; i++)
        unknown_display += (tp->pci.v[i].class_code >> 16) == 0x03 &&
                           tp->pci.v[i].vendor == 0;
    if (!tp->n_gpu && unknown_display) {
        ADD("gpu.vendor-not-visible", NCD_CAT_SYS_VIRT, NCD_SEV_INFO,
            "%zu display controller(s) whose PCI vendor is not visible: "
            "cannot tell whether they are NVIDIA GPUs",
            unknown_display);
        ncd_finding_cause(f, "The capture lacks their `vendor` files (NCCL "
                             "reads them too); GPU checks are skipped.");
        goto done;
    }
    if (!tp->n_gpu) {
        ADD("gpu.none", NCD_CAT_GPU_DRIVER, NCD_SEV_INFO,
            "No NVIDIA GPU on this node's PCI bus (%zu PCI functions read)",
            tp->pci.n);
        ncd_finding_cause(f, "Nothing for NCCL to run on here; GPU, NVLink "
                             "and GPU-NIC checks are skipped.");
        goto done;
    }
    char drv[32];
    const char *ds = gpu_driver_state(tp, drv, sizeof drv);
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
    if ((rc = check_visible(n, tp, out)) < 0)
        goto done;
    /* GPU pairs joined only through the CPU. */
    int far = 0;
    for (size_t a = 0; a < tp->n_gpu; a++)
        for (size_t b = a + 1; b < tp->n_gpu; b++) {
            enum ncd_link l = ncd_topo_link(tp, a, b, NULL);
            if (l == NCD_LINK_NODE || l == NCD_LINK_SYS)
                far++;
        }
    if (far) {
        ADD("gpu.p2p.cpu-path", NCD_CAT_GPU_P2P, NCD_SEV_WARNING,
            "%d GPU pair(s) are joined only through the CPU (NODE/SYS), "
            "without NVLink",
            far);
        int shown = 0;
        for (size_t a = 0; a < tp->n_gpu && shown < 8; a++)
            for (size_t b = a + 1; b < tp->n_gpu && shown < 8; b++) {
                enum ncd_link l = ncd_topo_link(tp, a, b, NULL);
                if (l == NCD_LINK_NODE || l == NCD_LINK_SYS) {
                    ncd_finding_evidence(f, "%s (%s) - %s (%s): %s",
                                         tp->dev[a].label, tp->dev[a].bdf,
                                         tp->dev[b].label, tp->dev[b].bdf,
                                         ncd_link_name(l));
                    shown++;
                }
            }
        ncd_finding_evidence(f, "NVLink data: %s", tp->nvlink_source);
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
    for (size_t i = tp->n_gpu; i < tp->n_dev; i++)
        n_rdma += tp->dev[i].rdma;
    /* Without RDMA, locality does not change NCCL's data path (sockets
     * copy through host memory anyway): only RDMA NICs are judged. */
    if (n_rdma) {
        int bad = 0;
        char lines[16][200];
        for (size_t g = 0; g < tp->n_gpu; g++) {
            enum ncd_link best = NCD_LINK_UNKNOWN;
            size_t bi = 0;
            for (size_t k = tp->n_gpu; k < tp->n_dev; k++) {
                if (n_rdma && !tp->dev[k].rdma)
                    continue;
                enum ncd_link l = ncd_topo_link(tp, g, k, NULL);
                if (l < best) {
                    best = l;
                    bi = k;
                }
            }
            if (best == NCD_LINK_UNKNOWN || best <= NCD_LINK_PXB)
                continue;
            if (bad < 16)
                snprintf(lines[bad], sizeof lines[0],
                         "%s (%s): closest %s is %s (%s) at %s",
                         tp->dev[g].label, tp->dev[g].bdf,
                         n_rdma ? "RDMA NIC" : "NIC", tp->dev[bi].label,
                         tp->dev[bi].name, ncd_link_name(best));
            bad++;
        }
        const struct ncd_virt *vmp = &n->platform.virt;
        if (bad) {
            ADD("perf.config.nic-far-from-gpu", NCD_CAT_PERF_CONFIG,
                vmp->vm ? NCD_SEV_INFO : NCD_SEV_WARNING,
                "%d GPU(s) have no RDMA NIC under the same PCIe switch%s", bad,
                vmp->vm ? " (as far as this VM's virtual PCI tree shows)" : "");
            for (int i = 0; i < bad && i < 16; i++)
                ncd_finding_evidence(f, "%s", lines[i]);
            ncd_finding_cause(
                f, "NCCL uses GPUDirect RDMA only when the NIC is within "
                   "NCCL_NET_GDR_LEVEL of the GPU (default PXB; P2C with "
                   "NCCL_NET_GDR_C2C=1 on C2C systems).  Farther (PHB, NODE, "
                   "SYS) the data is staged through host memory, costing "
                   "bandwidth and CPU.");
            if (vmp->vm)
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
        "%zu GPU(s), %zu NIC(s) (%zu RDMA); topology from %s", tp->n_gpu,
        tp->n_nic, n_rdma, tp->source);
    ncd_finding_evidence(f, "NVLink: %s", tp->nvlink_source);
    if (*tp->driver_version)
        ncd_finding_evidence(f, "NVIDIA driver %s", tp->driver_version);
done:
    return rc;
}

/* ---- PCI ACS / IOMMU / virtualisation ------------------------------------- */

int ncd_check_pci(const struct ncd_node *n, const struct ncd_check_opts *opts,
                  struct ncd_findings *out)
{
    (void)opts;
    struct ncd_finding *f = NULL;
    const struct ncd_iommu *io = &n->platform.iommu;
    const struct ncd_virt *vm = &n->platform.virt;
    struct ncd_acs_report acs;
    int rc = ncd_pci_acs_report(&n->topo.pci, &acs);
    if (rc < 0)
        return rc;
    int n_acs = acs.n_lines, pairs = acs.paths, n_unknown = acs.unknown;
    int gpus = acs.gpus, ends = acs.ends;
    if (n_acs) {
        ADD("sys.pci.acs-redirect", NCD_CAT_SYS_PCI,
            vm->vm ? NCD_SEV_INFO : NCD_SEV_ERROR,
            "PCIe ACS redirects peer-to-peer traffic on %d path(s) between "
            "GPUs/NICs",
            pairs);
        for (int i = 0; i < n_acs; i++)
            ncd_finding_evidence(f, "%s", acs.lines[i]);
        if (vm->vm) {
            ncd_finding_cause(f, "Inside a VM (%s) ACS is what keeps devices "
                                 "isolated and must stay on.",
                              *vm->hypervisor ? vm->hypervisor : "hypervisor");
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
    if (io->translated > 0 && gpus && !vm->vm) {
        ADD("sys.pci.iommu-translated", NCD_CAT_SYS_PCI, NCD_SEV_WARNING,
            "The IOMMU translates DMA for %d device group(s) on this bare-metal "
            "GPU node",
            io->translated);
        ncd_finding_evidence(f, "/sys/kernel/iommu_groups: %d groups, %d DMA, "
                                "%d identity",
                             io->groups, io->translated, io->identity);
        if (*io->cmdline_opts)
            ncd_finding_evidence(f, "/proc/cmdline: %s", io->cmdline_opts);
        ncd_finding_cause(f, "Peer-to-peer and GPUDirect RDMA addresses then "
                             "go through IOMMU translation: P2P between GPUs "
                             "can hang or corrupt data, and GPUDirect can "
                             "fail (NVIDIA's docs call for IOMMU off or "
                             "passthrough on bare metal).");
        ncd_finding_fix(f, "Boot with `iommu=pt` (keeps the IOMMU for VMs, "
                           "identity-maps host devices) or disable VT-d / "
                           "AMD-Vi (`intel_iommu=off` / `amd_iommu=off`).");
    } else if (io->groups > 0 || *io->cmdline_opts) {
        ADD("sys.pci.iommu", NCD_CAT_SYS_PCI, NCD_SEV_OK,
            "IOMMU: %d group(s), %d translated, %d passthrough%s%s",
            io->groups > 0 ? io->groups : 0, io->translated, io->identity,
            *io->cmdline_opts ? "; cmdline: " : "", io->cmdline_opts);
    }
    if (vm->wsl) {
        ADD("sys.virt.wsl", NCD_CAT_SYS_VIRT, NCD_SEV_WARNING,
            "Running under WSL: no RDMA, no NVLink topology, limited P2P");
        ncd_finding_evidence(f, "%s", vm->evidence);
        ncd_finding_cause(f, "WSL exposes GPUs through a paravirtual driver; "
                             "NCCL sees no PCI topology and no InfiniBand.");
        ncd_finding_fix(f, "Use native Linux for multi-node NCCL.");
    } else if (vm->vm) {
        ADD("sys.virt.vm", NCD_CAT_SYS_VIRT, ends ? NCD_SEV_INFO : NCD_SEV_OK,
            "Virtual machine (%s): the PCI topology NCCL sees may be virtual",
            *vm->hypervisor ? vm->hypervisor : "hypervisor present");
        ncd_finding_evidence(f, "%s", vm->evidence);
        ncd_finding_cause(f, "Hypervisors often flatten the PCI tree, so NCCL "
                             "cannot tell which NIC is near which GPU.");
        ncd_finding_fix(f, "Cloud GPU images ship a topology file (e.g. "
                           "Azure's ndv4-topo.xml); point NCCL_TOPO_FILE at "
                           "it.  NCCL also reads "
                           "/var/run/nvidia-topologyd/virtualTopology.xml.");
    }
done:
    return rc;
}
