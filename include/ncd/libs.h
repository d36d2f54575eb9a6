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
 *     /usr/lib/<arch>-linux-gnu, /usr/local/lib);
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
 * ncd_nccl_lib_detect() (dlopen + ncclGetVersion) on a live node.
 *
 * Recorded sysroots carry no library files; `gather` writes the live scan
 * to <sysroot>/.ncd/nccl-libs, one line per file:
 *     lib <version|?> <cuda|?> <origin> <path>
 *     winner <path>
 */
#ifndef NCD_LIBS_H
#define NCD_LIBS_H

#include <stddef.h>

#include "ncd/ctx.h"
#include "ncd/strbuf.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ncd_nccl_file {
    char path[512];    /**< as found ("/usr/lib/x86_64-linux-gnu/libnccl.so.2") */
    char real[512];    /**< symlinks resolved */
    char origin[40];   /**< "LD_LIBRARY_PATH", "ld.so.cache", "system",
                            "CUDA", "conda", "site-packages",
                            "FLAGS_nccl_dir" */
    int version;       /**< version code (nccl.h), 0 unknown */
    char cuda[16];     /**< CUDA it was built for ("12.4"), "" unknown */
};

struct ncd_nccl_scan {
    struct ncd_nccl_file *v; /**< owned; one entry per real file */
    size_t n;
    int winner;        /**< index of dlopen("libnccl.so.2")'s pick, -1 */
    char winner_why[96]; /**< "first in LD_LIBRARY_PATH", "ld.so.cache"... */
    int recorded;      /**< came from .ncd/nccl-libs */
    int visible;       /**< 0: recorded tree without .ncd/nccl-libs */
};

/**
 * Scans for libnccl (live or recorded, see above).
 * @return 0 or NCD_ENOMEM.
 */
int ncd_nccl_scan(struct ncd_ctx *ctx, struct ncd_nccl_scan *out);

/** Frees the scan's contents. */
void ncd_nccl_scan_release(struct ncd_nccl_scan *s);

/** Writes the scan in the .ncd/nccl-libs format (for gather). */
void ncd_nccl_scan_format(const struct ncd_nccl_scan *s,
                          struct ncd_strbuf *out);

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
 * Finds "NCCL version X.Y.Z[suffix]+cudaA.B" in a buffer.
 * @param code  receives the version code.
 * @param cuda  receives "A.B" ("" when the string has no +cuda part).
 * @return 1 found, 0 not.  Pure.
 */
int ncd_nccl_version_in_buf(const char *buf, size_t len, int *code,
                            char *cuda, size_t cudasz);

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
