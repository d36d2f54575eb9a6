/* SPDX-License-Identifier: MIT */
/*
 * TEST-ONLY stand-in for libcudart.so: "device" memory is host memory,
 * streams complete immediately.  It implements exactly the entry points
 * nccl-doctor's loader resolves (src/lib/perf/nccl.c), with the CUDA
 * runtime's ABI (cudaError_t = int, handles = pointers), so the loader and
 * the nccl backend can be exercised end to end on machines without a GPU.
 * FAKE_CUDA_DEVICES=N sets the device count (default 0: cudaErrorNoDevice).
 * Switches for `verify`'s statuses:
 *   FAKE_CUDA_DRIVER=V   cudaDriverGetVersion's answer (default 12040, the
 *                        runtime's version): 0 = no driver installed, a
 *                        value below 12040 = a driver too old for this
 *                        runtime; both make cudaGetDeviceCount fail with
 *                        cudaErrorInsufficientDriver (35), as the real one
 *   FAKE_CUDA_NO_PEER=1  cudaDeviceCanAccessPeer says no for every pair
 *   FAKE_CUDA_MEM_MB=N   cudaMemGetInfo: N MiB free of 2N (default 1024)
 *   FAKE_CUDA_PCI=a,b..  the PCI addresses of devices 0, 1... ("0000:13:00.0")
 *                        instead of 0000:1b+dev:00.0
 *   FAKE_CUDA_NAME=S     the device name (default "Fake GPU <n> ...")
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

static __thread int cur_dev;

#define RUNTIME_VERSION 12040

static int ndev(void)
{
    const char *e = getenv("FAKE_CUDA_DEVICES");
    return e ? atoi(e) : 0;
}

static int driver_version(void)
{
    const char *e = getenv("FAKE_CUDA_DRIVER");
    return e ? atoi(e) : RUNTIME_VERSION;
}

EXPORT int cudaDriverGetVersion(int *v);
EXPORT int cudaDriverGetVersion(int *v)
{
    *v = driver_version();
    return 0;
}

EXPORT int cudaGetDeviceCount(int *n);
EXPORT int cudaGetDeviceCount(int *n)
{
    if (driver_version() < RUNTIME_VERSION)
        return 35; /* cudaErrorInsufficientDriver; *n untouched */
    *n = ndev();
    return *n > 0 ? 0 : 100; /* cudaErrorNoDevice */
}

EXPORT int cudaDeviceCanAccessPeer(int *can, int dev, int peer);
EXPORT int cudaDeviceCanAccessPeer(int *can, int dev, int peer)
{
    if (dev < 0 || dev >= ndev() || peer < 0 || peer >= ndev())
        return 101;
    *can = dev != peer && !getenv("FAKE_CUDA_NO_PEER");
    return 0;
}

EXPORT int cudaMemGetInfo(size_t *free_b, size_t *total);
EXPORT int cudaMemGetInfo(size_t *free_b, size_t *total)
{
    const char *e = getenv("FAKE_CUDA_MEM_MB");
    size_t mb = e ? (size_t)atol(e) : 1024;
    *free_b = mb << 20;
    *total = 2 * (mb << 20);
    return 0;
}

/* Field `f` (0 domain, 1 bus, 2 device) of device `dev`'s PCI address
 * from FAKE_CUDA_PCI; -1 when not given. */
static int pci_field(int dev, int f)
{
    const char *e = getenv("FAKE_CUDA_PCI");
    for (int i = 0; e && i < dev; i++) {
        e = strchr(e, ',');
        if (e)
            e++;
    }
    unsigned dom, bus, d;
    if (!e || sscanf(e, "%x:%x:%x", &dom, &bus, &d) != 3)
        return -1;
    return (int)(f == 0 ? dom : f == 1 ? bus : d);
}

EXPORT const char *cudaGetErrorName(int e);
EXPORT const char *cudaGetErrorName(int e)
{
    switch (e) {
    case 0:
        return "cudaSuccess";
    case 2:
        return "cudaErrorMemoryAllocation";
    case 35:
        return "cudaErrorInsufficientDriver";
    case 100:
        return "cudaErrorNoDevice";
    case 101:
        return "cudaErrorInvalidDevice";
    default:
        return "cudaErrorUnknown";
    }
}

EXPORT const char *cudaGetErrorString(int e);
EXPORT const char *cudaGetErrorString(int e)
{
    switch (e) {
    case 0:
        return "no error";
    case 2:
        return "out of memory";
    case 35:
        return "CUDA driver version is insufficient for CUDA runtime "
               "version";
    case 100:
        return "no CUDA-capable device is detected";
    case 101:
        return "invalid device ordinal";
    default:
        return "unknown error";
    }
}

EXPORT int cudaSetDevice(int d);
EXPORT int cudaSetDevice(int d)
{
    if (d < 0 || d >= ndev())
        return 101;
    cur_dev = d;
    return 0;
}

EXPORT int cudaMalloc(void **p, size_t n);
EXPORT int cudaMalloc(void **p, size_t n)
{
    *p = malloc(n ? n : 1);
    return *p ? 0 : 2;
}

EXPORT int cudaFree(void *p);
EXPORT int cudaFree(void *p)
{
    free(p);
    return 0;
}

EXPORT int cudaMemcpy(void *d, const void *s, size_t n, int kind);
EXPORT int cudaMemcpy(void *d, const void *s, size_t n, int kind)
{
    (void)kind;
    memmove(d, s, n);
    return 0;
}

EXPORT int cudaMemset(void *d, int v, size_t n);
EXPORT int cudaMemset(void *d, int v, size_t n)
{
    memset(d, v, n);
    return 0;
}

EXPORT int cudaStreamCreateWithFlags(void **s, unsigned f);
EXPORT int cudaStreamCreateWithFlags(void **s, unsigned f)
{
    (void)f;
    *s = malloc(1);
    return *s ? 0 : 2;
}

EXPORT int cudaStreamDestroy(void *s);
EXPORT int cudaStreamDestroy(void *s)
{
    free(s);
    return 0;
}

EXPORT int cudaStreamQuery(void *s);
EXPORT int cudaStreamQuery(void *s)
{
    (void)s;
    return 0;
}

EXPORT int cudaDeviceGetAttribute(int *v, int attr, int dev);
EXPORT int cudaDeviceGetAttribute(int *v, int attr, int dev)
{
    if (dev < 0 || dev >= ndev())
        return 101;
    int f = attr == 50 ? 0 : attr == 33 ? 1 : attr == 34 ? 2 : -1;
    int given = f >= 0 ? pci_field(dev, f) : -1;
    if (given >= 0)
        *v = given;
    else
        *v = attr == 33 ? 0x1b + dev : 0; /* bus; device and domain 0 */
    return 0;
}

EXPORT int cudaGetDeviceProperties_v2(void *prop, int dev);
EXPORT int cudaGetDeviceProperties_v2(void *prop, int dev)
{
    if (dev < 0 || dev >= ndev())
        return 101;
    const char *name = getenv("FAKE_CUDA_NAME");
    if (name)
        snprintf(prop, 256, "%s", name);
    else
        snprintf(prop, 256, "Fake GPU %d (host memory, test stub)", dev);
    return 0;
}

/* Events: host timestamps (streams complete immediately). */
#include <time.h>
EXPORT int cudaEventCreate(void **e);
EXPORT int cudaEventCreate(void **e)
{
    *e = calloc(1, sizeof(struct timespec));
    return *e ? 0 : 2;
}

EXPORT int cudaEventRecord(void *e, void *s);
EXPORT int cudaEventRecord(void *e, void *s)
{
    (void)s;
    clock_gettime(CLOCK_MONOTONIC, e);
    return 0;
}

EXPORT int cudaEventSynchronize(void *e);
EXPORT int cudaEventSynchronize(void *e)
{
    (void)e;
    return 0;
}

EXPORT int cudaEventElapsedTime(float *ms, void *a, void *b);
EXPORT int cudaEventElapsedTime(float *ms, void *a, void *b)
{
    const struct timespec *x = a, *y = b;
    *ms = (float)((double)(y->tv_sec - x->tv_sec) * 1e3 +
                  (double)(y->tv_nsec - x->tv_nsec) / 1e6);
    return 0;
}

EXPORT int cudaEventDestroy(void *e);
EXPORT int cudaEventDestroy(void *e)
{
    free(e);
    return 0;
}

EXPORT int cudaRuntimeGetVersion(int *v);
EXPORT int cudaRuntimeGetVersion(int *v)
{
    *v = RUNTIME_VERSION;
    return 0;
}
