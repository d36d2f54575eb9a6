/* SPDX-License-Identifier: MIT */
/* Internals of the nftables netlink decoder (live_nft.c: dumps, tables,
 * chains, sets; live_nft_rule.c: rule expressions).  Not public. */
#ifndef NCD_NFT_INTERNAL_H
#define NCD_NFT_INTERNAL_H

#include "ncd/ctx.h"
#include "ncd/strbuf.h"

#include <libmnl/libmnl.h>
#include <stddef.h>
#include <stdint.h>

/* How a value reads (nft's datatypes, as far as the analysis needs). */
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

/* JSON string, escaped. */
void ncd__nft_str(struct ncd_strbuf *o, const char *s);
/* "inet", "ip", "ip6", ... */
const char *ncd__nft_family(uint32_t f);
/* "tcp", "udp", ... or NULL */
const char *ncd__nft_l4(unsigned p);
/* One value of `len` bytes as nft -j writes it. */
void ncd__nft_value(struct ncd_strbuf *o, enum vkind k, const uint8_t *d,
                    uint32_t len);
/* A set's elements as a JSON array (intervals as {"range":[a,b]}). */
void ncd__nft_elems(struct ncd_strbuf *o, struct nset *s, enum vkind k);
struct nset *ncd__nft_set_find(struct dump *d, uint32_t family,
                               const char *table, const char *name);
/* The comma between the top-level objects. */
void ncd__nft_obj_sep(struct dump *d);
/* The NFT_MSG_GETRULE dump callback: one {"rule": ...} object. */
int ncd__nft_on_rule(const struct nlmsghdr *nlh, void *data);

#endif
