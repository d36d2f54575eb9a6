/* SPDX-License-Identifier: MIT */
/*
 * The process group's function table (internal).  struct ncd_pg is the
 * common part; an implementation embeds it first in its own struct and
 * fills `ops`.  pg.c checks arguments, counts rounds and dispatches.
 */
#ifndef NCD_PG_INT_H
#define NCD_PG_INT_H

#include <stdatomic.h>
#include <stdint.h>

#include "ncd/pg.h"

struct ncd_pg_ops {
    const char *name; /* "single", "tcp", "mpi" */
    /* nprocs > 1; len <= NCD_PG_MAX_BLOB; pg->round already advanced */
    int (*allgather)(struct ncd_ctx *ctx, struct ncd_pg *pg,
                     const void *mine, size_t len, void *all);
    /* releases the implementation's part (the common part is freed by
     * ncd_pg_free()); may be NULL */
    void (*release)(struct ncd_pg *pg);
};

struct ncd_pg {
    const struct ncd_pg_ops *ops;
    int nprocs, proc;
    uint64_t token;
    uint32_t round;     /* allgathers so far, checked by the tcp frames */
    int timeout_ms;
    const atomic_int *abort_flag;
    char local_addr[64];
};

/* A random non-zero job token (getrandom, else pid and clock). */
uint64_t ncd__pg_draw_token(void);

/* Fills the common part of a new group. */
void ncd__pg_init(struct ncd_pg *pg, const struct ncd_pg_ops *ops, int nprocs,
                  int proc, uint64_t token);

#endif
