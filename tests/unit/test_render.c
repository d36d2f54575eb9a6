/* SPDX-License-Identifier: MIT */
/*
 * The one finding renderer (report.h): the same labels for check's layout
 * (author line breaks, 8 evidence lines) and explain's (re-flowed at 100
 * columns, brief consequences), exact text per case.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "ncd/report.h"

static struct ncd_finding *sample(struct ncd_findings *fl, size_t nev,
                                  const char *cause)
{
    struct ncd_finding *f = ncd_findings_add(fl, "x.y", NCD_CAT_SYS_SHM,
                                             NCD_SEV_ERROR, "Title %d", 1);
    assert_non_null(f);
    for (size_t i = 0; i < nev; i++)
        ncd_finding_evidence(f, "ev %zu", i);
    ncd_finding_cause(f, "%s", cause);
    ncd_finding_fix(f, "Do it.");
    ncd_finding_env(f, "NCCL_A", "a b");
    ncd_finding_env(f, "NCCL_B", NULL);
    return f;
}

static void test_layouts(void **state)
{
    (void)state;
    static const char long_cause[] =
        "one two three four five six seven eight nine ten eleven twelve "
        "thirteen fourteen fifteen sixteen seventeen eighteen nineteen";
    static const struct {
        size_t nev;
        const char *cause;
        struct ncd_finding_layout lay;
        const char *want;
    } cases[] = {
        /* check's layout: the author's line breaks stay */
        {1, "line one\nline two", {8, 0, 0},
         "  [FAIL] Title 1  [sys.shm]\n"
         "      | ev 0\n"
         "      cause: line one\n"
         "             line two\n"
         "      fix:   Do it.\n"
         "      env:   export NCCL_A='a b'\n"
         "      env:   unset NCCL_B\n"},
        /* explain's: re-flowed under the label (no line over 60
         * columns here), same labels */
        {2, long_cause, {6, 0, 60},
         "  [FAIL] Title 1  [sys.shm]\n"
         "      | ev 0\n"
         "      | ev 1\n"
         "      cause: one two three four five six seven eight nine\n"
         "             ten eleven twelve thirteen fourteen fifteen\n"
         "             sixteen seventeen eighteen nineteen\n"
         "      fix:   Do it.\n"
         "      env:   export NCCL_A='a b'\n"
         "      env:   unset NCCL_B\n"},
        /* brief, evidence capped */
        {5, "c", {3, 1, 100},
         "  [FAIL] Title 1  [sys.shm]\n"
         "      | ev 0\n"
         "      | ev 1\n"
         "      | ev 2\n"
         "      | ... 2 more (use --verbose)\n"},
        /* 0 = every evidence line */
        {3, "c", {0, 1, 0},
         "  [FAIL] Title 1  [sys.shm]\n"
         "      | ev 0\n"
         "      | ev 1\n"
         "      | ev 2\n"},
    };
    struct ncd_text_style st = {0};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct ncd_findings fl = {0};
        struct ncd_finding *f = sample(&fl, cases[i].nev, cases[i].cause);
        struct ncd_strbuf sb = {0};
        ncd_render_finding_text_ex(&sb, f, &st, &cases[i].lay);
        if (strcmp(ncd_sb_str(&sb), cases[i].want) != 0)
            fail_msg("case %zu:\n--- got\n%s--- want\n%s", i, ncd_sb_str(&sb),
                     cases[i].want);
        ncd_sb_release(&sb);
        ncd_findings_release(&fl);
    }
}

/* ncd_render_finding_text is check's layout: 8 evidence lines, no details
 * for ok findings unless verbose. */
static void test_check_layout(void **state)
{
    (void)state;
    struct ncd_findings fl = {0};
    struct ncd_finding *f = sample(&fl, 10, "c");
    struct ncd_strbuf sb = {0};
    struct ncd_text_style st = {0};
    ncd_render_finding_text(&sb, f, &st);
    assert_non_null(strstr(ncd_sb_str(&sb), "| ev 7\n      | ... 2 more"));
    assert_non_null(strstr(ncd_sb_str(&sb), "      cause: c\n"));
    ncd_sb_reset(&sb);
    f->severity = NCD_SEV_OK;
    ncd_render_finding_text(&sb, f, &st);
    assert_null(strstr(ncd_sb_str(&sb), "cause:"));
    ncd_sb_reset(&sb);
    st.verbose = 1;
    ncd_render_finding_text(&sb, f, &st);
    assert_non_null(strstr(ncd_sb_str(&sb), "| ev 9\n      cause: c\n"));
    ncd_sb_release(&sb);
    ncd_findings_release(&fl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layouts),
        cmocka_unit_test(test_check_layout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
