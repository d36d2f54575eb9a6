/* SPDX-License-Identifier: MIT */
/* The interface report (`ifaces`, the "network" facts of `check`): see
 * ncd/node_report.h. */
#define _GNU_SOURCE
#include "ncd/node_report.h"
#include "ncd/recommend.h"
#include "render/render_internal.h"

#include <stdio.h>

#include <string.h>

static json_t *flags_json(unsigned flags)
{
    const char *names[32];
    size_t n = ncd_netif_flag_names(flags, names, 32);
    json_t *a = json_array();
    for (size_t i = 0; i < n && a; i++)
        json_array_append_new(a, json_string(names[i]));
    return a;
}

static json_t *iface_json(const struct ncd_netif *ni,
                          const struct ncd_if_rank *r)
{
    json_t *addrs = json_array();
    for (size_t i = 0; i < ni->n_addrs && addrs; i++) {
        const struct ncd_if_addr *a = &ni->addrs[i];
        json_array_append_new(
            addrs, json_pack("{s:s, s:o, s:i, s:s, s:b}", "family",
                             a->family == AF_INET ? "inet" : "inet6",
                             "address", ncd_json_string(a->addr), "prefix", a->prefix, "scope",
                             a->scope, "link_local", a->link_local));
    }
    json_t *reasons = json_array();
    for (int i = 0; r && i < r->n_reasons && reasons; i++)
        json_array_append_new(reasons, ncd_json_string(r->reasons[i]));
    char tb[16];
    json_t *o = json_pack(
        "{s:i, s:o, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:s, s:o, s:o, s:I, "
        "s:I, s:I, s:I}",
        "index", ni->index, "name", ncd_json_string(ni->name), "kind",
        ncd_netif_kind_name(ni->kind), "kind_evidence",
        ncd_json_string(ni->kind_evidence), "flags", flags_json(ni->flags),
        "operstate", ncd_json_string(ni->operstate), "carrier",
        ni->carrier < 0 ? json_null() : json_boolean(ni->carrier),
        "mtu", ni->mtu ? json_integer(ni->mtu) : json_null(), "mac",
        ncd_json_string(ni->mac),
        "arptype", ncd_arptype_name(ni->arptype, tb), "addresses", addrs,
        "speed_mbps",
        ni->speed_mbps > 0 ? json_integer(ni->speed_mbps) : json_null(),
        "rx_bytes", (json_int_t)ni->rx_bytes, "tx_bytes",
        (json_int_t)ni->tx_bytes, "rx_packets", (json_int_t)ni->rx_packets,
        "tx_packets", (json_int_t)ni->tx_packets);
    if (!o) {
        json_decref(reasons);
        return NULL;
    }
    json_object_set_new(o, "pci",
                        ni->pci_addr[0] ? ncd_json_string(ni->pci_addr)
                                        : json_null());
    json_object_set_new(o, "numa_node",
                        ni->numa_node >= 0 ? json_integer(ni->numa_node)
                                           : json_null());
    json_object_set_new(o, "driver",
                        ni->driver[0] ? ncd_json_string(ni->driver) : json_null());
    json_object_set_new(o, "master",
                        ni->master[0] ? ncd_json_string(ni->master) : json_null());
    json_object_set_new(o, "rank",
                        r && r->rank ? json_integer(r->rank) : json_null());
    json_object_set_new(o, "usable", json_boolean(r && r->usable));
    json_object_set_new(o, "reasons", reasons);
    return o;
}

static json_t *net_report_json(const struct ncd_netif_list *nl,
                               const struct ncd_recommendation *rec,
                               const struct ncd_nccl_choice *ch,
                               const char *version_source)
{
    json_t *ifs = json_array();
    json_t *env = json_object();
    json_t *sock = json_array();
    if (!ifs || !env || !sock)
        goto fail;
    /* Listed in recommendation order: best first, unusable last. */
    for (size_t i = 0; i < rec->n; i++)
        json_array_append_new(ifs, iface_json(rec->ranks[i].ni,
                                              &rec->ranks[i]));
    const char *names[8], *values[8];
    int ne = ncd_recommend_env(rec, names, values);
    for (int i = 0; i < ne; i++)
        json_object_set_new(env, names[i], ncd_json_string(values[i]));
    for (int i = 0; i < ch->n_socket; i++)
        json_array_append_new(sock, ncd_json_string(ch->socket[i]));
    char vb[16], ba[64 + NCD_IFNAME_MAX + 8];
    /* the address as NCCL prints it: "fe80::1%eth0" for link-local */
    snprintf(ba, sizeof ba, "%s%s%s", ch->bootstrap_addr,
             ch->bootstrap_scope[0] ? "%" : "", ch->bootstrap_scope);
    json_t *nccl = json_pack(
        "{s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:s}", "version",
        ncd_nccl_version_str(ch->version, vb, sizeof vb), "version_source",
        version_source ? version_source : "newest known", "bootstrap",
        ch->bootstrap[0] ? ncd_json_string(ch->bootstrap) : json_null(),
        "bootstrap_address",
        ch->bootstrap_addr[0] ? ncd_json_string(ba) : json_null(),
        "bootstrap_error",
        ch->bootstrap_error ? json_string(ch->bootstrap_error) : json_null(),
        "socket", sock, "socket_error",
        ch->socket_error ? json_string(ch->socket_error) : json_null(),
        "pass", ch->pass_name ? ch->pass_name : "-");
    sock = NULL;
    json_t *o = json_pack("{s:o, s:o, s:o, s:i, s:o}", "interfaces", ifs,
                          "recommended",
                          rec->best ? ncd_json_string(rec->best->ni->name)
                                    : json_null(),
                          "recommended_env", env, "rdma_active_ports",
                          rec->rdma_active_ports, "nccl", nccl);
    return o;
fail:
    json_decref(ifs);
    json_decref(env);
    json_decref(sock);
    return NULL;
}

static void human_bytes(char *buf, size_t n, unsigned long long v)
{
    const char *u[] = {"B", "KB", "MB", "GB", "TB", "PB"};
    double d = (double)v;
    int i = 0;
    while (d >= 1000 && i < 5) {
        d /= 1000;
        i++;
    }
    snprintf(buf, n, i ? "%.1f %s" : "%.0f %s", d, u[i]);
}

static void net_render_text(struct ncd_strbuf *out,
                            const struct ncd_netif_list *nl,
                            const struct ncd_recommendation *rec,
                            const struct ncd_nccl_choice *ch,
                            const char *version_source, int detailed,
                            const struct ncd_text_style *st)
{
    ncd_sb_printf(out, "  %-4s %-16s %-16s %-14s %-8s %-10s %s\n", "rank",
                  "interface", "kind", "state", "speed", "traffic",
                  "addresses");
    for (size_t i = 0; i < rec->n; i++) {
        const struct ncd_if_rank *r = &rec->ranks[i];
        const struct ncd_netif *ni = r->ni;
        char rk[8], speed[16], traffic[16], state[32];
        snprintf(rk, sizeof rk, r->rank ? "%d" : "-", r->rank);
        if (ni->speed_mbps >= 1000)
            snprintf(speed, sizeof speed, "%lldG", ni->speed_mbps / 1000);
        else if (ni->speed_mbps > 0)
            snprintf(speed, sizeof speed, "%lldM", ni->speed_mbps);
        else
            snprintf(speed, sizeof speed, "?");
        human_bytes(traffic, sizeof traffic, ni->rx_bytes + ni->tx_bytes);
        snprintf(state, sizeof state, "%s%s",
                 (ni->flags & IFF_UP) ? "UP" : "DOWN",
                 (ni->flags & IFF_UP) && !(ni->flags & IFF_RUNNING)
                     ? ",NO-CARRIER"
                 : (ni->flags & IFF_RUNNING) ? ",RUNNING"
                                             : "");
        const char *col = r == rec->best ? ncd_severity_color(NCD_SEV_OK, st)
                          : r->usable    ? ""
                                         : "\033[2m";
        if (!st || !st->color)
            col = "";
        ncd_sb_printf(out, "%s  %-4s %-16s %-16s %-14s %-8s %-10s ", col, rk,
                      ni->name, ncd_netif_kind_name(ni->kind), state, speed,
                      traffic);
        if (!ni->n_addrs)
            ncd_sb_puts(out, "-");
        for (size_t j = 0; j < ni->n_addrs; j++)
            ncd_sb_printf(out, "%s%s/%d%s", j ? " " : "", ni->addrs[j].addr,
                          ni->addrs[j].prefix,
                          ni->addrs[j].link_local ? "(link)" : "");
        if (r == rec->best)
            ncd_sb_puts(out, "  <- recommended");
        ncd_sb_printf(out, "%s\n", *col ? "\033[0m" : "");
        for (int k = 0; detailed && k < r->n_reasons; k++)
            ncd_sb_printf(out, "         - %s\n", r->reasons[k]);
    }
    if (!nl->ifa_known)
        ncd_sb_puts(out, "  (addresses not recorded in this capture)\n");
    char vb[16];
    ncd_sb_printf(out, "\n  NCCL %s (%s) would use:\n",
                  ncd_nccl_version_str(ch->version, vb, sizeof vb),
                  version_source ? version_source : "newest known behaviour");
    if (ch->bootstrap[0])
        ncd_sb_printf(out, "    bootstrap        %s (%s%s%s)%s\n",
                      ch->bootstrap, ch->bootstrap_addr,
                      ch->bootstrap_scope[0] ? "%" : "", ch->bootstrap_scope,
                      ch->via_comm_id ? " - subnet of NCCL_COMM_ID" : "");
    else if (ch->bootstrap_error)
        ncd_sb_printf(out, "    bootstrap        none: '%s'\n",
                      ch->bootstrap_error);
    else
        ncd_sb_printf(out, "    bootstrap        unknown: NCCL_COMM_ID host "
                           "'%s' %s\n",
                      ch->comm_id_host, ch->comm_id_error);
    ncd_sb_puts(out, "    Socket transport ");
    if (!ch->n_socket)
        ncd_sb_puts(out, "none");
    for (int i = 0; i < ch->n_socket; i++)
        ncd_sb_printf(out, "%s[%d]%s", i ? " " : "", i, ch->socket[i]);
    ncd_sb_printf(out, "\n    chosen from      %s\n",
                  ch->pass_name ? ch->pass_name : "-");
}

json_t *ncd_node_ifaces_json(const struct ncd_node *n)
{
    return net_report_json(&n->net.nl, &n->net.rec, &n->net.ch,
                           n->sys.nccl_version_source);
}

void ncd_node_ifaces_text(struct ncd_strbuf *out, const struct ncd_node *n,
                          const struct ncd_text_style *st)
{
    const struct ncd_recommendation *rec = &n->net.rec;
    net_render_text(out, &n->net.nl, rec, &n->net.ch,
                    n->sys.nccl_version_source, 1, st);
    const char *names[8], *values[8];
    int ne = ncd_recommend_env(rec, names, values);
    if (ne) {
        ncd_sb_puts(out, "\n  Recommended:\n");
        for (int i = 0; i < ne; i++) {
            ncd_sb_printf(out, "    export %s=", names[i]);
            ncd_sb_shell_quote(out, values[i]);
            ncd_sb_putc(out, '\n');
        }
        if (rec->ib_disable)
            ncd_sb_printf(out, "    (NCCL_IB_DISABLE=1: %s)\n",
                          rec->ib_reason);
    } else {
        ncd_sb_puts(out, "\n  No usable interface: nothing to "
                         "recommend.\n");
    }
}
