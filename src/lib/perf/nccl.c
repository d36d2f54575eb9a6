/* SPDX-License-Identifier: MIT */
/*
 * The `nccl` backend: libnccl.so.2 and the CUDA runtime loaded with dlopen
 * through a function table (no link-time CUDA dependency).  Prototypes are
 * ABI-level restatements of NCCL's src/nccl.h.in (2.18-2.30) and the CUDA
 * runtime API (cuda_runtime_api.h, CUDA 11-13): handles are opaque
 * pointers, ncclUniqueId is 128 bytes passed by value, enums are int.
 *
 * One thread per rank, one communicator and one stream each; -m fuses ops
 * in ncclGroupStart/End; alltoall, gather, scatter and hypercube are
 * grouped ncclSend/ncclRecv as in nccl-tests; mulsum uses
 * ncclRedOpCreatePreMulSum.  sync() polls the stream and
 * ncclCommGetAsyncError and aborts the communicator after -T seconds.
 * The time column comes from CUDA events recorded on the rank's stream
 * around the timed loop (cudaEventElapsedTime), the wall clock when the
 * runtime lacks events or with -z 1 / -z 3; -I records a start and an end
 * event per iteration.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ncd/error.h"
#include "ncd/job.h"
#include "ncd/perf.h"
#include "ncd/sock.h"
#include "perf/backend.h"
#include "perf/coll.h"
#include "perf/nccl_api.h"
#include "perf/perf_int.h"


struct nccl_proc {
    struct ncd__cudart_api cu;
    struct ncd__nccl_api nc;
    int ndev;
};

struct nccl_rank {
    uint64_t init_bytes; /* device memory taken by ncclCommInitRank */
    void *ev[2];         /* CUDA events around the timed loop */
    void **iev;          /* -I: 2 per iteration (start, end) */
    int niev;
    int dev;
    nccl_comm comm;
    cuda_stream stream;
};

#define NCCL_SCALAR_HOST_IMMEDIATE 1

static void *sym(void *h, const char *name, int *missing,
                 const char **first_missing)
{
    void *p = dlsym(h, name);
    if (!p && missing) {
        if (!*missing)
            *first_missing = name;
        (*missing)++;
    }
    return p;
}

#define LOAD(tbl, field, name, req)                                            \
    do {                                                                       \
        *(void **)&(tbl)->field =                                              \
            sym((tbl)->h, name, (req) ? &missing : NULL, &first_missing);      \
    } while (0)

/* Where dlopen looks, for the message when the library is missing. */
static void search_path_text(char *out, size_t len)
{
    const char *ld = getenv("LD_LIBRARY_PATH");
    snprintf(out, len,
             "LD_LIBRARY_PATH=%s, the ld.so cache (/etc/ld.so.cache) and "
             "/lib, /usr/lib",
             ld && *ld ? ld : "(unset)");
}

/* On failure `why` says what is missing and where it looked; `quote`
 * (>= 512 bytes) receives the loader's own words (dlerror). */
static int load_cudart(struct ncd__cudart_api *cu, const char *path,
                       char *why, size_t whylen, char *quote)
{
    static const char *const names[] = {"libcudart.so",    "libcudart.so.13",
                                        "libcudart.so.12", "libcudart.so.11.0",
                                        NULL};
    char err[512] = "";
    memset(cu, 0, sizeof *cu);
    if (path) {
        cu->h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!cu->h)
            snprintf(err, sizeof err, "%s", dlerror());
    } else {
        for (int i = 0; names[i] && !cu->h; i++) {
            cu->h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
            if (!cu->h && !*err)
                snprintf(err, sizeof err, "%s", dlerror());
        }
    }
    if (!cu->h) {
        char sp[400];
        search_path_text(sp, sizeof sp);
        snprintf(why, whylen,
                 "the CUDA runtime (%s) could not be loaded: %s; looked in %s",
                 path ? path : "libcudart.so, .so.13, .so.12, .so.11.0", err,
                 sp);
        snprintf(quote, 512, "%s", err);
        return -1;
    }
    int missing = 0;
    const char *first_missing = NULL;
    LOAD(cu, GetDeviceCount, "cudaGetDeviceCount", 1);
    LOAD(cu, SetDevice, "cudaSetDevice", 1);
    LOAD(cu, Malloc, "cudaMalloc", 1);
    LOAD(cu, Free, "cudaFree", 1);
    LOAD(cu, Memcpy, "cudaMemcpy", 1);
    LOAD(cu, Memset, "cudaMemset", 1);
    LOAD(cu, StreamCreateWithFlags, "cudaStreamCreateWithFlags", 1);
    LOAD(cu, StreamDestroy, "cudaStreamDestroy", 1);
    LOAD(cu, StreamQuery, "cudaStreamQuery", 1);
    LOAD(cu, GetErrorName, "cudaGetErrorName", 1);
    LOAD(cu, GetErrorString, "cudaGetErrorString", 1);
    LOAD(cu, DeviceGetAttribute, "cudaDeviceGetAttribute", 1);
    LOAD(cu, RuntimeGetVersion, "cudaRuntimeGetVersion", 0);
    LOAD(cu, MemGetInfo, "cudaMemGetInfo", 0);
    LOAD(cu, EventCreate, "cudaEventCreate", 0);
    LOAD(cu, EventRecord, "cudaEventRecord", 0);
    LOAD(cu, EventSynchronize, "cudaEventSynchronize", 0);
    LOAD(cu, EventElapsedTime, "cudaEventElapsedTime", 0);
    LOAD(cu, EventDestroy, "cudaEventDestroy", 0);
    LOAD(cu, DriverGetVersion, "cudaDriverGetVersion", 0);
    LOAD(cu, DeviceCanAccessPeer, "cudaDeviceCanAccessPeer", 0);
    /* CUDA 12 renamed the symbol; the old one remains for old binaries */
    LOAD(cu, GetDeviceProperties, "cudaGetDeviceProperties_v2", 0);
    if (!cu->GetDeviceProperties)
        LOAD(cu, GetDeviceProperties, "cudaGetDeviceProperties", 1);
    if (missing) {
        snprintf(why, whylen,
                 "the CUDA runtime lacks %s (and %d other symbol%s): not a "
                 "CUDA runtime library?",
                 first_missing, missing - 1, missing == 2 ? "" : "s");
        snprintf(quote, 512, "undefined symbol: %s", first_missing);
        dlclose(cu->h);
        cu->h = NULL;
        return -1;
    }
    return 0;
}

static int load_nccl(struct ncd__nccl_api *nc, const char *path, char *why,
                     size_t whylen, char *quote)
{
    memset(nc, 0, sizeof *nc);
    const char *name = path ? path : "libnccl.so.2";
    nc->h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!nc->h) {
        char sp[400];
        search_path_text(sp, sizeof sp);
        snprintf(quote, 512, "%s", dlerror());
        snprintf(why, whylen, "%s could not be loaded: %s; looked in %s",
                 name, quote, sp);
        return -1;
    }
    int missing = 0;
    const char *first_missing = NULL;
    LOAD(nc, GetVersion, "ncclGetVersion", 1);
    LOAD(nc, GetUniqueId, "ncclGetUniqueId", 1);
    LOAD(nc, CommInitRank, "ncclCommInitRank", 1);
    LOAD(nc, CommDestroy, "ncclCommDestroy", 1);
    LOAD(nc, CommAbort, "ncclCommAbort", 1);
    LOAD(nc, CommGetAsyncError, "ncclCommGetAsyncError", 1);
    LOAD(nc, GetErrorString, "ncclGetErrorString", 1);
    LOAD(nc, GetLastError, "ncclGetLastError", 0);
    LOAD(nc, AllReduce, "ncclAllReduce", 1);
    LOAD(nc, Broadcast, "ncclBroadcast", 1);
    LOAD(nc, Reduce, "ncclReduce", 1);
    LOAD(nc, AllGather, "ncclAllGather", 1);
    LOAD(nc, ReduceScatter, "ncclReduceScatter", 1);
    LOAD(nc, Send, "ncclSend", 1);
    LOAD(nc, Recv, "ncclRecv", 1);
    LOAD(nc, GroupStart, "ncclGroupStart", 1);
    LOAD(nc, GroupEnd, "ncclGroupEnd", 1);
    LOAD(nc, RedOpCreatePreMulSum, "ncclRedOpCreatePreMulSum", 0);
    LOAD(nc, RedOpDestroy, "ncclRedOpDestroy", 0);
    if (missing) {
        snprintf(why, whylen,
                 "%s lacks %s (and %d other symbol%s): NCCL older than 2.7 "
                 "or not NCCL",
                 name, first_missing, missing - 1, missing == 2 ? "" : "s");
        snprintf(quote, 512, "%s: undefined symbol: %s", name,
                 first_missing);
        dlclose(nc->h);
        nc->h = NULL;
        return -1;
    }
    return 0;
}

const char *ncd__cuda_name(const struct ncd__cudart_api *cu, cuda_err e)
{
    const char *n = cu->GetErrorName ? cu->GetErrorName(e) : NULL;
    return n ? n : "cudaError?";
}

const char *ncd__cuda_str(const struct ncd__cudart_api *cu, cuda_err e)
{
    const char *n = cu->GetErrorString ? cu->GetErrorString(e) : NULL;
    return n ? n : "unknown CUDA error";
}

int ncd__cudart_load(struct ncd__cudart_api *cu, const char *path, char *why,
                     size_t whylen)
{
    char quote[512];
    return load_cudart(cu, path, why, whylen, quote);
}

int ncd__nccl_load(struct ncd__nccl_api *nc, const char *path, char *why,
                   size_t whylen)
{
    char quote[512];
    return load_nccl(nc, path, why, whylen, quote);
}

/* Backend ---------------------------------------------------------------- */

/* NCCL_VERSION_CODE: major*10000+minor*100+patch since 2.9, before that
 * major*1000+minor*100+patch (NCCL src/nccl.h.in). */
static void version_text(int v, char *out, size_t len)
{
    if (v >= 20900)
        snprintf(out, len, "%d.%d.%d", v / 10000, (v / 100) % 100, v % 100);
    else
        snprintf(out, len, "%d.%d.%d", v / 1000, (v / 100) % 10, v % 100);
}

/* ncclSystemError's string (NCCL src/init.cc ncclGetErrorString): what
 * NCCL answers when a library it needs cannot be loaded. */
#define NCCL_SYSTEM_ERROR_STR                                                  \
    "unhandled system error (run with NCCL_DEBUG=INFO for details)"

static int nccl_open(struct ncd__rt *rt)
{
    struct nccl_proc *P = calloc(1, sizeof *P);
    if (!P) {
        ncd__rt_fail(rt, NCD_PT_INTERNAL, "out of memory");
        return NCD_PT_INTERNAL;
    }
    char why[1024], dl[512], quote[640];
    if (load_nccl(&P->nc, rt->job->nccl_path, why, sizeof why, dl)) {
        /* nccl-tests links libnccl.so.2: without it, it does not start;
         * here the first NCCL call of its run() fails */
        snprintf(quote, sizeof quote, "%s / %s", NCCL_SYSTEM_ERROR_STR, dl);
        ncd__rt_fail_at(rt, NCD_PERF_STAGE_UNIQUE_ID, NCD_PT_NCCL, quote,
                        "%s", why);
        free(P);
        return NCD_PT_NCCL;
    }
    int v = 0;
    P->nc.GetVersion(&v);
    rt->nccl_version = v;
    if (load_cudart(&P->cu, rt->job->cudart_path, why, sizeof why, dl)) {
        ncd__rt_fail_at(rt, NCD_PERF_STAGE_OPEN, NCD_PT_CUDA, dl, "%s", why);
        dlclose(P->nc.h);
        free(P);
        return NCD_PT_CUDA;
    }
    char vtxt[64];
    version_text(v, vtxt, sizeof vtxt);
    Dl_info di;
    const char *npath = dladdr(*(void **)&P->nc.GetVersion, &di) && di.dli_fname
                            ? di.dli_fname
                            : "libnccl.so.2";
    const char *cpath = dladdr(*(void **)&P->cu.GetDeviceCount, &di) &&
                                di.dli_fname
                            ? di.dli_fname
                            : "libcudart.so";
    cuda_err e = P->cu.GetDeviceCount(&P->ndev);
    if (e == NCD_CUDA_SUCCESS && P->ndev == 0)
        e = NCD_CUDA_NO_DEVICE; /* what CUDA answers on such a machine */
    if (e != NCD_CUDA_SUCCESS) {
        ncd__rt_fail_at(rt, NCD_PERF_STAGE_OPEN, NCD_PT_CUDA,
                        ncd__cuda_str(&P->cu, e),
                        "cudaGetDeviceCount: %s (%d) '%s' (CUDA runtime %s, "
                        "NCCL %s from %s)",
                        ncd__cuda_name(&P->cu, e), e, ncd__cuda_str(&P->cu, e), cpath,
                        vtxt, npath);
        dlclose(P->cu.h);
        dlclose(P->nc.h);
        free(P);
        return NCD_PT_CUDA;
    }
    int first = rt->job->device0 >= 0 ? rt->job->device0
                                      : rt->job->local_proc * rt->nlocal;
    if (first + rt->nlocal > P->ndev) {
        ncd__rt_fail_at(rt, NCD_PERF_STAGE_OPEN, NCD_PT_NOTIMPL, NULL,
                        "Invalid number of GPUs: %d requested but only %d "
                        "were found.\nPlease check the number of processes "
                        "and GPUs per process.",
                        first + rt->nlocal, P->ndev);
        dlclose(P->cu.h);
        dlclose(P->nc.h);
        free(P);
        return NCD_PT_NOTIMPL;
    }
    snprintf(rt->desc, sizeof rt->desc,
             "nccl (NCCL %s, %d CUDA device%s visible; %s, %s)", vtxt,
             P->ndev, P->ndev == 1 ? "" : "s", npath, cpath);
    rt->be_proc = P;
    return 0;
}

static void nccl_close(struct ncd__rt *rt)
{
    struct nccl_proc *P = rt->be_proc;
    if (!P)
        return;
    /* the CUDA runtime and NCCL stay loaded: their threads may still run
     * atexit handlers; unloading them is unsafe */
    free(P);
    rt->be_proc = NULL;
}

static int nccl_fail(struct ncd__rank *rk, enum ncd_perf_stage stage,
                     nccl_res r, const char *what)
{
    struct nccl_proc *P = rk->rt->be_proc;
    struct nccl_rank *n = rk->be;
    const char *last = P->nc.GetLastError && n ? P->nc.GetLastError(n->comm)
                                               : "";
    char quote[512];
    snprintf(quote, sizeof quote, "%s / %s", P->nc.GetErrorString(r),
             last ? last : "");
    ncd__rt_fail_at(rk->rt, stage, NCD_PT_NCCL, quote, "%s '%s'", what, quote);
    return -1;
}

static int cuda_fail(struct ncd__rank *rk, enum ncd_perf_stage stage,
                     cuda_err e, const char *what)
{
    struct nccl_proc *P = rk->rt->be_proc;
    ncd__rt_fail_at(rk->rt, stage, NCD_PT_CUDA, ncd__cuda_str(&P->cu, e),
                    "%s %s (%d) '%s'", what, ncd__cuda_name(&P->cu, e), e,
                    ncd__cuda_str(&P->cu, e));
    return -1;
}

static void nccl_rank_fini(struct ncd__rank *rk);

static int rank_init_steps(struct ncd__rank *rk)
{
    struct ncd__rt *rt = rk->rt;
    struct nccl_proc *P = rt->be_proc;
    struct nccl_rank *n = calloc(1, sizeof *n);
    if (!n) {
        ncd__rt_fail(rt, NCD_PT_INTERNAL, "out of memory");
        return -1;
    }
    rk->be = n;
    n->dev = (rt->job->device0 >= 0 ? rt->job->device0
                                     : rt->job->local_proc * rt->nlocal) +
             rk->local;
    cuda_err e = P->cu.SetDevice(n->dev);
    if (e)
        return cuda_fail(rk, NCD_PERF_STAGE_DEVICE, e, "cudaSetDevice");
    e = P->cu.StreamCreateWithFlags(&n->stream, NCD_CUDA_STREAM_NON_BLOCKING);
    if (e)
        return cuda_fail(rk, NCD_PERF_STAGE_DEVICE, e,
                         "cudaStreamCreateWithFlags");
    nccl_uid id, *all = malloc(sizeof id * (size_t)rt->nranks);
    if (!all) {
        ncd__rt_fail(rt, NCD_PT_INTERNAL, "out of memory");
        return -1;
    }
    memset(&id, 0, sizeof id);
    if (rk->rank == 0) {
        nccl_res r = P->nc.GetUniqueId(&id);
        if (r) {
            free(all);
            return nccl_fail(rk, NCD_PERF_STAGE_UNIQUE_ID, r,
                             "ncclGetUniqueId");
        }
    }
    if (ncd__rt_allgather(rk, &id, sizeof id, all)) {
        free(all);
        return -1;
    }
    id = all[0];
    free(all);
    size_t free0 = 0, free1 = 0, total = 0;
    if (P->cu.MemGetInfo)
        P->cu.MemGetInfo(&free0, &total);
    nccl_res r = P->nc.CommInitRank(&n->comm, rt->nranks, id, rk->rank);
    if (P->cu.MemGetInfo && P->cu.MemGetInfo(&free1, &total) == 0 &&
        free0 > free1)
        n->init_bytes = free0 - free1;
    if (r) {
        n->comm = NULL;
        return nccl_fail(rk, NCD_PERF_STAGE_INIT, r, "ncclCommInitRank");
    }
    return 0;
}

/* A failed init frees what it made: rank_fini runs only after success. */
static int nccl_rank_init(struct ncd__rank *rk)
{
    if (rank_init_steps(rk) == 0)
        return 0;
    nccl_rank_fini(rk);
    return -1;
}

static void nccl_rank_fini(struct ncd__rank *rk)
{
    struct nccl_proc *P = rk->rt->be_proc;
    struct nccl_rank *n = rk->be;
    if (!n)
        return;
    P->cu.SetDevice(n->dev);
    if (n->comm) {
        if (atomic_load(&rk->rt->abort))
            P->nc.CommAbort(n->comm);
        else
            P->nc.CommDestroy(n->comm);
    }
    for (int i = 0; i < 2; i++)
        if (n->ev[i] && P->cu.EventDestroy)
            P->cu.EventDestroy(n->ev[i]);
    for (int i = 0; i < n->niev; i++)
        if (n->iev[i] && P->cu.EventDestroy)
            P->cu.EventDestroy(n->iev[i]);
    free(n->iev);
    if (n->stream)
        P->cu.StreamDestroy(n->stream);
    free(n);
    rk->be = NULL;
}

static void nccl_describe(struct ncd__rank *rk, struct ncd_perf_device *d)
{
    struct nccl_proc *P = rk->rt->be_proc;
    struct nccl_rank *n = rk->be;
    d->rank = rk->rank;
    d->pid = (int)getpid();
    ncd_job_hostname(d->host, sizeof d->host);
    d->device = n->dev;
    int bus = 0, dev = 0, dom = 0;
    P->cu.DeviceGetAttribute(&bus, NCD_CUDA_ATTR_PCI_BUS, n->dev);
    P->cu.DeviceGetAttribute(&dev, NCD_CUDA_ATTR_PCI_DEVICE, n->dev);
    P->cu.DeviceGetAttribute(&dom, NCD_CUDA_ATTR_PCI_DOMAIN, n->dev);
    snprintf(d->busid, sizeof d->busid, "%04x:%02x:%02x", (unsigned)dom,
             (unsigned)bus, (unsigned)dev);
    /* cudaDeviceProp starts with char name[256]; 8 KiB covers every
     * version's struct size */
    char *prop = calloc(1, 8192);
    if (prop && P->cu.GetDeviceProperties(prop, n->dev) == NCD_CUDA_SUCCESS) {
        prop[255] = '\0';
        snprintf(d->name, sizeof d->name, "%s", prop);
    } else {
        snprintf(d->name, sizeof d->name, "CUDA device %d", n->dev);
    }
    free(prop);
}

static int nccl_alloc(struct ncd__rank *rk, size_t bytes)
{
    struct nccl_proc *P = rk->rt->be_proc;
    void *s = NULL, *r = NULL;
    cuda_err e = P->cu.Malloc(&s, bytes);
    if (!e)
        e = P->cu.Malloc(&r, bytes);
    if (e) {
        if (s)
            P->cu.Free(s);
        return cuda_fail(rk, NCD_PERF_STAGE_ALLOC, e, "cudaMalloc");
    }
    P->cu.Memset(s, 0, bytes);
    P->cu.Memset(r, 0, bytes);
    rk->send = s;
    rk->recv = r;
    rk->buflen = bytes;
    rk->hsend = malloc(bytes);
    rk->hrecv = malloc(bytes);
    if (!rk->hsend || !rk->hrecv) {
        ncd__rt_fail(rk->rt, NCD_PT_INTERNAL, "out of host memory");
        return -1;
    }
    return 0;
}

static void nccl_free(struct ncd__rank *rk)
{
    struct nccl_proc *P = rk->rt->be_proc;
    if (rk->send)
        P->cu.Free(rk->send);
    if (rk->recv)
        P->cu.Free(rk->recv);
    free(rk->hsend);
    free(rk->hrecv);
    rk->send = rk->recv = rk->hsend = rk->hrecv = NULL;
}

/* Device-to-device copy for a collective's NCCL call (ncd__nccl_call). */
static int dev_copy(void *arg, void *dst, const void *src, size_t n)
{
    struct ncd__rank *rk = arg;
    struct nccl_proc *P = rk->rt->be_proc;
    cuda_err e = P->cu.Memcpy(dst, src, n, NCD_CUDA_MEMCPY_DEFAULT);
    return e ? cuda_fail(rk, NCD_PERF_STAGE_RUN, e, "cudaMemcpy") : 0;
}

static int nccl_run(struct ncd__rank *rk, enum ncd_perf_coll c,
                    enum ncd_perf_dtype t, enum ncd_perf_op op, int root,
                    const void *send, void *recv,
                    const struct ncd_perf_counts *k)
{
    struct ncd__rt *rt = rk->rt;
    struct nccl_proc *P = rt->be_proc;
    struct ncd__nccl_api *nc = &P->nc;
    struct nccl_rank *n = rk->be;
    int nr = rt->nranks, me = rk->rank;
    size_t es = ncd_perf_dtype_size(t);
    size_t cnt = k->paramcount;
    int rop = op, created = 0;
    nccl_res r = 0;
    if (op == NCD_OP_MULSUM) {
        if (!nc->RedOpCreatePreMulSum) {
            ncd__rt_fail(rt, NCD_PT_NOTIMPL, "this NCCL has no "
                                             "ncclRedOpCreatePreMulSum "
                                             "(mulsum needs NCCL >= 2.11)");
            return -1;
        }
        /* scalar in the element type, host-immediate */
        unsigned char scalar[8] = {0};
        double s = NCD_PERF_MULSUM_SCALAR;
        switch (t) {
        case NCD_DT_FLOAT: {
            float f = (float)s;
            memcpy(scalar, &f, 4);
            break;
        }
        case NCD_DT_DOUBLE:
            memcpy(scalar, &s, 8);
            break;
        case NCD_DT_HALF: {
            uint16_t h = ncd__f32_to_half((float)s);
            memcpy(scalar, &h, 2);
            break;
        }
        case NCD_DT_BFLOAT16: {
            uint16_t h = ncd__f32_to_bf16((float)s);
            memcpy(scalar, &h, 2);
            break;
        }
        default: {
            uint64_t v = NCD_PERF_MULSUM_SCALAR;
            memcpy(scalar, &v, 8); /* little-endian: low bytes first */
            break;
        }
        }
        r = nc->RedOpCreatePreMulSum(&rop, scalar, t,
                                     NCCL_SCALAR_HOST_IMMEDIATE, n->comm);
        if (r)
            return nccl_fail(rk, NCD_PERF_STAGE_RUN, r,
                             "ncclRedOpCreatePreMulSum");
        created = 1;
    }
    struct ncd__nccl_call call = {.nc = nc,
                                  .comm = n->comm,
                                  .stream = n->stream,
                                  .send = send,
                                  .recv = recv,
                                  .count = cnt,
                                  .esize = es,
                                  .dtype = t,
                                  .op = rop,
                                  .root = root,
                                  .rank = me,
                                  .nranks = nr,
                                  .k = k,
                                  .copy = dev_copy,
                                  .copy_arg = rk};
    const struct ncd__coll *row = ncd__coll(c);
    r = row ? row->nccl(&call) : NCD_NCCL_INVALID_ARGUMENT;
    if (created && nc->RedOpDestroy)
        nc->RedOpDestroy(rop, n->comm);
    if (r < 0) /* the copy failed and said so */
        return -1;
    if (r)
        return nccl_fail(rk, NCD_PERF_STAGE_RUN, r, ncd_perf_coll_name(c));
    return 0;
}

static int nccl_group_start(struct ncd__rank *rk)
{
    struct nccl_proc *P = rk->rt->be_proc;
    nccl_res r = P->nc.GroupStart();
    return r ? nccl_fail(rk, NCD_PERF_STAGE_RUN, r, "ncclGroupStart") : 0;
}

static int nccl_group_end(struct ncd__rank *rk)
{
    struct nccl_proc *P = rk->rt->be_proc;
    nccl_res r = P->nc.GroupEnd();
    return r ? nccl_fail(rk, NCD_PERF_STAGE_RUN, r, "ncclGroupEnd") : 0;
}

static int nccl_sync(struct ncd__rank *rk)
{
    struct ncd__rt *rt = rk->rt;
    struct nccl_proc *P = rt->be_proc;
    struct nccl_rank *n = rk->be;
    double start = ncd_sock_now();
    int timeout = rt->o->timeout_s;
    for (;;) {
        cuda_err e = P->cu.StreamQuery(n->stream);
        if (e == NCD_CUDA_SUCCESS)
            return 0;
        if (e != NCD_CUDA_NOT_READY)
            return cuda_fail(rk, NCD_PERF_STAGE_SYNC, e, "cudaStreamQuery");
        nccl_res ae = 0;
        nccl_res r = P->nc.CommGetAsyncError(n->comm, &ae);
        if (r || ae) {
            P->nc.CommAbort(n->comm);
            n->comm = NULL;
            return nccl_fail(rk, NCD_PERF_STAGE_SYNC, r ? r : ae,
                             "ncclCommGetAsyncError");
        }
        if (timeout > 0 && ncd_sock_now() - start > timeout) {
            ncd__rt_fail_at(rt, NCD_PERF_STAGE_SYNC, NCD_PT_TIMEOUT, NULL,
                            "(%ds) waiting for the stream of rank %d "
                            "(device %d)",
                            timeout, rk->rank, n->dev);
            P->nc.CommAbort(n->comm);
            n->comm = NULL;
            return -1;
        }
        if (atomic_load(&rt->abort)) {
            P->nc.CommAbort(n->comm);
            n->comm = NULL;
            return -1;
        }
        usleep(20);
    }
}

static int nccl_to_dev(struct ncd__rank *rk, void *dev, const void *host,
                       size_t n)
{
    struct nccl_proc *P = rk->rt->be_proc;
    cuda_err e = P->cu.Memcpy(dev, host, n, NCD_CUDA_MEMCPY_DEFAULT);
    return e ? cuda_fail(rk, NCD_PERF_STAGE_RUN, e, "cudaMemcpy") : 0;
}

/* CUDA-event timing of the timed loop (cudaEventElapsedTime, ms). */
static int nccl_timer_start(struct ncd__rank *rk)
{
    struct nccl_proc *P = rk->rt->be_proc;
    struct nccl_rank *n = rk->be;
    if (!P->cu.EventCreate || !P->cu.EventRecord || !P->cu.EventElapsedTime ||
        !P->cu.EventSynchronize)
        return -1;
    for (int i = 0; i < 2; i++)
        if (!n->ev[i] && P->cu.EventCreate(&n->ev[i]) != NCD_CUDA_SUCCESS) {
            n->ev[i] = NULL;
            return -1;
        }
    return P->cu.EventRecord(n->ev[0], n->stream) == NCD_CUDA_SUCCESS ? 0 : -1;
}

static double nccl_timer_stop(struct ncd__rank *rk)
{
    struct nccl_proc *P = rk->rt->be_proc;
    struct nccl_rank *n = rk->be;
    float ms = 0;
    if (P->cu.EventRecord(n->ev[1], n->stream) != NCD_CUDA_SUCCESS ||
        P->cu.EventSynchronize(n->ev[1]) != NCD_CUDA_SUCCESS ||
        P->cu.EventElapsedTime(&ms, n->ev[0], n->ev[1]) != NCD_CUDA_SUCCESS)
        return -1;
    return ms / 1000.0;
}

/* -I: a start and an end event per iteration (nccl-tests recordEvents;
 * its -z 3 paired events), created once and reused. */
static int nccl_iter_begin(struct ncd__rank *rk, int iters)
{
    struct nccl_proc *P = rk->rt->be_proc;
    struct nccl_rank *n = rk->be;
    if (!P->cu.EventCreate || !P->cu.EventRecord ||
        !P->cu.EventElapsedTime || !P->cu.EventSynchronize || iters <= 0)
        return -1;
    int need = 2 * iters;
    if (n->niev < need) {
        void **v = realloc(n->iev, sizeof *v * (size_t)need);
        if (!v)
            return -1;
        n->iev = v;
        for (int i = n->niev; i < need; i++)
            if (P->cu.EventCreate(&n->iev[i]) != NCD_CUDA_SUCCESS) {
                n->niev = i;
                return -1;
            }
        n->niev = need;
    }
    return 0;
}

static int nccl_iter_mark(struct ncd__rank *rk, int i, int end)
{
    struct nccl_proc *P = rk->rt->be_proc;
    struct nccl_rank *n = rk->be;
    cuda_err e = P->cu.EventRecord(n->iev[2 * i + end], n->stream);
    return e ? cuda_fail(rk, NCD_PERF_STAGE_RUN, e, "cudaEventRecord") : 0;
}

static int nccl_iter_read(struct ncd__rank *rk, int iters, double *sec)
{
    struct nccl_proc *P = rk->rt->be_proc;
    struct nccl_rank *n = rk->be;
    cuda_err e = P->cu.EventSynchronize(n->iev[2 * iters - 1]);
    if (e)
        return cuda_fail(rk, NCD_PERF_STAGE_SYNC, e, "cudaEventSynchronize");
    for (int i = 0; i < iters; i++) {
        float ms = 0;
        e = P->cu.EventElapsedTime(&ms, n->iev[2 * i], n->iev[2 * i + 1]);
        if (e)
            return cuda_fail(rk, NCD_PERF_STAGE_SYNC, e, "cudaEventElapsedTime");
        sec[i] = ms / 1000.0;
    }
    return 0;
}

static void nccl_mem(struct ncd__rank *rk, uint64_t mem[3])
{
    struct nccl_rank *n = rk->be;
    mem[0] = n ? n->init_bytes : 0;
    mem[1] = 2 * (uint64_t)rk->buflen;
    mem[2] = 0; /* NCCL's collective buffers are allocated at init */
}

const struct ncd__backend ncd__backend_nccl = {
    .name = "nccl",
    .open = nccl_open,
    .close = nccl_close,
    .rank_init = nccl_rank_init,
    .rank_fini = nccl_rank_fini,
    .describe = nccl_describe,
    .alloc = nccl_alloc,
    .free = nccl_free,
    .run_coll = nccl_run,
    .group_start = nccl_group_start,
    .group_end = nccl_group_end,
    .sync = nccl_sync,
    .to_dev = nccl_to_dev,
    .to_host = nccl_to_dev,
    .timer_start = nccl_timer_start,
    .timer_stop = nccl_timer_stop,
    .iter_begin = nccl_iter_begin,
    .iter_mark = nccl_iter_mark,
    .iter_read = nccl_iter_read,
    .mem_usage = nccl_mem,
};
