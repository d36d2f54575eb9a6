/* SPDX-License-Identifier: MIT */
/* verify's steps and their text and JSON forms (include/ncd/verify.h). */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncd/error.h"
#include "ncd/verify.h"

const char *ncd_verify_status_name(enum ncd_verify_status s)
{
    switch (s) {
    case NCD_VERIFY_PASS:
        return "PASS";
    case NCD_VERIFY_FAIL:
        return "FAIL";
    default:
        return "SKIP";
    }
}

void ncd_verify_report_release(struct ncd_verify_report *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++) {
        for (size_t k = 0; k < r->steps[i].n_evidence; k++)
            free(r->steps[i].evidence[k]);
        free(r->steps[i].evidence);
    }
    free(r->steps);
    memset(r, 0, sizeof *r);
}

struct ncd_verify_step *ncd_verify_add(struct ncd_verify_report *r,
                                       const char *name,
                                       enum ncd_verify_status st)
{
    if (r->n == r->cap) {
        size_t nc = r->cap ? 2 * r->cap : 8;
        struct ncd_verify_step *v = realloc(r->steps, nc * sizeof *v);
        if (!v)
            return NULL;
        r->steps = v;
        r->cap = nc;
    }
    struct ncd_verify_step *s = &r->steps[r->n++];
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    s->status = st;
    return s;
}

void ncd_verify_reason(struct ncd_verify_step *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->reason, sizeof s->reason, fmt, ap);
    va_end(ap);
    char *nl = strchr(s->reason, '\n');
    if (nl)
        *nl = '\0';
}

static int add_line(struct ncd_verify_step *s, const char *line, size_t n)
{
    char **v = realloc(s->evidence, (s->n_evidence + 1) * sizeof *v);
    if (!v)
        return NCD_ENOMEM;
    s->evidence = v;
    char *l = strndup(line, n);
    if (!l)
        return NCD_ENOMEM;
    s->evidence[s->n_evidence++] = l;
    return 0;
}

int ncd_verify_evidence(struct ncd_verify_step *s, const char *fmt, ...)
{
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return add_line(s, buf, strcspn(buf, "\n"));
}

int ncd_verify_evidence_lines(struct ncd_verify_step *s, const char *text)
{
    while (text && *text) {
        size_t n = strcspn(text, "\n");
        int rc = add_line(s, text, n);
        if (rc)
            return rc;
        text += n + (text[n] == '\n');
    }
    return 0;
}

void ncd_verify_count(const struct ncd_verify_report *r, int *pass,
                      int *fail, int *skip)
{
    *pass = *fail = *skip = 0;
    for (size_t i = 0; i < r->n; i++)
        switch (r->steps[i].status) {
        case NCD_VERIFY_PASS:
            ++*pass;
            break;
        case NCD_VERIFY_FAIL:
            ++*fail;
            break;
        default:
            ++*skip;
        }
}

int ncd_verify_exit_status(const struct ncd_verify_report *r)
{
    int p, f, s;
    ncd_verify_count(r, &p, &f, &s);
    return f ? 2 : 0;
}

void ncd_verify_step_text(const struct ncd_verify_step *s, int verbose,
                          const struct ncd_text_style *st,
                          struct ncd_strbuf *out)
{
    enum ncd_severity sev = s->status == NCD_VERIFY_PASS   ? NCD_SEV_OK
                            : s->status == NCD_VERIFY_FAIL ? NCD_SEV_ERROR
                                                           : NCD_SEV_INFO;
    ncd_sb_printf(out, "%s[%s]%s %-12s %6.1f s  %s\n",
                  ncd_severity_color(sev, st),
                  ncd_verify_status_name(s->status), ncd_color_reset(st),
                  s->name, s->seconds, s->reason);
    if (!verbose && s->status != NCD_VERIFY_FAIL)
        return;
    for (size_t k = 0; k < s->n_evidence; k++)
        ncd_sb_printf(out, "       | %s\n", s->evidence[k]);
}

void ncd_verify_summary_text(const struct ncd_verify_report *r,
                             struct ncd_strbuf *out)
{
    int p, f, s;
    ncd_verify_count(r, &p, &f, &s);
    ncd_sb_printf(out, "verify: %d passed, %d failed, %d skipped in %.1f s: "
                       "%s\n",
                  p, f, s, r->seconds, f ? "FAIL" : "PASS");
}

void ncd_verify_text(const struct ncd_verify_report *r, int verbose,
                     const struct ncd_text_style *st, struct ncd_strbuf *out)
{
    for (size_t i = 0; i < r->n; i++)
        ncd_verify_step_text(&r->steps[i], verbose, st, out);
    ncd_verify_summary_text(r, out);
}

json_t *ncd_verify_json(const struct ncd_verify_report *r, const char *host)
{
    json_t *j = ncd_json_envelope(host), *steps = json_array(),
           *sum = json_object();
    if (!j || !steps || !sum) {
        json_decref(j);
        json_decref(steps);
        json_decref(sum);
        return NULL;
    }
    for (size_t i = 0; i < r->n; i++) {
        const struct ncd_verify_step *s = &r->steps[i];
        json_t *o = json_object(), *ev = json_array();
        if (!o || !ev) {
            json_decref(o);
            json_decref(ev);
            continue;
        }
        for (size_t k = 0; k < s->n_evidence; k++)
            json_array_append_new(ev, ncd_json_string(s->evidence[k]));
        json_object_set_new(o, "name", json_string(s->name));
        json_object_set_new(o, "status",
                            json_string(ncd_verify_status_name(s->status)));
        json_object_set_new(o, "reason", ncd_json_string(s->reason));
        json_object_set_new(o, "seconds", json_real(s->seconds));
        json_object_set_new(o, "evidence", ev);
        json_array_append_new(steps, o);
    }
    int p, f, s;
    ncd_verify_count(r, &p, &f, &s);
    json_object_set_new(sum, "passed", json_integer(p));
    json_object_set_new(sum, "failed", json_integer(f));
    json_object_set_new(sum, "skipped", json_integer(s));
    json_object_set_new(sum, "seconds", json_real(r->seconds));
    json_object_set_new(sum, "status", json_string(f ? "FAIL" : "PASS"));
    json_object_set_new(j, "steps", steps);
    json_object_set_new(j, "summary", sum);
    return j;
}
