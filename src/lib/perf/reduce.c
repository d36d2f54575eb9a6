/* SPDX-License-Identifier: MIT */
/*
 * Element-wise reduction kernels of the socket backend.
 *
 * gcc -O2 does not vectorise these loops (../shared/reference/limits.md:
 * scalar f32 a+=b runs at ~16 GB/s of output, AVX2 at 100-300 GB/s), so
 * this file is compiled at -O3 (pragma below) and every kernel is cloned
 * for Haswell (AVX2, F16C) and baseline x86-64, chosen at load time.
 * Signed integers are added and multiplied as unsigned (wrapping, no UB);
 * half and bfloat16 go through float with explicit conversions.
 */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3") /* clang vectorises at -O2 already */
#endif
#define _GNU_SOURCE
#include <string.h>
#include <time.h>

#include "ncd/perf.h"
#include "perf/perf_int.h"

#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
#define NCD_CLONES __attribute__((target_clones("arch=haswell", "default")))
#else
#define NCD_CLONES
#endif

#define SC ((unsigned)NCD_PERF_MULSUM_SCALAR)

#include "perf/half.h"

/* Scalar conversions (used by the data pattern). */
uint16_t ncd__f32_to_half(float f)
{
    return ncd__f2h(f);
}

float ncd__half_to_f32(uint16_t u)
{
    return ncd__h2f(u);
}

uint16_t ncd__f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: keep it quiet */
        return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float ncd__bf16_to_f32(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

NCD_CLONES void ncd__copy(void *dst, const void *src, size_t n)
{
    if (dst != src)
        memmove(dst, src, n);
}

/*
 * Integer kernels.  T = element type (signed or not), U = its unsigned
 * twin for wrapping arithmetic.
 */
#define INT_KERNELS(NAME, T, U)                                                \
    NCD_CLONES static void NAME##_sum(T *d, const T *a, const T *b, size_t n)  \
    {                                                                          \
        for (size_t i = 0; i < n; i++)                                         \
            d[i] = (T)(U)((U)a[i] + (U)b[i]);                                  \
    }                                                                          \
    NCD_CLONES static void NAME##_prod(T *d, const T *a, const T *b, size_t n) \
    {                                                                          \
        for (size_t i = 0; i < n; i++)                                         \
            d[i] = (T)(U)((U)a[i] * (U)b[i]);                                  \
    }                                                                          \
    NCD_CLONES static void NAME##_max(T *d, const T *a, const T *b, size_t n)  \
    {                                                                          \
        for (size_t i = 0; i < n; i++)                                         \
            d[i] = a[i] > b[i] ? a[i] : b[i];                                  \
    }                                                                          \
    NCD_CLONES static void NAME##_min(T *d, const T *a, const T *b, size_t n)  \
    {                                                                          \
        for (size_t i = 0; i < n; i++)                                         \
            d[i] = a[i] < b[i] ? a[i] : b[i];                                  \
    }                                                                          \
    NCD_CLONES static void NAME##_mulsum(T *d, const T *a, const T *b,         \
                                         size_t n, U sa, U sb)                 \
    {                                                                          \
        for (size_t i = 0; i < n; i++)                                         \
            d[i] = (T)(U)((U)a[i] * sa + (U)b[i] * sb);                        \
    }                                                                          \
    NCD_CLONES static void NAME##_div(T *d, const T *a, size_t n, T k)         \
    {                                                                          \
        for (size_t i = 0; i < n; i++)                                         \
            d[i] = (T)(a[i] / k);                                              \
    }                                                                          \
    NCD_CLONES static void NAME##_scale(T *d, const T *a, size_t n)            \
    {                                                                          \
        for (size_t i = 0; i < n; i++)                                         \
            d[i] = (T)(U)((U)a[i] * SC);                                       \
    }

INT_KERNELS(i8, int8_t, uint8_t)
INT_KERNELS(u8, uint8_t, uint8_t)
INT_KERNELS(i32, int32_t, uint32_t)
INT_KERNELS(u32, uint32_t, uint32_t)
INT_KERNELS(i64, int64_t, uint64_t)
INT_KERNELS(u64, uint64_t, uint64_t)

/* Floating kernels.  T storage type, C compute type, LD/ST conversions. */
#define FLT_KERNELS(NAME, T, C, LD, ST)                                        \
    NCD_CLONES static void NAME##_sum(T *d, const T *a, const T *b, size_t n)  \
    {                                                                          \
        for (size_t i = 0; i < n; i++)                                         \
            d[i] = ST(LD(a[i]) + LD(b[i]));                                    \
    }                                                                          \
    NCD_CLONES static void NAME##_prod(T *d, const T *a, const T *b, size_t n) \
    {                                                                          \
        for (size_t i = 0; i < n; i++)                                         \
            d[i] = ST(LD(a[i]) * LD(b[i]));                                    \
    }                                                                          \
    NCD_CLONES static void NAME##_max(T *d, const T *a, const T *b, size_t n)  \
    {                                                                          \
        for (size_t i = 0; i < n; i++) {                                       \
            C x = LD(a[i]), y = LD(b[i]);                                      \
            d[i] = ST(x > y ? x : y);                                          \
        }                                                                      \
    }                                                                          \
    NCD_CLONES static void NAME##_min(T *d, const T *a, const T *b, size_t n)  \
    {                                                                          \
        for (size_t i = 0; i < n; i++) {                                       \
            C x = LD(a[i]), y = LD(b[i]);                                      \
            d[i] = ST(x < y ? x : y);                                          \
        }                                                                      \
    }                                                                          \
    NCD_CLONES static void NAME##_mulsum(T *d, const T *a, const T *b,         \
                                         size_t n, C sa, C sb)                 \
    {                                                                          \
        for (size_t i = 0; i < n; i++)                                         \
            d[i] = ST(LD(a[i]) * sa + LD(b[i]) * sb);                          \
    }                                                                          \
    NCD_CLONES static void NAME##_div(T *d, const T *a, size_t n, C k)         \
    {                                                                          \
        for (size_t i = 0; i < n; i++)                                         \
            d[i] = ST(LD(a[i]) / k);                                           \
    }                                                                          \
    NCD_CLONES static void NAME##_scale(T *d, const T *a, size_t n)            \
    {                                                                          \
        for (size_t i = 0; i < n; i++)                                         \
            d[i] = ST(LD(a[i]) * (C)SC);                                       \
    }

#define ID(x) (x)
static inline float bf_ld(uint16_t b)
{
    union {
        uint32_t u;
        float f;
    } v = {.u = (uint32_t)b << 16};
    return v.f;
}
static inline uint16_t bf_st(float f)
{
    union {
        uint32_t u;
        float f;
    } v = {.f = f};
    /* values here are never NaN (see ncd_perf_fill); round to nearest even */
    return (uint16_t)((v.u + 0x7fffu + ((v.u >> 16) & 1u)) >> 16);
}

FLT_KERNELS(f32, float, float, ID, ID)
FLT_KERNELS(f64, double, double, ID, ID)
FLT_KERNELS(f16, uint16_t, float, ncd__h2f, ncd__f2h)
FLT_KERNELS(bf16, uint16_t, float, bf_ld, bf_st)

#define DISPATCH(NAME, T, C)                                                   \
    do {                                                                       \
        T *d_ = dst;                                                           \
        const T *a_ = a, *b_ = b;                                              \
        switch (op) {                                                          \
        case NCD_OP_PROD:                                                      \
            NAME##_prod(d_, a_, b_, n);                                        \
            break;                                                             \
        case NCD_OP_MAX:                                                       \
            NAME##_max(d_, a_, b_, n);                                         \
            break;                                                             \
        case NCD_OP_MIN:                                                       \
            NAME##_min(d_, a_, b_, n);                                         \
            break;                                                             \
        case NCD_OP_MULSUM:                                                    \
            if (scale_a || scale_b) {                                          \
                NAME##_mulsum(d_, a_, b_, n, (C)(scale_a ? SC : 1),            \
                              (C)(scale_b ? SC : 1));                          \
                break;                                                         \
            }                                                                  \
            /* fall through */                                                 \
        default:                                                               \
            NAME##_sum(d_, a_, b_, n);                                         \
            break;                                                             \
        }                                                                      \
    } while (0)

void ncd_perf_reduce(enum ncd_perf_dtype t, enum ncd_perf_op op, void *dst,
                     const void *a, const void *b, size_t n, int scale_a,
                     int scale_b)
{
    switch (t) {
    case NCD_DT_INT8:
        DISPATCH(i8, int8_t, uint8_t);
        break;
    case NCD_DT_UINT8:
        DISPATCH(u8, uint8_t, uint8_t);
        break;
    case NCD_DT_INT32:
        DISPATCH(i32, int32_t, uint32_t);
        break;
    case NCD_DT_UINT32:
        DISPATCH(u32, uint32_t, uint32_t);
        break;
    case NCD_DT_INT64:
        DISPATCH(i64, int64_t, uint64_t);
        break;
    case NCD_DT_UINT64:
        DISPATCH(u64, uint64_t, uint64_t);
        break;
    case NCD_DT_HALF:
        DISPATCH(f16, uint16_t, float);
        break;
    case NCD_DT_FLOAT:
        DISPATCH(f32, float, float);
        break;
    case NCD_DT_DOUBLE:
        DISPATCH(f64, double, double);
        break;
    case NCD_DT_BFLOAT16:
        DISPATCH(bf16, uint16_t, float);
        break;
    default:
        break; /* fp8 is not reduced on the host */
    }
}

#define FINISH(NAME, T, C)                                                     \
    do {                                                                       \
        if (op == NCD_OP_AVG)                                                  \
            NAME##_div((T *)dst, (const T *)src, n, (C)nranks);                \
        else if (op == NCD_OP_MULSUM && scale)                                 \
            NAME##_scale((T *)dst, (const T *)src, n);                         \
        else if (dst != src)                                                   \
            memmove(dst, src, n * sizeof(T));                                  \
    } while (0)

void ncd_perf_reduce_finish(enum ncd_perf_dtype t, enum ncd_perf_op op,
                            void *dst, const void *src, size_t n, int nranks,
                            int scale)
{
    switch (t) {
    case NCD_DT_INT8:
        FINISH(i8, int8_t, int8_t);
        break;
    case NCD_DT_UINT8:
        FINISH(u8, uint8_t, uint8_t);
        break;
    case NCD_DT_INT32:
        FINISH(i32, int32_t, int32_t);
        break;
    case NCD_DT_UINT32:
        FINISH(u32, uint32_t, uint32_t);
        break;
    case NCD_DT_INT64:
        FINISH(i64, int64_t, int64_t);
        break;
    case NCD_DT_UINT64:
        FINISH(u64, uint64_t, uint64_t);
        break;
    case NCD_DT_HALF:
        FINISH(f16, uint16_t, float);
        break;
    case NCD_DT_FLOAT:
        FINISH(f32, float, float);
        break;
    case NCD_DT_DOUBLE:
        FINISH(f64, double, double);
        break;
    case NCD_DT_BFLOAT16:
        FINISH(bf16, uint16_t, float);
        break;
    default:
        if (dst != src)
            memmove(dst, src, n);
        break;
    }
}
