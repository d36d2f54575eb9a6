/* SPDX-License-Identifier: MIT */
/*
 * probe: the result as JSON and as text.  Pure functions of a struct
 * ncd_probe_result.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncd/nccl.h"
#include "ncd/probe.h"

#define CELL(r, i, j) (&(r)->cells[(size_t)(i) * (size_t)(r)->nranks + (j)])

/* ---- JSON ----------------------------------------------------------------- */

static json_t *str_or_null(const char *s)
{
    return s && *s ? json_string(s) : json_null();
}

static json_t *status_json(int32_t s)
{
    return json_string(ncd_probe_status_name((enum ncd_probe_status)s));
}

/* One path's tests: {"status","errno","detail","port","control_port_status",
 * "source_port_status","connect_us","bw_gbps"} */
static json_t *conn_json(const struct ncd_probe_conn *c)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "status", status_json(c->status));
    json_object_set_new(o, "errno", json_integer(c->err));
    json_object_set_new(o, "detail", str_or_null(c->detail));
    json_object_set_new(o, "port", json_integer(c->port));
    json_object_set_new(o, "control_port_status", status_json(c->ctl_status));
    json_object_set_new(o, "source_port_status", status_json(c->src_status));
    json_object_set_new(o, "connect_us", json_real(c->connect_us));
    json_object_set_new(o, "bw_gbps", json_real(c->bw_gbps));
    return o;
}

/* A cell: NCCL's address's tests at the top level, the recommended
 * interface's under "recommended" (and its status and bandwidth also as
 * "recommended_status", "recommended_bw_gbps"). */
static json_t *cell_json(const struct ncd_probe_cell *c)
{
    json_t *o = conn_json(&c->nccl);
    if (!o)
        return NULL;
    json_object_set_new(o, "source_address", str_or_null(c->src_addr));
    json_object_set_new(o, "rtt_us", json_real(c->rtt_us));
    json_object_set_new(o, "recommended_status", status_json(c->rec.status));
    json_object_set_new(o, "recommended_bw_gbps", json_real(c->rec.bw_gbps));
    json_object_set_new(o, "recommended", conn_json(&c->rec));
    json_object_set_new(o, "mtu_ok", json_integer(c->mtu_ok));
    json_object_set_new(o, "mtu_lost", json_integer(c->mtu_lost));
    json_object_set_new(o, "resolved", str_or_null(c->resolved));
    json_object_set_new(o, "resolve_error", str_or_null(c->resolve_err));
    return o;
}

json_t *ncd_probe_json(const struct ncd_probe_result *r)
{
    json_t *o = json_object(), *ranks = json_array(), *hosts = json_array(),
           *m = json_object(), *mc = json_array(), *rm = json_array();
    if (!o || !ranks || !hosts || !m || !mc || !rm)
        goto oom;
    for (int i = 0; i < r->nranks; i++) {
        const struct ncd_probe_rank *k = &r->ranks[i];
        json_t *x = json_object(), *addrs = json_array();
        char vb[16];
        for (int a = 0; a < k->n_addrs; a++)
            json_array_append_new(addrs, json_string(k->addrs[a]));
        json_object_set_new(x, "rank", json_integer(k->rank));
        json_object_set_new(x, "pid", json_integer(k->pid));
        json_object_set_new(x, "host", json_string(k->host));
        json_object_set_new(x, "nccl_interface", str_or_null(k->nccl_if));
        json_object_set_new(x, "nccl_address", str_or_null(k->nccl_addr));
        json_object_set_new(x, "nccl_pass", str_or_null(k->nccl_pass));
        json_object_set_new(x, "recommended_interface",
                            str_or_null(k->rec_if));
        json_object_set_new(x, "recommended_address",
                            str_or_null(k->rec_addr));
        json_object_set_new(x, "NCCL_SOCKET_IFNAME",
                            k->ifname_set ? json_string(k->socket_ifname)
                                          : json_null());
        json_object_set_new(
            x, "nccl_version",
            k->nccl_version
                ? json_string(ncd_nccl_version_str(k->nccl_version, vb,
                                                   sizeof vb))
                : json_null());
        json_object_set_new(x, "nccl_version_source",
                            str_or_null(k->nccl_version_src));
        json_object_set_new(x, "mtu", json_integer(k->mtu));
        json_object_set_new(x, "ephemeral_ports",
                            k->port_lo ? json_pack("[ii]", k->port_lo,
                                                   k->port_hi)
                                       : json_null());
        json_object_set_new(x, "port", json_integer(k->tcp_port));
        json_object_set_new(x, "control_port", json_integer(k->ctl_port));
        json_object_set_new(x, "recommended_port", json_integer(k->rec_port));
        json_object_set_new(x, "recommended_control_port",
                            json_integer(k->rec_ctl_port));
        json_object_set_new(x, "addresses", addrs);
        json_object_set_new(x, "rendezvous_address", str_or_null(k->rdv_addr));
        json_object_set_new(x, "rendezvous_interface", str_or_null(k->rdv_if));
        json_object_set_new(x, "listen_error", str_or_null(k->listen_error));
        json_array_append_new(ranks, x);
    }
    for (int h = 0; h < r->nhosts; h++)
        json_array_append_new(hosts, json_string(r->hosts[h]));
    for (int a = 0; a < r->nhosts; a++) {
        json_t *row = json_array();
        for (int b = 0; b < r->nhosts; b++) {
            enum ncd_probe_status s = ncd_probe_host_status(r, a, b);
            if (s == NCD_PROBE_NOT_TRIED) {
                json_array_append_new(row, json_null());
                continue;
            }
            /* the worst cell of the pair stands for it */
            const struct ncd_probe_cell *best = NULL;
            for (int i = 0; i < r->nranks && !best; i++)
                for (int j = 0; j < r->nranks; j++)
                    if (i != j && r->host_of[i] == a && r->host_of[j] == b &&
                        CELL(r, i, j)->nccl.status == (int)s) {
                        best = CELL(r, i, j);
                        break;
                    }
            json_array_append_new(row, best ? cell_json(best) : json_null());
        }
        json_array_append_new(mc, row);
    }
    json_object_set_new(m, "hosts", json_copy(hosts));
    json_object_set_new(m, "cells", mc);
    for (int i = 0; i < r->nranks; i++) {
        json_t *row = json_array();
        for (int j = 0; j < r->nranks; j++)
            json_array_append_new(row, i == j ? json_null()
                                              : cell_json(CELL(r, i, j)));
        json_array_append_new(rm, row);
    }
    json_object_set_new(o, "ranks", ranks);
    json_object_set_new(o, "hosts", hosts);
    json_object_set_new(o, "matrix", m);
    json_object_set_new(o, "rank_matrix", rm);
    json_object_set_new(o, "timeout_ms", json_integer(r->timeout_ms));
    json_object_set_new(o, "burst_bytes",
                        json_integer((json_int_t)r->burst_bytes));
    return o;
oom:
    json_decref(o);
    json_decref(ranks);
    json_decref(hosts);
    json_decref(m);
    json_decref(mc);
    json_decref(rm);
    return NULL;
}

/* ---- text ----------------------------------------------------------------- */

/* ", control port: S, from a fixed source port: S" after a failure */
static void conn_tail(struct ncd_strbuf *out, const struct ncd_probe_conn *c)
{
    if (c->ctl_status != NCD_PROBE_NOT_TRIED)
        ncd_sb_printf(out, ", control port: %s",
                      ncd_probe_status_name(
                          (enum ncd_probe_status)c->ctl_status));
    if (c->src_status != NCD_PROBE_NOT_TRIED &&
        c->ctl_status != NCD_PROBE_OK)
        ncd_sb_printf(out, ", from a source port outside the range: %s",
                      ncd_probe_status_name(
                          (enum ncd_probe_status)c->src_status));
}

void ncd_probe_render_text(struct ncd_strbuf *out,
                           const struct ncd_probe_result *r,
                           const struct ncd_text_style *st)
{
    ncd_sb_printf(out, "Probe: %d rank%s on %d host%s (connect timeout %d "
                       "ms, burst %zu bytes)\n\n",
                  r->nranks, r->nranks == 1 ? "" : "s", r->nhosts,
                  r->nhosts == 1 ? "" : "s", r->timeout_ms, r->burst_bytes);
    ncd_sb_printf(out, "  %-4s %-16s %-26s %-10s %-9s %s\n", "rank", "host",
                  "NCCL interface", "recommend", "NCCL", "NCCL_SOCKET_IFNAME");
    for (int i = 0; i < r->nranks; i++) {
        const struct ncd_probe_rank *k = &r->ranks[i];
        char ni[96], vb[16];
        snprintf(ni, sizeof ni, "%s %s", k->nccl_if[0] ? k->nccl_if : "-",
                 k->nccl_addr);
        ncd_sb_printf(out, "  %-4d %-16s %-26s %-10s %-9s %s\n", i, k->host,
                      ni, k->rec_if[0] ? k->rec_if : "-",
                      k->nccl_version
                          ? ncd_nccl_version_str(k->nccl_version, vb,
                                                 sizeof vb)
                          : "?",
                      k->ifname_set ? k->socket_ifname : "(unset)");
    }
    if (r->nhosts > 1 || r->nranks > 1) {
        ncd_sb_puts(out, "\n  Reachability on NCCL's interfaces "
                         "(row connects to column):\n");
        ncd_sb_printf(out, "  %-16s", "");
        for (int b = 0; b < r->nhosts; b++)
            ncd_sb_printf(out, " %-12.12s", r->hosts[b]);
        ncd_sb_putc(out, '\n');
        for (int a = 0; a < r->nhosts; a++) {
            ncd_sb_printf(out, "  %-16.16s", r->hosts[a]);
            for (int b = 0; b < r->nhosts; b++) {
                enum ncd_probe_status s = ncd_probe_host_status(r, a, b);
                const char *txt =
                    s == NCD_PROBE_NOT_TRIED ? "-" : ncd_probe_status_name(s);
                const char *col = "";
                if (s == NCD_PROBE_OK)
                    col = ncd_severity_color(NCD_SEV_OK, st);
                else if (s != NCD_PROBE_NOT_TRIED)
                    col = ncd_severity_color(NCD_SEV_ERROR, st);
                ncd_sb_printf(out, " %s%-12s%s", col, txt,
                              *col ? ncd_color_reset(st) : "");
            }
            ncd_sb_putc(out, '\n');
        }
        /* every pair for small jobs (or -v); else the failures and a
         * summary of the others */
        int all = r->nranks <= 8 || st->verbose, shown = 0, nok = 0;
        float bwmin = 0, bwmax = 0, rttmax = 0;
        ncd_sb_printf(out, "\n  Pairs%s (from -> to: status, connect, round "
                           "trip, burst bandwidth, DF probes):\n",
                      all ? "" : " that failed");
        for (int i = 0; i < r->nranks; i++)
            for (int j = 0; j < r->nranks; j++) {
                if (i == j)
                    continue;
                const struct ncd_probe_cell *c = CELL(r, i, j);
                if (!all && c->nccl.status == NCD_PROBE_OK) {
                    if (!nok++ || c->nccl.bw_gbps < bwmin)
                        bwmin = c->nccl.bw_gbps;
                    if (c->nccl.bw_gbps > bwmax)
                        bwmax = c->nccl.bw_gbps;
                    if (c->rtt_us > rttmax)
                        rttmax = c->rtt_us;
                    continue;
                }
                shown++;
                ncd_sb_printf(out, "    %d(%s) -> %d(%s) %s:%d  %s", i,
                              r->ranks[i].host, j, r->ranks[j].host,
                              r->ranks[j].nccl_addr[0] ? r->ranks[j].nccl_addr
                                                       : "-",
                              c->nccl.port,
                              ncd_probe_status_name(
                                  (enum ncd_probe_status)c->nccl.status));
                if (c->nccl.status == NCD_PROBE_OK) {
                    ncd_sb_printf(out, "  %.0f us, rtt %.0f us, %.3f GB/s",
                                  (double)c->nccl.connect_us,
                                  (double)c->rtt_us,
                                  (double)c->nccl.bw_gbps);
                    if (r->host_of[i] == r->host_of[j])
                        ncd_sb_puts(out, ", same host (loopback path)");
                    else if (c->mtu_ok || c->mtu_lost)
                        ncd_sb_printf(out, ", DF ok to %d%s", c->mtu_ok,
                                      c->mtu_lost ? " (larger lost)" : "");
                } else {
                    if (c->nccl.detail[0])
                        ncd_sb_printf(out, " (%s)", c->nccl.detail);
                    conn_tail(out, &c->nccl);
                }
                if (c->rec.status != NCD_PROBE_NOT_TRIED &&
                    strcmp(r->ranks[j].rec_addr, r->ranks[j].nccl_addr)) {
                    ncd_sb_printf(out, "; via %s %s:%d: %s",
                                  r->ranks[i].rec_if, r->ranks[j].rec_addr,
                                  c->rec.port,
                                  ncd_probe_status_name(
                                      (enum ncd_probe_status)c->rec.status));
                    if (c->rec.status != NCD_PROBE_OK)
                        conn_tail(out, &c->rec);
                }
                ncd_sb_putc(out, '\n');
            }
        if (!all && !shown)
            ncd_sb_puts(out, "    (none)\n");
        if (!all && nok) {
            ncd_sb_printf(out, "    %d pairs ok: ", nok);
            if (r->burst_bytes)
                ncd_sb_printf(out, "burst %.3f-%.3f GB/s, ", (double)bwmin,
                              (double)bwmax);
            ncd_sb_printf(out, "round trip <= %.0f us (-v lists every "
                               "pair)\n",
                          (double)rttmax);
        }
    }
    ncd_sb_putc(out, '\n');
}
