/* SPDX-License-Identifier: MIT */
/* Internal helpers of the perf library (not installed). */
#ifndef NCD_PERF_INT_H
#define NCD_PERF_INT_H

#include <stddef.h>
#include <stdint.h>

#include "ncd/perf.h"

/* IEEE half / bfloat16 <-> float, round to nearest even. */
uint16_t ncd__f32_to_half(float f);
float ncd__half_to_f32(uint16_t h);
uint16_t ncd__f32_to_bf16(float f);
float ncd__bf16_to_f32(uint16_t b);

/* Copies n bytes with the vectorised kernel (large copies). */
void ncd__copy(void *dst, const void *src, size_t n);

#endif
