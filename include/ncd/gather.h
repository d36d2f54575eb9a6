/* SPDX-License-Identifier: MIT */
/**
 * @file gather.h
 * @brief Capturing a node into a tarball (`nccl-doctor gather`) and
 *        replaying one (`--sysroot FILE.tar.gz`).
 *
 * A capture is a tree that stands for "/" (see ctx.h): the sysfs, procfs
 * and /etc files nccl-doctor's probes read, listed once in
 * src/lib/node/paths.def (the same table documents what each probe reads),
 * with sysfs symlinks kept as relative symlinks, plus the recorded answers
 * of system calls under /.ncd/:
 *   .ncd/env          NCCL_*, CUDA_*, launcher variables, NAME=value per
 *                     line; values of names containing TOKEN, SECRET,
 *                     PASSWORD, PASSWD, KEY or CREDENTIAL are "<redacted>",
 *                     and user:password@ inside any value is masked
 *                     (ncd_mask_userinfo)
 *   .ncd/unreadable   "PATH: reason" of each file that could not be read
 *   .ncd/skipped      "PATH: reason" of each file left out on purpose (an
 *                     NCCL_CONF_FILE that does not look like an nccl.conf)
 *   .ncd/ifaddrs      getifaddrs() list (format in netif.h)
 *   .ncd/statvfs      "<dir> <size bytes> <free bytes>" for /dev/shm
 *   .ncd/dlopen       dlopen results (format in rdma.h)
 *   .ncd/nccl-libs    libnccl scan (format in libs.h)
 *   .ncd/nccl-version version of the libnccl.so.2 dlopen picks ("2.21.5")
 *   .ncd/nvml         NVML answers (format in topo.h)
 *   .ncd/nft.json     `nft -j list ruleset`
 *   .ncd/self         "uid <n>" of the gathering process
 *   .ncd/gather-info  tool version and time of the capture
 * Also copied: $NCCL_CONF_FILE and $HOME/.nccl.conf when they exist and
 * look like an nccl.conf (ncd_looks_like_nccl_conf), else named in
 * .ncd/skipped.
 * /proc/net/tcp{,6} keep only listening sockets (no peer addresses).
 * Files under /var/run/secrets are never copied (only the directory is
 * recorded, as evidence of Kubernetes).
 */
#ifndef NCD_GATHER_H
#define NCD_GATHER_H

#include <stddef.h>

#include "ncd/ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Limits when unpacking a capture (bytes / entries). */
#define NCD_SYSROOT_MAX_TOTAL (512LL << 20)
#define NCD_SYSROOT_MAX_FILE (64LL << 20)
#define NCD_SYSROOT_MAX_ENTRIES 500000

struct ncd_gather_stats {
    size_t files, links, dirs; /**< entries written */
    size_t skipped;            /**< unreadable files left out */
    long long bytes;           /**< file content bytes */
    /** "PATH: reason\n" per unreadable file (as .ncd/unreadable), then per
     * file left out on purpose (as .ncd/skipped); malloc'ed, NUL-terminated
     * or NULL; free with ncd_gather_stats_release(). */
    char *unreadable, *left_out;
};

/** Frees the lists of a ncd_gather_stats (keeps the counts). */
void ncd_gather_stats_release(struct ncd_gather_stats *st);

/**
 * Appends `v` to `out` with the credentials of "user:password@host" (with
 * or without a scheme:// before it) replaced by "<redacted>@".  A bare
 * "user@host" is kept.  Pure.
 */
struct ncd_strbuf;
void ncd_mask_userinfo(const char *v, struct ncd_strbuf *out);

/**
 * Whether a file's content looks like an nccl.conf, so that gather may
 * copy it: only blank lines, '#' comments and NAME=value lines whose NAME
 * starts with NCCL_ (NCCL src/misc/param.cc reads NAME=VALUE lines; names
 * outside NCCL_ or other text mean the variable points at some other
 * file, which may hold secrets).  Pure; `why` (may be NULL) receives the
 * first offending line number and reason.
 */
int ncd_looks_like_nccl_conf(const char *buf, size_t len, char *why,
                             size_t whylen);

/**
 * Captures the context's system (normally live) into a gzip'ed tar at
 * `out_path`: written to a temporary file in the same directory, then
 * renamed, so a failure leaves no partial file.
 * @return 0, NCD_EIO / NCD_ENOSPC / NCD_EPERM (detail in ctx), NCD_ENOMEM.
 */
int ncd_gather(struct ncd_ctx *ctx, const char *out_path,
               struct ncd_gather_stats *stats);

/**
 * Whether a variable belongs in .ncd/env (NCCL_*, CUDA_*, LD_LIBRARY_PATH,
 * LD_PRELOAD, launcher and framework variables).  Pure.
 */
int ncd_gather_env_wanted(const char *name);

/** Whether a variable's value must be redacted (see above).  Pure. */
int ncd_env_is_secret(const char *name);

/**
 * Unpacks a capture tarball (any format/compression libarchive reads) into
 * a new private directory (mkdtemp under $TMPDIR or /tmp).  Refuses
 * absolute paths, ".." components, hard links, device nodes, symlinks
 * whose target is absolute or climbs above the tree, and more than the
 * NCD_SYSROOT_MAX_* limits.  A capture whose entries all sit under one top
 * folder (hwloc-gather-topology's layout) is rooted at that folder.
 * @param dir   receives the directory to use as sysroot (>= 4096 bytes).
 * @param top   receives the directory to remove afterwards with
 *              ncd_sysroot_remove() (>= 4096 bytes).
 * @param err   receives a message on failure.
 * @return 0, NCD_EPARSE (bad archive or unsafe entry), NCD_ERANGE (limits),
 *         NCD_EIO, NCD_ENOMEM.  On failure nothing is left behind.
 */
int ncd_sysroot_unpack(const char *tarball, char *dir, size_t dirsz,
                       char *top, size_t topsz, char *err, size_t errsz);

/** Removes an unpacked tree (no symlink is followed).  Returns 0 or -1. */
int ncd_sysroot_remove(const char *top);

/**
 * ncd_ctx_new() that also accepts a capture tarball as `sysroot`: it is
 * unpacked (ncd_sysroot_unpack) and removed again by ncd_ctx_free().
 * A directory or NULL behaves exactly as ncd_ctx_new().
 * @param err  receives the reason on failure (may be NULL).
 */
int ncd_ctx_new_sysroot(const char *sysroot, char *const *envp,
                        struct ncd_ctx **out, char *err, size_t errsz);

#ifdef __cplusplus
}
#endif
#endif
