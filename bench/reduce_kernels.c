/* SPDX-License-Identifier: MIT */
/*
 * Throughput of the socket backend's reduction kernels, per build
 * (src/lib/perf/reduce_impl.h), type and op, with float sum of the same
 * build as the reference measured in the same run.  Built and run by
 * bench/reduce-kernels.
 *
 * d = a OP b on n elements, in thread CPU time (so that a loaded machine
 * slows both sides alike), best of REPS repetitions of enough calls to
 * move >= 256 MiB.  Sizes: one socket chunk (256 KiB of output, cache
 * resident, what the ring reduces) and 64 MiB (DRAM).  Prints GB/s of
 * output and the ratio to float sum of the same build, in bytes and in
 * elements.
 *
 * usage: reduce_kernels [REPS] [BUILD...]   (default 5, every build)
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ncd/perf.h"
#include "perf/reduce_impl.h"

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* seconds per call, best of reps */
static double time_kernel(enum ncd_perf_dtype t, enum ncd_perf_op op,
                          void *d, const void *a, const void *b, size_t n,
                          int reps)
{
    size_t bytes = n * ncd_perf_dtype_size(t);
    size_t calls = (256u << 20) / bytes;
    if (calls < 2)
        calls = 2;
    double best = 1e30;
    ncd_perf_reduce(t, op, d, a, b, n, 0, 1); /* warm */
    for (int r = 0; r < reps; r++) {
        double t0 = cpu_now();
        for (size_t c = 0; c < calls; c++) {
            ncd_perf_reduce(t, op, d, a, b, n, 0, 1);
            __asm__ volatile("" ::: "memory");
        }
        double s = (cpu_now() - t0) / (double)calls;
        if (s < best)
            best = s;
    }
    return best;
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 5;
    if (reps < 1)
        reps = 1;
    const char *all[] = {"baseline", "avx2", "avx512"};
    const char **names = argc > 2 ? (const char **)argv + 2 : all;
    int nnames = argc > 2 ? argc - 2 : 3;
    static const size_t out_bytes[] = {256u << 10, 64u << 20};
    static const enum ncd_perf_dtype types[] = {
        NCD_DT_FLOAT,  NCD_DT_HALF,  NCD_DT_BFLOAT16, NCD_DT_DOUBLE,
        NCD_DT_INT8,   NCD_DT_INT32, NCD_DT_INT64};
    static const enum ncd_perf_op ops[] = {NCD_OP_SUM, NCD_OP_PROD,
                                           NCD_OP_MAX, NCD_OP_MULSUM};
    size_t maxb = out_bytes[1];
    char *a = aligned_alloc(64, maxb), *b = aligned_alloc(64, maxb),
         *d = aligned_alloc(64, maxb);
    if (!a || !b || !d)
        return 1;
    /* small exact values in every type: 1.0 / 0x3c00 / 0x3f80 / 1 */
    memset(a, 0, maxb);
    memset(b, 0, maxb);
    memset(d, 0, maxb);
    printf("%-8s %-9s %-7s %9s %10s %12s %10s %10s\n", "build", "type",
           "op", "size", "GB/s out", "Gelem/s", "x float B", "x float el");
    for (int k = 0; k < nnames; k++) {
        int rc = ncd__reduce_use(names[k]);
        if (rc) {
            printf("%-8s not supported here\n", names[k]);
            continue;
        }
        for (size_t s = 0; s < sizeof out_bytes / sizeof out_bytes[0]; s++) {
            double ref_bps = 0, ref_eps = 0;
            for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
                enum ncd_perf_dtype t = types[ti];
                size_t es = ncd_perf_dtype_size(t), n = out_bytes[s] / es;
                for (size_t oi = 0; oi < sizeof ops / sizeof ops[0]; oi++) {
                    if (t != NCD_DT_FLOAT && t != NCD_DT_HALF &&
                        t != NCD_DT_BFLOAT16 && ops[oi] != NCD_OP_SUM)
                        continue;
                    double sec = time_kernel(t, ops[oi], d, a, b, n, reps);
                    double bps = (double)out_bytes[s] / sec,
                           eps = (double)n / sec;
                    if (t == NCD_DT_FLOAT && ops[oi] == NCD_OP_SUM) {
                        ref_bps = bps;
                        ref_eps = eps;
                    }
                    printf("%-8s %-9s %-7s %8zuK %10.2f %12.3f %10.2f "
                           "%10.2f\n",
                           names[k], ncd_perf_dtype_name(t),
                           ncd_perf_op_name(ops[oi]), out_bytes[s] >> 10,
                           bps / 1e9, eps / 1e9,
                           ref_bps > 0 ? bps / ref_bps : 0,
                           ref_eps > 0 ? eps / ref_eps : 0);
                }
            }
        }
    }
    ncd__reduce_use(NULL);
    printf("automatic choice here: %s\n", ncd__reduce_current());
    free(a);
    free(b);
    free(d);
    return 0;
}
