/* SPDX-License-Identifier: MIT */
/* The reduction kernels for AVX-512 F/BW/VL (+ AVX2, F16C), 512-bit
 * vectors (reduce_impl.h), compiled with those -m flags on x86-64
 * (CMakeLists.txt); elsewhere there is none. */
#include "perf/reduce_impl.h"
#if defined(__x86_64__) && defined(__AVX512F__) && defined(__AVX512BW__) &&  \
    defined(__AVX512VL__) && defined(__F16C__)
#define KERN_TABLE ncd__reduce_avx512
#define KERN_NAME "avx512"
#include "perf/reduce_kern.h"
#else
const struct ncd__reduce_impl *const ncd__reduce_avx512 = NULL;
#endif
