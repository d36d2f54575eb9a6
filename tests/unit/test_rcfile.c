/* SPDX-License-Identifier: MIT */
/* The managed rc-file block: splice cases, idempotence, and a write that
 * fails half-way leaving the original intact. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ncd/ctx.h"
#include "ncd/error.h"
#include "ncd/rcfile.h"

#define B NCD_RC_BEGIN "\n"
#define E NCD_RC_END "\n"
#define NOTE "# Managed by 'nccl-doctor env --write': re-running replaces this block; 'nccl-doctor env --remove FILE' deletes it.\n"

static const struct {
    const char *old;
    const char *body; /* NULL = remove */
    const char *want;
} cases[] = {
    {"", "export A=1\n", B NOTE "export A=1\n" E},
    {"x\n", "export A=1\n", "x\n\n" B NOTE "export A=1\n" E},
    {"x", "export A=1\n", "x\n\n" B NOTE "export A=1\n" E},
    {"a\n" B "old\n" E "b\n", "export A=2\n",
     "a\n" B NOTE "export A=2\n" E "b\n"},
    {"a\n" B "old\n" NCD_RC_END, "new\n", "a\n" B NOTE "new\n" NCD_RC_END},
    {"a\n" B "old\n" E "b\n", NULL, "a\nb\n"},
    {"x\n\n" B NOTE "export A=1\n" E, NULL, "x\n"},
    {"a\r\n" B "old\r\n" NCD_RC_END "\r\nb\r\n", "n\n",
     "a\r\n" B NOTE "n\n" E "b\r\n"},
    {"no block\n", NULL, "no block\n"},
};

static void test_splice(void **state)
{
    (void)state;
    struct ncd_ctx *ctx;
    assert_int_equal(ncd_ctx_new("/", NULL, &ctx), 0);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out;
        size_t len;
        assert_int_equal(ncd_rc_splice(ctx, cases[i].old,
                                       strlen(cases[i].old), cases[i].body,
                                       &out, &len),
                         0);
        if (strcmp(out, cases[i].want) != 0)
            fail_msg("case %zu:\n--- got\n%s--- want\n%s", i, out,
                     cases[i].want);
        assert_int_equal(len, strlen(out));
        free(out);
    }
    static const char *const bad[] = {
        "a\n" B "x\n", "a\n" E, B B E, B E E, NULL};
    for (int i = 0; bad[i]; i++) {
        char *out = NULL;
        size_t len;
        ncd_ctx_clear_error(ctx);
        if (ncd_rc_splice(ctx, bad[i], strlen(bad[i]), "x\n", &out, &len) !=
            NCD_EPARSE)
            fail_msg("unbalanced case %d accepted", i);
        assert_non_null(strstr(ncd_ctx_errdetail(ctx), "line"));
        free(out);
    }
    ncd_ctx_free(ctx);
}

static char *slurp(const char *p)
{
    FILE *f = fopen(p, "rb");
    if (!f)
        return NULL;
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return strdup(buf);
}

static size_t budget;
static ssize_t failing_write(int fd, const void *b, size_t n)
{
    if (budget == 0) {
        errno = ENOSPC;
        return -1;
    }
    if (n > budget)
        n = budget;
    budget -= n;
    return write(fd, b, n);
}

static void test_update_file(void **state)
{
    (void)state;
    char dir[] = "/tmp/ncd-rc-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256], link[256], bak[300];
    snprintf(path, sizeof path, "%s/bashrc", dir);
    snprintf(link, sizeof link, "%s/.bashrc", dir);
    snprintf(bak, sizeof bak, "%s.nccl-doctor.bak", path);
    FILE *f = fopen(path, "w");
    fputs("# user stuff\nalias ll='ls -l'\n", f);
    fclose(f);
    chmod(path, 0600);
    assert_int_equal(symlink("bashrc", link), 0);
    struct ncd_ctx *ctx;
    assert_int_equal(ncd_ctx_new("/", NULL, &ctx), 0);
    enum ncd_rc_action act;
    assert_int_equal(ncd_rc_update(ctx, link, "export A=1\n", 0, &act, NULL,
                                   NULL),
                     0);
    assert_int_equal(act, NCD_RC_UPDATED);
    char *first = slurp(path);
    /* idempotent: same content, no write */
    assert_int_equal(ncd_rc_update(ctx, link, "export A=1\n", 0, &act, NULL,
                                   NULL),
                     0);
    assert_int_equal(act, NCD_RC_UNCHANGED);
    char *second = slurp(path);
    assert_string_equal(first, second);
    /* symlink kept, mode kept, backup holds the previous content */
    struct stat st;
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    char *b = slurp(bak);
    assert_string_equal(b, "# user stuff\nalias ll='ls -l'\n");
    free(b);
    /* A write failing half-way (disk full) leaves the file intact and no
     * temporary file behind. */
    budget = 20;
    ncd_ctx_clear_error(ctx);
    int rc = ncd_rc_update(ctx, link, "export A=2\nexport B=3\n", 0, &act,
                           NULL, failing_write);
    assert_int_equal(rc, NCD_ENOSPC);
    assert_non_null(strstr(ncd_ctx_errdetail(ctx), "unchanged"));
    char *after = slurp(path);
    assert_string_equal(after, first);
    free(after);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "test $(ls -A %s | wc -l) -eq 3", dir);
    assert_int_equal(system(cmd), 0); /* bashrc, .bashrc, bak: no temp */
    /* remove restores the user's bytes */
    assert_int_equal(ncd_rc_update(ctx, link, NULL, 0, &act, NULL, NULL), 0);
    assert_int_equal(act, NCD_RC_REMOVED);
    after = slurp(path);
    assert_string_equal(after, "# user stuff\nalias ll='ls -l'\n");
    free(after);
    /* a new file is created */
    char newp[300];
    snprintf(newp, sizeof newp, "%s/profile.sh", dir);
    assert_int_equal(ncd_rc_update(ctx, newp, "export A=1\n", 0, &act, NULL,
                                   NULL),
                     0);
    assert_int_equal(act, NCD_RC_CREATED);
    free(first);
    free(second);
    ncd_ctx_free(ctx);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_splice),
        cmocka_unit_test(test_update_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
