/* SPDX-License-Identifier: MIT */
/*
 * Element-wise reductions of the socket backend: the entry points, which
 * call the kernel build this CPU runs best (reduce_impl.h), and the
 * scalar half / bfloat16 conversions of the data pattern.
 *
 * The build is chosen once, from CPUID feature bits and the register
 * state the OS saves (XCR0), not from the CPU model: AVX-512 F/BW/VL with
 * AVX2 and F16C, else AVX2 with F16C, else the baseline.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "ncd/error.h"
#include "ncd/perf.h"
#include "perf/half.h"
#include "perf/perf_int.h"
#include "perf/reduce_impl.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

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

void ncd__copy(void *dst, const void *src, size_t n)
{
    if (dst != src)
        memmove(dst, src, n); /* glibc picks its own vector copy */
}

/* CPU features ------------------------------------------------------------ */

enum { F_AVX2 = 1, F_F16C = 2, F_AVX512 = 4 };

static unsigned cpu_features(void)
{
    unsigned f = 0;
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    int osxsave = (c >> 27) & 1, avx = (c >> 28) & 1, f16c = (c >> 29) & 1;
    if (!osxsave || !avx)
        return 0;
    uint32_t xlo, xhi;
    __asm__ volatile("xgetbv" : "=a"(xlo), "=d"(xhi) : "c"(0));
    (void)xhi;
    if ((xlo & 0x6) != 0x6) /* the OS does not save XMM/YMM state */
        return 0;
    if (f16c)
        f |= F_F16C;
    if (__get_cpuid_max(0, NULL) < 7)
        return f;
    __cpuid_count(7, 0, a, b, c, d);
    if ((b >> 5) & 1)
        f |= F_AVX2;
    /* AVX-512 F (16), BW (30), VL (31), and opmask/ZMM state (XCR0 5-7) */
    if (((b >> 16) & 1) && ((b >> 30) & 1) && ((b >> 31) & 1) &&
        (xlo & 0xe0) == 0xe0)
        f |= F_AVX512;
#endif
    return f;
}

static const struct ncd__reduce_impl *build_named(const char *name,
                                                  unsigned feat, int *known)
{
    *known = 1;
    if (!strcmp(name, "baseline"))
        return ncd__reduce_baseline;
    if (!strcmp(name, "avx2"))
        return (feat & (F_AVX2 | F_F16C)) == (F_AVX2 | F_F16C)
                   ? ncd__reduce_avx2
                   : NULL;
    if (!strcmp(name, "avx512"))
        return (feat & (F_AVX2 | F_F16C | F_AVX512)) ==
                       (F_AVX2 | F_F16C | F_AVX512)
                   ? ncd__reduce_avx512
                   : NULL;
    *known = 0;
    return NULL;
}

static const struct ncd__reduce_impl *best(void)
{
    static const char *const order[] = {"avx512", "avx2"};
    unsigned feat = cpu_features();
    int known;
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        const struct ncd__reduce_impl *b = build_named(order[i], feat, &known);
        if (b)
            return b;
    }
    return ncd__reduce_baseline;
}

static _Atomic(const struct ncd__reduce_impl *) cur;

static const struct ncd__reduce_impl *impl(void)
{
    const struct ncd__reduce_impl *p =
        atomic_load_explicit(&cur, memory_order_acquire);
    if (!p) { /* first call: racing threads store the same answer */
        p = best();
        atomic_store_explicit(&cur, p, memory_order_release);
    }
    return p;
}

int ncd__reduce_use(const char *name)
{
    if (!name || !strcmp(name, "auto")) {
        atomic_store(&cur, best());
        return 0;
    }
    int known;
    const struct ncd__reduce_impl *b = build_named(name, cpu_features(), &known);
    if (!known)
        return NCD_EINVAL;
    if (!b)
        return NCD_EUNSUPPORTED;
    atomic_store(&cur, b);
    return 0;
}

int ncd__reduce_supported(const char *name)
{
    int known;
    return build_named(name, cpu_features(), &known) != NULL;
}

const char *ncd__reduce_current(void)
{
    return impl()->name;
}

/* Entry points (include/ncd/perf.h) ------------------------------------- */

void ncd_perf_reduce(enum ncd_perf_dtype t, enum ncd_perf_op op, void *dst,
                     const void *a, const void *b, size_t n, int scale_a,
                     int scale_b)
{
    impl()->reduce(t, op, dst, a, b, n, scale_a, scale_b);
}

void ncd_perf_reduce_finish(enum ncd_perf_dtype t, enum ncd_perf_op op,
                            void *dst, const void *src, size_t n, int nranks,
                            int scale)
{
    impl()->finish(t, op, dst, src, n, nranks, scale);
}
