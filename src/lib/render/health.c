/* SPDX-License-Identifier: MIT */
/* Health-check renderers: Prometheus textfile, Slurm/NHC reason, NPD
 * plugin (include/ncd/health.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncd/health.h"
#include "ncd/nccl.h"
#include "ncd/report.h"

static int is_problem(const struct ncd_health_run *r, enum ncd_severity s)
{
    return s >= NCD_SEV_ERROR || (r->strict && s == NCD_SEV_WARNING);
}

static int failed(const struct ncd_health_run *r)
{
    return (r->error && *r->error) || !r->findings;
}

/* A label value: valid UTF-8, with \ " and newline escaped. */
static void label_value(struct ncd_strbuf *out, const char *v)
{
    char *c = strdup(v ? v : "");
    if (!c) {
        out->oom = 1;
        return;
    }
    ncd_utf8_sanitize(c);
    for (const char *p = c; *p; p++) {
        if (*p == '\\' || *p == '"')
            ncd_sb_putc(out, '\\');
        if (*p == '\n')
            ncd_sb_puts(out, "\\n");
        else
            ncd_sb_putc(out, *p);
    }
    free(c);
}

static void family(struct ncd_strbuf *out, const char *name, const char *help)
{
    ncd_sb_printf(out, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
}

/* Worst severity of the check's findings, -1 when it could not run. */
static int check_state(const struct ncd_findings *l, const char *check,
                       enum ncd_severity *worst)
{
    int up = 1;
    *worst = NCD_SEV_OK;
    for (size_t i = 0; i < l->n; i++) {
        const struct ncd_finding *f = &l->v[i];
        if (!f->check || strcmp(f->check, check) != 0)
            continue;
        if (f->severity > *worst)
            *worst = f->severity;
        if (strcmp(f->id, "tool.check-failed") == 0)
            up = 0;
    }
    return up;
}

void ncd_health_prometheus(const struct ncd_health_run *r,
                           struct ncd_strbuf *out)
{
    int bad = failed(r);
    family(out, "nccl_doctor_up",
           "1 when nccl-doctor check ran its checks, 0 when the run failed.");
    ncd_sb_printf(out, "nccl_doctor_up %d\n", bad ? 0 : 1);
    family(out, "nccl_doctor_info",
           "nccl-doctor version and the NCCL version whose behaviour the "
           "checks predicted.");
    char vb[16] = "";
    if (r->nccl_version > 0)
        ncd_nccl_version_str(r->nccl_version, vb, sizeof vb);
    ncd_sb_puts(out, "nccl_doctor_info{version=\"");
    label_value(out, ncd_version());
    ncd_sb_puts(out, "\",nccl_version=\"");
    label_value(out, vb);
    ncd_sb_puts(out, "\",nccl_version_source=\"");
    label_value(out, r->nccl_version_source);
    ncd_sb_puts(out, "\"} 1\n");
    family(out, "nccl_doctor_last_run_timestamp_seconds",
           "When the last check run ended, Unix time.");
    ncd_sb_printf(out, "nccl_doctor_last_run_timestamp_seconds %.3f\n",
                  r->time_s);
    if (bad)
        return;
    const struct ncd_findings *l = r->findings;
    family(out, "nccl_doctor_worst_severity",
           "Worst finding: 0 ok, 1 info, 2 warning, 3 error.");
    ncd_sb_printf(out, "nccl_doctor_worst_severity %d\n",
                  (int)ncd_findings_worst(l));
    family(out, "nccl_doctor_findings",
           "Findings of the last check run by category and severity.");
    for (int c = 0; c < NCD_CAT__COUNT; c++)
        for (int s = NCD_SEV_INFO; s <= NCD_SEV_ERROR; s++) {
            size_t n = 0;
            for (size_t i = 0; i < l->n; i++)
                n += (int)l->v[i].category == c && (int)l->v[i].severity == s;
            ncd_sb_printf(out,
                          "nccl_doctor_findings{category=\"%s\",severity="
                          "\"%s\"} %zu\n",
                          ncd_category_name((enum ncd_category)c),
                          ncd_severity_name((enum ncd_severity)s), n);
        }
    if (!r->checks || !r->checks[0])
        return;
    family(out, "nccl_doctor_check_up",
           "1 when the check ran, 0 when it could not look at the node.");
    for (const char *const *c = r->checks; *c; c++) {
        enum ncd_severity w;
        ncd_sb_printf(out, "nccl_doctor_check_up{check=\"%s\"} %d\n", *c,
                      check_state(l, *c, &w));
    }
    family(out, "nccl_doctor_check_severity",
           "Worst finding of each check: 0 ok, 1 info, 2 warning, 3 error.");
    for (const char *const *c = r->checks; *c; c++) {
        enum ncd_severity w;
        check_state(l, *c, &w);
        ncd_sb_printf(out, "nccl_doctor_check_severity{check=\"%s\"} %d\n",
                      *c, (int)w);
    }
}

/* Appends s with control characters as blanks, cut to at most `max`
 * bytes on a UTF-8 boundary, "..." marking a cut. */
static void put_fit(struct ncd_strbuf *out, const char *s, size_t max)
{
    char *c = strdup(s ? s : "");
    if (!c) {
        out->oom = 1;
        return;
    }
    ncd_utf8_sanitize(c);
    for (char *p = c; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = ' ';
    size_t n = strlen(c);
    if (n > max) {
        n = max >= 3 ? max - 3 : 0;
        while (n > 0 && ((unsigned char)c[n] & 0xc0) == 0x80)
            n--; /* do not split a multi-byte character */
        while (n > 0 && c[n - 1] == ' ')
            n--;
        ncd_sb_add(out, c, n);
        ncd_sb_add(out, "...", max >= 3 ? 3 : max);
    } else {
        ncd_sb_add(out, c, n);
    }
    free(c);
}

/* "TITLE (+N more) [CATEGORY]" of the worst problem, within max bytes:
 * the title gives way, the rest stays whole. */
static void problem_line(const struct ncd_health_run *r, const char *prefix,
                         size_t max, struct ncd_strbuf *out)
{
    if (failed(r)) {
        static const char what[] = "could not check the node: ";
        ncd_sb_puts(out, prefix);
        ncd_sb_puts(out, what);
        put_fit(out, r->error && *r->error ? r->error : "no findings",
                max - strlen(prefix) - strlen(what));
        return;
    }
    const struct ncd_findings *l = r->findings;
    const struct ncd_finding *worst = NULL;
    size_t n = 0;
    for (size_t i = 0; i < l->n; i++)
        if (is_problem(r, l->v[i].severity)) {
            n++;
            if (!worst || l->v[i].severity > worst->severity)
                worst = &l->v[i];
        }
    if (!worst)
        return;
    char tail[96];
    if (n > 1)
        snprintf(tail, sizeof tail, " (+%zu more) [%s]", n - 1,
                 ncd_category_name(worst->category));
    else
        snprintf(tail, sizeof tail, " [%s]",
                 ncd_category_name(worst->category));
    ncd_sb_puts(out, prefix);
    put_fit(out, worst->title, max - strlen(prefix) - strlen(tail));
    ncd_sb_puts(out, tail);
}

static int has_problem(const struct ncd_health_run *r)
{
    for (size_t i = 0; i < r->findings->n; i++)
        if (is_problem(r, r->findings->v[i].severity))
            return 1;
    return 0;
}

int ncd_health_slurm(const struct ncd_health_run *r, struct ncd_strbuf *out)
{
    if (!failed(r) && !has_problem(r))
        return NCD_HEALTH_SLURM_OK;
    problem_line(r, "nccl-doctor: ", NCD_HEALTH_SLURM_MAX, out);
    ncd_sb_putc(out, '\n');
    return NCD_HEALTH_SLURM_DRAIN;
}

int ncd_health_npd(const struct ncd_health_run *r, struct ncd_strbuf *out)
{
    int st;
    if (failed(r)) {
        st = NCD_HEALTH_NPD_UNKNOWN;
        problem_line(r, "", NCD_HEALTH_NPD_MAX, out);
    } else if (has_problem(r)) {
        st = NCD_HEALTH_NPD_PROBLEM;
        problem_line(r, "", NCD_HEALTH_NPD_MAX, out);
    } else {
        st = NCD_HEALTH_NPD_OK;
        size_t w = ncd_findings_count(r->findings, NCD_SEV_WARNING);
        char msg[NCD_HEALTH_NPD_MAX + 1];
        if (w)
            snprintf(msg, sizeof msg, "NCCL node checks pass (%zu warning%s)",
                     w, w == 1 ? "" : "s");
        else
            snprintf(msg, sizeof msg, "NCCL node checks pass");
        ncd_sb_puts(out, msg);
    }
    ncd_sb_putc(out, '\n');
    return st;
}
