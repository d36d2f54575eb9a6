/* SPDX-License-Identifier: MIT */
/*
 * perf: collective table (counts, busbw factors, sweep) against
 * hand-computed tables, the nccl-tests output format against the format
 * strings and the sample of ../shared/reference/nccl-tests-and-errors.md
 * A2, JSON keys, the data checker and the reduction kernels.  Launchers:
 * test_job.c.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ncd/ctx.h"
#include "ncd/error.h"
#include "ncd/perf.h"
#include "ncd/strbuf.h"
#include "perf/perf_int.h"

/* ---- counts ------------------------------------------------------------ */

struct count_case {
    enum ncd_perf_coll c;
    size_t bytes, es;
    int n, rank;
    size_t send, recv, param, soff, roff, size;
};

/* Hand-computed: base = (bytes/es/n) & ~(16/es - 1). */
static const struct count_case count_cases[] = {
    /* all_reduce: count = bytes/es */
    {NCD_COLL_ALL_REDUCE, 8, 4, 2, 0, 2, 2, 2, 0, 0, 8},
    {NCD_COLL_ALL_REDUCE, 134217728, 4, 8, 3, 33554432, 33554432, 33554432,
     0, 0, 134217728},
    {NCD_COLL_ALL_REDUCE, 7, 2, 3, 1, 3, 3, 3, 0, 0, 6},
    /* all_gather 1M float on 8 ranks: c=262144, base=32768 */
    {NCD_COLL_ALL_GATHER, 1048576, 4, 8, 5, 32768, 262144, 32768, 163840, 0,
     1048576},
    /* all_gather 8 B float on 2 ranks: c=2, c/n=1, &~3 = 0 */
    {NCD_COLL_ALL_GATHER, 8, 4, 2, 1, 0, 0, 0, 0, 0, 0},
    /* 100 B int8 on 3 ranks: c/n=33, &~15 = 32 */
    {NCD_COLL_ALL_GATHER, 100, 1, 3, 2, 32, 96, 32, 64, 0, 96},
    /* reduce_scatter 1000 B double on 3: c=125, c/n=41, &~1=40 */
    {NCD_COLL_REDUCE_SCATTER, 1000, 8, 3, 2, 120, 40, 40, 0, 80, 960},
    {NCD_COLL_BROADCAST, 4096, 2, 4, 0, 2048, 2048, 2048, 0, 0, 4096},
    {NCD_COLL_REDUCE, 4096, 8, 4, 0, 512, 512, 512, 0, 0, 4096},
    /* alltoall 1M float on 3: c=262144, c/n=87381, &~3 = 87380 */
    {NCD_COLL_ALLTOALL, 1048576, 4, 3, 1, 262140, 262140, 87380, 0, 0,
     1048560},
    {NCD_COLL_GATHER, 64, 4, 4, 3, 4, 16, 4, 12, 0, 64},
    {NCD_COLL_SCATTER, 64, 4, 4, 3, 16, 4, 4, 0, 12, 64},
    {NCD_COLL_SENDRECV, 33, 1, 2, 1, 33, 33, 33, 0, 0, 33},
    {NCD_COLL_HYPERCUBE, 4096, 4, 4, 2, 256, 1024, 256, 512, 0, 4096},
};

static void test_counts(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof count_cases / sizeof count_cases[0]; i++) {
        const struct count_case *t = &count_cases[i];
        struct ncd_perf_counts k;
        ncd_perf_counts(t->c, t->bytes, t->es, t->n, t->rank, &k);
        if (k.sendcount != t->send || k.recvcount != t->recv ||
            k.paramcount != t->param || k.send_inplace_off != t->soff ||
            k.recv_inplace_off != t->roff || k.bytes != t->size) {
            fail_msg("case %zu (%s %zu B es %zu n %d): got send %zu recv %zu "
                     "param %zu soff %zu roff %zu size %zu",
                     i, ncd_perf_coll_name(t->c), t->bytes, t->es, t->n,
                     k.sendcount, k.recvcount, k.paramcount,
                     k.send_inplace_off, k.recv_inplace_off, k.bytes);
        }
    }
}

static void test_busbw(void **state)
{
    (void)state;
    /* factors for n = 8 (doc/PERFORMANCE.md) */
    const double f8[NCD_COLL__COUNT] = {
        [NCD_COLL_ALL_REDUCE] = 14.0 / 8, [NCD_COLL_ALL_GATHER] = 7.0 / 8,
        [NCD_COLL_REDUCE_SCATTER] = 7.0 / 8, [NCD_COLL_BROADCAST] = 1,
        [NCD_COLL_REDUCE] = 1,           [NCD_COLL_ALLTOALL] = 7.0 / 8,
        [NCD_COLL_SENDRECV] = 1,         [NCD_COLL_GATHER] = 7.0 / 8,
        [NCD_COLL_SCATTER] = 7.0 / 8,    [NCD_COLL_HYPERCUBE] = 1,
        [NCD_COLL_ALLTOALLV] = 7.0 / 8,
    };
    for (int c = 0; c < NCD_COLL__COUNT; c++)
        assert_true(fabs(ncd_perf_busbw_factor(c, 8) - f8[c]) < 1e-12);
    assert_true(fabs(ncd_perf_busbw_factor(NCD_COLL_ALL_REDUCE, 2) - 1.0) <
                1e-12);
    assert_true(ncd_perf_busbw_factor(NCD_COLL_ALL_REDUCE, 1) == 0.0);

    /* 128 MiB all_reduce on 8 ranks in 1234.5 us */
    struct ncd_perf_counts k;
    double a, b;
    ncd_perf_counts(NCD_COLL_ALL_REDUCE, 134217728, 4, 8, 0, &k);
    ncd_perf_bw(NCD_COLL_ALL_REDUCE, &k, 4, 8, 1234.5e-6, &a, &b);
    assert_true(fabs(a - 134217728 / 1234.5e-6 / 1e9) < 1e-9);
    assert_true(fabs(b - a * 1.75) < 1e-9);
    /* hypercube: algbw = base * es * (n-1) / t */
    ncd_perf_counts(NCD_COLL_HYPERCUBE, 4096, 4, 4, 0, &k);
    ncd_perf_bw(NCD_COLL_HYPERCUBE, &k, 4, 4, 1e-6, &a, &b);
    assert_true(fabs(a - 256.0 * 4 * 3 / 1e-6 / 1e9) < 1e-9);
    assert_true(fabs(b - a) < 1e-12);
    /* all_gather uses the total size */
    ncd_perf_counts(NCD_COLL_ALL_GATHER, 1048576, 4, 8, 0, &k);
    ncd_perf_bw(NCD_COLL_ALL_GATHER, &k, 4, 8, 1e-3, &a, &b);
    assert_true(fabs(a - 1.048576) < 1e-12);
    assert_true(fabs(b - 1.048576 * 7 / 8) < 1e-12);
}

static void test_sweep(void **state)
{
    (void)state;
    size_t s[64];
    size_t n = ncd_perf_sweep(8, 134217728, 1 << 20, 2, s, 64);
    assert_int_equal(n, 25);
    assert_int_equal(s[0], 8);
    assert_int_equal(s[1], 16);
    assert_int_equal(s[24], 134217728);
    n = ncd_perf_sweep(1000, 4000, 1000, 1, s, 64);
    assert_int_equal(n, 4);
    assert_int_equal(s[3], 4000);
    n = ncd_perf_sweep(3, 100, 0, 3, s, 64); /* 3 9 27 81 */
    assert_int_equal(n, 4);
    assert_int_equal(s[3], 81);
    assert_int_equal(ncd_perf_sweep(10, 5, 1, 2, s, 64), 0);
    assert_int_equal(ncd_perf_sweep(1, 5, 0, 1, s, 64), 0);
    /* cap respected, count still full */
    assert_int_equal(ncd_perf_sweep(1, 1024, 0, 2, s, 2), 11);
    /* 0 with a factor does not loop for ever */
    assert_int_equal(ncd_perf_sweep(0, 64, 0, 2, s, 64), 1);
}

static void test_parse_size(void **state)
{
    (void)state;
    size_t v;
    assert_int_equal(ncd_perf_parse_size("8", &v), 0);
    assert_int_equal(v, 8);
    assert_int_equal(ncd_perf_parse_size("128M", &v), 0);
    assert_int_equal(v, 134217728);
    assert_int_equal(ncd_perf_parse_size("1g", &v), 0);
    assert_int_equal(v, 1073741824);
    assert_int_equal(ncd_perf_parse_size("0.5G", &v), 0);
    assert_int_equal(v, 536870912);
    assert_int_equal(ncd_perf_parse_size("64k", &v), 0);
    assert_int_equal(v, 65536);
    assert_int_equal(ncd_perf_parse_size("1MB", &v), 0);
    assert_int_equal(v, 1048576);
    assert_int_equal(ncd_perf_parse_size("12X", &v), NCD_EINVAL);
    assert_int_equal(ncd_perf_parse_size("-1", &v), NCD_EINVAL);
    assert_int_equal(ncd_perf_parse_size("", &v), NCD_EINVAL);
    assert_int_equal(ncd_perf_parse_size("abc", &v), NCD_EINVAL);
}

static void test_names(void **state)
{
    (void)state;
    assert_int_equal(ncd_perf_coll_from_name("all_reduce"), NCD_COLL_ALL_REDUCE);
    assert_int_equal(ncd_perf_coll_from_name("/x/y/all_gather_perf"),
                     NCD_COLL_ALL_GATHER);
    assert_int_equal(ncd_perf_coll_from_name("ReduceScatter"),
                     NCD_COLL_REDUCE_SCATTER);
    assert_int_equal(ncd_perf_coll_from_name("nosuch"), -1);
    assert_int_equal(ncd_perf_dtype_from_name("bfloat16"), NCD_DT_BFLOAT16);
    assert_int_equal(ncd_perf_dtype_from_name("fp16"), NCD_DT_HALF);
    assert_int_equal(ncd_perf_dtype_from_name("float128"), -1);
    assert_int_equal(ncd_perf_op_from_name("mulsum"), NCD_OP_MULSUM);
    assert_string_equal(ncd_perf_redop_label(NCD_COLL_ALL_GATHER, NCD_OP_MAX),
                        "none");
    assert_string_equal(ncd_perf_redop_label(NCD_COLL_HYPERCUBE, NCD_OP_SUM),
                        "");
    assert_string_equal(ncd_perf_redop_label(NCD_COLL_SENDRECV, NCD_OP_PROD),
                        "prod");
    assert_string_equal(ncd_perf_redop_label(NCD_COLL_REDUCE, NCD_OP_AVG),
                        "avg");
}

/* ---- formatter --------------------------------------------------------- */

static void test_fmt_num(void **state)
{
    (void)state;
    char b[16];
    ncd_perf_fmt_num(30.123, 7, b);
    assert_string_equal(b, "  30.12");
    ncd_perf_fmt_num(1234.5, 7, b);
    assert_string_equal(b, "1234.50");
    ncd_perf_fmt_num(17361.84, 7, b);
    assert_string_equal(b, "17361.8");
    ncd_perf_fmt_num(126084.4, 7, b);
    assert_string_equal(b, " 126084");
    ncd_perf_fmt_num(12345678.0, 7, b);
    assert_string_equal(b, "1.2e+07");
    ncd_perf_fmt_num(190.26, 6, b);
    assert_string_equal(b, "190.26");
    ncd_perf_fmt_num(1190.26, 6, b);
    assert_string_equal(b, "1190.3");
    ncd_perf_fmt_num(123456.0, 6, b);
    assert_string_equal(b, "123456");
    ncd_perf_fmt_num(1234567.0, 6, b);
    assert_string_equal(b, " 1e+06");
    ncd_perf_fmt_num(0.001, 6, b);
    assert_string_equal(b, "  0.00");
}

static struct ncd_perf_opts opts_allreduce(void)
{
    struct ncd_perf_opts o;
    ncd_perf_opts_default(&o);
    o.minbytes = 8;
    o.maxbytes = 134217728;
    o.stepfactor = 2;
    o.nthreads = 1;
    o.ngpus = 8;
    return o;
}

/* The sample of nccl-tests-and-errors.md A2, byte for byte. */
static void test_fmt_table(void **state)
{
    (void)state;
    struct ncd_perf_opts o = opts_allreduce();
    struct ncd_strbuf sb = {0};
    ncd_perf_fmt_header(&sb, &o);
    const char *hdr =
        "#\n"
        "#                                                              "
        "out-of-place                       in-place          \n"
        "#       size         count      type   redop    root     time   "
        "algbw   busbw  #wrong     time   algbw   busbw  #wrong \n"
        "#        (B)    (elements)                               (us)  "
        "(GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         \n";
    assert_string_equal(ncd_sb_str(&sb), hdr);
    ncd_sb_reset(&sb);

    struct ncd_perf_row r = {.bytes = 8, .count = 2, .type = "float",
                             .redop = "sum", .root = -1,
                             .oop = {30.12, 0.00, 0.00, 0},
                             .ip = {29.87, 0.00, 0.00, 0}};
    ncd_perf_fmt_row(&sb, &o, &r);
    assert_string_equal(ncd_sb_str(&sb),
                        "           8             2     float     sum      -1"
                        "    30.12    0.00    0.00       0    29.87    0.00"
                        "    0.00       0\n");
    ncd_sb_reset(&sb);
    struct ncd_perf_row r2 = {.bytes = 134217728, .count = 33554432,
                              .type = "float", .redop = "sum", .root = -1,
                              .oop = {1234.50, 108.72, 190.26, 0},
                              .ip = {1230.10, 109.11, 190.95, 0}};
    ncd_perf_fmt_row(&sb, &o, &r2);
    assert_string_equal(ncd_sb_str(&sb),
                        "   134217728      33554432     float     sum      -1"
                        "  1234.50  108.72  190.26       0  1230.10  109.11"
                        "  190.95       0\n");

    /* Column by column against the nccl-tests format strings. */
    ncd_sb_reset(&sb);
    struct ncd_perf_row r3 = {.bytes = 4096, .count = 1024, .type = "bfloat16",
                              .redop = "mulsum", .root = 3,
                              .oop = {99999.9, 1234.5, 0.004, 12},
                              .ip = {7.0, 65.4321, 3.5, -1}};
    ncd_perf_fmt_row(&sb, &o, &r3);
    char exp[512], t1[16], t2[16];
    int n = snprintf(exp, sizeof exp, "%12li  %12li  %8s  %6s  %6s", 4096L,
                     1024L, "bfloat16", "mulsum", "     3");
    ncd_perf_fmt_num(99999.9, 7, t1);
    n += snprintf(exp + n, sizeof exp - (size_t)n, "  %7s  %6s  %6s  %6g",
                  t1, "1234.5", "  0.00", 12.0);
    ncd_perf_fmt_num(7.0, 7, t2);
    n += snprintf(exp + n, sizeof exp - (size_t)n, "  %7s  %6s  %6s    N/A\n",
                  t2, " 65.43", "  3.50");
    assert_string_equal(ncd_sb_str(&sb), exp);
    /* a script splitting on whitespace sees 13 fields */
    char *copy = strdup(ncd_sb_str(&sb));
    int fields = 0;
    for (char *tok = strtok(copy, " \n"); tok; tok = strtok(NULL, " \n"))
        fields++;
    free(copy);
    assert_int_equal(fields, 13);

    ncd_sb_reset(&sb);
    ncd_perf_fmt_footer(&sb, &o, 0, 95.4321, NULL, NULL);
    assert_string_equal(ncd_sb_str(&sb),
                        "# Out of bounds values : 0 OK\n"
                        "# Avg bus bandwidth    : 95.4321 \n"
                        "#\n"
                        "# Collective test concluded: all_reduce_perf\n"
                        "#\n"
                        "\n");
    ncd_sb_reset(&sb);
    o.min_bw = 200;
    ncd_perf_fmt_footer(&sb, &o, 2, 95.4321, NULL, "boom");
    assert_string_equal(ncd_sb_str(&sb),
                        "# Out of bounds values : 2 FAILED\n"
                        "# Avg bus bandwidth    : 95.4321 FAILED\n"
                        "#\n"
                        "# Collective test concluded: all_reduce_perf\n"
                        "#\n"
                        "# error: boom\n");
    ncd_sb_reset(&sb);
    o.min_bw = 100; /* 95.4 >= 0.9 x 100 */
    ncd_perf_fmt_footer(&sb, &o, 0, 95.4321, NULL, NULL);
    assert_non_null(strstr(ncd_sb_str(&sb), "95.4321 OK\n"));
    ncd_sb_release(&sb);
}

static void test_fmt_flags(void **state)
{
    (void)state;
    struct ncd_perf_opts o = opts_allreduce();
    o.report_cputime = 1;
    o.report_timestamps = 1;
    struct ncd_strbuf sb = {0};
    ncd_perf_fmt_header(&sb, &o);
    char exp[1024];
    snprintf(exp, sizeof exp,
             "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  "
             "%6s %*s\n",
             "size", "count", "type", "redop", "root", "cputime", "algbw",
             "busbw", "#wrong", "cputime", "algbw", "busbw", "#wrong", 19,
             "timestamp");
    assert_non_null(strstr(ncd_sb_str(&sb), exp));
    assert_non_null(strstr(ncd_sb_str(&sb), "%Y-%m-%d %H:%M:%S\n"));
    ncd_sb_reset(&sb);
    struct ncd_perf_row r = {.bytes = 8, .count = 2, .type = "float",
                             .redop = "sum", .root = -1,
                             .oop = {1, 2, 3, 0}, .ip = {1, 2, 3, 0}};
    snprintf(r.timestamp, sizeof r.timestamp, "2026-01-02 03:04:05");
    ncd_perf_fmt_row(&sb, &o, &r);
    assert_non_null(strstr(ncd_sb_str(&sb), "       0  2026-01-02 03:04:05\n"));
    ncd_sb_reset(&sb);

    struct ncd_perf_device d = {.rank = 0, .group = 0, .pid = 12345,
                                .host = "node1", .device = 0,
                                .busid = "0000:1b:00",
                                .name = "NVIDIA H100 80GB HBM3"};
    o = opts_allreduce();
    o.blocking = 1;
    ncd_perf_fmt_preamble(&sb, &o, 23007, &d, 1);
    assert_string_equal(
        ncd_sb_str(&sb),
        "# nccl-tests version 2.19.6 nccl-headers=23007 nccl-library=23007\n"
        "# Collective test starting: all_reduce_perf\n"
        "# nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step: 2(factor) "
        "warmup iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0 "
        "unalign: 0\n"
        "# Blocking Enabled: wait and barrier after each inner iteration "
        "(-m) \n"
        "#\n"
        "# Using devices\n"
        "#  Rank  0 Group  0 Pid  12345 on      node1 device  0 [0000:1b:00] "
        "NVIDIA H100 80GB HBM3\n");
    ncd_sb_reset(&sb);
    o.stepfactor = 1;
    o.stepbytes = 1048576;
    ncd_perf_fmt_preamble(&sb, &o, 0, NULL, 0);
    assert_non_null(strstr(ncd_sb_str(&sb), "step: 1048576(bytes)"));
    ncd_sb_release(&sb);
}

static void test_json(void **state)
{
    (void)state;
    struct ncd_perf_opts o = opts_allreduce();
    char *argv[] = {"all_reduce_perf", "-b", "8", NULL};
    /* a hostile environment: secrets under every usual name, in URLs
     * inside variables that are kept, and variables that do not matter */
    char *envp[] = {"A=1",
                    "HF_TOKEN=hf_SECRETSECRET1",
                    "AWS_SECRET_ACCESS_KEY=SECRETSECRET2",
                    "NCCL_SOCKET_IFNAME=eth0",
                    "TORCH_HUB_TOKEN=SECRETSECRET3",
                    "SLURM_DB_PASSWORD=SECRETSECRET4",
                    "CUDA_API_KEY=SECRETSECRET5",
                    "MASTER_ADDR=https://alice:SECRETSECRET6@10.0.0.1",
                    "PADDLE_TRAINER_ENDPOINTS=bob:SECRETSECRET7@10.0.0.2:617,"
                    "10.0.0.3:617",
                    "NCCL_DEBUG_FILE=s3://SECRETSECRET8@bucket/log.%h",
                    "OMPI_MCA_x=user@host",
                    "GITHUB_TOKEN=SECRETSECRET9",
                    "PS1=$ ",
                    NULL};
    struct ncd_perf_device d = {.rank = 0, .pid = 7, .host = "h",
                                .busid = "0000:00:00", .name = "x"};
    json_t *doc = ncd_perf_json_new(&o, argv, envp, 23007, "socket",
                                    "socket (TCP)", &d, 1, "t0");
    assert_non_null(doc);
    char *dump = json_dumps(json_object_get(doc, "env"), JSON_COMPACT);
    assert_non_null(dump);
    assert_null(strstr(dump, "SECRET"));
    assert_string_equal(
        dump, "[\"NCCL_SOCKET_IFNAME=eth0\",\"TORCH_HUB_TOKEN=<redacted>\","
              "\"SLURM_DB_PASSWORD=<redacted>\",\"CUDA_API_KEY=<redacted>\","
              "\"MASTER_ADDR=https://<redacted>@10.0.0.1\","
              "\"PADDLE_TRAINER_ENDPOINTS=<redacted>@10.0.0.2:617,"
              "10.0.0.3:617\","
              "\"NCCL_DEBUG_FILE=s3://<redacted>@bucket/log.%h\","
              "\"OMPI_MCA_x=user@host\"]");
    free(dump);
    assert_string_equal(json_string_value(json_object_get(doc, "backend")),
                        "socket");
    struct ncd_perf_row r = {.bytes = 8, .count = 2, .type = "float",
                             .redop = "sum", .root = -1,
                             .oop = {1.5, 2, 3, 0}, .ip = {NAN, 2, 3, -1}};
    assert_int_equal(ncd_perf_json_add_row(doc, &o, &r, "all_reduce_perf"), 0);
    assert_int_equal(ncd_perf_json_finish(doc, &o, 0, 3.0, NULL, "t1"), 0);
    assert_int_equal(json_integer_value(json_object_get(doc, "version")), 3);
    json_t *cfg = json_object_get(doc, "config");
    assert_int_equal(json_integer_value(json_object_get(cfg, "step_factor")),
                     2);
    assert_null(json_object_get(cfg, "step_bytes"));
    assert_string_equal(
        json_string_value(json_object_get(cfg, "blocking_collectives")),
        "false");
    json_t *row = json_array_get(json_object_get(doc, "results"), 0);
    assert_string_equal(json_string_value(json_object_get(row, "root")),
                        "    -1");
    json_t *ip = json_object_get(row, "in_place");
    assert_string_equal(json_string_value(json_object_get(ip, "time")), "nan");
    assert_true(json_is_null(json_object_get(ip, "nwrong")));
    json_t *bw = json_object_get(doc, "average_bus_bandwidth");
    assert_string_equal(json_string_value(json_object_get(bw, "okay")),
                        "unchecked");
    const char *keys[] = {"version", "start_time", "args", "env",
                          "nccl_version", "backend", "backend_info",
                          "config", "results",
                          "out_of_bounds", "average_bus_bandwidth", "errors",
                          "end_time"};
    /* key order as nccl-tests writes it */
    void *it = json_object_iter(doc);
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        assert_non_null(it);
        assert_string_equal(json_object_iter_key(it), keys[i]);
        it = json_object_iter_next(doc, it);
    }
    json_decref(doc);
}

/* -I: nccl-tests src/util.cu writeResultHeader / writePerIterReport
 * (v2.19.6): the header and a row byte for byte, 21 fields a row. */
static void test_fmt_per_iter(void **state)
{
    (void)state;
    struct ncd_perf_opts o = opts_allreduce();
    o.per_iter_timing = 1;
    struct ncd_strbuf sb = {0};
    ncd_perf_fmt_header(&sb, &o);
    assert_string_equal(
        ncd_sb_str(&sb),
        "#\n"
        "#                                                                 "
        "out-of-place (+ per-iteration)                                "
        "in-place (+ per-iteration)\n"
        "#       size         count      type   redop    root     time   "
        "algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%     time"
        "   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv% \n"
        "#        (B)    (elements)                               (us)  "
        "(GB/s)  (GB/s)             (us)     (us)     (us)      (%)     (us)"
        "  (GB/s)  (GB/s)             (us)     (us)     (us)      (%) \n");
    ncd_sb_reset(&sb);
    double t[3] = {1, 2, 3};
    struct ncd_perf_iterstats a = {.n = 3, .times_us = t, .min_us = 28.5,
                                   .max_us = 35.25, .p99_us = 35.25,
                                   .cv_pct = 7.123};
    struct ncd_perf_iterstats b = {.n = 3, .times_us = t, .min_us = 27.0,
                                   .max_us = 123456.7, .p99_us = 99999.99,
                                   .cv_pct = 150.0};
    struct ncd_perf_row r = {.bytes = 8, .count = 2, .type = "float",
                             .redop = "sum", .root = -1,
                             .oop = {30.12, 0, 0, 0, 0, &a},
                             .ip = {29.87, 0, 0, -1, 0, &b}};
    ncd_perf_fmt_row(&sb, &o, &r);
    assert_string_equal(ncd_sb_str(&sb),
                        "           8             2     float     sum      -1"
                        "    30.12    0.00    0.00       0    28.50    35.25"
                        "    35.25     7.12    29.87    0.00    0.00    N/A"
                        "    27.00   123457   100000   150.00\n");
    /* -S: the timestamp still ends the row; header gains its column */
    o.report_timestamps = 1;
    snprintf(r.timestamp, sizeof r.timestamp, "2026-01-02 03:04:05");
    ncd_sb_reset(&sb);
    ncd_perf_fmt_row(&sb, &o, &r);
    assert_non_null(strstr(ncd_sb_str(&sb), "150.00  2026-01-02 03:04:05\n"));
    ncd_sb_reset(&sb);
    ncd_perf_fmt_header(&sb, &o);
    assert_non_null(strstr(ncd_sb_str(&sb), "i_cv%           timestamp\n"));
    assert_non_null(strstr(ncd_sb_str(&sb), "(%)   %Y-%m-%d %H:%M:%S\n"));
    /* the preamble line */
    ncd_sb_reset(&sb);
    o.per_iter_skip = 2;
    ncd_perf_fmt_preamble(&sb, &o, 23007, NULL, 0);
    assert_non_null(strstr(ncd_sb_str(&sb),
                           "unalign: 0\n# Per-Iteration Report: CUDA event "
                           "timing; i_* uses max over process rows; summary "
                           "skips first 2 iterations \n#\n"));
    ncd_sb_reset(&sb);
    ncd_perf_fmt_preamble(&sb, &o, 0, NULL, 0);
    assert_non_null(strstr(ncd_sb_str(&sb), "# Per-Iteration Report: host "
                                            "clock timing; i_* uses max"));
    ncd_sb_release(&sb);
}

/* -G: graph: 0 in the nThread line and a line saying why, per backend. */
static void test_fmt_graph(void **state)
{
    (void)state;
    struct ncd_perf_opts o = opts_allreduce();
    struct ncd_perf_optmsg m;
    assert_int_equal(ncd_perf_opt_apply(&o, 'G', "5", &m), 0);
    assert_int_equal(o.cudagraph, 0);
    assert_int_equal(o.cudagraph_asked, 5);
    struct ncd_strbuf sb = {0};
    ncd_perf_fmt_preamble(&sb, &o, 0, NULL, 0);
    assert_non_null(strstr(ncd_sb_str(&sb), "validation: 1 graph: 0 "
                                            "unalign: 0\n"));
    assert_non_null(strstr(
        ncd_sb_str(&sb),
        "\n# CUDA graph launches (-G 5): not applicable to the socket "
        "backend (host buffers, no CUDA stream to capture); graph: 0, every "
        "operation is issued on its own \n#\n# Using devices\n"));
    ncd_sb_reset(&sb);
    ncd_perf_fmt_preamble(&sb, &o, 23007, NULL, 0);
    assert_non_null(strstr(
        ncd_sb_str(&sb),
        "\n# CUDA graph launches (-G 5): not done by nccl-doctor; graph: 0, "
        "every NCCL operation is launched on its own, so times include the "
        "per-launch host overhead a graph replay would hide \n"));
    ncd_sb_reset(&sb);
    o.cudagraph_asked = 0;
    ncd_perf_fmt_preamble(&sb, &o, 0, NULL, 0);
    assert_null(strstr(ncd_sb_str(&sb), "CUDA graph"));
    ncd_sb_release(&sb);
}

/* computeIterStats by hand: nearest-rank percentiles, population stdev. */
static void test_iter_stats(void **state)
{
    (void)state;
    double t[5] = {10, 4, 1, 3, 2};
    struct ncd_perf_iterstats st;
    memset(&st, 0, sizeof st);
    assert_int_equal(ncd_perf_iter_stats(t, 5, 1, &st), 0);
    assert_int_equal(st.n, 5);
    assert_int_equal(st.skipped, 1);
    assert_true(st.times_us == t);
    assert_true(st.min_us == 1 && st.max_us == 4 && st.p50_us == 3);
    assert_true(st.p95_us == 4 && st.p99_us == 4 && st.avg_us == 2.5);
    assert_true(fabs(st.stdev_us - sqrt(1.25)) < 1e-12);
    assert_true(fabs(st.cv_pct - sqrt(1.25) / 2.5 * 100) < 1e-9);
    double h[100];
    for (int i = 0; i < 100; i++)
        h[i] = 99 - i;
    assert_int_equal(ncd_perf_iter_stats(h, 100, 0, &st), 0);
    assert_true(st.p50_us == 50 && st.p95_us == 94 && st.p99_us == 98);
    double z[2] = {0, 0};
    assert_int_equal(ncd_perf_iter_stats(z, 2, 0, &st), 0);
    assert_true(st.cv_pct == 0);
    assert_int_equal(ncd_perf_iter_stats(z, 2, 2, &st), NCD_EINVAL);
}

/* -J with -I: the keys tools/analyze_perf_json.py reads, in nccl-tests'
 * order; per_process_max_times_us only with several processes. */
static void test_json_per_iter(void **state)
{
    (void)state;
    struct ncd_perf_opts o = opts_allreduce();
    o.per_iter_timing = 1;
    o.per_iter_skip = 1;
    char *argv[] = {"all_reduce_perf", NULL};
    json_t *doc = ncd_perf_json_new(&o, argv, NULL, 0, "socket", "test", NULL, 0, "t0");
    assert_non_null(doc);
    json_t *cfg = json_object_get(doc, "config");
    assert_string_equal(
        json_string_value(json_object_get(cfg, "per_iter_timing")), "true");
    assert_int_equal(json_integer_value(json_object_get(cfg, "per_iter_skip")),
                     1);
    double t[3] = {5, 1, 3}, pr[6] = {5, 1, 2, 4, 0.5, 3};
    struct ncd_perf_iterstats a;
    memset(&a, 0, sizeof a);
    assert_int_equal(ncd_perf_iter_stats(t, 3, 1, &a), 0);
    struct ncd_perf_iterstats b = a;
    b.nprocs = 2;
    b.proc_times_us = pr;
    struct ncd_perf_row r = {.bytes = 8, .count = 2, .type = "float",
                             .redop = "sum", .root = -1,
                             .oop = {1, 2, 3, 0, 0, &a},
                             .ip = {1, 2, 3, 0, 0, &b}};
    assert_int_equal(ncd_perf_json_add_row(doc, &o, &r, "x"), 0);
    json_t *row = json_array_get(json_object_get(doc, "results"), 0);
    const char *keys[] = {"size", "count", "type", "redop", "root",
                          "out_of_place", "out_of_place_per_iter",
                          "in_place", "in_place_per_iter",
                          "actual_iterations", "experiment_name"};
    void *it = json_object_iter(row);
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        assert_non_null(it);
        assert_string_equal(json_object_iter_key(it), keys[i]);
        it = json_object_iter_next(row, it);
    }
    assert_null(it);
    const char *pk[] = {"skipped_iterations", "min_us", "max_us", "avg_us",
                        "p50_us", "p95_us", "p99_us", "stdev_us", "cv_pct",
                        "times_us", "per_process_max_times_us"};
    json_t *oi = json_object_get(row, "out_of_place_per_iter");
    json_t *ii = json_object_get(row, "in_place_per_iter");
    it = json_object_iter(ii);
    for (size_t i = 0; i < sizeof pk / sizeof pk[0]; i++) {
        assert_non_null(it);
        assert_string_equal(json_object_iter_key(it), pk[i]);
        it = json_object_iter_next(ii, it);
    }
    assert_null(json_object_get(oi, "per_process_max_times_us"));
    assert_int_equal(json_array_size(json_object_get(oi, "times_us")), 3);
    assert_true(json_real_value(json_object_get(oi, "min_us")) == 1);
    assert_int_equal(json_integer_value(
                         json_object_get(oi, "skipped_iterations")),
                     1);
    json_t *rows = json_object_get(ii, "per_process_max_times_us");
    assert_int_equal(json_array_size(rows), 2);
    assert_true(json_real_value(json_array_get(json_array_get(rows, 1), 2)) ==
                3);
    /* -I off: no per-iteration objects even when a cell has them */
    o.per_iter_timing = 0;
    assert_int_equal(ncd_perf_json_add_row(doc, &o, &r, "x"), 0);
    row = json_array_get(json_object_get(doc, "results"), 1);
    assert_null(json_object_get(row, "out_of_place_per_iter"));
    json_decref(doc);
}

/* nccl-tests' rules between -I, -K and -n (src/common.cu main()). */
static void test_settle(void **state)
{
    (void)state;
    struct ncd_perf_opts o;
    struct ncd_strbuf sb = {0};
    ncd_perf_opts_default(&o);
    o.per_iter_skip = 2;
    ncd_perf_opts_settle(&o, &sb);
    assert_string_equal(ncd_sb_str(&sb),
                        "per-iteration skip (-K) requires per-iteration "
                        "timing (-I 1). Disabling.\n");
    assert_int_equal(o.per_iter_skip, 0);
    ncd_sb_reset(&sb);
    o.per_iter_timing = 1;
    o.per_iter_skip = 20;
    ncd_perf_opts_settle(&o, &sb);
    assert_string_equal(ncd_sb_str(&sb), "per-iteration skip (-K) must be "
                                         "between 0 and 19. Disabling.\n");
    assert_int_equal(o.per_iter_skip, 0);
    assert_int_equal(o.per_iter_timing, 1);
    ncd_sb_reset(&sb);
    o.per_iter_timing = 2;
    ncd_perf_opts_settle(&o, &sb);
    assert_string_equal(ncd_sb_str(&sb), "per-iteration timing (-I) only "
                                         "supports 0=off or 1=on. "
                                         "Disabling.\n");
    assert_int_equal(o.per_iter_timing, 0);
    ncd_sb_reset(&sb);
    o.per_iter_timing = 1;
    o.per_iter_skip = 19;
    ncd_perf_opts_settle(&o, &sb);
    assert_string_equal(ncd_sb_str(&sb), "");
    assert_int_equal(o.per_iter_skip, 19);
    ncd_sb_release(&sb);
}

/* alltoallv: nccl-tests src/alltoallv.cu by hand. */
static void test_alltoallv_counts(void **state)
{
    (void)state;
    struct ncd_perf_counts k;
    /* 1 KiB float on 3 ranks: c = 256, per peer (256/3) & ~3 = 84, total
     * 1008 B; spread 1: d/3 of it -> 336 and 672 B; rank totals 1008 B */
    ncd_perf_counts(NCD_COLL_ALLTOALLV, 1024, 4, 3, 1, &k);
    assert_int_equal(k.paramcount, 84);
    assert_int_equal(k.sendcount, 252);
    assert_int_equal(k.recvcount, 252);
    assert_int_equal(k.bytes, 1008);
    assert_int_equal(ncd_perf_traffic_peer(NULL, 0, 0, 3, 1008), 0);
    assert_int_equal(ncd_perf_traffic_peer(NULL, 0, 1, 3, 1008), 336);
    assert_int_equal(ncd_perf_traffic_peer(NULL, 2, 1, 3, 1008), 672);
    /* 4 ranks, 4096 B: d x 4096 / 6 rounded down to 16: 672 1360 2048 */
    assert_int_equal(ncd_perf_traffic_peer(NULL, 1, 2, 4, 4096), 672);
    assert_int_equal(ncd_perf_traffic_peer(NULL, 1, 3, 4, 4096), 1360);
    assert_int_equal(ncd_perf_traffic_peer(NULL, 1, 0, 4, 4096), 2048);
    ncd_perf_counts(NCD_COLL_ALLTOALLV, 4096, 4, 4, 0, &k);
    assert_int_equal(k.bytes, 4080);
    /* spread 0: uniform, self included; 0.5: the mean of both */
    struct ncd_perf_traffic t;
    ncd_perf_traffic_default(&t);
    t.spread = 0;
    assert_int_equal(ncd_perf_traffic_peer(&t, 1, 1, 4, 4096), 1024);
    t.spread = 0.5;
    assert_int_equal(ncd_perf_traffic_peer(&t, 1, 3, 4, 4096),
                     (size_t)(0.5 * 1024 + 0.5 * 2 * 4096 / 6.0) & ~15u);
    assert_int_equal(ncd_perf_traffic_peer(&t, 0, 0, 1, 1000), 992);
    /* a matrix (nccl-tests' example x 10): cells rounded down to 16 */
    const char m[] = "100  200  150\n50   100  75\n300  150  200\n";
    char why[256];
    ncd_perf_traffic_default(&t);
    t.scale = 10;
    assert_int_equal(ncd_perf_traffic_parse(&t, m, strlen(m), "m.txt", why,
                                            sizeof why),
                     0);
    assert_int_equal(t.dim, 3);
    assert_int_equal(t.matrix, 1);
    assert_int_equal(ncd_perf_traffic_peer(&t, 0, 0, 3, 0), 992);
    assert_int_equal(ncd_perf_traffic_peer(&t, 1, 2, 3, 0), 736);
    ncd_perf_counts_traffic(NCD_COLL_ALLTOALLV, 32 << 10, 1, 3, 2, &t, &k);
    assert_int_equal(k.paramcount, 0);  /* the count column */
    assert_int_equal(k.sendcount, 6480); /* 2992 + 1488 + 2000 */
    assert_int_equal(k.recvcount, 4224); /* 1488 + 736 + 2000 */
    assert_int_equal(k.bytes, 6480);     /* the largest rank total */
    ncd_perf_counts_traffic(NCD_COLL_ALLTOALLV, 32 << 10, 4, 3, 1, &t, &k);
    assert_int_equal(k.sendcount, 556);  /* 2224 B */
    assert_int_equal(k.bytes, 6480);
    /* the summary lines of NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY */
    struct ncd_strbuf sb = {0};
    ncd_perf_fmt_traffic_summary(&sb, &t, 3, 0, 1e-6);
    assert_string_equal(
        ncd_sb_str(&sb),
        "# NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY: mode=matrix nranks=3 "
        "matrix_dim=3 scale=10.000 time_usec=1.00\n"
        "#   rank=0 send_bytes=4480 recv_bytes=4480 alg_bw=4.48 bus_bw=2.99\n"
        "#   rank=1 send_bytes=2224 recv_bytes=4480 alg_bw=4.48 bus_bw=2.99\n"
        "#   rank=2 send_bytes=6480 recv_bytes=4224 alg_bw=6.48 "
        "bus_bw=4.32\n");
    ncd_sb_reset(&sb);
    ncd_perf_fmt_traffic_summary(&sb, NULL, 2, 2048, 2e-6);
    assert_string_equal(
        ncd_sb_str(&sb),
        "# NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY: mode=generated nranks=2 "
        "total_bytes=2048 spread=1.000 time_usec=2.00\n"
        "#   rank=0 send_bytes=2048 recv_bytes=2048 alg_bw=1.02 bus_bw=0.51\n"
        "#   rank=1 send_bytes=2048 recv_bytes=2048 alg_bw=1.02 "
        "bus_bw=0.51\n");
    ncd_sb_release(&sb);
    /* job rules: nranks, -e, -b = -e (status 1, nccl-tests' words) */
    struct ncd_perf_opts o;
    ncd_perf_opts_default(&o);
    o.coll = NCD_COLL_ALLTOALLV;
    o.traffic = &t;
    free(t.path);
    t.path = strdup("m.txt");
    o.minbytes = o.maxbytes = 6480;
    assert_int_equal(ncd_perf_validate(&o, 3, NCD_PERF_BACKEND_SOCKET, why,
                                       sizeof why),
                     0);
    assert_int_equal(ncd_perf_validate(&o, 4, NCD_PERF_BACKEND_SOCKET, why,
                                       sizeof why),
                     1);
    assert_string_equal(why, "Invalid alltoallv traffic matrix, requested "
                             "nranks (4) is larger than matrix size (3) in "
                             "file m.txt.");
    o.minbytes = o.maxbytes = 6479;
    assert_int_equal(ncd_perf_validate(&o, 3, NCD_PERF_BACKEND_SOCKET, why,
                                       sizeof why),
                     1);
    assert_string_equal(why, "maxBytes (-e) must be at least 6480 bytes as "
                             "required by traffic matrix file m.txt (got "
                             "6479). Increase -e.");
    o.minbytes = 1;
    o.maxbytes = 1 << 20;
    assert_int_equal(ncd_perf_validate(&o, 2, NCD_PERF_BACKEND_SOCKET, why,
                                       sizeof why),
                     1);
    assert_non_null(strstr(why, "-b and -e options must be set to the same"));
    ncd_perf_traffic_release(&t);
    assert_int_equal(t.matrix, 0);
    assert_null(t.bytes);
}

/* The matrix file's errors, as nccl-tests words them. */
static void test_alltoallv_matrix_errors(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        const char *why;
    } bad[] = {
        {"", "Invalid alltoallv traffic matrix, file f is empty."},
        {" \n\n", "Invalid alltoallv traffic matrix, file f is empty."},
        {"1 2\n3\n", "column count in file f row 1. Expected 2 columns, got "
                     "1."},
        {"1 2\n3 4 5", "row 1. Expected 2 columns, got 3."},
        {"1 2 3\n4 5 6\n", "file f must be square (got 2x3)."},
        {"1 x\n", "value at row 0 col 1 in file f."},
        {"1 2k\n3 4\n", "value at row 0 col 1 in file f."},
        {"1 -2\n3 4\n", "Value must be non-negative."},
        {"1 nan\n3 4\n", "value at row 0 col 1 in file f."},
        {"1 1e300\n3 4\n", "Value overflow (value=1e+300 scale=1)."},
        {"1 2\n3 4\0", "holds a NUL byte"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct ncd_perf_traffic t;
        ncd_perf_traffic_default(&t);
        char why[256] = "";
        size_t len = strlen(bad[i].text) + (i == 10);
        int rc = ncd_perf_traffic_parse(&t, bad[i].text, len, "f", why,
                                        sizeof why);
        if (rc != NCD_EPARSE || !strstr(why, bad[i].why))
            fail_msg("case %zu: rc %d '%s'", i, rc, why);
        assert_int_equal(t.matrix, 0);
        ncd_perf_traffic_release(&t);
    }
    /* a larger matrix than the job: the first nranks rows and columns */
    struct ncd_perf_traffic t;
    ncd_perf_traffic_default(&t);
    char why[256];
    const char m4[] = "16 32 48 64\r\n16 16 16 16\n0 0 0 0\n1 2 3 4";
    assert_int_equal(ncd_perf_traffic_parse(&t, m4, strlen(m4), "f", why,
                                            sizeof why),
                     0);
    assert_int_equal(t.dim, 4);
    struct ncd_perf_counts k;
    ncd_perf_counts_traffic(NCD_COLL_ALLTOALLV, 1024, 1, 2, 0, &t, &k);
    assert_int_equal(k.sendcount, 48);
    assert_int_equal(k.recvcount, 32);
    assert_int_equal(ncd_perf_traffic_peer(&t, 3, 3, 4, 0), 0); /* 4 -> 0 */
    ncd_perf_traffic_release(&t);
}

/* The variables, read from the context's environment. */
static void test_alltoallv_env(void **state)
{
    (void)state;
    char path[] = "/tmp/ncd-a2av-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "32 32\n32 32\n", 12), 12);
    close(fd);
    char fe[64], *env[] = {fe, "NCCL_TESTS_ALLTOALLV_MATRIX_SCALE=2",
                           "NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY=1",
                           "NCCL_TESTS_ALLTOALLV_SPREAD=0.25", NULL};
    snprintf(fe, sizeof fe, "NCCL_TESTS_ALLTOALLV_MATRIX_FILE=%s", path);
    struct ncd_ctx *ctx;
    assert_int_equal(ncd_ctx_new(NULL, env, &ctx), 0);
    struct ncd_perf_traffic t;
    ncd_perf_traffic_default(&t);
    assert_int_equal(ncd_perf_traffic_load(ctx, &t), 0);
    assert_true(t.matrix && t.dim == 2 && t.print_summary);
    assert_true(t.scale == 2 && t.spread == 0.25);
    assert_int_equal(ncd_perf_traffic_peer(&t, 1, 0, 2, 0), 64);
    assert_string_equal(t.path, path);
    ncd_ctx_free(ctx);
    unlink(path);
    /* out of range and junk: clamped or the default, as nccl-tests */
    char *env2[] = {"NCCL_TESTS_ALLTOALLV_SPREAD=7",
                    "NCCL_TESTS_ALLTOALLV_MATRIX_SCALE=-1",
                    "NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY=0", NULL};
    assert_int_equal(ncd_ctx_new(NULL, env2, &ctx), 0);
    assert_int_equal(ncd_perf_traffic_load(ctx, &t), 0);
    assert_true(!t.matrix && t.spread == 1 && t.scale == 0 &&
                !t.print_summary);
    ncd_ctx_free(ctx);
    char *env3[] = {"NCCL_TESTS_ALLTOALLV_SPREAD=0.5x", NULL};
    assert_int_equal(ncd_ctx_new(NULL, env3, &ctx), 0);
    assert_int_equal(ncd_perf_traffic_load(ctx, &t), 0);
    assert_true(t.spread == 1);
    ncd_ctx_free(ctx);
    char *env4[] = {"NCCL_TESTS_ALLTOALLV_MATRIX_FILE=/nonexistent/m", NULL};
    assert_int_equal(ncd_ctx_new(NULL, env4, &ctx), 0);
    assert_int_equal(ncd_perf_traffic_load(ctx, &t), NCD_ENOENT);
    assert_non_null(strstr(ncd_ctx_errdetail(ctx),
                           "Unable to open alltoallv traffic matrix file "
                           "/nonexistent/m."));
    ncd_ctx_free(ctx);
    ncd_perf_traffic_release(&t);
}

/* ---- data pattern and checker -------------------------------------------- */

static void test_checker_detects(void **state)
{
    (void)state;
    /* rank 1 of 3 after all_reduce of 1000 floats: build the right answer
     * from the pattern, then corrupt it */
    struct ncd_perf_check c = {.coll = NCD_COLL_ALL_REDUCE,
                               .dtype = NCD_DT_FLOAT, .op = NCD_OP_SUM,
                               .nranks = 3, .rank = 1, .root = 0, .seed = 1};
    ncd_perf_counts(c.coll, 4000, 4, 3, 1, &c.k);
    float *a = malloc(4000), *b = malloc(4000);
    ncd_perf_fill(NCD_DT_FLOAT, NCD_OP_SUM, a, 0, 1000, 0, 1);
    for (int r = 1; r < 3; r++) {
        ncd_perf_fill(NCD_DT_FLOAT, NCD_OP_SUM, b, 0, 1000, r, 1);
        for (int i = 0; i < 1000; i++)
            a[i] += b[i];
    }
    assert_int_equal(ncd_perf_check(&c, a), 0);
    a[17] += 1;
    a[999] = -a[999] - 1;
    assert_int_equal(ncd_perf_check(&c, a), 2);
    /* a different seed makes everything (almost) wrong */
    c.seed = 2;
    assert_true(ncd_perf_check(&c, a) > 900);
    free(a);
    free(b);

    /* all_gather: block j comes from rank j */
    struct ncd_perf_check g = {.coll = NCD_COLL_ALL_GATHER,
                               .dtype = NCD_DT_INT32, .op = NCD_OP_SUM,
                               .nranks = 4, .rank = 2, .seed = 9};
    ncd_perf_counts(g.coll, 4096, 4, 4, 2, &g.k);
    int32_t *v = malloc(4096);
    for (int r = 0; r < 4; r++)
        ncd_perf_fill(NCD_DT_INT32, NCD_OP_SUM, v + r * 256, 0, 256, r, 9);
    assert_int_equal(ncd_perf_check(&g, v), 0);
    /* swapping two blocks is caught */
    int32_t tmp[256];
    memcpy(tmp, v, sizeof tmp);
    memcpy(v, v + 256, sizeof tmp);
    memcpy(v + 256, tmp, sizeof tmp);
    assert_true(ncd_perf_check(&g, v) > 400);
    free(v);
}

static void test_avg_ulp(void **state)
{
    (void)state;
    struct ncd_perf_check c = {.coll = NCD_COLL_ALL_REDUCE,
                               .dtype = NCD_DT_FLOAT, .op = NCD_OP_AVG,
                               .nranks = 3, .rank = 0, .seed = 4};
    ncd_perf_counts(c.coll, 400, 4, 3, 0, &c.k);
    float a[100], b[100];
    ncd_perf_fill(NCD_DT_FLOAT, NCD_OP_AVG, a, 0, 100, 0, 4);
    for (int r = 1; r < 3; r++) {
        ncd_perf_fill(NCD_DT_FLOAT, NCD_OP_AVG, b, 0, 100, r, 4);
        for (int i = 0; i < 100; i++)
            a[i] += b[i];
    }
    for (int i = 0; i < 100; i++)
        a[i] /= 3;
    assert_int_equal(ncd_perf_check(&c, a), 0);
    /* 2 ULP tolerated for float avg, 3 not */
    uint32_t u;
    memcpy(&u, &a[5], 4);
    u += 2;
    memcpy(&a[5], &u, 4);
    assert_int_equal(ncd_perf_check(&c, a), 0);
    u += 1;
    memcpy(&a[5], &u, 4);
    assert_int_equal(ncd_perf_check(&c, a), 1);
}

/* Kernels against a scalar double/int reference for every type and op. */
static void test_kernels(void **state)
{
    (void)state;
    enum { N = 1037 };
    unsigned char *a = malloc(N * 8), *b = malloc(N * 8), *d = malloc(N * 8);
    for (int t = 0; t < NCD_DT_F8E4M3; t++) {
        size_t es = ncd_perf_dtype_size(t);
        for (int op = 0; op < NCD_OP__COUNT; op++) {
            ncd_perf_fill(t, op, a, 0, N, 0, 3);
            ncd_perf_fill(t, op, b, 0, N, 1, 3);
            ncd_perf_reduce(t, op, d, a, b, N, 1, 1);
            ncd_perf_reduce_finish(t, op, d, d, N, 2, 0);
            for (int i = 0; i < N; i++) {
                double x, y, got;
                int64_t xi = 0, yi = 0;
                if (ncd_perf_dtype_is_float(t)) {
                    if (t == NCD_DT_FLOAT) {
                        float f;
                        memcpy(&f, a + i * es, 4);
                        x = f;
                        memcpy(&f, b + i * es, 4);
                        y = f;
                        memcpy(&f, d + i * es, 4);
                        got = f;
                    } else if (t == NCD_DT_DOUBLE) {
                        memcpy(&x, a + i * es, 8);
                        memcpy(&y, b + i * es, 8);
                        memcpy(&got, d + i * es, 8);
                    } else {
                        /* half and bfloat16: values are small integers or
                         * powers of two, exactly representable */
                        uint16_t h;
                        float f;
                        uint32_t u;
                        memcpy(&h, a + i * es, 2);
                        if (t == NCD_DT_BFLOAT16) {
                            u = (uint32_t)h << 16;
                            memcpy(&f, &u, 4);
                            x = f;
                            memcpy(&h, b + i * es, 2);
                            u = (uint32_t)h << 16;
                            memcpy(&f, &u, 4);
                            y = f;
                            memcpy(&h, d + i * es, 2);
                            u = (uint32_t)h << 16;
                            memcpy(&f, &u, 4);
                            got = f;
                        } else {
                            memcpy(&h, a + i * es, 2);
                            x = ncd__half_to_f32(h);
                            memcpy(&h, b + i * es, 2);
                            y = ncd__half_to_f32(h);
                            memcpy(&h, d + i * es, 2);
                            got = ncd__half_to_f32(h);
                        }
                    }
                    double e;
                    switch (op) {
                    case NCD_OP_PROD:
                        e = x * y;
                        break;
                    case NCD_OP_MAX:
                        e = x > y ? x : y;
                        break;
                    case NCD_OP_MIN:
                        e = x < y ? x : y;
                        break;
                    case NCD_OP_AVG:
                        e = (x + y) / 2;
                        break;
                    case NCD_OP_MULSUM:
                        e = 2 * x + 2 * y;
                        break;
                    default:
                        e = x + y;
                    }
                    if (got != e)
                        fail_msg("%s %s [%d]: %g op %g = %g, want %g",
                                 ncd_perf_dtype_name(t), ncd_perf_op_name(op),
                                 i, x, y, got, e);
                } else {
                    /* integers: compare in the type's width */
                    memcpy(&xi, a + i * es, es);
                    memcpy(&yi, b + i * es, es);
                    int64_t gi = 0;
                    memcpy(&gi, d + i * es, es);
                    int sh = 64 - (int)es * 8;
                    int sgn = t == NCD_DT_INT8 || t == NCD_DT_INT32 ||
                              t == NCD_DT_INT64;
                    uint64_t mask = es == 8 ? ~0ull : (1ull << es * 8) - 1;
                    /* sign-extend signed types */
                    if (sgn && sh) {
                        xi = (int64_t)((uint64_t)xi << sh) >> sh;
                        yi = (int64_t)((uint64_t)yi << sh) >> sh;
                    }
                    uint64_t ux = (uint64_t)xi, uy = (uint64_t)yi, e;
                    switch (op) {
                    case NCD_OP_PROD:
                        e = ux * uy;
                        break;
                    case NCD_OP_MAX:
                        e = sgn ? (uint64_t)(xi > yi ? xi : yi)
                                : ((ux & mask) > (uy & mask) ? ux : uy);
                        break;
                    case NCD_OP_MIN:
                        e = sgn ? (uint64_t)(xi < yi ? xi : yi)
                                : ((ux & mask) < (uy & mask) ? ux : uy);
                        break;
                    case NCD_OP_AVG: {
                        uint64_t s = (ux + uy) & mask;
                        if (sgn) {
                            int64_t ss = sh ? (int64_t)(s << sh) >> sh
                                            : (int64_t)s;
                            e = (uint64_t)(ss / 2);
                        } else {
                            e = s / 2;
                        }
                        break;
                    }
                    case NCD_OP_MULSUM:
                        e = 2 * ux + 2 * uy;
                        break;
                    default:
                        e = ux + uy;
                    }
                    if (((uint64_t)gi & mask) != (e & mask))
                        fail_msg("%s %s [%d]: got %llx want %llx",
                                 ncd_perf_dtype_name(t), ncd_perf_op_name(op),
                                 i, (unsigned long long)((uint64_t)gi & mask),
                                 (unsigned long long)(e & mask));
                }
            }
        }
    }
    free(a);
    free(b);
    free(d);
}

static void test_half(void **state)
{
    (void)state;
    /* every finite or infinite half survives a round trip */
    for (uint32_t h = 0; h < 0x10000; h++) {
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff))
            continue; /* NaN payloads are not preserved */
        uint16_t back = ncd__f32_to_half(ncd__half_to_f32((uint16_t)h));
        if (back != h)
            fail_msg("half %#x -> %g -> %#x", h,
                     ncd__half_to_f32((uint16_t)h), back);
    }
    /* rounding: nearest, ties to even; overflow; subnormals */
    assert_int_equal(ncd__f32_to_half(1.0f + 0x1p-11f), 0x3c00);
    assert_int_equal(ncd__f32_to_half(1.0f + 3 * 0x1p-11f), 0x3c02);
    assert_int_equal(ncd__f32_to_half(65504.0f), 0x7bff);
    assert_int_equal(ncd__f32_to_half(65519.0f), 0x7bff);
    assert_int_equal(ncd__f32_to_half(65520.0f), 0x7c00);
    assert_int_equal(ncd__f32_to_half(-1e9f), 0xfc00);
    assert_int_equal(ncd__f32_to_half(0x1p-24f), 0x0001);
    assert_int_equal(ncd__f32_to_half(0x1p-25f), 0x0000);
    assert_int_equal(ncd__f32_to_half(3 * 0x1p-25f), 0x0002);
    assert_int_equal(ncd__f32_to_half(0x1p-14f), 0x0400);
    assert_true(ncd__half_to_f32(0x0001) == 0x1p-24f);
    assert_true(ncd__half_to_f32(0xc000) == -2.0f);
    assert_int_equal(ncd__f32_to_half(NAN) & 0x7e00, 0x7e00);
    /* bfloat16 */
    assert_int_equal(ncd__f32_to_bf16(1.0f), 0x3f80);
    assert_int_equal(ncd__f32_to_bf16(1.0f + 0x1p-8f), 0x3f80);
    assert_int_equal(ncd__f32_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);
    assert_true(ncd__bf16_to_f32(0xc040) == -3.0f);
}

/* ---- setting up a run (perf.h section 6, options) ----------------------- */

static void test_socket_settings(void **state)
{
    (void)state;
    /* NCCL src/transport/net_socket.cc: NTHREADS clamped to 16 (the
     * catalog's max), the product capped at 64 by lowering NSOCKS */
    static const struct {
        const char *nt, *ns;
        int want_nt, want_ns;
    } t[] = {
        {NULL, NULL, -2, -2}, {"2", "2", 2, 2},  {"4", "4", 4, 4},
        {"32", "1", 16, 1},  {"16", "8", 16, 4}, {"3", "64", 3, 21},
        {"0x4", "010", 4, 8}, /* strtoll base 0, as NCCL_PARAM */
        {"-2", "0", -2, 1},  {"abc", "", 0, -2},  {"2junk", "3", 2, 3},
        {"-1", "-2", 0, -2}, /* -2 is NCCL's default: detected later */
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        char a[64], b[64];
        char *env[3] = {NULL, NULL, NULL};
        int n = 0;
        if (t[i].nt) {
            snprintf(a, sizeof a, "NCCL_SOCKET_NTHREADS=%s", t[i].nt);
            env[n++] = a;
        }
        if (t[i].ns) {
            snprintf(b, sizeof b, "NCCL_NSOCKS_PERTHREAD=%s", t[i].ns);
            env[n++] = b;
        }
        struct ncd_ctx *ctx;
        assert_int_equal(ncd_ctx_new(NULL, env, &ctx), 0);
        int nt = -1, ns = -1;
        assert_int_equal(ncd_perf_socket_settings(ctx, &nt, &ns), 0);
        if (nt != t[i].want_nt || ns != t[i].want_ns)
            fail_msg("case %zu (%s x %s): %d x %d, want %d x %d", i,
                     t[i].nt ? t[i].nt : "-", t[i].ns ? t[i].ns : "-", nt,
                     ns, t[i].want_nt, t[i].want_ns);
        ncd_ctx_free(ctx);
    }
}

static void write_file(const char *dir, const char *rel, const char *text)
{
    char path[512], cmd[600];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    snprintf(cmd, sizeof cmd, "mkdir -p \"$(dirname '%s')\"", path);
    assert_int_equal(system(cmd), 0);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_socket_auto(void **state)
{
    (void)state;
    /* NCCL src/transport/net_socket.cc: the default (-2) is detected from
     * the interface's PCI vendor; set values stay, the product is capped */
    char root[] = "/tmp/ncd-sockauto-XXXXXX";
    assert_non_null(mkdtemp(root));
    write_file(root, "sys/class/net/ens5/device/vendor", "0x1d0f\n");
    write_file(root, "sys/class/net/gvnic0/device/vendor", "0x1ae0\n");
    write_file(root, "sys/class/net/eth0/device/vendor", "0x8086\n");
    write_file(root, "sys/class/net/lo/mtu", "65536\n");
    static const struct {
        const char *ifname;
        int nt, ns, want_nt, want_ns;
    } t[] = {
        {"ens5", -2, -2, 2, 8},  {"gvnic0", -2, -2, 4, 1},
        {"eth0", -2, -2, 0, 1},  {"lo", -2, -2, 0, 1},
        {"ens5", 16, -2, 16, 4}, {"gvnic0", 1, -2, 1, 1},
        {"ens5", -2, 3, 2, 3},   {"eth0", 5, 5, 5, 5},
    };
    struct ncd_ctx *ctx;
    assert_int_equal(ncd_ctx_new(root, NULL, &ctx), 0);
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        int nt = t[i].nt, ns = t[i].ns;
        assert_int_equal(ncd_perf_socket_auto(ctx, t[i].ifname, &nt, &ns), 0);
        if (nt != t[i].want_nt || ns != t[i].want_ns)
            fail_msg("case %zu (%s %d x %d): %d x %d, want %d x %d", i,
                     t[i].ifname, t[i].nt, t[i].ns, nt, ns, t[i].want_nt,
                     t[i].want_ns);
    }
    ncd_ctx_free(ctx);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
}

static void test_opt_apply(void **state)
{
    (void)state;
    static const struct {
        char letter;
        const char *arg;
        int rc, to_stdout;
        const char *msg; /* substring, "" = none */
    } t[] = {
        {'t', "2", 0, 0, ""},
        {'t', "0", 6, 0, "must be at least 1"},
        {'t', "x", 6, 0, "invalid value 'x' for -t"},
        {'n', "0x10", 0, 0, ""},
        {'b', "1.5K", 0, 0, ""},
        {'e', "12Q", 255, 0, "invalid size specified for 'maxbytes'"},
        {'z', "4", 6, 0, "must be 0..3"},
        {'o', "nosuch", 0, 1, "invalid op nosuch, defaulting to sum .. "},
        {'d', "fp16", 0, 0, ""},
        {'d', "quad", 0, 1, "invalid type quad, defaulting to float"},
        {'r', "all", 0, 0, ""},
        {'r', "-2", 6, 0, "invalid root -2"},
        {'G', "1", 0, 0, ""},
        {'G', "-1", 6, 0, "invalid value '-1' for -G"},
        {'I', "1", 0, 0, ""},
        {'K', "3", 0, 0, ""},
        {'V', "64", 0, 0, ""},
        {'q', "1", NCD_ENOENT, 0, ""},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        struct ncd_perf_opts o;
        ncd_perf_opts_default(&o);
        struct ncd_perf_optmsg m;
        int rc = ncd_perf_opt_apply(&o, t[i].letter, t[i].arg, &m);
        if (rc != t[i].rc || (t[i].msg[0] && !strstr(m.text, t[i].msg)) ||
            (!t[i].msg[0] && rc != NCD_ENOENT && m.text[0]) ||
            m.to_stdout != t[i].to_stdout)
            fail_msg("-%c %s: rc %d msg '%s' stdout %d", t[i].letter,
                     t[i].arg, rc, m.text, m.to_stdout);
    }
    struct ncd_perf_opts o;
    ncd_perf_opts_default(&o);
    struct ncd_perf_optmsg m;
    assert_int_equal(ncd_perf_opt_apply(&o, 'b', "1.5K", &m), 0);
    assert_int_equal(o.minbytes, 1536);
    assert_int_equal(ncd_perf_opt_apply(&o, 'r', "all", &m), 0);
    assert_int_equal(o.root, 0); /* strtol reads the word as 0 */
    assert_int_equal(ncd_perf_opt_apply(&o, 'o', "all", &m), 0);
    assert_int_equal(o.op, -1);
    /* every table option is in the getopt string, with a value */
    for (size_t i = 0; i < ncd_perf_options_count(); i++) {
        char l[3] = {ncd_perf_option_at(i)->letter, ':', 0};
        assert_non_null(strstr(NCD_PERF_GETOPT, l));
    }
    assert_null(ncd_perf_option_at(ncd_perf_options_count()));
}

static void test_validate(void **state)
{
    (void)state;
    struct ncd_perf_opts o;
    ncd_perf_opts_default(&o);
    char why[256];
    o.coll = NCD_COLL_HYPERCUBE;
    assert_int_equal(ncd_perf_validate(&o, 6, NCD_PERF_BACKEND_SOCKET, why,
                                       sizeof why),
                     6);
    assert_non_null(strstr(why, "power-of-two number of ranks, not 6"));
    assert_int_equal(ncd_perf_validate(&o, 8, NCD_PERF_BACKEND_SOCKET, why,
                                       sizeof why),
                     0);
    o.coll = NCD_COLL_BROADCAST;
    o.root = 2;
    assert_int_equal(ncd_perf_validate(&o, 2, NCD_PERF_BACKEND_NCCL, why,
                                       sizeof why),
                     3);
    assert_non_null(strstr(why, "invalid argument: root 2 is not a rank"));
    o.root = -1;
    o.dtype = NCD_DT_F8E5M2;
    assert_int_equal(ncd_perf_validate(&o, 2, NCD_PERF_BACKEND_SOCKET, why,
                                       sizeof why),
                     5);
    assert_int_equal(ncd_perf_validate(&o, 2, NCD_PERF_BACKEND_NCCL, why,
                                       sizeof why),
                     0);
    /* before any rank starts: -J suffix and the sweep */
    ncd_perf_opts_default(&o);
    o.json_path = "out.txt";
    assert_int_equal(ncd_perf_opts_check(&o, why, sizeof why), 6);
    o.json_path = NULL;
    o.minbytes = 64;
    o.maxbytes = 8;
    assert_int_equal(ncd_perf_opts_check(&o, why, sizeof why), 255);
    assert_non_null(strstr(why, "invalid sizes for 'minbytes' and "
                                "'maxbytes': 64 > 8"));
    assert_int_equal(ncd_perf_backend_from_name("socket"),
                     NCD_PERF_BACKEND_SOCKET);
    assert_int_equal(ncd_perf_backend_from_name(NULL), NCD_PERF_BACKEND_NCCL);
    assert_int_equal(ncd_perf_backend_from_name("nccl"), NCD_PERF_BACKEND_NCCL);
    /* no silent fallback: "auto" is not a backend */
    assert_int_equal(ncd_perf_backend_from_name("auto"), -1);
    assert_int_equal(ncd_perf_backend_from_name("gpu"), -1);
    assert_int_equal(ncd_perf_algo_from_name("direct"), NCD_PERF_ALGO_DIRECT);
    assert_int_equal(ncd_perf_algo_from_name("tree"), -1);
}

static void test_failure_line(void **state)
{
    (void)state;
    struct ncd_strbuf sb = {0};
    /* no GPU: writeDeviceReport's cudaGetDeviceCount, then main() */
    ncd_perf_fmt_failure(&sb, "node1", 42, 2, NCD_PERF_STAGE_OPEN,
                         NCD_COLL_ALL_REDUCE, 0, NCD_PERF_BACKEND_NCCL,
                         "no CUDA-capable device is detected");
    assert_string_equal(ncd_sb_str(&sb),
                        "node1: Test CUDA failure util.cu:674 'no "
                        "CUDA-capable device is detected'\n"
                        " .. node1 pid 42: Test failure common.cu:1454\n");
    ncd_sb_reset(&sb);
    /* communicator init: the ncclGroupEnd of initComms, then run(), main() */
    ncd_perf_fmt_failure(&sb, "node1", 42, 3, NCD_PERF_STAGE_INIT,
                         NCD_COLL_ALL_REDUCE, 0, NCD_PERF_BACKEND_NCCL,
                         "unhandled system error (run with NCCL_DEBUG=INFO "
                         "for details) / x");
    assert_string_equal(ncd_sb_str(&sb),
                        "node1: Test NCCL failure common.cu:222 'unhandled "
                        "system error (run with NCCL_DEBUG=INFO for "
                        "details) / x'\n"
                        " .. node1 pid 42: Test failure common.cu:1620\n"
                        " .. node1 pid 42: Test failure common.cu:1454\n");
    ncd_sb_reset(&sb);
    /* a peer lost during a collective on the socket backend */
    ncd_perf_fmt_failure(&sb, "node1", 42, 3, NCD_PERF_STAGE_SYNC,
                         NCD_COLL_BROADCAST, 0, NCD_PERF_BACKEND_SOCKET,
                         "rank 1 closed");
    assert_string_equal(ncd_sb_str(&sb),
                        "node1: Test NCCL failure common.cu:514 'remote "
                        "process exited or there was a network error / "
                        "rank 1 closed'\n"
                        " .. node1 pid 42: Test failure common.cu:632\n"
                        " .. node1 pid 42: Test failure common.cu:769\n"
                        " .. node1 pid 42: Test failure common.cu:939\n"
                        " .. node1 pid 42: Test failure broadcast.cu:103\n"
                        " .. node1 pid 42: Test failure common.cu:972\n"
                        " .. node1 pid 42: Test failure common.cu:1768\n"
                        " .. node1 pid 42: Test failure common.cu:1454\n");
    ncd_sb_reset(&sb);
    /* -T: testStreamSynchronize's own line */
    ncd_perf_fmt_failure(&sb, "node1", 42, 4, NCD_PERF_STAGE_SYNC,
                         NCD_COLL_ALL_REDUCE, 5, NCD_PERF_BACKEND_NCCL, "x");
    assert_true(strncmp(ncd_sb_str(&sb),
                        "node1: Test timeout (5s) common.cu:526\n"
                        " .. node1 pid 42: Test failure common.cu:632\n",
                        83) == 0);
    assert_non_null(strstr(ncd_sb_str(&sb), "failure all_reduce.cu:574\n"));
    ncd_sb_reset(&sb);
    /* wrong data: only main()'s TESTCHECK */
    ncd_perf_fmt_failure(&sb, "node1", 42, 7, NCD_PERF_STAGE_RESULT,
                         NCD_COLL_ALL_REDUCE, 0, NCD_PERF_BACKEND_NCCL, "");
    assert_string_equal(ncd_sb_str(&sb),
                        " .. node1 pid 42: Test failure common.cu:1454\n");
    ncd_sb_reset(&sb);
    ncd_perf_fmt_failure(&sb, "node1", 42, 0, NCD_PERF_STAGE_NONE,
                         NCD_COLL_ALL_REDUCE, 0, NCD_PERF_BACKEND_NCCL, "");
    assert_string_equal(ncd_sb_str(&sb), "");
    ncd_sb_release(&sb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_busbw),
        cmocka_unit_test(test_sweep),
        cmocka_unit_test(test_parse_size),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_fmt_num),
        cmocka_unit_test(test_fmt_table),
        cmocka_unit_test(test_fmt_flags),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_fmt_per_iter),
        cmocka_unit_test(test_fmt_graph),
        cmocka_unit_test(test_iter_stats),
        cmocka_unit_test(test_json_per_iter),
        cmocka_unit_test(test_settle),
        cmocka_unit_test(test_alltoallv_counts),
        cmocka_unit_test(test_alltoallv_matrix_errors),
        cmocka_unit_test(test_alltoallv_env),
        cmocka_unit_test(test_checker_detects),
        cmocka_unit_test(test_avg_ulp),
        cmocka_unit_test(test_kernels),
        cmocka_unit_test(test_half),
        cmocka_unit_test(test_socket_settings),
        cmocka_unit_test(test_socket_auto),
        cmocka_unit_test(test_opt_apply),
        cmocka_unit_test(test_validate),
        cmocka_unit_test(test_failure_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
