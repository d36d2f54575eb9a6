/* SPDX-License-Identifier: MIT */
/*
 * The data interface of the socket backend (ncd_perf_pick_iface(),
 * include/ncd/perf.h): NCCL's rules, ../shared/reference/nccl-facts.md
 * sections 1 and 2.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "ncd/ctx.h"
#include "ncd/error.h"
#include "ncd/nccl.h"
#include "ncd/netif.h"
#include "ncd/node.h"
#include "ncd/perf.h"
#include "ncd/recommend.h"
#include "ncd/sock.h"

static int addr_of(const struct ifaddrs *ifa, char *addr, size_t len)
{
    if (!ifa->ifa_addr)
        return 0;
    int fam = ifa->ifa_addr->sa_family;
    if (fam != AF_INET && fam != AF_INET6)
        return 0;
    if (fam == AF_INET6) {
        const struct sockaddr_in6 *s6 = (const void *)ifa->ifa_addr;
        if (IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr))
            return 0;
    }
    ncd_sock_addr_str(ifa->ifa_addr, addr, len, NULL);
    return 1;
}

/* First address of the first interface accepted by `pred` in getifaddrs
 * order; IPv4 preferred within an interface. */
static int first_match(struct ifaddrs *list, int (*pred)(const char *, void *),
                       void *arg, int need_running, char *ifname,
                       size_t iflen, char *addr, size_t addrlen)
{
    for (int pass = 0; pass < 2; pass++) {
        for (struct ifaddrs *i = list; i; i = i->ifa_next) {
            if (!i->ifa_addr || !i->ifa_name)
                continue;
            if (need_running && !(i->ifa_flags & IFF_RUNNING))
                continue;
            int fam = i->ifa_addr->sa_family;
            if ((pass == 0 && fam != AF_INET) ||
                (pass == 1 && fam != AF_INET6))
                continue;
            if (!pred(i->ifa_name, arg))
                continue;
            if (addr_of(i, addr, addrlen)) {
                snprintf(ifname, iflen, "%s", i->ifa_name);
                return 1;
            }
        }
    }
    return 0;
}

static int pred_name(const char *name, void *arg)
{
    return strcmp(name, arg) == 0;
}

int ncd_perf_pick_iface(struct ncd_ctx *ctx, const char *iface,
                        const char *local_addr, int local_only, char *ifname,
                        size_t iflen, char *addr, size_t addrlen, char *why,
                        size_t whylen)
{
    /* 1. --iface */
    if (iface && *iface) {
        struct ifaddrs *list = NULL;
        if (getifaddrs(&list) < 0) {
            snprintf(why, whylen, "getifaddrs: %s", strerror(errno));
            return NCD_ENOENT;
        }
        int ok = first_match(list, pred_name, (void *)iface, 0, ifname, iflen,
                             addr, addrlen);
        freeifaddrs(list);
        if (!ok) {
            snprintf(why, whylen, "interface '%s' has no IPv4/IPv6 address "
                                  "(or does not exist)",
                     iface);
            return NCD_ENOENT;
        }
        return 0;
    }
    /* the interfaces, NCCL's choice (newest NCCL) and the recommendation:
     * the node snapshot's NET part */
    struct ncd_node node;
    memset(&node, 0, sizeof node);
    int rc = ncd_node_probe_net(ctx, 0, &node);
    if (rc < 0)
        ncd_ctx_clear_error(ctx);
    /* 2. NCCL_SOCKET_IFNAME, exactly as NCCL would pick (ncd_nccl_select) */
    const char *spec = ncd_getenv(ctx, "NCCL_SOCKET_IFNAME");
    if (spec && strlen(spec) > 1) {
        const struct ncd_nccl_choice *ch = &node.net.ch;
        int ok = rc >= 0 && ch->n_socket > 0;
        if (ok) {
            snprintf(ifname, iflen, "%s", ch->socket[0]);
            snprintf(addr, addrlen, "%s", ch->socket_addr[0]);
        } else {
            snprintf(why, whylen,
                     "NCCL_SOCKET_IFNAME=%s matches no running interface "
                     "with an address (NCCL fails the same way: \"Bootstrap "
                     ": no socket interface found\")",
                     spec);
        }
        ncd_node_release(&node);
        return ok ? 0 : NCD_ENOENT;
    }
    /* 3. one host (-np, a single process): loopback */
    if (local_only) {
        ncd_node_release(&node);
        snprintf(ifname, iflen, "lo");
        snprintf(addr, addrlen, "127.0.0.1");
        return 0;
    }
    /* 4. the interface nccl-doctor recommends for NCCL */
    int ok = 0;
    const struct ncd_recommendation *rec = &node.net.rec;
    if (rc >= 0 && rec->best && rec->best->addr) {
        snprintf(ifname, iflen, "%s", rec->best->ni->name);
        snprintf(addr, addrlen, "%s", rec->best->addr->addr);
        ok = 1;
    }
    ncd_node_release(&node);
    ncd_ctx_clear_error(ctx);
    if (ok)
        return 0;
    /* 5. nothing recommended: the address that reached the rendezvous */
    if (local_addr && *local_addr) {
        snprintf(ifname, iflen, "?");
        snprintf(addr, addrlen, "%s", local_addr);
        return 0;
    }
    snprintf(why, whylen, "no usable interface (UP, RUNNING, with a "
                          "routable address): see `nccl-doctor ifaces`");
    return NCD_ENOENT;
}
