/* SPDX-License-Identifier: MIT */
/*
 * bench/mpi_allreduce: the reference of bench/perf-socket.  Times
 * MPI_Allreduce (float, sum, out-of-place) over a size sweep as
 * nccl-tests' all_reduce_perf does: `-w` warm-up calls, then `-n` timed
 * calls between two barriers, the mean per call over ranks' maximum.
 * Prints one line per size on rank 0:
 *     SIZE_BYTES TIME_US ALGBW_GBS BUSBW_GBS
 * busbw = algbw x 2(n-1)/n (nccl-tests' all_reduce factor).
 *
 * usage: mpirun -np N mpi_allreduce [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS]
 *        [-w WARMUP]   (sizes in bytes, suffixes K M G)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static size_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    switch (*end) {
    case 'G': case 'g': v *= 1024.0; /* fall through */
    case 'M': case 'm': v *= 1024.0; /* fall through */
    case 'K': case 'k': v *= 1024.0; break;
    default: break;
    }
    return (size_t)v;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    size_t lo = 8, hi = 1 << 20;
    int factor = 2, iters = 20, warm = 5, c;
    while ((c = getopt(argc, argv, "b:e:f:n:w:")) != -1) {
        switch (c) {
        case 'b': lo = parse_size(optarg); break;
        case 'e': hi = parse_size(optarg); break;
        case 'f': factor = atoi(optarg); break;
        case 'n': iters = atoi(optarg); break;
        case 'w': warm = atoi(optarg); break;
        default:
            if (!rank)
                fprintf(stderr, "usage: mpi_allreduce [-b MIN] [-e MAX] "
                                "[-f FACTOR] [-n ITERS] [-w WARMUP]\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (factor < 2 || iters < 1 || warm < 0 || lo < 4 || hi < lo) {
        if (!rank)
            fprintf(stderr, "mpi_allreduce: bad arguments\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    float *sbuf = malloc(hi), *rbuf = malloc(hi);
    if (!sbuf || !rbuf)
        MPI_Abort(MPI_COMM_WORLD, 1);
    for (size_t i = 0; i < hi / sizeof(float); i++)
        sbuf[i] = (float)((i + (size_t)rank) % 64);
    memset(rbuf, 0, hi);
    for (size_t sz = lo; sz <= hi; sz *= (size_t)factor) {
        int count = (int)(sz / sizeof(float));
        for (int i = 0; i < warm; i++)
            MPI_Allreduce(sbuf, rbuf, count, MPI_FLOAT, MPI_SUM,
                          MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < iters; i++)
            MPI_Allreduce(sbuf, rbuf, count, MPI_FLOAT, MPI_SUM,
                          MPI_COMM_WORLD);
        double dt = (MPI_Wtime() - t0) / iters, mx;
        MPI_Reduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (!rank) {
            double algbw = (double)sz / mx / 1e9;
            printf("%zu %.2f %.4f %.4f\n", sz, mx * 1e6, algbw,
                   algbw * 2.0 * (n - 1) / n);
            fflush(stdout);
        }
    }
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
