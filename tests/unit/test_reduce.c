/* SPDX-License-Identifier: MIT */
/*
 * The reduction kernels' builds (src/lib/perf/reduce_impl.h): each build
 * this CPU can run is forced in turn (ncd__reduce_use(), test-only) and
 * must give, bit for bit, what a plain scalar loop written here gives,
 * for every type, op (sum, prod, max, min, avg, mulsum with each scaling),
 * length (vector bodies and tails), alignment and aliasing, on inputs
 * with infinities, NaNs, signed zeros and subnormals.  The automatic
 * choice must follow the CPU's features (AVX-512 F/BW/VL, AVX2 + F16C),
 * not its model; half.h's conversions must match the F16C instructions.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncd/error.h"
#include "ncd/perf.h"
#include "perf/perf_int.h"
#include "perf/reduce_impl.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

static const char *const builds[] = {"baseline", "avx2", "avx512"};
#define NBUILDS (sizeof builds / sizeof builds[0])

/* ---- deterministic inputs ------------------------------------------- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int is_nan_bits(enum ncd_perf_dtype t, const unsigned char *p)
{
    uint64_t u = 0;
    switch (t) {
    case NCD_DT_HALF:
        memcpy(&u, p, 2);
        return (u & 0x7fff) > 0x7c00;
    case NCD_DT_BFLOAT16:
        memcpy(&u, p, 2);
        return (u & 0x7fff) > 0x7f80;
    case NCD_DT_FLOAT:
        memcpy(&u, p, 4);
        return (u & 0x7fffffffu) > 0x7f800000u;
    case NCD_DT_DOUBLE:
        memcpy(&u, p, 8);
        return (u & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
    default:
        return 0;
    }
}

/* Element i: random bits; for floating types every 8th element a special
 * value (zeros, infinities, largest, smallest subnormal, NaN, 1). */
static void gen(enum ncd_perf_dtype t, unsigned char *p, size_t n, int side)
{
    size_t es = ncd_perf_dtype_size(t);
    static const uint16_t sh[] = {0x0000, 0x8000, 0x7c00, 0xfc00,
                                  0x7bff, 0x0001, 0x7e01, 0x3c00};
    static const uint16_t sb[] = {0x0000, 0x8000, 0x7f80, 0xff80,
                                  0x7f7f, 0x0001, 0x7fc1, 0x3f80};
    static const uint32_t sf[] = {0x00000000u, 0x80000000u, 0x7f800000u,
                                  0xff800000u, 0x7f7fffffu, 0x00000001u,
                                  0x7fc00001u, 0x3f800000u};
    static const uint64_t sd[] = {0, 1ull << 63, 0x7ff0000000000000ull,
                                  0xfff0000000000000ull,
                                  0x7fefffffffffffffull, 1,
                                  0x7ff8000000000001ull,
                                  0x3ff0000000000000ull};
    for (size_t i = 0; i < n; i++) {
        uint64_t r = next();
        if (ncd_perf_dtype_is_float(t) && (r & 7) == 0) {
            unsigned k = (unsigned)((r >> 8) + (unsigned)side) & 7;
            if (t == NCD_DT_HALF)
                r = sh[k];
            else if (t == NCD_DT_BFLOAT16)
                r = sb[k];
            else if (t == NCD_DT_FLOAT)
                r = sf[k];
            else
                r = sd[k];
        } else if (t == NCD_DT_FLOAT && (r & 0x30) == 0) {
            /* sums that round and overflow, not only random exponents */
            float f = (float)(int64_t)(r >> 20) * 1e-3f;
            memcpy(&r, &f, 4);
        }
        memcpy(p + i * es, &r, es);
    }
}

/* Two NaNs in one pair: which payload a sum keeps is the compiler's
 * choice of operand order, not a kernel property; keep one. */
static void one_nan_per_pair(enum ncd_perf_dtype t, const unsigned char *a,
                             unsigned char *b, size_t n)
{
    size_t es = ncd_perf_dtype_size(t);
    for (size_t i = 0; i < n; i++)
        if (is_nan_bits(t, a + i * es) && is_nan_bits(t, b + i * es))
            memset(b + i * es, 0, es);
}

/* ---- the scalar reference ------------------------------------------- */

static float bf2f(uint16_t b)
{
    return ncd__bf16_to_f32(b);
}

/* Reference for one element (the kernels' documented semantics).  With
 * `finish`, the element is ncd_perf_reduce_finish(a) instead. */
#define REF_FLOAT(T, C, LD, ST)                                                \
    do {                                                                       \
        T xa, xb, out;                                                         \
        memcpy(&xa, a, sizeof xa);                                             \
        memcpy(&xb, b, sizeof xb);                                             \
        C x = LD(xa), y = LD(xb);                                              \
        volatile C p, q;                                                       \
        C r;                                                                   \
        if (finish) {                                                          \
            if (op == NCD_OP_AVG)                                              \
                r = x / (C)nranks;                                             \
            else if (op == NCD_OP_MULSUM && scale_a)                           \
                r = x * (C)NCD_PERF_MULSUM_SCALAR;                             \
            else                                                               \
                r = x;                                                         \
            out = (op == NCD_OP_AVG || (op == NCD_OP_MULSUM && scale_a))       \
                      ? ST(r)                                                  \
                      : xa;                                                    \
        } else {                                                               \
            switch (op) {                                                      \
            case NCD_OP_PROD:                                                  \
                r = x * y;                                                     \
                break;                                                         \
            case NCD_OP_MAX:                                                   \
                r = x > y ? x : y;                                             \
                break;                                                         \
            case NCD_OP_MIN:                                                   \
                r = x < y ? x : y;                                             \
                break;                                                         \
            case NCD_OP_MULSUM:                                                \
                if (scale_a || scale_b) {                                      \
                    p = x * (C)(scale_a ? NCD_PERF_MULSUM_SCALAR : 1);         \
                    q = y * (C)(scale_b ? NCD_PERF_MULSUM_SCALAR : 1);         \
                    r = p + q;                                                 \
                    break;                                                     \
                }                                                              \
                /* fall through */                                             \
            default:                                                           \
                r = x + y;                                                     \
                break;                                                         \
            }                                                                  \
            out = ST(r);                                                       \
        }                                                                      \
        memcpy(d, &out, sizeof out);                                           \
    } while (0)

#define REF_INT(T, U)                                                          \
    do {                                                                       \
        T x, y, out;                                                           \
        memcpy(&x, a, sizeof x);                                               \
        memcpy(&y, b, sizeof y);                                               \
        U s = (U)NCD_PERF_MULSUM_SCALAR;                                       \
        if (finish) {                                                          \
            if (op == NCD_OP_AVG)                                              \
                out = (T)(x / (T)nranks);                                      \
            else if (op == NCD_OP_MULSUM && scale_a)                           \
                out = (T)(U)((U)x * s);                                        \
            else                                                               \
                out = x;                                                       \
        } else {                                                               \
            switch (op) {                                                      \
            case NCD_OP_PROD:                                                  \
                out = (T)(U)((U)x * (U)y);                                     \
                break;                                                         \
            case NCD_OP_MAX:                                                   \
                out = x > y ? x : y;                                           \
                break;                                                         \
            case NCD_OP_MIN:                                                   \
                out = x < y ? x : y;                                           \
                break;                                                         \
            case NCD_OP_MULSUM:                                                \
                if (scale_a || scale_b) {                                      \
                    out = (T)(U)((U)x * (scale_a ? s : 1) +                    \
                                 (U)y * (scale_b ? s : 1));                    \
                    break;                                                     \
                }                                                              \
                /* fall through */                                             \
            default:                                                           \
                out = (T)(U)((U)x + (U)y);                                     \
                break;                                                         \
            }                                                                  \
        }                                                                      \
        memcpy(d, &out, sizeof out);                                           \
    } while (0)

#define IDF(x) (x)

static void ref_elem(enum ncd_perf_dtype t, enum ncd_perf_op op,
                     unsigned char *d, const unsigned char *a,
                     const unsigned char *b, int scale_a, int scale_b,
                     int finish, int nranks)
{
    switch (t) {
    case NCD_DT_INT8:
        REF_INT(int8_t, uint8_t);
        break;
    case NCD_DT_UINT8:
        REF_INT(uint8_t, uint8_t);
        break;
    case NCD_DT_INT32:
        REF_INT(int32_t, uint32_t);
        break;
    case NCD_DT_UINT32:
        REF_INT(uint32_t, uint32_t);
        break;
    case NCD_DT_INT64:
        REF_INT(int64_t, uint64_t);
        break;
    case NCD_DT_UINT64:
        REF_INT(uint64_t, uint64_t);
        break;
    case NCD_DT_HALF:
        REF_FLOAT(uint16_t, float, ncd__half_to_f32, ncd__f32_to_half);
        break;
    case NCD_DT_BFLOAT16:
        REF_FLOAT(uint16_t, float, bf2f, ncd__f32_to_bf16);
        break;
    case NCD_DT_FLOAT:
        REF_FLOAT(float, float, IDF, IDF);
        break;
    case NCD_DT_DOUBLE:
        REF_FLOAT(double, double, IDF, IDF);
        break;
    default:
        fail_msg("no reference for type %d", t);
    }
}

/* ---- the comparison ----------------------------------------------- */

static const size_t lens[] = {0,  1,  2,  3,  7,   8,   9,    15,   16,
                              17, 31, 32, 33, 47,  63,  64,   65,   100,
                              127, 128, 129, 257, 1000, 4099, 20011};
#define MAXN 20011

struct bufs {
    unsigned char *a, *b, *d, *ref;
};

/* One build, one type, one op: every length, misaligned and aliased. */
static void check_case(const char *build, enum ncd_perf_dtype t,
                       enum ncd_perf_op op, struct bufs *B)
{
    size_t es = ncd_perf_dtype_size(t);
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        size_t n = lens[li];
        for (int variant = 0; variant < 6; variant++) {
            /* 0-3: scale_a / scale_b combinations (mulsum), offsets 0 or 1
             * element; 4: dst == a; 5: dst == b */
            int sa = variant & 1, sb = (variant >> 1) & 1;
            if (variant >= 4)
                sa = sb = 1;
            size_t off = (variant & 2) ? es : 0;
            unsigned char *a = B->a + off, *b = B->b + es - off;
            gen(t, a, n, 0);
            gen(t, b, n, 1);
            one_nan_per_pair(t, a, b, n);
            for (size_t i = 0; i < n; i++)
                ref_elem(t, op, B->ref + i * es, a + i * es, b + i * es, sa,
                         sb, 0, 0);
            unsigned char *d = variant == 4 ? a : variant == 5 ? b : B->d + off;
            ncd_perf_reduce(t, op, d, a, b, n, sa, sb);
            for (size_t i = 0; i < n; i++)
                if (memcmp(d + i * es, B->ref + i * es, es)) {
                    uint64_t g = 0, e = 0, x = 0, y = 0;
                    memcpy(&g, d + i * es, es);
                    memcpy(&e, B->ref + i * es, es);
                    memcpy(&x, B->a + off + i * es, es);
                    memcpy(&y, B->b + es - off + i * es, es);
                    fail_msg("%s: %s %s n=%zu variant %d element %zu: got "
                             "%#llx, expected %#llx",
                             build, ncd_perf_dtype_name(t),
                             ncd_perf_op_name(op), n, variant, i,
                             (unsigned long long)g, (unsigned long long)e);
                }
            /* the final step (avg division, mulsum scaling, copy) */
            int nr = 3 + variant;
            for (size_t i = 0; i < n; i++)
                ref_elem(t, op, B->ref + i * es, d + i * es, d + i * es, sa,
                         0, 1, nr);
            unsigned char *fd = variant >= 4 ? d : B->a + es - off;
            ncd_perf_reduce_finish(t, op, fd, d, n, nr, sa);
            if (n && memcmp(fd, B->ref, n * es))
                for (size_t i = 0; i < n; i++)
                    if (memcmp(fd + i * es, B->ref + i * es, es))
                        fail_msg("%s: finish %s %s n=%zu nranks %d element "
                                 "%zu differs",
                                 build, ncd_perf_dtype_name(t),
                                 ncd_perf_op_name(op), n, nr, i);
        }
    }
}

static void test_builds_bit_exact(void **state)
{
    (void)state;
    struct bufs B;
    B.a = malloc(MAXN * 8 + 16);
    B.b = malloc(MAXN * 8 + 16);
    B.d = malloc(MAXN * 8 + 16);
    B.ref = malloc(MAXN * 8 + 16);
    assert_non_null(B.a && B.b && B.d && B.ref);
    int ran = 0;
    for (size_t k = 0; k < NBUILDS; k++) {
        int rc = ncd__reduce_use(builds[k]);
        if (rc == NCD_EUNSUPPORTED) {
            print_message("build %s: not supported on this CPU, skipped\n",
                          builds[k]);
            continue;
        }
        assert_int_equal(rc, 0);
        assert_string_equal(ncd__reduce_current(), builds[k]);
        for (int t = 0; t < NCD_DT_F8E4M3; t++)
            for (int op = 0; op < NCD_OP__COUNT; op++)
                check_case(builds[k], (enum ncd_perf_dtype)t,
                           (enum ncd_perf_op)op, &B);
        print_message("build %s: every type and op bit-exact\n", builds[k]);
        ran++;
    }
    assert_true(ran >= 1);
    assert_int_equal(ncd__reduce_use("auto"), 0);
    assert_int_equal(ncd__reduce_use("sse9"), NCD_EINVAL);
    free(B.a);
    free(B.b);
    free(B.d);
    free(B.ref);
}

/* The automatic choice follows the features, whatever the CPU model. */
static void test_dispatch_by_features(void **state)
{
    (void)state;
    assert_int_equal(ncd__reduce_use(NULL), 0);
    const char *cur = ncd__reduce_current();
    const char *want = "baseline";
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && ncd__reduce_supported("avx2"))
        want = "avx2";
    if (__builtin_cpu_supports("avx512f") &&
        __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && ncd__reduce_supported("avx512"))
        want = "avx512";
    /* a CPU with AVX2 gets a vector build on x86-64 */
    if (__builtin_cpu_supports("avx2"))
        assert_true(ncd__reduce_supported("avx2"));
#endif
    print_message("automatic build: %s\n", cur);
    assert_string_equal(cur, want);
    assert_true(ncd__reduce_supported("baseline"));
}

#if defined(__x86_64__)
__attribute__((target("avx,f16c"))) static void hw_h2f(const uint16_t *h,
                                                        float *f)
{
    _mm256_storeu_ps(f, _mm256_cvtph_ps(_mm_loadu_si128((const void *)h)));
}
__attribute__((target("avx,f16c"))) static void hw_f2h(const float *f,
                                                        uint16_t *h)
{
    _mm_storeu_si128((void *)h, _mm256_cvtps_ph(_mm256_loadu_ps(f), 0));
}
#endif

/* half.h against F16C: every half, and floats around every half
 * boundary plus random bit patterns (NaN payloads, subnormals). */
static void test_half_matches_f16c(void **state)
{
    (void)state;
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx")) {
        skip();
        return;
    }
    unsigned a, b, c, d;
    __asm__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(1), "c"(0));
    if (!((c >> 29) & 1)) {
        print_message("no F16C on this CPU\n");
        skip();
        return;
    }
    for (uint32_t h0 = 0; h0 < 65536; h0 += 8) {
        uint16_t h[8];
        float f[8];
        for (int j = 0; j < 8; j++)
            h[j] = (uint16_t)(h0 + (uint32_t)j);
        hw_h2f(h, f);
        for (int j = 0; j < 8; j++) {
            float s = ncd__half_to_f32(h[j]);
            if (memcmp(&s, &f[j], 4))
                fail_msg("half %#x: hardware %a, half.h %a", h[j], f[j], s);
        }
    }
    for (uint32_t i = 0; i < (1u << 22); i += 8) {
        uint32_t u[8];
        float f[8];
        uint16_t h[8];
        for (int j = 0; j < 8; j++) {
            uint64_t r = next();
            /* the top 16 bits of a float, with a random or boundary tail */
            uint32_t top = (i + (uint32_t)j) << 10 & 0xffff0000u;
            static const uint32_t tails[] = {0, 0x1000, 0x0fff, 0x1001,
                                             0x2000, 0xffff};
            u[j] = (r & 1) ? (uint32_t)(r >> 32)
                           : top | ((i >> 3) & 0xffff) |
                                 tails[(r >> 1) % 6];
        }
        memcpy(f, u, sizeof f);
        hw_f2h(f, h);
        for (int j = 0; j < 8; j++)
            if (ncd__f32_to_half(f[j]) != h[j])
                fail_msg("float %#x: hardware %#x, half.h %#x", u[j], h[j],
                         ncd__f32_to_half(f[j]));
    }
#else
    skip();
#endif
}

/* ---- bfloat16 edge cases -------------------------------------------- */

/* The bfloat16 nearest to the float with bits u, ties to even, worked out
 * from the definition in double (no bit tricks): the reference that
 * ncd__f32_to_bf16() is held to.  2^128 stands for the step past the
 * largest finite value (IEEE overflow: rounds to infinity). */
static uint16_t bf16_by_definition(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    if (f != f)
        return (uint16_t)((u >> 16) | 0x40u);
    uint32_t t = u & 0xffff0000u, t2 = t + 0x10000u; /* toward +-inf */
    float ft, ft2;
    memcpy(&ft, &t, 4);
    memcpy(&ft2, &t2, 4);
    double x = (double)f, lo = (double)ft,
           hi = (t2 & 0x7f800000u) == 0x7f800000u
                    ? ((u >> 31) ? -0x1p128 : 0x1p128)
                    : (double)ft2;
    if ((u & 0x7fffffffu) == 0x7f800000u || x == lo)
        return (uint16_t)(t >> 16);
    double dl = x > lo ? x - lo : lo - x, dh = x > hi ? x - hi : hi - x;
    if (dl < dh || (dl == dh && !((t >> 16) & 1u)))
        return (uint16_t)(t >> 16);
    return (uint16_t)(t2 >> 16);
}

/* ncd__f32_to_bf16() (the scalar rounding every build must match) against
 * the definition: every tie (low half 0x8000), its neighbours, and the
 * halfway-minus-one / plus-one tails for every top half (NaNs, infinities,
 * subnormals, the overflow edge 0x7f7f8000 included), and random floats. */
static void test_bf16_rounding_reference(void **state)
{
    (void)state;
    static const uint32_t tails[] = {0x0000, 0x0001, 0x7fff, 0x8000,
                                     0x8001, 0xffff, 0x4000, 0xc000};
    for (uint32_t top = 0; top < 65536; top++)
        for (size_t k = 0; k < sizeof tails / sizeof tails[0]; k++) {
            uint32_t u = top << 16 | tails[k];
            float f;
            memcpy(&f, &u, 4);
            uint16_t got = ncd__f32_to_bf16(f), want = bf16_by_definition(u);
            if (got != want)
                fail_msg("float %#x: ncd__f32_to_bf16 %#x, nearest even %#x",
                         u, got, want);
        }
    for (int i = 0; i < (1 << 20); i++) {
        uint32_t u = (uint32_t)next();
        float f;
        memcpy(&f, &u, 4);
        if (ncd__f32_to_bf16(f) != bf16_by_definition(u))
            fail_msg("float %#x: ncd__f32_to_bf16 %#x, nearest even %#x", u,
                     ncd__f32_to_bf16(f), bf16_by_definition(u));
    }
    /* the cases by name */
    assert_int_equal(ncd__f32_to_bf16(1.0f + 0x1p-8f), 0x3f80); /* tie */
    assert_int_equal(ncd__f32_to_bf16(1.0f + 0x3p-8f), 0x3f82); /* tie */
    assert_int_equal(ncd__f32_to_bf16(-(1.0f + 0x3p-8f)), 0xbf82);
    assert_int_equal(ncd__f32_to_bf16(0x1.ffp127f), 0x7f80); /* tie -> inf */
    assert_int_equal(ncd__f32_to_bf16(0x1p-149f), 0x0000); /* below half */
    assert_int_equal(ncd__f32_to_bf16(0x1p-133f), 0x0001); /* subnormal */
    assert_int_equal(ncd__f32_to_bf16(0x3p-134f), 0x0002); /* tie, odd */
}

/* Every build on every bfloat16 value (a[i] = i) against each of these b
 * values, for every op, then the final step (avg by 3, 5, 6 and 7 ranks,
 * mulsum scaling): sums and products that tie (1 + 2^-8, x * 1.5), carry
 * into the exponent, overflow to infinity on rounding, signalling NaNs
 * through max/min (which return an operand unchanged) and arithmetic,
 * NaNs with every mantissa bit set (whose rounding would carry), signed
 * zeros, subnormals.  The length is not a multiple of the vector steps
 * and the data start one element off the allocation, so the 2 x KV
 * loops, the KV loops and the scalar tails all run. */
static void test_bf16_every_value(void **state)
{
    (void)state;
    static const uint16_t bs[] = {
        0x0000, 0x8000, 0x3f80, 0xbf80, 0x3b80, 0xbb80, 0x3c00, 0x3f81,
        0x3fc0, 0xbfc0, 0x4040, 0x3eab, 0x3f01, 0x7f7f, 0xff7f, 0x7f00,
        0x0001, 0x8001, 0x0003, 0x007f, 0x0080, 0x8080, 0x7f80, 0xff80,
        0x7f81, 0xff81, 0x7fbf, 0x7fc0, 0xffc1, 0x7fff, 0xffff};
    enum { N = 65536 + 45 };
    uint16_t *a = malloc((N + 1) * 2), *b = malloc((N + 1) * 2),
             *d = malloc((N + 1) * 2), *ref = malloc(N * 2);
    assert_non_null(a && b && d && ref);
    uint16_t *a1 = a + 1, *b1 = b + 1, *d1 = d + 1;
    for (size_t i = 0; i < N; i++)
        a1[i] = (uint16_t)(i * 40503u); /* every value, scrambled */
    int run[NBUILDS] = {0};
    for (size_t k = 0; k < NBUILDS; k++)
        run[k] = ncd__reduce_use(builds[k]) == 0;
    /* cases 0 .. NB*9-1: b value x (sum, prod, max, min, avg, mulsum with
     * each scaling); then the final step: avg by 3, 5, 6, 7, mulsum */
    enum { NB = sizeof bs / sizeof bs[0], NOPS = 9 };
    static const int nrs[] = {3, 5, 6, 7, 1};
    for (size_t c = 0; c < NB * NOPS + 5; c++) {
        int fin = c >= NB * NOPS;
        size_t bi = fin ? 0 : c / NOPS, oi = fin ? c - NB * NOPS : c % NOPS;
        enum ncd_perf_op op = fin ? (oi < 4 ? NCD_OP_AVG : NCD_OP_MULSUM)
                              : oi < 5 ? (enum ncd_perf_op)oi
                                       : NCD_OP_MULSUM;
        int sa = fin || (oi >= 5 && (oi - 5) & 1), sb = !fin && oi >= 7;
        int nr = fin ? nrs[oi] : 0;
        const uint16_t *bb = fin ? a1 : b1;
        for (size_t i = 0; i < N; i++)
            b1[i] = bs[bi];
        for (size_t i = 0; i < N; i++)
            ref_elem(NCD_DT_BFLOAT16, op, (unsigned char *)(ref + i),
                     (const unsigned char *)(a1 + i),
                     (const unsigned char *)(bb + i), sa, sb, fin, nr);
        for (size_t k = 0; k < NBUILDS; k++) {
            if (!run[k])
                continue;
            assert_int_equal(ncd__reduce_use(builds[k]), 0);
            if (fin)
                ncd_perf_reduce_finish(NCD_DT_BFLOAT16, op, d1, a1, N, nr, 1);
            else
                ncd_perf_reduce(NCD_DT_BFLOAT16, op, d1, a1, b1, N, sa, sb);
            for (size_t i = 0; i < N; i++) {
                const unsigned char *pa = (const void *)(a1 + i),
                                    *pb = (const void *)(b1 + i),
                                    *pd = (const void *)(d1 + i);
                /* two NaNs: either payload (see one_nan_per_pair) */
                int ok = !fin && is_nan_bits(NCD_DT_BFLOAT16, pa) &&
                                 is_nan_bits(NCD_DT_BFLOAT16, pb)
                             ? is_nan_bits(NCD_DT_BFLOAT16, pd)
                             : d1[i] == ref[i];
                if (!ok)
                    fail_msg("%s: %sbfloat16 %#x %s %#x (nranks %d, "
                             "scaling %d%d): got %#x, expected %#x",
                             builds[k], fin ? "finish " : "", a1[i],
                             ncd_perf_op_name(op), fin ? 0 : bs[bi], nr, sa,
                             sb, d1[i], ref[i]);
            }
        }
    }
    for (size_t k = 0; k < NBUILDS; k++)
        if (run[k])
            print_message("build %s: bfloat16 edge cases bit-exact\n",
                          builds[k]);
    assert_true(run[0]);
    assert_int_equal(ncd__reduce_use("auto"), 0);
    free(a);
    free(b);
    free(d);
    free(ref);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dispatch_by_features),
        cmocka_unit_test(test_half_matches_f16c),
        cmocka_unit_test(test_builds_bit_exact),
        cmocka_unit_test(test_bf16_rounding_reference),
        cmocka_unit_test(test_bf16_every_value),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
