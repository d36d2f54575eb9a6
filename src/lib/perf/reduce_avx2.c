/* SPDX-License-Identifier: MIT */
/* The reduction kernels for AVX2 + F16C (reduce_impl.h), compiled with
 * -mavx2 -mf16c on x86-64 (CMakeLists.txt); elsewhere there is none. */
#include "perf/reduce_impl.h"
#if defined(__x86_64__) && defined(__AVX2__) && defined(__F16C__)
#define KERN_TABLE ncd__reduce_avx2
#define KERN_NAME "avx2"
#include "perf/reduce_kern.h"
#else
const struct ncd__reduce_impl *const ncd__reduce_avx2 = NULL;
#endif
