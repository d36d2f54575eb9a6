/* SPDX-License-Identifier: MIT */
/* The drift check between getopt tables and docs/cmdline
 * (cli_doc_verify) and the "did you mean" distance, on the generated
 * documentation of this build. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cli_doc.h"
#include "cmd.h"

static char last_err[4096];

/* cli_opts.c reports through cli_err (src/cli/common.c in the program). */
void cli_err(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t l = strlen(last_err);
    vsnprintf(last_err + l, sizeof last_err - l, fmt, ap);
    va_end(ap);
}

#define TOPO_OWN                                                              \
    {"topology", required_argument, 0, 0x2000},                               \
        {"no-nvml", no_argument, 0, 0x2001},                                  \
        {"format", required_argument, 0, 0x2002},                             \
        {"output", required_argument, 0, 0x2003}

static int verify(const char *cmd, const struct option *lo, const char *so)
{
    last_err[0] = 0;
    return cli_doc_verify(cmd, lo, so);
}

static void test_exact_table_passes(void **state)
{
    (void)state;
    static const struct option lo[] = {CLI_COMMON_OPTS, TOPO_OWN, {0, 0, 0, 0}};
    assert_int_equal(verify("topo", lo, CLI_COMMON_SHORT), 0);
    assert_string_equal(last_err, "");
}

static void test_missing_option_fails(void **state)
{
    (void)state;
    static const struct option lo[] = {
        CLI_COMMON_OPTS, {"topology", required_argument, 0, 1}, {0, 0, 0, 0}};
    assert_int_equal(verify("topo", lo, CLI_COMMON_SHORT), -1);
    assert_non_null(strstr(last_err, "describes --no-nvml"));
}

static void test_undocumented_option_fails(void **state)
{
    (void)state;
    static const struct option lo[] = {CLI_COMMON_OPTS, TOPO_OWN,
                                       {"layout", required_argument, 0, 3},
                                       {0, 0, 0, 0}};
    assert_int_equal(verify("topo", lo, CLI_COMMON_SHORT), -1);
    assert_non_null(strstr(last_err, "--layout, which docs/cmdline/topo.yaml"));
}

static void test_argument_kind_fails(void **state)
{
    (void)state;
    static const struct option lo[] = {
        CLI_COMMON_OPTS, {"topology", no_argument, 0, 1},
        {"no-nvml", no_argument, 0, 2}, {0, 0, 0, 0}};
    assert_int_equal(verify("topo", lo, CLI_COMMON_SHORT), -1);
    assert_non_null(strstr(last_err, "disagree on its argument"));
}

static void test_short_letters(void **state)
{
    (void)state;
    static const struct option lo[] = {CLI_COMMON_OPTS, TOPO_OWN, {0, 0, 0, 0}};
    assert_int_equal(verify("topo", lo, CLI_COMMON_SHORT "x"), -1);
    assert_non_null(strstr(last_err, "-x"));
    /* gather's own globals (docs/cmdline/gather.yaml: no --strict, no
     * --nccl-version) and its -o */
    static const struct option g[] = {
        {"sysroot", required_argument, 0, CLI_OPT_SYSROOT},
        {"json", no_argument, 0, CLI_OPT_JSON},
        {"color", optional_argument, 0, CLI_OPT_COLOR},
        {"no-color", no_argument, 0, CLI_OPT_NO_COLOR},
        {"verbose", no_argument, 0, 'v'},
        {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, 'V'},
        {"output", required_argument, 0, 'o'},
        {0, 0, 0, 0}};
    assert_int_equal(verify("gather", g, "o:" CLI_COMMON_SHORT), 0);
    assert_int_equal(verify("gather", g, "o" CLI_COMMON_SHORT), -1);
    assert_int_equal(verify("gather", g, CLI_COMMON_SHORT), -1);
    assert_int_equal(verify("nosuch", g, CLI_COMMON_SHORT), -1);
}

static void test_every_command_has_help(void **state)
{
    (void)state;
    size_t n = 0;
    for (const struct cli_doc *d = cli_docs; d->name; d++, n++) {
        assert_non_null(strstr(d->help, "usage: nccl-doctor "));
        assert_non_null(strstr(d->help, d->name));
        assert_non_null(d->summary);
    }
    assert_true(n >= 10);
    assert_non_null(strstr(cli_doc_main_help, "Commands:"));
}

static void test_closest(void **state)
{
    (void)state;
    static const char *const cmds[] = {"check", "ifaces", "env", "explain",
                                       "topo", "gather", "perf", "probe"};
    size_t n = sizeof cmds / sizeof *cmds;
    assert_string_equal(cli_closest("chek", cmds, n), "check");
    assert_string_equal(cli_closest("cehck", cmds, n), "check");
    assert_string_equal(cli_closest("iface", cmds, n), "ifaces");
    assert_string_equal(cli_closest("explian", cmds, n), "explain");
    assert_string_equal(cli_closest("pref", cmds, n), "perf");
    assert_null(cli_closest("frobnicate", cmds, n));
    assert_null(cli_closest("x", cmds, n));
    static const char *const opts[] = {"json", "sysroot", "nccl-version"};
    assert_string_equal(cli_closest("jsn", opts, 3), "json");
    assert_string_equal(cli_closest("nccl-verison", opts, 3), "nccl-version");
    assert_string_equal(cli_closest("sysrot", opts, 3), "sysroot");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_table_passes),
        cmocka_unit_test(test_missing_option_fails),
        cmocka_unit_test(test_undocumented_option_fails),
        cmocka_unit_test(test_argument_kind_fails),
        cmocka_unit_test(test_short_letters),
        cmocka_unit_test(test_every_command_has_help),
        cmocka_unit_test(test_closest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
