/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "ncd/finding.h"
#include "ncd/error.h"
#include "ncd/strbuf.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const char *const cat_names[] = {
#define NCD__CAT_STR(e, s) s,
    NCD_CATEGORY_MAP(NCD__CAT_STR)
#undef NCD__CAT_STR
};

const char *ncd_category_name(enum ncd_category cat)
{
    if ((int)cat < 0 || cat >= NCD_CAT__COUNT)
        return "?";
    return cat_names[cat];
}

int ncd_category_parse(const char *s)
{
    for (int i = 0; i < NCD_CAT__COUNT; i++)
        if (s && strcmp(s, cat_names[i]) == 0)
            return i;
    return -1;
}

static const char *const sev_names[] = {"ok", "info", "warning", "error"};

const char *ncd_severity_name(enum ncd_severity sev)
{
    if ((int)sev < 0 || sev > NCD_SEV_ERROR)
        return "?";
    return sev_names[sev];
}

int ncd_severity_parse(const char *s)
{
    for (int i = 0; i <= NCD_SEV_ERROR; i++)
        if (s && strcmp(s, sev_names[i]) == 0)
            return i;
    return -1;
}

/* Echoed values longer than this many bytes are cut (NCD_FINDING_CLIP). */
#define CLIP NCD_FINDING_CLIP

/* Copies s into sb with every run of non-blank bytes whose value is over
 * CLIP bytes cut to CLIP bytes + "...(N bytes)": the value is what follows
 * a NAME= (and a quote) in the run's first 64 bytes, else the whole run; a
 * closing quote is kept.  The cut never splits a UTF-8 sequence. */
static void clip_runs(struct ncd_strbuf *sb, const char *s)
{
    while (*s) {
        size_t blank = strspn(s, " \t\n\r");
        ncd_sb_add(sb, s, blank);
        s += blank;
        size_t run = strcspn(s, " \t\n\r");
        if (run <= CLIP) {
            ncd_sb_add(sb, s, run);
            s += run;
            continue;
        }
        size_t v0 = 0, v1 = run;
        const char *eq = memchr(s, '=', run < 64 ? run : 64);
        if (eq) {
            v0 = (size_t)(eq - s) + 1;
            if (s[v0] == '\'' || s[v0] == '"')
                v0++;
        }
        if (s[v1 - 1] == '\'' || s[v1 - 1] == '"')
            v1--;
        if (v1 - v0 <= CLIP) {
            ncd_sb_add(sb, s, run);
            s += run;
            continue;
        }
        size_t keep = CLIP;
        while (keep && ((unsigned char)s[v0 + keep] & 0xC0) == 0x80)
            keep--; /* not inside a UTF-8 sequence */
        ncd_sb_add(sb, s, v0 + keep);
        ncd_sb_printf(sb, "...(%zu bytes)", v1 - v0);
        ncd_sb_add(sb, s + v1, run - v1);
        s += run;
    }
}

static char *vfmt(const char *fmt, va_list ap)
    __attribute__((format(printf, 1, 0)));
static char *vfmt(const char *fmt, va_list ap)
{
    struct ncd_strbuf sb = {0};
    ncd_sb_vprintf(&sb, fmt, ap);
    if (sb.oom) {
        ncd_sb_release(&sb);
        return NULL;
    }
    char *s = ncd_sb_detach(&sb);
    ncd_utf8_sanitize(s); /* findings quote files of unknown content */
    if (!s || strlen(s) <= CLIP)
        return s;
    struct ncd_strbuf out = {0};
    clip_runs(&out, s);
    free(s);
    if (out.oom) {
        ncd_sb_release(&out);
        return NULL;
    }
    return ncd_sb_detach(&out);
}

struct ncd_finding *ncd_findings_add(struct ncd_findings *list,
                                     const char *id, enum ncd_category cat,
                                     enum ncd_severity sev, const char *fmt,
                                     ...)
{
    if (list->n == list->cap) {
        size_t nc = list->cap ? list->cap * 2 : 16;
        struct ncd_finding *nv = realloc(list->v, nc * sizeof *nv);
        if (!nv)
            return NULL;
        list->v = nv;
        list->cap = nc;
    }
    struct ncd_finding *f = &list->v[list->n];
    memset(f, 0, sizeof *f);
    va_list ap;
    va_start(ap, fmt);
    f->title = vfmt(fmt, ap);
    va_end(ap);
    f->id = strdup(id);
    if (!f->title || !f->id) {
        free(f->title);
        free(f->id);
        return NULL;
    }
    f->category = cat;
    f->severity = sev;
    f->order = (int)list->n;
    list->n++;
    return f;
}

int ncd_finding_evidence(struct ncd_finding *f, const char *fmt, ...)
{
    char **nv = realloc(f->evidence, (f->n_evidence + 1) * sizeof *nv);
    if (!nv)
        return NCD_ENOMEM;
    f->evidence = nv;
    va_list ap;
    va_start(ap, fmt);
    char *s = vfmt(fmt, ap);
    va_end(ap);
    if (!s)
        return NCD_ENOMEM;
    f->evidence[f->n_evidence++] = s;
    return 0;
}

static int set_text(char **dst, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
static int set_text(char **dst, const char *fmt, va_list ap)
{
    char *s = vfmt(fmt, ap);
    if (!s)
        return NCD_ENOMEM;
    free(*dst);
    *dst = s;
    return 0;
}

int ncd_finding_cause(struct ncd_finding *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = set_text(&f->cause, fmt, ap);
    va_end(ap);
    return rc;
}

int ncd_finding_fix(struct ncd_finding *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = set_text(&f->fix, fmt, ap);
    va_end(ap);
    return rc;
}

int ncd_finding_env(struct ncd_finding *f, const char *name,
                    const char *value)
{
    char *v = NULL;
    if (value && !(v = strdup(value)))
        return NCD_ENOMEM;
    for (size_t i = 0; i < f->n_env; i++) {
        if (strcmp(f->env[i].name, name) == 0) {
            free(f->env[i].value);
            f->env[i].value = v;
            return 0;
        }
    }
    struct ncd_env_kv *nv = realloc(f->env, (f->n_env + 1) * sizeof *nv);
    char *n = strdup(name);
    if (!nv || !n) {
        if (nv)
            f->env = nv;
        free(n);
        free(v);
        return NCD_ENOMEM;
    }
    f->env = nv;
    f->env[f->n_env].name = n;
    f->env[f->n_env].value = v;
    f->n_env++;
    return 0;
}

enum ncd_severity ncd_findings_worst(const struct ncd_findings *list)
{
    enum ncd_severity w = NCD_SEV_OK;
    for (size_t i = 0; i < list->n; i++)
        if (list->v[i].severity > w)
            w = list->v[i].severity;
    return w;
}

size_t ncd_findings_count(const struct ncd_findings *list,
                          enum ncd_severity sev)
{
    size_t c = 0;
    for (size_t i = 0; i < list->n; i++)
        c += list->v[i].severity == sev;
    return c;
}

struct ncd_finding *ncd_findings_find(const struct ncd_findings *list,
                                      const char *id)
{
    for (size_t i = 0; i < list->n; i++)
        if (strcmp(list->v[i].id, id) == 0)
            return &list->v[i];
    return NULL;
}

static int cmp_finding(const void *a, const void *b)
{
    const struct ncd_finding *x = a, *y = b;
    if (x->severity != y->severity)
        return x->severity > y->severity ? -1 : 1;
    return x->order - y->order;
}

void ncd_findings_sort(struct ncd_findings *list)
{
    if (list->n > 1)
        qsort(list->v, list->n, sizeof list->v[0], cmp_finding);
}

void ncd_findings_release(struct ncd_findings *list)
{
    for (size_t i = 0; i < list->n; i++) {
        struct ncd_finding *f = &list->v[i];
        free(f->id);
        free(f->title);
        for (size_t j = 0; j < f->n_evidence; j++)
            free(f->evidence[j]);
        free(f->evidence);
        free(f->cause);
        free(f->fix);
        for (size_t j = 0; j < f->n_env; j++) {
            free(f->env[j].name);
            free(f->env[j].value);
        }
        free(f->env);
    }
    free(list->v);
    list->v = NULL;
    list->n = list->cap = 0;
}
