/* SPDX-License-Identifier: MIT */
/* The built-in known bugs: data/nccl-known-bugs.yaml compiled into C tables
 * by src/gen/catgen.c (gen/ncd_catalogs.c).  Kept apart from knownbugs.c
 * because catgen itself links the loader without the tables. */
#include "ncd/knownbugs.h"

extern const struct ncd_known_bugs ncd__builtin_bugs;

int ncd_known_bugs_builtin(struct ncd_ctx *ctx, struct ncd_known_bugs *out)
{
    (void)ctx;
    *out = ncd__builtin_bugs;
    return 0;
}
