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
#include "sys/nft_internal.h"

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

void ncd__nft_str(struct ncd_strbuf *o, const char *s)
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

const char *ncd__nft_family(uint32_t f)
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

const char *ncd__nft_l4(unsigned p)
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

void ncd__nft_value(struct ncd_strbuf *o, enum vkind k, const uint8_t *d,
                      uint32_t len)
{
    char a[INET6_ADDRSTRLEN];
    uint32_t u = 0;
    if (k == V_IP4 && len == 4 && inet_ntop(AF_INET, d, a, sizeof a)) {
        ncd__nft_str(o, a);
        return;
    }
    if (k == V_IP6 && len == 16 && inet_ntop(AF_INET6, d, a, sizeof a)) {
        ncd__nft_str(o, a);
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
        ncd__nft_str(o, n);
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
    if (k == V_PROTO && ncd__nft_l4((unsigned)v)) {
        ncd__nft_str(o, ncd__nft_l4((unsigned)v));
    } else if (k == V_NFPROTO && (v == NFPROTO_IPV4 || v == NFPROTO_IPV6)) {
        ncd__nft_str(o, v == NFPROTO_IPV4 ? "ipv4" : "ipv6");
    } else if (k == V_IFINDEX) {
        char n[IF_NAMESIZE];
        if (if_indextoname((unsigned)v, n))
            ncd__nft_str(o, n);
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
                ncd__nft_str(o, st[i].n);
            }
        if (n != 1)
            ncd_sb_putc(o, ']');
    } else {
        ncd_sb_printf(o, "%llu", (unsigned long long)v);
    }
}

/* ---- sets -------------------------------------------------------------- */

static unsigned set_hash(uint32_t family, const char *table, const char *name)
{
    unsigned h = 2166136261u ^ family;
    for (const char *p = table; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    for (const char *p = name; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    return h % SET_BUCKETS;
}

struct nset *ncd__nft_set_find(struct dump *d, uint32_t family,
                             const char *table, const char *name)
{
    for (struct nset *s = d->bucket[set_hash(family, table, name)]; s;
         s = s->next)
        if (s->family == family && !strcmp(s->name, name) &&
            !strcmp(s->table, table))
            return s;
    return NULL;
}

void ncd__nft_obj_sep(struct dump *d)
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
void ncd__nft_elems(struct ncd_strbuf *o, struct nset *s, enum vkind k)
{
    ncd_sb_putc(o, '[');
    int first = 1;
    if (s->n)
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
            ncd__nft_value(o, k, e->key, e->klen);
            ncd_sb_putc(o, ',');
            ncd__nft_value(o, k, hi, e->klen);
            ncd_sb_puts(o, "]}");
        } else {
            ncd__nft_value(o, k, e->key, e->klen);
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
    ncd__nft_obj_sep(d);
    ncd_sb_printf(&d->out, "{\"table\":{\"family\":\"%s\",\"name\":",
                  ncd__nft_family(nftnl_table_get_u32(t, NFTNL_TABLE_FAMILY)));
    ncd__nft_str(&d->out, nftnl_table_get_str(t, NFTNL_TABLE_NAME));
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
    ncd__nft_obj_sep(d);
    ncd_sb_printf(o, "{\"chain\":{\"family\":\"%s\",\"table\":",
                  ncd__nft_family(fam));
    ncd__nft_str(o, nftnl_chain_get_str(c, NFTNL_CHAIN_TABLE));
    ncd_sb_puts(o, ",\"name\":");
    ncd__nft_str(o, nftnl_chain_get_str(c, NFTNL_CHAIN_NAME));
    ncd_sb_printf(o, ",\"handle\":%llu",
                  (unsigned long long)nftnl_chain_get_u64(c, NFTNL_CHAIN_HANDLE));
    if (nftnl_chain_is_set(c, NFTNL_CHAIN_HOOKNUM)) {
        if (nftnl_chain_is_set(c, NFTNL_CHAIN_TYPE)) {
            ncd_sb_puts(o, ",\"type\":");
            ncd__nft_str(o, nftnl_chain_get_str(c, NFTNL_CHAIN_TYPE));
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
        ncd__nft_obj_sep(d);
        ncd_sb_printf(&d->out, "{\"set\":{\"family\":\"%s\",\"name\":",
                      ncd__nft_family(n->family));
        ncd__nft_str(&d->out, n->name);
        ncd_sb_puts(&d->out, ",\"table\":");
        ncd__nft_str(&d->out, n->table);
        if (n->flags & NFT_SET_INTERVAL)
            ncd_sb_puts(&d->out, ",\"flags\":[\"interval\"]");
        if (n->n) {
            ncd_sb_puts(&d->out, ",\"elem\":");
            ncd__nft_elems(&d->out, n, kind_of_type(n->key_type, n->key_len));
        }
        ncd_sb_puts(&d->out, "}}");
    }
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
    if ((rc = dump_run(d, NFT_MSG_GETRULE, NFPROTO_UNSPEC, NULL, ncd__nft_on_rule)))
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
