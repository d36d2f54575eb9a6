/* SPDX-License-Identifier: MIT */
/*
 * explain: the line normaliser / NCCL header parser on every format variant
 * of the reference (B8: INFO, WARN with and without "(func)" and time stamp,
 * TRACE, CALL, bare version, the very old form without "NCCL") and every
 * launcher prefix (Open MPI, torchrun, srun, pdsh, Paddle, time stamps,
 * ANSI colour, CRLF).
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

#include "ncd/error.h"
#include "ncd/explain.h"

struct lcase {
    const char *in;
    enum ncd_log_level level;
    const char *host; /* NULL: none */
    long pid, tid;
    int dev;
    const char *src; /* NULL: none */
    int src_line;
    int rank;
    int has_ts;
    const char *msg;  /* expected message */
    const char *text; /* expected normalised text; NULL: same as input */
};

static const struct lcase cases[] = {
    /* INFO, current */
    {"node1:12345:12399 [3] NCCL INFO Bootstrap: Using eth0:10.0.0.1<0>",
     NCD_LOG_INFO, "node1", 12345, 12399, 3, NULL, 0, -1, 0,
     "Bootstrap: Using eth0:10.0.0.1<0>", NULL},
    /* WARN 2.30.7: time stamp, file:line, (func) */
    {"[2026-01-02 03:04:05] node2:7:8 [1] os/linux.cc:560 (ncclOsSocketConnect) "
     "NCCL WARN ncclOsSocketConnect: connect to 10.0.0.2<34567> returned "
     "Connection refused",
     NCD_LOG_WARN, "node2", 7, 8, 1, "os/linux.cc", 560, -1, 1,
     "ncclOsSocketConnect: connect to 10.0.0.2<34567> returned Connection "
     "refused",
     "node2:7:8 [1] os/linux.cc:560 (ncclOsSocketConnect) NCCL WARN "
     "ncclOsSocketConnect: connect to 10.0.0.2<34567> returned Connection "
     "refused"},
    /* WARN 2.26..2.30: time stamp, no (func) */
    {"[2025-05-06 07:08:09] node3:11:12 [0] transport/net_ib.cc:881 NCCL WARN "
     "NET/IB : Got completion from peer 10.0.0.2<49577> with error 12",
     NCD_LOG_WARN, "node3", 11, 12, 0, "transport/net_ib.cc", 881, -1, 1,
     "NET/IB : Got completion from peer 10.0.0.2<49577> with error 12",
     "node3:11:12 [0] transport/net_ib.cc:881 NCCL WARN NET/IB : Got "
     "completion from peer 10.0.0.2<49577> with error 12"},
    /* WARN before 2.26: no time stamp */
    {"node1:946:988 [0] transport/net_ib.cc:839 NCCL WARN NET/IB : Got "
     "completion with error 12, opcode 1, len 0, vendor err 129",
     NCD_LOG_WARN, "node1", 946, 988, 0, "transport/net_ib.cc", 839, -1, 0,
     "NET/IB : Got completion with error 12, opcode 1, len 0, vendor err 129",
     NULL},
    /* WARN with only file:line (excerpt) */
    {"misc/ibvwrap.cc:278 NCCL WARN Call to ibv_reg_mr_iova2 failed with "
     "error Cannot allocate memory",
     NCD_LOG_WARN, NULL, -1, -1, -1, "misc/ibvwrap.cc", 278, -1, 0,
     "Call to ibv_reg_mr_iova2 failed with error Cannot allocate memory", NULL},
    /* bare level */
    {"NCCL WARN Cuda failure 'out of memory'", NCD_LOG_WARN, NULL, -1, -1, -1,
     NULL, 0, -1, 0, "Cuda failure 'out of memory'", NULL},
    /* TRACE: <ms> <func>:<line> */
    {"node1:5:6 [2] 1234.567890 ncclSend:100 NCCL TRACE opCount 7", NCD_LOG_TRACE,
     "node1", 5, 6, 2, "ncclSend", 100, -1, 0, "opCount 7", NULL},
    /* CALL: no [dev] */
    {"node1:5:6 NCCL CALL ncclAllReduce(0x1,0x2,16,7,0,0x3,0x4)", NCD_LOG_CALL,
     "node1", 5, 6, -1, NULL, 0, -1, 0, "ncclAllReduce(0x1,0x2,16,7,0,0x3,0x4)",
     NULL},
    /* bare version line */
    {"NCCL version 2.5.6+cuda10.0", NCD_LOG_VERSION, NULL, -1, -1, -1, NULL, 0,
     -1, 0, "NCCL version 2.5.6+cuda10.0", NULL},
    /* very old form without "NCCL" */
    {"node1:3728589:3730445 [2] INFO Ring 00 : 2[2] -> 3[3] via P2P/IPC",
     NCD_LOG_INFO, "node1", 3728589, 3730445, 2, NULL, 0, -1, 0,
     "Ring 00 : 2[2] -> 3[3] via P2P/IPC", NULL},
    /* Open MPI --tag-output */
    {"[1,5]<stdout>:node1:1:2 [5] NCCL INFO Using network IB", NCD_LOG_INFO,
     "node1", 1, 2, 5, NULL, 0, 5, 0, "Using network IB",
     "node1:1:2 [5] NCCL INFO Using network IB"},
    {"[1,12]<stderr>:[2026-01-02 03:04:05] node1:1:2 [4] init.cc:1 NCCL WARN x",
     NCD_LOG_WARN, "node1", 1, 2, 4, "init.cc", 1, 12, 1, "x",
     "node1:1:2 [4] init.cc:1 NCCL WARN x"},
    /* torchrun */
    {"[rank3]:[E ProcessGroupNCCL.cpp:563] [Rank 3] Watchdog caught collective "
     "operation timeout",
     NCD_LOG_NONE, NULL, -1, -1, -1, NULL, 0, 3, 0, NULL,
     "[E ProcessGroupNCCL.cpp:563] [Rank 3] Watchdog caught collective "
     "operation timeout"},
    {"[default1]:node1:77:78 [1] NCCL INFO comm 0x1 rank 1 nRanks 2",
     NCD_LOG_INFO, "node1", 77, 78, 1, NULL, 0, 1, 0, "comm 0x1 rank 1 nRanks 2",
     "node1:77:78 [1] NCCL INFO comm 0x1 rank 1 nRanks 2"},
    /* Paddle tags */
    {"[trainer3]:node1:1958:1958 [3] NCCL INFO NCCL_SOCKET_IFNAME set by "
     "environment to eth2",
     NCD_LOG_INFO, "node1", 1958, 1958, 3, NULL, 0, 3, 0,
     "NCCL_SOCKET_IFNAME set by environment to eth2",
     "node1:1958:1958 [3] NCCL INFO NCCL_SOCKET_IFNAME set by environment to "
     "eth2"},
    {"[trainer0|0]:ncclInternalError: Internal check failed.", NCD_LOG_NONE,
     NULL, -1, -1, -1, NULL, 0, 0, 0, NULL, "ncclInternalError: Internal check failed."},
    /* "[N] " rank label */
    {"[3] node2:22556:22556 [1] NCCL INFO cudaDriverVersion 11070", NCD_LOG_INFO,
     "node2", 22556, 22556, 1, NULL, 0, 3, 0, "cudaDriverVersion 11070",
     "node2:22556:22556 [1] NCCL INFO cudaDriverVersion 11070"},
    /* srun --label */
    {"0: node1:34639:36718 [5] bootstrap.cc:77 NCCL WARN Message truncated",
     NCD_LOG_WARN, "node1", 34639, 36718, 5, "bootstrap.cc", 77, 0, 0,
     "Message truncated",
     "node1:34639:36718 [5] bootstrap.cc:77 NCCL WARN Message truncated"},
    /* rankN: */
    {"rank12: node9:1:2 [0] NCCL INFO Connected all rings", NCD_LOG_INFO, "node9",
     1, 2, 0, NULL, 0, 12, 0, "Connected all rings",
     "node9:1:2 [0] NCCL INFO Connected all rings"},
    /* pdsh host label in front of an NCCL line */
    {"node4: node4:10:11 [2] NCCL INFO Init COMPLETE", NCD_LOG_INFO, "node4", 10,
     11, 2, NULL, 0, -1, 0, "Init COMPLETE", NULL},
    /* nccl-tests host prefix (kept in the text) */
    {"node1: Test NCCL failure common.cu:959 'internal error'", NCD_LOG_NONE,
     NULL, -1, -1, -1, NULL, 0, -1, 0, NULL, NULL},
    /* ISO time stamps from log collectors */
    {"2026-03-04T05:06:07.123Z node1:1:2 [0] NCCL INFO Using network Socket",
     NCD_LOG_INFO, "node1", 1, 2, 0, NULL, 0, -1, 1, "Using network Socket",
     "node1:1:2 [0] NCCL INFO Using network Socket"},
    {"2026-03-04 05:06:07,123 INFO something else", NCD_LOG_NONE, NULL, -1, -1,
     -1, NULL, 0, -1, 1, NULL, "INFO something else"},
    /* ANSI colour and CRLF */
    {"\033[1;31mnode1:1:2 [0] NCCL WARN \033[0mCuda failure 'out of memory'\r",
     NCD_LOG_WARN, "node1", 1, 2, 0, NULL, 0, -1, 0,
     "Cuda failure 'out of memory'", "node1:1:2 [0] NCCL WARN Cuda failure 'out of memory'"},
    /* CUDA device [-1]-like garbage is not a header */
    {"just some text with NCCL in it", NCD_LOG_NONE, NULL, -1, -1, -1, NULL, 0,
     -1, 0, NULL, NULL},
    /* empty */
    {"", NCD_LOG_NONE, NULL, -1, -1, -1, NULL, 0, -1, 0, NULL, NULL},
};

static void test_formats(void **state)
{
    (void)state;
    char scratch[NCD_LOG_MAX_LINE + 1];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct lcase *c = &cases[i];
        struct ncd_log_line l;
        print_message("case %zu: %s\n", i, c->in);
        assert_int_equal(ncd_log_parse(c->in, strlen(c->in), scratch, sizeof scratch, &l), 0);
        assert_int_equal(l.level, c->level);
        if (c->host) {
            assert_non_null(l.host);
            assert_int_equal(l.host_len, strlen(c->host));
            assert_memory_equal(l.host, c->host, l.host_len);
        } else if (l.level != NCD_LOG_NONE) {
            assert_null(l.host);
        }
        assert_int_equal(l.pid, c->pid);
        assert_int_equal(l.tid, c->tid);
        assert_int_equal(l.dev, c->dev);
        if (c->src) {
            assert_non_null(l.src);
            assert_int_equal(l.src_len, strlen(c->src));
            assert_memory_equal(l.src, c->src, l.src_len);
            assert_int_equal(l.src_line, c->src_line);
        } else {
            assert_null(l.src);
        }
        assert_int_equal(l.rank, c->rank);
        assert_int_equal(l.ts >= 0, c->has_ts);
        if (c->msg)
            assert_string_equal(l.msg, c->msg);
        assert_string_equal(l.text, c->text ? c->text : c->in);
        assert_int_equal(strlen(l.text), l.text_len);
    }
}

static void test_timestamp_value(void **state)
{
    (void)state;
    char scratch[256];
    struct ncd_log_line a, b;
    const char *la = "[2026-01-02 03:04:05] node1:1:2 [0] x.cc:1 NCCL WARN a";
    const char *lb = "[2026-01-02 03:04:06] node1:1:2 [0] x.cc:1 NCCL WARN b";
    ncd_log_parse(la, strlen(la), scratch, sizeof scratch, &a);
    double ta = a.ts;
    ncd_log_parse(lb, strlen(lb), scratch, sizeof scratch, &b);
    assert_true(ta > 0);
    assert_true(b.ts - ta > 0.99 && b.ts - ta < 1.01);
    /* 1970-01-01T00:00:00Z is 0 */
    const char *z = "1970-01-01T00:00:10Z node1:1:2 [0] NCCL INFO x";
    ncd_log_parse(z, strlen(z), scratch, sizeof scratch, &a);
    assert_true(a.ts > 9.99 && a.ts < 10.01);
}

static void test_garbage(void **state)
{
    (void)state;
    /* binary garbage, overlong lines and tiny scratch never crash */
    char *big = malloc(3 * NCD_LOG_MAX_LINE);
    char *scratch = malloc(NCD_LOG_MAX_LINE + 1);
    assert_non_null(big);
    assert_non_null(scratch);
    unsigned s = 12345;
    for (int round = 0; round < 200; round++) {
        size_t n = (size_t)(s % (3 * NCD_LOG_MAX_LINE));
        for (size_t i = 0; i < n; i++) {
            s = s * 1103515245u + 12345u;
            big[i] = (char)(s >> 16);
        }
        if (round % 3 == 0 && n > 40)
            memcpy(big + n / 2 - 20, "a:1:2 [0] NCCL WARN ", 20);
        struct ncd_log_line l;
        assert_int_equal(ncd_log_parse(big, n, scratch, NCD_LOG_MAX_LINE + 1, &l), 0);
        assert_true(l.text_len <= NCD_LOG_MAX_LINE);
    }
    struct ncd_log_line l;
    assert_int_equal(ncd_log_parse("abc", 3, scratch, 2, &l), NCD_EINVAL);
    free(big);
    free(scratch);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_formats),
        cmocka_unit_test(test_timestamp_value),
        cmocka_unit_test(test_garbage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
