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
#include <sys/stat.h>
#include <unistd.h>

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
    /* NCCL_IB_HCA has no one-character rule (net_ib.cc): "x" selects no
     * device, "^" excludes every one, "=" and "" keep every one. */
    ncd_nccl_hca_parse("x", &l);
    assert_true(l.set && !l.ignored);
    assert_false(ncd_nccl_iflist_match(&l, "mlx5_0", 1));
    ncd_nccl_hca_parse("^", &l);
    assert_false(ncd_nccl_iflist_match(&l, "mlx5_0", 1));
    ncd_nccl_hca_parse("=", &l);
    assert_true(ncd_nccl_iflist_match(&l, "mlx5_0", 1));
    ncd_nccl_hca_parse("", &l);
    assert_true(ncd_nccl_iflist_match(&l, "mlx5_0", 1));
    ncd_nccl_hca_parse(NULL, &l);
    assert_false(l.set);
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

/* ---- NCCL_COMM_ID as NCCL parses it, on a recorded sysroot --------------
 * Each case was checked against the real libnccl.so.2 (2.28.9) in
 * tests/netns/nccl-differential.sh where the library can decide it;
 * version differences come from NCCL's source (src/misc/socket.cc). */

static const char cid_ifaddrs[] =
    "lo inet 127.0.0.1 8 0x10049\n"
    "eth0 inet 10.10.0.5 24 0x11043\n"
    "eth1 inet 10.11.0.5 24 0x11043\n"
    "eth1 inet 10.11.0.6 24 0x11043\n"
    "eth2 inet 10.11.0.7 16 0x1003\n" /* not RUNNING */
    "lo inet6 ::1 128 0x10049\n"
    "eth0 inet6 fe80::1 64 0x11043\n"
    "eth1 inet6 fd00:11::5 64 0x11043\n"
    "eth1 inet6 fe80::2 64 0x11043\n";

struct cid_case {
    const char *comm_id;   /* NULL = unset */
    const char *hosts;     /* the capture's /etc/hosts, NULL = none */
    const char *resolve;   /* the capture's /.ncd/resolve, NULL = none */
    int version;
    const char *bootstrap; /* "name:addr", "" = none */
    const char *boot_err;  /* start of bootstrap_error, "" = NULL */
    const char *socket;    /* socket list, comma-joined */
    int invalid, unresolved, port, port_note;
};

static const struct cid_case cid_cases[] = {
    /* A name in /etc/hosts with an IPv4 line (every IPv4 line used to be
     * skipped, and the name reported as missing). */
    {"rank0:29500", "127.0.0.1 localhost\n10.11.0.9\trank0 r0\n", NULL, 0,
     "eth1:10.11.0.5", "", "eth1", 0, 0, 29500, 0},
    {"R0:29500", "10.11.0.9 rank0 r0 # alias\n", NULL, 0, "eth1:10.11.0.5",
     "", "eth1", 0, 0, 29500, 0},
    /* File order: the first line naming it wins. */
    {"rank0:1", "fd00:11::9 rank0\n10.10.0.9 rank0\n", NULL, 0,
     "eth1:fd00:11::5", "", "eth1", 0, 0, 1, 0},
    /* Recorded answers come first (getaddrinfo's order on that host). */
    {"rank0:1", "fd00:11::9 rank0\n", "rank0 10.10.0.9 fd00:11::9\n", 0,
     "eth0:10.10.0.5", "", "eth0", 0, 0, 1, 0},
    {"rank0:1", "10.10.0.9 rank0\n", "# answers\nrank0 -\n", 0, "",
     "Invalid NCCL_COMM_ID", "", 1, 0, 0, 0},
    /* Unknown here: no prediction, no error. */
    {"rank9:1", "10.10.0.9 rank0\n", NULL, 0, "", "", "eth0,eth1", 0, 1, 0,
     0},
    /* IPv6 without %scope has scope 0: never a link-local entry. */
    {"[fe80::9]:1", NULL, NULL, 0, "", "NET/Socket : No usable",
     "eth0,eth1", 0, 0, 1, 0},
    {"[fe80::9%eth1]:1", NULL, NULL, 0, "eth1:fe80::2", "", "eth1", 0, 0, 1,
     0},
    {"[fd00:11::9]:1", NULL, NULL, 0, "eth1:fd00:11::5", "", "eth1", 0, 0, 1,
     0},
    /* Empty or one character: invalid for the bootstrap, ignored by the
     * socket list. */
    {"", NULL, NULL, 0, "", "Invalid NCCL_COMM_ID", "eth0,eth1", 1, 0, 0, 0},
    {"x", NULL, NULL, 0, "", "Invalid NCCL_COMM_ID", "eth0,eth1", 1, 0, 0, 0},
    /* No port, port 0, a port beyond 16 bits: still selects by subnet. */
    {"10.10.0.9", NULL, NULL, 0, "eth0:10.10.0.5", "", "eth0", 0, 0, 65535,
     1},
    {"10.10.0.9:0", NULL, NULL, 0, "eth0:10.10.0.5", "", "eth0", 0, 0, 0, 2},
    {"10.10.0.9:http", NULL, NULL, 0, "eth0:10.10.0.5", "", "eth0", 0, 0, 0,
     2},
    {"10.10.0.9:70000", NULL, NULL, 0, "eth0:10.10.0.5", "", "eth0", 0, 0,
     4464, 3},
    {"[fd00:11::9]", NULL, NULL, 0, "eth1:fd00:11::5", "", "eth1", 0, 0, 0,
     4},
    /* getaddrinfo's numeric forms: inet_aton shorthands. */
    {"10.11:1", NULL, NULL, 0, "", "NET/Socket : No usable", "eth0,eth1", 0,
     0, 1, 0},
    {"10.10.0.9,junk:1", NULL, NULL, 0, "eth0:10.10.0.5", "", "eth0", 0, 0,
     65535, 1},
    {",10.11.0.9:1", NULL, NULL, 0, "eth1:10.11.0.5", "", "eth1", 0, 0, 1, 0},
    /* Unbracketed IPv6: the host is the text before the first ':'. */
    {"2001:db8::9:1", NULL, NULL, 0, "", "NET/Socket : No usable",
     "eth0,eth1", 0, 0, 0, 2},
    {":29500", NULL, NULL, 0, "", "Invalid NCCL_COMM_ID", "", 1, 0, 0, 0},
    /* '[' without ']': invalid; from 2.27 the socket list is empty too. */
    {"[fd00:11::9:1", NULL, NULL, 22809, "", "Invalid NCCL_COMM_ID", "", 1,
     0, 0, 0},
    {"[fd00:11::9:1", NULL, NULL, 22607, "", "Invalid NCCL_COMM_ID",
     "eth0,eth1,eth2", 1, 0, 0, 0},
    /* '[x]' where x is no IPv6 address: NCCL compares garbage. */
    {"[10.11.0.9]:1", NULL, NULL, 0, "", "NET/Socket : No usable",
     "eth0,eth1", 0, 0, 1, 0},
    /* The subnet pass: one match from 2.27 (any flags), all before. */
    {"10.11.0.99:1", NULL, NULL, 22700, "eth1:10.11.0.5", "", "eth1", 0, 0,
     1, 0},
    {"10.11.0.99:1", NULL, NULL, 22607, "eth1:10.11.0.5", "",
     "eth1,eth1,eth2", 0, 0, 1, 0},
    {"10.11.200.1:1", NULL, NULL, 0, "eth2:10.11.0.7", "", "eth2", 0, 0, 1,
     0},
};

static void write_file(const char *dir, const char *rel, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s%s", dir, rel);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_comm_id_capture(void **state)
{
    (void)state;
    char dir[] = "/tmp/ncd-cid-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char p[512];
    snprintf(p, sizeof p, "%s/etc", dir);
    assert_int_equal(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/.ncd", dir);
    assert_int_equal(mkdir(p, 0755), 0);
    for (size_t i = 0; i < sizeof cid_cases / sizeof cid_cases[0]; i++) {
        const struct cid_case *c = &cid_cases[i];
        snprintf(p, sizeof p, "%s/etc/hosts", dir);
        unlink(p);
        snprintf(p, sizeof p, "%s/.ncd/resolve", dir);
        unlink(p);
        if (c->hosts)
            write_file(dir, "/etc/hosts", c->hosts);
        if (c->resolve)
            write_file(dir, "/.ncd/resolve", c->resolve);
        char e1[128];
        char *envp[2] = {0};
        if (c->comm_id) {
            snprintf(e1, sizeof e1, "NCCL_COMM_ID=%s", c->comm_id);
            envp[0] = e1;
        }
        struct ncd_ctx *ctx;
        assert_int_equal(ncd_ctx_new(dir, envp, &ctx), 0);
        struct ncd_netif_list nl = {0};
        int n = ncd_ifaddrs_parse(ctx, cid_ifaddrs, strlen(cid_ifaddrs),
                                  &nl.ifa);
        assert_true(n > 0);
        nl.n_ifa = (size_t)n;
        nl.ifa_known = 1;
        /* lo 1, eth0 2, eth1 3, eth2 4: the scope of "%eth1" is 3 */
        struct ncd_netif v[4];
        memset(v, 0, sizeof v);
        static const char *const names[] = {"lo", "eth0", "eth1", "eth2"};
        for (int k = 0; k < 4; k++) {
            v[k].index = k + 1;
            snprintf(v[k].name, sizeof v[k].name, "%s", names[k]);
        }
        nl.v = v;
        nl.n = 4;
        struct ncd_nccl_choice ch;
        assert_int_equal(ncd_nccl_select(ctx, &nl, c->version, &ch), 0);
        char got[512], boot[128];
        join_list(&ch, got, sizeof got);
        snprintf(boot, sizeof boot, "%s%s%s", ch.bootstrap,
                 ch.bootstrap[0] ? ":" : "", ch.bootstrap_addr);
        const char *be = ch.bootstrap_error ? ch.bootstrap_error : "";
        if (strcmp(boot, c->bootstrap) != 0 ||
            strncmp(be, c->boot_err, strlen(c->boot_err)) != 0 ||
            (!*c->boot_err && *be) || strcmp(got, c->socket) != 0 ||
            ch.comm_id_invalid != c->invalid ||
            ch.comm_id_unresolved != c->unresolved ||
            (!c->invalid && !c->unresolved &&
             (ch.comm_id_port != c->port ||
              ch.comm_id_port_note != c->port_note)))
            fail_msg("case %zu NCCL_COMM_ID='%s' v%d: bootstrap '%s' (%s), "
                     "socket '%s', invalid %d unresolved %d port %d note %d "
                     "(%s); expected '%s' (%s), '%s', %d %d %d %d",
                     i, c->comm_id ? c->comm_id : "(unset)", c->version, boot,
                     be, got, ch.comm_id_invalid, ch.comm_id_unresolved,
                     ch.comm_id_port, ch.comm_id_port_note, ch.comm_id_error,
                     c->bootstrap, c->boot_err, c->socket, c->invalid,
                     c->unresolved, c->port, c->port_note);
        /* From 2.27 the parse WARN is all the Socket transport says. */
        if (c->comm_id && strcmp(c->comm_id, "[fd00:11::9:1") == 0 &&
            c->version >= 22700)
            assert_string_equal(ch.socket_error,
                                "Net : No valid [IPv6]:port pair found");
        else if (!ch.n_socket)
            assert_non_null(ch.socket_error);
        else
            assert_null(ch.socket_error);
        /* The scope NCCL prints after a link-local address. */
        if (strcmp(c->bootstrap, "eth1:fe80::2") == 0)
            assert_string_equal(ch.bootstrap_scope, "eth1");
        else
            assert_string_equal(ch.bootstrap_scope, "");
        free(nl.ifa);
        ncd_ctx_free(ctx);
    }
    snprintf(p, sizeof p, "rm -rf '%s'", dir);
    assert_int_equal(system(p), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_selection_table),
        cmocka_unit_test(test_iflist_parse),
        cmocka_unit_test(test_versions),
        cmocka_unit_test(test_ifaddrs_roundtrip),
        cmocka_unit_test(test_comm_id_capture),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
