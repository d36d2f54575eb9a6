/* SPDX-License-Identifier: MIT */
/**
 * @file ifclass.h
 * @brief What an interface's name says: the one classifier of interface
 *        names, driven by the table src/lib/net/ifnames.def.
 *
 * NCCL itself excludes only the prefixes docker, lo and (2.28+) virbr when
 * it picks an interface (NCCL src/misc/socket.cc, src/os/linux.cc; 2.30);
 * the container, VM and VPN software around it names its devices by the
 * conventions in the table (Docker, CNI, libvirt, Calico, flannel,
 * WireGuard, Tailscale...).  Used by the interface probe (a fallback when
 * sysfs cannot tell), the recommendation (such names rank last) and the
 * log reasoner (interfaces named in NCCL logs, without sysfs).  Pure.
 */
#ifndef NCD_IFCLASS_H
#define NCD_IFCLASS_H

#ifdef __cplusplus
extern "C" {
#endif

/** What a name alone says about an interface. */
enum ncd_ifname_class {
    NCD_IFN_OTHER = 0,        /**< nothing (eth0, ens5, ib0, enp1s0, bond0) */
    NCD_IFN_LOOPBACK,         /**< "lo" */
    NCD_IFN_CONTAINER_BRIDGE, /**< docker0, br-<id>, cni0, virbr0, cbr0... */
    NCD_IFN_VETH,             /**< veth*: the host end of a container link */
    NCD_IFN_TUNNEL,           /**< tun/tap, WireGuard, VXLAN, Calico... */
    NCD_IFN_PLUMBING,         /**< other software devices (vnet*, kube-*) */
};

/** The class of `name` by the table (first matching prefix). */
enum ncd_ifname_class ncd_ifname_classify(const char *name);

/** 1 when the name marks container/VM/VPN plumbing: every class but
 *  OTHER and LOOPBACK. */
int ncd_ifname_is_plumbing(const char *name);

/** The table entry that matched `name` ("Docker's default bridge
 *  docker0"), or NULL; static. */
const char *ncd_ifname_why(const char *name);

#ifdef __cplusplus
}
#endif
#endif
