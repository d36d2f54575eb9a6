/* SPDX-License-Identifier: MIT */
/**
 * @file ctx.h
 * @brief The libncd context: sysroot, injected environment, error buffer.
 *
 * Every probe takes a struct ncd_ctx (checks take the node snapshot it
 * filled, node.h).  It holds
 *  - the sysroot: the directory that stands for "/" when files such as
 *    /sys/class/net or /proc/mounts are read (hwloc's HWLOC_FSROOT is the
 *    model).  "/" means this machine ("live"); anything else is a recorded
 *    tree (a fixture or a `gather` capture);
 *  - the table of system operations (sysops.h): the answers that are not
 *    files (getifaddrs, statvfs, dlopen, NVML...), live, replayed from
 *    <sysroot>/.ncd/, or recorded;
 *  - a private copy of the environment.  Probes read variables through
 *    ncd_getenv(), never getenv(), so tests inject any NCCL_* value;
 *  - the error detail buffer (first failure wins, see error.h).
 * Tools open one with ncd_ctx_open(); ncd_ctx_new() is the primitive.
 *
 * A context is not thread-safe; use one per thread.
 */
#ifndef NCD_CTX_H
#define NCD_CTX_H

#include <stdarg.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ncd_ctx;

/**
 * Creates a context.
 * @param sysroot  directory standing for "/", or NULL / "/" for this machine.
 * @param envp     NULL-terminated "NAME=value" array copied into the context
 *                 (pass `environ` for the real environment, or a fixture);
 *                 NULL gives an empty environment.
 * @param out      receives the new context; caller frees with ncd_ctx_free().
 * @return 0, NCD_ENOMEM, or NCD_ENOENT when the sysroot cannot be opened
 *         (no context is created then).
 */
int ncd_ctx_new(const char *sysroot, char *const *envp, struct ncd_ctx **out);

/** How to open a context (ncd_ctx_open()). */
struct ncd_ctx_config {
    /** NULL or "/" for this machine; a directory standing for "/" (a
     *  fixture, an unpacked capture, an hwloc-gather-topology tree); or a
     *  capture tarball (`gather` output, unpacked into a private
     *  directory that ncd_ctx_free() removes). */
    const char *sysroot;
    /** NULL-terminated "NAME=value" array (the process's `environ`).  A
     *  capture with a recorded environment (.ncd/env) replaces it. */
    char *const *envp;
};

/**
 * Opens a context: the one way the tool creates one.  Unpacks a tarball,
 * refuses a directory that is not a capture (none of sys/, proc/, .ncd/),
 * and replays the recorded environment of a capture.
 * @param err  receives a one-line message on failure, ready to print (may
 *             be NULL).
 * @return 0, NCD_ENOENT / NCD_EPERM (sysroot cannot be opened),
 *         NCD_EINVAL (not a capture), NCD_EPARSE (bad tarball or
 *         .ncd/env), NCD_ERANGE (tarball over the limits), NCD_EDLOPEN
 *         (libarchive missing), NCD_ENOMEM.  Implemented in src/lib/sys.
 */
int ncd_ctx_open(const struct ncd_ctx_config *cfg, struct ncd_ctx **out,
                 char *err, size_t errsz);

/** Frees a context and everything it owns.  NULL is allowed. */
void ncd_ctx_free(struct ncd_ctx *ctx);

/**
 * Registers `fn(arg)` to run when the context is freed, after its sysroot
 * fd is closed (used to remove a sysroot unpacked from a tarball).  One
 * slot: @return 0, or NCD_EEXISTS when one is registered already.
 */
int ncd_ctx_on_free(struct ncd_ctx *ctx, void (*fn)(void *), void *arg);

/** 1 when the sysroot is "/" (this machine), 0 for a recorded tree.  For
 *  the system-operations layer (sysops.h) and the sysroot only; everything
 *  else asks that layer (scripts/check-layers.sh enforces it). */
int ncd_ctx_is_live(const struct ncd_ctx *ctx);

/** The sysroot path as given ("/" for live).  Owned by ctx. */
const char *ncd_ctx_sysroot(const struct ncd_ctx *ctx);

/**
 * Sets what ncd_ctx_sysroot() returns from now on, e.g. the tarball a
 * temporary tree was unpacked from; file access (the root fd) is not
 * affected.  @return 0 or NCD_ENOMEM.
 */
int ncd_ctx_set_sysroot_label(struct ncd_ctx *ctx, const char *label);

/** Directory fd of the sysroot, for *at() calls.  Owned by ctx. */
int ncd_ctx_rootfd(const struct ncd_ctx *ctx);

/**
 * Reads a variable from the context's environment copy.
 * @return the value (owned by ctx, valid until the variable is changed), or
 *         NULL when unset.  An empty value is returned as "".
 */
const char *ncd_getenv(const struct ncd_ctx *ctx, const char *name);

/**
 * Sets (value != NULL) or removes (value == NULL) a variable in the
 * context's environment copy.  Never touches the process environment.
 * @param overwrite  0 keeps an existing value (NCCL's config-file semantics).
 * @return 0 or NCD_ENOMEM / NCD_EINVAL (empty name or name with '=').
 */
int ncd_setenv(struct ncd_ctx *ctx, const char *name, const char *value,
               int overwrite);

/** Number of variables in the environment copy. */
size_t ncd_env_count(const struct ncd_ctx *ctx);

/**
 * The i-th variable (0 <= i < ncd_env_count()), in the order they were
 * added.  Both strings are owned by ctx.
 */
void ncd_env_at(const struct ncd_ctx *ctx, size_t i, const char **name,
                const char **value);

/**
 * Replaces the whole environment copy with a NULL-terminated "NAME=value"
 * array (entries without '=' or with an empty name are skipped; the first
 * definition of a name wins).  Used to replay a capture's environment
 * (ncd_ctx_load_env() in sysops.h parses .ncd/env).
 * @return the number of variables, or NCD_ENOMEM (the old copy is kept).
 */
int ncd_ctx_replace_env(struct ncd_ctx *ctx, char *const *envp);

/* ---- the system-operations layer (sysops.h) --------------------------- */

struct ncd_sysops;

/** Installs an operations table (sysops.h); NULL restores the default
 *  (live for "/", replay otherwise).  The table must outlive the context. */
void ncd_ctx_set_sysops(struct ncd_ctx *ctx, const struct ncd_sysops *ops);

/** The table installed with ncd_ctx_set_sysops(), or NULL. */
const struct ncd_sysops *ncd_ctx_sysops(const struct ncd_ctx *ctx);

/** What a traced file access was (ncd_ctx_set_fs_trace()). */
enum ncd_fs_access {
    NCD_FS_OPEN = 1, /**< open: reads, directory listings */
    NCD_FS_STAT,     /**< existence test */
    NCD_FS_READLINK,
    NCD_FS_REALPATH,
};

/**
 * Called for every access to the sysroot through fs.h, with the path as
 * the caller wrote it ("/sys/class/net/eth0/mtu").  `in_sysop` is 1 when
 * the access answers a system operation (sysops.h: a replayed record, the
 * library scan) rather than reading a file a capture copies.
 */
typedef void (*ncd_fs_trace_fn)(void *arg, enum ncd_fs_access what,
                                const char *path, int in_sysop);

/** Installs (fn != NULL) or removes a trace of file accesses; one slot.
 *  Used by tests (each probe reads once; paths.def covers every read). */
void ncd_ctx_set_fs_trace(struct ncd_ctx *ctx, ncd_fs_trace_fn fn, void *arg);

/**
 * Records the detail of a failure if none is recorded yet and returns
 * `code`, so callers write `return ncd_fail(ctx, NCD_EIO, "read %s", p);`.
 */
int ncd_fail(struct ncd_ctx *ctx, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/** Like ncd_fail() with a va_list. */
int ncd_vfail(struct ncd_ctx *ctx, int code, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/**
 * The recorded detail ("" when none).  Owned by ctx, valid until the next
 * ncd_ctx_clear_error().
 */
const char *ncd_ctx_errdetail(const struct ncd_ctx *ctx);

/** The code passed with the recorded detail (NCD_OK when none). */
int ncd_ctx_errcode(const struct ncd_ctx *ctx);

/** Forgets the recorded failure. */
void ncd_ctx_clear_error(struct ncd_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif
