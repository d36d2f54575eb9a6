/* SPDX-License-Identifier: MIT */
/**
 * @file knownbugs.h
 * @brief Known, fixed NCCL bugs (data/nccl-known-bugs.yaml): the releases
 *        they affect, the release that fixes them, and where a log shows
 *        them, their signature.
 *
 * The file is hand-curated from NCCL's release notes ("Fixed issues" of
 * each release), GitHub issues and NCCL's source; every entry cites its
 * sources.  Schema (one `bugs:` list of mappings):
 *   id, summary, kind (crash | hang | error | data-corruption |
 *   performance), area (a finding category), affected (versions as rules
 *   write them: "<2.18.3", ">=2.20.3 <2.20.5"), fixed ("2.18.3"), source
 *   (list); optional signature (list of regexes, each must match a line of
 *   the same process's log), signature_source (required with a
 *   signature), workaround, arch (the CPU architecture the bug is limited
 *   to: "aarch64", "x86_64", "ppc64le").
 * explain ties a signature to the logged NCCL version; `check` can list the
 * known bugs of the installed libnccl.
 */
#ifndef NCD_KNOWNBUGS_H
#define NCD_KNOWNBUGS_H

#include <stddef.h>

#include "ncd/ctx.h"
#include "ncd/finding.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ncd_known_bug {
    char *id;
    char *summary;
    char *kind;      /**< crash, hang, error, data-corruption, performance */
    enum ncd_category area;
    char *affected;  /**< as written: "<2.18.3", ">=2.20.3 <2.20.5" */
    int vmin, vmax;  /**< affected as version codes (M*10000+m*100+p);
                          vmax exclusive; 0 = open */
    char *fixed;     /**< first release with the fix, "2.18.3" */
    int fixed_code;
    char **signature; /**< regexes (PCRE2 / POSIX ERE subset) */
    size_t n_signature;
    char *signature_source; /**< NULL without a signature */
    char *workaround;       /**< NULL when no source states one */
    char *arch;             /**< NULL: any CPU; else the only architecture
                                 affected ("aarch64", as uname -m) */
    char **source;
    size_t n_source;
};

struct ncd_known_bugs {
    struct ncd_known_bug *v;
    size_t n;
    int is_static; /**< 1: the library's built-in tables (read-only, never
                        freed: ncd_known_bugs_release() only forgets them) */
};

/**
 * Loads known bugs from YAML text (`fname` names it in messages).
 * @return 0, NCD_EPARSE (detail "file:line:col: problem": a missing field,
 *         an unknown kind or area, versions that do not parse, a fix
 *         release inside the affected range), or NCD_ENOMEM.  `out` is empty
 *         after an error; release it with ncd_known_bugs_release() always.
 */
int ncd_known_bugs_load(struct ncd_ctx *ctx, const char *buf, size_t len,
                        const char *fname, struct ncd_known_bugs *out);

/**
 * The list compiled into the library: data/nccl-known-bugs.yaml as
 * ncd_known_bugs_load() reads it, turned into C tables at build time by
 * src/gen/catgen.c (no parsing, no allocation).  `out` points into
 * read-only tables (is_static set): do not modify it; releasing it is
 * optional and frees nothing.  @return 0.
 */
int ncd_known_bugs_builtin(struct ncd_ctx *ctx, struct ncd_known_bugs *out);

void ncd_known_bugs_release(struct ncd_known_bugs *b);

/** 1 when NCCL `version` (a code, > 0) is in the bug's affected range. */
int ncd_known_bug_affects(const struct ncd_known_bug *b, int version);

#ifdef __cplusplus
}
#endif

#endif
