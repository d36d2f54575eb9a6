/* SPDX-License-Identifier: MIT */
/**
 * @file fs.h
 * @brief All file reads of libncd go through the context's sysroot.
 *
 * Paths are written as on the live system ("/sys/class/net/eth0/mtu") and
 * resolved below ncd_ctx_sysroot(): the leading '/' is stripped and the rest
 * opened relative to the sysroot's directory fd (hwloc's hwloc_openat()
 * family is the model).  On a recorded tree, absolute symlinks and ".." are
 * kept inside the tree (openat2 RESOLVE_IN_ROOT where the kernel has it).
 *
 * Errors: NCD_ENOENT (missing), NCD_EPERM (not readable), NCD_EIO, NCD_EPARSE
 * (content not of the expected form), NCD_ENOMEM.  The detail names the path
 * as seen inside the sysroot.
 */
#ifndef NCD_FS_H
#define NCD_FS_H

#include <dirent.h>
#include <stddef.h>

#include "ncd/ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Largest file ncd_fs_read() accepts by default (bytes). */
#define NCD_FS_MAX_DEFAULT (4u << 20)

/**
 * open(2) of `path` below the sysroot with `flags` (O_CLOEXEC is added).
 * @return an fd the caller closes, or a negative NCD_E* code.
 */
int ncd_fs_open(struct ncd_ctx *ctx, const char *path, int flags);

/**
 * Reads a whole file (sysfs attributes, /proc files, logs).
 * @param max   the most bytes read; 0 means NCD_FS_MAX_DEFAULT.  A longer
 *              file gives NCD_ERANGE.
 * @param buf   receives a malloc'ed, NUL-terminated copy; caller frees.
 * @param len   receives the length in bytes (may be NULL).
 * Read once per context: the first successful read of a path is kept and
 * later reads of it return a copy without opening the file again (one
 * open per file and run, however many probes read it).  Not kept: paths
 * under /proc and sysfs counters (any path containing "statistics" or
 * "counters"), which are read again each time; files over 4 MiB; beyond
 * 32 MiB per context.  ncd_fs_list() caches directory listings the same
 * way.  The context's fs trace still sees every call.
 */
int ncd_fs_read(struct ncd_ctx *ctx, const char *path, size_t max, char **buf,
                size_t *len);

/**
 * Reads `fd` to end of file into a malloc'ed, NUL-terminated buffer with a
 * size cap and a deadline, over the one grow-buffer reader (ncd/readall.h;
 * no sysroot involved; ncd_fs_read() and the operations that read pipes
 * use it).
 * @param max         the most bytes; 0 means NCD_FS_MAX_DEFAULT.  More
 *                    gives NCD_ERANGE.
 * @param timeout_ms  -1 blocks; otherwise the whole read must end within
 *                    that many milliseconds (poll(2)), else NCD_ETIMEOUT.
 * @param buf         receives the data (caller frees); NULL on error.
 * @param len         receives the length (may be NULL).
 * @return 0, NCD_ENOMEM, NCD_ERANGE, NCD_ETIMEOUT, or NCD_EIO with errno
 *         kept from the failed read(2) / poll(2).
 */
int ncd_read_fd_bounded(int fd, size_t max, int timeout_ms, char **buf,
                        size_t *len);

/**
 * Reads a small file into `out` (at most outsz-1 bytes), with trailing
 * white space (the newline of sysfs attributes) removed.
 */
int ncd_fs_read_str(struct ncd_ctx *ctx, const char *path, char *out,
                    size_t outsz);

/**
 * Reads a file holding one integer, decimal or 0x-hex (sysfs "vendor",
 * "flags", "speed").  "-1" is a valid value (unknown speed).  Anything else
 * gives NCD_EPARSE.  Reading EINVAL (sysfs "speed" of a down link) gives
 * NCD_EINVAL.
 */
int ncd_fs_read_ll(struct ncd_ctx *ctx, const char *path, long long *out);

/** readlink(2) below the sysroot; `out` is NUL-terminated. */
int ncd_fs_readlink(struct ncd_ctx *ctx, const char *path, char *out,
                    size_t outsz);

/**
 * Canonical path of `path` inside the sysroot, following symlinks as the
 * kernel would if the sysroot were "/".  The result starts with '/' and is
 * relative to the sysroot ("/sys/devices/pci0000:00/0000:00:03.0/net/eth0").
 * The path need not exist past its last existing component.
 */
int ncd_fs_realpath(struct ncd_ctx *ctx, const char *path, char *out,
                    size_t outsz);

/** opendir(3) below the sysroot; NULL with the code in *err. */
DIR *ncd_fs_opendir(struct ncd_ctx *ctx, const char *path, int *err);

/** 1 when `path` exists below the sysroot (symlinks followed), else 0. */
int ncd_fs_exists(struct ncd_ctx *ctx, const char *path);

/**
 * Sorted names in a directory (without "." and ".."), natural order
 * ("eth2" before "eth10").  Caller frees with ncd_fs_list_free().
 * @return the count, or a negative NCD_E* code.
 */
int ncd_fs_list(struct ncd_ctx *ctx, const char *path, char ***names);

/**
 * ncd_fs_list() keeping only the names that start with `pfx` (NULL: all),
 * filtered before the sort: listing a library directory of thousands of
 * entries for "libnccl.so" sorts a handful.  Same returns and ownership.
 */
int ncd_fs_list_prefix(struct ncd_ctx *ctx, const char *path, const char *pfx,
                       char ***names);

/**
 * Natural-order comparison used by ncd_fs_list(): digit runs compare by
 * value, so "eth2" < "eth10" and "rank9.log" < "rank10.log".
 */
int ncd_natcmp(const char *a, const char *b);

/** Frees a list returned by ncd_fs_list(). */
void ncd_fs_list_free(char **names, int n);

#ifdef __cplusplus
}
#endif
#endif
