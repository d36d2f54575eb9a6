/* SPDX-License-Identifier: MIT */
/* Rule expressions of the nftables netlink dump back into nft -j's
 * high-level matches (see live_nft.c for the sources of these facts):
 * registers loaded by payload/meta/ct, masked by bitwise, compared by
 * cmp/range/lookup; implicit protocol dependencies dropped; verdicts. */
#define _GNU_SOURCE
#include "sys/nft_internal.h"

#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- rules ------------------------------------------------------------- */

enum lkind { L_NONE, L_META, L_PAYLOAD, L_CT, L_IMM };

struct reg {
    enum lkind kind;
    uint32_t key, base, off, len;
    uint8_t mask[16];
    uint32_t mlen; /* 0: no bitwise */
};

struct rstate {
    struct dump *d;
    uint32_t family, table_family;
    const char *table;
    struct reg reg[24];
    unsigned nf, l4; /* protocol context: nfproto, l4 protocol */
    /* a dependency match held back: dropped when the next load is the
     * header it guards, written otherwise */
    struct ncd_strbuf pend;
    int pend_kind; /* 0 none, 1 guards network header, 2 transport */
    /* "cmp >= a" waiting for its "cmp <= b" */
    struct ncd_strbuf lower_left;
    uint8_t lower[16];
    uint32_t lower_len, lower_reg;
    enum vkind lower_kind;
    int have_lower;
    int nexpr;
};

static struct reg *reg_at(struct rstate *r, uint32_t n)
{
    /* NFT_REG_1..4 are 16 bytes each: the 32-bit registers 8+4(n-1).. */
    uint32_t i = n >= NFT_REG32_00 ? n - NFT_REG32_00
                                   : (n >= 1 && n <= 4 ? (n - 1) * 4 : 23);
    return &r->reg[i < 24 ? i : 23];
}

static void expr_sep(struct rstate *r)
{
    if (r->nexpr++)
        ncd_sb_putc(&r->d->out, ',');
}

static void flush_pending(struct rstate *r)
{
    if (r->pend_kind) {
        expr_sep(r);
        ncd_sb_add(&r->d->out, r->pend.buf, r->pend.len);
        r->pend_kind = 0;
    }
    ncd_sb_reset(&r->pend);
}

static void flush_lower(struct rstate *r)
{
    if (!r->have_lower)
        return;
    r->have_lower = 0;
    expr_sep(r);
    struct ncd_strbuf *o = &r->d->out;
    ncd_sb_puts(o, "{\"match\":{\"op\":\">=\",\"left\":");
    ncd_sb_add(o, r->lower_left.buf, r->lower_left.len);
    ncd_sb_puts(o, ",\"right\":");
    ncd__nft_value(o, r->lower_kind, r->lower, r->lower_len);
    ncd_sb_puts(o, "}}");
}

/* Left side of a match on register g, and how its value reads. */
static enum vkind put_left(struct rstate *r, struct ncd_strbuf *o,
                           const struct reg *g, int *prefix_bits)
{
    static const char *const meta[] = {
        "length", "protocol", "priority", "mark", "iif", "oif", "iifname",
        "oifname", "iiftype", "oiftype", "skuid", "skgid", "nftrace",
        "rtclassid", "secmark", "nfproto", "l4proto", "ibrname", "obrname",
        "pkttype", "cpu", "iifgroup", "oifgroup", "cgroup", "random"};
    static const char *const ct[] = {
        "state", "direction", "status", "mark", "secmark", "expiration",
        "helper", "l3proto", "saddr", "daddr", "protocol", "proto-src",
        "proto-dst", "label"};
    *prefix_bits = -1;
    if (g->kind == L_META) {
        const char *k = g->key < sizeof meta / sizeof meta[0] ? meta[g->key] : NULL;
        ncd_sb_puts(o, "{\"meta\":{\"key\":");
        if (k)
            ncd__nft_str(o, k);
        else
            ncd_sb_printf(o, "\"meta-%u\"", g->key);
        ncd_sb_puts(o, "}}");
        switch (g->key) {
        case NFT_META_IIFNAME: case NFT_META_OIFNAME: return V_IFNAME;
        case NFT_META_IIF: case NFT_META_OIF: return V_IFINDEX;
        case NFT_META_L4PROTO: return V_PROTO;
        case NFT_META_NFPROTO: return V_NFPROTO;
        default: return V_HOSTINT;
        }
    }
    if (g->kind == L_CT) {
        const char *k = g->key < sizeof ct / sizeof ct[0] ? ct[g->key] : NULL;
        ncd_sb_puts(o, "{\"ct\":{\"key\":");
        if (k)
            ncd__nft_str(o, k);
        else
            ncd_sb_printf(o, "\"ct-%u\"", g->key);
        ncd_sb_puts(o, "}}");
        return g->key == NFT_CT_STATE ? V_CTSTATE
               : g->key == NFT_CT_MARK ? V_HOSTINT : V_BEINT;
    }
    if (g->kind == L_PAYLOAD) {
        const char *proto = NULL, *field = NULL;
        enum vkind k = V_BEINT;
        unsigned nf = r->nf;
        if (g->base == NFT_PAYLOAD_NETWORK_HEADER && nf == NFPROTO_IPV4) {
            proto = "ip";
            if (g->off == 9 && g->len == 1) {
                field = "protocol";
                k = V_PROTO;
            } else if ((g->off == 12 || g->off == 16) && g->len <= 4) {
                field = g->off == 12 ? "saddr" : "daddr";
                k = V_IP4;
                if (g->len < 4)
                    *prefix_bits = (int)g->len * 8;
            }
        } else if (g->base == NFT_PAYLOAD_NETWORK_HEADER && nf == NFPROTO_IPV6) {
            proto = "ip6";
            if (g->off == 6 && g->len == 1) {
                field = "nexthdr";
                k = V_PROTO;
            } else if ((g->off == 8 || g->off == 24) && g->len <= 16) {
                field = g->off == 8 ? "saddr" : "daddr";
                k = V_IP6;
                if (g->len < 16)
                    *prefix_bits = (int)g->len * 8;
            }
        } else if (g->base == NFT_PAYLOAD_TRANSPORT_HEADER && g->len == 2 &&
                   (g->off == 0 || g->off == 2) &&
                   (r->l4 == 6 || r->l4 == 17 || r->l4 == 33 || r->l4 == 132 ||
                    r->l4 == 136)) {
            proto = ncd__nft_l4(r->l4);
            field = g->off == 0 ? "sport" : "dport";
        }
        if (proto && field) {
            ncd_sb_printf(o, "{\"payload\":{\"protocol\":\"%s\",\"field\":\"%s\"}}",
                          proto, field);
            return k;
        }
        static const char *const base[] = {"ll", "nh", "th", "inner"};
        ncd_sb_printf(o, "{\"payload\":{\"base\":\"%s\",\"offset\":%u,\"len\":%u}}",
                      g->base < 4 ? base[g->base] : "unknown", g->off * 8,
                      g->len * 8);
        return V_BEINT;
    }
    ncd_sb_puts(o, "{\"unknown\":null}");
    return V_HEX;
}

static int mask_prefix(const uint8_t *m, uint32_t len)
{
    int bits = 0;
    uint32_t i = 0;
    for (; i < len && m[i] == 0xff; i++)
        bits += 8;
    if (i < len) {
        uint8_t b = m[i];
        while (b & 0x80) {
            bits++;
            b = (uint8_t)(b << 1);
        }
        if (b)
            return -1;
        for (i++; i < len; i++)
            if (m[i])
                return -1;
    }
    return bits;
}

static void put_match(struct rstate *r, struct ncd_strbuf *o, const char *op,
                      const struct reg *g, const uint8_t *v, uint32_t vlen)
{
    int pfx;
    ncd_sb_puts(o, "{\"match\":{\"op\":\"");
    ncd_sb_puts(o, op);
    ncd_sb_puts(o, "\",\"left\":");
    struct ncd_strbuf left = {0};
    enum vkind k = put_left(r, &left, g, &pfx);
    uint8_t full[16] = {0};
    if (g->mlen && (k == V_IP4 || k == V_IP6))
        pfx = mask_prefix(g->mask, g->mlen);
    if (g->mlen && k != V_CTSTATE && pfx < 0) {
        ncd_sb_puts(o, "{\"&\":[");
        ncd_sb_add(o, left.buf, left.len);
        ncd_sb_putc(o, ',');
        ncd__nft_value(o, k, g->mask, g->mlen);
        ncd_sb_puts(o, "]}");
    } else {
        ncd_sb_add(o, left.buf, left.len);
    }
    ncd_sb_release(&left);
    ncd_sb_puts(o, ",\"right\":");
    if (pfx >= 0 && (k == V_IP4 || k == V_IP6)) {
        uint32_t full_len = k == V_IP4 ? 4 : 16;
        memcpy(full, v, vlen < full_len ? vlen : full_len);
        ncd_sb_puts(o, "{\"prefix\":{\"addr\":");
        ncd__nft_value(o, k, full, full_len);
        ncd_sb_printf(o, ",\"len\":%d}}", pfx);
    } else {
        ncd__nft_value(o, k, v, vlen);
    }
    ncd_sb_puts(o, "}}");
}

static int on_expr(struct nftnl_expr *e, void *data)
{
    struct rstate *r = data;
    struct ncd_strbuf *o = &r->d->out;
    const char *name = nftnl_expr_get_str(e, NFTNL_EXPR_NAME);
    if (!name)
        return 0;
    uint32_t l = 0;
    if (strcmp(name, "cmp") && r->have_lower)
        flush_lower(r);
    if (!strcmp(name, "payload") && !nftnl_expr_is_set(e, NFTNL_EXPR_PAYLOAD_SREG)) {
        struct reg *g = reg_at(r, nftnl_expr_get_u32(e, NFTNL_EXPR_PAYLOAD_DREG));
        memset(g, 0, sizeof *g);
        g->kind = L_PAYLOAD;
        g->base = nftnl_expr_get_u32(e, NFTNL_EXPR_PAYLOAD_BASE);
        g->off = nftnl_expr_get_u32(e, NFTNL_EXPR_PAYLOAD_OFFSET);
        g->len = nftnl_expr_get_u32(e, NFTNL_EXPR_PAYLOAD_LEN);
        int guards = g->base == NFT_PAYLOAD_NETWORK_HEADER ? 1
                     : g->base == NFT_PAYLOAD_TRANSPORT_HEADER ? 2 : 0;
        if (r->pend_kind && r->pend_kind == guards)
            ncd_sb_reset(&r->pend), r->pend_kind = 0; /* implied dependency */
        else
            flush_pending(r);
        return 0;
    }
    if ((!strcmp(name, "meta") && nftnl_expr_is_set(e, NFTNL_EXPR_META_DREG)) ||
        (!strcmp(name, "ct") && nftnl_expr_is_set(e, NFTNL_EXPR_CT_DREG))) {
        int m = name[0] == 'm';
        struct reg *g = reg_at(r, nftnl_expr_get_u32(
                                      e, m ? NFTNL_EXPR_META_DREG : NFTNL_EXPR_CT_DREG));
        memset(g, 0, sizeof *g);
        g->kind = m ? L_META : L_CT;
        g->key = nftnl_expr_get_u32(e, m ? NFTNL_EXPR_META_KEY : NFTNL_EXPR_CT_KEY);
        flush_pending(r);
        return 0;
    }
    if (!strcmp(name, "bitwise")) {
        struct reg *s = reg_at(r, nftnl_expr_get_u32(e, NFTNL_EXPR_BITWISE_SREG));
        struct reg *g = reg_at(r, nftnl_expr_get_u32(e, NFTNL_EXPR_BITWISE_DREG));
        const void *m = nftnl_expr_get(e, NFTNL_EXPR_BITWISE_MASK, &l);
        struct reg t = *s;
        if (m && l <= 16 && nftnl_expr_get_u32(e, NFTNL_EXPR_BITWISE_OP) == 0) {
            memcpy(t.mask, m, l);
            t.mlen = l;
        } else {
            t.kind = L_NONE;
        }
        *g = t;
        return 0;
    }
    if (!strcmp(name, "cmp") || !strcmp(name, "range")) {
        int cmp = name[0] == 'c';
        uint32_t sreg = nftnl_expr_get_u32(e, cmp ? NFTNL_EXPR_CMP_SREG
                                                   : NFTNL_EXPR_RANGE_SREG);
        uint32_t op = nftnl_expr_get_u32(e, cmp ? NFTNL_EXPR_CMP_OP
                                                 : NFTNL_EXPR_RANGE_OP);
        struct reg *g = reg_at(r, sreg);
        const uint8_t *v = nftnl_expr_get(e, cmp ? NFTNL_EXPR_CMP_DATA
                                                 : NFTNL_EXPR_RANGE_FROM_DATA, &l);
        if (!v || l > 16)
            return 0;
        if (!cmp) {
            uint32_t l2 = 0;
            const uint8_t *v2 = nftnl_expr_get(e, NFTNL_EXPR_RANGE_TO_DATA, &l2);
            if (!v2 || l2 != l)
                return 0;
            flush_pending(r);
            expr_sep(r);
            int pfx;
            struct ncd_strbuf left = {0};
            enum vkind k = put_left(r, &left, g, &pfx);
            ncd_sb_printf(o, "{\"match\":{\"op\":\"%s\",\"left\":",
                          op == NFT_RANGE_NEQ ? "!=" : "==");
            ncd_sb_add(o, left.buf, left.len);
            ncd_sb_puts(o, ",\"right\":{\"range\":[");
            ncd__nft_value(o, k, v, l);
            ncd_sb_putc(o, ',');
            ncd__nft_value(o, k, v2, l);
            ncd_sb_puts(o, "]}}}");
            ncd_sb_release(&left);
            return 0;
        }
        if (op == NFT_CMP_LTE && r->have_lower && r->lower_reg == sreg &&
            r->lower_len == l) {
            r->have_lower = 0;
            expr_sep(r);
            ncd_sb_puts(o, "{\"match\":{\"op\":\"==\",\"left\":");
            ncd_sb_add(o, r->lower_left.buf, r->lower_left.len);
            ncd_sb_puts(o, ",\"right\":{\"range\":[");
            ncd__nft_value(o, r->lower_kind, r->lower, l);
            ncd_sb_putc(o, ',');
            ncd__nft_value(o, r->lower_kind, v, l);
            ncd_sb_puts(o, "]}}}");
            return 0;
        }
        flush_lower(r);
        /* the protocol context that later loads depend on */
        int dep = 0;
        if (op == NFT_CMP_EQ && g->kind == L_META && g->key == NFT_META_L4PROTO && l == 1) {
            r->l4 = v[0];
            dep = 2;
        } else if (op == NFT_CMP_EQ && g->kind == L_META && g->key == NFT_META_NFPROTO && l == 1) {
            r->nf = v[0];
            dep = 1;
        } else if (op == NFT_CMP_EQ && g->kind == L_PAYLOAD &&
                   g->base == NFT_PAYLOAD_NETWORK_HEADER && l == 1 &&
                   ((r->nf == NFPROTO_IPV4 && g->off == 9) ||
                    (r->nf == NFPROTO_IPV6 && g->off == 6))) {
            r->l4 = v[0];
            dep = 2;
        }
        flush_pending(r);
        if (op == NFT_CMP_GTE) {
            int pfx;
            ncd_sb_reset(&r->lower_left);
            r->lower_kind = put_left(r, &r->lower_left, g, &pfx);
            memcpy(r->lower, v, l);
            r->lower_len = l;
            r->lower_reg = sreg;
            r->have_lower = 1;
            return 0;
        }
        static const char *const ops[] = {"==", "!=", "<", "<=", ">", ">="};
        const char *ops_s = op < 6 ? ops[op] : "==";
        if (g->kind == L_CT && g->key == NFT_CT_STATE && g->mlen &&
            op == NFT_CMP_NEQ) {
            /* ct state & mask != 0: "ct state { a, b }" */
            struct reg t = *g;
            t.mlen = 0;
            expr_sep(r);
            put_match(r, o, "in", &t, g->mask, g->mlen);
            return 0;
        }
        if (dep) {
            put_match(r, &r->pend, ops_s, g, v, l);
            r->pend_kind = dep;
            return 0;
        }
        expr_sep(r);
        put_match(r, o, ops_s, g, v, l);
        return 0;
    }
    flush_pending(r);
    if (!strcmp(name, "lookup")) {
        struct reg *g = reg_at(r, nftnl_expr_get_u32(e, NFTNL_EXPR_LOOKUP_SREG));
        const char *set = nftnl_expr_get_str(e, NFTNL_EXPR_LOOKUP_SET);
        int inv = nftnl_expr_is_set(e, NFTNL_EXPR_LOOKUP_FLAGS) &&
                  (nftnl_expr_get_u32(e, NFTNL_EXPR_LOOKUP_FLAGS) & NFT_LOOKUP_F_INV);
        int map = nftnl_expr_is_set(e, NFTNL_EXPR_LOOKUP_DREG);
        struct nset *s = set ? ncd__nft_set_find(r->d, r->table_family, r->table, set) : NULL;
        int pfx;
        struct ncd_strbuf left = {0};
        enum vkind k = put_left(r, &left, g, &pfx);
        expr_sep(r);
        ncd_sb_printf(o, map ? "{\"map\":{\"key\":" : "{\"match\":{\"op\":\"%s\",\"left\":",
                      inv ? "!=" : "==");
        ncd_sb_add(o, left.buf, left.len);
        ncd_sb_puts(o, map ? ",\"data\":" : ",\"right\":");
        if (s && (s->flags & NFT_SET_ANONYMOUS) && !map) {
            ncd_sb_puts(o, "{\"set\":");
            ncd__nft_elems(o, s, k);
            ncd_sb_putc(o, '}');
        } else {
            char at[300];
            snprintf(at, sizeof at, "@%s", set ? set : "");
            ncd__nft_str(o, at);
        }
        ncd_sb_puts(o, "}}");
        ncd_sb_release(&left);
        return 0;
    }
    if (!strcmp(name, "immediate")) {
        uint32_t dreg = nftnl_expr_get_u32(e, NFTNL_EXPR_IMM_DREG);
        if (dreg != NFT_REG_VERDICT) {
            struct reg *g = reg_at(r, dreg);
            memset(g, 0, sizeof *g);
            g->kind = L_IMM;
            return 0;
        }
        int v = (int)nftnl_expr_get_u32(e, NFTNL_EXPR_IMM_VERDICT);
        expr_sep(r);
        switch (v) {
        case NF_ACCEPT: ncd_sb_puts(o, "{\"accept\":null}"); break;
        case NF_DROP: ncd_sb_puts(o, "{\"drop\":null}"); break;
        case NF_QUEUE: ncd_sb_puts(o, "{\"queue\":null}"); break;
        case NFT_CONTINUE: ncd_sb_puts(o, "{\"continue\":null}"); break;
        case NFT_RETURN: ncd_sb_puts(o, "{\"return\":null}"); break;
        case NFT_JUMP: case NFT_GOTO:
            ncd_sb_printf(o, "{\"%s\":{\"target\":", v == NFT_JUMP ? "jump" : "goto");
            ncd__nft_str(o, nftnl_expr_get_str(e, NFTNL_EXPR_IMM_CHAIN));
            ncd_sb_puts(o, "}}");
            break;
        default: ncd_sb_printf(o, "{\"verdict-%d\":null}", v); break;
        }
        return 0;
    }
    expr_sep(r);
    if (!strcmp(name, "reject")) {
        static const char *const icmpx[] = {"no-route", "port-unreachable",
                                            "host-unreachable", "admin-prohibited"};
        uint32_t t = nftnl_expr_get_u32(e, NFTNL_EXPR_REJECT_TYPE);
        uint32_t c = nftnl_expr_get_u8(e, NFTNL_EXPR_REJECT_CODE);
        if (t == NFT_REJECT_TCP_RST)
            ncd_sb_puts(o, "{\"reject\":{\"type\":\"tcp reset\"}}");
        else if (t == NFT_REJECT_ICMPX_UNREACH && c < 4)
            ncd_sb_printf(o, "{\"reject\":{\"type\":\"icmpx\",\"expr\":\"%s\"}}",
                          icmpx[c]);
        else
            ncd_sb_printf(o, "{\"reject\":{\"type\":\"%s\",\"expr\":%u}}",
                          r->nf == NFPROTO_IPV6 ? "icmpv6" : "icmp", c);
    } else if (!strcmp(name, "counter")) {
        ncd_sb_printf(o, "{\"counter\":{\"packets\":%llu,\"bytes\":%llu}}",
                      (unsigned long long)nftnl_expr_get_u64(e, NFTNL_EXPR_CTR_PACKETS),
                      (unsigned long long)nftnl_expr_get_u64(e, NFTNL_EXPR_CTR_BYTES));
    } else {
        ncd_sb_putc(o, '{');
        ncd__nft_str(o, name);
        ncd_sb_puts(o, ":null}");
    }
    return 0;
}

int ncd__nft_on_rule(const struct nlmsghdr *nlh, void *data)
{
    struct dump *d = data;
    struct nftnl_rule *ru = nftnl_rule_alloc();
    if (!ru || nftnl_rule_nlmsg_parse(nlh, ru) < 0) {
        nftnl_rule_free(ru);
        return ru ? MNL_CB_OK : (d->oom = 1, MNL_CB_ERROR);
    }
    struct rstate r;
    memset(&r, 0, sizeof r);
    r.d = d;
    r.table_family = r.family = nftnl_rule_get_u32(ru, NFTNL_RULE_FAMILY);
    r.table = nftnl_rule_get_str(ru, NFTNL_RULE_TABLE);
    if (!r.table)
        r.table = "";
    if (r.family == NFPROTO_IPV4 || r.family == NFPROTO_IPV6)
        r.nf = r.family;
    struct ncd_strbuf *o = &d->out;
    ncd__nft_obj_sep(d);
    ncd_sb_printf(o, "{\"rule\":{\"family\":\"%s\",\"table\":", ncd__nft_family(r.family));
    ncd__nft_str(o, r.table);
    ncd_sb_puts(o, ",\"chain\":");
    ncd__nft_str(o, nftnl_rule_get_str(ru, NFTNL_RULE_CHAIN));
    ncd_sb_printf(o, ",\"handle\":%llu,\"expr\":[",
                  (unsigned long long)nftnl_rule_get_u64(ru, NFTNL_RULE_HANDLE));
    nftnl_expr_foreach(ru, on_expr, &r);
    flush_lower(&r);
    flush_pending(&r);
    ncd_sb_puts(o, "]}}");
    ncd_sb_release(&r.pend);
    ncd_sb_release(&r.lower_left);
    nftnl_rule_free(ru);
    if (o->oom)
        d->oom = 1;
    return d->oom ? MNL_CB_ERROR : MNL_CB_OK;
}

