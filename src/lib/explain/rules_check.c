/* SPDX-License-Identifier: MIT */
/*
 * The rule set's self-test (every rule against its own examples, as the
 * meta-test runs it) and the patterns as POSIX ERE for grep -E.
 */
#define _GNU_SOURCE
#include "explain/internal.h"

#include <regex.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- ERE */

/* PCRE2 -> POSIX ERE: "(?<name>" and "(?:" become "(". */
static void to_ere(const char *p, struct ncd_strbuf *out)
{
    for (size_t i = 0; p[i]; i++) {
        if (p[i] == '\\' && p[i + 1]) {
            ncd_sb_putc(out, p[i]);
            ncd_sb_putc(out, p[++i]);
            continue;
        }
        if (p[i] == '(' && p[i + 1] == '?') {
            if (p[i + 2] == ':') {
                ncd_sb_putc(out, '(');
                i += 2;
                continue;
            }
            if (p[i + 2] == '<' && p[i + 3] != '=' && p[i + 3] != '!') {
                const char *gt = strchr(p + i, '>');
                if (gt) {
                    ncd_sb_putc(out, '(');
                    i = (size_t)(gt - p);
                    continue;
                }
            }
        }
        ncd_sb_putc(out, p[i]);
    }
}

void ncd_rules_dump_ere(const struct ncd_rules *rules, struct ncd_strbuf *out)
{
    for (size_t i = 0; i < rules->npats; i++) {
        if (rules->v[rules->pats[i].rule].when)
            continue;
        to_ere(rules->pats[i].src, out);
        ncd_sb_putc(out, '\n');
    }
}

size_t ncd_rules_selftest(const struct ncd_rules *rules,
                          struct ncd_strbuf *report)
{
    size_t fails = 0;
    pcre2_match_data *md = pcre2_match_data_create(
        rules->max_match_captures + 1, NULL);
    for (size_t i = 0; i < rules->n; i++) {
        const struct ncd__rule *r = &rules->v[i];
        for (size_t a = 0; a < r->nabsorbs; a++)
            if (ncd__rules_find(rules, r->absorbs[a]) < 0) {
                ncd_sb_printf(report, "%s:%d: %s: absorbs unknown rule '%s'\n",
                              r->file, r->line, r->id, r->absorbs[a]);
                fails++;
            }
        for (size_t p = 0; p < r->npats; p++) {
            if (!ncd__pattern_code(rules, r->pat0 + p)) {
                int err;
                PCRE2_SIZE off;
                PCRE2_UCHAR buf[256] = "";
                pcre2_code *re = ncd__pattern_compile(
                    rules->pats[r->pat0 + p].src, &err, &off);
                pcre2_code_free(re);
                pcre2_get_error_message(err, buf, sizeof buf);
                ncd_sb_printf(report,
                              "%s:%d: %s: pattern '%s' does not compile: %s at "
                              "offset %zu\n",
                              r->file, r->line, r->id,
                              rules->pats[r->pat0 + p].src, (char *)buf,
                              (size_t)off);
                fails++;
            }
            struct ncd_strbuf e = {0};
            to_ere(rules->pats[r->pat0 + p].src, &e);
            regex_t re;
            int rc = regcomp(&re, ncd_sb_str(&e), REG_EXTENDED | REG_NOSUB);
            if (rc != 0) {
                ncd_sb_printf(report,
                              "%s:%d: %s: pattern is not valid POSIX ERE: %s\n",
                              r->file, r->line, r->id, ncd_sb_str(&e));
                fails++;
            } else {
                regfree(&re);
            }
            ncd_sb_release(&e);
        }
        for (int want = 1; want >= 0; want--) {
            size_t n = want ? r->n_ex_match : r->n_ex_nomatch;
            char **ex = want ? r->ex_match : r->ex_nomatch;
            for (size_t k = 0; k < n; k++) {
                int got;
                long who = -1;
                /* PCRE2's JIT reads up to 16 bytes past the subject (SIMD):
                 * match a zero-padded copy so that memcheck sees defined
                 * bytes of this allocation (CI runs --check-rules under
                 * valgrind) */
                size_t xl = strlen(ex[k]);
                char *x = calloc(1, xl + 64);
                if (!x) {
                    ncd_sb_printf(report, "out of memory\n");
                    fails++;
                    continue;
                }
                memcpy(x, ex[k], xl);
                if (r->when) {
                    /* derived rules: patterns apply to a fact string */
                    got = 0;
                    for (size_t p = 0; p < r->npats && md; p++)
                        got |= pcre2_match(ncd__pattern_code(rules, r->pat0 + p),
                                           (PCRE2_SPTR)x, xl, 0, 0, md,
                                           NULL) >= 0;
                } else {
                    who = ncd_rules_classify(rules, x, xl);
                    got = who == (long)i;
                }
                free(x);
                if (got != want) {
                    ncd_sb_printf(report, "%s:%d: %s: example %s: %s",
                                  r->file, r->line, r->id,
                                  want ? "should match but does not"
                                       : "must not match but does",
                                  ex[k]);
                    if (who >= 0 && want)
                        ncd_sb_printf(report, " (claimed by %s)",
                                      rules->v[who].id);
                    ncd_sb_putc(report, '\n');
                    fails++;
                }
            }
        }
    }
    pcre2_match_data_free(md);
    return fails;
}
