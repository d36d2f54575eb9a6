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

/* ncclInvalidArgument (NCCL src/nccl.h.in) */
#define NCD_NCCL_INVALID_ARGUMENT 4

#endif
