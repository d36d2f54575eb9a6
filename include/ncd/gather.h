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
 *                     line, redacted by ncd_env_redact(): values of names
 *                     containing TOKEN, SECRET, PASSWORD, PASSWD, KEY or
 *                     CREDENTIAL are "<redacted>", and so are credentials
 *                     inside URLs ("user:pass@")
 *   .ncd/ifaddrs      getifaddrs() list (format in netif.h)
 *   .ncd/statvfs      "<dir> <size bytes> <free bytes>" for /dev/shm
 *   .ncd/dlopen       dlopen results (format in rdma.h)
 *   .ncd/nccl-libs    libnccl scan (format in libs.h)
 *   .ncd/nccl-version version of the libnccl.so.2 dlopen picks ("2.21.5")
 *   .ncd/nvml         NVML answers (format in topo.h)
 *   .ncd/nft.json     `nft -j list ruleset`
 *   .ncd/self         "uid <n>" of the gathering process
 *   .ncd/gather-info  tool version and time of the capture
 * Also copied: $NCCL_CONF_FILE and $HOME/.nccl.conf when they exist.
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
};

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

struct ncd_strbuf;

/**
 * Appends `value` of variable `name` as nccl-doctor writes any value down
 * (.ncd/env, perf's -J "env"): "<redacted>" when ncd_env_is_secret(name);
 * else the value with the user information of every URL or host spec
 * that carries credentials replaced by "<redacted>":
 * "https://user:pass@host/x" -> "https://<redacted>@host/x",
 * "s3://TOKEN@bucket" -> "s3://<redacted>@bucket", "user:pw@host:29500"
 * -> "<redacted>@host:29500".  An '@' inside a path or a plain
 * "user@host" is kept.  `name` may be NULL (value only).  Pure.
 */
void ncd_env_redact(const char *name, const char *value,
                    struct ncd_strbuf *out);

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
