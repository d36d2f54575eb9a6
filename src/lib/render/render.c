/* SPDX-License-Identifier: MIT */
#include "ncd/report.h"
#include "ncd/sysops.h"
#include "ncd_version.h"

#include <stdlib.h>
#include <string.h>

const char *ncd_version(void)
{
    return NCD_VERSION_STRING;
}

json_t *ncd_json_string(const char *s)
{
    if (!s)
        return json_null();
    int clean = 1;
    for (const unsigned char *p = (const unsigned char *)s; *p && clean; p++)
        clean = *p >= 0x20 && *p != 0x7f;
    json_t *j = clean ? json_string(s) : NULL;
    if (j)
        return j;
    char *c = strdup(s);
    if (!c)
        return NULL;
    ncd_utf8_sanitize(c);
    for (char *p = c; *p; p++)
        if (*p == '\n' || *p == '\t')
            *p = ' ';
    j = json_string(c);
    free(c);
    return j;
}

json_t *ncd_json_envelope(const char *host)
{
    return json_pack("{s:s, s:i, s:s, s:o}", "tool", "nccl-doctor",
                     "schema_version", NCD_JSON_SCHEMA_VERSION, "version",
                     ncd_version(), "host", ncd_json_string(host));
}

static json_t *str_or_null(const char *s)
{
    return ncd_json_string(s);
}

/* A finding's text as shown: credentials of URLs and host specs quoted
 * from the environment or a log ("NCCL_COMM_ID=user:pw@host:port",
 * "tcp://u:pw@h") masked as gather masks them (ncd_env_redact()).  Points
 * into `tmp` (reset here) or at `s` itself when nothing changes. */
static int name_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
           (c >= '0' && c <= '9') || c == '_';
}

/* Whether `s` holds "NAME=value" (or NAME='value') with a secret NAME
 * (ncd_env_is_secret()); sets the value's span. */
static int secret_assignment(const char *s, const char *start,
                             const char **val, const char **end)
{
    for (const char *eq = strchr(start, '='); eq; eq = strchr(eq + 1, '=')) {
        const char *n = eq;
        while (n > s && name_char(n[-1]))
            n--;
        char name[128];
        if (n == eq || (size_t)(eq - n) >= sizeof name)
            continue;
        memcpy(name, n, (size_t)(eq - n));
        name[eq - n] = '\0';
        if (!ncd_env_is_secret(name))
            continue;
        const char *v = eq + 1, *e = v;
        char q = *v == '\'' || *v == '"' ? *v : 0;
        if (q)
            e = strchr(v + 1, q) ? strchr(v + 1, q) + 1 : v + strlen(v);
        else
            while (*e && *e != ' ' && *e != ',' && *e != ')')
                e++;
        *val = v;
        *end = e;
        return 1;
    }
    return 0;
}

static const char *shown(const char *s, struct ncd_strbuf *tmp)
{
    const char *v, *e;
    if (!s || (!strchr(s, '@') && !secret_assignment(s, s, &v, &e)))
        return s;
    /* values of secret names first, then credentials in what is left */
    struct ncd_strbuf a = {0};
    for (const char *p = s; *p;) {
        if (!secret_assignment(s, p, &v, &e)) {
            ncd_sb_puts(&a, p);
            break;
        }
        ncd_sb_add(&a, p, (size_t)(v - p));
        ncd_sb_puts(&a, "<redacted>");
        p = e;
    }
    tmp->len = 0;
    if (tmp->buf)
        tmp->buf[0] = '\0';
    if (!a.oom)
        ncd_env_redact(NULL, a.buf ? a.buf : "", tmp);
    int oom = a.oom || tmp->oom;
    ncd_sb_release(&a);
    return oom ? "<redacted>" : tmp->buf ? tmp->buf : "";
}

static json_t *shown_json(const char *s)
{
    struct ncd_strbuf tmp = {0};
    json_t *j = ncd_json_string(shown(s, &tmp));
    ncd_sb_release(&tmp);
    return j;
}

json_t *ncd_finding_to_json(const struct ncd_finding *f)
{
    json_t *ev = json_array();
    json_t *env = json_object();
    if (!ev || !env)
        goto fail;
    for (size_t i = 0; i < f->n_evidence; i++)
        json_array_append_new(ev, shown_json(f->evidence[i]));
    for (size_t i = 0; i < f->n_env; i++)
        json_object_set_new(env, f->env[i].name, str_or_null(f->env[i].value));
    return json_pack("{s:o, s:s, s:s, s:o, s:o, s:o, s:o, s:o}", "id",
                     ncd_json_string(f->id), "category",
                     ncd_category_name(f->category), "severity",
                     ncd_severity_name(f->severity), "title",
                     shown_json(f->title),
                     "evidence", ev, "cause", shown_json(f->cause), "fix",
                     shown_json(f->fix), "env", env);
fail:
    json_decref(ev);
    json_decref(env);
    return NULL;
}

json_t *ncd_findings_to_json(const struct ncd_findings *list)
{
    json_t *a = json_array();
    if (!a)
        return NULL;
    for (size_t i = 0; i < list->n; i++) {
        json_t *o = ncd_finding_to_json(&list->v[i]);
        if (!o || json_array_append_new(a, o) < 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

json_t *ncd_findings_env_json(const struct ncd_findings *list,
                              enum ncd_severity min_sev)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    for (size_t i = 0; i < list->n; i++) {
        const struct ncd_finding *f = &list->v[i];
        if (f->severity < min_sev)
            continue;
        for (size_t j = 0; j < f->n_env; j++)
            if (!json_object_get(o, f->env[j].name))
                json_object_set_new(o, f->env[j].name,
                                    str_or_null(f->env[j].value));
    }
    return o;
}

const char *ncd_severity_mark(enum ncd_severity sev,
                              const struct ncd_text_style *st)
{
    static const char *const uni[] = {"✓", "ℹ", "⚠", "✗"};
    static const char *const asc[] = {"[ok]  ", "[info]", "[warn]", "[FAIL]"};
    if ((int)sev < 0 || sev > NCD_SEV_ERROR)
        return "?";
    return st && st->unicode ? uni[sev] : asc[sev];
}

const char *ncd_severity_color(enum ncd_severity sev,
                               const struct ncd_text_style *st)
{
    static const char *const col[] = {"\033[32m", "\033[36m", "\033[33m",
                                      "\033[1;31m"};
    if (!st || !st->color || (int)sev < 0 || sev > NCD_SEV_ERROR)
        return "";
    return col[sev];
}

const char *ncd_color_reset(const struct ncd_text_style *st)
{
    return st && st->color ? "\033[0m" : "";
}

void ncd_sb_shell_quote(struct ncd_strbuf *out, const char *value)
{
    /* Plain words need no quotes; keeps `export NCCL_IB_DISABLE=1` tidy. */
    /* A leading '=' (NCCL's exact-match syntax) reads badly unquoted. */
    int plain = *value != '\0' && *value != '=';
    for (const char *p = value; *p && plain; p++)
        plain = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                       "0123456789_-.,:/=@%+",
                       *p) != NULL;
    if (plain) {
        ncd_sb_puts(out, value);
        return;
    }
    ncd_sb_putc(out, '\'');
    for (const char *p = value; *p; p++) {
        if (*p == '\'')
            ncd_sb_puts(out, "'\\''");
        else
            ncd_sb_putc(out, *p);
    }
    ncd_sb_putc(out, '\'');
}

/*
 * The labels of a finding's parts, one width so the texts line up:
 *       cause: ...
 *       fix:   ...
 *       env:   export NCCL_X=1
 */
#define LABEL_COL 13 /* "      cause: " */

/* Appends `text` after a label ending at LABEL_COL.  wrap == 0 keeps the
 * author's line breaks; wrap > 0 re-flows words at that many columns. */
static void put_text(struct ncd_strbuf *out, const char *label,
                     const char *text, int wrap)
{
    ncd_sb_printf(out, "      %-6s ", label);
    if (wrap <= 0) {
        for (const char *p = text; *p; p++) {
            ncd_sb_putc(out, *p);
            if (*p == '\n' && p[1])
                ncd_sb_printf(out, "%*s", LABEL_COL, "");
        }
        ncd_sb_putc(out, '\n');
        return;
    }
    int col = LABEL_COL;
    for (const char *p = text; *p;) {
        while (*p == ' ')
            p++;
        const char *w = p;
        while (*p && *p != ' ' && *p != '\n')
            p++;
        int wl = (int)(p - w);
        if (!wl) {
            if (*p == '\n') {
                ncd_sb_printf(out, "\n%*s", LABEL_COL, "");
                col = LABEL_COL;
                p++;
            }
            continue;
        }
        if (col > LABEL_COL && col + 1 + wl > wrap) {
            ncd_sb_printf(out, "\n%*s", LABEL_COL, "");
            col = LABEL_COL;
        } else if (col > LABEL_COL) {
            ncd_sb_putc(out, ' ');
            col++;
        }
        ncd_sb_add(out, w, (size_t)wl);
        col += wl;
    }
    ncd_sb_putc(out, '\n');
}

void ncd_render_finding_text_ex(struct ncd_strbuf *out,
                                const struct ncd_finding *f,
                                const struct ncd_text_style *st,
                                const struct ncd_finding_layout *lay)
{
    struct ncd_strbuf tmp = {0};
    ncd_sb_printf(out, "  %s%s%s %s  [%s]\n",
                  ncd_severity_color(f->severity, st),
                  ncd_severity_mark(f->severity, st), ncd_color_reset(st),
                  shown(f->title, &tmp), ncd_category_name(f->category));
    size_t max_ev = lay->max_evidence ? lay->max_evidence : f->n_evidence;
    for (size_t i = 0; i < f->n_evidence && i < max_ev; i++)
        ncd_sb_printf(out, "      | %s\n", shown(f->evidence[i], &tmp));
    if (f->n_evidence > max_ev)
        ncd_sb_printf(out, "      | ... %zu more (use --verbose)\n",
                      f->n_evidence - max_ev);
    if (!lay->brief && f->cause)
        put_text(out, "cause:", shown(f->cause, &tmp), lay->wrap);
    if (!lay->brief && f->fix)
        put_text(out, "fix:", shown(f->fix, &tmp), lay->wrap);
    ncd_sb_release(&tmp);
    if (lay->brief)
        return;
    for (size_t i = 0; i < f->n_env; i++) {
        if (f->env[i].value) {
            ncd_sb_printf(out, "      %-6s export %s=", "env:", f->env[i].name);
            ncd_sb_shell_quote(out, f->env[i].value);
            ncd_sb_putc(out, '\n');
        } else {
            ncd_sb_printf(out, "      %-6s unset %s\n", "env:", f->env[i].name);
        }
    }
}

void ncd_render_finding_text(struct ncd_strbuf *out,
                             const struct ncd_finding *f,
                             const struct ncd_text_style *st)
{
    int verbose = st && st->verbose;
    struct ncd_finding_layout lay = {
        .max_evidence = verbose ? 0 : 8,
        .brief = f->severity == NCD_SEV_OK && !verbose,
        .wrap = 0,
    };
    ncd_render_finding_text_ex(out, f, st, &lay);
}

void ncd_render_findings_text(struct ncd_strbuf *out,
                              const struct ncd_findings *list,
                              const struct ncd_text_style *st)
{
    size_t shown = 0;
    for (int sev = NCD_SEV_ERROR; sev >= NCD_SEV_OK; sev--) {
        if (sev == NCD_SEV_OK && !(st && st->verbose))
            break;
        for (size_t i = 0; i < list->n; i++) {
            if ((int)list->v[i].severity != sev)
                continue;
            ncd_render_finding_text(out, &list->v[i], st);
            shown++;
        }
    }
    if (!shown)
        ncd_sb_puts(out, "  (no findings)\n");
    size_t ne = ncd_findings_count(list, NCD_SEV_ERROR);
    size_t nw = ncd_findings_count(list, NCD_SEV_WARNING);
    size_t ni = ncd_findings_count(list, NCD_SEV_INFO);
    size_t nok = ncd_findings_count(list, NCD_SEV_OK);
    ncd_sb_printf(out, "\n%s%zu error%s, %zu warning%s%s, %zu info, %zu ok\n",
                  ne ? ncd_severity_color(NCD_SEV_ERROR, st)
                     : (nw ? ncd_severity_color(NCD_SEV_WARNING, st)
                           : ncd_severity_color(NCD_SEV_OK, st)),
                  ne, ne == 1 ? "" : "s", nw, nw == 1 ? "" : "s",
                  ncd_color_reset(st), ni, nok);
}
