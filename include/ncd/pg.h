/* SPDX-License-Identifier: MIT */
/**
 * @file pg.h
 * @brief Process groups: the processes of one job exchanging small blobs.
 *
 * A process group is what a job's processes use to meet and to agree:
 * allgathers of small records (rank addresses, device lines, results) and
 * barriers.  Three implementations sit behind one function table
 * (src/lib/pg/pg_int.h), chosen by the job runner (job.h):
 *  - single: one process, nothing to exchange;
 *  - tcp:    a rendezvous root in the style of NCCL's unique id: process 0
 *            listens on host:port, the others connect; every frame carries
 *            a magic, the protocol version, the job token and the round,
 *            and every wait has the group's timeout;
 *  - mpi:    MPI_COMM_WORLD (built with -DNCD_WITH_MPI=ON).
 *
 * Not thread-safe: one thread per process calls a group.  The abort flag
 * (ncd_pg_set_abort()) may be raised from any thread to stop a wait.
 */
#ifndef NCD_PG_H
#define NCD_PG_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "ncd/ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A process group (opaque). */
struct ncd_pg;

/** Largest blob one process may contribute to an allgather. */
#define NCD_PG_MAX_BLOB (1u << 20)
/** Most processes in a TCP group. */
#define NCD_PG_MAX_PROCS 65536

/** Rendezvous parameters of a TCP group. */
struct ncd_pg_params {
    int nprocs;       /**< processes in the job */
    int proc;         /**< this process, 0..nprocs-1 */
    const char *host; /**< root address (IPv4/IPv6 literal or name) */
    int port;         /**< root port */
    int listen_fd;    /**< proc 0: an already bound and listening socket to
                           use (the job runner's -np), or -1 to bind
                           host:port; other procs: closed if >= 0 */
    uint64_t token;   /**< job token every process must present; 0 = proc
                           0 draws one and hands it to the others */
    int timeout_ms;   /**< the whole rendezvous, then each allgather
                           (default 60000 when <= 0) */
};

/**
 * Creates a TCP process group.  Proc 0 accepts the others: a connection
 * presenting a wrong magic, protocol version or token is dropped and does
 * not count; one that says another job size, or an index that has already
 * checked in, is fatal (two jobs share the address: NCCL's "Bootstrap Root
 * : mismatch in info from procs" and "has already checked in").  The
 * others connect with retries until the timeout.
 * @return 0 and *out (free with ncd_pg_free()), or NCD_EINVAL (proc out
 *         of range), NCD_ETIMEOUT (the detail of the root names the
 *         processes that never joined), NCD_ECONNREFUSED, NCD_EUNREACH,
 *         NCD_EPROTO, NCD_ESYS, NCD_ENOMEM; detail in ctx.
 */
int ncd_pg_tcp(struct ncd_ctx *ctx, const struct ncd_pg_params *p,
               struct ncd_pg **out);

/**
 * A process group over MPI_COMM_WORLD (initialises MPI with
 * MPI_THREAD_FUNNELED unless the caller did; ncd_pg_free() finalises what
 * it initialised).  The job token is drawn by rank 0 and broadcast.
 * @return 0 and *out, or NCD_EUNSUPPORTED when built without
 *         -DNCD_WITH_MPI=ON, NCD_ESYS when MPI cannot start.
 */
int ncd_pg_mpi(struct ncd_ctx *ctx, int *argc, char ***argv,
               struct ncd_pg **out);

/** 1 when this build can make MPI groups (-DNCD_WITH_MPI=ON), else 0. */
int ncd_pg_mpi_available(void);

/** A one-process group with a fresh random token.  @return 0, NCD_ENOMEM. */
int ncd_pg_single(struct ncd_pg **out);

/** "single", "tcp" or "mpi" (static). */
const char *ncd_pg_kind(const struct ncd_pg *pg);
/** Number of processes in the group. */
int ncd_pg_nprocs(const struct ncd_pg *pg);
/** This process's index, 0..nprocs-1 (0 is the TCP root). */
int ncd_pg_proc(const struct ncd_pg *pg);
/** The job token agreed at rendezvous (never 0 for tcp). */
uint64_t ncd_pg_token(const struct ncd_pg *pg);
/**
 * The local IP address of this process's connection to the root: an
 * address the other processes can reach it on.  "" for proc 0, MPI and
 * single groups.  Owned by pg.
 */
const char *ncd_pg_local_addr(const struct ncd_pg *pg);

/** Makes every blocking call of the group give up (NCD_EPEER) once *flag
 *  becomes non-zero; NULL removes the flag. */
void ncd_pg_set_abort(struct ncd_pg *pg, const atomic_int *flag);
/** Sets the timeout of each later allgather (ignored when <= 0). */
void ncd_pg_set_timeout(struct ncd_pg *pg, int timeout_ms);

/**
 * Allgather: every process contributes `len` bytes (the same len
 * everywhere, at most NCD_PG_MAX_BLOB); `all` receives nprocs * len bytes
 * in process order.
 * @return 0, or NCD_EPEER (a process died or the group was aborted: the
 *         detail names the process and its address), NCD_ETIMEOUT,
 *         NCD_EPROTO (processes are out of step), NCD_EINVAL (too big).
 */
int ncd_pg_allgather(struct ncd_ctx *ctx, struct ncd_pg *pg, const void *mine,
                     size_t len, void *all);

/** Barrier over the group (an allgather of one byte); as above. */
int ncd_pg_barrier(struct ncd_ctx *ctx, struct ncd_pg *pg);

/** Closes the connections (MPI: finalises what it initialised); NULL ok. */
void ncd_pg_free(struct ncd_pg *pg);

#ifdef __cplusplus
}
#endif
#endif
