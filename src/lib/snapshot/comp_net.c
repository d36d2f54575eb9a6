/* SPDX-License-Identifier: MIT */
/* Components: network interfaces with the recommendation and NCCL's
 * predicted choice; ports, listeners and the firewall (see ncd/node.h). */
#define _GNU_SOURCE
#include "ncd/error.h"
#include "ncd/fs.h"
#include "ncd/node.h"
#include "snapshot/snapshot_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ncd__comp_net(struct ncd_ctx *ctx, const struct ncd_node_opts *o,
                  struct ncd_node *n)
{
    (void)o;
    int rc = ncd_netif_probe(ctx, &n->net.nl);
    if (rc < 0)
        return rc;
    rc = ncd_recommend_rdma(ctx, &n->net.nl, n->rdma.active_ports,
                            (int)n->rdma.r.n, &n->net.rec);
    if (rc < 0)
        return rc;
    return ncd_nccl_select(ctx, &n->net.nl, n->sys.nccl_version, &n->net.ch);
}

int ncd__comp_ports(struct ncd_ctx *ctx, const struct ncd_node_opts *o,
                    struct ncd_node *n)
{
    (void)o;
    char s[64];
    n->ports.lo = 32768;
    n->ports.hi = 60999;
    if (ncd_fs_read_str(ctx, "/proc/sys/net/ipv4/ip_local_port_range", s,
                        sizeof s) == 0 &&
        ncd_port_range_parse(s, &n->ports.lo, &n->ports.hi) == 0)
        n->ports.range_known = 1;
    ncd_ctx_clear_error(ctx);
    int cnt = ncd_sys_listen_ports(ctx, &n->ports.listen);
    if (cnt < 0)
        return cnt;
    n->ports.n_listen = (size_t)cnt;
    int rc = ncd_fw_probe(ctx, n->ports.lo, n->ports.hi, &n->ports.fw);
    if (rc < 0)
        return rc;
    if (!n->ports.fw.known)
        snprintf(n->ports.fw_why, sizeof n->ports.fw_why, "%s",
                 ncd_ctx_errdetail(ctx));
    ncd_ctx_clear_error(ctx);
    /* iptables-legacy tables live beside nftables and are not analysed. */
    if (ncd_fs_read_str(ctx, "/proc/net/ip_tables_names", n->ports.ipt_tables,
                        sizeof n->ports.ipt_tables) == 0)
        for (char *c = n->ports.ipt_tables; *c; c++)
            if (*c == '\n')
                *c = ' ';
    ncd_ctx_clear_error(ctx);
    /* NCCL's bootstrap binds a listener on the recommended address. */
    const struct ncd_if_rank *best = n->net.rec.best;
    if (ncd_node_has(n, NCD_PART_NET) && best && best->addr) {
        const struct ncd_if_addr *ad = best->addr;
        snprintf(n->ports.bind.addr, sizeof n->ports.bind.addr, "%s", ad->addr);
        snprintf(n->ports.bind.ifname, sizeof n->ports.bind.ifname, "%s",
                 best->ni->name);
        int brc = ncd_sys_bind_test(ctx, ad->family, ad->addr, ad->scope_id,
                                    &n->ports.bind.port);
        n->ports.bind.tested = brc != NCD_ENOTLIVE;
        n->ports.bind.rc = brc;
        if (brc < 0)
            snprintf(n->ports.bind.error, sizeof n->ports.bind.error, "%s",
                     ncd_ctx_errdetail(ctx));
        ncd_ctx_clear_error(ctx);
    }
    return 0;
}
