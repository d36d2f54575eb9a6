/* SPDX-License-Identifier: MIT */
/*
 * The data interface of the socket backend (ncd_perf_pick_iface(),
 * include/ncd/perf.h): the interface and address NCCL's Socket transport
 * would use on this host, from the one predictor of NCCL's selection
 * (ncd_nccl_select(), src/lib/net/nccl_select.c), so that a wrong default
 * interface fails here as it fails in NCCL.
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
#include "ncd/sock.h"

/* --iface: the first address of that interface, IPv4 first. */
static int explicit_iface(const char *iface, struct ncd_perf_iface *out,
                          char *why, size_t whylen)
{
    struct ifaddrs *list = NULL;
    if (getifaddrs(&list) < 0) {
        snprintf(why, whylen, "getifaddrs: %s", strerror(errno));
        return NCD_ENOENT;
    }
    int ok = 0;
    for (int pass = 0; pass < 2 && !ok; pass++)
        for (struct ifaddrs *i = list; i && !ok; i = i->ifa_next) {
            if (!i->ifa_addr || !i->ifa_name || strcmp(i->ifa_name, iface))
                continue;
            int fam = i->ifa_addr->sa_family;
            if (fam != (pass == 0 ? AF_INET : AF_INET6))
                continue;
            if (fam == AF_INET6 &&
                IN6_IS_ADDR_LOOPBACK(
                    &((const struct sockaddr_in6 *)(const void *)i->ifa_addr)
                         ->sin6_addr))
                continue;
            ncd_sock_addr_str(i->ifa_addr, out->addr, sizeof out->addr,
                              NULL);
            ok = 1;
        }
    freeifaddrs(list);
    if (!ok) {
        snprintf(why, whylen,
                 "interface '%s' has no IPv4/IPv6 address (or does not "
                 "exist)",
                 iface);
        return NCD_ENOENT;
    }
    snprintf(out->ifname, sizeof out->ifname, "%s", iface);
    snprintf(out->origin, sizeof out->origin, "--iface %s", iface);
    return 0;
}

int ncd_perf_pick_iface(struct ncd_ctx *ctx, const char *iface,
                        int nccl_version, struct ncd_perf_iface *out,
                        char *why, size_t whylen)
{
    memset(out, 0, sizeof *out);
    if (iface && *iface)
        return explicit_iface(iface, out, why, whylen);
    /* the interfaces and NCCL's choice for that release: the node
     * snapshot's NET part */
    struct ncd_node node;
    memset(&node, 0, sizeof node);
    int rc = ncd_node_probe_net(ctx, nccl_version, &node);
    if (rc < 0) {
        snprintf(why, whylen, "cannot predict NCCL's interface: %s",
                 ncd_ctx_errdetail(ctx));
        ncd_ctx_clear_error(ctx);
        ncd_node_release(&node);
        return NCD_ENOENT;
    }
    const struct ncd_nccl_choice ch = node.net.ch; /* until released */
    char ver[16];
    ncd_nccl_version_str(ch.version, ver, sizeof ver);
    const char *spec = ncd_getenv(ctx, "NCCL_SOCKET_IFNAME");
    const char *warn = ch.bootstrap_error ? ch.bootstrap_error
                                          : ch.socket_error;
    if (warn || ch.n_socket == 0 || !ch.bootstrap[0]) {
        if (ch.ifname.set)
            snprintf(why, whylen,
                     "NCCL_SOCKET_IFNAME=%s matches no running interface "
                     "with an address: NCCL %s fails the same way (\"%s\")",
                     spec, ver,
                     warn ? warn : "Bootstrap : no socket interface found");
        else if (ch.comm_id_set && (ch.comm_id_invalid || ch.comm_id_error[0]))
            snprintf(why, whylen, "NCCL %s with NCCL_COMM_ID=%s: %s (\"%s\")",
                     ver, ncd_getenv(ctx, "NCCL_COMM_ID"),
                     ch.comm_id_error[0] ? ch.comm_id_error
                                         : "does not parse",
                     warn ? warn : "Invalid NCCL_COMM_ID");
        else
            snprintf(why, whylen, "NCCL %s finds no interface here (\"%s\")",
                     ver, warn ? warn : "Bootstrap : no socket interface "
                                        "found");
        ncd_node_release(&node);
        return NCD_ENOENT;
    }
    /* The Socket transport's first device carries the data; the bootstrap
     * usually is the same interface (not with NCCL_COMM_ID's subnet). */
    snprintf(out->ifname, sizeof out->ifname, "%s", ch.socket[0]);
    snprintf(out->addr, sizeof out->addr, "%s", ch.socket_addr[0]);
    snprintf(out->boot_ifname, sizeof out->boot_ifname, "%s", ch.bootstrap);
    snprintf(out->boot_addr, sizeof out->boot_addr, "%s", ch.bootstrap_addr);
    if (ch.pass == 0 && ch.ifname.set)
        snprintf(out->origin, sizeof out->origin,
                 "NCCL %s's Socket interface with NCCL_SOCKET_IFNAME=%s", ver,
                 spec);
    else
        snprintf(out->origin, sizeof out->origin,
                 "NCCL %s's Socket interface, chosen from %s", ver,
                 ch.pass_name ? ch.pass_name : "?");
    ncd_node_release(&node); /* ch's strings point into it: last */
    return 0;
}
