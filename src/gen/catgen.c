/* SPDX-License-Identifier: MIT */
/*
 * catgen: the NCCL variable catalog (data/nccl-vars.yaml) and the known
 * bugs (data/nccl-known-bugs.yaml) turned into C tables at build time, so
 * that `check` and every other command start without parsing YAML:
 *
 *   catgen OUT.c nccl-vars.yaml nccl-known-bugs.yaml
 *
 * The YAML stays the only source: catgen loads each file with the
 * library's own loaders (ncd_var_catalog_load(), ncd_known_bugs_load(),
 * with all their validation) and writes what they return as static
 * initialisers of the same structures, `ncd__builtin_vars` and
 * `ncd__builtin_bugs`, which ncd_var_catalog_builtin() and
 * ncd_known_bugs_builtin() hand out.  tests/unit/test_catalog_tables.c
 * checks that the tables equal a runtime parse of the embedded YAML.
 * Writes a temporary file and renames it; exit 0, or 1 with the loader's
 * message ("file:line:col: problem").
 */
#define _GNU_SOURCE
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncd/ctx.h"
#include "ncd/error.h"
#include "ncd/knownbugs.h"
#include "ncd/ncclvars.h"
#include "ncd/readall.h"

static void die(const char *a, const char *b)
{
    fprintf(stderr, "catgen: %s%s\n", a, b);
    exit(1);
}

/* The tables do not exist yet while catgen runs: the library objects it
 * links may refer to the functions that hand them out (explain's reasons),
 * and catgen never calls them. */
int ncd_var_catalog_builtin(struct ncd_ctx *ctx, struct ncd_var_catalog *out)
{
    memset(out, 0, sizeof *out);
    return ncd_fail(ctx, NCD_ENOENT, "no built-in catalog inside catgen");
}

int ncd_known_bugs_builtin(struct ncd_ctx *ctx, struct ncd_known_bugs *out)
{
    memset(out, 0, sizeof *out);
    return ncd_fail(ctx, NCD_ENOENT, "no built-in bugs inside catgen");
}

/* A C string literal for `s` (every byte outside printable ASCII, the
 * quote and the backslash as a 3-digit octal escape), or NULL. */
static void str(FILE *o, const char *s)
{
    if (!s) {
        fputs("NULL", o);
        return;
    }
    fputc('"', o);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p < 0x20 || *p >= 0x7f || *p == '"' || *p == '\\' || *p == '?')
            fprintf(o, "\\%03o", *p);
        else
            fputc(*p, o);
    }
    fputc('"', o);
}

static void ll(FILE *o, long long v)
{
    if (v == LLONG_MIN)
        fputs("(-9223372036854775807LL - 1)", o);
    else
        fprintf(o, "%lldLL", v);
}

/* `static char *NAME[] = {...};` for a list of n strings (n may be 0:
 * nothing is written and the caller uses NULL). */
static void strv(FILE *o, const char *name, char *const *v, size_t n)
{
    if (!n)
        return;
    fprintf(o, "static char *%s[] = {", name);
    for (size_t i = 0; i < n; i++) {
        fputs(i ? ", " : "", o);
        str(o, v[i]);
    }
    fputs("};\n", o);
}

static void emit_vars(FILE *o, const struct ncd_var_catalog *c)
{
    char nm[64];
    for (size_t i = 0; i < c->n_defs; i++) {
        snprintf(nm, sizeof nm, "vv%zu", i);
        strv(o, nm, c->defs[i].values, (size_t)c->defs[i].n_values);
    }
    fputs("static struct ncd_var_def var_defs[] = {\n", o);
    for (size_t i = 0; i < c->n_defs; i++) {
        const struct ncd_var_def *d = &c->defs[i];
        fputs("    {", o);
        str(o, d->name);
        fprintf(o, ", %d, %d, ", (int)d->type, d->ci);
        if (d->n_values)
            fprintf(o, "vv%zu", i);
        else
            fputs("NULL", o);
        fprintf(o, ", %d, %d, %d, ", d->n_values, d->has_min, d->has_max);
        ll(o, d->min);
        fputs(", ", o);
        ll(o, d->max);
        fputs(", ", o);
        str(o, d->since);
        fputs(", ", o);
        str(o, d->doc);
        fputs("},\n", o);
    }
    fputs("};\nstatic struct ncd_var_gone var_gone[] = {\n", o);
    for (size_t i = 0; i < c->n_gone; i++) {
        const struct ncd_var_gone *g = &c->gone[i];
        fputs("    {", o);
        str(o, g->name);
        fputs(", ", o);
        str(o, g->removed);
        fputs(", ", o);
        str(o, g->instead);
        fputs(", ", o);
        str(o, g->rename);
        fputs("},\n", o);
    }
    fputs("};\n", o);
    strv(o, "var_other_prefix", c->other_prefix, c->n_other);
    strv(o, "var_other_tool", c->other_tool, c->n_other);
    fprintf(o, "const struct ncd_var_catalog ncd__builtin_vars = {\n"
               "    var_defs, %zu, var_gone, %zu,\n",
            c->n_defs, c->n_gone);
    fprintf(o, "    %s, %s, %zu, ", c->n_other ? "var_other_prefix" : "NULL",
            c->n_other ? "var_other_tool" : "NULL", c->n_other);
    str(o, c->source);
    fputs(", 1};\n\n", o);
}

static void emit_bugs(FILE *o, const struct ncd_known_bugs *b)
{
    char nm[64];
    for (size_t i = 0; i < b->n; i++) {
        snprintf(nm, sizeof nm, "bsig%zu", i);
        strv(o, nm, b->v[i].signature, b->v[i].n_signature);
        snprintf(nm, sizeof nm, "bsrc%zu", i);
        strv(o, nm, b->v[i].source, b->v[i].n_source);
    }
    fputs("static struct ncd_known_bug bugs[] = {\n", o);
    for (size_t i = 0; i < b->n; i++) {
        const struct ncd_known_bug *k = &b->v[i];
        fputs("    {", o);
        str(o, k->id);
        fputs(", ", o);
        str(o, k->summary);
        fputs(", ", o);
        str(o, k->kind);
        fprintf(o, ", %d, ", (int)k->area);
        str(o, k->affected);
        fprintf(o, ", %d, %d, ", k->vmin, k->vmax);
        str(o, k->fixed);
        fprintf(o, ", %d, ", k->fixed_code);
        if (k->n_signature)
            fprintf(o, "bsig%zu", i);
        else
            fputs("NULL", o);
        fprintf(o, ", %zu, ", k->n_signature);
        str(o, k->signature_source);
        fputs(", ", o);
        str(o, k->workaround);
        fputs(", ", o);
        str(o, k->arch);
        fputs(", ", o);
        if (k->n_source)
            fprintf(o, "bsrc%zu", i);
        else
            fputs("NULL", o);
        fprintf(o, ", %zu},\n", k->n_source);
    }
    fprintf(o, "};\nconst struct ncd_known_bugs ncd__builtin_bugs = "
               "{bugs, %zu, 1};\n",
            b->n);
}

static void load(const char *path, struct ncd_rdbuf *b)
{
    if (ncd_read_file(path, b) < 0 || !b->data)
        die("cannot read ", path);
}

int main(int argc, char **argv)
{
    if (argc != 4)
        die("usage: catgen OUT.c nccl-vars.yaml nccl-known-bugs.yaml", "");
    struct ncd_ctx *ctx = NULL;
    if (ncd_ctx_new("/", NULL, &ctx) < 0)
        die("cannot make a context", "");
    struct ncd_rdbuf vb = {0}, bb = {0};
    load(argv[2], &vb);
    load(argv[3], &bb);
    struct ncd_var_catalog cat;
    struct ncd_known_bugs bugs;
    if (ncd_var_catalog_load(ctx, vb.data, vb.len, "data/nccl-vars.yaml", &cat) < 0)
        die(ncd_ctx_errdetail(ctx), "");
    if (ncd_known_bugs_load(ctx, bb.data, bb.len, "data/nccl-known-bugs.yaml", &bugs) <
        0)
        die(ncd_ctx_errdetail(ctx), "");
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]);
    FILE *o = fopen(tmp, "w");
    if (!o)
        die("cannot write ", tmp);
    fputs("/* Generated by catgen (src/gen/catgen.c) from data/nccl-vars.yaml "
          "and\n * data/nccl-known-bugs.yaml: do not edit. */\n"
          "#include <stddef.h>\n\n#include \"ncd/knownbugs.h\"\n"
          "#include \"ncd/ncclvars.h\"\n\n"
          "extern const struct ncd_var_catalog ncd__builtin_vars;\n"
          "extern const struct ncd_known_bugs ncd__builtin_bugs;\n\n",
          o);
    emit_vars(o, &cat);
    emit_bugs(o, &bugs);
    if (fclose(o) != 0 || rename(tmp, argv[1]) != 0)
        die("cannot write ", argv[1]);
    ncd_var_catalog_release(&cat);
    ncd_known_bugs_release(&bugs);
    ncd_rdbuf_release(&vb);
    ncd_rdbuf_release(&bb);
    ncd_ctx_free(ctx);
    return 0;
}
