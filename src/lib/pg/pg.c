/* SPDX-License-Identifier: MIT */
/* Process group: the common part and the dispatch (include/ncd/pg.h). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "ncd/error.h"
#include "ncd/sock.h"
#include "pg/pg_int.h"

uint64_t ncd__pg_draw_token(void)
{
    uint64_t t = 0;
    if (getrandom(&t, sizeof t, 0) != sizeof t)
        t = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull ^
            (uint64_t)(ncd_sock_now() * 1e9);
    return t ? t : 1;
}

void ncd__pg_init(struct ncd_pg *pg, const struct ncd_pg_ops *ops, int nprocs,
                  int proc, uint64_t token)
{
    pg->ops = ops;
    pg->nprocs = nprocs;
    pg->proc = proc;
    pg->token = token;
    pg->timeout_ms = 60000;
}

static const struct ncd_pg_ops single_ops = {.name = "single"};

int ncd_pg_single(struct ncd_pg **out)
{
    struct ncd_pg *pg = calloc(1, sizeof *pg);
    if (!pg)
        return NCD_ENOMEM;
    ncd__pg_init(pg, &single_ops, 1, 0, ncd__pg_draw_token());
    *out = pg;
    return 0;
}

const char *ncd_pg_kind(const struct ncd_pg *pg)
{
    return pg->ops->name;
}

int ncd_pg_nprocs(const struct ncd_pg *pg)
{
    return pg->nprocs;
}

int ncd_pg_proc(const struct ncd_pg *pg)
{
    return pg->proc;
}

uint64_t ncd_pg_token(const struct ncd_pg *pg)
{
    return pg->token;
}

const char *ncd_pg_local_addr(const struct ncd_pg *pg)
{
    return pg->local_addr;
}

void ncd_pg_set_abort(struct ncd_pg *pg, const atomic_int *flag)
{
    if (pg)
        pg->abort_flag = flag;
}

void ncd_pg_set_timeout(struct ncd_pg *pg, int timeout_ms)
{
    if (pg && timeout_ms > 0)
        pg->timeout_ms = timeout_ms;
}

int ncd_pg_allgather(struct ncd_ctx *ctx, struct ncd_pg *pg, const void *mine,
                     size_t len, void *all)
{
    if (len > NCD_PG_MAX_BLOB)
        return ncd_fail(ctx, NCD_EINVAL, "allgather of %zu bytes is too big",
                        len);
    pg->round++;
    if (pg->nprocs == 1 || !pg->ops->allgather) {
        memcpy(all, mine, len);
        return 0;
    }
    return pg->ops->allgather(ctx, pg, mine, len, all);
}

int ncd_pg_barrier(struct ncd_ctx *ctx, struct ncd_pg *pg)
{
    char c = 0;
    char *all = malloc((size_t)pg->nprocs);
    if (!all)
        return NCD_ENOMEM;
    int rc = ncd_pg_allgather(ctx, pg, &c, 1, all);
    free(all);
    return rc;
}

void ncd_pg_free(struct ncd_pg *pg)
{
    if (!pg)
        return;
    if (pg->ops->release)
        pg->ops->release(pg);
    free(pg);
}
