/* SPDX-License-Identifier: MIT */
/* The live nftables rule set: one netlink dump per object kind
 * (NETLINK_NETFILTER: NFT_MSG_GETTABLE, GETCHAIN, GETSET + GETSETELEM per
 * set, GETRULE), decoded with libnftnl/libmnl and written as JSON in the
 * schema of `nft -j list ruleset` (libnftables' JSON output, nftables
 * 0.9-1.0), so live answers, captures made by gather (.ncd/nft.json) and
 * `nft -j` output all read the same way (src/lib/node/ports.c).
 *
 * Only what the firewall analysis understands is turned back into nft's
 * high-level form, as nft's own netlink_delinearize does: payload/meta/ct
 * loads compared (cmp, range, lookup in a set, a bitwise mask for prefixes
 * and ct state), the implicit "meta l4proto"/"meta nfproto" dependencies
 * dropped before a transport/network header match, "cmp >= a; cmp <= b"
 * joined into a range, interval sets turned back into ranges (the kernel
 * holds an interval as a start element and an exclusive end element
 * flagged NFT_SET_ELEM_INTERVAL_END), verdicts, reject, counter.  Other
 * expressions appear as {"<name>": null}.  Facts about the encoding:
 * nftables' src/netlink_linearize.c / netlink_delinearize.c (1.0.6),
 * <linux/netfilter/nf_tables.h>; checked against `nft --debug=netlink`. */
#define _GNU_SOURCE
#include "ncd/error.h"
#include "ncd/strbuf.h"
#include "sys/sys_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/common.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <net/if.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NFT_MAX_JSON (16u << 20)

/* ---- JSON text --------------------------------------------------------- */

static void js_str(struct ncd_strbuf *o, const char *s)
{
    ncd_sb_putc(o, '"');
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\')
            ncd_sb_printf(o, "\\%c", *p);
        else if (*p < 0x20 || *p >= 0x7f)
            ncd_sb_printf(o, "\\u%04x", *p);
        else
            ncd_sb_putc(o, (char)*p);
    }
    ncd_sb_putc(o, '"');
}

static const char *family_name(uint32_t f)
{
    switch (f) {
    case NFPROTO_INET: return "inet";
    case NFPROTO_IPV4: return "ip";
    case NFPROTO_ARP: return "arp";
    case NFPROTO_NETDEV: return "netdev";
    case NFPROTO_BRIDGE: return "bridge";
    case NFPROTO_IPV6: return "ip6";
    default: return "unknown";
    }
}

static const char *hook_name(uint32_t family, uint32_t hook)
{
    static const char *const inet[] = {"prerouting", "input", "forward",
                                       "output", "postrouting", "ingress"};
    static const char *const arp[] = {"input", "output", "forward"};
    static const char *const netdev[] = {"ingress", "egress"};
    if (family == NFPROTO_ARP)
        return hook < 3 ? arp[hook] : "unknown";
    if (family == NFPROTO_NETDEV)
        return hook < 2 ? netdev[hook] : "unknown";
    return hook < 6 ? inet[hook] : "unknown";
}

static const char *l4_name(unsigned p)
{
    switch (p) {
    case 1: return "icmp";
    case 2: return "igmp";
    case 6: return "tcp";
    case 17: return "udp";
    case 33: return "dccp";
    case 47: return "gre";
    case 50: return "esp";
    case 51: return "ah";
    case 58: return "ipv6-icmp";
    case 132: return "sctp";
    case 136: return "udplite";
    default: return NULL;
    }
}

/* ---- values ------------------------------------------------------------ */

enum vkind {
    V_HEX,     /* unknown: "0x..." */
    V_BEINT,   /* big-endian integer (ports, header fields) */
    V_HOSTINT, /* host-order integer (meta mark, ct mark) */
    V_IP4,
    V_IP6,
    V_PROTO,   /* l4 protocol number, by name */
    V_NFPROTO, /* ipv4 / ipv6 */
    V_IFNAME,
    V_IFINDEX,
    V_CTSTATE,
};

static void put_value(struct ncd_strbuf *o, enum vkind k, const uint8_t *d,
                      uint32_t len)
{
    char a[INET6_ADDRSTRLEN];
    uint32_t u = 0;
    if (k == V_IP4 && len == 4 && inet_ntop(AF_INET, d, a, sizeof a)) {
        js_str(o, a);
        return;
    }
    if (k == V_IP6 && len == 16 && inet_ntop(AF_INET6, d, a, sizeof a)) {
        js_str(o, a);
        return;
    }
    if (k == V_IFNAME) {
        char n[IFNAMSIZ + 2];
        uint32_t l = 0;
        while (l < len && l < IFNAMSIZ && d[l])
            l++;
        memcpy(n, d, l);
        if (l == len) /* no NUL compared: a prefix match, nft's "eth*" */
            n[l++] = '*';
        n[l] = '\0';
        js_str(o, n);
        return;
    }
    if (len == 0 || len > 8 || k == V_HEX || k == V_IP4 || k == V_IP6) {
        ncd_sb_puts(o, "\"0x");
        for (uint32_t i = 0; i < len; i++)
            ncd_sb_printf(o, "%02x", d[i]);
        ncd_sb_putc(o, '"');
        return;
    }
    uint64_t v = 0;
    if (k == V_HOSTINT || k == V_IFINDEX || k == V_CTSTATE) {
        if (len == 4) {
            memcpy(&u, d, 4);
            v = u;
        } else {
            for (uint32_t i = len; i-- > 0;)
                v = v << 8 | d[i]; /* little-endian host */
        }
    } else {
        for (uint32_t i = 0; i < len; i++)
            v = v << 8 | d[i];
    }
    if (k == V_PROTO && l4_name((unsigned)v)) {
        js_str(o, l4_name((unsigned)v));
    } else if (k == V_NFPROTO && (v == NFPROTO_IPV4 || v == NFPROTO_IPV6)) {
        js_str(o, v == NFPROTO_IPV4 ? "ipv4" : "ipv6");
    } else if (k == V_IFINDEX) {
        char n[IF_NAMESIZE];
        if (if_indextoname((unsigned)v, n))
            js_str(o, n);
        else
            ncd_sb_printf(o, "%llu", (unsigned long long)v);
    } else if (k == V_CTSTATE) {
        static const struct { unsigned bit; const char *n; } st[] = {
            {1, "invalid"}, {2, "established"}, {4, "related"}, {8, "new"},
            {64, "untracked"}};
        int n = 0;
        for (size_t i = 0; i < sizeof st / sizeof st[0]; i++)
            n += (v & st[i].bit) != 0;
        if (n != 1)
            ncd_sb_putc(o, '[');
        int first = 1;
        for (size_t i = 0; i < sizeof st / sizeof st[0]; i++)
            if (v & st[i].bit) {
                if (!first)
                    ncd_sb_putc(o, ',');
                first = 0;
                js_str(o, st[i].n);
            }
        if (n != 1)
            ncd_sb_putc(o, ']');
    } else {
        ncd_sb_printf(o, "%llu", (unsigned long long)v);
    }
}

/* ---- sets -------------------------------------------------------------- */

struct elem {
    uint8_t key[16], kend[16];
    uint32_t klen, flags;
    int has_end;
};

struct nset {
    uint32_t family, flags, key_type, key_len;
    char *table, *name;
    struct elem *e;
    size_t n, cap;
    struct nset *next; /* hash chain */
};

#define SET_BUCKETS 1024

struct dump {
    struct ncd_ctx *ctx;
    struct mnl_socket *nl;
    uint32_t seq, portid;
    char *buf;
    size_t bufsz;
    struct ncd_strbuf out;
    int nobj; /* objects written, for the commas */
    struct nset **sets;
    size_t nsets, capsets;
    struct nset *bucket[SET_BUCKETS];
    struct nset *cur; /* set whose elements are being read */
    int oom;
};

static unsigned set_hash(uint32_t family, const char *table, const char *name)
{
    unsigned h = 2166136261u ^ family;
    for (const char *p = table; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    for (const char *p = name; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    return h % SET_BUCKETS;
}

static struct nset *set_find(struct dump *d, uint32_t family,
                             const char *table, const char *name)
{
    for (struct nset *s = d->bucket[set_hash(family, table, name)]; s;
         s = s->next)
        if (s->family == family && !strcmp(s->name, name) &&
            !strcmp(s->table, table))
            return s;
    return NULL;
}

static void obj_sep(struct dump *d)
{
    if (d->nobj++)
        ncd_sb_putc(&d->out, ',');
}

static int elem_cmp(const void *a, const void *b)
{
    const struct elem *x = a, *y = b;
    uint32_t l = x->klen < y->klen ? x->klen : y->klen;
    int c = memcmp(x->key, y->key, l);
    if (c)
        return c;
    /* an interval's end sorts before a start at the same key */
    return (int)(y->flags & NFT_SET_ELEM_INTERVAL_END) -
           (int)(x->flags & NFT_SET_ELEM_INTERVAL_END);
}

/* end - 1, big-endian, in place */
static void be_dec(uint8_t *v, uint32_t len)
{
    for (uint32_t i = len; i-- > 0;)
        if (v[i]-- != 0)
            break;
}

/* The elements as nft lists them: values, and {"range":[a,b]} for the
 * intervals of an interval set. */
static void put_elems(struct ncd_strbuf *o, struct nset *s, enum vkind k)
{
    ncd_sb_putc(o, '[');
    int first = 1;
    qsort(s->e, s->n, sizeof *s->e, elem_cmp);
    for (size_t i = 0; i < s->n; i++) {
        struct elem *e = &s->e[i];
        if (e->flags & NFT_SET_ELEM_INTERVAL_END)
            continue;
        uint8_t hi[16];
        int range = 0;
        if (e->has_end) { /* concatenated ranges: key_end, inclusive */
            memcpy(hi, e->kend, e->klen);
            range = memcmp(hi, e->key, e->klen) != 0;
        } else if ((s->flags & NFT_SET_INTERVAL) && i + 1 < s->n &&
                   (s->e[i + 1].flags & NFT_SET_ELEM_INTERVAL_END)) {
            memcpy(hi, s->e[i + 1].key, e->klen);
            be_dec(hi, e->klen);
            range = memcmp(hi, e->key, e->klen) != 0;
        } else if (s->flags & NFT_SET_INTERVAL) {
            memset(hi, 0xff, e->klen); /* open to the end of the type */
            range = memcmp(hi, e->key, e->klen) != 0;
        }
        if (!first)
            ncd_sb_putc(o, ',');
        first = 0;
        if (range) {
            ncd_sb_puts(o, "{\"range\":[");
            put_value(o, k, e->key, e->klen);
            ncd_sb_putc(o, ',');
            put_value(o, k, hi, e->klen);
            ncd_sb_puts(o, "]}");
        } else {
            put_value(o, k, e->key, e->klen);
        }
    }
    ncd_sb_putc(o, ']');
}

static enum vkind kind_of_type(uint32_t type, uint32_t len)
{
    switch (type) { /* nftables' enum datatypes (src/datatype.h) */
    case 7: return V_IP4;
    case 8: return V_IP6;
    case 12: return V_PROTO;
    case 13: return V_BEINT; /* inet_service */
    case 19: return V_HOSTINT; /* mark */
    case 20: return V_IFINDEX;
    case 26: return V_CTSTATE;
    case 41: return V_IFNAME;
    default: return len <= 8 ? V_BEINT : V_HEX;
    }
}

/* ---- netlink ----------------------------------------------------------- */

static int dump_run(struct dump *d, uint16_t type, uint16_t family,
                    struct nftnl_set *s, mnl_cb_t cb)
{
    uint32_t seq = ++d->seq;
    struct nlmsghdr *nlh =
        nftnl_nlmsg_build_hdr(d->buf, type, family, NLM_F_DUMP, seq);
    if (s)
        nftnl_set_elems_nlmsg_build_payload(nlh, s);
    if (mnl_socket_sendto(d->nl, nlh, nlh->nlmsg_len) < 0)
        return -errno;
    for (;;) {
        ssize_t n = mnl_socket_recvfrom(d->nl, d->buf, d->bufsz);
        if (n < 0)
            return -errno;
        int r = mnl_cb_run(d->buf, (size_t)n, seq, d->portid, cb, d);
        if (r < 0)
            return errno ? -errno : -EIO;
        if (r == MNL_CB_STOP)
            return d->oom ? -ENOMEM : 0;
    }
}

static int on_table(const struct nlmsghdr *nlh, void *data)
{
    struct dump *d = data;
    struct nftnl_table *t = nftnl_table_alloc();
    if (!t || nftnl_table_nlmsg_parse(nlh, t) < 0) {
        nftnl_table_free(t);
        return t ? MNL_CB_OK : (d->oom = 1, MNL_CB_ERROR);
    }
    obj_sep(d);
    ncd_sb_printf(&d->out, "{\"table\":{\"family\":\"%s\",\"name\":",
                  family_name(nftnl_table_get_u32(t, NFTNL_TABLE_FAMILY)));
    js_str(&d->out, nftnl_table_get_str(t, NFTNL_TABLE_NAME));
    ncd_sb_printf(&d->out, ",\"handle\":%llu",
                  (unsigned long long)nftnl_table_get_u64(t, NFTNL_TABLE_HANDLE));
    if (nftnl_table_get_u32(t, NFTNL_TABLE_FLAGS) & NFT_TABLE_F_DORMANT)
        ncd_sb_puts(&d->out, ",\"flags\":\"dormant\"");
    ncd_sb_puts(&d->out, "}}");
    nftnl_table_free(t);
    return MNL_CB_OK;
}

static int on_chain(const struct nlmsghdr *nlh, void *data)
{
    struct dump *d = data;
    struct nftnl_chain *c = nftnl_chain_alloc();
    if (!c || nftnl_chain_nlmsg_parse(nlh, c) < 0) {
        nftnl_chain_free(c);
        return c ? MNL_CB_OK : (d->oom = 1, MNL_CB_ERROR);
    }
    uint32_t fam = nftnl_chain_get_u32(c, NFTNL_CHAIN_FAMILY);
    struct ncd_strbuf *o = &d->out;
    obj_sep(d);
    ncd_sb_printf(o, "{\"chain\":{\"family\":\"%s\",\"table\":",
                  family_name(fam));
    js_str(o, nftnl_chain_get_str(c, NFTNL_CHAIN_TABLE));
    ncd_sb_puts(o, ",\"name\":");
    js_str(o, nftnl_chain_get_str(c, NFTNL_CHAIN_NAME));
    ncd_sb_printf(o, ",\"handle\":%llu",
                  (unsigned long long)nftnl_chain_get_u64(c, NFTNL_CHAIN_HANDLE));
    if (nftnl_chain_is_set(c, NFTNL_CHAIN_HOOKNUM)) {
        if (nftnl_chain_is_set(c, NFTNL_CHAIN_TYPE)) {
            ncd_sb_puts(o, ",\"type\":");
            js_str(o, nftnl_chain_get_str(c, NFTNL_CHAIN_TYPE));
        }
        ncd_sb_printf(o, ",\"hook\":\"%s\",\"prio\":%d",
                      hook_name(fam, nftnl_chain_get_u32(c, NFTNL_CHAIN_HOOKNUM)),
                      nftnl_chain_get_s32(c, NFTNL_CHAIN_PRIO));
        if (nftnl_chain_is_set(c, NFTNL_CHAIN_POLICY))
            ncd_sb_printf(o, ",\"policy\":\"%s\"",
                          nftnl_chain_get_u32(c, NFTNL_CHAIN_POLICY) == NF_DROP
                              ? "drop" : "accept");
    }
    ncd_sb_puts(o, "}}");
    nftnl_chain_free(c);
    return MNL_CB_OK;
}

static char *xstrdup(struct dump *d, const char *s)
{
    char *r = strdup(s ? s : "");
    if (!r)
        d->oom = 1;
    return r;
}

static int on_set(const struct nlmsghdr *nlh, void *data)
{
    struct dump *d = data;
    struct nftnl_set *s = nftnl_set_alloc();
    if (!s || nftnl_set_nlmsg_parse(nlh, s) < 0) {
        nftnl_set_free(s);
        return s ? MNL_CB_OK : (d->oom = 1, MNL_CB_ERROR);
    }
    struct nset *n = calloc(1, sizeof *n);
    if (!n || (d->nsets == d->capsets &&
               !(d->sets = reallocarray(d->sets, d->capsets = d->capsets * 2 + 16,
                                        sizeof *d->sets)))) {
        free(n);
        nftnl_set_free(s);
        d->oom = 1;
        return MNL_CB_ERROR;
    }
    n->family = nftnl_set_get_u32(s, NFTNL_SET_FAMILY);
    n->flags = nftnl_set_get_u32(s, NFTNL_SET_FLAGS);
    n->key_type = nftnl_set_get_u32(s, NFTNL_SET_KEY_TYPE);
    n->key_len = nftnl_set_get_u32(s, NFTNL_SET_KEY_LEN);
    n->table = xstrdup(d, nftnl_set_get_str(s, NFTNL_SET_TABLE));
    n->name = xstrdup(d, nftnl_set_get_str(s, NFTNL_SET_NAME));
    d->sets[d->nsets++] = n;
    if (n->table && n->name) {
        unsigned h = set_hash(n->family, n->table, n->name);
        n->next = d->bucket[h];
        d->bucket[h] = n;
    }
    nftnl_set_free(s);
    return d->oom ? MNL_CB_ERROR : MNL_CB_OK;
}

static int on_elems(const struct nlmsghdr *nlh, void *data)
{
    struct dump *d = data;
    struct nset *n = d->cur;
    struct nftnl_set *s = nftnl_set_alloc();
    if (!s) {
        d->oom = 1;
        return MNL_CB_ERROR;
    }
    if (nftnl_set_elems_nlmsg_parse(nlh, s) < 0) {
        nftnl_set_free(s);
        return MNL_CB_OK;
    }
    struct nftnl_set_elems_iter *it = nftnl_set_elems_iter_create(s);
    struct nftnl_set_elem *e;
    while (it && (e = nftnl_set_elems_iter_next(it))) {
        uint32_t kl = 0, el = 0;
        const void *k = nftnl_set_elem_get(e, NFTNL_SET_ELEM_KEY, &kl);
        if (!k || kl == 0 || kl > 16)
            continue;
        if (n->n == n->cap) {
            struct elem *ne = reallocarray(n->e, n->cap * 2 + 16, sizeof *ne);
            if (!ne) {
                d->oom = 1;
                break;
            }
            n->e = ne;
            n->cap = n->cap * 2 + 16;
        }
        struct elem *x = &n->e[n->n++];
        memset(x, 0, sizeof *x);
        memcpy(x->key, k, kl);
        x->klen = kl;
        if (nftnl_set_elem_is_set(e, NFTNL_SET_ELEM_FLAGS))
            x->flags = nftnl_set_elem_get_u32(e, NFTNL_SET_ELEM_FLAGS);
        const void *ke = nftnl_set_elem_get(e, NFTNL_SET_ELEM_KEY_END, &el);
        if (ke && el == kl) {
            memcpy(x->kend, ke, kl);
            x->has_end = 1;
        }
    }
    nftnl_set_elems_iter_destroy(it);
    nftnl_set_free(s);
    return d->oom ? MNL_CB_ERROR : MNL_CB_OK;
}

static int read_elems(struct dump *d, struct nset *n)
{
    struct nftnl_set *s = nftnl_set_alloc();
    if (!s)
        return -ENOMEM;
    nftnl_set_set_str(s, NFTNL_SET_TABLE, n->table);
    nftnl_set_set_str(s, NFTNL_SET_NAME, n->name);
    nftnl_set_set_u32(s, NFTNL_SET_FAMILY, n->family);
    d->cur = n;
    int rc = dump_run(d, NFT_MSG_GETSETELEM, (uint16_t)n->family, s, on_elems);
    nftnl_set_free(s);
    return rc;
}

static void put_named_sets(struct dump *d)
{
    for (size_t i = 0; i < d->nsets; i++) {
        struct nset *n = d->sets[i];
        if (n->flags & NFT_SET_ANONYMOUS)
            continue;
        obj_sep(d);
        ncd_sb_printf(&d->out, "{\"set\":{\"family\":\"%s\",\"name\":",
                      family_name(n->family));
        js_str(&d->out, n->name);
        ncd_sb_puts(&d->out, ",\"table\":");
        js_str(&d->out, n->table);
        if (n->flags & NFT_SET_INTERVAL)
            ncd_sb_puts(&d->out, ",\"flags\":[\"interval\"]");
        if (n->n) {
            ncd_sb_puts(&d->out, ",\"elem\":");
            put_elems(&d->out, n, kind_of_type(n->key_type, n->key_len));
        }
        ncd_sb_puts(&d->out, "}}");
    }
}

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
    put_value(o, r->lower_kind, r->lower, r->lower_len);
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
            js_str(o, k);
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
            js_str(o, k);
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
            proto = l4_name(r->l4);
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
        put_value(o, k, g->mask, g->mlen);
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
        put_value(o, k, full, full_len);
        ncd_sb_printf(o, ",\"len\":%d}}", pfx);
    } else {
        put_value(o, k, v, vlen);
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
            put_value(o, k, v, l);
            ncd_sb_putc(o, ',');
            put_value(o, k, v2, l);
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
            put_value(o, r->lower_kind, r->lower, l);
            ncd_sb_putc(o, ',');
            put_value(o, r->lower_kind, v, l);
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
        struct nset *s = set ? set_find(r->d, r->table_family, r->table, set) : NULL;
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
            put_elems(o, s, k);
            ncd_sb_putc(o, '}');
        } else {
            char at[300];
            snprintf(at, sizeof at, "@%s", set ? set : "");
            js_str(o, at);
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
            js_str(o, nftnl_expr_get_str(e, NFTNL_EXPR_IMM_CHAIN));
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
        js_str(o, name);
        ncd_sb_puts(o, ":null}");
    }
    return 0;
}

static int on_rule(const struct nlmsghdr *nlh, void *data)
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
    obj_sep(d);
    ncd_sb_printf(o, "{\"rule\":{\"family\":\"%s\",\"table\":", family_name(r.family));
    js_str(o, r.table);
    ncd_sb_puts(o, ",\"chain\":");
    js_str(o, nftnl_rule_get_str(ru, NFTNL_RULE_CHAIN));
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

static void dump_free(struct dump *d)
{
    for (size_t i = 0; i < d->nsets; i++) {
        free(d->sets[i]->table);
        free(d->sets[i]->name);
        free(d->sets[i]->e);
        free(d->sets[i]);
    }
    free(d->sets);
    d->sets = NULL;
    d->nsets = d->capsets = 0;
    memset(d->bucket, 0, sizeof d->bucket);
    ncd_sb_release(&d->out);
    d->nobj = 0;
    d->oom = 0;
}

static int dump_all(struct dump *d)
{
    int rc;
    ncd_sb_puts(&d->out, "{\"nftables\":[");
    if ((rc = dump_run(d, NFT_MSG_GETTABLE, NFPROTO_UNSPEC, NULL, on_table)) ||
        (rc = dump_run(d, NFT_MSG_GETCHAIN, NFPROTO_UNSPEC, NULL, on_chain)) ||
        (rc = dump_run(d, NFT_MSG_GETSET, NFPROTO_UNSPEC, NULL, on_set)))
        return rc;
    for (size_t i = 0; i < d->nsets; i++)
        if (d->sets[i]->table && d->sets[i]->name &&
            (rc = read_elems(d, d->sets[i])))
            return rc;
    put_named_sets(d);
    if ((rc = dump_run(d, NFT_MSG_GETRULE, NFPROTO_UNSPEC, NULL, on_rule)))
        return rc;
    ncd_sb_puts(&d->out, "]}\n");
    return d->out.oom ? -ENOMEM : 0;
}

int ncd__nft_dump_json(struct ncd_ctx *ctx, char **buf, size_t *len)
{
    struct dump *d = calloc(1, sizeof *d);
    if (!d)
        return NCD_ENOMEM;
    d->ctx = ctx;
    d->bufsz = 32768; /* libmnl 1.0.5's MNL_SOCKET_DUMP_SIZE */
    d->buf = malloc(d->bufsz);
    d->nl = mnl_socket_open(NETLINK_NETFILTER);
    int rc = 0;
    if (!d->buf) {
        rc = NCD_ENOMEM;
    } else if (!d->nl || mnl_socket_bind(d->nl, 0, MNL_SOCKET_AUTOPID) < 0) {
        rc = ncd_fail(ctx, NCD_ESYS, "netlink (NETLINK_NETFILTER): %s",
                      strerror(errno));
    } else {
        d->portid = mnl_socket_get_portid(d->nl);
        int e = 0;
        /* a rule set changed during the dump ends it with EINTR: again */
        for (int tries = 0; tries < 3; tries++) {
            dump_free(d);
            if ((e = dump_all(d)) != -EINTR)
                break;
        }
        if (e == -ENOMEM)
            rc = NCD_ENOMEM;
        else if (e == -EPERM || e == -EACCES)
            rc = ncd_fail(ctx, NCD_EPERM,
                          "reading the nftables rule set needs CAP_NET_ADMIN");
        else if (e == -EPROTONOSUPPORT || e == -ENOENT)
            rc = ncd_fail(ctx, NCD_ENOENT, "no nftables in this kernel (%s)",
                          strerror(-e));
        else if (e)
            rc = ncd_fail(ctx, NCD_ESYS, "nftables netlink dump: %s", strerror(-e));
        else if (d->out.len > NFT_MAX_JSON)
            rc = ncd_fail(ctx, NCD_ERANGE,
                          "the nftables rule set is more than 16 MiB of JSON");
        else {
            *len = d->out.len;
            *buf = ncd_sb_detach(&d->out);
            if (!*buf)
                rc = NCD_ENOMEM;
        }
    }
    if (d->nl)
        mnl_socket_close(d->nl);
    dump_free(d);
    free(d->buf);
    free(d);
    return rc;
}
