/* SPDX-License-Identifier: MIT */
/*
 * probe: decoding what other ranks send (hellos, answers, requests, UDP
 * echoes, the allgathered rank records and result rows).  Each decoder
 * takes a buffer; the socket code feeds it.  Nothing a peer sends is
 * trusted: lengths are bounded, enums checked, strings terminated.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ncd/probe.h"
#include "probe/probe_int.h"

size_t ncd__probe_request_size(int op)
{
    switch (op) {
    case 'P':
    case 'Q': return 1;
    case 'B': return 1 + sizeof(uint64_t);
    default: return 0;
    }
}

int ncd__probe_hello_decode(const void *buf, size_t len, uint64_t token,
                            int nranks, int self, struct hello *out)
{
    struct hello h;
    if (len < sizeof h)
        return -1;
    memcpy(&h, buf, sizeof h);
    if (h.magic != PROBE_MAGIC || h.token != token || h.kind >= PROBE_K_N ||
        h.src < 0 || h.src >= nranks || h.dst != self)
        return -1;
    *out = h;
    return 0;
}

enum ncd_probe_status ncd__probe_answer_decode(const void *buf, size_t len,
                                               uint64_t token, int peer,
                                               int kind, char *detail,
                                               size_t dlen)
{
    struct hello a;
    memset(&a, 0, sizeof a);
    memcpy(&a, buf, len < sizeof a ? len : sizeof a);
    if (len < sizeof a || a.magic != PROBE_MAGIC)
        snprintf(detail, dlen, "the answer is not nccl-doctor's: another "
                               "program listens there");
    else if (a.token != token)
        snprintf(detail, dlen, "answered by another nccl-doctor job");
    else if (a.src != peer)
        snprintf(detail, dlen,
                 "answered by rank %d instead of rank %d (the same address "
                 "on two hosts?)",
                 (int)a.src, peer);
    else if (a.kind != (uint32_t)kind)
        snprintf(detail, dlen, "answered on the wrong listener (kind %u, "
                               "expected %d)",
                 (unsigned)a.kind, kind);
    else
        return NCD_PROBE_OK;
    return NCD_PROBE_WRONG_PEER;
}

int ncd__probe_request_decode(const void *buf, size_t len, uint64_t *burst)
{
    if (len < 1)
        return 0;
    int op = ((const unsigned char *)buf)[0];
    size_t need = ncd__probe_request_size(op);
    if (!need || len < need)
        return 0;
    if (op == 'B') {
        uint64_t b;
        memcpy(&b, (const unsigned char *)buf + 1, sizeof b);
        if (b > NCD_PROBE_MAX_BURST)
            return 0;
        *burst = b;
    }
    return op;
}

int ncd__probe_udp_decode(const void *buf, size_t len, uint64_t token,
                          struct udp_hdr *out)
{
    struct udp_hdr h;
    if (len < sizeof h)
        return -1;
    memcpy(&h, buf, sizeof h);
    if (h.magic != PROBE_MAGIC || h.token != token)
        return -1;
    *out = h;
    return 0;
}

/* ---- records and rows from the allgather --------------------------------- */

#define TERM(s) ((s)[sizeof(s) - 1] = 0)

static int32_t clamp_status(int32_t s)
{
    return s >= NCD_PROBE_NOT_TRIED && s <= NCD_PROBE_ERROR ? s
                                                            : NCD_PROBE_ERROR;
}

static float clean(float x)
{
    return isfinite(x) && x > 0 ? x : 0;
}

static int32_t nonneg(int32_t x)
{
    return x > 0 ? x : 0;
}

static void sanitize_conn(struct ncd_probe_conn *c)
{
    c->status = clamp_status(c->status);
    c->ctl_status = clamp_status(c->ctl_status);
    c->src_status = clamp_status(c->src_status);
    if (c->port < 0 || c->port > 65535)
        c->port = 0;
    c->connect_us = clean(c->connect_us);
    c->bw_gbps = clean(c->bw_gbps);
    TERM(c->detail);
}

static int32_t port_or_0(int32_t p)
{
    return p > 0 && p <= 65535 ? p : 0;
}

int ncd__probe_sanitize(struct ncd_probe_result *r)
{
    for (int j = 0; j < r->nranks; j++)
        if (r->ranks[j].rank != j)
            return -1;
    for (int j = 0; j < r->nranks; j++) {
        struct ncd_probe_rank *k = &r->ranks[j];
        TERM(k->host);
        TERM(k->boot_id);
        TERM(k->nccl_if);
        TERM(k->nccl_addr);
        TERM(k->nccl_pass);
        TERM(k->rec_if);
        TERM(k->rec_addr);
        TERM(k->rec_ifname);
        TERM(k->socket_ifname);
        TERM(k->nccl_version_src);
        TERM(k->rdv_addr);
        TERM(k->rdv_if);
        TERM(k->listen_error);
        k->ifname_set = k->ifname_set != 0;
        k->nccl_version = nonneg(k->nccl_version);
        k->mtu = nonneg(k->mtu);
        k->rec_mtu = nonneg(k->rec_mtu);
        k->port_lo = port_or_0(k->port_lo);
        k->port_hi = port_or_0(k->port_hi);
        if (!k->port_lo || !k->port_hi || k->port_hi < k->port_lo)
            k->port_lo = k->port_hi = 0;
        k->tcp_port = port_or_0(k->tcp_port);
        k->ctl_port = port_or_0(k->ctl_port);
        k->udp_port = port_or_0(k->udp_port);
        k->rec_port = port_or_0(k->rec_port);
        k->rec_ctl_port = port_or_0(k->rec_ctl_port);
        if (k->n_addrs < 0 || k->n_addrs > 8)
            k->n_addrs = 0;
        for (int a = 0; a < 8; a++)
            TERM(k->addrs[a]);
    }
    size_t nn = (size_t)r->nranks * (size_t)r->nranks;
    for (size_t x = 0; x < nn; x++) {
        struct ncd_probe_cell *c = &r->cells[x];
        sanitize_conn(&c->nccl);
        sanitize_conn(&c->rec);
        c->rtt_us = clean(c->rtt_us);
        c->mtu_ok = nonneg(c->mtu_ok);
        c->mtu_lost = nonneg(c->mtu_lost);
        c->mtu_local = nonneg(c->mtu_local);
        TERM(c->src_addr);
        TERM(c->resolved);
        TERM(c->resolve_err);
    }
    return 0;
}
