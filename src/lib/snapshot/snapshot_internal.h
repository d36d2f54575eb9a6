/* SPDX-License-Identifier: MIT */
/* The component fill functions (src/lib/snapshot/comp_*.c), registered in
 * components.def.  Not public. */
#ifndef NCD_SNAPSHOT_INTERNAL_H
#define NCD_SNAPSHOT_INTERNAL_H

#include "ncd/node.h"

#define NCD_COMPONENT(part, requires, fill)                                   \
    int fill(struct ncd_ctx *ctx, const struct ncd_node_opts *o,              \
             struct ncd_node *n);
#include "snapshot/components.def"
#undef NCD_COMPONENT

/* Appends a malloc'ed copy of "file: line" to a string list. */
int ncd__strlist_add(char ***v, size_t *n, const char *s);

#endif
