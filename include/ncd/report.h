/* SPDX-License-Identifier: MIT */
/**
 * @file report.h
 * @brief Renderers: findings to human text and to the JSON envelope.
 *
 * JSON envelope shared by every command (`check --json`, `explain --json`,
 * `probe --json`...):
 *   {"tool":"nccl-doctor","schema_version":1,"version":"X.Y.Z","host":H,
 *    "findings":[{"id","category","severity","title","evidence":[...],
 *                 "cause","fix","env":{VAR:value|null}}],
 *    "recommended_env":{VAR:value}}
 * Commands add their own keys ("facts", "interfaces"...) to the object.
 */
#ifndef NCD_REPORT_H
#define NCD_REPORT_H

#include <jansson.h>

#include "ncd/finding.h"
#include "ncd/strbuf.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The library's version string ("0.1.0"); static. */
const char *ncd_version(void);

/** Schema version of the JSON envelope; bumped on incompatible change. */
#define NCD_JSON_SCHEMA_VERSION 1

/**
 * New envelope object with "tool", "schema_version", "version" and "host"
 * (host may be NULL: then JSON null).  Caller owns the reference
 * (json_decref).  NULL on allocation failure.
 */
json_t *ncd_json_envelope(const char *host);

/**
 * A JSON string for text of unknown origin (interface names, file
 * contents, environment values): invalid UTF-8 and control characters are
 * replaced by '?' instead of making jansson fail.  NULL gives JSON null.
 * New reference; NULL only when out of memory.
 */
json_t *ncd_json_string(const char *s);

/** One finding as a JSON object; new reference, NULL on failure.  In the
 *  title, evidence, cause and fix (here and in the text renderers below)
 *  the value of a secret-named "NAME=value" (ncd_env_is_secret()) and the
 *  credentials of URLs and host specs (ncd_env_redact(), sysops.h) are
 *  shown as "<redacted>": findings quote the environment and logs. */
json_t *ncd_finding_to_json(const struct ncd_finding *f);

/** The list as a JSON array; new reference, NULL on failure. */
json_t *ncd_findings_to_json(const struct ncd_findings *list);

/**
 * Merges the env suggestions of every finding at or above `min_sev` into
 * one object (first finding wins for a variable; findings are taken in list
 * order, so sort first).  New reference.
 */
json_t *ncd_findings_env_json(const struct ncd_findings *list,
                              enum ncd_severity min_sev);

/** How text is rendered. */
struct ncd_text_style {
    int color;   /**< 1: ANSI colours (the CLI decides: tty, NO_COLOR) */
    int unicode; /**< 1: ✓ ⚠ ✗ ℹ marks; 0: [ok] [warn] [FAIL] [info] */
    int verbose; /**< 1: also show ok findings and full evidence */
};

/** The mark for a severity in this style ("✗", "[FAIL]"...); static. */
const char *ncd_severity_mark(enum ncd_severity sev,
                              const struct ncd_text_style *st);

/** ANSI colour start for a severity ("" without colour); static. */
const char *ncd_severity_color(enum ncd_severity sev,
                               const struct ncd_text_style *st);

/** ANSI reset ("" without colour); static. */
const char *ncd_color_reset(const struct ncd_text_style *st);

/** How much of one finding ncd_render_finding_text_ex() shows. */
struct ncd_finding_layout {
    size_t max_evidence; /**< evidence lines shown before "... N more (use
                              --verbose)"; 0 shows all */
    int brief;           /**< 1: mark, title and evidence only */
    int wrap;            /**< 0: cause and fix keep their own line breaks;
                              N > 0: their words re-flowed at N columns */
};

/**
 * Appends one finding as text, the same labels for every command:
 *
 *     ✗ TITLE  [category]
 *         | evidence line
 *         cause: text
 *         fix:   text
 *         env:   export NCCL_X=value     (or: unset NCCL_X)
 *
 * (two blanks of indent for the title, six for the rest; continuation
 * lines of cause and fix line up under their first word).
 */
void ncd_render_finding_text_ex(struct ncd_strbuf *out,
                                const struct ncd_finding *f,
                                const struct ncd_text_style *st,
                                const struct ncd_finding_layout *lay);

/**
 * ncd_render_finding_text_ex() with check's layout: at most 8 evidence
 * lines (all with st->verbose), cause/fix/env except for ok findings
 * (shown too with st->verbose), author line breaks kept.
 */
void ncd_render_finding_text(struct ncd_strbuf *out,
                             const struct ncd_finding *f,
                             const struct ncd_text_style *st);

/**
 * Appends a findings list as text, worst first, with a summary line
 * ("2 errors, 1 warning").  Ok findings appear only when st->verbose.
 */
void ncd_render_findings_text(struct ncd_strbuf *out,
                              const struct ncd_findings *list,
                              const struct ncd_text_style *st);

/**
 * Quotes a value for a POSIX shell ('...' with embedded quotes escaped) and
 * appends it.
 */
void ncd_sb_shell_quote(struct ncd_strbuf *out, const char *value);

#ifdef __cplusplus
}
#endif
#endif
