/* SPDX-License-Identifier: MIT */
/**
 * @file recommend.h
 * @brief Which interface NCCL (and MPI, Gloo) should use on this node, by
 *        explicit rules, with the reason for every decision.
 *
 * Rules, in order (each later rule only breaks ties of the earlier ones):
 *  1. Usable = administratively UP, RUNNING (carrier), and holding a
 *     routable address: IPv4 outside 127/8 and 169.254/16, or a global
 *     IPv6 address.  Unusable interfaces are listed with the reason.
 *     1b. When every usable interface is a container/VM bridge (kind
 *     container-bridge: docker0, br-<id>, virbr*, cni*, lxcbr*), none is:
 *     they reach only this host's containers and VMs (local_only).
 *  2. Tier: IPoIB (ARP type infiniband) first; then physical NICs, bonds,
 *     VLANs and plain bridges; then wireless; then anything whose name or
 *     kind marks it as container/VM/VPN plumbing (ncd_ifname_is_plumbing(),
 *     ifclass.h: docker*, br-*, veth*, virbr*, cni*, flannel*, cali*,
 *     tun*, tap*, wg*, tailscale*...; other software devices), chosen only
 *     when nothing else is usable.
 *  3. Higher link speed (sysfs speed, Mb/s; unknown counts as 0).
 *  4. Carries the default route (/proc/net/route, /proc/net/ipv6_route).
 *  5. Clearly the one that carries the traffic: rx_bytes + tx_bytes at
 *     least NCD_RECOMMEND_BUSY_BYTES and NCD_RECOMMEND_BUSY_RATIO times the
 *     other's.  Closer counters decide nothing: a probe's own bursts (or a
 *     backup run) would otherwise flip the choice between twin links from
 *     one run to the next.
 *  6. Lower ifindex.
 */
#ifndef NCD_RECOMMEND_H
#define NCD_RECOMMEND_H

#include "ncd/ctx.h"
#include "ncd/ifclass.h"
#include "ncd/netif.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NCD_RANK_MAX_REASONS 8

/** Rule 5: bytes (rx + tx) an interface must have carried ... */
#define NCD_RECOMMEND_BUSY_BYTES (1ull << 30)
/** ... and how many times the other's, to win on traffic. */
#define NCD_RECOMMEND_BUSY_RATIO 10

/** The verdict on one interface. */
struct ncd_if_rank {
    const struct ncd_netif *ni;     /**< points into the probed list */
    int usable;                     /**< passes rule 1 */
    int tier;                       /**< rule 2: 0 IPoIB ... 4 plumbing */
    int default_route;              /**< rule 4 */
    int rank;                       /**< 1 = best; 0 when unusable */
    const struct ncd_if_addr *addr; /**< the routable address, or NULL */
    int n_reasons;
    char reasons[NCD_RANK_MAX_REASONS][192]; /**< in words, for humans */
};

/** The recommendation for a node. */
struct ncd_recommendation {
    struct ncd_if_rank *ranks; /**< all interfaces, best first; owned */
    size_t n;
    const struct ncd_if_rank *best; /**< NULL when nothing is usable */
    int best_is_plumbing;      /**< best is tier 4 (nothing better) */
    int local_only;            /**< rule 1b: only container/VM bridges were
                                    usable, so nothing is recommended */
    /** Value for NCCL_SOCKET_IFNAME: "ens5", or "=eth1" when a prefix would
     *  also match another interface (eth10); "" when none. */
    char socket_ifname[NCD_IFNAME_MAX + 8];
    int rdma_active_ports;     /**< ACTIVE ports under /sys/class/infiniband */
    int rdma_devices;          /**< devices under /sys/class/infiniband */
    int ib_disable;            /**< 1: recommend NCCL_IB_DISABLE=1 */
    char ib_reason[192];
};

/**
 * Ranks the interfaces of `nl` and derives the recommended settings.
 * `nl` must outlive `out`.
 * @return 0 or NCD_ENOMEM.  Release with ncd_recommendation_release().
 */
int ncd_recommend(struct ncd_ctx *ctx, const struct ncd_netif_list *nl,
                  struct ncd_recommendation *out);

/**
 * ncd_recommend() with the RDMA counts already known (the node snapshot's
 * RDMA part), so /sys/class/infiniband is not read again.
 * @param rdma_active_ports  ACTIVE ports (see ncd_rdma_active_ports()).
 * @param rdma_devices       devices under /sys/class/infiniband.
 */
int ncd_recommend_rdma(struct ncd_ctx *ctx, const struct ncd_netif_list *nl,
                       int rdma_active_ports, int rdma_devices,
                       struct ncd_recommendation *out);

void ncd_recommendation_release(struct ncd_recommendation *r);

/**
 * The recommended environment as NAME=value pairs, in a stable order:
 * NCCL_SOCKET_IFNAME, NCCL_IB_DISABLE (when recommended), GLOO_SOCKET_IFNAME,
 * OMPI_MCA_btl_tcp_if_include, OMPI_MCA_oob_tcp_if_include.
 * @param names,values  arrays of at least 8; strings point into `r` or are
 *                      static.
 * @return the count (0 when no interface is usable).
 */
int ncd_recommend_env(const struct ncd_recommendation *r, const char **names,
                      const char **values);

/**
 * Counts the RDMA ports NCCL's IB transport could use: ports whose state
 * under /sys/class/infiniband/<dev>/ports/<p>/state is ACTIVE (NCCL
 * src/transport/net_ib/init.cc accepts only IBV_PORT_ACTIVE ports).
 * @param n_devices  receives the number of RDMA devices (may be NULL).
 * @param hca_list   receives those ports in NCCL_IB_HCA's exact syntax,
 *                   "=mlx5_0:1,mlx5_1:1" ("" when none); may be NULL.
 * @return the number of ACTIVE ports.
 */
int ncd_rdma_active_ports(struct ncd_ctx *ctx, int *n_devices,
                          char *hca_list, size_t n);


#ifdef __cplusplus
}
#endif
#endif
