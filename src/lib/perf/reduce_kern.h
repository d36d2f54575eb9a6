/* SPDX-License-Identifier: MIT */
/*
 * The element-wise reduction kernels, compiled once per instruction set
 * (reduce_impl.h): the including file defines KERN_TABLE (the name of
 * the pointer to its table) and KERN_NAME (the build's name) and is compiled with -O3
 * -ffp-contract=off and its -m flags (CMakeLists.txt).
 *
 * Integer, float and double loops are left to the compiler's vectoriser
 * (gcc -O2 does not vectorise them: ../shared/reference/limits.md, scalar
 * f32 a+=b runs at ~16 GB/s of output, AVX2 at 100-300 GB/s).  Signed
 * integers are added and multiplied as unsigned (wrapping, no UB).  half
 * and bfloat16 compute in float: with F16C / AVX-512 the conversions are
 * the hardware's (vcvtph2ps / vcvtps2ph, round to nearest even) on 8 or 16
 * elements at a time, and the scalar tail uses half.h's conversions, which
 * give the same bits for every input (NaNs included: quiet, payload kept
 * where it fits).  bfloat16 is the upper half of a float, rounded to
 * nearest even, a NaN kept quiet (ncd__f32_to_bf16()); the vector builds
 * convert it in integer registers, 2 x KV elements a step (kv_ld_b2,
 * kv_rnd_b, kv_st_b2): a shift or a mask widens, the rounding is adds and
 * compares, a shift and a 16-bit blend narrow, no scalar conversion.
 */
#ifndef KERN_TABLE
#error "define KERN_TABLE and KERN_NAME before including reduce_kern.h"
#endif

#include <stdint.h>
#include <string.h>

#include "ncd/perf.h"
#include "perf/half.h"
#include "perf/reduce_impl.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#include <immintrin.h>
#define KV 16 /* float lanes of the half/bfloat16 kernels */
typedef __m512 kv_f;
#define KV_ADD _mm512_add_ps
#define KV_MUL _mm512_mul_ps
#define KV_DIV _mm512_div_ps
#define KV_MAX _mm512_max_ps /* (x > y ? x : y), NaN -> y: as the C */
#define KV_MIN _mm512_min_ps
#define KV_SET1 _mm512_set1_ps
static inline kv_f kv_ld_h(const uint16_t *p)
{
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)p));
}
static inline void kv_st_h(uint16_t *p, kv_f v)
{
    _mm256_storeu_si256((__m256i *)(void *)p,
                        _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}
static inline kv_f kv_ld_b(const uint16_t *p)
{
    __m512i w = _mm512_cvtepu16_epi32(
        _mm256_loadu_si256((const __m256i *)(const void *)p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}
/* bfloat16 rounding of each float lane (nearest even, a NaN kept quiet),
 * left in place: the bfloat16 is the lane's top 16 bits, the low 16 are
 * left over.  u + 0x7fff, + 1 more where bit 16 (the kept part's lowest
 * bit) is set; a NaN (lanes in `nan`) gets its quiet bit instead:
 * k_st_b()'s rule. */
static inline __m512i kv_rnd_b_nan(kv_f v, __mmask16 nan)
{
    __m512i u = _mm512_castps_si512(v);
    __mmask16 odd = _mm512_test_epi32_mask(u, _mm512_set1_epi32(0x10000));
    __m512i r = _mm512_add_epi32(u, _mm512_set1_epi32(0x7fff));
    r = _mm512_mask_add_epi32(r, odd, u, _mm512_set1_epi32(0x8000));
    return _mm512_mask_or_epi32(r, nan, u, _mm512_set1_epi32(0x400000));
}
static inline __m512i kv_rnd_b(kv_f v)
{
    return kv_rnd_b_nan(v, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q));
}
static inline void kv_st_b(uint16_t *p, kv_f v)
{
    __m512i r = _mm512_srli_epi32(kv_rnd_b(v), 16);
    _mm256_storeu_si256((__m256i *)(void *)p, _mm512_cvtepi32_epi16(r));
}
/* 2 x KV bfloat16 at a time, the even elements in one vector and the odd
 * ones in the other: each bfloat16 is already the top half of a float in
 * the odd ones (mask off the bottom), a shift puts the even ones there;
 * the store takes the top halves back the same way (one shift and one
 * 16-bit blend), so no lane-crossing shuffle or pack either way */
static inline void kv_ld_b2(const uint16_t *p, kv_f *ev, kv_f *od)
{
    __m512i w = _mm512_loadu_si512((const void *)p);
    *ev = _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
    *od = _mm512_castsi512_ps(
        _mm512_and_si512(w, _mm512_set1_epi32((int)0xffff0000u)));
}
/* NaNs are rare: one compare finds any in either vector, and only then
 * is each vector's own NaN mask worked out */
static inline void kv_st_b2(uint16_t *p, kv_f ev, kv_f od)
{
    __mmask16 ne = 0, no = 0;
    if (__builtin_expect(_mm512_cmp_ps_mask(ev, od, _CMP_UNORD_Q) != 0, 0)) {
        ne = _mm512_cmp_ps_mask(ev, ev, _CMP_UNORD_Q);
        no = _mm512_cmp_ps_mask(od, od, _CMP_UNORD_Q);
    }
    __m512i e = _mm512_srli_epi32(kv_rnd_b_nan(ev, ne), 16);
    _mm512_storeu_si512((void *)p, _mm512_mask_blend_epi16(
                                       0xaaaaaaaau, e, kv_rnd_b_nan(od, no)));
}
#elif defined(__AVX2__) && defined(__F16C__)
#include <immintrin.h>
#define KV 8
typedef __m256 kv_f;
#define KV_ADD _mm256_add_ps
#define KV_MUL _mm256_mul_ps
#define KV_DIV _mm256_div_ps
#define KV_MAX _mm256_max_ps
#define KV_MIN _mm256_min_ps
#define KV_SET1 _mm256_set1_ps
static inline kv_f kv_ld_h(const uint16_t *p)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)p));
}
static inline void kv_st_h(uint16_t *p, kv_f v)
{
    _mm_storeu_si128((__m128i *)(void *)p,
                     _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}
static inline kv_f kv_ld_b(const uint16_t *p)
{
    __m256i w = _mm256_cvtepu16_epi32(
        _mm_loadu_si128((const __m128i *)(const void *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}
/* bfloat16 rounding in place, as the AVX-512 build's, of a vector without
 * NaNs; bit 16 is added as minus the all-ones compare result: no shift,
 * which shares its two ports with the shuffles on AMD Zen */
static inline __m256i kv_rnd_b_num(kv_f v)
{
    __m256i u = _mm256_castps_si256(v), b16 = _mm256_set1_epi32(0x10000);
    __m256i odd = _mm256_cmpeq_epi32(_mm256_and_si256(u, b16), b16);
    __m256i r = _mm256_add_epi32(u, _mm256_set1_epi32(0x7fff));
    return _mm256_sub_epi32(r, odd);
}
/* ... and of any vector: a NaN (float compare) gets its quiet bit */
static inline __m256i kv_rnd_b(kv_f v)
{
    __m256i q = _mm256_or_si256(_mm256_castps_si256(v),
                                _mm256_set1_epi32(0x400000));
    return _mm256_castps_si256(_mm256_blendv_ps(
        _mm256_castsi256_ps(kv_rnd_b_num(v)), _mm256_castsi256_ps(q),
        _mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
}
static inline void kv_st_b(uint16_t *p, kv_f v)
{
    __m256i r = _mm256_srli_epi32(kv_rnd_b(v), 16);
    /* 8 x 32 -> 16 bits (values <= 0xffff: no saturation); packus works
     * per 128-bit lane, so gather quadwords 0 and 2 */
    __m256i pk = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
    _mm_storeu_si128((__m128i *)(void *)p, _mm256_castsi256_si128(pk));
}
/* 2 x KV at a time, even and odd elements apart, as the AVX-512 build's */
static inline void kv_ld_b2(const uint16_t *p, kv_f *ev, kv_f *od)
{
    __m256i w = _mm256_loadu_si256((const __m256i *)(const void *)p);
    *ev = _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
    *od = _mm256_castsi256_ps(
        _mm256_and_si256(w, _mm256_set1_epi32((int)0xffff0000u)));
}
/* NaNs are rare: one compare and test find any in either vector, and
 * only then are the NaN rule's compare and blend paid for per vector
 * (+15% elements/s) */
static inline void kv_st_b2(uint16_t *p, kv_f ev, kv_f od)
{
    __m256 nan = _mm256_cmp_ps(ev, od, _CMP_UNORD_Q);
    __m256i e, o;
    if (__builtin_expect(!_mm256_testz_ps(nan, nan), 0)) {
        e = kv_rnd_b(ev);
        o = kv_rnd_b(od);
    } else {
        e = kv_rnd_b_num(ev);
        o = kv_rnd_b_num(od);
    }
    _mm256_storeu_si256((__m256i *)(void *)p,
                        _mm256_blend_epi16(_mm256_srli_epi32(e, 16), o, 0xaa));
}
#endif

#define SC ((unsigned)NCD_PERF_MULSUM_SCALAR)

/* Scalar half / bfloat16 loads and stores (the tails, and builds without
 * vector conversions): the same bits as the vector ones. */
static inline float k_ld_b(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static inline uint16_t k_st_b(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/*
 * Integer kernels.  T = element type (signed or not), U = its unsigned
 * twin for wrapping arithmetic.
 */
#define INT_KERNELS(NAME, T, U)                                                \
    static void NAME##_sum(T *d, const T *a, const T *b, size_t n)             \
    {                                                                          \
        for (size_t i = 0; i < n; i++)                                         \
            d[i] = (T)(U)((U)a[i] + (U)b[i]);                                  \
    }                                                                          \
    static void NAME##_prod(T *d, const T *a, const T *b, size_t n)            \
    {                                                                          \
        for (size_t i = 0; i < n; i++)                                         \
            d[i] = (T)(U)((U)a[i] * (U)b[i]);                                  \
    }                                                                          \
    static void NAME##_max(T *d, const T *a, const T *b, size_t n)             \
    {                                                                          \
        for (size_t i = 0; i < n; i++)                                         \
            d[i] = a[i] > b[i] ? a[i] : b[i];                                  \
    }                                                                          \
    static void NAME##_min(T *d, const T *a, const T *b, size_t n)             \
    {                                                                          \
        for (size_t i = 0; i < n; i++)                                         \
            d[i] = a[i] < b[i] ? a[i] : b[i];                                  \
    }                                                                          \
    static void NAME##_mulsum(T *d, const T *a, const T *b, size_t n, U sa,    \
                              U sb)                                            \
    {                                                                          \
        for (size_t i = 0; i < n; i++)                                         \
            d[i] = (T)(U)((U)a[i] * sa + (U)b[i] * sb);                        \
    }                                                                          \
    static void NAME##_div(T *d, const T *a, size_t n, T k)                    \
    {                                                                          \
        for (size_t i = 0; i < n; i++)                                         \
            d[i] = (T)(a[i] / k);                                              \
    }                                                                          \
    static void NAME##_scale(T *d, const T *a, size_t n)                       \
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

/*
 * half and bfloat16 kernels: LD/ST scalar conversions; with VLD/VST
 * (vector conversions of KV elements) they run KV elements at a time and
 * finish with the scalar loop.  Each kernel is written once as an
 * expression of x and y (XE scalar, VE vector).
 */
#ifdef KV
#define VEC_LOOP(VLD, VST, VE)                                                 \
    for (; i + KV <= n; i += KV) {                                             \
        kv_f x = VLD(a + i), y = VLD(b + i);                                   \
        VST(d + i, VE);                                                        \
    }
/* bfloat16: 2 x KV elements a step first (kv_ld_b2 / kv_st_b2) */
#define LOOP2_B(VE)                                                            \
    for (; i + 2 * KV <= n; i += 2 * KV) {                                     \
        kv_f x, y, x2, y2;                                                     \
        kv_ld_b2(a + i, &x, &x2);                                              \
        kv_ld_b2(b + i, &y, &y2);                                              \
        kv_f r1_ = VE;                                                         \
        x = x2, y = y2;                                                        \
        kv_st_b2(d + i, r1_, VE);                                              \
    }
#else
#define VEC_LOOP(VLD, VST, VE)
#define LOOP2_B(VE)
#endif
#define NO_LOOP2(VE)
#define K16(NAME, LD, ST, VLD, VST, L2, XE, VE)                                \
    static void NAME(uint16_t *d, const uint16_t *a, const uint16_t *b,        \
                     size_t n, float sa_, float sb_)                           \
    {                                                                          \
        size_t i = 0;                                                          \
        (void)sa_, (void)sb_;                                                  \
        L2(VE)                                                                 \
        VEC_LOOP(VLD, VST, VE)                                                 \
        for (; i < n; i++) {                                                   \
            float x = LD(a[i]), y = LD(b[i]);                                  \
            d[i] = ST(XE);                                                     \
        }                                                                      \
    }

/* 16-bit float kernels (sa_/sb_: the mulsum scalars) */
#define F16_KERNELS(NAME, LD, ST, VLD, VST, L2)                                \
    K16(NAME##_sum, LD, ST, VLD, VST, L2, x + y, KV_ADD(x, y))                 \
    K16(NAME##_prod, LD, ST, VLD, VST, L2, x * y, KV_MUL(x, y))                \
    K16(NAME##_max, LD, ST, VLD, VST, L2, x > y ? x : y, KV_MAX(x, y))         \
    K16(NAME##_min, LD, ST, VLD, VST, L2, x < y ? x : y, KV_MIN(x, y))         \
    K16(NAME##_mulsum_ab, LD, ST, VLD, VST, L2, x * sa_ + y * sb_,             \
        KV_ADD(KV_MUL(x, KV_SET1(sa_)), KV_MUL(y, KV_SET1(sb_))))              \
    K16(NAME##_mulsum_b, LD, ST, VLD, VST, L2, x + y * sb_,                    \
        KV_ADD(x, KV_MUL(y, KV_SET1(sb_))))                                    \
    K16(NAME##_mulsum_a, LD, ST, VLD, VST, L2, x * sa_ + y,                    \
        KV_ADD(KV_MUL(x, KV_SET1(sa_)), y))                                    \
    /* one side scaled (the usual step): x * 1 is x but for a signalling    \
     * NaN, which the add quiets all the same, payload and operand order    \
     * kept, so skipping it gives the same bits (one multiply less) */     \
    static void NAME##_mulsum(uint16_t *d, const uint16_t *a,                  \
                              const uint16_t *b, size_t n, float sa_,          \
                              float sb_)                                       \
    {                                                                          \
        if (sa_ == 1.0f)                                                       \
            NAME##_mulsum_b(d, a, b, n, sa_, sb_);                             \
        else if (sb_ == 1.0f)                                                  \
            NAME##_mulsum_a(d, a, b, n, sa_, sb_);                             \
        else                                                                   \
            NAME##_mulsum_ab(d, a, b, n, sa_, sb_);                            \
    }                                                                          \
    static void NAME##_div(uint16_t *d, const uint16_t *a, size_t n, float k)  \
    {                                                                          \
        NAME##_unary(d, a, n, k, 1);                                           \
    }                                                                          \
    static void NAME##_scale(uint16_t *d, const uint16_t *a, size_t n)         \
    {                                                                          \
        NAME##_unary(d, a, n, (float)SC, 0);                                   \
    }

/* dst = src / k (div) or src * k (scale), 16-bit floats; L2U: a first
 * loop 2 x KV elements a step (bfloat16) or none */
#ifdef KV
#define UNARY2_B                                                               \
    for (; i + 2 * KV <= n; i += 2 * KV) {                                     \
        kv_f x, x2;                                                            \
        kv_ld_b2(a + i, &x, &x2);                                              \
        if (div)                                                               \
            kv_st_b2(d + i, KV_DIV(x, kk), KV_DIV(x2, kk));                    \
        else                                                                   \
            kv_st_b2(d + i, KV_MUL(x, kk), KV_MUL(x2, kk));                    \
    }
#define F16_UNARY(NAME, LD, ST, VLD, VST, L2U)                                 \
    static void NAME##_unary(uint16_t *d, const uint16_t *a, size_t n,         \
                             float k, int div)                                 \
    {                                                                          \
        size_t i = 0;                                                          \
        kv_f kk = KV_SET1(k);                                                  \
        L2U                                                                    \
        for (; i + KV <= n; i += KV)                                           \
            VST(d + i, div ? KV_DIV(VLD(a + i), kk) : KV_MUL(VLD(a + i), kk)); \
        for (; i < n; i++)                                                     \
            d[i] = ST(div ? LD(a[i]) / k : LD(a[i]) * k);                      \
    }
#else
#define UNARY2_B
#define F16_UNARY(NAME, LD, ST, VLD, VST, L2U)                                 \
    static void NAME##_unary(uint16_t *d, const uint16_t *a, size_t n,         \
                             float k, int div)                                 \
    {                                                                          \
        for (size_t i = 0; i < n; i++)                                         \
            d[i] = ST(div ? LD(a[i]) / k : LD(a[i]) * k);                      \
    }
#endif

F16_UNARY(f16, ncd__h2f, ncd__f2h, kv_ld_h, kv_st_h, )
F16_KERNELS(f16, ncd__h2f, ncd__f2h, kv_ld_h, kv_st_h, NO_LOOP2)
F16_UNARY(bf16, k_ld_b, k_st_b, kv_ld_b, kv_st_b, UNARY2_B)
F16_KERNELS(bf16, k_ld_b, k_st_b, kv_ld_b, kv_st_b, LOOP2_B)

/* float and double: plain loops for the vectoriser */
#define FLT_KERNELS(NAME, T)                                                   \
    static void NAME##_sum(T *d, const T *a, const T *b, size_t n, T sa_,      \
                           T sb_)                                              \
    {                                                                          \
        (void)sa_, (void)sb_;                                                  \
        for (size_t i = 0; i < n; i++)                                         \
            d[i] = a[i] + b[i];                                                \
    }                                                                          \
    static void NAME##_prod(T *d, const T *a, const T *b, size_t n, T sa_,     \
                            T sb_)                                             \
    {                                                                          \
        (void)sa_, (void)sb_;                                                  \
        for (size_t i = 0; i < n; i++)                                         \
            d[i] = a[i] * b[i];                                                \
    }                                                                          \
    static void NAME##_max(T *d, const T *a, const T *b, size_t n, T sa_,      \
                           T sb_)                                              \
    {                                                                          \
        (void)sa_, (void)sb_;                                                  \
        for (size_t i = 0; i < n; i++)                                         \
            d[i] = a[i] > b[i] ? a[i] : b[i];                                  \
    }                                                                          \
    static void NAME##_min(T *d, const T *a, const T *b, size_t n, T sa_,      \
                           T sb_)                                              \
    {                                                                          \
        (void)sa_, (void)sb_;                                                  \
        for (size_t i = 0; i < n; i++)                                         \
            d[i] = a[i] < b[i] ? a[i] : b[i];                                  \
    }                                                                          \
    static void NAME##_mulsum(T *d, const T *a, const T *b, size_t n, T sa,    \
                              T sb)                                            \
    {                                                                          \
        for (size_t i = 0; i < n; i++)                                         \
            d[i] = a[i] * sa + b[i] * sb;                                      \
    }                                                                          \
    static void NAME##_div(T *d, const T *a, size_t n, T k)                    \
    {                                                                          \
        for (size_t i = 0; i < n; i++)                                         \
            d[i] = a[i] / k;                                                   \
    }                                                                          \
    static void NAME##_scale(T *d, const T *a, size_t n)                       \
    {                                                                          \
        for (size_t i = 0; i < n; i++)                                         \
            d[i] = a[i] * (T)SC;                                               \
    }

FLT_KERNELS(f32, float)
FLT_KERNELS(f64, double)

/* Integer kernels take the scalars the same way as the float ones. */
#define INT_CALL(NAME, OP, d, a, b, n, sa, sb) NAME##_##OP(d, a, b, n)
#define FLT_CALL(NAME, OP, d, a, b, n, sa, sb) NAME##_##OP(d, a, b, n, sa, sb)

#define DISPATCH(CALL, NAME, T, C)                                             \
    do {                                                                       \
        T *d_ = dst;                                                           \
        const T *a_ = a, *b_ = b;                                              \
        C sa_ = (C)(scale_a ? SC : 1), sb_ = (C)(scale_b ? SC : 1);            \
        (void)sa_, (void)sb_;                                                  \
        switch (op) {                                                          \
        case NCD_OP_PROD:                                                      \
            CALL(NAME, prod, d_, a_, b_, n, sa_, sb_);                         \
            break;                                                             \
        case NCD_OP_MAX:                                                       \
            CALL(NAME, max, d_, a_, b_, n, sa_, sb_);                          \
            break;                                                             \
        case NCD_OP_MIN:                                                       \
            CALL(NAME, min, d_, a_, b_, n, sa_, sb_);                          \
            break;                                                             \
        case NCD_OP_MULSUM:                                                    \
            if (scale_a || scale_b) {                                          \
                NAME##_mulsum(d_, a_, b_, n, sa_, sb_);                        \
                break;                                                         \
            }                                                                  \
            /* fall through */                                                 \
        default:                                                               \
            CALL(NAME, sum, d_, a_, b_, n, sa_, sb_);                          \
            break;                                                             \
        }                                                                      \
    } while (0)

static void k_reduce(enum ncd_perf_dtype t, enum ncd_perf_op op, void *dst,
                     const void *a, const void *b, size_t n, int scale_a,
                     int scale_b)
{
    switch (t) {
    case NCD_DT_INT8:
        DISPATCH(INT_CALL, i8, int8_t, uint8_t);
        break;
    case NCD_DT_UINT8:
        DISPATCH(INT_CALL, u8, uint8_t, uint8_t);
        break;
    case NCD_DT_INT32:
        DISPATCH(INT_CALL, i32, int32_t, uint32_t);
        break;
    case NCD_DT_UINT32:
        DISPATCH(INT_CALL, u32, uint32_t, uint32_t);
        break;
    case NCD_DT_INT64:
        DISPATCH(INT_CALL, i64, int64_t, uint64_t);
        break;
    case NCD_DT_UINT64:
        DISPATCH(INT_CALL, u64, uint64_t, uint64_t);
        break;
    case NCD_DT_HALF:
        DISPATCH(FLT_CALL, f16, uint16_t, float);
        break;
    case NCD_DT_FLOAT:
        DISPATCH(FLT_CALL, f32, float, float);
        break;
    case NCD_DT_DOUBLE:
        DISPATCH(FLT_CALL, f64, double, double);
        break;
    case NCD_DT_BFLOAT16:
        DISPATCH(FLT_CALL, bf16, uint16_t, float);
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

static void k_finish(enum ncd_perf_dtype t, enum ncd_perf_op op, void *dst,
                     const void *src, size_t n, int nranks, int scale)
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

static const struct ncd__reduce_impl kern_table = {KERN_NAME, k_reduce,
                                                  k_finish};
const struct ncd__reduce_impl *const KERN_TABLE = &kern_table;
