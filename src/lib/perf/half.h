/* SPDX-License-Identifier: MIT */
/* IEEE binary16 <-> binary32 conversions, header-only so that the test-only
 * fake libnccl (tests/perf/fake_nccl.c) uses the very same code as the
 * socket backend's kernels. */
#ifndef NCD_PERF_HALF_H
#define NCD_PERF_HALF_H

#include <stdint.h>
#include <string.h>

/*
 * IEEE binary16 <-> binary32, round to nearest even, written out in
 * integer arithmetic so it builds with any compiler (_Float16 is not
 * available everywhere, e.g. clang before 15 on x86-64).  They give the
 * same bits as x86's F16C instructions (vcvtph2ps, vcvtps2ph with round
 * to nearest even) for every input, NaNs included, so vector and scalar
 * kernels agree (tests/unit/test_reduce.c checks all 2^16 halves and a
 * sample of floats against the hardware).
 */
static inline float ncd__h2f(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, u;
    float f;
    if (exp == 0) {
        f = (float)man * 0x1p-24f; /* zero or subnormal: exact */
        memcpy(&u, &f, 4);
        u |= sign;
    } else if (exp == 31) { /* inf; a NaN comes out quiet, as F16C's */
        u = sign | 0x7f800000u | (man << 13) | (man ? 0x400000u : 0);
    } else {
        u = sign | ((exp + 112) << 23) | (man << 13);
    }
    memcpy(&f, &u, 4);
    return f;
}

static inline uint16_t ncd__f2h(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    if (a > 0x7f800000u) /* NaN: quiet, the payload's top bits (F16C) */
        return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x47800000u) /* >= 65536 and inf */
        return (uint16_t)(sign | 0x7c00u);
    if (a < 0x38800000u) { /* below 2^-14: subnormal half */
        float v;
        memcpy(&v, &a, 4);
        v *= 0x1p24f;                        /* 0 .. 1024 */
        v = (v + 8388608.0f) - 8388608.0f;   /* round to nearest even */
        return (uint16_t)(sign | (uint32_t)v);
    }
    uint32_t h = ((a >> 23) - 112) << 10 | ((a >> 13) & 0x3ffu);
    uint32_t rem = a & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
        h++; /* may carry into the exponent, up to inf: correct */
    return (uint16_t)(sign | h);
}

#endif
