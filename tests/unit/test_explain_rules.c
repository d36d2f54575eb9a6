/* SPDX-License-Identifier: MIT */
/*
 * explain rules: the meta-test (every built-in rule against its own
 * examples, unique ids, valid categories, ERE-compatible patterns), the
 * conditions table against the built-in rules and rules/README.md, and the
 * loader's error reporting (malformed YAML names file and line).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncd/ctx.h"
#include "ncd/error.h"
#include "ncd/explain.h"
#include "explain/cond.h"
#include "explain/internal.h"

static struct ncd_ctx *ctx;

static int setup(void **state)
{
    (void)state;
    return ncd_ctx_new("/", NULL, &ctx);
}

static int teardown(void **state)
{
    (void)state;
    ncd_ctx_free(ctx);
    return 0;
}

static void test_builtin_selftest(void **state)
{
    (void)state;
    struct ncd_rules *r;
    assert_int_equal(ncd_rules_new(&r), 0);
    int n = ncd_rules_load_builtin(ctx, r);
    if (n < 0)
        fail_msg("builtin rules: %s", ncd_ctx_errdetail(ctx));
    assert_true(n >= 60);
    struct ncd_strbuf rep = {0};
    size_t fails = ncd_rules_selftest(r, &rep);
    if (fails)
        fail_msg("%zu rule self-test failures:\n%s", fails, ncd_sb_str(&rep));
    ncd_sb_release(&rep);

    /* ids unique, categories from the fixed list, every pattern rule has
     * examples both ways, every rule has a source and versions */
    int seen_cat[NCD_CAT__COUNT] = {0};
    for (size_t i = 0; i < ncd_rules_count(r); i++) {
        struct ncd_rule_info a;
        assert_int_equal(ncd_rules_info(r, i, &a), 0);
        assert_true(ncd_category_parse(ncd_category_name(a.category)) >= 0);
        seen_cat[a.category] = 1;
        assert_true(strlen(a.source) > 5);
        assert_true(strlen(a.nccl_versions) > 0);
        if (!a.when) {
            assert_true(a.n_patterns > 0 || a.n_files > 0);
            assert_true(a.n_match_examples > 0);
            assert_true(a.n_nomatch_examples > 0);
        }
        for (size_t j = i + 1; j < ncd_rules_count(r); j++) {
            struct ncd_rule_info b;
            ncd_rules_info(r, j, &b);
            if (strcmp(a.id, b.id) == 0)
                fail_msg("duplicate id %s", a.id);
        }
    }
    /* every category a log can show has at least one rule */
    for (int c = 0; c < NCD_CAT__COUNT; c++)
        if (!seen_cat[c])
            fail_msg("no rule for category %s", ncd_category_name((enum ncd_category)c));
    ncd_rules_free(r);
}

static void test_dup_id_rejected(void **state)
{
    (void)state;
    struct ncd_rules *r;
    assert_int_equal(ncd_rules_new(&r), 0);
    assert_true(ncd_rules_load_builtin(ctx, r) > 0);
    size_t n0 = ncd_rules_count(r);
    ncd_ctx_clear_error(ctx);
    /* loading the built-ins again: every id is a duplicate */
    assert_int_equal(ncd_rules_load_builtin(ctx, r), NCD_EINVAL);
    assert_non_null(strstr(ncd_ctx_errdetail(ctx), "duplicate rule id"));
    assert_int_equal(ncd_rules_count(r), n0);
    ncd_rules_free(r);
}

static const char good_rule[] =
    "rules:\n"
    "  - id: user.example\n"
    "    category: net.ib\n"
    "    severity: warning\n"
    "    title: t\n"
    "    patterns: ['frobnicate (?<what>[a-z]+) failed']\n"
    "    cause: c {what}\n"
    "    fix: f\n"
    "    nccl_versions: '>=2.19 <2.20'\n"
    "    source: test\n"
    "    examples:\n"
    "      match: ['x frobnicate mlx failed']\n"
    "      no_match: ['frobnicate 12 failed']\n";

static void test_user_rule_and_versions(void **state)
{
    (void)state;
    struct ncd_rules *r;
    assert_int_equal(ncd_rules_new(&r), 0);
    assert_int_equal(ncd_rules_load_buf(ctx, r, "u.yaml", good_rule, strlen(good_rule)), 1);
    struct ncd_strbuf rep = {0};
    assert_int_equal(ncd_rules_selftest(r, &rep), 0);
    ncd_sb_release(&rep);
    const char *l0 = "node1:1:1 [0] NCCL WARN frobnicate abc failed";
    assert_int_equal(ncd_rules_classify(r, l0, strlen(l0)), 0);

    /* the version range applies to the process's logged version */
    struct ncd_explain *ex;
    struct ncd_findings fl = {0};
    const char *log1 = "node1:1:1 [0] NCCL INFO NCCL version 2.18.3+cuda12.2\n"
                       "node1:1:1 [0] x.cc:1 NCCL WARN frobnicate abc failed\n";
    assert_int_equal(ncd_explain_new(ctx, r, &ex), 0);
    ncd_explain_begin(ex, "a.log");
    ncd_explain_feed(ex, log1, strlen(log1));
    assert_true(ncd_explain_finish(ex, &fl) >= 0);
    assert_null(ncd_findings_find(&fl, "user.example"));
    ncd_findings_release(&fl);
    ncd_explain_free(ex);
    const char *log2 = "node1:1:1 [0] NCCL INFO NCCL version 2.19.3+cuda12.2\n"
                       "node1:1:1 [0] x.cc:1 NCCL WARN frobnicate abc failed\n";
    assert_int_equal(ncd_explain_new(ctx, r, &ex), 0);
    ncd_explain_begin(ex, "b.log");
    ncd_explain_feed(ex, log2, strlen(log2));
    assert_true(ncd_explain_finish(ex, &fl) >= 1);
    struct ncd_finding *f = ncd_findings_find(&fl, "user.example");
    assert_non_null(f);
    assert_string_equal(f->cause, "c abc");
    assert_string_equal(f->evidence[0], "b.log:2: node1:1:1 [0] x.cc:1 NCCL WARN frobnicate abc failed");
    ncd_findings_release(&fl);
    ncd_explain_free(ex);
    ncd_rules_free(r);
}

struct bad {
    const char *yaml;
    int code;
    const char *detail; /* substring of the error detail */
};

static const struct bad bads[] = {
    /* YAML syntax: libyaml's problem mark gives the line */
    {"rules:\n  - id: a\n    title: [unclosed\n", NCD_EPARSE, "bad.yaml:4:"},
    {"rules:\n  - id: a\n\tcategory: x\n", NCD_EPARSE, "bad.yaml:3:"},
    {"rules: 3\n", NCD_EINVAL, "expected a mapping with a 'rules:' list"},
    {"rules:\n  - id: a\n    category: net.nope\n    severity: error\n    title: t\n"
     "    cause: c\n    fix: f\n    source: s\n    nccl_versions: any\n"
     "    patterns: ['abcdef']\n",
     NCD_EINVAL, "bad.yaml:3:15: unknown category 'net.nope'"},
    {"rules:\n  - id: a\n    category: net.ib\n    severity: fatal\n", NCD_EINVAL,
     "has no 'title'"},
    {"rules:\n  - id: a\n    category: net.ib\n    severity: fatal\n    title: t\n"
     "    cause: c\n    fix: f\n    source: s\n    nccl_versions: any\n",
     NCD_EINVAL, "unknown severity 'fatal'"},
    {"rules:\n  - id: a\n    category: net.ib\n    severity: error\n    title: t\n"
     "    cause: c\n    fix: f\n    source: s\n    nccl_versions: any\n"
     "    patterns: ['a(b']\n    examples: {match: [x], no_match: [y]}\n",
     NCD_EINVAL, "does not compile"},
    {"rules:\n  - id: a\n    category: net.ib\n    severity: error\n    title: t\n"
     "    cause: c\n    fix: f\n    source: s\n    nccl_versions: any\n"
     "    patterns: ['[0-9]+ x']\n    examples: {match: [x], no_match: [y]}\n",
     NCD_EINVAL, "literal of 4+ characters"},
    {"rules:\n  - id: a\n    category: net.ib\n    severity: error\n    title: t\n"
     "    cause: c\n    fix: f\n    source: s\n    nccl_versions: any\n"
     "    patterns: ['abcdef']\n",
     NCD_EINVAL, "needs examples.match and examples.no_match"},
    {"rules:\n  - id: a\n    category: net.ib\n    severity: error\n    title: t\n"
     "    cause: c\n    fix: f\n    source: s\n    nccl_versions: 'soon'\n",
     NCD_EINVAL, "bad nccl_versions 'soon'"},
    {"rules:\n  - id: a\n    category: net.ib\n    severity: error\n    title: t\n"
     "    cause: c\n    fix: f\n    source: s\n    nccl_versions: any\n"
     "    when: full-moon\n",
     NCD_EINVAL, "unknown condition 'full-moon'"},
    {"rules:\n  - id: a\n    colour: red\n", NCD_EINVAL, "unknown key 'colour'"},
    {"rules:\n  - id: a\n    category: net.ib\n    severity: error\n    title: t\n"
     "    cause: c\n    fix: f\n    source: s\n    nccl_versions: any\n"
     "    patterns: ['(?i)nccl warn']\n    examples: {match: [x], no_match: [y]}\n",
     NCD_EINVAL, "only (?:...) and (?<name>...) groups"},
    {"", NCD_EINVAL, "expected a mapping"},
    {"rules:\n  - id: a\n    category: net.ib\n    severity: error\n    title: t\n"
     "    cause: c\n    fix: f\n    source: s\n    nccl_versions: any\n"
     "    files: ['/abs/net_ib.cc']\n    examples: {match: [x], no_match: [y]}\n",
     NCD_EINVAL, "is not a path relative to NCCL's src/"},
    {"rules:\n  - id: a\n    category: net.ib\n    severity: error\n    title: t\n"
     "    cause: c\n    fix: f\n    source: s\n    nccl_versions: any\n"
     "    files: ['transport/net_ib*.cc']\n",
     NCD_EINVAL, "needs examples.match and examples.no_match"},
};

static void test_malformed(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof bads / sizeof bads[0]; i++) {
        struct ncd_rules *r;
        assert_int_equal(ncd_rules_new(&r), 0);
        ncd_ctx_clear_error(ctx);
        int rc = ncd_rules_load_buf(ctx, r, "bad.yaml", bads[i].yaml, strlen(bads[i].yaml));
        print_message("case %zu: rc %d: %s\n", i, rc, ncd_ctx_errdetail(ctx));
        assert_int_equal(rc, bads[i].code);
        assert_non_null(strstr(ncd_ctx_errdetail(ctx), bads[i].detail));
        assert_non_null(strstr(ncd_ctx_errdetail(ctx), "bad.yaml"));
        assert_int_equal(ncd_rules_count(r), 0);
        ncd_rules_free(r);
    }
}

/* The prefilter never loses a match: for many lines, the rule chosen with
 * the literal prefilter equals the highest-priority pattern that matches
 * when every pattern is run on the line. */
static long brute(const struct ncd_rules *r, pcre2_match_data *md,
                  const char *text, size_t len)
{
    for (size_t k = 0; k < r->npats; k++) {
        size_t p = r->pat_order[k];
        /* derived rules' patterns never claim a line; rules with `files:`
         * need a WARN's source file (the caller passes none) */
        if (r->v[r->pats[p].rule].when || r->v[r->pats[p].rule].nfiles)
            continue;
        if (pcre2_match(r->pats[p].re, (PCRE2_SPTR)text, len, 0, 0, md, NULL) >= 0)
            return (long)r->pats[p].rule;
    }
    return -1;
}

static void test_prefilter_exact(void **state)
{
    (void)state;
    struct ncd_rules *r;
    assert_int_equal(ncd_rules_new(&r), 0);
    assert_true(ncd_rules_load_builtin(ctx, r) > 0);
    pcre2_match_data *md = pcre2_match_data_create(32, NULL);
    struct ncd__matcher m;
    assert_int_equal(ncd__matcher_init(&m, r), 0);
    static const char *const wrap[][2] = {
        {"", ""}, {"x", "y"}, {"node1:1:2 [0] NCCL WARN ", " (more)"},
        {"[1,3]<stdout>:", ""}, {"abc", "abcdefgh"}, {"\t", "\t\t"}};
    char line[4096];
    size_t tested = 0;
    unsigned seed = 7;
    for (size_t i = 0; i < ncd_rules_count(r); i++)
        for (int want = 0; want < 2; want++)
            for (size_t j = 0;; j++) {
                const char *ex = ncd_rules_example(r, i, want, j);
                if (!ex)
                    break;
                for (size_t w = 0; w < sizeof wrap / sizeof wrap[0]; w++) {
                    int n = snprintf(line, sizeof line, "%s%s%s", wrap[w][0], ex, wrap[w][1]);
                    /* and a copy with one byte changed */
                    for (int mut = 0; mut < 3; mut++) {
                        if (mut && n > 0) {
                            seed = seed * 1103515245u + 12345u;
                            line[(seed >> 8) % (unsigned)n] = (char)(' ' + (seed >> 16) % 90);
                        }
                        size_t pat;
                        long a = ncd__rules_match(r, &m, line, (size_t)n, 0, NULL, 0, &pat);
                        long b = brute(r, md, line, (size_t)n);
                        if (a != b)
                            fail_msg("prefilter %ld vs all patterns %ld on: %s", a, b, line);
                        tested++;
                    }
                }
            }
    print_message("%zu lines checked\n", tested);
    assert_true(tested > 1000);
    ncd__matcher_release(&m);
    pcre2_match_data_free(md);
    ncd_rules_free(r);
}

/* Every condition of explain/cond.h is used by a built-in rule and has a
 * row in rules/README.md's table, and the table names no other. */
static void test_conditions_documented(void **state)
{
    (void)state;
    struct ncd_rules *r;
    assert_int_equal(ncd_rules_new(&r), 0);
    assert_true(ncd_rules_load_builtin(ctx, r) > 0);
    char path[4096];
    snprintf(path, sizeof path, "%s/rules/README.md", NCD_SOURCE_DIR);
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("%s: cannot open", path);
    char readme[65536];
    size_t n = fread(readme, 1, sizeof readme - 1, f);
    fclose(f);
    readme[n] = '\0';
    assert_int_equal(ncd__cond_find("no-such-condition"), -1);
    for (int c = 0; c < NCD__COND__COUNT; c++) {
        const char *name = ncd__cond_name(c);
        assert_int_equal(ncd__cond_find(name), c);
        int used = 0;
        for (size_t i = 0; i < ncd_rules_count(r); i++) {
            struct ncd_rule_info a;
            assert_int_equal(ncd_rules_info(r, i, &a), 0);
            used |= a.when && strcmp(a.when, name) == 0;
        }
        if (!used)
            fail_msg("condition '%s' has no rule in rules/*.yaml", name);
        char cell[80];
        snprintf(cell, sizeof cell, "`%s`", name);
        if (!strstr(readme, cell))
            fail_msg("condition '%s' is not in rules/README.md", name);
    }
    /* the other way: every `name` in the conditions table is known */
    const char *t = strstr(readme, "## Conditions for `when:`");
    assert_non_null(t);
    for (const char *l = strstr(t, "\n| `"); l; l = strstr(l + 1, "\n| `")) {
        const char *end = strstr(l, " |");
        for (const char *q = strchr(l, '`'); q && end && q < end;
             q = strchr(q + 1, '`')) {
            const char *e = strchr(q + 1, '`');
            if (!e || e > end)
                break;
            char name[64];
            snprintf(name, sizeof name, "%.*s", (int)(e - q - 1), q + 1);
            if (ncd__cond_find(name) < 0)
                fail_msg("rules/README.md lists unknown condition '%s'", name);
            q = e;
        }
    }
    ncd_rules_free(r);
}

/* The prefilter scans every 4th byte only while every literal has 7+ bytes
 * (prefilter.c): a shorter one makes every line cost a third more.  Names
 * the patterns whose literal is too short. */
static void test_prefilter_stride(void **state)
{
    (void)state;
    struct ncd_rules *r;
    assert_int_equal(ncd_rules_new(&r), 0);
    assert_true(ncd_rules_load_builtin(ctx, r) > 0);
    if (r->stride != 4) {
        for (size_t i = 0; i < r->nlits; i++)
            if (r->lits[i].len < 7)
                print_message("literal '%s' (%zu bytes) of pattern '%s'\n", r->lits[i].s,
                              r->lits[i].len, r->pats[r->lits[i].pat].src);
        fail_msg("prefilter stride %u, want 4: give those patterns a literal of 7+ bytes",
                 r->stride);
    }
    ncd_rules_free(r);
}

/* `files:` keys rules on the NCCL source file of a WARN: a subsystem rule
 * (files, no patterns) claims the file's WARNs below the priority of the
 * pattern rules that match, and a pattern rule with `files:` claims only
 * WARNs of those files. */
static const char file_rules[] =
    "rules:\n"
    "  - id: t.subsystem\n"
    "    category: net.ib\n"
    "    severity: warning\n"
    "    priority: 20\n"
    "    title: t\n"
    "    files: ['transport/net_ib*.cc', 'misc/ibvwrap.cc']\n"
    "    cause: c\n    fix: f\n    nccl_versions: any\n    source: test\n"
    "    examples:\n"
    "      match: ['node1:1:1 [0] transport/net_ib/connect.cc:12 NCCL WARN anything']\n"
    "      no_match: ['node1:1:1 [0] NCCL INFO transport/net_ib/connect.cc:12 -> 3']\n"
    "  - id: t.low\n"
    "    category: gpu.cuda\n"
    "    severity: warning\n"
    "    priority: 15\n"
    "    title: t\n"
    "    patterns: ['Cuda failure']\n"
    "    cause: c\n    fix: f\n    nccl_versions: any\n    source: test\n"
    "    examples:\n"
    "      match: ['node1:1:1 [0] enqueue.cc:1 NCCL WARN Cuda failure 1']\n"
    "      no_match: ['node1:1:1 [0] transport/net_ib.cc:1 NCCL WARN Cuda failure 1']\n"
    "  - id: t.nvls-cuda\n"
    "    category: gpu.fabric\n"
    "    severity: error\n"
    "    priority: 60\n"
    "    title: t\n"
    "    patterns: ['Cuda failure']\n"
    "    files: ['transport/nvls.cc']\n"
    "    cause: c\n    fix: f\n    nccl_versions: '>=2.17'\n    source: test\n"
    "    examples:\n"
    "      match: ['node1:1:1 [0] transport/nvls.cc:154 NCCL WARN Cuda failure 1 invalid argument']\n"
    "      no_match: ['node1:1:1 [0] transport/p2p.cc:1 NCCL WARN Cuda failure 1']\n";

static void test_file_rules(void **state)
{
    (void)state;
    struct ncd_rules *r;
    assert_int_equal(ncd_rules_new(&r), 0);
    ncd_ctx_clear_error(ctx);
    int n = ncd_rules_load_buf(ctx, r, "f.yaml", file_rules, strlen(file_rules));
    if (n < 0) {
        ncd_rules_free(r);
        fail_msg("%d: %s", n, ncd_ctx_errdetail(ctx));
    }
    assert_int_equal(n, 3);
    struct ncd_strbuf rep = {0};
    if (ncd_rules_selftest(r, &rep))
        fail_msg("%s", ncd_sb_str(&rep));
    ncd_sb_release(&rep);
    static const struct {
        const char *line;
        long rule;
    } cases[] = {
        /* any WARN of the files; a build path before src/ is ignored */
        {"node1:1:1 [0] misc/ibvwrap.cc:300 NCCL WARN new text", 0},
        {"node1:1:1 [0] /build/nccl/src/transport/net_ib.cc:9 NCCL WARN x", 0},
        {"node1:1:1 [0] transport/net_socket.cc:9 NCCL WARN x", -1},
        {"node1:1:1 [0] NCCL WARN no file in this header", -1},
        /* a matching pattern rule of lower priority loses to the file */
        {"node1:1:1 [0] misc/ibvwrap.cc:300 NCCL WARN Cuda failure 2", 0},
        {"node1:1:1 [0] init.cc:300 NCCL WARN Cuda failure 2", 1},
        /* patterns + files: both must hold */
        {"node1:1:1 [0] transport/nvls.cc:154 NCCL WARN Cuda failure 2", 2},
        {"node1:1:1 [0] transport/p2p.cc:154 NCCL WARN Cuda failure 2", 1},
        {"Cuda failure 2 transport/nvls.cc", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        long got = ncd_rules_classify(r, cases[i].line, strlen(cases[i].line));
        if (got != cases[i].rule)
            fail_msg("%s: rule %ld, want %ld", cases[i].line, got, cases[i].rule);
    }
    /* the error trail's category comes from the same table */
    assert_int_equal(ncd__file_rule(r, "transport/net_ib/connect.cc", 27, 0), 0);
    assert_int_equal(ncd__file_rule(r, "init.cc", 7, 0), -1);
    ncd_rules_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builtin_selftest),
        cmocka_unit_test(test_dup_id_rejected),
        cmocka_unit_test(test_user_rule_and_versions),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_prefilter_exact),
        cmocka_unit_test(test_prefilter_stride),
        cmocka_unit_test(test_conditions_documented),
        cmocka_unit_test(test_file_rules),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
