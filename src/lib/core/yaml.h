/* SPDX-License-Identifier: MIT */
/*
 * One small layer over libyaml's document API for the library's data files
 * (rules/NAME.yaml, data/nccl-vars.yaml): load a buffer, look keys up, read
 * scalars and lists, and report a problem as "<file>:<line>:<col>: ..." in
 * the context's error detail.  Loaders walk documents only through these
 * functions, so every data file reports errors the same way.
 *
 * Lines and columns in messages are 1-based.  Strings returned by the
 * lookup functions point into the document and live until
 * ncd__yaml_release().
 */
#ifndef NCD_CORE_YAML_H
#define NCD_CORE_YAML_H

#include <stddef.h>
#include <yaml.h>

#include "ncd/ctx.h"

struct ncd__yaml {
    struct ncd_ctx *ctx;
    const char *name; /* file name for messages; not copied */
    yaml_document_t doc;
    int loaded;
};

/*
 * Parses one document from buf[0, len).  `name` must outlive `y`.
 * Returns 0, NCD_ENOMEM, or NCD_EPARSE with the detail
 * "<name>:<line>:<col>: <libyaml's problem>[ <context>]".  Call
 * ncd__yaml_release() in every case.
 */
int ncd__yaml_load(struct ncd_ctx *ctx, const char *name, const char *buf,
                   size_t len, struct ncd__yaml *y);

/*
 * A data file whose top level is a mapping holding one list under `key`
 * (rules:, bugs:, errors:): ncd__yaml_load(), then *list is that
 * sequence.  Returns what ncd__yaml_load() returns, or `code` with the
 * detail "<name>[:<line>:<col>]: expected a mapping with a '<key>:' list"
 * ("an" before a vowel) when the document has no such list.  Call
 * ncd__yaml_release() in every case.
 */
int ncd__yaml_load_list(struct ncd_ctx *ctx, const char *name, const char *buf,
                        size_t len, const char *key, int code,
                        struct ncd__yaml *y, yaml_node_t **list);

/* Frees the document.  Safe on a failed or zeroed `y`. */
void ncd__yaml_release(struct ncd__yaml *y);

/* The root node, or NULL for an empty document. */
yaml_node_t *ncd__yaml_root(struct ncd__yaml *y);

/* The value of `key` in mapping `map`; NULL when absent or `map` is not a
 * mapping. */
yaml_node_t *ncd__yaml_get(struct ncd__yaml *y, yaml_node_t *map,
                           const char *key);

/* The text of a scalar node; NULL for NULL or a non-scalar. */
const char *ncd__yaml_scalar(const yaml_node_t *n);

/* ncd__yaml_scalar(ncd__yaml_get(y, map, key)). */
const char *ncd__yaml_str(struct ncd__yaml *y, yaml_node_t *map,
                          const char *key);

/*
 * Copies the string under `key` of mapping `m` into *out (caller frees).
 * An absent or empty value leaves *out as it is: 0 when `what` is NULL
 * (an optional field), else NCD_EPARSE with "<what> without '<key>'" at
 * `m` (a required one).  Returns 0, NCD_ENOMEM or NCD_EPARSE.
 */
int ncd__yaml_dup(struct ncd__yaml *y, yaml_node_t *m, const char *key,
                     const char *what, char **out);

/* 1 for a plain `~` or `null` scalar (YAML's null), else 0. */
int ncd__yaml_is_null(const yaml_node_t *n);

/* Items of a sequence (0 for NULL or another kind), and item i. */
size_t ncd__yaml_seq_len(const yaml_node_t *n);
yaml_node_t *ncd__yaml_seq_at(struct ncd__yaml *y, yaml_node_t *seq, size_t i);

/* Pairs of a mapping (0 for NULL or another kind); key and value of pair i. */
size_t ncd__yaml_map_len(const yaml_node_t *n);
yaml_node_t *ncd__yaml_map_key(struct ncd__yaml *y, yaml_node_t *map,
                               size_t i);
yaml_node_t *ncd__yaml_map_value(struct ncd__yaml *y, yaml_node_t *map,
                                 size_t i);

/*
 * Records "<name>:<line>:<col>: <message>" (node `n`'s position; just
 * "<name>: <message>" when n is NULL) in the context and returns `code`.
 */
int ncd__yaml_fail(struct ncd__yaml *y, const yaml_node_t *n, int code,
                   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/*
 * A scalar or a sequence of scalars as a string vector (strings copied;
 * caller frees each and the array, also on error, for the *count strings
 * set).  An absent node (NULL) gives an empty vector.  `what` names the
 * key in messages.  Returns 0, NCD_ENOMEM, or `code` for another node kind
 * or a non-scalar item.
 */
int ncd__yaml_strv(struct ncd__yaml *y, yaml_node_t *n, const char *what,
                   int code, char ***out, size_t *count);

#endif
