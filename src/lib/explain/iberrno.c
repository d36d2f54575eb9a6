/* SPDX-License-Identifier: MIT */
/*
 * data/ib-verbs-errors.yaml: what an errno of an IB verbs call means to
 * NCCL, per verb (format in the file's header), loaded through
 * core/yaml.h.
 */
#define _GNU_SOURCE
#include "explain/reason.h"

#include <stdlib.h>
#include <string.h>

#include "core/embedded.h"
#include "core/yaml.h"
#include "ncd/error.h"

static void entry_release(struct ncd__iberr *e)
{
    ncd__strv_free(e->verbs, e->nverbs);
    free(e->name);
    free(e->text);
    free(e->meaning);
    free(e->fix);
    free(e->source);
    ncd__strv_free(e->env_names, e->nenv);
    ncd__strv_free(e->env_vals, e->nenv);
    ncd__strv_free(e->hcas, e->nhcas);
}

void ncd__iberr_release(struct ncd__iberr_table *t)
{
    for (size_t i = 0; i < t->n; i++)
        entry_release(&t->v[i]);
    free(t->v);
    memset(t, 0, sizeof *t);
}

static int load_entry(struct ncd__yaml *y, yaml_node_t *m, struct ncd__iberr *e)
{
    if (!m || m->type != YAML_MAPPING_NODE)
        return ncd__yaml_fail(y, m, NCD_EPARSE, "an entry must be a mapping");
    int rc = ncd__yaml_strv(y, ncd__yaml_get(y, m, "verbs"), "verbs",
                            NCD_EPARSE, &e->verbs, &e->nverbs);
    if (rc < 0)
        return rc;
    if (!e->nverbs)
        return ncd__yaml_fail(y, m, NCD_EPARSE, "entry without 'verbs'");
    const char *num = ncd__yaml_str(y, m, "errno");
    char *end;
    long v = num ? strtol(num, &end, 10) : 0;
    if (!num || *end || v <= 0 || v > 4095)
        return ncd__yaml_fail(y, m, NCD_EPARSE,
                              "'errno' must be a positive errno number");
    e->errnum = (int)v;
    const char *cat = ncd__yaml_str(y, m, "category");
    int c = cat ? ncd_category_parse(cat) : -1;
    if (c < 0)
        return ncd__yaml_fail(y, m, NCD_EPARSE, "unknown category '%s'",
                              cat ? cat : "");
    e->cat = (enum ncd_category)c;
    if ((rc = ncd__yaml_dup(y, m, "name", "entry", &e->name)) < 0 ||
        (rc = ncd__yaml_dup(y, m, "text", "entry", &e->text)) < 0 ||
        (rc = ncd__yaml_dup(y, m, "meaning", "entry", &e->meaning)) < 0 ||
        (rc = ncd__yaml_dup(y, m, "fix", "entry", &e->fix)) < 0 ||
        (rc = ncd__yaml_dup(y, m, "source", "entry", &e->source)) < 0)
        return rc;
    yaml_node_t *hn = ncd__yaml_get(y, m, "hcas");
    if (hn && (rc = ncd__yaml_strv(y, hn, "hcas", NCD_EPARSE, &e->hcas,
                                   &e->nhcas)) < 0)
        return rc;
    for (size_t i = 0; i < e->nhcas; i++)
        if (!e->hcas[i][0])
            return ncd__yaml_fail(y, hn, NCD_EPARSE, "empty 'hcas' prefix");
    const char *vers = ncd__yaml_str(y, m, "nccl_versions");
    if (vers && ncd__versions_parse(vers, &e->vmin, &e->vmax) < 0)
        return ncd__yaml_fail(y, m, NCD_EPARSE, "bad nccl_versions '%s'", vers);
    yaml_node_t *env = ncd__yaml_get(y, m, "env");
    size_t k = ncd__yaml_map_len(env);
    if (env && env->type != YAML_MAPPING_NODE)
        return ncd__yaml_fail(y, env, NCD_EPARSE, "'env' must be a mapping");
    if (!k)
        return 0;
    e->env_names = calloc(k, sizeof(char *));
    e->env_vals = calloc(k, sizeof(char *));
    if (!e->env_names || !e->env_vals)
        return NCD_ENOMEM;
    for (size_t i = 0; i < k; i++) {
        yaml_node_t *vn = ncd__yaml_map_value(y, env, i);
        const char *n = ncd__yaml_scalar(ncd__yaml_map_key(y, env, i));
        const char *val = ncd__yaml_scalar(vn);
        if (!n || !val)
            return ncd__yaml_fail(y, vn, NCD_EPARSE, "env values are strings");
        e->nenv = i + 1;
        e->env_names[i] = strdup(n);
        e->env_vals[i] = ncd__yaml_is_null(vn) ? NULL : strdup(val);
        if (!e->env_names[i] || (!ncd__yaml_is_null(vn) && !e->env_vals[i]))
            return NCD_ENOMEM;
    }
    return 0;
}

int ncd__iberr_load(struct ncd_ctx *ctx, const char *name, const char *buf,
                    size_t len, struct ncd__iberr_table *out)
{
    memset(out, 0, sizeof *out);
    struct ncd__yaml y;
    yaml_node_t *list;
    int rc = ncd__yaml_load_list(ctx, name, buf, len, "errors", NCD_EPARSE,
                                 &y, &list);
    size_t n = ncd__yaml_seq_len(list);
    if (n && !(out->v = calloc(n, sizeof *out->v)))
        rc = NCD_ENOMEM;
    for (size_t i = 0; i < n && rc == 0; i++) {
        out->n = i + 1;
        rc = load_entry(&y, ncd__yaml_seq_at(&y, list, i), &out->v[i]);
    }
    ncd__yaml_release(&y);
    if (rc < 0)
        ncd__iberr_release(out);
    return rc;
}

int ncd__iberr_builtin(struct ncd_ctx *ctx, struct ncd__iberr_table *out)
{
    static const char name[] = "data/ib-verbs-errors.yaml";
    const struct ncd_embedded_file *f = ncd_embedded_find(name);
    if (!f) {
        memset(out, 0, sizeof *out);
        return ncd_fail(ctx, NCD_ENOENT, "%s missing from this build", name);
    }
    return ncd__iberr_load(ctx, name, (const char *)f->data, f->size, out);
}

/* Is `dev` (an HCA name) one the entry is limited to?  No limit: yes. */
static int hca_ok(const struct ncd__iberr *e, const char *dev)
{
    if (!e->nhcas)
        return 1;
    for (size_t k = 0; dev && dev[0] && k < e->nhcas; k++)
        if (strncmp(dev, e->hcas[k], strlen(e->hcas[k])) == 0)
            return 1;
    return 0;
}

const struct ncd__iberr *ncd__iberr_find(const struct ncd__iberr_table *t,
                                         const char *verb, int errnum,
                                         const char *text, int version,
                                         const char *dev)
{
    for (size_t i = 0; i < t->n; i++) {
        const struct ncd__iberr *e = &t->v[i];
        int verb_ok = 0;
        if (!ncd__version_in(e->vmin, e->vmax, version) || !hca_ok(e, dev))
            continue;
        for (size_t k = 0; k < e->nverbs && !verb_ok; k++)
            verb_ok = strcmp(e->verbs[k], "*") == 0 ||
                      strcmp(e->verbs[k], verb) == 0;
        if (verb_ok && (errnum > 0 ? e->errnum == errnum
                                   : text && strcmp(e->text, text) == 0))
            return e;
    }
    return NULL;
}
