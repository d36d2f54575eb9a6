/* SPDX-License-Identifier: MIT */
/*
 * Process group over MPI (built with -DNCD_WITH_MPI=ON): MPI_Allgather on
 * MPI_COMM_WORLD, local index from MPI_Comm_split_type(SHARED), job token
 * drawn by rank 0 and broadcast.  Only one thread per process calls MPI
 * (MPI_THREAD_FUNNELED is enough).
 */
#define _GNU_SOURCE
#include <stdlib.h>

#include "ncd/ctx.h"
#include "ncd/error.h"
#include "ncd/perf.h"
#include "perf/net_int.h"

#ifdef NCD_WITH_MPI
#include <mpi.h>
#include <sys/random.h>

static int we_initialised;

int ncd__pg_mpi_allgather(struct ncd_pg *pg, const void *mine, size_t len,
                          void *all);
void ncd__pg_mpi_free(struct ncd_pg *pg);

int ncd__pg_mpi_allgather(struct ncd_pg *pg, const void *mine, size_t len,
                          void *all)
{
    (void)pg;
    return MPI_Allgather(mine, (int)len, MPI_BYTE, all, (int)len, MPI_BYTE,
                         MPI_COMM_WORLD) == MPI_SUCCESS
               ? 0
               : -1;
}

void ncd__pg_mpi_free(struct ncd_pg *pg)
{
    (void)pg;
    int fin = 0;
    MPI_Finalized(&fin);
    if (we_initialised && !fin)
        MPI_Finalize();
    we_initialised = 0;
}

int ncd__pg_mpi_local(int *local_rank);
int ncd__pg_mpi_local(int *local_rank)
{
    MPI_Comm node;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0,
                            MPI_INFO_NULL, &node) != MPI_SUCCESS)
        return -1;
    MPI_Comm_rank(node, local_rank);
    MPI_Comm_free(&node);
    return 0;
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
    uint64_t token = 0;
    if (rank == 0 && getrandom(&token, sizeof token, 0) != sizeof token)
        token = 0x6e63642d6d706921ull;
    MPI_Bcast(&token, 8, MPI_BYTE, 0, MPI_COMM_WORLD);
    struct ncd_pg *pg = ncd__pg_new_kind(2, size, rank, token);
    if (!pg)
        return NCD_ENOMEM;
    *out = pg;
    return 0;
}
#else
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
