/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "ncd/recommend.h"
#include "ncd/ifclass.h"
#include "ncd/error.h"
#include "ncd/fs.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void reason(struct ncd_if_rank *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void reason(struct ncd_if_rank *r, const char *fmt, ...)
{
    if (r->n_reasons >= NCD_RANK_MAX_REASONS)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->reasons[r->n_reasons++], sizeof r->reasons[0], fmt, ap);
    va_end(ap);
}

static int routable(const struct ncd_if_addr *a)
{
    if (a->loopback || a->link_local)
        return 0;
    return 1;
}

/* Interfaces carrying a default route, from /proc/net/route (IPv4) and
 * /proc/net/ipv6_route (IPv6). */
static int has_default_route(struct ncd_ctx *ctx, const char *name,
                             const char *route4, const char *route6)
{
    char ifn[64];
    unsigned long dst, mask;
    for (const char *p = route4; p && *p;) {
        if (sscanf(p, "%63s %lx %*x %*x %*d %*d %*d %lx", ifn, &dst, &mask) ==
                3 &&
            dst == 0 && mask == 0 && strcmp(ifn, name) == 0)
            return 1;
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    for (const char *p = route6; p && *p;) {
        /* dst(32 hex) dstlen ... last field = device */
        char dst6[40];
        unsigned len;
        if (sscanf(p, "%39s %x", dst6, &len) == 2 && len == 0 &&
            strspn(dst6, "0") == 32) {
            const char *eol = strchr(p, '\n');
            const char *q = eol ? eol : p + strlen(p);
            while (q > p && (q[-1] == ' ' || q[-1] == '\t'))
                q--;
            const char *s = q;
            while (s > p && s[-1] != ' ' && s[-1] != '\t')
                s--;
            if ((size_t)(q - s) == strlen(name) &&
                strncmp(s, name, (size_t)(q - s)) == 0 &&
                strcmp(name, "lo") != 0)
                return 1;
        }
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    (void)ctx;
    return 0;
}

static int tier_of(const struct ncd_netif *ni)
{
    if (ni->kind == NCD_IFK_LOOPBACK)
        return 5;
    if (ncd_ifname_is_plumbing(ni->name) ||
        ncd_netif_kind_is_virtual(ni->kind))
        return 4;
    if (ni->kind == NCD_IFK_WIRELESS)
        return 2;
    if (ni->kind == NCD_IFK_IPOIB)
        return 0;
    if (ni->kind == NCD_IFK_UNKNOWN)
        return 3;
    return 1;
}

static const char *tier_words(int t)
{
    static const char *const w[] = {
        "IP over InfiniBand: the fastest path for sockets too",
        "physical network device",
        "wireless: slow and jittery for collective traffic",
        "unknown device type",
        "software device (container, VM or VPN plumbing): used only when nothing else is usable",
        "loopback: reaches this host only",
    };
    return w[t];
}

static int cmp_rank(const void *a, const void *b)
{
    const struct ncd_if_rank *x = a, *y = b;
    if (x->usable != y->usable)
        return y->usable - x->usable;
    if (x->tier != y->tier)
        return x->tier - y->tier;
    long long sx = x->ni->speed_mbps, sy = y->ni->speed_mbps;
    if (sx != sy)
        return sx > sy ? -1 : 1;
    if (x->default_route != y->default_route)
        return y->default_route - x->default_route;
    unsigned long long tx = x->ni->rx_bytes + x->ni->tx_bytes;
    unsigned long long ty = y->ni->rx_bytes + y->ni->tx_bytes;
    if (tx >= NCD_RECOMMEND_BUSY_BYTES && tx / NCD_RECOMMEND_BUSY_RATIO >= ty)
        return -1;
    if (ty >= NCD_RECOMMEND_BUSY_BYTES && ty / NCD_RECOMMEND_BUSY_RATIO >= tx)
        return 1;
    return x->ni->index - y->ni->index;
}

int ncd_rdma_active_ports(struct ncd_ctx *ctx, int *n_devices,
                          char *hca_list, size_t n)
{
    int active = 0;
    if (n_devices)
        *n_devices = 0;
    if (hca_list && n)
        hca_list[0] = '\0';
    char **devs;
    int nd = ncd_fs_list(ctx, "/sys/class/infiniband", &devs);
    if (nd < 0) {
        ncd_ctx_clear_error(ctx);
        return 0;
    }
    if (n_devices)
        *n_devices = nd;
    for (int i = 0; i < nd; i++) {
        char path[512];
        snprintf(path, sizeof path, "/sys/class/infiniband/%s/ports", devs[i]);
        char **ports;
        int np = ncd_fs_list(ctx, path, &ports);
        for (int j = 0; j < np; j++) {
            char st[64];
            snprintf(path, sizeof path,
                     "/sys/class/infiniband/%s/ports/%s/state", devs[i],
                     ports[j]);
            /* "4: ACTIVE" (ib_verbs port state) */
            if (ncd_fs_read_str(ctx, path, st, sizeof st) < 0 ||
                !strstr(st, "ACTIVE"))
                continue;
            active++;
            if (hca_list && n) {
                size_t l = strlen(hca_list);
                snprintf(hca_list + l, n - l, "%s%s:%s", l ? "," : "=",
                         devs[i], ports[j]);
            }
        }
        if (np > 0)
            ncd_fs_list_free(ports, np);
    }
    ncd_fs_list_free(devs, nd);
    ncd_ctx_clear_error(ctx);
    return active;
}

int ncd_recommend(struct ncd_ctx *ctx, const struct ncd_netif_list *nl,
                  struct ncd_recommendation *out)
{
    int devices = 0, active = ncd_rdma_active_ports(ctx, &devices, NULL, 0);
    return ncd_recommend_rdma(ctx, nl, active, devices, out);
}

int ncd_recommend_rdma(struct ncd_ctx *ctx, const struct ncd_netif_list *nl,
                       int rdma_active_ports, int rdma_devices,
                       struct ncd_recommendation *out)
{
    memset(out, 0, sizeof *out);
    out->ranks = calloc(nl->n ? nl->n : 1, sizeof *out->ranks);
    if (!out->ranks)
        return NCD_ENOMEM;
    out->n = nl->n;
    char *route4 = NULL, *route6 = NULL;
    ncd_fs_read(ctx, "/proc/net/route", 1 << 20, &route4, NULL);
    ncd_fs_read(ctx, "/proc/net/ipv6_route", 1 << 20, &route6, NULL);
    ncd_ctx_clear_error(ctx);

    for (size_t i = 0; i < nl->n; i++) {
        struct ncd_if_rank *r = &out->ranks[i];
        const struct ncd_netif *ni = &nl->v[i];
        r->ni = ni;
        r->tier = tier_of(ni);
        for (size_t j = 0; j < ni->n_addrs && !r->addr; j++)
            if (routable(&ni->addrs[j]) && ni->addrs[j].family == AF_INET)
                r->addr = &ni->addrs[j];
        for (size_t j = 0; j < ni->n_addrs && !r->addr; j++)
            if (routable(&ni->addrs[j]))
                r->addr = &ni->addrs[j];
        r->default_route = has_default_route(ctx, ni->name, route4, route6);
        int up = (ni->flags & IFF_UP) != 0;
        int running = (ni->flags & IFF_RUNNING) != 0;
        if (ni->kind == NCD_IFK_LOOPBACK)
            reason(r, "loopback: other hosts cannot reach it");
        else if (!up)
            reason(r, "administratively down (no UP flag)");
        else if (!running)
            reason(r, "UP but not RUNNING: no carrier (cable, switch port "
                      "or peer down)");
        else if (!nl->ifa_known)
            reason(r, "addresses unknown (not recorded in this capture)");
        else if (!r->addr)
            reason(r, ni->n_addrs ? "only link-local or loopback addresses"
                                  : "no IP address");
        else
            r->usable = 1;
        if (ni->kind != NCD_IFK_LOOPBACK)
            reason(r, "%s (%s)", tier_words(r->tier), ni->kind_evidence);
        if (ni->speed_mbps > 0)
            reason(r, "link speed %lld Mb/s", ni->speed_mbps);
        else if (ni->kind != NCD_IFK_LOOPBACK)
            reason(r, "link speed unknown");
        if (r->default_route)
            reason(r, "carries the default route");
        if (ni->master[0])
            reason(r, "enslaved to %s (use that interface instead)",
                   ni->master);
        if (ni->master[0])
            r->usable = 0;
    }
    free(route4);
    free(route6);
    /* Rule 1b: when the only usable interfaces are container/VM bridges
     * (docker0, br-<id>, virbr0, cni0, lxcbr0), nothing here reaches
     * another host: no interface is recommended. */
    size_t bridges = 0, others = 0;
    for (size_t i = 0; i < out->n; i++)
        if (out->ranks[i].usable) {
            if (out->ranks[i].ni->kind == NCD_IFK_CONTAINER_BRIDGE)
                bridges++;
            else
                others++;
        }
    if (bridges && !others) {
        out->local_only = 1;
        for (size_t i = 0; i < out->n; i++) {
            struct ncd_if_rank *r = &out->ranks[i];
            if (!r->usable)
                continue;
            r->usable = 0;
            reason(r, "only this host's containers or VMs sit behind this "
                      "bridge, and no other interface is usable: nothing "
                      "here reaches another host");
        }
    }
    qsort(out->ranks, out->n, sizeof *out->ranks, cmp_rank);
    int k = 0;
    for (size_t i = 0; i < out->n; i++)
        if (out->ranks[i].usable)
            out->ranks[i].rank = ++k;
    if (out->n && out->ranks[0].usable) {
        out->best = &out->ranks[0];
        out->best_is_plumbing = out->best->tier >= 4;
        const char *bn = out->best->ni->name;
        /* A prefix also matching another interface needs '=' (exact). */
        int other = 0;
        for (size_t i = 0; i < nl->n; i++)
            if (strcmp(nl->v[i].name, bn) != 0 &&
                strncmp(nl->v[i].name, bn, strlen(bn)) == 0)
                other = 1;
        for (size_t i = 0; i < nl->n_ifa && !other; i++)
            if (strcmp(nl->ifa[i].name, bn) != 0 &&
                strncmp(nl->ifa[i].name, bn, strlen(bn)) == 0)
                other = 1;
        snprintf(out->socket_ifname, sizeof out->socket_ifname, "%s%s",
                 other ? "=" : "", bn);
    }
    out->rdma_active_ports = rdma_active_ports;
    out->rdma_devices = rdma_devices;
    if (out->rdma_active_ports == 0) {
        out->ib_disable = 1;
        snprintf(out->ib_reason, sizeof out->ib_reason, "%s",
                 out->rdma_devices
                     ? "RDMA devices exist but no port is ACTIVE"
                     : "no RDMA device (/sys/class/infiniband is empty)");
    }
    return 0;
}

void ncd_recommendation_release(struct ncd_recommendation *r)
{
    free(r->ranks);
    memset(r, 0, sizeof *r);
}

int ncd_recommend_env(const struct ncd_recommendation *r, const char **names,
                      const char **values)
{
    int n = 0;
    if (!r->best)
        return 0;
    /* MPI and Gloo take plain names, not NCCL's '=' syntax. */
    const char *plain = r->best->ni->name;
    names[n] = "NCCL_SOCKET_IFNAME";
    values[n++] = r->socket_ifname;
    if (r->ib_disable) {
        names[n] = "NCCL_IB_DISABLE";
        values[n++] = "1";
    }
    names[n] = "GLOO_SOCKET_IFNAME";
    values[n++] = plain;
    names[n] = "OMPI_MCA_btl_tcp_if_include";
    values[n++] = plain;
    names[n] = "OMPI_MCA_oob_tcp_if_include";
    values[n++] = plain;
    return n;
}
