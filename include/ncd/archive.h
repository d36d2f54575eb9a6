/* SPDX-License-Identifier: MIT */
/**
 * @file archive.h
 * @brief Capture tarballs: unpacking one into a private sysroot and writing
 *        one (`gather`).
 *
 * libarchive is loaded with dlopen (libarchive.so.13, the soname of
 * libarchive 3.x; then libarchive.so) the first time a tarball is read or
 * written, never linked: it pulls libxml2, ICU, libstdc++ and six
 * compression libraries, which every other command would load at start-up
 * for nothing.  Without it these functions fail with NCD_EDLOPEN and say
 * which package to install.
 */
#ifndef NCD_ARCHIVE_H
#define NCD_ARCHIVE_H

#include <stddef.h>

#include "ncd/ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Limits when unpacking a capture (bytes / entries).  Entries: a capture
 *  from gather has about 200, the largest hwloc-gather-topology capture in
 *  hwloc's test suite 11,495; the count is checked (headers only) before
 *  anything is written. */
#define NCD_SYSROOT_MAX_TOTAL (512LL << 20)
#define NCD_SYSROOT_MAX_FILE (64LL << 20)
#define NCD_SYSROOT_MAX_ENTRIES 50000

/**
 * Unpacks a capture tarball (any tar flavour, any compression libarchive
 * reads) into a new private directory (mkdtemp under $TMPDIR or /tmp).
 * Refuses absolute paths, ".." components, hard links, device nodes,
 * symlinks whose target is absolute or climbs above the tree, and more
 * than the NCD_SYSROOT_MAX_* limits.  A capture whose entries all sit under
 * one top folder (hwloc-gather-topology's layout) is rooted at that folder.
 * @param dir   receives the directory to use as sysroot (>= 4096 bytes).
 * @param top   receives the directory to remove afterwards with
 *              ncd_sysroot_remove() (>= 4096 bytes).
 * @param err   receives a message on failure.
 * @return 0, NCD_EPARSE (bad archive or unsafe entry), NCD_ERANGE (limits),
 *         NCD_EIO, NCD_ENOMEM, NCD_EDLOPEN.  On failure nothing is left
 *         behind.
 */
int ncd_sysroot_unpack(const char *tarball, char *dir, size_t dirsz,
                       char *top, size_t topsz, char *err, size_t errsz);

/** Removes an unpacked tree (no symlink is followed).  Returns 0 or -1. */
int ncd_sysroot_remove(const char *top);

/** One entry of a tarball to write. */
struct ncd_tar_entry {
    const char *path;  /**< relative ("sys/class/net/lo/mtu") */
    enum { NCD_TAR_FILE, NCD_TAR_LINK, NCD_TAR_DIR } type;
    const char *data;  /**< file content, or the symlink target */
    size_t len;        /**< bytes of a file */
};

/**
 * Writes entries as a gzip'ed POSIX (pax) tar to `fd` (mode 0644 files,
 * 0755 directories, mtime now).  The caller owns and closes fd.
 * @return 0, NCD_EIO (detail in ctx), NCD_ENOMEM, NCD_EDLOPEN.
 */
int ncd_tar_write(struct ncd_ctx *ctx, int fd, const struct ncd_tar_entry *v,
                  size_t n);

#ifdef __cplusplus
}
#endif
#endif
