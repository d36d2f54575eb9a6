/* SPDX-License-Identifier: MIT */
/* NCCL_SOCKET_IFNAME parsing and NCCL's interface selection, against the
 * worked examples of shared/reference/nccl-facts.md §2 and our own. */
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
#include "ncd/sysops.h"
#include "ncd/nccl.h"

/* The reference's example host: all RUNNING with IPv4 except ib1. */
static const char example_ifaddrs[] =
    "lo inet 127.0.0.1 8 0x10049\n"
    "eno1 inet 10.0.0.1 24 0x11043\n"
    "eth0 inet 10.0.1.1 24 0x11043\n"
    "eth0:1 inet 10.0.1.2 24 0x11043\n"
    "eth1 inet 10.0.2.1 24 0x11043\n"
    "eth10 inet 10.0.3.1 24 0x11043\n"
    "docker0 inet 172.17.0.1 16 0x11043\n"
    "ib0 inet 192.168.0.1 24 0x11043\n"
    "ib1 inet 192.168.1.1 24 0x1003\n"
    "virbr0 inet 192.168.122.1 24 0x11043\n"
    "lo inet6 ::1 128 0x10049\n"
    "eth0 inet6 fe80::1 64 0x11043\n";

static const char no_ib_ifaddrs[] =
    "lo inet 127.0.0.1 8 0x10049\n"
    "eno1 inet 10.0.0.1 24 0x11043\n"
    "eth0 inet 10.0.1.1 24 0x11043\n"
    "eth0:1 inet 10.0.1.2 24 0x11043\n"
    "eth1 inet 10.0.2.1 24 0x11043\n"
    "eth10 inet 10.0.3.1 24 0x11043\n"
    "docker0 inet 172.17.0.1 16 0x11043\n"
    "virbr0 inet 192.168.122.1 24 0x11043\n";

struct sel_case {
    const char *ifaddrs;
    const char *ifname; /* NULL = unset */
    const char *extra_env; /* "NAME=value" or NULL */
    int version;
    const char *expect;    /* socket list, comma-joined; "" = none */
    const char *bootstrap; /* "" = none */
};

static const struct sel_case sel_cases[] = {
    /* Reference worked examples (facts §2). */
    {example_ifaddrs, NULL, NULL, 22800, "ib0", "ib0"},
    {example_ifaddrs, NULL, NULL, 22703, "ib0,ib1", "ib0"},
    {no_ib_ifaddrs, NULL, NULL, 22800, "eno1,eth0,eth0:1,eth1,eth10", "eno1"},
    {no_ib_ifaddrs, NULL, NULL, 22703,
     "eno1,eth0,eth0:1,eth1,eth10,virbr0", "eno1"},
    {example_ifaddrs, "eth", NULL, 0, "eth0,eth0:1,eth1,eth10", "eth0"},
    {example_ifaddrs, "eth1", NULL, 0, "eth1,eth10", "eth1"},
    {example_ifaddrs, "=eth1", NULL, 0, "eth1", "eth1"},
    {example_ifaddrs, "eth1,eth0", NULL, 0, "eth0,eth0:1,eth1,eth10", "eth0"},
    {example_ifaddrs, "^docker,lo", NULL, 0,
     "eno1,eth0,eth0:1,eth1,eth10,ib0,virbr0", "eno1"},
    {example_ifaddrs, "^=eth0", NULL, 0,
     "lo,eno1,eth0:1,eth1,eth10,docker0,ib0,virbr0", "lo"},
    {example_ifaddrs, "=eth0:1", NULL, 0, "eth0", "eth0"},
    {example_ifaddrs, "eth0, eth1", NULL, 0, "eth0,eth0:1", "eth0"},
    {example_ifaddrs, "^", NULL, 0, "ib0", "ib0"},
    {example_ifaddrs, "e", NULL, 0, "ib0", "ib0"},
    {example_ifaddrs, "=nosuch", NULL, 0, "", ""},
    /* Our own. */
    {example_ifaddrs, "^,", NULL, 0, "", ""},        /* exclude nothing-list */
    {example_ifaddrs, ",,", NULL, 0,                 /* empty list: all */
     "lo,eno1,eth0,eth0:1,eth1,eth10,docker0,ib0,virbr0", "lo"},
    {example_ifaddrs, "ib1", NULL, 22800, "", ""},   /* not RUNNING */
    {example_ifaddrs, "ib1", NULL, 22703, "ib1", "ib1"},
    {example_ifaddrs, "=^eth0", NULL, 0, "", ""},    /* literal "^eth0" */
    {example_ifaddrs, "eth", "NCCL_SOCKET_FAMILY=AF_INET6", 0, "eth0",
     "eth0"},
    {example_ifaddrs, "eth", "NCCL_SOCKET_FAMILY=ipv6", 0,
     "eth0,eth0:1,eth1,eth10", "eth0"},
    /* COMM_ID: the bootstrap takes the subnet match, ignoring IFNAME. */
    {example_ifaddrs, "eth", "NCCL_COMM_ID=10.0.2.99:5000", 0,
     "eth0,eth0:1,eth1,eth10", "eth1"},
    {no_ib_ifaddrs, NULL, "NCCL_COMM_ID=10.0.3.50:5000", 0, "eth10", "eth10"},
    {no_ib_ifaddrs, NULL, "NCCL_COMM_ID=8.8.8.8:5000", 0,
     "eno1,eth0,eth0:1,eth1,eth10", ""},
    /* Only docker and lo: docker pass wins over lo. */
    {"lo inet 127.0.0.1 8 0x10049\ndocker0 inet 172.17.0.1 16 0x11043\n",
     NULL, NULL, 0, "docker0", "docker0"},
    {"lo inet 127.0.0.1 8 0x10049\n", NULL, NULL, 0, "lo", "lo"},
    /* 2.28+: virbr after lo. */
    {"lo inet 127.0.0.1 8 0x10049\nvirbr0 inet 192.168.122.1 24 0x11043\n",
     NULL, NULL, 22800, "lo", "lo"},
    {"lo inet 127.0.0.1 8 0x10049\nvirbr0 inet 192.168.122.1 24 0x11043\n",
     NULL, NULL, 22703, "virbr0", "virbr0"},
    /* ::1 skipped, fe80 kept, first address per name. */
    {"lo inet6 ::1 128 0x10049\neth0 inet6 fe80::1 64 0x11043\n"
     "eth0 inet6 2001:db8::1 64 0x11043\n",
     NULL, NULL, 0, "eth0", "eth0"},
};

static void join_list(const struct ncd_nccl_choice *ch, char *buf, size_t n)
{
    buf[0] = '\0';
    for (int i = 0; i < ch->n_socket; i++) {
        strncat(buf, i ? "," : "", n - strlen(buf) - 1);
        strncat(buf, ch->socket[i], n - strlen(buf) - 1);
    }
}

static void test_selection_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof sel_cases / sizeof sel_cases[0]; i++) {
        const struct sel_case *c = &sel_cases[i];
        char *envp[4] = {0};
        char e1[128], e2[128];
        int k = 0;
        if (c->ifname) {
            snprintf(e1, sizeof e1, "NCCL_SOCKET_IFNAME=%s", c->ifname);
            envp[k++] = e1;
        }
        if (c->extra_env) {
            snprintf(e2, sizeof e2, "%s", c->extra_env);
            envp[k++] = e2;
        }
        struct ncd_ctx *ctx;
        assert_int_equal(ncd_ctx_new("/", envp, &ctx), 0);
        struct ncd_netif_list nl = {0};
        int n = ncd_ifaddrs_parse(ctx, c->ifaddrs, strlen(c->ifaddrs),
                                  &nl.ifa);
        assert_true(n > 0);
        nl.n_ifa = (size_t)n;
        nl.ifa_known = 1;
        struct ncd_nccl_choice ch;
        assert_int_equal(ncd_nccl_select(ctx, &nl, c->version, &ch), 0);
        char got[512];
        join_list(&ch, got, sizeof got);
        if (strcmp(got, c->expect) != 0 ||
            strcmp(ch.bootstrap, c->bootstrap) != 0)
            fail_msg("case %zu (IFNAME=%s %s v%d): socket '%s' bootstrap "
                     "'%s', expected '%s' / '%s'",
                     i, c->ifname ? c->ifname : "(unset)",
                     c->extra_env ? c->extra_env : "", c->version, got,
                     ch.bootstrap, c->expect, c->bootstrap);
        free(nl.ifa);
        ncd_ctx_free(ctx);
    }
}

static void test_iflist_parse(void **state)
{
    (void)state;
    struct ncd_nccl_iflist l;
    ncd_nccl_iflist_parse(NULL, 16, &l);
    assert_false(l.set);
    ncd_nccl_iflist_parse("e", 16, &l);
    assert_false(l.set);
    assert_true(l.ignored);
    ncd_nccl_iflist_parse("^=eth0:1,,ib", 16, &l);
    assert_true(l.set && l.exclude && l.exact);
    assert_int_equal(l.n, 2);
    assert_string_equal(l.tok[0].name, "eth0");
    assert_int_equal(l.tok[0].port, 1);
    assert_int_equal(l.tok[1].port, -1);
    assert_int_equal(l.dropped_empty, 1);
    ncd_nccl_iflist_parse("=^eth0", 16, &l);
    assert_true(l.exact && !l.exclude && l.eq_before_caret);
    assert_string_equal(l.tok[0].name, "^eth0");
    ncd_nccl_iflist_parse("eth0, eth1", 16, &l);
    assert_true(l.has_space);
    ncd_nccl_iflist_parse("a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q", 16, &l);
    assert_int_equal(l.n, 16);
    assert_true(l.truncated);
    ncd_nccl_iflist_parse("eth0,", 16, &l);
    assert_int_equal(l.dropped_empty, 1);
    /* IB_HCA: ports are enforced; mlx5_1 also matches mlx5_10. */
    ncd_nccl_iflist_parse("mlx5_1:1", 32, &l);
    assert_true(ncd_nccl_iflist_match(&l, "mlx5_1", 1));
    assert_false(ncd_nccl_iflist_match(&l, "mlx5_1", 2));
    assert_true(ncd_nccl_iflist_match(&l, "mlx5_10", 1));
    ncd_nccl_iflist_parse("=mlx5_1", 32, &l);
    assert_false(ncd_nccl_iflist_match(&l, "mlx5_10", 1));
    assert_true(ncd_nccl_iflist_match(&l, "mlx5_1", 2));
    ncd_nccl_iflist_parse("^mlx5_0:2", 32, &l);
    assert_true(ncd_nccl_iflist_match(&l, "mlx5_0", 1));
    assert_false(ncd_nccl_iflist_match(&l, "mlx5_0", 2));
}

static void test_versions(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        int code;
    } ok[] = {{"2.28.3", 22803}, {"2.18", 21800},     {"v2.21.5-1", 22105},
              {"2.8.4", 20804},  {" 2.30.7", 23007},  {"2.19.3+cuda12.2", 21903}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        int c = 0;
        assert_int_equal(ncd_nccl_version_parse(ok[i].s, &c), 0);
        assert_int_equal(c, ok[i].code);
    }
    static const char *const bad[] = {"", "2", "x.y", "2.28.x", "2.28.3abc",
                                      "12.100.1", NULL};
    for (int i = 0; bad[i]; i++) {
        int c;
        if (ncd_nccl_version_parse(bad[i], &c) != NCD_EPARSE)
            fail_msg("'%s' should not parse", bad[i]);
    }
    assert_int_equal(ncd_nccl_version_from_code(2804), 20804);
    assert_int_equal(ncd_nccl_version_from_code(21803), 21803);
    char b[16];
    assert_string_equal(ncd_nccl_version_str(22803, b, sizeof b), "2.28.3");
}

static void test_ifaddrs_roundtrip(void **state)
{
    (void)state;
    struct ncd_ctx *ctx;
    assert_int_equal(ncd_ctx_new("/", NULL, &ctx), 0);
    struct ncd_ifaddr_entry *e;
    int n = ncd_ifaddrs_parse(ctx, example_ifaddrs, strlen(example_ifaddrs),
                              &e);
    assert_int_equal(n, 12);
    assert_true(e[11].a.link_local);
    assert_true(e[10].a.loopback);
    struct ncd_strbuf sb = {0};
    ncd_ifaddrs_format(&sb, e, (size_t)n);
    assert_string_equal(ncd_sb_str(&sb), example_ifaddrs);
    ncd_sb_release(&sb);
    free(e);
    static const char *const bad[] = {
        "eth0 inet 10.0.0.1\n", "eth0 inet6 10.0.0.1 24 0x1\n",
        "eth0 inet 10.0.0.1 33 0x1\n", "eth0 inet 300.0.0.1 24 0x1\n",
        "eth0 ipx 10.0.0.1 24 0x1\n", "eth0 inet 10.0.0.1 24 zz\n", NULL};
    for (int i = 0; bad[i]; i++) {
        ncd_ctx_clear_error(ctx);
        if (ncd_ifaddrs_parse(ctx, bad[i], strlen(bad[i]), &e) != NCD_EPARSE)
            fail_msg("'%s' should be rejected", bad[i]);
        assert_non_null(strstr(ncd_ctx_errdetail(ctx), "line 1"));
    }
    ncd_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_selection_table),
        cmocka_unit_test(test_iflist_parse),
        cmocka_unit_test(test_versions),
        cmocka_unit_test(test_ifaddrs_roundtrip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
