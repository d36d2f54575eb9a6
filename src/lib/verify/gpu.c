/* SPDX-License-Identifier: MIT */
/*
 * verify's GPU side (include/ncd/verify.h): whether a GPU can be used and
 * why not, and the single-card step (what paddle.utils.run_check() does
 * first: a context, memory, a one-rank communicator, an all_reduce of
 * known data checked element by element, teardown).  The CUDA runtime and
 * NCCL come from perf's loader (src/lib/perf/nccl_api.h).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ncd/error.h"
#include "verify/verify_int.h"

double verify__now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* 12040 -> "12.4"; 13000 -> "13.0" (cudaRuntimeGetVersion's code). */
static void cuda_version_text(int v, char *out, size_t len)
{
    snprintf(out, len, "%d.%d", v / 1000, (v % 1000) / 10);
}

/* NCCL_VERSION_CODE (NCCL src/nccl.h.in): X.Y.Z. */
static void nccl_version_text(int v, char *out, size_t len)
{
    if (v >= 20900)
        snprintf(out, len, "%d.%d.%d", v / 10000, (v / 100) % 100, v % 100);
    else
        snprintf(out, len, "%d.%d.%d", v / 1000, (v / 100) % 10, v % 100);
}

static const char *lib_path(void *sym, const char *dflt)
{
    Dl_info di;
    return sym && dladdr(sym, &di) && di.dli_fname ? di.dli_fname : dflt;
}

/* Why cudaGetDeviceCount failed, in the terms of verify.h. */
static void diagnose(struct ncd_ctx *ctx, struct verify__gpu *g, cuda_err e,
                     int n, int rt_version, const char *cpath)
{
    int dv = -1;
    if (g->cu.DriverGetVersion && g->cu.DriverGetVersion(&dv) != 0)
        dv = -1;
    char rt[16], drv[16];
    cuda_version_text(rt_version, rt, sizeof rt);
    cuda_version_text(dv, drv, sizeof drv);
    char call[256];
    snprintf(call, sizeof call, "cudaGetDeviceCount: %s (%d) '%s'",
             ncd__cuda_name(&g->cu, e), e, ncd__cuda_str(&g->cu, e));
    if (e != NCD_CUDA_SUCCESS && dv == 0) {
        /* what the CUDA runtime would have loaded */
        void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
        char lc[400];
        if (h) {
            snprintf(lc, sizeof lc, "libcuda.so.1 loads but reports no "
                                    "driver");
            dlclose(h);
        } else {
            const char *err = dlerror();
            snprintf(lc, sizeof lc, "%s", err ? err : "libcuda.so.1 not found");
        }
        snprintf(g->why, sizeof g->why,
                 "no driver: no NVIDIA driver is installed or loaded here "
                 "(cudaDriverGetVersion reports none; %s); %s. Install the "
                 "NVIDIA driver (or run inside a container started with "
                 "the GPUs: --gpus all / the NVIDIA device plugin)",
                 lc, call);
        return;
    }
    if (e == NCD_CUDA_INSUFFICIENT_DRIVER && dv > 0 && rt_version > 0 &&
        dv < rt_version) {
        snprintf(g->why, sizeof g->why,
                 "driver too old: the NVIDIA driver supports CUDA %s, the "
                 "CUDA runtime %s is CUDA %s; %s. Update the driver, or use "
                 "a CUDA runtime (and NCCL/framework build) of CUDA %s or "
                 "older",
                 drv, cpath, rt, call, drv);
        return;
    }
    if (e == NCD_CUDA_NO_DEVICE || (e == NCD_CUDA_SUCCESS && n <= 0)) {
        const char *cvd = ncd_getenv(ctx, "CUDA_VISIBLE_DEVICES");
        char vis[300] = "";
        if (cvd)
            snprintf(vis, sizeof vis,
                     "; CUDA_VISIBLE_DEVICES='%.200s' hides the others", cvd);
        snprintf(g->why, sizeof g->why,
                 "no GPU visible: the driver (CUDA %s) sees no device%s (%s)",
                 drv, vis,
                 e ? call : "cudaGetDeviceCount returned 0 devices");
        return;
    }
    snprintf(g->why, sizeof g->why, "CUDA error: %s (driver CUDA %s, runtime "
                                    "CUDA %s, %s)",
             call, drv, rt, cpath);
}

void verify__gpu_open(struct ncd_ctx *ctx, const struct ncd_verify_opts *o,
                      struct verify__gpu *g)
{
    memset(g, 0, sizeof *g);
    char why[1024];
    if (ncd__cudart_load(&g->cu, o->cudart_path, why, sizeof why)) {
        snprintf(g->why, sizeof g->why, "no libcudart: %s", why);
        return;
    }
    int rv = 0;
    if (g->cu.RuntimeGetVersion)
        g->cu.RuntimeGetVersion(&rv);
    char rt[16];
    cuda_version_text(rv, rt, sizeof rt);
    const char *cpath = lib_path(*(void **)&g->cu.GetDeviceCount,
                                 "libcudart.so");
    int n = 0;
    cuda_err e = g->cu.GetDeviceCount(&n);
    int nccl_ok = ncd__nccl_load(&g->nc, o->nccl_path, why, sizeof why) == 0;
    char nv[32] = "?";
    const char *npath = "libnccl.so.2";
    if (nccl_ok) {
        int v = 0;
        g->nc.GetVersion(&v);
        nccl_version_text(v, nv, sizeof nv);
        npath = lib_path(*(void **)&g->nc.GetVersion, npath);
    }
    int dv = 0;
    char drv[16] = "none";
    if (g->cu.DriverGetVersion && g->cu.DriverGetVersion(&dv) == 0 && dv > 0)
        cuda_version_text(dv, drv, sizeof drv);
    snprintf(g->info, sizeof g->info,
             "NCCL %s (%s), CUDA runtime %s (%s), driver CUDA %s",
             nccl_ok ? nv : "not loaded", npath, rt, cpath, drv);
    if (e != NCD_CUDA_SUCCESS || n <= 0) {
        diagnose(ctx, g, e, n, rv, cpath);
        return;
    }
    if (!nccl_ok) {
        snprintf(g->why, sizeof g->why, "no libnccl: %s", why);
        return;
    }
    g->ndev = n;
}

int ncd_verify_gpu_usable(struct ncd_ctx *ctx, const char *nccl_path,
                          const char *cudart_path, char *why, size_t whylen,
                          char *info, size_t infolen)
{
    struct ncd_verify_opts o;
    ncd_verify_opts_default(&o);
    o.nccl_path = nccl_path;
    o.cudart_path = cudart_path;
    struct verify__gpu *g = calloc(1, sizeof *g);
    if (!g) {
        snprintf(why, whylen, "out of memory");
        return 0;
    }
    verify__gpu_open(ctx, &o, g);
    snprintf(why, whylen, "%s", g->why);
    snprintf(info, infolen, "%s", g->info);
    int n = g->ndev;
    free(g);
    return n;
}

void verify__gpu_bdf(struct verify__gpu *g, int dev, char *out, size_t len)
{
    int bus = -1, d = -1, dom = -1;
    out[0] = '\0';
    if (g->cu.DeviceGetAttribute(&bus, NCD_CUDA_ATTR_PCI_BUS, dev) ||
        g->cu.DeviceGetAttribute(&d, NCD_CUDA_ATTR_PCI_DEVICE, dev) ||
        g->cu.DeviceGetAttribute(&dom, NCD_CUDA_ATTR_PCI_DOMAIN, dev))
        return;
    snprintf(out, len, "%04x:%02x:%02x.0", (unsigned)dom, (unsigned)bus,
             (unsigned)d);
}

void verify__gpu_name(struct verify__gpu *g, int dev, char *out, size_t len)
{
    /* cudaDeviceProp starts with char name[256]; 8 KiB covers every
     * version's struct size */
    char *prop = calloc(1, 8192);
    if (prop && g->cu.GetDeviceProperties(prop, dev) == NCD_CUDA_SUCCESS) {
        prop[255] = '\0';
        snprintf(out, len, "%s", prop);
    } else {
        snprintf(out, len, "CUDA device %d", dev);
    }
    free(prop);
}

int verify__gpu_peer(struct verify__gpu *g, int a, int b)
{
    int can = 0;
    if (!g->cu.DeviceCanAccessPeer ||
        g->cu.DeviceCanAccessPeer(&can, a, b) != NCD_CUDA_SUCCESS)
        return -1;
    return can ? 1 : 0;
}

size_t verify__gpu_free_mem(struct verify__gpu *g, int dev)
{
    size_t fr = 0, total = 0;
    if (!g->cu.MemGetInfo || g->cu.SetDevice(dev) ||
        g->cu.MemGetInfo(&fr, &total))
        return 0;
    return fr;
}

/* ---- the single card ---------------------------------------------------- */

#define ELEMS (1u << 18) /* floats in the all_reduce: 1 MiB */
#define NCCL_FLOAT 7     /* ncclFloat32 */
#define NCCL_SUM 0       /* ncclSum */

struct card {
    struct verify__gpu *g;
    struct ncd_verify_step *s;
    const struct ncd_verify_opts *o;
    int dev;
    void *dsend, *drecv;
    cuda_stream stream;
    nccl_comm comm;
    float *hin, *hout;
};

static int cuda_failed(struct card *c, cuda_err e, const char *what)
{
    c->s->status = NCD_VERIFY_FAIL;
    ncd_verify_reason(c->s, "%s failed on GPU %d: %s (%d) '%s'", what, c->dev,
                      ncd__cuda_name(&c->g->cu, e), e,
                      ncd__cuda_str(&c->g->cu, e));
    return -1;
}

static int nccl_failed(struct card *c, nccl_res r, const char *what)
{
    const char *last = c->g->nc.GetLastError ? c->g->nc.GetLastError(c->comm)
                                             : NULL;
    c->s->status = NCD_VERIFY_FAIL;
    ncd_verify_reason(c->s, "%s failed on GPU %d: %s%s%s", what, c->dev,
                      c->g->nc.GetErrorString(r), last && *last ? " / " : "",
                      last && *last ? last : "");
    return -1;
}

/* Waits for the stream with the timeout, watching NCCL's async error. */
static int wait_stream(struct card *c, const char *what)
{
    double t0 = verify__now();
    for (;;) {
        cuda_err e = c->g->cu.StreamQuery(c->stream);
        if (e == NCD_CUDA_SUCCESS)
            return 0;
        if (e != NCD_CUDA_NOT_READY)
            return cuda_failed(c, e, what);
        nccl_res ae = 0;
        if (c->comm && c->g->nc.CommGetAsyncError(c->comm, &ae) == 0 && ae) {
            nccl_failed(c, ae, what);
            c->g->nc.CommAbort(c->comm);
            c->comm = NULL;
            return -1;
        }
        if (verify__now() - t0 > c->o->timeout_s) {
            c->s->status = NCD_VERIFY_FAIL;
            ncd_verify_reason(c->s,
                              "%s on GPU %d did not finish within %d s (the "
                              "communicator was aborted)",
                              what, c->dev, c->o->timeout_s);
            if (c->comm)
                c->g->nc.CommAbort(c->comm);
            c->comm = NULL;
            return -1;
        }
        usleep(50);
    }
}

static int card_setup(struct card *c)
{
    struct ncd__cudart_api *cu = &c->g->cu;
    double t0 = verify__now();
    cuda_err e = cu->SetDevice(c->dev);
    if (e)
        return cuda_failed(c, e, "cudaSetDevice");
    if ((e = cu->Free(NULL)) != NCD_CUDA_SUCCESS) /* makes the context */
        return cuda_failed(c, e, "creating the CUDA context");
    char name[256];
    verify__gpu_name(c->g, c->dev, name, sizeof name);
    size_t fr = 0, total = 0;
    if (cu->MemGetInfo && cu->MemGetInfo(&fr, &total) == 0)
        ncd_verify_evidence(c->s,
                            "CUDA context on %s: ok (%.1f GiB free of %.1f "
                            "GiB, %.3f s)",
                            name, fr / 1073741824.0, total / 1073741824.0,
                            verify__now() - t0);
    else
        ncd_verify_evidence(c->s, "CUDA context on %s: ok (%.3f s)", name,
                            verify__now() - t0);
    size_t bytes = ELEMS * sizeof(float);
    if ((e = cu->Malloc(&c->dsend, bytes)) != NCD_CUDA_SUCCESS) {
        c->dsend = NULL;
        return cuda_failed(c, e, "cudaMalloc");
    }
    if ((e = cu->Malloc(&c->drecv, bytes)) != NCD_CUDA_SUCCESS) {
        c->drecv = NULL;
        return cuda_failed(c, e, "cudaMalloc");
    }
    if ((e = cu->StreamCreateWithFlags(&c->stream,
                                       NCD_CUDA_STREAM_NON_BLOCKING)))
        return cuda_failed(c, e, "cudaStreamCreateWithFlags");
    ncd_verify_evidence(c->s, "device memory: 2 x %zu MiB allocated, a "
                              "stream created",
                        bytes >> 20);
    return 0;
}

static int card_allreduce(struct card *c)
{
    struct ncd__cudart_api *cu = &c->g->cu;
    struct ncd__nccl_api *nc = &c->g->nc;
    double t0 = verify__now();
    nccl_uid id;
    memset(&id, 0, sizeof id);
    nccl_res r = nc->GetUniqueId(&id);
    if (r)
        return nccl_failed(c, r, "ncclGetUniqueId");
    r = nc->CommInitRank(&c->comm, 1, id, 0);
    if (r) {
        c->comm = NULL;
        return nccl_failed(c, r, "ncclCommInitRank (1 rank)");
    }
    ncd_verify_evidence(c->s, "NCCL communicator of 1 rank: ok (%.3f s)",
                        verify__now() - t0);
    size_t bytes = ELEMS * sizeof(float);
    c->hin = malloc(bytes);
    c->hout = malloc(bytes);
    if (!c->hin || !c->hout) {
        c->s->status = NCD_VERIFY_FAIL;
        ncd_verify_reason(c->s, "out of host memory");
        return -1;
    }
    /* small integers: exact in float, different in every element */
    for (size_t i = 0; i < ELEMS; i++)
        c->hin[i] = (float)((i * 7919u) % 2048u) - 1024.0f;
    cuda_err e = cu->Memcpy(c->dsend, c->hin, bytes, NCD_CUDA_MEMCPY_DEFAULT);
    if (!e) /* the result buffer starts as NaNs: untouched shows */
        e = cu->Memset(c->drecv, 0xff, bytes);
    if (e)
        return cuda_failed(c, e, "cudaMemcpy/cudaMemset");
    t0 = verify__now();
    r = nc->AllReduce(c->dsend, c->drecv, ELEMS, NCCL_FLOAT, NCCL_SUM, c->comm,
                      c->stream);
    if (r)
        return nccl_failed(c, r, "ncclAllReduce");
    if (wait_stream(c, "ncclAllReduce"))
        return -1;
    double secs = verify__now() - t0;
    if ((e = cu->Memcpy(c->hout, c->drecv, bytes, NCD_CUDA_MEMCPY_DEFAULT)))
        return cuda_failed(c, e, "cudaMemcpy");
    size_t wrong = 0, first = 0;
    for (size_t i = 0; i < ELEMS; i++)
        if (memcmp(&c->hout[i], &c->hin[i], sizeof(float)) != 0 && !wrong++)
            first = i;
    if (wrong) {
        c->s->status = NCD_VERIFY_FAIL;
        ncd_verify_reason(c->s,
                          "ncclAllReduce on GPU %d gave a wrong result: %zu "
                          "of %u elements differ (first at %zu: %g instead "
                          "of %g)",
                          c->dev, wrong, ELEMS, first, (double)c->hout[first],
                          (double)c->hin[first]);
        return -1;
    }
    ncd_verify_evidence(c->s,
                        "all_reduce (sum) of %u floats: every element as "
                        "expected (%.3f s)",
                        ELEMS, secs);
    return 0;
}

/* Frees what was made; a failure here fails the step (a leak or a hang at
 * teardown is a problem too). */
static void card_teardown(struct card *c, int ok)
{
    struct ncd__cudart_api *cu = &c->g->cu;
    double t0 = verify__now();
    nccl_res r = 0;
    cuda_err e = 0, e2 = 0;
    if (c->comm)
        r = c->g->nc.CommDestroy(c->comm);
    if (c->stream)
        e = cu->StreamDestroy(c->stream);
    if (c->dsend)
        e2 = cu->Free(c->dsend);
    if (c->drecv && !e2)
        e2 = cu->Free(c->drecv);
    free(c->hin);
    free(c->hout);
    if (!ok)
        return;
    if (r)
        nccl_failed(c, r, "ncclCommDestroy");
    else if (e || e2)
        cuda_failed(c, e ? e : e2, "teardown (cudaStreamDestroy/cudaFree)");
    else
        ncd_verify_evidence(c->s, "teardown: communicator, stream and "
                                  "buffers freed (%.3f s)",
                            verify__now() - t0);
}

void verify__step_gpu(const struct ncd_verify_opts *o, struct verify__gpu *g,
                      int dev, struct ncd_verify_step *s)
{
    struct card c = {.g = g, .s = s, .o = o, .dev = dev};
    s->status = NCD_VERIFY_PASS;
    int ok = card_setup(&c) == 0 && card_allreduce(&c) == 0;
    card_teardown(&c, ok);
    if (s->status == NCD_VERIFY_PASS) {
        char name[256];
        verify__gpu_name(g, dev, name, sizeof name);
        ncd_verify_reason(s, "GPU %d (%s): context, memory, a 1-rank "
                             "communicator and an all_reduce work",
                          dev, name);
    }
}
