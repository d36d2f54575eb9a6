/* SPDX-License-Identifier: MIT */
/**
 * @file netif.h
 * @brief Network interface probe: what `ip addr` and /sys/class/net show,
 *        plus the getifaddrs() list in the order NCCL walks it.
 *
 * Sources read (all through the sysroot, see fs.h):
 *  - /sys/class/net/<if>/{ifindex,flags,operstate,carrier,mtu,address,type,
 *    speed,device,uevent,master,statistics/{rx,tx}_{bytes,packets}},
 *    /sys/class/net/<if>/{bridge,bonding,wireless,phy80211,tun_flags},
 *    the device link's PCI path and numa_node, /sys/class/net/<if>/device/
 *    driver link;
 *  - the address list: live, getifaddrs(3); on a recorded sysroot the file
 *    /.ncd/ifaddrs (written by `nccl-doctor gather`, format below).
 *
 * /.ncd/ifaddrs format: one getifaddrs() entry per line, in getifaddrs
 * order, AF_INET/AF_INET6 only:
 *     <ifa_name> <inet|inet6> <address> <prefixlen> <ifa_flags in hex>
 * e.g. "eth0 inet 10.0.0.5 24 0x11043".  '#' starts a comment line.  IPv6
 * link-local addresses may carry "%<scope>" as getnameinfo prints them.
 */
#ifndef NCD_NETIF_H
#define NCD_NETIF_H

#include <net/if.h>
#include <netinet/in.h>
#include <stddef.h>

#include "ncd/ctx.h"
#include "ncd/netaddr.h"
#include "ncd/strbuf.h"

#ifdef __cplusplus
extern "C" {
#endif

/** What an interface is.  ncd_netif_kind_name() gives the JSON string. */
enum ncd_if_kind {
    NCD_IFK_UNKNOWN = 0,
    NCD_IFK_LOOPBACK,  /**< lo */
    NCD_IFK_PHYSICAL,  /**< a NIC on a bus (PCI, platform, USB...) */
    NCD_IFK_IPOIB,     /**< IP over InfiniBand (ARPHRD_INFINIBAND) */
    NCD_IFK_BRIDGE,    /**< a Linux bridge (br0, virbr0 is BRIDGE_VIRT) */
    NCD_IFK_CONTAINER_BRIDGE, /**< docker0, br-<id>, cni0, virbr*, lxcbr */
    NCD_IFK_VETH,      /**< one end of a veth pair (containers, k8s pods) */
    NCD_IFK_VLAN,      /**< 802.1Q VLAN on another interface */
    NCD_IFK_BOND,      /**< bond/team master */
    NCD_IFK_TUNNEL,    /**< tun/tap, WireGuard, VPN, overlay (vxlan,
                            flannel, calico, tailscale, ipip, gre...) */
    NCD_IFK_WIRELESS,  /**< Wi-Fi */
    NCD_IFK_VIRTUAL,   /**< other software device (dummy, ifb, macvlan,
                            virtio without PCI...) */
};

/** "unknown", "loopback", "physical", "ipoib", "bridge",
 *  "container-bridge", "veth", "vlan", "bond", "tunnel", "wireless",
 *  "virtual"; static. */
const char *ncd_netif_kind_name(enum ncd_if_kind k);

/** 1 for software kinds that are never a good NCCL data path between
 *  hosts (container bridges, veth, tunnels, loopback, other virtual).
 *  Wireless is physical (but slow): 0. */
int ncd_netif_kind_is_virtual(enum ncd_if_kind k);

/** Everything known about one interface. */
struct ncd_netif {
    int index;                   /**< ifindex, 0 when unknown */
    char name[NCD_IFNAME_MAX + 8];
    unsigned flags;              /**< IFF_* from /sys/.../flags */
    char operstate[16];          /**< "up", "down", "unknown", "dormant"... */
    int carrier;                 /**< 1, 0, or -1 when unreadable (down) */
    int mtu;                     /**< bytes; 0 when unknown */
    char mac[64];                /**< "aa:bb:..." (20 bytes for IPoIB) */
    int arptype;                 /**< ARPHRD_* number, -1 unknown */
    char kind_evidence[160];     /**< why `kind` was chosen, in words */
    enum ncd_if_kind kind;
    long long speed_mbps;        /**< Mb/s; -1 when unknown */
    unsigned long long rx_bytes, tx_bytes, rx_packets, tx_packets;
    char pci_addr[32];           /**< "0000:17:00.0", "" when not PCI */
    char bus_path[256];          /**< realpath of the device link in the
                                      sysroot, "" when none */
    int numa_node;               /**< -1 when unknown */
    char driver[32];             /**< kernel driver, "" when unknown */
    char master[NCD_IFNAME_MAX + 8]; /**< bridge/bond it is enslaved to */
    char vendor[8];              /**< PCI vendor "0x15b3", "" when none */
    struct ncd_if_addr *addrs;   /**< owned by the list */
    size_t n_addrs;
};

/** A probed node's interfaces.  Zero-initialised is empty. */
struct ncd_netif_list {
    struct ncd_netif *v; /**< sorted by ifindex */
    size_t n;
    struct ncd_ifaddr_entry *ifa; /**< getifaddrs order */
    size_t n_ifa;
    int ifa_known; /**< 0 when no address list could be read (recorded
                        sysroot without /.ncd/ifaddrs) */
    char ifa_error[256]; /**< why the address list is unknown, "" if it is
                              known or simply absent */
};

/**
 * Probes every interface below /sys/class/net and the address list.
 * A missing or unreadable attribute leaves its "unknown" value; only a
 * missing /sys/class/net is an error.
 * @param out  filled; release with ncd_netif_list_release().
 * @return 0, NCD_ENOENT (no /sys/class/net), NCD_ENOMEM.
 */
int ncd_netif_probe(struct ncd_ctx *ctx, struct ncd_netif_list *out);

/** Frees the list's contents; it is empty afterwards. */
void ncd_netif_list_release(struct ncd_netif_list *l);

/** The interface with that name (an alias label "eth0:1" finds "eth0"),
 *  or NULL. */
struct ncd_netif *ncd_netif_find(const struct ncd_netif_list *l,
                                 const char *name);

/** Flag names ("UP", "BROADCAST", "RUNNING", "LOWER_UP"...) of an IFF_*
 *  mask, in `ip link` order; `names` receives up to `max` static strings.
 *  @return how many were stored. */
size_t ncd_netif_flag_names(unsigned flags, const char **names, size_t max);

/** "ether", "infiniband", "loopback", "none", "ipip", "void"...; a number
 *  as text for others.  Static or in `buf` (>= 16 bytes). */
const char *ncd_arptype_name(int arptype, char *buf);

#ifdef __cplusplus
}
#endif
#endif
