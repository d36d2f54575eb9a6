/* SPDX-License-Identifier: MIT */
/*
 * The part of libnccl.so.2's API the nccl backend calls, as a function
 * table filled by dlsym (nccl.c), and the arguments a collective's NCCL
 * call gets (the `nccl` member of struct ncd__coll, coll.h).  Prototypes
 * are ABI-level restatements of NCCL's src/nccl.h.in (2.18-2.30): handles
 * are opaque pointers, ncclUniqueId is 128 bytes passed by value, enums
 * are int.  Internal.
 */
#ifndef NCD_PERF_NCCL_API_H
#define NCD_PERF_NCCL_API_H

#include <stddef.h>

typedef struct {
    char internal[128]; /* NCCL_UNIQUE_ID_BYTES */
} nccl_uid;
typedef void *nccl_comm;
typedef void *cuda_stream;
typedef int nccl_res; /* ncclResult_t */
typedef int cuda_err; /* cudaError_t */

/* The part of the CUDA runtime (libcudart.so, cuda_runtime_api.h, CUDA
 * 11-13) the nccl backend and `verify` call.  Optional entries are NULL
 * when the runtime lacks them. */
struct ncd__cudart_api {
    void *h;
    cuda_err (*GetDeviceCount)(int *);
    cuda_err (*SetDevice)(int);
    cuda_err (*Malloc)(void **, size_t);
    cuda_err (*Free)(void *);
    cuda_err (*Memcpy)(void *, const void *, size_t, int);
    cuda_err (*Memset)(void *, int, size_t);
    cuda_err (*StreamCreateWithFlags)(cuda_stream *, unsigned);
    cuda_err (*StreamDestroy)(cuda_stream);
    cuda_err (*StreamQuery)(cuda_stream);
    const char *(*GetErrorName)(cuda_err);
    const char *(*GetErrorString)(cuda_err);
    cuda_err (*DeviceGetAttribute)(int *, int, int);
    cuda_err (*GetDeviceProperties)(void *, int);
    cuda_err (*RuntimeGetVersion)(int *);          /* optional */
    cuda_err (*MemGetInfo)(size_t *, size_t *);    /* optional */
    cuda_err (*EventCreate)(void **);              /* optional, timing */
    cuda_err (*EventRecord)(void *, cuda_stream);
    cuda_err (*EventSynchronize)(void *);
    cuda_err (*EventElapsedTime)(float *, void *, void *);
    cuda_err (*EventDestroy)(void *);
    cuda_err (*DriverGetVersion)(int *);           /* optional: 0 = no
                                                      driver installed */
    cuda_err (*DeviceCanAccessPeer)(int *, int, int); /* optional */
};

/* cudaError_t values used by name (CUDA driver_types.h). */
#define NCD_CUDA_SUCCESS 0
#define NCD_CUDA_INSUFFICIENT_DRIVER 35
#define NCD_CUDA_NO_DEVICE 100
#define NCD_CUDA_NOT_READY 600
/* cudaMemcpyDefault, cudaStreamNonBlocking, cudaDevAttrPciBusId,
 * cudaDevAttrPciDeviceId, cudaDevAttrPciDomainId */
#define NCD_CUDA_MEMCPY_DEFAULT 4
#define NCD_CUDA_STREAM_NON_BLOCKING 1
#define NCD_CUDA_ATTR_PCI_BUS 33
#define NCD_CUDA_ATTR_PCI_DEVICE 34
#define NCD_CUDA_ATTR_PCI_DOMAIN 50

struct ncd__nccl_api {
    void *h;
    nccl_res (*GetVersion)(int *);
    nccl_res (*GetUniqueId)(nccl_uid *);
    nccl_res (*CommInitRank)(nccl_comm *, int, nccl_uid, int);
    nccl_res (*CommDestroy)(nccl_comm);
    nccl_res (*CommAbort)(nccl_comm);
    nccl_res (*CommGetAsyncError)(nccl_comm, nccl_res *);
    const char *(*GetErrorString)(nccl_res);
    const char *(*GetLastError)(nccl_comm);
    nccl_res (*AllReduce)(const void *, void *, size_t, int, int, nccl_comm,
                          cuda_stream);
    nccl_res (*Broadcast)(const void *, void *, size_t, int, int, nccl_comm,
                          cuda_stream);
    nccl_res (*Reduce)(const void *, void *, size_t, int, int, int, nccl_comm,
                       cuda_stream);
    nccl_res (*AllGather)(const void *, void *, size_t, int, nccl_comm,
                          cuda_stream);
    nccl_res (*ReduceScatter)(const void *, void *, size_t, int, int,
                              nccl_comm, cuda_stream);
    nccl_res (*Send)(const void *, size_t, int, int, nccl_comm, cuda_stream);
    nccl_res (*Recv)(void *, size_t, int, int, nccl_comm, cuda_stream);
    nccl_res (*GroupStart)(void);
    nccl_res (*GroupEnd)(void);
    nccl_res (*RedOpCreatePreMulSum)(int *, void *, int, int, nccl_comm);
    nccl_res (*RedOpDestroy)(int, nccl_comm);
};


/* One collective call: what a collective's `nccl` function needs. */
struct ncd__nccl_call {
    const struct ncd__nccl_api *nc;
    nccl_comm comm;
    cuda_stream stream;
    const void *send;
    void *recv;
    size_t count;  /* the count passed to NCCL (paramcount) */
    size_t esize;  /* bytes per element */
    int dtype;     /* ncclDataType_t */
    int op;        /* ncclRedOp_t (a PreMulSum op for mulsum) */
    int root;
    int rank, nranks;
    const struct ncd_perf_counts *k; /* the counts (alltoallv's traffic) */
    /* Device-to-device copy on the rank's device (hypercube's own block):
     * 0, or non-zero after the failure was reported. */
    int (*copy)(void *arg, void *dst, const void *src, size_t n);
    void *copy_arg;
};

/*
 * The one loader of libcudart.so / libnccl.so.2 (nccl.c).  `path` NULL =
 * the default names (libcudart.so, .so.13, .so.12, .so.11.0; libnccl.so.2)
 * through the dynamic linker's search.  Returns 0 with every required
 * entry set, or -1 with `why` saying what could not be loaded and where
 * the linker looked (or which symbol is missing).
 */
int ncd__cudart_load(struct ncd__cudart_api *cu, const char *path, char *why,
                     size_t whylen);
int ncd__nccl_load(struct ncd__nccl_api *nc, const char *path, char *why,
                   size_t whylen);

/* cudaGetErrorName / cudaGetErrorString with a fallback text. */
const char *ncd__cuda_name(const struct ncd__cudart_api *cu, cuda_err e);
const char *ncd__cuda_str(const struct ncd__cudart_api *cu, cuda_err e);

/* ncclInvalidArgument (NCCL src/nccl.h.in) */
#define NCD_NCCL_INVALID_ARGUMENT 4

#endif
