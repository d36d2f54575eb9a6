/* SPDX-License-Identifier: MIT */
/*
 * The MPI process group (include/ncd/pg.h): MPI_Allgather on
 * MPI_COMM_WORLD, the job token drawn by rank 0 and broadcast.  Only one
 * thread per process calls MPI (MPI_THREAD_FUNNELED is enough).
 *
 * This file is compiled twice: into libncd as configured, and with
 * NCD_WITH_MPI=1 into the MPI-enabled test twin of the CLI
 * (tests/perf/tests.cmake), whose copy then replaces libncd's.  Both
 * variants must therefore define the same external symbols.
 */
#define _GNU_SOURCE
#include <stdlib.h>

#include "ncd/ctx.h"
#include "ncd/error.h"
#include "pg/pg_int.h"

#ifdef NCD_WITH_MPI
#include <mpi.h>

static int we_initialised;

static int mpi_allgather(struct ncd_ctx *ctx, struct ncd_pg *pg,
                         const void *mine, size_t len, void *all)
{
    (void)pg;
    if (MPI_Allgather(mine, (int)len, MPI_BYTE, all, (int)len, MPI_BYTE,
                      MPI_COMM_WORLD) != MPI_SUCCESS)
        return ncd_fail(ctx, NCD_EPEER, "MPI_Allgather failed");
    return 0;
}

static void mpi_release(struct ncd_pg *pg)
{
    (void)pg;
    int fin = 0;
    MPI_Finalized(&fin);
    if (we_initialised && !fin)
        MPI_Finalize();
    we_initialised = 0;
}

static const struct ncd_pg_ops mpi_ops = {
    .name = "mpi",
    .allgather = mpi_allgather,
    .release = mpi_release,
};

int ncd_pg_mpi_available(void)
{
    return 1;
}

int ncd_pg_mpi(struct ncd_ctx *ctx, int *argc, char ***argv,
               struct ncd_pg **out)
{
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) {
        int provided;
        if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) !=
            MPI_SUCCESS)
            return ncd_fail(ctx, NCD_ESYS, "MPI_Init_thread failed");
        we_initialised = 1;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    uint64_t token = rank == 0 ? ncd__pg_draw_token() : 0;
    MPI_Bcast(&token, 8, MPI_BYTE, 0, MPI_COMM_WORLD);
    struct ncd_pg *pg = calloc(1, sizeof *pg);
    if (!pg)
        return NCD_ENOMEM;
    ncd__pg_init(pg, &mpi_ops, size, rank, token);
    *out = pg;
    return 0;
}
#else
int ncd_pg_mpi_available(void)
{
    return 0;
}

int ncd_pg_mpi(struct ncd_ctx *ctx, int *argc, char ***argv,
               struct ncd_pg **out)
{
    (void)argc;
    (void)argv;
    (void)out;
    return ncd_fail(ctx, NCD_EUNSUPPORTED,
                    "nccl-doctor was built without MPI (configure with "
                    "-DNCD_WITH_MPI=ON)");
}
#endif
