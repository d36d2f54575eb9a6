/* SPDX-License-Identifier: MIT */
/* Context internals for the file layer (fs.c) and the system-operations
 * layer (src/lib/sys): tracing and per-context state.  Not public. */
#ifndef NCD_CTX_INTERNAL_H
#define NCD_CTX_INTERNAL_H

#include "ncd/ctx.h"

/* Reports one file access to the trace installed, if any. */
void ncd__ctx_fs_traced(struct ncd_ctx *ctx, enum ncd_fs_access what,
                        const char *path);

/* Brackets a system operation: accesses inside are traced as in_sysop. */
void ncd__ctx_sysop_enter(struct ncd_ctx *ctx);
void ncd__ctx_sysop_leave(struct ncd_ctx *ctx);

/* One slot of state owned by the sys layer (the record store); `release`
 * runs when the context is freed.  Returns the slot's current value. */
void *ncd__ctx_sys_state(const struct ncd_ctx *ctx);
void ncd__ctx_set_sys_state(struct ncd_ctx *ctx, void *state,
                            void (*release)(void *));

/* A second slot, for answers the sys layer computes once per context (the
 * libnccl.so.2 the loader would pick and its version): one malloc'ed block
 * the context frees with free(); setting it frees the previous one. */
void *ncd__ctx_sys_memo(const struct ncd_ctx *ctx);
void ncd__ctx_set_sys_memo(struct ncd_ctx *ctx, void *memo);

/* The per-context read cache (fs.c): one open per file and run.  Returns
 * the cache slot (NULL while empty); fs.c owns what it points to, the
 * context frees it with ncd__fs_cache_free(). */
struct ncd__fs_cache;
struct ncd__fs_cache **ncd__ctx_fs_cache(struct ncd_ctx *ctx);
void ncd__fs_cache_free(struct ncd__fs_cache *c);

#endif
