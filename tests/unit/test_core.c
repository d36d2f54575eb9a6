/* SPDX-License-Identifier: MIT */
/* Core: error codes, env copy, strbuf, findings, sysroot reads. */
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
#include <sys/wait.h>
#include <unistd.h>

#include "ncd/ctx.h"
#include "ncd/error.h"
#include "ncd/finding.h"
#include "ncd/fs.h"
#include "ncd/netaddr.h"
#include "ncd/report.h"
#include "ncd/strbuf.h"

static void test_error_codes(void **state)
{
    (void)state;
    assert_int_equal(NCD_ENOMEM, -1);
    assert_string_equal(ncd_err_name(NCD_ENOMEM), "NOMEM");
    assert_string_equal(ncd_strerror(NCD_OK), "success");
    assert_string_equal(ncd_strerror(-9999), "unknown error");
    assert_string_equal(ncd_err_name(-9999), "UNKNOWN");
    /* every code has a distinct name and message */
    for (int a = 1; a <= 22; a++)
        for (int b = a + 1; b <= 22; b++) {
            assert_string_not_equal(ncd_err_name(-a), ncd_err_name(-b));
            assert_string_not_equal(ncd_strerror(-a), ncd_strerror(-b));
        }
}

static void test_env_copy(void **state)
{
    (void)state;
    char *envp[] = {"A=1", "B=", "A=2", "=bad", "noequal", "NCCL_X=a=b", NULL};
    struct ncd_ctx *ctx;
    assert_int_equal(ncd_ctx_new("/", envp, &ctx), 0);
    assert_string_equal(ncd_getenv(ctx, "A"), "1");
    assert_string_equal(ncd_getenv(ctx, "B"), "");
    assert_string_equal(ncd_getenv(ctx, "NCCL_X"), "a=b");
    assert_null(ncd_getenv(ctx, "C"));
    assert_int_equal(ncd_env_count(ctx), 3);
    assert_int_equal(ncd_setenv(ctx, "A", "9", 0), 0);
    assert_string_equal(ncd_getenv(ctx, "A"), "1");
    assert_int_equal(ncd_setenv(ctx, "A", "9", 1), 0);
    assert_string_equal(ncd_getenv(ctx, "A"), "9");
    assert_int_equal(ncd_setenv(ctx, "A", NULL, 1), 0);
    assert_null(ncd_getenv(ctx, "A"));
    assert_int_equal(ncd_setenv(ctx, "X=Y", "1", 1), NCD_EINVAL);
    assert_true(ncd_ctx_is_live(ctx));
    /* first failure wins */
    assert_int_equal(ncd_fail(ctx, NCD_EIO, "first %d", 1), NCD_EIO);
    ncd_fail(ctx, NCD_ENOENT, "second");
    assert_string_equal(ncd_ctx_errdetail(ctx), "first 1");
    assert_int_equal(ncd_ctx_errcode(ctx), NCD_EIO);
    ncd_ctx_clear_error(ctx);
    assert_string_equal(ncd_ctx_errdetail(ctx), "");
    ncd_ctx_free(ctx);
    assert_int_equal(ncd_ctx_new("/nonexistent/dir", NULL, &ctx), NCD_ENOENT);
}

static void test_strbuf(void **state)
{
    (void)state;
    struct ncd_strbuf sb = {0};
    assert_string_equal(ncd_sb_str(&sb), "");
    for (int i = 0; i < 1000; i++)
        ncd_sb_printf(&sb, "%d,", i);
    assert_int_equal(sb.len, strlen(sb.buf));
    assert_memory_equal(sb.buf, "0,1,2,", 6);
    char big[600];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    ncd_sb_reset(&sb);
    ncd_sb_printf(&sb, "%s|", big);
    assert_int_equal(sb.len, 600);
    char *s = ncd_sb_detach(&sb);
    assert_int_equal(strlen(s), 600);
    free(s);
    ncd_sb_shell_quote(&sb, "it's");
    ncd_sb_putc(&sb, ' ');
    ncd_sb_shell_quote(&sb, "eth0");
    ncd_sb_putc(&sb, ' ');
    ncd_sb_shell_quote(&sb, "^docker,lo");
    assert_string_equal(ncd_sb_str(&sb), "'it'\\''s' eth0 '^docker,lo'");
    ncd_sb_release(&sb);
}

static void test_findings(void **state)
{
    (void)state;
    struct ncd_findings l = {0};
    struct ncd_finding *f =
        ncd_findings_add(&l, "a.one", NCD_CAT_NET_IFNAME, NCD_SEV_WARNING,
                         "warn %d", 1);
    assert_non_null(f);
    ncd_finding_env(f, "NCCL_SOCKET_IFNAME", "eth0");
    ncd_finding_env(f, "NCCL_SOCKET_IFNAME", "=eth0");
    ncd_finding_env(f, "NCCL_TIMEOUT", NULL);
    assert_int_equal(f->n_env, 2);
    f = ncd_findings_add(&l, "b.two", NCD_CAT_SYS_SHM, NCD_SEV_ERROR, "err");
    ncd_finding_evidence(f, "line %s", "x");
    ncd_findings_add(&l, "c.three", NCD_CAT_SYS_SHM, NCD_SEV_ERROR, "err2");
    ncd_findings_sort(&l);
    assert_string_equal(l.v[0].id, "b.two");
    assert_string_equal(l.v[1].id, "c.three");
    assert_string_equal(l.v[2].id, "a.one");
    assert_int_equal(ncd_findings_worst(&l), NCD_SEV_ERROR);
    json_t *j = ncd_findings_to_json(&l);
    assert_non_null(j);
    json_t *e = json_object_get(json_array_get(j, 2), "env");
    assert_string_equal(
        json_string_value(json_object_get(e, "NCCL_SOCKET_IFNAME")), "=eth0");
    assert_true(json_is_null(json_object_get(e, "NCCL_TIMEOUT")));
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(j, 0), "category")),
                        "sys.shm");
    json_decref(j);
    assert_int_equal(ncd_category_parse("net.iface-choice"),
                     NCD_CAT_NET_IFACE_CHOICE);
    assert_int_equal(ncd_category_parse("net.bogus"), -1);
    for (int c = 0; c < NCD_CAT__COUNT; c++)
        assert_int_equal(ncd_category_parse(ncd_category_name(c)), c);
    ncd_findings_release(&l);
}

static void test_sysroot(void **state)
{
    (void)state;
    char dir[] = "/tmp/ncd-test-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "set -e; cd %s; mkdir -p sys/devices/pci0000:00/0000:00:03.0/net/eth0 "
             "sys/class/net; "
             "ln -s ../../devices/pci0000:00/0000:00:03.0/net/eth0 sys/class/net/eth0; "
             "ln -s ../../../0000:00:03.0 sys/devices/pci0000:00/0000:00:03.0/net/eth0/device; "
             "echo 1500 > sys/class/net/eth0/mtu; echo 0x1003 > sys/class/net/eth0/flags; "
             "echo garbage > sys/class/net/eth0/speed; ln -s /etc/escape sys/abs; "
             "mkdir -p etc; echo inside > etc/escape; touch sys/class/net/eth10 sys/class/net/eth2",
             dir);
    assert_int_equal(system(cmd), 0);
    struct ncd_ctx *ctx;
    assert_int_equal(ncd_ctx_new(dir, NULL, &ctx), 0);
    assert_false(ncd_ctx_is_live(ctx));
    long long v;
    assert_int_equal(ncd_fs_read_ll(ctx, "/sys/class/net/eth0/mtu", &v), 0);
    assert_int_equal(v, 1500);
    assert_int_equal(ncd_fs_read_ll(ctx, "/sys/class/net/eth0/flags", &v), 0);
    assert_int_equal(v, 0x1003);
    assert_int_equal(ncd_fs_read_ll(ctx, "/sys/class/net/eth0/speed", &v),
                     NCD_EPARSE);
    assert_int_equal(ncd_fs_read_ll(ctx, "/sys/class/net/eth9/mtu", &v),
                     NCD_ENOENT);
    char rp[4096];
    assert_int_equal(ncd_fs_realpath(ctx, "/sys/class/net/eth0/device", rp,
                                     sizeof rp), 0);
    assert_string_equal(rp, "/sys/devices/pci0000:00/0000:00:03.0");
    char s[64];
    /* an absolute link stays inside the sysroot */
    assert_int_equal(ncd_fs_read_str(ctx, "/sys/abs", s, sizeof s), 0);
    assert_string_equal(s, "inside");
    char **names;
    int n = ncd_fs_list(ctx, "/sys/class/net", &names);
    assert_int_equal(n, 3);
    assert_string_equal(names[0], "eth0");
    assert_string_equal(names[1], "eth2");
    assert_string_equal(names[2], "eth10");
    ncd_fs_list_free(names, n);
    assert_true(ncd_fs_exists(ctx, "/sys/class/net/eth0/mtu"));
    assert_false(ncd_fs_exists(ctx, "/sys/class/net/eth0/nope"));
    ncd_ctx_free(ctx);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* Files of exactly one sysfs attribute size (4096 bytes, as kernfs reports
 * for every text attribute) in a capture are read whole, as are the sizes
 * around it; the size limit holds; live sysfs attributes read as before. */
static void test_read_page_sized(void **state)
{
    (void)state;
    char dir[] = "/tmp/ncd-test-XXXXXX";
    assert_non_null(mkdtemp(dir));
    static const size_t sizes[] = {0, 1, 4095, 4096, 4097, 8192, 10000};
    char path[512];
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        snprintf(path, sizeof path, "%s/f%zu", dir, sizes[i]);
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        for (size_t k = 0; k < sizes[i]; k++)
            fputc('a' + (int)(k % 26), f);
        assert_int_equal(fclose(f), 0);
    }
    struct ncd_ctx *ctx;
    assert_int_equal(ncd_ctx_new(dir, NULL, &ctx), 0);
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        snprintf(path, sizeof path, "/f%zu", sizes[i]);
        char *buf;
        size_t len;
        assert_int_equal(ncd_fs_read(ctx, path, 0, &buf, &len), 0);
        assert_int_equal(len, sizes[i]);
        for (size_t k = 0; k < len; k++)
            if (buf[k] != 'a' + (int)(k % 26))
                fail_msg("%s: byte %zu", path, k);
        assert_int_equal(buf[len], '\0');
        free(buf);
    }
    char *buf;
    assert_int_equal(ncd_fs_read(ctx, "/f4096", 4095, &buf, NULL),
                     NCD_ERANGE);
    ncd_ctx_free(ctx);
    snprintf(path, sizeof path, "rm -rf %s", dir);
    assert_int_equal(system(path), 0);
    /* live: a text attribute is whole and NUL-terminated; a short limit
     * is refused */
    assert_int_equal(ncd_ctx_new("/", NULL, &ctx), 0);
    size_t len;
    if (ncd_fs_read(ctx, "/sys/class/net/lo/address", 0, &buf, &len) == 0) {
        assert_int_equal(len, strlen(buf));
        assert_string_equal(buf, "00:00:00:00:00:00\n");
        free(buf);
        assert_int_equal(ncd_fs_read(ctx, "/sys/class/net/lo/type", 1, &buf,
                                     NULL),
                         NCD_ERANGE);
    }
    ncd_ctx_free(ctx);
}

/* The grow-buffer reader: whole pipes, the size limit, the deadline. */
static void test_read_fd(void **state)
{
    (void)state;
    int p[2];
    assert_int_equal(pipe(p), 0);
    static char big[100000];
    memset(big, 'x', sizeof big);
    if (fork() == 0) {
        close(p[0]);
        ssize_t w = write(p[1], big, sizeof big);
        _exit(w == (ssize_t)sizeof big ? 0 : 1);
    }
    close(p[1]);
    char *buf;
    size_t len;
    assert_int_equal(ncd_read_fd_bounded(p[0], 0, 5000, &buf, &len), 0);
    assert_int_equal(len, sizeof big);
    assert_int_equal(buf[len], '\0');
    free(buf);
    close(p[0]);
    assert_int_equal(pipe(p), 0);
    assert_int_equal(write(p[1], "0123456789", 10), 10);
    /* more than `max` bytes: refused, nothing returned */
    assert_int_equal(ncd_read_fd_bounded(p[0], 4, 1000, &buf, &len), NCD_ERANGE);
    assert_null(buf);
    /* a writer that never closes: the deadline ends the read */
    assert_int_equal(ncd_read_fd_bounded(p[0], 0, 50, &buf, &len), NCD_ETIMEOUT);
    close(p[0]);
    close(p[1]);
    int status;
    wait(&status);
}

/* Text helpers: lines, comma lists, /etc/hosts, error buffers. */
static void test_text_helpers(void **state)
{
    (void)state;
    const char *t = "a\nbb\n\nccc";
    size_t pos = 0, l;
    const char *s;
    const char *want[] = {"a", "bb", "", "ccc"};
    for (int i = 0; i < 4; i++) {
        assert_true(ncd_next_line(t, strlen(t), &pos, &s, &l));
        assert_int_equal(l, strlen(want[i]));
        assert_memory_equal(s, want[i], l);
    }
    assert_false(ncd_next_line(t, strlen(t), &pos, &s, &l));
    static const struct {
        const char *s;
        int n;
    } lists[] = {{"", 0}, {"0", 1}, {"0,1,3", 3}, {"GPU-a,GPU-b", 2}, {",", 2}};
    for (size_t i = 0; i < sizeof lists / sizeof *lists; i++)
        assert_int_equal(ncd_list_count(lists[i].s), lists[i].n);
    assert_int_equal(ncd_list_count(NULL), 0);
    const char *hosts = "# comment\n127.0.0.1 localhost\n"
                        "10.0.0.5\tnode1 node1.cluster # rank 0\n"
                        "fd00::7 node6\n10.0.0.9 node1\n";
    static const struct {
        const char *name, *addr;
    } h[] = {{"node1", "10.0.0.5"}, {"NODE1.cluster", "10.0.0.5"},
             {"node6", "fd00::7"},   {"localhost", "127.0.0.1"},
             {"rank", NULL},         {"comment", NULL}};
    for (size_t i = 0; i < sizeof h / sizeof *h; i++) {
        struct ncd_if_addr a;
        int found = ncd_hosts_lookup(hosts, strlen(hosts), h[i].name, &a);
        assert_int_equal(found, h[i].addr != NULL);
        if (found)
            assert_string_equal(a.addr, h[i].addr);
    }
    char e[16];
    assert_int_equal(ncd_errbuf(e, sizeof e, NCD_EPARSE, "line %d bad", 7),
                     NCD_EPARSE);
    assert_string_equal(e, "line 7 bad");
    assert_int_equal(ncd_errbuf(NULL, 0, NCD_EIO, "x"), NCD_EIO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error_codes), cmocka_unit_test(test_env_copy),
        cmocka_unit_test(test_strbuf),      cmocka_unit_test(test_findings),
        cmocka_unit_test(test_sysroot),     cmocka_unit_test(test_read_fd),
        cmocka_unit_test(test_text_helpers),
        cmocka_unit_test(test_read_page_sized),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
