/* SPDX-License-Identifier: MIT */
/* Known NCCL bugs (data/nccl-known-bugs.yaml) through core/yaml.h; the
 * schema is in include/ncd/knownbugs.h. */
#define _GNU_SOURCE
#include "ncd/knownbugs.h"

#include <stdlib.h>
#include <string.h>

#include "core/yaml.h"
#include "explain/internal.h"
#include "ncd/error.h"

static const char *const kinds[] = {"crash", "hang", "error",
                                    "data-corruption", "performance", NULL};

void ncd__known_bug_free(struct ncd_known_bug *b)
{
    free(b->id);
    free(b->summary);
    free(b->kind);
    free(b->affected);
    free(b->fixed);
    free(b->signature_source);
    free(b->workaround);
    free(b->arch);
    ncd__strv_free(b->signature, b->n_signature);
    ncd__strv_free(b->source, b->n_source);
}

void ncd_known_bugs_release(struct ncd_known_bugs *b)
{
    if (b->is_static) {
        memset(b, 0, sizeof *b);
        return;
    }
    for (size_t i = 0; i < b->n; i++)
        ncd__known_bug_free(&b->v[i]);
    free(b->v);
    memset(b, 0, sizeof *b);
}

static int load_bug(struct ncd__yaml *y, yaml_node_t *m, struct ncd_known_bug *b)
{
    if (!m || m->type != YAML_MAPPING_NODE)
        return ncd__yaml_fail(y, m, NCD_EPARSE, "a bug must be a mapping");
    int rc;
    if ((rc = ncd__yaml_dup(y, m, "id", "bug", &b->id)) < 0 ||
        (rc = ncd__yaml_dup(y, m, "summary", "bug", &b->summary)) < 0 ||
        (rc = ncd__yaml_dup(y, m, "kind", "bug", &b->kind)) < 0 ||
        (rc = ncd__yaml_dup(y, m, "affected", "bug", &b->affected)) < 0 ||
        (rc = ncd__yaml_dup(y, m, "fixed", "bug", &b->fixed)) < 0 ||
        (rc = ncd__yaml_dup(y, m, "signature_source", NULL,
                            &b->signature_source)) < 0 ||
        (rc = ncd__yaml_dup(y, m, "workaround", NULL, &b->workaround)) < 0 ||
        (rc = ncd__yaml_dup(y, m, "arch", NULL, &b->arch)) < 0)
        return rc;
    if (b->arch && strcmp(b->arch, "aarch64") != 0 &&
        strcmp(b->arch, "x86_64") != 0 && strcmp(b->arch, "ppc64le") != 0)
        return ncd__yaml_fail(y, ncd__yaml_get(y, m, "arch"), NCD_EPARSE,
                              "%s: arch must be aarch64, x86_64 or ppc64le",
                              b->id);
    int k = 0;
    while (kinds[k] && strcmp(kinds[k], b->kind) != 0)
        k++;
    if (!kinds[k])
        return ncd__yaml_fail(y, ncd__yaml_get(y, m, "kind"), NCD_EPARSE,
                              "%s: unknown kind '%s'", b->id, b->kind);
    const char *area = ncd__yaml_str(y, m, "area");
    int c = area ? ncd_category_parse(area) : -1;
    if (c < 0)
        return ncd__yaml_fail(y, m, NCD_EPARSE,
                              "%s: 'area' must be a finding category", b->id);
    b->area = (enum ncd_category)c;
    b->fixed_code = ncd__version_code(b->fixed);
    if (ncd__versions_parse(b->affected, &b->vmin, &b->vmax) < 0 ||
        (!b->vmin && !b->vmax) || !b->fixed_code)
        return ncd__yaml_fail(y, m, NCD_EPARSE,
                              "%s: affected '%s' / fixed '%s' are not NCCL "
                              "versions",
                              b->id, b->affected, b->fixed);
    if (ncd__version_in(b->vmin, b->vmax, b->fixed_code))
        return ncd__yaml_fail(y, m, NCD_EPARSE,
                              "%s: the fixing release %s is affected", b->id,
                              b->fixed);
    if ((rc = ncd__yaml_strv(y, ncd__yaml_get(y, m, "signature"), "signature",
                             NCD_EPARSE, &b->signature, &b->n_signature)) < 0 ||
        (rc = ncd__yaml_strv(y, ncd__yaml_get(y, m, "source"), "source",
                             NCD_EPARSE, &b->source, &b->n_source)) < 0)
        return rc;
    if (!b->n_source)
        return ncd__yaml_fail(y, m, NCD_EPARSE, "%s: no 'source'", b->id);
    if (b->n_signature && !b->signature_source)
        return ncd__yaml_fail(y, m, NCD_EPARSE,
                              "%s: a signature needs 'signature_source'", b->id);
    return 0;
}

int ncd_known_bugs_load(struct ncd_ctx *ctx, const char *buf, size_t len,
                        const char *fname, struct ncd_known_bugs *out)
{
    memset(out, 0, sizeof *out);
    struct ncd__yaml y;
    yaml_node_t *list;
    int rc = ncd__yaml_load_list(ctx, fname, buf, len, "bugs", NCD_EPARSE,
                                 &y, &list);
    size_t n = ncd__yaml_seq_len(list);
    if (n && !(out->v = calloc(n, sizeof *out->v)))
        rc = NCD_ENOMEM;
    for (size_t i = 0; i < n && rc == 0; i++) {
        out->n = i + 1;
        rc = load_bug(&y, ncd__yaml_seq_at(&y, list, i), &out->v[i]);
        for (size_t j = 0; rc == 0 && j < i; j++)
            if (strcmp(out->v[j].id, out->v[i].id) == 0)
                rc = ncd__yaml_fail(&y, ncd__yaml_seq_at(&y, list, i),
                                    NCD_EPARSE, "duplicate bug id '%s'",
                                    out->v[i].id);
    }
    ncd__yaml_release(&y);
    if (rc < 0)
        ncd_known_bugs_release(out);
    return rc;
}

int ncd_known_bug_affects(const struct ncd_known_bug *b, int version)
{
    return version > 0 && ncd__version_in(b->vmin, b->vmax, version);
}
