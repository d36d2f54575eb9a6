/* SPDX-License-Identifier: MIT */
/* The built-in NCCL variable catalog: data/nccl-vars.yaml compiled into C
 * tables by src/gen/catgen.c (gen/ncd_catalogs.c).  Kept apart from
 * ncclvars.c because catgen itself links the loader without the tables. */

#include "ncd/ncclvars.h"

extern const struct ncd_var_catalog ncd__builtin_vars;

int ncd_var_catalog_builtin(struct ncd_ctx *ctx, struct ncd_var_catalog *out)
{
    (void)ctx;
    *out = ncd__builtin_vars;
    return 0;
}
