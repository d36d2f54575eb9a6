/* SPDX-License-Identifier: MIT */
/*
 * explain's reports: the text a person reads (diagnosis first, then other
 * problems, consequences, context, next steps) and the JSON envelope.  Only
 * the public scan API is used (include/ncd/explain.h); each finding is
 * drawn by the one finding renderer (render.c).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ncd/explain.h"
#include "ncd/report.h"

#define WRAP_COLUMNS 100

static const char *role_heading(enum ncd_rule_role role)
{
    switch (role) {
    case NCD_ROLE_ROOT:
        return "Root cause";
    case NCD_ROLE_WRAPPER:
        return "Most likely cause (these logs hold only the framework's "
               "summary of the NCCL error)";
    case NCD_ROLE_CONSEQUENCE:
        return "Most likely cause (these logs show only the consequences of a "
               "failure elsewhere)";
    default:
        return "Result";
    }
}

/* "nccl-doctor explain: 2 inputs, 120 lines (80 from NCCL), 2 hosts,
 * NCCL 2.19.3" */
static void summary(const struct ncd_explain *ex, int ninputs,
                    struct ncd_strbuf *out)
{
    unsigned long long lines, nl;
    ncd_explain_stats(ex, NULL, &lines, &nl);
    json_t *facts = ncd_explain_facts_json(ex);
    size_t nhosts = facts ? json_array_size(json_object_get(facts, "hosts")) : 0;
    json_t *vers = facts ? json_object_get(facts, "nccl_versions") : NULL;
    ncd_sb_printf(out, "nccl-doctor explain: %d input%s, %llu line%s (%llu from NCCL)",
                  ninputs, ninputs == 1 ? "" : "s", lines,
                  lines == 1 ? "" : "s", nl);
    if (nhosts)
        ncd_sb_printf(out, ", %zu host%s", nhosts, nhosts == 1 ? "" : "s");
    for (size_t i = 0; vers && i < json_array_size(vers); i++)
        ncd_sb_printf(out, "%s%s", i ? ", " : ", NCCL ",
                      json_string_value(json_array_get(vers, i)));
    unsigned long long nlong = ncd_explain_long_lines(ex);
    if (nlong)
        ncd_sb_printf(out, "\n  (%llu line%s longer than %d bytes: only the "
                           "start and the last piece of %s were read)",
                      nlong, nlong == 1 ? "" : "s", NCD_LOG_MAX_LINE,
                      nlong == 1 ? "it" : "each");
    ncd_sb_puts(out, "\n\n");
    json_decref(facts);
}

void ncd_explain_report_text(const struct ncd_explain *ex,
                             const struct ncd_findings *fl,
                             const struct ncd_text_style *st, int ninputs,
                             struct ncd_strbuf *out)
{
    static const char *const head[] = {
        NULL, "\nOther problems found\n",
        "\nConsequences and framework messages (they follow from the above)\n",
        "\nAlso worth knowing\n"};
    int verbose = st && st->verbose;
    summary(ex, ninputs, out);
    int problems = 0;
    for (size_t i = 0; i < fl->n; i++)
        problems += fl->v[i].severity >= NCD_SEV_WARNING;
    /* the diagnosis, then other causes in full, then what follows from
     * them (consequences, framework summaries) briefly, then context */
    int section = -1;
    for (size_t i = 0; i < fl->n; i++) {
        const struct ncd_finding *f = &fl->v[i];
        enum ncd_rule_role role = ncd_explain_role(ex, i);
        int sec = i == 0                                          ? 0
                  : f->severity >= NCD_SEV_WARNING && role == NCD_ROLE_ROOT ? 1
                  : f->severity >= NCD_SEV_WARNING                 ? 2
                                                                   : 3;
        if (sec != section) {
            if (sec == 0)
                ncd_sb_printf(out, "%s\n", f->severity >= NCD_SEV_WARNING
                                               ? role_heading(role)
                                               : "Result");
            else
                ncd_sb_puts(out, head[sec]);
            section = sec;
        }
        int full = sec != 2 || verbose;
        struct ncd_finding_layout lay = {
            .max_evidence = verbose ? 0 : full ? 6 : 3,
            .brief = !full,
            .wrap = WRAP_COLUMNS,
        };
        ncd_render_finding_text_ex(out, f, st, &lay);
    }
    unsigned long long lines, nl;
    ncd_explain_stats(ex, NULL, &lines, &nl);
    /* nothing found is no finding and no category: say it in words */
    if (!fl->n)
        ncd_sb_printf(out, "No known failure\n  None of the rules matches "
                           "%s %llu line%s (%llu from NCCL).\n",
                      lines == 1 ? "this" : "these", lines,
                      lines == 1 ? "" : "s", nl);
    ncd_sb_puts(out, "\nNext steps\n");
    if (!nl && ncd_explain_debug_on(ex))
        ncd_sb_puts(out, "  - NCCL_DEBUG=INFO was set, yet no NCCL line was "
                         "logged: the command never\n    initialised NCCL (it "
                         "failed or hung before, or does not use NCCL); its "
                         "own\n    output above says where it stopped.\n");
    else if (!nl)
        ncd_sb_puts(out, "  - These logs have no NCCL debug lines: re-run with "
                         "NCCL_DEBUG=INFO and\n    collect every rank's output "
                         "(NCCL_DEBUG_FILE=/tmp/nccl.%h.%p.log).\n");
    else if (!problems)
        ncd_sb_puts(out, "  - Hangs (P2P through PCI ACS, a dead peer) and "
                         "slowness often print no error:\n    collect every "
                         "rank's log with NCCL_DEBUG=INFO "
                         "NCCL_DEBUG_SUBSYS=INIT,NET,ENV.\n");
    if (problems)
        ncd_sb_puts(out, "  - Apply the fix above on every node, then re-run the "
                         "job.\n");
    ncd_sb_puts(out, "  - Verify the nodes themselves with `nccl-doctor check` "
                     "(interfaces, IB, /dev/shm,\n    limits, P2P/ACS, driver): it "
                     "sees what logs cannot show.\n");
}

/* {"time": "2026-01-01T10:00:05" | null, "rank": 3 | null} */
static json_t *first_seen(const struct ncd_explain *ex, size_t i)
{
    double ts;
    int rk;
    if (ncd_explain_first_seen(ex, i, &ts, &rk) != 0)
        return NULL;
    char iso[32] = "";
    if (ts >= 0) {
        time_t t = (time_t)ts;
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%S", &tm);
    }
    return json_pack("{s:o, s:o}", "time", iso[0] ? json_string(iso) : json_null(),
                     "rank", rk >= 0 ? json_integer(rk) : json_null());
}

json_t *ncd_explain_report_json(const struct ncd_explain *ex,
                                const struct ncd_findings *fl, int ninputs,
                                const char *host)
{
    json_t *env = ncd_json_envelope(host);
    json_t *arr = json_array();
    json_t *rec = json_object();
    if (!env || !arr || !rec) {
        json_decref(env);
        json_decref(arr);
        json_decref(rec);
        return NULL;
    }
    for (size_t i = 0; i < fl->n; i++) {
        const struct ncd_finding *f = &fl->v[i];
        json_t *jf = ncd_finding_to_json(f);
        enum ncd_rule_role role = ncd_explain_role(ex, i);
        json_object_set_new(jf, "role", json_string(ncd_rule_role_name(role)));
        json_t *fs = first_seen(ex, i);
        if (fs)
            json_object_set_new(jf, "first_seen", fs);
        json_array_append_new(arr, jf);
        /* recommended env: the root causes' suggestions (the first finding
         * always counts) */
        if (f->severity < NCD_SEV_WARNING || (i != 0 && role != NCD_ROLE_ROOT))
            continue;
        for (size_t k = 0; k < f->n_env; k++)
            if (!json_object_get(rec, f->env[k].name))
                json_object_set_new(rec, f->env[k].name,
                                    f->env[k].value ? json_string(f->env[k].value)
                                                    : json_null());
    }
    unsigned long long bytes, lines, nl;
    ncd_explain_stats(ex, &bytes, &lines, &nl);
    json_object_set_new(env, "findings", arr);
    json_object_set_new(env, "recommended_env", rec);
    json_object_set_new(env, "facts", ncd_explain_facts_json(ex));
    json_object_set_new(env, "input",
                        json_pack("{s:i, s:I, s:I, s:I, s:I}", "inputs",
                                  ninputs, "bytes", (json_int_t)bytes, "lines",
                                  (json_int_t)lines, "nccl_lines",
                                  (json_int_t)nl, "long_lines",
                                  (json_int_t)ncd_explain_long_lines(ex)));
    json_object_set_new(env, "next_steps", json_pack("[s]", "nccl-doctor check"));
    return env;
}
