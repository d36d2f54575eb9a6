/* SPDX-License-Identifier: MIT */
/* Interface probe: /sys/class/net through the sysroot, plus the
 * getifaddrs() answer of the system-operations layer (sysops.h). */
#define _GNU_SOURCE
#include "ncd/netif.h"
#include "ncd/error.h"
#include "ncd/fs.h"
#include "ncd/ifclass.h"
#include "ncd/pciaddr.h"
#include "ncd/sysops.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <linux/if_arp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef IFF_LOWER_UP
#define IFF_LOWER_UP 0x10000
#endif
#ifndef IFF_DORMANT
#define IFF_DORMANT 0x20000
#endif
#ifndef IFF_ECHO
#define IFF_ECHO 0x40000
#endif

static const char *const kind_names[] = {
    "unknown", "loopback", "physical", "ipoib",  "bridge",   "container-bridge",
    "veth",    "vlan",     "bond",     "tunnel", "wireless", "virtual",
};

const char *ncd_netif_kind_name(enum ncd_if_kind k)
{
    if ((int)k < 0 || (size_t)k >= sizeof kind_names / sizeof kind_names[0])
        return "unknown";
    return kind_names[k];
}

int ncd_netif_kind_is_virtual(enum ncd_if_kind k)
{
    switch (k) {
    case NCD_IFK_PHYSICAL:
    case NCD_IFK_IPOIB:
    case NCD_IFK_BOND:
    case NCD_IFK_VLAN:
    case NCD_IFK_BRIDGE:
    case NCD_IFK_WIRELESS:
    case NCD_IFK_UNKNOWN:
        return 0;
    default:
        return 1;
    }
}

size_t ncd_netif_flag_names(unsigned flags, const char **names, size_t max)
{
    static const struct {
        unsigned bit;
        const char *name;
    } tab[] = {
        {IFF_LOOPBACK, "LOOPBACK"}, {IFF_BROADCAST, "BROADCAST"},
        {IFF_POINTOPOINT, "POINTOPOINT"}, {IFF_MULTICAST, "MULTICAST"},
        {IFF_NOARP, "NOARP"},       {IFF_ALLMULTI, "ALLMULTI"},
        {IFF_PROMISC, "PROMISC"},   {IFF_MASTER, "MASTER"},
        {IFF_SLAVE, "SLAVE"},       {IFF_DEBUG, "DEBUG"},
        {IFF_DYNAMIC, "DYNAMIC"},   {IFF_AUTOMEDIA, "AUTOMEDIA"},
        {IFF_PORTSEL, "PORTSEL"},   {IFF_NOTRAILERS, "NOTRAILERS"},
        {IFF_UP, "UP"},             {IFF_RUNNING, "RUNNING"},
        {IFF_LOWER_UP, "LOWER_UP"}, {IFF_DORMANT, "DORMANT"},
        {IFF_ECHO, "ECHO"},
    };
    size_t n = 0;
    for (size_t i = 0; i < sizeof tab / sizeof tab[0] && n < max; i++)
        if (flags & tab[i].bit)
            names[n++] = tab[i].name;
    return n;
}

const char *ncd_arptype_name(int t, char *buf)
{
    switch (t) {
    case ARPHRD_ETHER:
        return "ether";
    case ARPHRD_INFINIBAND:
        return "infiniband";
    case ARPHRD_LOOPBACK:
        return "loopback";
    case ARPHRD_NONE:
        return "none";
    case ARPHRD_TUNNEL:
        return "ipip";
    case ARPHRD_TUNNEL6:
        return "tunnel6";
    case ARPHRD_SIT:
        return "sit";
    case ARPHRD_IPGRE:
        return "gre";
    case ARPHRD_PPP:
        return "ppp";
    case ARPHRD_VOID:
        return "void";
    case ARPHRD_IEEE80211_RADIOTAP:
        return "ieee802.11/radiotap";
    case -1:
        return "unknown";
    }
    snprintf(buf, 16, "%d", t);
    return buf;
}

static void base_name(const char *path, char *out, size_t outsz)
{
    const char *s = strrchr(path, '/');
    snprintf(out, outsz, "%s", s ? s + 1 : path);
}

static void uevent_get(const char *uevent, const char *key, char *out,
                       size_t outsz)
{
    out[0] = '\0';
    size_t kl = strlen(key);
    for (const char *p = uevent; p && *p;) {
        if (strncmp(p, key, kl) == 0 && p[kl] == '=') {
            const char *v = p + kl + 1;
            size_t vl = strcspn(v, "\n");
            snprintf(out, outsz, "%.*s", (int)vl, v);
            return;
        }
        p = strchr(p, '\n');
        if (p)
            p++;
    }
}

static void classify(struct ncd_ctx *ctx, struct ncd_netif *ni,
                     const char *dir, const char *uevent, int iflink,
                     int is_virtual_path)
{
    char path[512], devtype[32];
    uevent_get(uevent, "DEVTYPE", devtype, sizeof devtype);
#define HAS(sub) (snprintf(path, sizeof path, "%s/%s", dir, sub), ncd_fs_exists(ctx, path))
#define KIND(k, ...) do { ni->kind = (k); snprintf(ni->kind_evidence, sizeof ni->kind_evidence, __VA_ARGS__); return; } while (0)
    if (ni->arptype == ARPHRD_LOOPBACK || (ni->flags & IFF_LOOPBACK))
        KIND(NCD_IFK_LOOPBACK, "loopback (IFF_LOOPBACK, ARP type loopback)");
    if (ni->arptype == ARPHRD_INFINIBAND)
        KIND(NCD_IFK_IPOIB, "ARP type infiniband: IP over InfiniBand%s%s",
             ni->pci_addr[0] ? " on HCA " : "", ni->pci_addr);
    if (strcmp(devtype, "wlan") == 0 || HAS("wireless") || HAS("phy80211"))
        KIND(NCD_IFK_WIRELESS, "wireless device (%s)",
             devtype[0] ? "DEVTYPE=wlan" : "has a wireless/phy80211 node");
    if (strcmp(devtype, "bridge") == 0 || HAS("bridge")) {
        if (ncd_ifname_classify(ni->name) == NCD_IFN_CONTAINER_BRIDGE)
            KIND(NCD_IFK_CONTAINER_BRIDGE,
                 "Linux bridge named like a container/VM bridge "
                 "(docker*, br-*, cni*, virbr*...)");
        KIND(NCD_IFK_BRIDGE, "Linux bridge (has a bridge/ node)");
    }
    if (strcmp(devtype, "bond") == 0 || HAS("bonding"))
        KIND(NCD_IFK_BOND, "bonding master (has a bonding/ node)");
    if (strcmp(devtype, "vlan") == 0)
        KIND(NCD_IFK_VLAN, "802.1Q VLAN (DEVTYPE=vlan) on ifindex %d",
             iflink);
    if (HAS("tun_flags"))
        KIND(NCD_IFK_TUNNEL, "tun/tap device (has tun_flags)");
    if (strcmp(devtype, "wireguard") == 0 || strcmp(devtype, "vxlan") == 0 ||
        strcmp(devtype, "geneve") == 0 || strcmp(devtype, "ipip") == 0 ||
        strcmp(devtype, "gre") == 0 || ni->arptype == ARPHRD_NONE ||
        ni->arptype == ARPHRD_TUNNEL || ni->arptype == ARPHRD_TUNNEL6 ||
        ni->arptype == ARPHRD_IPGRE || ni->arptype == ARPHRD_SIT ||
        ni->arptype == ARPHRD_PPP) {
        char tb[16];
        KIND(NCD_IFK_TUNNEL, "tunnel/overlay (%s%s%s)",
             devtype[0] ? "DEVTYPE=" : "ARP type ",
             devtype[0] ? devtype : ncd_arptype_name(ni->arptype, tb), "");
    }
    if (!is_virtual_path && ni->bus_path[0]) {
        if (ni->pci_addr[0])
            KIND(NCD_IFK_PHYSICAL, "PCI device %s%s%s", ni->pci_addr,
                 ni->driver[0] ? ", driver " : "", ni->driver);
        KIND(NCD_IFK_PHYSICAL, "bus device %s%s%s", ni->bus_path,
             ni->driver[0] ? ", driver " : "", ni->driver);
    }
    /* Software devices from here on (under /sys/devices/virtual). */
    enum ncd_ifname_class nc = ncd_ifname_classify(ni->name);
    if (nc == NCD_IFN_CONTAINER_BRIDGE)
        KIND(NCD_IFK_CONTAINER_BRIDGE,
             "virtual device named like a container/VM bridge");
    if (nc == NCD_IFN_TUNNEL)
        KIND(NCD_IFK_TUNNEL, "virtual device named like a tunnel/VPN/overlay");
    if (iflink > 0 && iflink != ni->index)
        KIND(NCD_IFK_VETH,
             "virtual device linked to peer ifindex %d (veth pair or "
             "macvlan: a container/pod network)",
             iflink);
    if (nc == NCD_IFN_VETH)
        KIND(NCD_IFK_VETH, "virtual device named veth*");
    KIND(NCD_IFK_VIRTUAL, "no bus device: %s",
         devtype[0] ? devtype : "dummy, ifb or similar");
#undef HAS
#undef KIND
}

static void read_str_q(struct ncd_ctx *ctx, const char *dir, const char *f,
                       char *out, size_t sz)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, f);
    if (ncd_fs_read_str(ctx, path, out, sz) < 0)
        out[0] = '\0';
}

static int read_ll_q(struct ncd_ctx *ctx, const char *dir, const char *f,
                     long long *v)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, f);
    return ncd_fs_read_ll(ctx, path, v);
}

/* Kernel rule (dev_get_flags): RUNNING when up and operstate up/unknown,
 * LOWER_UP when the carrier is on.  sysfs "flags" lacks both. */
static unsigned derive_flags(unsigned flags, const char *oper, int carrier)
{
    if ((flags & IFF_UP) &&
        (strcmp(oper, "up") == 0 || strcmp(oper, "unknown") == 0))
        flags |= IFF_RUNNING;
    if ((flags & IFF_UP) && carrier == 1)
        flags |= IFF_LOWER_UP;
    if (strcmp(oper, "dormant") == 0)
        flags |= IFF_DORMANT;
    return flags;
}

static int probe_one(struct ncd_ctx *ctx, const char *name,
                     struct ncd_netif *ni)
{
    char dir[384];
    long long v;
    memset(ni, 0, sizeof *ni);
    snprintf(ni->name, sizeof ni->name, "%s", name);
    snprintf(dir, sizeof dir, "/sys/class/net/%s", name);
    ni->arptype = -1;
    ni->speed_mbps = -1;
    ni->carrier = -1;
    ni->numa_node = -1;
    if (read_ll_q(ctx, dir, "ifindex", &v) == 0)
        ni->index = (int)v;
    if (read_ll_q(ctx, dir, "flags", &v) == 0)
        ni->flags = (unsigned)v;
    read_str_q(ctx, dir, "operstate", ni->operstate, sizeof ni->operstate);
    if (!ni->operstate[0])
        snprintf(ni->operstate, sizeof ni->operstate, "unknown");
    if (read_ll_q(ctx, dir, "carrier", &v) == 0)
        ni->carrier = (int)v;
    if (read_ll_q(ctx, dir, "mtu", &v) == 0)
        ni->mtu = (int)v;
    read_str_q(ctx, dir, "address", ni->mac, sizeof ni->mac);
    if (read_ll_q(ctx, dir, "type", &v) == 0)
        ni->arptype = (int)v;
    if (read_ll_q(ctx, dir, "speed", &v) == 0 && v > 0)
        ni->speed_mbps = v;
    unsigned long long *stats[] = {&ni->rx_bytes, &ni->tx_bytes,
                                   &ni->rx_packets, &ni->tx_packets};
    const char *sn[] = {"statistics/rx_bytes", "statistics/tx_bytes",
                        "statistics/rx_packets", "statistics/tx_packets"};
    for (int i = 0; i < 4; i++)
        if (read_ll_q(ctx, dir, sn[i], &v) == 0 && v >= 0)
            *stats[i] = (unsigned long long)v;
    long long iflink = 0;
    read_ll_q(ctx, dir, "iflink", &iflink);
    char uevent[1024];
    read_str_q(ctx, dir, "uevent", uevent, sizeof uevent);
    if (!ni->index) {
        char idx[16];
        uevent_get(uevent, "IFINDEX", idx, sizeof idx);
        ni->index = atoi(idx);
    }
    char path[512], link[512];
    snprintf(path, sizeof path, "%s/master", dir);
    if (ncd_fs_readlink(ctx, path, link, sizeof link) == 0)
        base_name(link, ni->master, sizeof ni->master);
    /* Where the netdev sits: /sys/devices/virtual/... for software. */
    char self[512];
    int is_virtual_path = 1;
    if (ncd_fs_realpath(ctx, dir, self, sizeof self) == 0)
        is_virtual_path = strstr(self, "/devices/virtual/") != NULL;
    snprintf(path, sizeof path, "%s/device", dir);
    if (ncd_fs_exists(ctx, path) &&
        ncd_fs_realpath(ctx, path, ni->bus_path, sizeof ni->bus_path) == 0) {
        ncd_pci_bdf_of_path(ni->bus_path, ni->pci_addr, sizeof ni->pci_addr);
        /* No device link at all also means software, whatever the path. */
        if (strcmp(self, dir) == 0)
            is_virtual_path = 0;
        char dpath[600];
        snprintf(dpath, sizeof dpath, "%s/driver", path);
        if (ncd_fs_readlink(ctx, dpath, link, sizeof link) == 0)
            base_name(link, ni->driver, sizeof ni->driver);
        if (ni->pci_addr[0]) {
            char pdir[400];
            snprintf(pdir, sizeof pdir, "/sys/bus/pci/devices/%s",
                     ni->pci_addr);
            if (read_ll_q(ctx, pdir, "numa_node", &v) == 0)
                ni->numa_node = (int)v;
            read_str_q(ctx, pdir, "vendor", ni->vendor, sizeof ni->vendor);
            /* a capture without /sys/bus: the same files through the link */
            if (!ni->vendor[0])
                read_str_q(ctx, dir, "device/vendor", ni->vendor,
                           sizeof ni->vendor);
            if (ni->numa_node < 0 &&
                read_ll_q(ctx, dir, "device/numa_node", &v) == 0)
                ni->numa_node = (int)v;
        }
    } else {
        ni->bus_path[0] = '\0';
    }
    ni->flags = derive_flags(ni->flags, ni->operstate, ni->carrier);
    classify(ctx, ni, dir, uevent, (int)iflink, is_virtual_path);
    ncd_ctx_clear_error(ctx);
    return 0;
}

static int cmp_index(const void *a, const void *b)
{
    const struct ncd_netif *x = a, *y = b;
    return x->index - y->index;
}

struct ncd_netif *ncd_netif_find(const struct ncd_netif_list *l,
                                 const char *name)
{
    size_t n = strcspn(name, ":");
    for (size_t i = 0; i < l->n; i++)
        if (strncmp(l->v[i].name, name, n) == 0 && l->v[i].name[n] == '\0')
            return &l->v[i];
    return NULL;
}

int ncd_netif_probe(struct ncd_ctx *ctx, struct ncd_netif_list *out)
{
    memset(out, 0, sizeof *out);
    char **names;
    int n = ncd_fs_list(ctx, "/sys/class/net", &names);
    if (n < 0)
        return n;
    out->v = calloc(n ? (size_t)n : 1, sizeof *out->v);
    if (!out->v) {
        ncd_fs_list_free(names, n);
        return NCD_ENOMEM;
    }
    for (int i = 0; i < n; i++) {
        /* bonding_masters is a file in /sys/class/net, not a device */
        char p[300];
        snprintf(p, sizeof p, "/sys/class/net/%s/ifindex", names[i]);
        if (!ncd_fs_exists(ctx, p) &&
            !(snprintf(p, sizeof p, "/sys/class/net/%s/uevent", names[i]),
              ncd_fs_exists(ctx, p)))
            continue;
        probe_one(ctx, names[i], &out->v[out->n++]);
    }
    ncd_fs_list_free(names, n);
    qsort(out->v, out->n, sizeof *out->v, cmp_index);

    struct ncd_sys_ifaddrs ifa;
    int rc = ncd_sys_getifaddrs(ctx, &ifa);
    if (rc == NCD_ENOMEM) {
        ncd_netif_list_release(out);
        return rc;
    }
    if (rc < 0) {
        snprintf(out->ifa_error, sizeof out->ifa_error, "%s",
                 *ncd_ctx_errdetail(ctx) ? ncd_ctx_errdetail(ctx)
                                         : ncd_strerror(rc));
        ncd_ctx_clear_error(ctx);
    }
    out->ifa = ifa.v;
    out->n_ifa = ifa.n;
    out->ifa_known = ifa.known;
    /* Live link flags from netlink are authoritative. */
    for (size_t i = 0; i < ifa.n_link; i++) {
        struct ncd_netif *ni = ncd_netif_find(out, ifa.link[i].name);
        if (ni)
            ni->flags = ifa.link[i].flags;
    }
    int link_known = ifa.link_known;
    free(ifa.link);
    /* Per-interface address lists, in getifaddrs order. */
    for (size_t i = 0; i < out->n_ifa; i++) {
        struct ncd_netif *ni = ncd_netif_find(out, out->ifa[i].name);
        if (!ni)
            continue;
        struct ncd_if_addr *na =
            realloc(ni->addrs, (ni->n_addrs + 1) * sizeof *na);
        if (!na) {
            ncd_netif_list_release(out);
            return NCD_ENOMEM;
        }
        ni->addrs = na;
        ni->addrs[ni->n_addrs++] = out->ifa[i].a;
        /* A recording has no link flags: take them from the entries. */
        if (!link_known)
            ni->flags |= out->ifa[i].flags & (IFF_RUNNING | IFF_LOWER_UP);
    }
    return 0;
}

void ncd_netif_list_release(struct ncd_netif_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i].addrs);
    free(l->v);
    free(l->ifa);
    memset(l, 0, sizeof *l);
}
