/* SPDX-License-Identifier: MIT */
/*
 * The process group's function table (internal).  struct ncd_pg is the
 * common part; an implementation embeds it first in its own struct and
 * fills `ops`.  pg.c checks arguments, counts rounds and dispatches.
 */
#ifndef NCD_PG_INT_H
#define NCD_PG_INT_H

#include <stdatomic.h>
#include <stdint.h>

#include "ncd/pg.h"

struct ncd_pg_ops {
    const char *name; /* "single", "tcp", "mpi" */
    /* nprocs > 1; len <= NCD_PG_MAX_BLOB; pg->round already advanced */
    int (*allgather)(struct ncd_ctx *ctx, struct ncd_pg *pg,
                     const void *mine, size_t len, void *all);
    /* releases the implementation's part (the common part is freed by
     * ncd_pg_free()); may be NULL */
    void (*release)(struct ncd_pg *pg);
};

struct ncd_pg {
    const struct ncd_pg_ops *ops;
    int nprocs, proc;
    uint64_t token;
    uint32_t round;     /* allgathers so far, checked by the tcp frames */
    int timeout_ms;
    const atomic_int *abort_flag;
    char local_addr[64];
};

/* ---- the TCP group's frames (pg_tcp.c) ---------------------------------
 * Raw structs between processes of one build.  The decoders take buffers
 * (the socket code feeds them; tests/fuzz/fuzz_wire.c drives them). */

#define PG_MAGIC 0x4e434450u /* "NCDP" */
#define PG_PROTO_VERSION 1u
/* Longest error text a root's failure frame may announce, bytes. */
#define PG_MAX_ERRTEXT 511

/* process -> root, once */
struct pg_hello {
    uint32_t magic, version, nprocs, proc;
    uint64_t token;
};

/* every allgather, both ways; the rendezvous answer carries the token in
 * len */
struct pg_hdr {
    uint32_t magic, status; /* status: 0 ok, else error text follows */
    uint32_t round, pad;
    uint64_t len;
};

/* What the root does with a hello (ncd__pg_hello_check). */
enum {
    PG_HELLO_JOIN = 0, /* a new member of this job: take it */
    PG_HELLO_STRAY,    /* not this job's (no hello, magic, protocol version,
                          token): drop the connection */
    PG_HELLO_FATAL,    /* this job's process disagreeing on the job size
                          (NCCL's "Bootstrap Root : mismatch in info from
                          procs"): the rendezvous fails */
    PG_HELLO_REFUSE,   /* this job's, index out of range: refuse it */
    PG_HELLO_TAKEN,    /* this job's, index already held (fds[proc] >= 0):
                          a restart when that connection is gone, else
                          refused */
};

/*
 * Root side: the hello of a process that connected (len < sizeof: none),
 * checked in this order: magic, protocol version, token (0 or ours), job
 * size, index (1..nprocs-1), slot (fds[proc] < 0).  NULL when it is a new
 * member of this job (*kind PG_HELLO_JOIN); else why not in words, with
 * *kind one of the PG_HELLO_* above.  *out receives the frame as read
 * (untouched when len is short).  Pure: no system call.
 */
const char *ncd__pg_hello_check(const void *buf, size_t len, int nprocs,
                                uint64_t token, const int *fds, int *kind,
                                struct pg_hello *out);

/* Root side: a process's allgather header for `round` and `want_len`
 * bytes.  0 or -1. */
int ncd__pg_hdr_check(const void *buf, size_t len, uint32_t round,
                      uint64_t want_len, struct pg_hdr *out);

/* Process side: the root's answer to an allgather. */
enum {
    PG_REPLY_OK = 0,
    PG_REPLY_ERROR,       /* error text of out->len (<= PG_MAX_ERRTEXT)
                             bytes follows */
    PG_REPLY_OUT_OF_STEP, /* another round or length */
    PG_REPLY_BAD,         /* not a frame of ours */
};
int ncd__pg_reply_check(const void *buf, size_t len, uint32_t round,
                        uint64_t want_len, struct pg_hdr *out);

/* A random non-zero job token (getrandom, else pid and clock). */
uint64_t ncd__pg_draw_token(void);

/* Fills the common part of a new group. */
void ncd__pg_init(struct ncd_pg *pg, const struct ncd_pg_ops *ops, int nprocs,
                  int proc, uint64_t token);

#endif
