/* SPDX-License-Identifier: MIT */
/**
 * @file node.h
 * @brief The one typed snapshot of a node, filled once per run by probe
 *        components; checks and renderers read it and nothing else.
 *
 * Flow: probes (components) -> struct ncd_node -> checks (check.h, pure
 * functions of the node) -> findings -> renderers (text, JSON).  Nothing
 * probes twice and nothing reads JSON back.
 *
 * Components follow hwloc's discovery components (include/hwloc/plugins.h,
 * struct hwloc_disc_component: name, phases, instantiate): each fills one
 * part of the node, names the parts it needs first, and runs at most once
 * per node.  The list is src/lib/snapshot/components.def:
 *   NCD_COMPONENT(part, requires, fill function)
 * Adding a probe = one fill function (src/lib/snapshot/comp_*.c; comp_net.c
 * is the one to copy), its fields here, one line there.
 *
 * Every component reads the system through the context only: files via the
 * sysroot (fs.h), everything else via the system-operations layer
 * (sysops.h).  A component that cannot run at all records its error code
 * and detail in status[]; the check runner turns that into a
 * "tool.check-failed" finding for the checks that need the part.
 */
#ifndef NCD_NODE_H
#define NCD_NODE_H

#include <stddef.h>

#include "ncd/container.h"
#include "ncd/ctx.h"
#include "ncd/knownbugs.h"
#include "ncd/libs.h"
#include "ncd/nccl.h"
#include "ncd/ncclvars.h"
#include "ncd/netif.h"
#include "ncd/pci.h"
#include "ncd/ports.h"
#include "ncd/rdma.h"
#include "ncd/recommend.h"
#include "ncd/shm.h"
#include "ncd/sysops.h"
#include "ncd/topo.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The parts of a node, one per component (bit numbers). */
enum ncd_node_part {
    NCD_PART_ENV = 0,   /**< environment after NCCL's config files */
    NCD_PART_CATALOG,   /**< the NCCL variable catalog the environment is
                             judged by and the known bugs the installed
                             libnccl is judged by (data compiled in, not
                             read from the node; a part so that only the
                             checks that need it pay for loading it) */
    NCD_PART_SYSTEM,    /**< host name, NCCL version to predict, who runs */
    NCD_PART_PLATFORM,  /**< VM / WSL (kernel, DMI), IOMMU */
    NCD_PART_PCI,       /**< PCI tree, GPUs, NICs, NVLink (topo.h) */
    NCD_PART_RDMA,      /**< HCAs, ports, GIDs, verbs library, providers */
    NCD_PART_NET,       /**< interfaces, recommendation, NCCL's choice */
    NCD_PART_SHM,       /**< /dev/shm, RemoveIPC, memlock, capabilities */
    NCD_PART_CONTAINER, /**< runtime, Kubernetes, Slurm, GPU device nodes */
    NCD_PART_LIBS,      /**< libnccl files, loadable libraries, CUDA driver */
    NCD_PART_PORTS,     /**< port range, listeners, firewall, bind test */
    NCD_PART__N
};

/** Bit of a part, for masks. */
#define NCD_PART_BIT(p) (1u << (p))
/** Every part. */
#define NCD_PARTS_ALL ((1u << NCD_PART__N) - 1)

/** How NVML is used by the PCI component. */
enum ncd_nvml_policy {
    NCD_NVML_AUTO = 0, /**< only when cheap (a recording) or when NVLink can
                            change a finding (a GPU pair not under one PCIe
                            switch): nvmlInit costs 0.1-2 s */
    NCD_NVML_ALWAYS,   /**< `topo`, `gather` */
    NCD_NVML_NEVER,    /**< `topo --no-nvml` */
};

/** What a probe run may assume. */
struct ncd_node_opts {
    /** --nccl-version as given ("2.21.5"), or NULL: the libnccl.so.2 this
     *  process loads, else the newest known (ncd_nccl_target()). */
    const char *nccl_version;
    enum ncd_nvml_policy nvml;
    /** hwloc XML export to read the topology from instead of sysfs, or
     *  NULL (`topo --topology`). */
    const char *topology_xml;
    /** Called before each component runs (tracing, timing); may be NULL. */
    void (*on_component)(void *arg, enum ncd_node_part part);
    void *on_component_arg;
};

/** Outcome of one component. */
struct ncd_node_status {
    int runs;          /**< times the component ran (0 or 1) */
    int rc;            /**< 0, or the NCD_E* code it failed with */
    char detail[512];  /**< the context's error detail then, or "" */
};

/** The node. */
struct ncd_node {
    unsigned filled;   /**< NCD_PART_BIT()s probed (failed ones too) */
    struct ncd_node_status status[NCD_PART__N];

    /** NCD_PART_ENV: the environment NCCL will see (the context's copy
     *  after ~/.nccl.conf, NCCL_CONF_FILE and /etc/nccl.conf), in order. */
    struct {
        struct ncd_env_kv *v; /**< owned (finding.h's name/value pair;
                                   value never NULL here) */
        size_t n;
        struct ncd_conf_result conf;
    } env;

    /** NCD_PART_CATALOG (data/nccl-vars.yaml). */
    struct ncd_var_catalog catalog;
    /** NCD_PART_CATALOG (data/nccl-known-bugs.yaml; empty in a build
     *  without it). */
    struct ncd_known_bugs known_bugs;

    /** NCD_PART_SYSTEM. */
    struct {
        char host[256];       /**< ncd_sys_hostname() */
        int live;             /**< this machine (1) or a capture (0) */
        char sysroot[1024];   /**< the capture as named by the user */
        const char *where;    /**< "" live, " in this capture"; static */
        int answers_visible;  /**< ncd_sys_answers_visible() */
        int nccl_version;     /**< behaviour to predict (version.h code) */
        char nccl_version_source[600];
        struct ncd_sys_identity id;
    } sys;

    /** NCD_PART_PLATFORM. */
    struct {
        struct ncd_virt virt;
        struct ncd_iommu iommu;
    } platform;

    /** NCD_PART_PCI. */
    struct ncd_topo topo;

    /** NCD_PART_RDMA. */
    struct {
        struct ncd_rdma r;
        struct ncd_gid_prefs prefs;   /**< from NCCL_IB_ADDR_FAMILY ... */
        int active_ports;             /**< ports whose state is ACTIVE */
        char hca_list[512];           /**< those, NCCL_IB_HCA syntax */
        char verbs_lib[128];          /**< NCCL_IBVERBS_LIB or
                                           libibverbs.so.1 */
        struct ncd_dl_probe verbs;    /**< whether it loads (when HCAs) */
        int libibverbs_d;             /**< /etc/libibverbs.d exists */
        /** Per device of r.v: its verbs provider (from the driver). */
        struct ncd_rdma_provider {
            char name[40];      /**< "mlx5", "efa"..., "" unknown driver */
            int config;         /**< /etc/libibverbs.d/<name>.driver */
            int dirs;           /**< provider directories that exist */
            char lib[160];      /**< lib<name>-rdmav*.so found, "" none */
        } *prov;                /**< owned, r.n entries */
    } rdma;

    /** NCD_PART_NET. */
    struct {
        struct ncd_netif_list nl;
        struct ncd_recommendation rec; /**< points into nl */
        struct ncd_nccl_choice ch;     /**< for sys.nccl_version */
    } net;

    /** NCD_PART_SHM. */
    struct {
        struct ncd_shm shm;
        int removeipc;          /**< 1, 0, -1 not set (logind default) */
        char removeipc_src[300];
        int systemd;            /**< logind.conf or /run/systemd/system */
        struct ncd_limit memlock; /**< /proc/self/limits */
        int cap_known;
        unsigned long long capeff; /**< /proc/self/status CapEff */
        char **limits_lines;    /**< "file: line" memlock settings of
                                     limits.conf(.d); owned */
        size_t n_limits_lines;
        int proc_mounts;        /**< /proc/mounts exists */
    } shm;

    /** NCD_PART_CONTAINER. */
    struct ncd_container container;

    /** NCD_PART_LIBS. */
    struct {
        struct ncd_nccl_scan scan;
        int flags_dir_ok;       /**< FLAGS_nccl_dir/libnccl.so exists; -1
                                     when FLAGS_nccl_dir is unset */
        int cuda_driver;        /**< cuDriverGetVersion style, 0 unknown */
        char cuda_src[64];
    } libs;

    /** NCD_PART_PORTS. */
    struct {
        int lo, hi, range_known; /**< ip_local_port_range (32768-60999
                                      when unknown) */
        int *listen;             /**< LISTEN ports, sorted; owned */
        size_t n_listen;
        struct ncd_fw fw;        /**< for [lo, hi] */
        char fw_why[512];        /**< why fw is unknown */
        char ipt_tables[256];    /**< /proc/net/ip_tables_names, spaces */
        struct {
            int tested;          /**< 0: nothing to bind, or a capture */
            int rc;              /**< 0 bound; NCD_E* */
            int port;
            char addr[64], ifname[NCD_IFNAME_MAX + 8];
            char error[512];
        } bind;
    } ports;
};

/**
 * Probes the parts in `parts` (NCD_PART_BIT mask) and the parts they need,
 * each at most once for this node.  The context's environment copy gets
 * NCCL's config files applied (the ENV part), as NCCL does at init.
 * @return 0; NCD_ENOMEM; NCD_EINVAL when opts->nccl_version is not an
 *         NCCL 2.x version (message in the context).  A component that
 *         fails otherwise leaves its status and the run goes on.
 */
int ncd_node_probe(struct ncd_ctx *ctx, const struct ncd_node_opts *opts,
                   unsigned parts, struct ncd_node *n);

/**
 * Probes the NET part (and the parts it needs) predicting NCCL `version`
 * (version.h code; 0 = the newest known, without loading libnccl): the
 * interfaces, the recommendation and NCCL's choice for commands that start
 * ranks (perf, probe, tune).  `n` is zero-initialised by the caller and
 * released with ncd_node_release().
 * @return 0 when the NET part was filled; else its component's NCD_E*
 *         code (detail in the context) or NCD_ENOMEM.
 */
int ncd_node_probe_net(struct ncd_ctx *ctx, int version, struct ncd_node *n);

/** Frees everything the node holds; it is empty afterwards. */
void ncd_node_release(struct ncd_node *n);

/** 1 when the part was probed and its component succeeded. */
int ncd_node_has(const struct ncd_node *n, enum ncd_node_part p);

/** A variable of the snapshot's environment, or NULL.  Owned by n. */
const char *ncd_node_getenv(const struct ncd_node *n, const char *name);

/** Name of a part ("net", "pci"...); static. */
const char *ncd_node_part_name(enum ncd_node_part p);

/**
 * The NCCL version whose behaviour to predict (the version policy): the
 * `opt` string ("2.21.5", from --nccl-version), else the libnccl.so.2 this
 * process would load (ncd_sys_nccl_version()), else the newest known
 * (NCD_NCCL_NEWEST).  `source` receives where it came from, in words.
 * @return 0, or NCD_EINVAL when `opt` is not an NCCL 2.x version.
 */
int ncd_nccl_target(struct ncd_ctx *ctx, const char *opt, int *version,
                    char *source, size_t sourcesz);

/* ---- facts derived from the snapshot (pure) ------------------------------- */

/** NVIDIA GPUs on the PCI bus (vendor 0x10de, display class). */
int ncd_node_pci_gpus(const struct ncd_node *n);

/** GPUs NCCL would use here: the PCI count, narrowed by the container's
 *  device nodes and NVIDIA_VISIBLE_DEVICES, then CUDA_VISIBLE_DEVICES. */
int ncd_node_local_gpus(const struct ncd_node *n);

/** /dev/shm bytes NCCL may need (shm.h formula, NCCL_BUFFSIZE). */
long long ncd_node_shm_need(const struct ncd_node *n);

#ifdef __cplusplus
}
#endif
#endif
