/* SPDX-License-Identifier: MIT */
/* The NCCL variable catalog, value verdicts, config-file precedence. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncd/check.h"
#include "ncd/ctx.h"
#include "ncd/error.h"
#include "ncd/ncclvars.h"

static struct ncd_var_catalog cat;

static int setup(void **state)
{
    (void)state;
    struct ncd_ctx *ctx;
    if (ncd_ctx_new("/", NULL, &ctx) < 0)
        return -1;
    int rc = ncd_var_catalog_builtin(ctx, &cat);
    if (rc < 0)
        fprintf(stderr, "%s\n", ncd_ctx_errdetail(ctx));
    ncd_ctx_free(ctx);
    return rc;
}

static int teardown(void **state)
{
    (void)state;
    ncd_var_catalog_release(&cat);
    return 0;
}

static const struct {
    const char *name, *value;
    enum ncd_severity sev;
    const char *fix; /* "" = none expected */
} verdicts[] = {
    {"NCCL_IB_DISABLE", "1", NCD_SEV_OK, ""},
    {"NCCL_IB_DISABLE", "true", NCD_SEV_WARNING, "1"},
    {"NCCL_IB_DISABLE", "yes", NCD_SEV_WARNING, "1"},
    {"NCCL_IB_DISABLE", "off", NCD_SEV_WARNING, "0"},
    {"NCCL_IB_DISABLE", "1abc", NCD_SEV_WARNING, ""},
    {"NCCL_IB_DISABLE", "", NCD_SEV_INFO, ""},
    {"NCCL_IB_TIMEOUT", "22", NCD_SEV_OK, ""},
    {"NCCL_IB_TIMEOUT", "40", NCD_SEV_WARNING, ""},
    {"NCCL_IB_TIMEOUT", "010", NCD_SEV_WARNING, "10"},
    /* strtoll skips blanks and a sign before the base (found by
     * tests/fuzz/fuzz_ncclvars.c) */
    {"NCCL_IB_TIMEOUT", " 022", NCD_SEV_WARNING, "22"},
    {"NCCL_IB_TIMEOUT", "+010", NCD_SEV_WARNING, "10"},
    {"NCCL_IB_TIMEOUT", "0x10", NCD_SEV_OK, ""},
    {"NCCL_IB_TIMEOUT", "99999999999999999999999", NCD_SEV_WARNING, ""},
    {"NCCL_SHM_DISABLE", "1", NCD_SEV_OK, ""},
    {"NCCL_SHM_DISABLE", "2", NCD_SEV_WARNING, ""},
    {"NCCL_SHM_DISABLE", "yes", NCD_SEV_WARNING, "1"},
    {"NCCL_P2P_LEVEL", "PIX", NCD_SEV_OK, ""},
    {"NCCL_P2P_LEVEL", "pix", NCD_SEV_WARNING, "PIX"},
    {"NCCL_P2P_LEVEL", "NODE", NCD_SEV_WARNING, "PHB"},
    {"NCCL_P2P_LEVEL", "3", NCD_SEV_OK, ""},
    {"NCCL_P2P_LEVEL", "bogus", NCD_SEV_WARNING, ""},
    {"NCCL_NET_GDR_LEVEL", "SYS", NCD_SEV_OK, ""},
    {"NCCL_DEBUG", "info", NCD_SEV_OK, ""},
    {"NCCL_DEBUG", "VERBOSE", NCD_SEV_WARNING, ""},
    {"NCCL_IB_ADDR_FAMILY", "af_inet", NCD_SEV_WARNING, "AF_INET"},
    {"NCCL_IB_ADDR_FAMILY", "AF_INET6", NCD_SEV_OK, ""},
    {"NCCL_ALGO", "ring,tree", NCD_SEV_OK, ""},
    {"NCCL_ALGO", "^NVLS", NCD_SEV_OK, ""},
    {"NCCL_ALGO", "allreduce:ring;broadcast:^tree", NCD_SEV_OK, ""},
    {"NCCL_ALGO", "ring,fast", NCD_SEV_WARNING, ""},
    {"NCCL_PROTO", "LL128", NCD_SEV_OK, ""},
    {"NCCL_RAS_ADDR", "localhost:28028", NCD_SEV_OK, ""},
    {"NCCL_RAS_ADDR", "localhost", NCD_SEV_WARNING, ""},
    {"NCCL_DEBUG_SUBSYS", "INIT,NET", NCD_SEV_OK, ""},
    {"NCCL_DEBUG_SUBSYS", "^COLL", NCD_SEV_OK, ""},
};

static void test_verdicts(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof verdicts / sizeof verdicts[0]; i++) {
        const struct ncd_var_def *d = ncd_var_find(&cat, verdicts[i].name);
        assert_non_null(d);
        struct ncd_var_verdict v;
        ncd_var_check_value(d, verdicts[i].value, &v);
        if (v.sev != verdicts[i].sev || strcmp(v.fix, verdicts[i].fix) != 0)
            fail_msg("%s=%s: severity %d fix '%s' (%s); expected %d '%s'",
                     verdicts[i].name, verdicts[i].value, v.sev, v.fix, v.msg,
                     verdicts[i].sev, verdicts[i].fix);
    }
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(ncd_var_suggest(&cat, "NCCL_SOCKET_IFACE"),
                        "NCCL_SOCKET_IFNAME");
    assert_string_equal(ncd_var_suggest(&cat, "NCCL_IB_HCAS"), "NCCL_IB_HCA");
    assert_string_equal(ncd_var_suggest(&cat, "NCCL_DEBGU"), "NCCL_DEBUG");
    assert_null(ncd_var_suggest(&cat, "NCCL_SOMETHING_ELSE_ENTIRELY"));
    const struct ncd_var_gone *g = ncd_var_find_gone(&cat, "NCCL_TIMEOUT");
    assert_non_null(g);
    assert_null(g->removed);
    g = ncd_var_find_gone(&cat, "NCCL_IB_GDR_LEVEL");
    assert_non_null(g);
    assert_string_equal(g->rename, "NCCL_NET_GDR_LEVEL");
    assert_non_null(ncd_var_find_gone(&cat, "NCCL_ASYNC_ERROR_HANDLING"));
    assert_non_null(ncd_var_find(&cat, "NCCL_SOCKET_IFNAME"));
    /* GIN knobs (2.28.7+) are NCCL's own: before they were catalogued,
     * NCCL_GIN_ENABLE came out as a misspelling of NCCL_WIN_ENABLE */
    static const char *const gin[] = {
        "NCCL_GIN_ENABLE",       "NCCL_GIN_TYPE",  "NCCL_GIN_NCONNECTIONS",
        "NCCL_GIN_PLUGIN",       "NCCL_GIN_IB_TC", "NCCL_GIN_GDAKI_QP_DEPTH",
        "NCCL_GIN_PROXY_QUEUE_SIZE"};
    for (size_t i = 0; i < sizeof gin / sizeof gin[0]; i++) {
        const struct ncd_var_def *d = ncd_var_find(&cat, gin[i]);
        if (!d || !d->since)
            fail_msg("%s not catalogued with a 'since'", gin[i]);
    }
    assert_string_equal(ncd_var_find(&cat, "NCCL_GIN_ENABLE")->since, "2.28.7");
    /* every catalog entry has a known type and a name with the prefix */
    for (size_t i = 0; i < cat.n_defs; i++)
        assert_int_equal(strncmp(cat.defs[i].name, "NCCL_", 5), 0);
    assert_true(cat.n_defs > 100);
}

static void test_bad_yaml(void **state)
{
    (void)state;
    static const struct {
        const char *yaml;
        const char *detail;
    } bad[] = {
        {"variables: [\n  {name: NCCL_X, type: int\n", "x.yaml:"},
        {"- a\n- b\n", "top level"},
        {"source: x\n", "missing 'variables'"},
        {"variables:\n  - {name: NCCL_X, type: float}\n", "x.yaml:2"},
        {"variables:\n  - {name: FOO, type: int}\n", "NCCL_ name"},
        {"variables:\n  - {name: NCCL_X, type: enum, values: 3}\n",
         "not a list"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct ncd_ctx *ctx;
        assert_int_equal(ncd_ctx_new("/", NULL, &ctx), 0);
        struct ncd_var_catalog c;
        int rc = ncd_var_catalog_load(ctx, bad[i].yaml, strlen(bad[i].yaml),
                                      "x.yaml", &c);
        if (rc != NCD_EPARSE || !strstr(ncd_ctx_errdetail(ctx), bad[i].detail))
            fail_msg("case %zu: rc %d detail '%s'", i, rc,
                     ncd_ctx_errdetail(ctx));
        ncd_var_catalog_release(&c);
        ncd_ctx_free(ctx);
    }
}

static void test_int_parse(void **state)
{
    (void)state;
    long long v;
    int junk;
    assert_int_equal(ncd_nccl_int_parse("0x1f", &v, &junk), 0);
    assert_int_equal(v, 31);
    assert_false(junk);
    ncd_nccl_int_parse("010", &v, &junk);
    assert_int_equal(v, 8);
    ncd_nccl_int_parse("1abc", &v, &junk);
    assert_int_equal(v, 1);
    assert_true(junk);
    ncd_nccl_int_parse("true", &v, &junk);
    assert_int_equal(v, 0);
    assert_true(junk);
    assert_int_equal(ncd_nccl_int_parse("99999999999999999999", &v, &junk),
                     NCD_ERANGE);
}

static void test_conf_precedence(void **state)
{
    (void)state;
    char dir[] = "/tmp/ncd-conf-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "set -e; mkdir -p %s/home/u %s/etc; "
             "printf 'NCCL_DEBUG=INFO\\nNCCL_IB_HCA=mlx5_0\\n#NCCL_X=1\\n"
             "NCCL_BAD = 1\\n' > %s/home/u/.nccl.conf; "
             "printf 'NCCL_DEBUG=WARN\\nNCCL_SOCKET_IFNAME=eth0\\n"
             "NCCL_IB_HCA=mlx5_1\\nNCCL_NET=IB\\n' > %s/etc/nccl.conf",
             dir, dir, dir, dir);
    assert_int_equal(system(cmd), 0);
    char *envp[] = {"HOME=/home/u", "NCCL_NET=Socket", NULL};
    struct ncd_ctx *ctx;
    assert_int_equal(ncd_ctx_new(dir, envp, &ctx), 0);
    struct ncd_conf_result r;
    assert_int_equal(ncd_nccl_conf_apply(ctx, &r), 0);
    assert_int_equal(r.n_files, 2);
    assert_string_equal(ncd_getenv(ctx, "NCCL_DEBUG"), "INFO");     /* user */
    assert_string_equal(ncd_getenv(ctx, "NCCL_IB_HCA"), "mlx5_0");  /* user */
    assert_string_equal(ncd_getenv(ctx, "NCCL_SOCKET_IFNAME"), "eth0");
    assert_string_equal(ncd_getenv(ctx, "NCCL_NET"), "Socket");      /* env */
    assert_null(ncd_getenv(ctx, "NCCL_X"));
    int bad = 0;
    for (size_t i = 0; i < r.n; i++)
        bad += r.v[i].bad;
    assert_int_equal(bad, 1);
    ncd_nccl_conf_release(&r);
    ncd_ctx_free(ctx);
    /* NCCL_CONF_FILE replaces ~/.nccl.conf */
    char *envp2[] = {"HOME=/home/u", "NCCL_CONF_FILE=/etc/nccl.conf", NULL};
    assert_int_equal(ncd_ctx_new(dir, envp2, &ctx), 0);
    assert_int_equal(ncd_nccl_conf_apply(ctx, NULL), 0);
    assert_string_equal(ncd_getenv(ctx, "NCCL_DEBUG"), "WARN");
    ncd_ctx_free(ctx);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* The env check end to end on a fake environment: ids and severities. */
static void test_env_check(void **state)
{
    (void)state;
    char *envp[] = {"NCCL_SOCKET_IFACE=eth0", "NCCL_TIMEOUT=1800",
                    "NCCL_IB_GDR_LEVEL=2",    "NCCL_TESTS_MIN_BW=100",
                    "NCCL_P2P_LEVEL=pix",     "NCCL_DEBUG=INFO",
                    "NCCL_WEIRD_KNOB=1",      "NCCL_GIN_ENABLE=1",
                    NULL};
    struct ncd_ctx *ctx;
    assert_int_equal(ncd_ctx_new("/", envp, &ctx), 0);
    struct ncd_findings l = {0};
    struct ncd_check_opts o = {.only = "ncclenv"};
    struct ncd_node n = {0};
    assert_int_equal(ncd_node_probe(ctx, NULL, ncd_checks_parts(&o), &n), 0);
    assert_int_equal(n.filled, NCD_PART_BIT(NCD_PART_ENV) |
                                   NCD_PART_BIT(NCD_PART_CATALOG) |
                                   NCD_PART_BIT(NCD_PART_RDMA));
    assert_int_equal(ncd_run_checks(&n, &o, &l), 0);
    static const struct {
        const char *id;
        const char *in_title;
        enum ncd_severity sev;
    } want[] = {
        {"env.misspelt-variable", "NCCL_SOCKET_IFNAME", NCD_SEV_WARNING},
        {"env.not-an-nccl-variable", "NCCL_TIMEOUT", NCD_SEV_WARNING},
        {"env.removed-variable", "NCCL_IB_GDR_LEVEL", NCD_SEV_WARNING},
        {"env.bad-value", "pix", NCD_SEV_WARNING},
        {"env.unknown-variable", "NCCL_WEIRD_KNOB", NCD_SEV_INFO},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        int found = 0;
        for (size_t j = 0; j < l.n; j++)
            found |= strcmp(l.v[j].id, want[i].id) == 0 &&
                     strstr(l.v[j].title, want[i].in_title) &&
                     l.v[j].severity == want[i].sev;
        if (!found)
            fail_msg("missing %s (%s)", want[i].id, want[i].in_title);
    }
    /* NCCL_TESTS_* and valid settings give nothing */
    for (size_t j = 0; j < l.n; j++) {
        assert_null(strstr(l.v[j].title, "NCCL_TESTS_MIN_BW"));
        assert_null(strstr(l.v[j].title, "NCCL_DEBUG="));
        assert_null(strstr(l.v[j].title, "NCCL_GIN_ENABLE"));
    }
    assert_int_equal(l.n, 5);
    ncd_findings_release(&l);
    ncd_node_release(&n);
    ncd_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_verdicts),     cmocka_unit_test(test_names),
        cmocka_unit_test(test_bad_yaml),     cmocka_unit_test(test_int_parse),
        cmocka_unit_test(test_conf_precedence),
        cmocka_unit_test(test_env_check),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
