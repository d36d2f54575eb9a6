/* SPDX-License-Identifier: MIT */
/* The reduction kernels for the compiler's baseline instruction set
 * (x86-64: SSE2), the fallback of reduce.c (reduce_impl.h). */
#define KERN_TABLE ncd__reduce_baseline
#define KERN_NAME "baseline"
#include "perf/reduce_kern.h"
