/* SPDX-License-Identifier: MIT */
/*
 * The reduction kernels of the socket backend come in several builds of
 * one source (reduce_kern.h): baseline x86-64 / any architecture
 * (reduce_baseline.c), AVX2 + FMA + F16C (reduce_avx2.c) and AVX-512 F/BW/VL
 * (reduce_avx512.c), each compiled with its own instruction-set flags
 * (CMakeLists.txt).  reduce.c picks the best one the CPU and the OS support
 * once, from CPUID feature bits (not the CPU model, which is what GCC's
 * target_clones("arch=...") resolver tests), and calls it through this
 * table.  Every build gives bit-identical results (tests/unit/
 * test_reduce.c): no FMA contraction (-ffp-contract=off), IEEE division,
 * the same NaN rules in the scalar and vector half/bfloat16 conversions.
 * Internal.
 */
#ifndef NCD_PERF_REDUCE_IMPL_H
#define NCD_PERF_REDUCE_IMPL_H

#include <stddef.h>

#include "ncd/perf.h"

struct ncd__reduce_impl {
    const char *name; /* "baseline", "avx2", "avx512" */
    /* ncd_perf_reduce() and ncd_perf_reduce_finish() (include/ncd/perf.h)
     * for every non-fp8 type */
    void (*reduce)(enum ncd_perf_dtype t, enum ncd_perf_op op, void *dst,
                   const void *a, const void *b, size_t n, int scale_a,
                   int scale_b);
    void (*finish)(enum ncd_perf_dtype t, enum ncd_perf_op op, void *dst,
                   const void *src, size_t n, int nranks, int scale);
};

/* The builds; NULL where this architecture has none (reduce_avx2.c and
 * reduce_avx512.c other than on x86-64). */
extern const struct ncd__reduce_impl *const ncd__reduce_baseline;
extern const struct ncd__reduce_impl *const ncd__reduce_avx2;
extern const struct ncd__reduce_impl *const ncd__reduce_avx512;

/*
 * TEST AND BENCHMARK ONLY: makes every later ncd_perf_reduce() /
 * ncd_perf_reduce_finish() of this process use the build named `name`
 * ("baseline", "avx2", "avx512"), or the automatic choice again when name is
 * NULL or "auto".  Not thread-safe against running reductions.
 * @return 0; NCD_EUNSUPPORTED when this CPU (or OS: XSAVE state) cannot run
 *         that build or it was not compiled in; NCD_EINVAL for an unknown
 *         name.
 */
int ncd__reduce_use(const char *name);
/* The name of the build in use ("baseline", "avx2", "avx512"). */
const char *ncd__reduce_current(void);
/* 1 when this CPU and OS can run the build `name` and it is compiled in. */
int ncd__reduce_supported(const char *name);

#endif
