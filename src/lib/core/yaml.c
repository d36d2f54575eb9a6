/* SPDX-License-Identifier: MIT */
/* The YAML helper layer (core/yaml.h) over libyaml's document API. */
#define _GNU_SOURCE
#include "core/dl.h"
#include "core/yaml.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncd/error.h"

/* libyaml is loaded on first use, as libarchive is (archive/libarchive.c):
 * the catalogs `check` needs are C tables (src/gen/catgen.c), so only
 * explain's rules, verify's bandwidth table and user files parse YAML, and
 * linked, libyaml would be mapped and relocated at every start. */
#define NCD__YAML_FUNCS(X)                                                    \
    X(parser_initialize, yaml_parser_initialize)                              \
    X(parser_set_input_string, yaml_parser_set_input_string)                  \
    X(parser_load, yaml_parser_load)                                          \
    X(parser_delete, yaml_parser_delete)                                      \
    X(document_delete, yaml_document_delete)                                  \
    X(document_get_node, yaml_document_get_node)                              \
    X(document_get_root_node, yaml_document_get_root_node)

static struct {
#define NCD__YAML_FIELD(field, sym) __typeof__(sym) *field;
    NCD__YAML_FUNCS(NCD__YAML_FIELD)
#undef NCD__YAML_FIELD
} api;
static char load_error[256];
static int loaded;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void)
{
    /* libyaml-0.so.2: the soname since 0.1.x (Debian libyaml-0-2); the dev
     * symlink as a last resort for builds elsewhere. */
    static const char *const names[] = {"libyaml-0.so.2", "libyaml.so"};
    static const char *const syms[] = {NCD__YAML_FUNCS(NCD__DL_NAME)};
    void *fn[sizeof syms / sizeof *syms];
    if (ncd__dl_load("libyaml", "libyaml-0-2", names,
                     sizeof names / sizeof *names, syms, fn,
                     sizeof fn / sizeof *fn, load_error, sizeof load_error) < 0)
        return;
    size_t i = 0;
#define NCD__YAML_SET(field, sym)                                            \
    api.field = (__typeof__(api.field))(uintptr_t)fn[i++];
    NCD__YAML_FUNCS(NCD__YAML_SET)
#undef NCD__YAML_SET
    /* never dlclose'd: the table points into it for the process' life */
    loaded = 1;
}

int ncd__yaml_load(struct ncd_ctx *ctx, const char *name, const char *buf,
                   size_t len, struct ncd__yaml *y)
{
    memset(y, 0, sizeof *y);
    y->ctx = ctx;
    y->name = name;
    pthread_once(&once, load);
    if (!loaded)
        return ncd_fail(ctx, NCD_EDLOPEN, "%s: %s", name, load_error);
    yaml_parser_t p;
    if (!api.parser_initialize(&p))
        return NCD_ENOMEM;
    api.parser_set_input_string(&p, (const unsigned char *)buf, len);
    if (!api.parser_load(&p, &y->doc)) {
        int rc = p.error == YAML_MEMORY_ERROR
                     ? NCD_ENOMEM
                     : ncd_fail(ctx, NCD_EPARSE, "%s:%zu:%zu: %s%s%s", name,
                                p.problem_mark.line + 1,
                                p.problem_mark.column + 1,
                                p.problem ? p.problem : "YAML error",
                                p.context ? " " : "",
                                p.context ? p.context : "");
        api.parser_delete(&p);
        return rc;
    }
    api.parser_delete(&p);
    y->loaded = 1;
    return 0;
}

int ncd__yaml_load_list(struct ncd_ctx *ctx, const char *name, const char *buf,
                        size_t len, const char *key, int code,
                        struct ncd__yaml *y, yaml_node_t **list)
{
    *list = NULL;
    int rc = ncd__yaml_load(ctx, name, buf, len, y);
    if (rc < 0)
        return rc;
    yaml_node_t *root = ncd__yaml_root(y);
    yaml_node_t *l = ncd__yaml_get(y, root, key);
    if (!l || l->type != YAML_SEQUENCE_NODE)
        return ncd__yaml_fail(y, root, code,
                              "expected a mapping with %s '%s:' list",
                              strchr("aeiou", key[0]) ? "an" : "a", key);
    *list = l;
    return 0;
}

void ncd__yaml_release(struct ncd__yaml *y)
{
    if (y->loaded)
        api.document_delete(&y->doc);
    y->loaded = 0;
}

yaml_node_t *ncd__yaml_root(struct ncd__yaml *y)
{
    return y->loaded ? api.document_get_root_node(&y->doc) : NULL;
}

const char *ncd__yaml_scalar(const yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value
                                            : NULL;
}

yaml_node_t *ncd__yaml_get(struct ncd__yaml *y, yaml_node_t *map,
                           const char *key)
{
    if (!map || map->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start;
         p < map->data.mapping.pairs.top; p++) {
        const char *k = ncd__yaml_scalar(api.document_get_node(&y->doc, p->key));
        if (k && strcmp(k, key) == 0)
            return api.document_get_node(&y->doc, p->value);
    }
    return NULL;
}

const char *ncd__yaml_str(struct ncd__yaml *y, yaml_node_t *map,
                          const char *key)
{
    return ncd__yaml_scalar(ncd__yaml_get(y, map, key));
}

int ncd__yaml_dup(struct ncd__yaml *y, yaml_node_t *m, const char *key,
                     const char *what, char **out)
{
    const char *s = ncd__yaml_str(y, m, key);
    if (!s || !*s)
        return what ? ncd__yaml_fail(y, m, NCD_EPARSE, "%s without '%s'",
                                     what, key)
                    : 0;
    return (*out = strdup(s)) ? 0 : NCD_ENOMEM;
}

int ncd__yaml_is_null(const yaml_node_t *n)
{
    const char *s = ncd__yaml_scalar(n);
    return s && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
           (strcmp(s, "~") == 0 || strcmp(s, "null") == 0);
}

size_t ncd__yaml_seq_len(const yaml_node_t *n)
{
    if (!n || n->type != YAML_SEQUENCE_NODE)
        return 0;
    return (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
}

yaml_node_t *ncd__yaml_seq_at(struct ncd__yaml *y, yaml_node_t *seq, size_t i)
{
    if (i >= ncd__yaml_seq_len(seq))
        return NULL;
    return api.document_get_node(&y->doc, seq->data.sequence.items.start[i]);
}

size_t ncd__yaml_map_len(const yaml_node_t *n)
{
    if (!n || n->type != YAML_MAPPING_NODE)
        return 0;
    return (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
}

yaml_node_t *ncd__yaml_map_key(struct ncd__yaml *y, yaml_node_t *map, size_t i)
{
    if (i >= ncd__yaml_map_len(map))
        return NULL;
    return api.document_get_node(&y->doc, map->data.mapping.pairs.start[i].key);
}

yaml_node_t *ncd__yaml_map_value(struct ncd__yaml *y, yaml_node_t *map,
                                 size_t i)
{
    if (i >= ncd__yaml_map_len(map))
        return NULL;
    return api.document_get_node(&y->doc,
                                  map->data.mapping.pairs.start[i].value);
}

int ncd__yaml_fail(struct ncd__yaml *y, const yaml_node_t *n, int code,
                   const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n)
        return ncd_fail(y->ctx, code, "%s:%zu:%zu: %s", y->name,
                        n->start_mark.line + 1, n->start_mark.column + 1, msg);
    return ncd_fail(y->ctx, code, "%s: %s", y->name, msg);
}

int ncd__yaml_strv(struct ncd__yaml *y, yaml_node_t *n, const char *what,
                   int code, char ***out, size_t *count)
{
    *out = NULL;
    *count = 0;
    if (!n)
        return 0;
    if (n->type == YAML_SCALAR_NODE) {
        *out = calloc(1, sizeof **out);
        if (!*out || !((*out)[0] = strdup(ncd__yaml_scalar(n))))
            return NCD_ENOMEM;
        *count = 1;
        return 0;
    }
    if (n->type != YAML_SEQUENCE_NODE)
        return ncd__yaml_fail(y, n, code, "'%s' must be a string or a list",
                              what);
    size_t k = ncd__yaml_seq_len(n);
    *out = calloc(k ? k : 1, sizeof **out);
    if (!*out)
        return NCD_ENOMEM;
    for (size_t i = 0; i < k; i++) {
        yaml_node_t *it = ncd__yaml_seq_at(y, n, i);
        const char *s = ncd__yaml_scalar(it);
        if (!s)
            return ncd__yaml_fail(y, it ? it : n, code,
                                  "items of '%s' must be strings", what);
        if (!((*out)[i] = strdup(s)))
            return NCD_ENOMEM;
        *count = i + 1;
    }
    return 0;
}
