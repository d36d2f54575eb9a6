/* SPDX-License-Identifier: MIT */
/**
 * @file ncclvars.h
 * @brief The catalog of NCCL environment variables (data/nccl-vars.yaml),
 *        value validation with NCCL's own parsing rules, and NCCL's config
 *        files.
 *
 * Parsing facts (NCCL src/include/param.h, src/misc/param.cc,
 * src/graph/paths.cc, 2.30.7; shared/reference/nccl-facts.md §5):
 *  - integer knobs use strtoll(v, NULL, 0): "0x10" is 16, "010" is 8,
 *    trailing junk is ignored ("1abc" is 1, "true" is 0), an empty value
 *    means the default;
 *  - P2P/GDR level strings are case-sensitive; an unknown one is ignored;
 *  - NCCL_P2P_DISABLE / NCCL_SHM_DISABLE act only when the value is 1.
 * Config files: NCCL_CONF_FILE (2.23+, no '~' expansion) or else
 * ~/.nccl.conf, then /etc/nccl.conf; "VAR=value" lines, '#' comments only
 * in column 0, no trimming; applied without overwriting, so the
 * precedence is environment > user file > /etc/nccl.conf.
 */
#ifndef NCD_NCCLVARS_H
#define NCD_NCCLVARS_H

#include <stddef.h>

#include "ncd/ctx.h"
#include "ncd/finding.h"

#ifdef __cplusplus
extern "C" {
#endif

enum ncd_var_type {
    NCD_VT_INT,
    NCD_VT_FLAG1,
    NCD_VT_LEVEL,
    NCD_VT_ENUM,
    NCD_VT_LIST,
    NCD_VT_IFLIST,
    NCD_VT_STRING,
    NCD_VT_PATH,
    NCD_VT_HOSTPORT,
};

struct ncd_var_def {
    char *name;
    enum ncd_var_type type;
    int ci;           /**< enum/list values are case-insensitive */
    char **values;    /**< allowed values (as text), may be empty */
    int n_values;
    int has_min, has_max;
    long long min, max;
    char *since;      /**< first NCCL release, or NULL */
    char *doc;        /**< short description, or NULL */
};

/** A name NCCL does not read: removed, or never NCCL's at all. */
struct ncd_var_gone {
    char *name;
    char *removed;    /**< release that stopped reading it; NULL = never */
    char *instead;    /**< what to use / what really controls it */
    char *rename;     /**< a drop-in replacement variable, or NULL */
};

struct ncd_var_catalog {
    struct ncd_var_def *defs;
    size_t n_defs;
    struct ncd_var_gone *gone;
    size_t n_gone;
    char **other_prefix; /**< prefixes read by other tools (NCCL_TESTS_) */
    char **other_tool;
    size_t n_other;
    char *source;
    int is_static; /**< 1: the library's built-in tables (read-only, never
                        freed: ncd_var_catalog_release() only forgets them) */
};

/**
 * Loads a catalog from YAML text.
 * @param fname  name used in error messages.
 * @return 0, NCD_EPARSE (detail: "file:line: problem"), NCD_ENOMEM.
 *         Release with ncd_var_catalog_release() in every case.
 */
int ncd_var_catalog_load(struct ncd_ctx *ctx, const char *buf, size_t len,
                         const char *fname, struct ncd_var_catalog *out);

/**
 * The catalog compiled into the library: data/nccl-vars.yaml as
 * ncd_var_catalog_load() reads it, turned into C tables at build time by
 * src/gen/catgen.c (no parsing, no allocation).  `out` points into
 * read-only tables (is_static set): do not modify it; releasing it is
 * optional and frees nothing.  @return 0.
 */
int ncd_var_catalog_builtin(struct ncd_ctx *ctx, struct ncd_var_catalog *out);

void ncd_var_catalog_release(struct ncd_var_catalog *c);

/** The definition of `name`, or NULL. */
const struct ncd_var_def *ncd_var_find(const struct ncd_var_catalog *c,
                                       const char *name);
/** The removed / never-NCCL entry for `name`, or NULL. */
const struct ncd_var_gone *ncd_var_find_gone(const struct ncd_var_catalog *c,
                                             const char *name);

/**
 * The catalog name closest to `name` (Damerau-Levenshtein distance at most
 * max(2, len/5)), or NULL.
 */
const char *ncd_var_suggest(const struct ncd_var_catalog *c,
                            const char *name);

/**
 * Parses an integer as NCCL_PARAM does (strtoll base 0).
 * @param junk  set to 1 when characters after the number were ignored, or
 *              when there was no number at all (then *out is 0).
 * @return 0, or NCD_ERANGE on overflow (NCCL then uses the default).
 */
int ncd_nccl_int_parse(const char *v, long long *out, int *junk);

/** How NCCL will treat a value. */
struct ncd_var_verdict {
    enum ncd_severity sev; /**< NCD_SEV_OK when fine */
    char msg[320];         /**< what NCCL will do with it, in words */
    char fix[128];         /**< suggested value, "" when none */
};

/** Validates `value` of variable `d` with NCCL's parsing rules. */
void ncd_var_check_value(const struct ncd_var_def *d, const char *value,
                         struct ncd_var_verdict *v);

/** One setting read from an NCCL config file. */
struct ncd_conf_entry {
    char file[256];
    int line;
    char name[128];
    char value[256];
    int applied;       /**< 0: the environment (or an earlier file) won */
    int bad;           /**< 1: not NAME=value, or space around the name */
};

struct ncd_conf_result {
    struct ncd_conf_entry *v;
    size_t n;
    char files_read[2][256];
    int n_files;
    char conf_file_error[320]; /**< NCCL_CONF_FILE set but unreadable:
                                    why; "" otherwise */
};

/**
 * Applies NCCL's config files to the context's environment copy with
 * NCCL's precedence (never overwriting), and reports every setting.
 * Missing files are not an error.  `res` may be NULL; otherwise release
 * it with ncd_nccl_conf_release().
 * @return 0 or NCD_ENOMEM.
 */
int ncd_nccl_conf_apply(struct ncd_ctx *ctx, struct ncd_conf_result *res);

void ncd_nccl_conf_release(struct ncd_conf_result *res);

#ifdef __cplusplus
}
#endif
#endif
