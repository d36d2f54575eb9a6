/* SPDX-License-Identifier: MIT */
/*
 * explain's inputs on hostile trees and files (issue 14 item 7): a
 * directory symlink cycle, a file named twice or hard-linked, and a gzip
 * input that inflates past the cap.  Each file is read once; the cap cuts
 * the input with a problem report and keeps the lines before it.
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
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "ncd/ctx.h"
#include "ncd/error.h"
#include "ncd/explain.h"

struct fx {
    struct ncd_ctx *ctx;
    struct ncd_rules *rules;
    struct ncd_explain *ex;
    char dir[64];
    char last[512];
    int nproblems;
};

static void on_problem(void *arg, const char *msg)
{
    struct fx *f = arg;
    f->nproblems++;
    snprintf(f->last, sizeof f->last, "%s", msg);
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    assert_int_equal(ncd_ctx_new(NULL, NULL, &f->ctx), 0);
    assert_int_equal(ncd_rules_new(&f->rules), 0);
    assert_true(ncd_rules_load_builtin(f->ctx, f->rules) > 0);
    assert_int_equal(ncd_explain_new(f->ctx, f->rules, &f->ex), 0);
    snprintf(f->dir, sizeof f->dir, "/tmp/ncd-input-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", f->dir);
    ncd_explain_free(f->ex);
    ncd_rules_free(f->rules);
    ncd_ctx_free(f->ctx);
    free(f);
    return 0;
}

static void write_file(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    assert_int_equal(fclose(fp), 0);
}

static unsigned long long lines_read(struct fx *f)
{
    unsigned long long b, l, n;
    ncd_explain_stats(f->ex, &b, &l, &n);
    return l;
}

#define LINE "node1:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"

/* d/a.log, d/self -> ., d/up -> .., d/sub/back -> ../..: links to
 * directories are not followed (as grep -r: one to /proc made the walk
 * endless); a.log counts once. */
static void symlink_cycle_reads_once(void **state)
{
    struct fx *f = *state;
    char p[256], q[256];
    snprintf(p, sizeof p, "%s/d", f->dir);
    assert_int_equal(mkdir(p, 0700), 0);
    snprintf(q, sizeof q, "%s/d/a.log", f->dir);
    write_file(q, LINE);
    snprintf(q, sizeof q, "%s/d/self", f->dir);
    assert_int_equal(symlink(".", q), 0);
    snprintf(q, sizeof q, "%s/d/up", f->dir);
    assert_int_equal(symlink("..", q), 0);
    snprintf(q, sizeof q, "%s/d/sub", f->dir);
    assert_int_equal(mkdir(q, 0700), 0);
    snprintf(q, sizeof q, "%s/d/sub/back", f->dir);
    assert_int_equal(symlink("../..", q), 0);
    struct ncd_explain_inputs in = {.problem = on_problem, .arg = f};
    assert_int_equal(ncd_explain_feed_path(f->ex, p, &in), 0);
    assert_int_equal(in.nread, 1);
    assert_int_equal(lines_read(f), 1);
    assert_int_equal(in.nlinkdirs, 3);
    /* the directory named twice: read again is counted */
    assert_int_equal(ncd_explain_feed_path(f->ex, p, &in), 0);
    assert_int_equal(in.nread, 1);
    assert_true(in.nagain >= 1);
    assert_int_equal(f->nproblems, 0);
}

/* The same file named twice and through a hard link: read once. */
static void same_file_twice(void **state)
{
    struct fx *f = *state;
    char a[256], b[256];
    snprintf(a, sizeof a, "%s/x.log", f->dir);
    write_file(a, LINE LINE);
    snprintf(b, sizeof b, "%s/y.log", f->dir);
    assert_int_equal(link(a, b), 0);
    struct ncd_explain_inputs in = {.problem = on_problem, .arg = f};
    assert_int_equal(ncd_explain_feed_path(f->ex, a, &in), 0);
    assert_int_equal(ncd_explain_feed_path(f->ex, a, &in), 0);
    assert_int_equal(ncd_explain_feed_path(f->ex, b, &in), 0);
    assert_int_equal(in.nread, 1);
    assert_int_equal(in.nagain, 2);
    assert_int_equal(lines_read(f), 2);
}

/* 8 MiB of lines in a .gz against a 1 MiB cap: cut with a problem that
 * says so, the lines before the cap used. */
static void gzip_cap(void **state)
{
    struct fx *f = *state;
    char p[256];
    snprintf(p, sizeof p, "%s/big.log.gz", f->dir);
    gzFile gz = gzopen(p, "wb9");
    assert_non_null(gz);
    size_t ll = strlen(LINE), total = 0;
    while (total < (8u << 20)) {
        assert_int_equal(gzwrite(gz, LINE, (unsigned)ll), (int)ll);
        total += ll;
    }
    assert_int_equal(gzclose(gz), Z_OK);
    struct ncd_explain_inputs in = {.problem = on_problem, .arg = f,
                                    .max_inflated = 1u << 20};
    assert_int_equal(ncd_explain_feed_path(f->ex, p, &in), NCD_ERANGE);
    assert_int_equal(f->nproblems, 1);
    assert_non_null(strstr(f->last, "stopped after 1 MiB of decompressed data"));
    assert_non_null(strstr(f->last, "big.log.gz"));
    unsigned long long l = lines_read(f);
    assert_true(l >= ((1u << 20) / ll) - 1 && l <= ((1u << 20) / ll) + 1);

    /* the same file under the default cap: read to its end */
    struct fx g = {0};
    assert_int_equal(ncd_explain_new(f->ctx, f->rules, &g.ex), 0);
    struct ncd_explain_inputs in2 = {.problem = on_problem, .arg = &g};
    assert_int_equal(ncd_explain_feed_path(g.ex, p, &in2), 0);
    unsigned long long b, l2, n;
    ncd_explain_stats(g.ex, &b, &l2, &n);
    assert_int_equal(l2, total / ll);
    assert_int_equal(g.nproblems, 0);
    ncd_explain_free(g.ex);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(symlink_cycle_reads_once, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(same_file_twice, setup, teardown),
        cmocka_unit_test_setup_teardown(gzip_cap, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
