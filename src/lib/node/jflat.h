/* SPDX-License-Identifier: MIT */
/* A flat, read-only JSON document for large inputs read once (the
 * nftables rule set, src/lib/node/ports.c): one array of nodes in document
 * order and one arena of unescaped strings, two allocations in all, where
 * jansson makes a hashtable per object (2,000 nft rules: ~8 ms of malloc
 * and hashing against ~1 ms here).  Not public. */
#ifndef NCD_JFLAT_H
#define NCD_JFLAT_H

#include <stddef.h>

enum { JF_NULL = 1, JF_BOOL, JF_INT, JF_REAL, JF_STR, JF_ARR, JF_OBJ };

struct jf_node {
    unsigned char type;
    unsigned next;   /* index just past this node's subtree */
    const char *key; /* name within the parent object, else NULL */
    const char *s;   /* JF_STR: unescaped, NUL-terminated (arena) */
    long long i;     /* JF_INT value, JF_BOOL 0/1 */
};

/* Node 0 is "none": every lookup that fails gives 0, and 0 has no type,
 * no children and no string, so lookups chain without checks. */
struct jf {
    struct jf_node *n;
    size_t count, cap;
    char *arena;
    size_t used;
};

/* Parses buf[0..len).  Root is node 1.  @return 0, -1 malformed or nested
 * deeper than 64, -2 out of memory (doc is freed either way on failure). */
int ncd__jf_parse(struct jf *doc, const char *buf, size_t len);
void ncd__jf_free(struct jf *doc);
/* Member `key` of object i, or 0. */
unsigned ncd__jf_get(const struct jf *d, unsigned i, const char *key);
/* First child of array/object i, or 0; the child after k in i, or 0. */
unsigned ncd__jf_first(const struct jf *d, unsigned i);
unsigned ncd__jf_next(const struct jf *d, unsigned i, unsigned k);
/* The string value of i, or NULL. */
const char *ncd__jf_str(const struct jf *d, unsigned i);
/* Number of children of array/object i. */
size_t ncd__jf_size(const struct jf *d, unsigned i);

#define JF_TYPE(d, i) ((d)->n[(i)].type)

#endif
