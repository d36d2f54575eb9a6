/* SPDX-License-Identifier: MIT */
/* AddressSanitizer's default options for this project's sanitizer builds
 * (NCD_ASAN=ON; cmake/warnings.cmake adds this file to every executable
 * built with ASan).
 * The ASan runtime calls this weak hook before it parses ASAN_OPTIONS, so
 * the environment still overrides anything set here.
 *
 * intercept_tls_get_addr=0: GCC 12's sanitizer runtime (Debian 12) records
 * the dynamic TLS block of a dlopen()ed library through __tls_get_addr and
 * guesses the block's bounds from a glibc 2.19 header whenever the block
 * starts 16 bytes into a page.  On glibc 2.25 and newer that header does
 * not exist, the guess reads unrelated heap words, and LeakSanitizer's
 * tracer then scans a range starting near address 0 and dies at exit with
 * "Tracer caught signal 11" (google/sanitizers#1322).  Whether it happens
 * depends on where malloc places the block, hence on the size of the
 * environment: here a 16-byte change of one variable turned it on and off
 * for t0711 case 7, whose processes dlopen the test stand-ins
 * (tests/perf/fake_*.c, which use __thread); the real libnccl and libcudart
 * do too.  Without the interception LeakSanitizer still sees those blocks:
 * glibc allocates them with malloc and the thread's DTV, reachable from
 * its static TLS, points at them, so nothing they reference is reported. */
const char *__asan_default_options(void);

__attribute__((used, visibility("default")))
const char *__asan_default_options(void)
{
    return "intercept_tls_get_addr=0";
}
