/* SPDX-License-Identifier: MIT */
/**
 * @file libs.h
 * @brief Every libnccl a process on this node could load, its version and
 *        the CUDA it was built for, and which one the dynamic loader picks.
 *
 * Places searched (through the sysroot), in this order:
 *  1. FLAGS_nccl_dir (Paddle dlopens libnccl.so from there);
 *  2. each LD_LIBRARY_PATH directory;
 *  3. /etc/ld.so.cache entries named libnccl.so* (ld.so's cache, parsed);
 *  4. the default directories (/lib, /usr/lib, /lib64, /usr/lib64,
 *     /usr/lib/<arch>-linux-gnu, /usr/local/lib): the names a loader asks
 *     for there, libnccl.so.2 and libnccl.so, followed to their files, not
 *     a listing (these directories are the node's largest; a versioned
 *     file neither name reaches is loaded by no dlopen("libnccl.so.2"));
 *     elsewhere every libnccl.so* file of the directory;
 *  5. CUDA toolkits: /usr/local/cuda{,-X.Y}/{lib64,lib} and
 *     targets/<arch>/lib;
 *  6. conda: $CONDA_PREFIX/lib, /opt/conda/lib, /opt/conda/envs/<env>/lib,
 *     $HOME/{miniconda3,anaconda3,miniforge3,mambaforge}/{lib,envs/<env>/lib};
 *  7. Python wheels (nvidia-nccl-cu12/cu13): <prefix>/lib/python3.<N>/
 *     {site,dist}-packages/nvidia/nccl/lib for the prefixes /usr,
 *     /usr/local, $VIRTUAL_ENV, $CONDA_PREFIX, conda envs and ~/.local.
 *
 * The version of each file is read from the "NCCL version X.Y.Z+cudaA.B"
 * string NCCL compiles in (VERSION_STRING, NCCL src/init.cc), found in the
 * ELF .rodata section only (a few MB, not the whole 200+ MB file).  The
 * file the loader would pick for dlopen("libnccl.so.2") (LD_LIBRARY_PATH,
 * then ld.so.cache, then default directories) is confirmed with
 * ncd_sys_nccl_version() (dlopen + ncclGetVersion) when this process
 * really loads it.
 *
 * The scan is a system answer (ncd_sys_nccl_libs(), sysops.h): recorded
 * sysroots carry no library files, so `gather` records the live scan as
 * .ncd/nccl-libs (format and the types in sysops.h).
 */
#ifndef NCD_LIBS_H
#define NCD_LIBS_H

#include <stddef.h>

#include "ncd/ctx.h"
#include "ncd/strbuf.h"
#include "ncd/sysops.h"
#include "ncd/version.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Scans for libnccl (live or recorded, see above).
 * @return 0 or NCD_ENOMEM.
 */
int ncd_nccl_scan(struct ncd_ctx *ctx, struct ncd_nccl_scan *out);

/**
 * Parses an /etc/ld.so.cache image (the "glibc-ld.so.cache1.1" format, with
 * or without the old "ld.so-1.7.0" part in front) and calls `fn` for every
 * entry whose name starts with `prefix`, in cache order (the order ld.so
 * searches).  Pure.
 * @return the number of matching entries, or NCD_EPARSE.
 */
int ncd_ldcache_parse(const unsigned char *buf, size_t len,
                      const char *prefix,
                      void (*fn)(const char *name, const char *path,
                                 void *arg),
                      void *arg);

/**
 * Reads the version string from a libnccl file's ELF .rodata section.
 * @return 1 found, 0 not found, negative NCD_E* on read errors.
 */
int ncd_nccl_file_version(struct ncd_ctx *ctx, const char *path, int *code,
                          char *cuda, size_t cudasz);

#ifdef __cplusplus
}
#endif
#endif
