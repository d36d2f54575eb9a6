/* SPDX-License-Identifier: MIT */
/* tune on one host (issue 10, item 10): what cannot matter is skipped with
 * the reason, what the runs measure is said, labels are never cut, the
 * winner's keep command uses env's value syntax, an interrupted run
 * chooses nothing and blames nobody. */
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
#include "ncd/finding.h"
#include "ncd/perf.h"
#include "ncd/report.h"
#include "ncd/tune.h"

static struct ncd_tune_set *parse(struct ncd_ctx *ctx, const char *text,
                                  int want_rc)
{
    struct ncd_tune_set *s = calloc(1, sizeof *s);
    assert_non_null(s);
    assert_int_equal(ncd_tune_parse_file(ctx, text, strlen(text), s),
                     want_rc);
    return s;
}

static struct ncd_ctx *ctx_with(char **envp)
{
    struct ncd_ctx *ctx;
    assert_int_equal(ncd_ctx_new(NULL, envp, &ctx), 0);
    return ctx;
}

/* "lo\0ens3\0\0": what NCCL could select on the host */
static const char names[] = "lo\0ens3\0";

static void test_skips_socket_one_host(void **state)
{
    (void)state;
    struct ncd_ctx *ctx = ctx_with(NULL);
    struct ncd_tune_set *s = parse(ctx,
                                   "shm: NCCL_SHM_DISABLE=1\n"
                                   "lo: NCCL_SOCKET_IFNAME=lo\n"
                                   "ens: NCCL_SOCKET_IFNAME==ens3\n"
                                   "none: NCCL_SOCKET_IFNAME=nosuchif0\n"
                                   "threads: NCCL_SOCKET_NTHREADS=4\n"
                                   "mixed: NCCL_SHM_DISABLE=1 "
                                   "NCCL_NSOCKS_PERTHREAD=2\n"
                                   "ib: NCCL_IB_HCA=mlx5_0\n"
                                   "algo: NCCL_ALGO=Ring\n"
                                   "other: OMP_NUM_THREADS=2\n"
                                   "tests: NCCL_TESTS_SPLIT_MASK=1\n"
                                   "unset: -NCCL_SOCKET_IFNAME\n",
                                   0);
    struct ncd_tune_scope sc = {.backend = NCD_PERF_BACKEND_SOCKET,
                                .one_host = 1};
    assert_int_equal(ncd_tune_mark_skips(ctx, s, &sc, names), 6);
    /* baseline first, then the file's order */
    assert_string_equal(s->c[0].skip, "");
    assert_non_null(strstr(s->c[1].skip, "shared-memory"));
    assert_non_null(strstr(s->c[2].skip, "loopback"));
    assert_non_null(strstr(s->c[3].skip, "loopback"));
    assert_string_equal(s->c[4].skip, ""); /* selects nothing: it fails */
    assert_string_equal(s->c[5].skip, ""); /* the socket backend reads it */
    assert_string_equal(s->c[6].skip, ""); /* one setting can matter */
    assert_non_null(strstr(s->c[7].skip, "InfiniBand"));
    assert_non_null(strstr(s->c[8].skip, "inside NCCL"));
    assert_string_equal(s->c[9].skip, "");  /* not NCCL's: kept */
    assert_string_equal(s->c[10].skip, ""); /* nccl-tests' own: kept */
    assert_non_null(strstr(s->c[11].skip, "loopback"));
    /* across hosts the interface matters; the SHM one still cannot */
    sc.one_host = 0;
    assert_int_equal(ncd_tune_mark_skips(ctx, s, &sc, NULL), 3);
    assert_string_equal(s->c[2].skip, "");
    assert_non_null(strstr(s->c[1].skip, "shared-memory"));
    /* unknown interface names: NCCL_SOCKET_IFNAME is kept */
    sc.one_host = 1;
    assert_int_equal(ncd_tune_mark_skips(ctx, s, &sc, NULL), 3);
    free(s);
    ncd_ctx_free(ctx);
}

static void test_skips_nccl_one_host(void **state)
{
    (void)state;
    struct ncd_ctx *ctx = ctx_with(NULL);
    const char *text = "ib: NCCL_IB_HCA=mlx5_0\n"
                       "net: NCCL_NET_GDR_LEVEL=PHB\n"
                       "shm: NCCL_SHM_DISABLE=1\n"
                       "ib-no-p2p: NCCL_IB_HCA=mlx5_0 NCCL_P2P_DISABLE=1 "
                       "NCCL_SHM_DISABLE=1\n";
    struct ncd_tune_set *s = parse(ctx, text, 0);
    struct ncd_tune_scope sc = {.backend = NCD_PERF_BACKEND_NCCL,
                                .one_host = 1};
    assert_int_equal(ncd_tune_mark_skips(ctx, s, &sc, names), 2);
    assert_non_null(strstr(s->c[1].skip, "P2P/SHM"));
    assert_non_null(strstr(s->c[2].skip, "P2P/SHM"));
    assert_string_equal(s->c[3].skip, ""); /* SHM matters to NCCL */
    assert_string_equal(s->c[4].skip, ""); /* forced onto the network */
    sc.one_host = 0;
    assert_int_equal(ncd_tune_mark_skips(ctx, s, &sc, NULL), 0);
    free(s);
    ncd_ctx_free(ctx);
    /* the environment already disables P2P and SHM: the network is used */
    char *env[] = {"NCCL_P2P_DISABLE=1", "NCCL_SHM_DISABLE=1", NULL};
    ctx = ctx_with(env);
    s = parse(ctx, text, 0);
    sc.one_host = 1;
    assert_int_equal(ncd_tune_mark_skips(ctx, s, &sc, names), 0);
    free(s);
    ncd_ctx_free(ctx);
}

static void test_scope_text(void **state)
{
    (void)state;
    struct ncd_strbuf sb = {0};
    struct ncd_tune_scope sc = {.backend = NCD_PERF_BACKEND_SOCKET,
                                .one_host = 1};
    ncd_tune_scope_text(&sc, &sb);
    assert_non_null(strstr(ncd_sb_str(&sb), "TCP between the ranks on this "
                                            "host"));
    assert_non_null(strstr(ncd_sb_str(&sb), "not NCCL's GPU path"));
    ncd_sb_release(&sb);
    sc.backend = NCD_PERF_BACKEND_NCCL;
    ncd_tune_scope_text(&sc, &sb);
    assert_non_null(strstr(ncd_sb_str(&sb), "NCCL on the GPUs of this host"));
    ncd_sb_release(&sb);
}

/* A label of n characters "L...L: NCCL_SOCKET_NTHREADS=2". */
static char *long_label(size_t n)
{
    char *t = malloc(n + 64);
    memset(t, 'L', n);
    snprintf(t + n, 64, ": NCCL_SOCKET_NTHREADS=2\n");
    return t;
}

static void test_labels_never_cut(void **state)
{
    (void)state;
    struct ncd_ctx *ctx = ctx_with(NULL);
    char *t = long_label(NCD_TUNE_LABEL_MAX);
    struct ncd_tune_set *s = parse(ctx, t, 0);
    assert_int_equal(strlen(s->c[1].label), NCD_TUNE_LABEL_MAX);
    free(s);
    free(t);
    t = long_label(NCD_TUNE_LABEL_MAX + 1);
    s = parse(ctx, t, NCD_ERANGE);
    assert_non_null(strstr(ncd_ctx_errdetail(ctx), "at most 2559"));
    free(s);
    free(t);
    /* a value over the limit is refused, not cut */
    char v[NCD_TUNE_VALUE_MAX + 40] = "NCCL_SOCKET_IFNAME=";
    memset(v + strlen(v), 'x', NCD_TUNE_VALUE_MAX + 1);
    s = parse(ctx, v, NCD_ERANGE);
    free(s);
    /* 8 variables with long values: the generated label holds them all */
    struct ncd_strbuf line = {0};
    for (int i = 0; i < NCD_TUNE_MAX_VARS; i++) {
        ncd_sb_printf(&line, "NCCL_VAR_%d=", i);
        for (int k = 0; k < 200; k++)
            ncd_sb_putc(&line, 'a' + i);
        ncd_sb_putc(&line, ' ');
    }
    s = parse(ctx, ncd_sb_str(&line), 0);
    assert_int_equal(s->c[1].nvars, NCD_TUNE_MAX_VARS);
    assert_non_null(strstr(s->c[1].label, "NCCL_VAR_7=hhhh"));
    assert_int_equal(strlen(s->c[1].label), strlen(ncd_sb_str(&line)) - 1);
    /* the table shows a label longer than the column whole, on its line */
    struct ncd_tune_runs runs[2] = {{.n = 1, .busbw = {1}},
                                    {.n = 1, .busbw = {1}}};
    struct ncd_tune_stat st[2];
    struct ncd_findings fl = {0};
    int win = ncd_tune_summarize(s, runs, 0, st, &fl);
    struct ncd_strbuf out = {0};
    ncd_tune_render_text(&out, s, runs, st, win, "busbw");
    char want[NCD_TUNE_LABEL_MAX + 8];
    snprintf(want, sizeof want, "\n  %s\n", s->c[1].label);
    assert_non_null(strstr(ncd_sb_str(&out), want));
    ncd_sb_release(&out);
    ncd_sb_release(&line);
    ncd_findings_release(&fl);
    free(s);
    ncd_ctx_free(ctx);
}

static void test_keep_command(void **state)
{
    (void)state;
    struct ncd_ctx *ctx = ctx_with(NULL);
    struct ncd_tune_set *s = parse(
        ctx, "NCCL_SOCKET_IFNAME='=ens3 x' -NCCL_IB_HCA MY_OPT=\"a'b$c\"\n",
        0);
    struct ncd_strbuf sb = {0};
    ncd_tune_keep_command(&s->c[1], &sb);
    assert_string_equal(ncd_sb_str(&sb),
                        "nccl-doctor env --write ~/.bashrc --set "
                        "'NCCL_SOCKET_IFNAME==ens3 x' --unset NCCL_IB_HCA "
                        "--set 'MY_OPT=a'\\''b$c'");
    ncd_sb_release(&sb);
    free(s);
    ncd_ctx_free(ctx);
}

static void test_interrupted(void **state)
{
    (void)state;
    struct ncd_ctx *ctx = ctx_with(NULL);
    struct ncd_tune_set *s = parse(ctx, "fast: NCCL_SOCKET_NTHREADS=4\n"
                                        "later: NCCL_SOCKET_NTHREADS=8\n",
                                   0);
    /* the baseline and `fast` ran once, `fast` clearly faster; `later`
     * never ran: interrupted, nothing is chosen, nobody is blamed */
    struct ncd_tune_runs runs[3] = {{.n = 1, .busbw = {1.0}},
                                    {.n = 1, .busbw = {5.0}},
                                    {0}};
    struct ncd_tune_stat st[3];
    struct ncd_findings fl = {0};
    assert_int_equal(ncd_tune_summarize(s, runs, 0, st, &fl), 1);
    ncd_findings_release(&fl);
    assert_int_equal(ncd_tune_summarize(s, runs, 1, st, &fl), -1);
    const struct ncd_finding *f =
        ncd_findings_find(&fl, "perf.config.tune-interrupted");
    assert_non_null(f);
    assert_int_equal(f->severity, NCD_SEV_INFO);
    assert_null(ncd_findings_find(&fl, "perf.config.tuned"));
    assert_null(ncd_findings_find(&fl, "perf.config.candidate-failed"));
    struct ncd_strbuf out = {0};
    ncd_tune_render_text(&out, s, runs, st, -1, "busbw");
    assert_non_null(strstr(ncd_sb_str(&out), "not run"));
    assert_null(strstr(ncd_sb_str(&out), "failed"));
    ncd_sb_release(&out);
    ncd_findings_release(&fl);
    free(s);
    ncd_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_skips_socket_one_host),
        cmocka_unit_test(test_skips_nccl_one_host),
        cmocka_unit_test(test_scope_text),
        cmocka_unit_test(test_labels_never_cut),
        cmocka_unit_test(test_keep_command),
        cmocka_unit_test(test_interrupted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
