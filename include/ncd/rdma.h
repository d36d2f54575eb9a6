/* SPDX-License-Identifier: MIT */
/**
 * @file rdma.h
 * @brief RDMA devices (InfiniBand / RoCE HCAs) as NCCL's IB transport sees
 *        them, and NCCL's automatic GID index choice.
 *
 * Sources (through the sysroot): /sys/class/infiniband/<dev>/{device,
 * fw_ver,node_type}, ports/<p>/{state,phys_state,link_layer,rate,lid,
 * sm_lid}, ports/<p>/gids/<i>, ports/<p>/gid_attrs/{types,ndevs}/<i>,
 * /dev/infiniband/uverbs*, /etc/libibverbs.d/<provider>.driver, the GPUDirect
 * peer-memory files (/sys/kernel/mm/memory_peers/nv_mem{,_nc}/version,
 * /sys/module/nvidia_peermem/version; NCCL src/transport/net_ib/gdr.cc).
 *
 * Whether libibverbs loads is a system answer: ncd_sys_dlopen() in
 * sysops.h (recorded as .ncd/dlopen).
 */
#ifndef NCD_RDMA_H
#define NCD_RDMA_H

#include <stddef.h>

#include "ncd/ctx.h"
#include "ncd/sysops.h"

#ifdef __cplusplus
extern "C" {
#endif

/** RoCE version of a GID from gid_attrs/types ("IB/RoCE v1", "RoCE v2"). */
enum ncd_gid_type {
    NCD_GID_TYPE_UNKNOWN = 0, /**< not readable (EINVAL: unmapped entry) */
    NCD_GID_TYPE_V1 = 1,      /**< "IB/RoCE v1" or "RoCE v1" */
    NCD_GID_TYPE_V2 = 2,      /**< "RoCE v2" */
};

struct ncd_ib_gid {
    int index;
    unsigned char raw[16]; /**< the GID bytes */
    char text[48];         /**< as sysfs prints it */
    enum ncd_gid_type type;
    int family;            /**< AF_INET (IPv4-mapped ::ffff:a.b.c.d) or
                                AF_INET6 */
    int valid;             /**< not all-zero and not fe80::/10 */
    char ndev[32];         /**< gid_attrs/ndevs, "" when unknown */
};

struct ncd_ib_port {
    int port;               /**< 1-based */
    int state;              /**< 4 = ACTIVE (IBV_PORT_ACTIVE); -1 unknown */
    char state_text[32];    /**< "4: ACTIVE" */
    int phys_state;         /**< 5 = LinkUp; -1 unknown */
    char phys_text[32];     /**< "5: LinkUp" */
    int is_ethernet;        /**< link_layer "Ethernet" (RoCE) */
    char link_layer[16];    /**< "InfiniBand", "Ethernet", "" unknown */
    char rate[48];          /**< "400 Gb/sec (4X NDR)" */
    int lid, sm_lid;        /**< IB only; -1 unknown */
    struct ncd_ib_gid *gids; /**< owned; present entries only */
    size_t n_gids;
    int gid_tbl_len;        /**< highest index seen + 1 */
};

struct ncd_ib_dev {
    char name[64];          /**< verbs device name, "mlx5_0" */
    char bdf[16];           /**< PCI address, "" when not PCI (rxe, siw) */
    char driver[32];        /**< kernel driver of the PCI function */
    char fw[64];
    char netdev[32];        /**< first network interface of the function */
    int numa_node;
    struct ncd_ib_port *ports; /**< owned */
    size_t n_ports;
};

struct ncd_rdma {
    struct ncd_ib_dev *v;   /**< owned, sorted by name (natural order) */
    size_t n;
    int sysfs_present;      /**< /sys/class/infiniband exists */
    int n_uverbs;           /**< /dev/infiniband/uverbs* entries; -1 when
                                 /dev/infiniband is missing */
    int peermem;            /**< a GPUDirect peer-memory module is loaded */
    char peermem_file[80];  /**< which file showed it */
};

/**
 * Probes the RDMA devices.  Reading a RoCE GID table costs one small read
 * per entry (up to 256 per port); IB ports read only indices 0 and 1.
 * @return 0 or NCD_ENOMEM.
 */
int ncd_rdma_probe(struct ncd_ctx *ctx, struct ncd_rdma *out);

/** Frees the probe's contents. */
void ncd_rdma_release(struct ncd_rdma *r);

/**
 * Parses a sysfs GID ("fe80:0000:0000:0000:0202:c9ff:fe00:0001") into
 * bytes and sets family / valid.  @return 0 or NCD_EPARSE.  Pure.
 */
int ncd_ib_gid_parse(const char *s, struct ncd_ib_gid *g);

/** Parses a gid_attrs/types value.  Pure. */
enum ncd_gid_type ncd_ib_gid_type_parse(const char *s);

/** The knobs of NCCL's auto GID selection. */
struct ncd_gid_prefs {
    int family;            /**< AF_INET (default) or AF_INET6:
                                NCCL_IB_ADDR_FAMILY, exact strings */
    int have_range;        /**< NCCL_IB_ADDR_RANGE parsed */
    unsigned char range[16];
    int range_prefix;      /**< bits */
    int roce_version;      /**< NCCL_IB_ROCE_VERSION_NUM, default 2 */
};

/**
 * Reads NCCL_IB_ADDR_FAMILY, NCCL_IB_ADDR_RANGE and NCCL_IB_ROCE_VERSION_NUM
 * from the context's environment (a bad range is ignored, as NCCL does).
 */
void ncd_gid_prefs_from_env(struct ncd_ctx *ctx, struct ncd_gid_prefs *p);

/**
 * NCCL's automatic GID index for a RoCE port (ncclIbGetGidIndex, NCCL
 * src/transport/net_ib/connect.cc, 2.21+): start at 0, scan 1..len-1,
 * take a candidate of the wanted family (and range) whose family differs
 * from the current one; skip wrong-family, invalid (zero, fe80::) or
 * out-of-range entries; otherwise take it when its RoCE version is the
 * wanted one and the current one's differs or the current is invalid.
 * Entries whose type is unreadable are skipped.  Pure.
 * @return the index NCCL picks (0 when nothing qualifies).
 */
int ncd_ib_gid_auto(const struct ncd_ib_port *p,
                    const struct ncd_gid_prefs *prefs);

/** The GID entry with that index, or NULL. */
const struct ncd_ib_gid *ncd_ib_port_gid(const struct ncd_ib_port *p,
                                         int index);

#ifdef __cplusplus
}
#endif
#endif
