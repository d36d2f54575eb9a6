/* SPDX-License-Identifier: MIT */
/**
 * @file netaddr.h
 * @brief IP addresses of interfaces and getifaddrs() entries: the plain
 *        types the system-operations layer (sysops.h) answers with and the
 *        interface probe (netif.h) builds on.  Pure.
 */
#ifndef NCD_NETADDR_H
#define NCD_NETADDR_H

#include <netinet/in.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Longest interface name NCCL handles (MAX_IF_NAME_SIZE, NCCL
 *  src/include/socket.h), also Linux's IFNAMSIZ. */
#define NCD_IFNAME_MAX 16

/** One address of an interface. */
struct ncd_if_addr {
    int family;              /**< AF_INET or AF_INET6 */
    char addr[64];           /**< numeric, without scope ("fe80::1") */
    int prefix;              /**< prefix length in bits */
    int scope_id;            /**< IPv6 scope (ifindex) for link-local, else 0 */
    unsigned char bytes[16]; /**< address in network order (4 or 16 used) */
    int link_local;          /**< 169.254/16 or fe80::/10 */
    int loopback;            /**< 127/8 or ::1 */
    const char *scope;       /**< "global", "link", "host" or "site"; static */
};

/** One getifaddrs() entry (AF_INET/AF_INET6), in the order glibc returns
 *  them, which is the order NCCL's interface search walks
 *  (NCCL src/os/linux.cc ncclOsFindInterfaces, 2.29+; socket.cc before). */
struct ncd_ifaddr_entry {
    char name[NCD_IFNAME_MAX + 8]; /**< ifa_name: may be an alias label,
                                        "eth0:1" */
    unsigned flags;                /**< ifa_flags (IFF_UP, IFF_RUNNING...) */
    struct ncd_if_addr a;
};

/**
 * Fills an address from text ("10.0.0.1", "fe80::1%eth0"; a "%scope" is
 * looked up with if_nametoindex(), else taken as a number).  Sets bytes,
 * link_local, loopback and scope.
 * @param prefix  prefix length, 0-32 for IPv4, 0-128 for IPv6.
 * @return 0 or NCD_EPARSE (not an address, or prefix out of range).
 */
int ncd_if_addr_from_string(struct ncd_if_addr *a, const char *s,
                            int prefix);

/**
 * Looks `name` up in the text of an /etc/hosts file (case-insensitive;
 * the first line naming it wins, as getaddrinfo's files backend does;
 * '#' starts a comment).  Pure.
 * @return 1 found (out filled), 0 not.
 */
int ncd_hosts_lookup(const char *buf, size_t len, const char *name,
                     struct ncd_if_addr *out);

#ifdef __cplusplus
}
#endif
#endif
