/* SPDX-License-Identifier: MIT */
/**
 * @file gather.h
 * @brief Capturing a node into a tarball (`nccl-doctor gather`) and
 *        replaying one (`--sysroot FILE.tar.gz`).
 *
 * A capture is a tree that stands for "/" (see ctx.h): the sysfs, procfs
 * and /etc files nccl-doctor's probes read, listed once in
 * src/lib/snapshot/paths.def (a test checks it against what the probes
 * read), with sysfs symlinks kept as relative symlinks, plus the recorded
 * answers of system operations under /.ncd/: gather runs the same node
 * probe as `check`, with the record table of sysops.h, and writes what it
 * recorded (formats: sysops.h, all in src/lib/sys/records.c):
 *   .ncd/env          NCCL_*, CUDA_*, launcher variables, NAME=value per
 *                     line, redacted by ncd_env_redact() (sysops.h): values
 *                     of names containing TOKEN, SECRET, PASSWORD, PASSWD,
 *                     KEY or CREDENTIAL are "<redacted>", and so are
 *                     credentials inside URLs ("user:pass@")
 *   .ncd/unreadable   "PATH: reason" of each file that could not be read
 *   .ncd/skipped      "PATH: reason" of each file left out on purpose (an
 *                     NCCL_CONF_FILE that does not look like an nccl.conf)
 *   .ncd/ifaddrs      getifaddrs() list
 *   .ncd/statvfs      "<dir> <size bytes> <free bytes>" for /dev/shm
 *   .ncd/dlopen       dlopen results (libibverbs, NVML, libcuda, libnccl)
 *   .ncd/nccl-libs    libnccl scan
 *   .ncd/nccl-version version of the libnccl.so.2 dlopen picks ("2.21.5")
 *   .ncd/nvml         NVML answers and the CUDA driver version
 *   .ncd/nft.json     the nftables rule set in `nft -j list ruleset`'s
 *                     JSON schema (netlink dump, decoded); captures
 *                     holding `nft -j` output itself read the same way
 *   .ncd/self         "uid <n>" of the gathering process
 *   .ncd/resolve      host names the probes resolved
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

#include "ncd/archive.h"
#include "ncd/ctx.h"
#include "ncd/sysops.h"

#ifdef __cplusplus
extern "C" {
#endif

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
 * Calls `fn` for every path `gather` would copy from the sysroot: the
 * paths.def patterns expanded (with the symlinks met on the way, each as
 * it is in the capture), and NCCL's config files; not the recorded
 * answers.  `is_dir` is 1 for a directory recorded without contents.
 * @return 0, NCD_ENOMEM, or a negative value `fn` returned (stops).
 */
int ncd_gather_paths(struct ncd_ctx *ctx,
                     int (*fn)(void *arg, const char *path, int is_dir),
                     void *arg);

#ifdef __cplusplus
}
#endif
#endif
