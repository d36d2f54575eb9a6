/* SPDX-License-Identifier: MIT */
/**
 * @file topo.h
 * @brief GPU / NIC topology and the `nvidia-smi topo -m` matrix.
 *
 * Two inputs give the same model:
 *  - the sysfs PCI tree below the sysroot (pci.h), the files NCCL itself
 *    reads (NCCL src/os/linux.cc, src/graph/xml.cc, 2.30), plus RDMA and
 *    network devices from /sys/class/infiniband and /sys/class/net;
 *  - an hwloc XML export (`lstopo foo.xml`, `--topology FILE`), loaded with
 *    libhwloc (hwloc_topology_set_xml, all I/O objects kept).
 * GPU names and NVLink counts come from NVML (ncd_sys_nvml(), sysops.h:
 * libnvidia-ml.so.1 via dlopen on a live node, .ncd/nvml on a recorded
 * tree), or from hwloc's "NVLinkBandwidth" distances in an XML.
 *
 * Path types, as `nvidia-smi topo -m` defines them:
 *   X    self
 *   NV#  joined by # NVLinks
 *   PIX  at most a single PCIe bridge (one PCIe switch counts as one)
 *   PXB  multiple PCIe bridges, without the host bridge
 *   PHB  through a PCIe host bridge (the CPU)
 *   NODE across host bridges within one NUMA node
 *   SYS  across the SMP interconnect between NUMA nodes
 * A switch's upstream port and its downstream ports count as one bridge,
 * told apart by the PCIe port type in the configuration space (when it
 * cannot be read, by depth below the root port).
 */
#ifndef NCD_TOPO_H
#define NCD_TOPO_H

#include <stddef.h>

#include "ncd/ctx.h"
#include "ncd/pci.h"
#include "ncd/strbuf.h"
#include "ncd/sysops.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Path types, from closest to farthest (the order NCCL's PATH_* uses). */
enum ncd_link {
    NCD_LINK_X = 0,
    NCD_LINK_NV,
    NCD_LINK_PIX,
    NCD_LINK_PXB,
    NCD_LINK_PHB,
    NCD_LINK_NODE,
    NCD_LINK_SYS,
    NCD_LINK_UNKNOWN,
};

/** "X", "NV", "PIX", "PXB", "PHB", "NODE", "SYS", "?"; static. */
const char *ncd_link_name(enum ncd_link l);

enum ncd_topo_kind { NCD_TOPO_GPU = 0, NCD_TOPO_NIC = 1 };

/** One GPU or NIC of the matrix. */
struct ncd_topo_dev {
    enum ncd_topo_kind kind;
    char label[16];     /**< "GPU0", "NIC3" */
    char name[96];      /**< GPU model, or "mlx5_0" / "eth0" for a NIC */
    char netdev[32];    /**< the NIC's network interface, "" if unknown */
    int rdma;           /**< NIC: 1 when it is an RDMA (verbs) device */
    char bdf[16];       /**< PCI address, "" when not on PCI */
    int pci;            /**< index in the topology's PCI list, -1 if none */
    int numa_node;      /**< -1 unknown */
    char cpulist[160];  /**< CPU affinity ("0-47,96-143"), "" unknown */
};

/** The topology. */
struct ncd_topo {
    struct ncd_pci_list pci;   /**< owned */
    struct ncd_topo_dev *dev;  /**< owned; GPUs first (PCI order), NICs */
    size_t n_dev, n_gpu, n_nic;
    int *nvlinks;              /**< n_gpu x n_gpu NVLink counts, owned */
    int nvlink_known;          /**< NVML data (live or recorded) used */
    char nvlink_source[128];   /**< "NVML", ".ncd/nvml", "hwloc XML" or why
                                    unknown ("libnvidia-ml.so.1: ...") */
    char driver_version[32];   /**< NVIDIA driver, "" unknown */
    int cuda_driver_version;   /**< cuDriverGetVersion style (12040), 0 */
    char source[320];          /**< "sysfs" or "hwloc XML <file>" */
    int nvrm_present;          /**< /proc/driver/nvidia/version exists: the
                                    NVIDIA kernel driver is loaded */
    char nvrm_version[200];    /**< its first line ("NVRM version: ..."),
                                    "" when unreadable */
};

/**
 * Probes the node: PCI tree, GPUs (vendor 0x10de, class 0x03xx; names from
 * /proc/driver/nvidia/gpus/<bdf>/information), NICs (RDMA devices, then PCI
 * network interfaces without one), and with use_nvml ncd_topo_nvml().
 * @param use_nvml  0 skips NVML (fast path; call ncd_topo_nvml() later).
 * @return 0, NCD_ENOMEM.  No GPU is not an error (n_gpu == 0).
 */
int ncd_topo_probe(struct ncd_ctx *ctx, int use_nvml, struct ncd_topo *out);

/**
 * Adds NVML's answers (GPU names, NVLink counts, driver and CUDA driver
 * versions) to a probed topology: live, by loading libnvidia-ml.so.1
 * (nvmlInit costs 0.1 s to seconds on a GPU node without the persistence
 * daemon); recorded, from /.ncd/nvml.  Does nothing without GPUs or when
 * already done.  @return 0 or NCD_ENOMEM.
 */
int ncd_topo_nvml(struct ncd_ctx *ctx, struct ncd_topo *t);

/**
 * Loads an hwloc XML file (via libhwloc) into the same model.
 * @return 0, NCD_ENOENT / NCD_EPARSE (detail from hwloc), NCD_ENOMEM.
 */
int ncd_topo_load_xml(struct ncd_ctx *ctx, const char *file,
                      struct ncd_topo *out);

/** Frees the topology's contents. */
void ncd_topo_release(struct ncd_topo *t);

/**
 * Path type between two devices of the topology.
 * @param nv  receives the NVLink count for NCD_LINK_NV (may be NULL).
 */
enum ncd_link ncd_topo_link(const struct ncd_topo *t, size_t a, size_t b,
                            int *nv);

/**
 * Path type between two PCI functions of a list by the rules above
 * (without NVLink).  Indices into l->v.  Pure.
 */
enum ncd_link ncd_pci_link(const struct ncd_pci_list *l, int a, int b);

/** PCIe ACS on the paths NCCL's peer-to-peer traffic takes. */
struct ncd_acs_report {
    int gpus;            /**< NVIDIA GPUs on the bus */
    int ends;            /**< GPUs and NICs */
    int paths;           /**< GPU-GPU / GPU-NIC pairs at PIX/PXB with a
                              bridge that redirects P2P (NCD_ACS_P2P_BITS) */
    int n_lines;         /**< redirecting bridges listed below (<= 8) */
    char lines[8][200];  /**< "bridge <bdf>: ACSCtl: ..." */
    int unknown;         /**< bridges on such paths whose ACS state cannot
                              be read (not root) */
};

/**
 * Looks at every bridge between a GPU and another GPU or a NIC that would
 * talk through a PCIe switch (PIX/PXB).  Pure.  @return 0 or NCD_ENOMEM.
 */
int ncd_pci_acs_report(const struct ncd_pci_list *pl,
                       struct ncd_acs_report *out);

/**
 * Applies NVML's answer (sysops.h) to the topology: GPU names, NVLink
 * counts (links to an NVSwitch join every pair of switch-attached GPUs
 * with the smaller of their counts), driver and CUDA driver versions.
 * GPUs not in the topology are ignored; an answer that is not `known`
 * only sets nvlink_source to its error.  @return 0 or NCD_ENOMEM.
 */
int ncd_topo_apply_nvml(struct ncd_topo *t, const struct ncd_nvml_answer *a);

/* Renderers (matrix text, JSON): node_report.h. */

#ifdef __cplusplus
}
#endif
#endif
