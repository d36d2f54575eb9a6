/* SPDX-License-Identifier: MIT */
/**
 * @file pci.h
 * @brief PCI tree probe (the part NCCL's topology detection reads), PCIe
 *        ACS, IOMMU and virtualisation detection.
 *
 * Sources (all through the sysroot, fs.h):
 *  - /sys/bus/pci/devices/<bdf> -> realpath gives the place in the PCI tree
 *    ("/sys/devices/pci0000:00/0000:00:01.0/0000:17:00.0"), as NCCL
 *    computes its PCI paths (NCCL src/os/linux.cc, src/graph/xml.cc, 2.30);
 *  - per device: class, vendor, device, subsystem_vendor, subsystem_device,
 *    numa_node, local_cpulist, max_link_speed, max_link_width, the driver
 *    link, and `config` (PCI configuration space) for bridges: the PCIe
 *    capability (port type) and the ACS extended capability;
 *  - /sys/kernel/iommu_groups/<n>/type, /sys/class/iommu, /proc/cmdline;
 *  - /sys/class/dmi/id/{sys_vendor,product_name}, /sys/hypervisor/type,
 *    /proc/cpuinfo (hypervisor flag), /proc/version (WSL).
 *
 * The PCI configuration space beyond 256 bytes (where ACS lives) is
 * readable only by root; the ACS state of a bridge is then "unknown", never
 * guessed.
 */
#ifndef NCD_PCI_H
#define NCD_PCI_H

#include <stddef.h>

#include "ncd/ctx.h"
#include "ncd/pciaddr.h"

#ifdef __cplusplus
extern "C" {
#endif

/** PCIe port types (PCIe capability register bits 7:4). */
enum ncd_pcie_type {
    NCD_PCIE_UNKNOWN = -1,
    NCD_PCIE_ENDPOINT = 0x0,
    NCD_PCIE_LEGACY_ENDPOINT = 0x1,
    NCD_PCIE_ROOT_PORT = 0x4,
    NCD_PCIE_UPSTREAM = 0x5,   /**< switch upstream port */
    NCD_PCIE_DOWNSTREAM = 0x6, /**< switch downstream port */
    NCD_PCIE_PCIE_TO_PCI = 0x7,
    NCD_PCIE_PCI_TO_PCIE = 0x8,
    NCD_PCIE_RC_ENDPOINT = 0x9,
};

/** ACS control bits (PCIe base spec, ACS Extended Capability, offset 6).
 *  lspci -vvv prints them as ACSCtl: SrcValid TransBlk ReqRedir CmpltRedir
 *  UpstreamFwd EgressCtrl DirectTrans. */
#define NCD_ACS_SV 0x01 /**< source validation */
#define NCD_ACS_TB 0x02 /**< translation blocking */
#define NCD_ACS_RR 0x04 /**< P2P request redirect */
#define NCD_ACS_CR 0x08 /**< P2P completion redirect */
#define NCD_ACS_UF 0x10 /**< upstream forwarding */
#define NCD_ACS_EC 0x20 /**< P2P egress control */
#define NCD_ACS_DT 0x40 /**< direct translated P2P */
/** The bits that make peer-to-peer traffic go up to the root complex (or
 *  be blocked) instead of through the switch. */
#define NCD_ACS_P2P_BITS (NCD_ACS_RR | NCD_ACS_CR | NCD_ACS_EC)

/** What a PCI function is, for the topology. */
enum ncd_pci_role {
    NCD_PCI_OTHER = 0,
    NCD_PCI_BRIDGE, /**< class 0x0604 (PCI-PCI bridge / PCIe port) */
    NCD_PCI_GPU,    /**< vendor 0x10de, class 0x03xx */
    NCD_PCI_NIC,    /**< class 0x02xx (Ethernet 0x0200, InfiniBand 0x0207) */
    NCD_PCI_NVSWITCH, /**< vendor 0x10de, class 0x0680 */
};

/** Role of a function from its vendor and 24-bit class code.  Pure. */
enum ncd_pci_role ncd_pci_role_of(unsigned vendor, unsigned class_code);

/** One PCI function. */
struct ncd_pci_dev {
    char bdf[16];        /**< "0000:17:00.0" (lower case) */
    char path[320];      /**< realpath inside the sysroot */
    char root[32];       /**< host bridge component, "pci0000:16"; "" when
                              the path has none (virtual bus) */
    unsigned vendor, device, subsys_vendor, subsys_device;
    unsigned class_code; /**< 24 bits: base, sub, prog-if (0x030200) */
    enum ncd_pci_role role;
    int numa_node;       /**< -1 when unknown */
    int parent;          /**< index of the parent bridge in the list, -1
                              when the parent is the host bridge */
    int depth;           /**< PCI functions above it (0 below the host) */
    enum ncd_pcie_type pcie_type;
    int acs;             /**< 1: ACS capability found, 0: the extended
                              configuration space was read and has none,
                              -1: unknown (space not readable, not root) */
    unsigned acs_cap, acs_ctrl; /**< registers when acs == 1 */
    char cpulist[160];   /**< local_cpulist, "" when unknown */
    char driver[32];     /**< bound kernel driver, "" when none */
    char link_speed[32]; /**< max_link_speed ("16.0 GT/s PCIe") or "" */
    int link_width;      /**< max_link_width, 0 when unknown */
};

/** The probed PCI functions.  Zero-initialised is empty. */
struct ncd_pci_list {
    struct ncd_pci_dev *v; /**< owned; parents come before children */
    size_t n;
    int present;           /**< 0 when /sys/bus/pci/devices is missing */
};

/**
 * Probes every PCI function below /sys/bus/pci/devices.  Configuration
 * space is read only for bridges (ACS, port type); other files only for
 * bridges, GPUs, NICs and NVSwitches.
 * @param out  filled; release with ncd_pci_list_release().
 * @return 0 (a missing tree leaves out->present = 0), NCD_ENOMEM.
 */
int ncd_pci_scan(struct ncd_ctx *ctx, struct ncd_pci_list *out);

/** Frees the list's contents. */
void ncd_pci_list_release(struct ncd_pci_list *l);

/** Index of the function with that BDF (case-insensitive), or -1. */
int ncd_pci_find(const struct ncd_pci_list *l, const char *bdf);

/**
 * Finds the PCIe capability in a configuration space image and returns the
 * port type (enum ncd_pcie_type), or NCD_PCIE_UNKNOWN when there is none
 * or the image is too short (< 64 bytes).  Pure.
 */
int ncd_pci_cfg_pcie_type(const unsigned char *cfg, size_t len);

/**
 * Walks the extended capability list (from offset 0x100) of a
 * configuration space image for the ACS capability (ID 0x000D).
 * @return 1 and sets *cap / *ctrl (16-bit registers at +4 / +6) when found,
 *         0 when the list has no ACS, NCD_ERANGE when the image has no
 *         extended space (<= 256 bytes: sysfs hides it from non-root),
 *         NCD_EPARSE on a looping or out-of-range list.  Pure.
 */
int ncd_pci_cfg_acs(const unsigned char *cfg, size_t len, unsigned *cap,
                    unsigned *ctrl);

/** "SrcValid+ TransBlk- ReqRedir+ ..." as lspci prints ACSCtl; `buf`
 *  >= 96 bytes; returns buf. */
const char *ncd_acs_ctrl_str(unsigned ctrl, char *buf, size_t len);

/** IOMMU state of the node. */
struct ncd_iommu {
    int groups;          /**< entries in /sys/kernel/iommu_groups, -1 when
                              the directory is missing */
    int units;           /**< entries in /sys/class/iommu */
    int translated;      /**< groups whose type is DMA / DMA-FQ */
    int identity;        /**< groups whose type is identity (passthrough) */
    char cmdline_opts[256]; /**< iommu-related kernel parameters seen */
    int cmdline_pt;      /**< iommu=pt present */
    int cmdline_on;      /**< intel_iommu=on / amd_iommu=on|force... */
    int cmdline_off;     /**< intel_iommu=off / amd_iommu=off / iommu=off */
};

/**
 * Parses the IOMMU-related parameters of a kernel command line
 * (/proc/cmdline) into out->cmdline_*.  Pure.
 */
void ncd_iommu_parse_cmdline(const char *buf, size_t len,
                             struct ncd_iommu *out);

/** Probes the IOMMU state.  Always 0 (missing files leave unknowns). */
int ncd_iommu_probe(struct ncd_ctx *ctx, struct ncd_iommu *out);

/** Virtualisation seen from inside. */
struct ncd_virt {
    int vm;              /**< 1: a hypervisor is present */
    char hypervisor[64]; /**< "KVM", "Amazon EC2", "Microsoft Hyper-V",
                              "Xen"... or "" */
    int wsl;             /**< Windows Subsystem for Linux */
    char evidence[256];  /**< which file said so */
    char arch[16];       /**< CPU architecture from /proc/cpuinfo:
                              "x86_64", "aarch64", "ppc64le"; "" unknown */
};

/**
 * The CPU architecture /proc/cpuinfo text describes (its field names differ
 * per architecture: vendor_id/flags on x86, CPU implementer/Features on
 * arm64, cpu: POWER on ppc64le).  Static string, "" when unknown.
 */
const char *ncd_cpuinfo_arch(const char *buf, size_t len);

/** Detects a VM or WSL, and the CPU architecture.  Always 0. */
int ncd_virt_probe(struct ncd_ctx *ctx, struct ncd_virt *out);

#ifdef __cplusplus
}
#endif
#endif
