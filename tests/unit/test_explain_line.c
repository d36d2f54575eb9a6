/* SPDX-License-Identifier: MIT */
/*
 * explain: the line normaliser / NCCL header parser on every format variant
 * of the reference (B8: INFO, WARN with and without "(func)" and time stamp,
 * TRACE, CALL, bare version), the formats of NCCL 2.0 .. 2.3 and 1.x, lines
 * whose header was cut, every launcher prefix (Open MPI, Horovod, torchrun,
 * srun, mpiexec, pdsh, Paddle, Ray, Determined, docker compose, syslog) and
 * log collector (kubectl, CRI files, Docker/Fluent Bit/journald/Cloud
 * Logging JSON, time stamps, ANSI colour, CRLF).  Each case names where its
 * format comes from; facts read from the old phrasings are checked last.
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

#include "ncd/ctx.h"
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
    /* ---- NCCL 2.3: WARN macro of src/include/debug.h v2.3.7,
     * "\n%s:%d:%d [%d] %s:%d NCCL WARN "; SYSCHECKNTIMES of core.h */
    {"node1:7712:7790 [1] include/socket.h:345 NCCL WARN Call to connect "
     "timeout : Connection refused",
     NCD_LOG_WARN, "node1", 7712, 7790, 1, "include/socket.h", 345, -1, 0,
     "Call to connect timeout : Connection refused", NULL},
    /* 2.3 INFO, findInterfaces() of src/include/socket.h v2.3.7, as in
     * NVIDIA/nccl#207 */
    {"gpu2:46654:46654 [0] NCCL INFO NET : Using interface ib0:10.0.0.2<0>",
     NCD_LOG_INFO, "gpu2", 46654, 46654, 0, NULL, 0, -1, 0,
     "NET : Using interface ib0:10.0.0.2<0>", NULL},
    /* 2.3 ABORT (debug.h v2.3.7: "%s:%d:%d [%d] %s:%d NCCL ABORT") */
    {"node1:5:5 [0] init.cu:120 NCCL ABORT", NCD_LOG_ABORT, "node1", 5, 5, 0,
     "init.cu", 120, -1, 0, "", NULL},
    /* 2.3 TRACE (debug.h v2.3.7: "... [%d] %f %s:%d NCCL TRACE ") */
    {"node1:5:9 [0] 12.345678 ncclAllReduce:123 NCCL TRACE opCount 1",
     NCD_LOG_TRACE, "node1", 5, 9, 0, "ncclAllReduce", 123, -1, 0,
     "opCount 1", NULL},
    /* 2.0 .. 2.2 (binary releases): WARN without "NCCL", NVIDIA/nccl#111 */
    {"node1:20105:20105 [0] include/socket.h:185 WARN Call to connect failed "
     ": Connection refused",
     NCD_LOG_WARN, "node1", 20105, 20105, 0, "include/socket.h", 185, -1, 0,
     "Call to connect failed : Connection refused", NULL},
    /* NCCL 1.x: printf("WARN %s:%d ", __FILE__, __LINE__), src/core.h of
     * v1.3.4; INFO: printf("INFO ") */
    {"WARN src/core.cu:522 Cuda failure 'out of memory'", NCD_LOG_WARN, NULL,
     -1, -1, -1, "src/core.cu", 522, -1, 0, "Cuda failure 'out of memory'",
     NULL},
    {"INFO rank 0 using device 0 (0000:04:00.0)", NCD_LOG_INFO, NULL, -1, -1,
     -1, NULL, 0, -1, 0, "rank 0 using device 0 (0000:04:00.0)", NULL},
    {"INFO: an unrelated logger", NCD_LOG_NONE, NULL, -1, -1, -1, NULL, 0, -1,
     0, NULL, NULL},
    {"WARN: disk almost full", NCD_LOG_NONE, NULL, -1, -1, -1, NULL, 0, -1, 0,
     NULL, NULL},
    /* ---- headers cut by a collector or a copy-paste (the message shapes
     * of transport.cc / net.cc / init.cc): issue 9's example */
    {"9[1a000] -> 2[6b000] [send] via NET/IB/0/GDRDMA", NCD_LOG_INFO, NULL,
     -1, -1, -1, NULL, 0, -1, 0,
     "9[1a000] -> 2[6b000] [send] via NET/IB/0/GDRDMA", NULL},
    {"Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read", NCD_LOG_INFO, NULL, -1,
     -1, -1, NULL, 0, -1, 0, "Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read",
     NULL},
    {"[1,2]<stdout>:NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.1<0>",
     NCD_LOG_INFO, NULL, -1, -1, -1, NULL, 0, 2, 0,
     "NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.1<0>",
     "NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.1<0>"},
    {"NCCL_SOCKET_IFNAME set by environment to eth0", NCD_LOG_INFO, NULL, -1,
     -1, -1, NULL, 0, -1, 0, "NCCL_SOCKET_IFNAME set by environment to eth0",
     NULL},
    {"Channel 5 is busy", NCD_LOG_NONE, NULL, -1, -1, -1, NULL, 0, -1, 0, NULL,
     NULL},
    /* ---- launchers */
    /* Horovod (Gloo) "[rank]<stdout>:", horovod test/single/test_service.py */
    {"[0]<stdout>:node1:1:2 [0] NCCL INFO Using network IB", NCD_LOG_INFO,
     "node1", 1, 2, 0, NULL, 0, 0, 0, "Using network IB",
     "node1:1:2 [0] NCCL INFO Using network IB"},
    /* Ray worker output, "(RayWorkerWrapper pid=1000) ..." in
     * NVIDIA/nccl#1591; "(pid=N, ip=A)" on other nodes */
    {"(RayWorkerWrapper pid=1019, ip=10.0.0.2) node2:1019:1019 [0] NCCL INFO "
     "Bootstrap : Using eth0:10.0.0.2<0>",
     NCD_LOG_INFO, "node2", 1019, 1019, 0, NULL, 0, -1, 0,
     "Bootstrap : Using eth0:10.0.0.2<0>",
     "node2:1019:1019 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>"},
    {"(pid=4242) node1:4242:4300 [0] NCCL INFO Using network Socket",
     NCD_LOG_INFO, "node1", 4242, 4300, 0, NULL, 0, -1, 0,
     "Using network Socket", "node1:4242:4300 [0] NCCL INFO Using network Socket"},
    /* Determined AI wrap_rank.py "[rank=N] " */
    {"[rank=3] node1:9:9 [3] NCCL INFO Connected all rings", NCD_LOG_INFO,
     "node1", 9, 9, 3, NULL, 0, 3, 0, "Connected all rings",
     "node1:9:9 [3] NCCL INFO Connected all rings"},
    /* docker compose "<service>  | " */
    {"trainer-1  | node1:9:9 [0] NCCL INFO Using network IB", NCD_LOG_INFO,
     "node1", 9, 9, 0, NULL, 0, -1, 0, "Using network IB",
     "node1:9:9 [0] NCCL INFO Using network IB"},
    /* ---- collectors */
    /* kubectl logs --prefix "[pod/<pod>/<container>] " */
    {"[pod/job-worker-0/pytorch] node1:9:9 [0] NCCL INFO Using network IB",
     NCD_LOG_INFO, "node1", 9, 9, 0, NULL, 0, -1, 0, "Using network IB",
     "node1:9:9 [0] NCCL INFO Using network IB"},
    /* kubectl logs --timestamps (RFC 3339 with nanoseconds) */
    {"2024-05-06T07:08:09.123456789Z node1:9:9 [0] NCCL INFO Using network IB",
     NCD_LOG_INFO, "node1", 9, 9, 0, NULL, 0, -1, 1, "Using network IB",
     "node1:9:9 [0] NCCL INFO Using network IB"},
    /* CRI log files (containerd, CRI-O): "<time> <stream> <F|P> <line>" */
    {"2024-05-06T07:08:09.123456789Z stderr F node1:9:9 [0] "
     "misc/socket.cc:538 NCCL WARN socketProgress: Connection closed by "
     "remote peer node2<55426>",
     NCD_LOG_WARN, "node1", 9, 9, 0, "misc/socket.cc", 538, -1, 1,
     "socketProgress: Connection closed by remote peer node2<55426>",
     "node1:9:9 [0] misc/socket.cc:538 NCCL WARN socketProgress: Connection "
     "closed by remote peer node2<55426>"},
    /* Docker json-file / Fluent Bit: {"log":"...\n","stream":..,"time":..} */
    {"{\"log\":\"node1:9:9 [0] NCCL INFO Using network IB\\n\",\"stream\":"
     "\"stdout\",\"time\":\"2024-05-06T07:08:09.123456789Z\"}",
     NCD_LOG_INFO, "node1", 9, 9, 0, NULL, 0, -1, 1, "Using network IB",
     "node1:9:9 [0] NCCL INFO Using network IB"},
    /* the same with colour escaped as \u001b and a nested object first */
    {"{\"kubernetes\":{\"pod_name\":\"w-0\",\"labels\":[1,2]},\"log\":"
     "\"\\u001b[31mnode1:9:9 [0] NCCL WARN \\\"x\\\"\\u001b[0m\\n\"}",
     NCD_LOG_WARN, "node1", 9, 9, 0, NULL, 0, -1, 0, "\"x\"",
     "node1:9:9 [0] NCCL WARN \"x\""},
    /* journalctl -o json; Google Cloud Logging textPayload */
    {"{\"__REALTIME_TIMESTAMP\":\"1715000000000000\",\"MESSAGE\":\"node1:9:9 "
     "[0] NCCL INFO Using network IB\"}",
     NCD_LOG_INFO, "node1", 9, 9, 0, NULL, 0, -1, 0, "Using network IB",
     "node1:9:9 [0] NCCL INFO Using network IB"},
    {"{\"textPayload\":\"[rank3]:node1:9:9 [3] NCCL INFO Using network IB\","
     "\"timestamp\":\"2024-05-06T07:08:09Z\"}",
     NCD_LOG_INFO, "node1", 9, 9, 3, NULL, 0, 3, 1, "Using network IB",
     "node1:9:9 [3] NCCL INFO Using network IB"},
    /* JSON that holds no log line stays as it is */
    {"{\"loss\": 0.25, \"step\": 100}", NCD_LOG_NONE, NULL, -1, -1, -1,
     NULL, 0, -1, 0, NULL, NULL},
    /* syslog / journalctl short output */
    {"Jan  2 03:04:05 node1 python3[1234]: node1:1234:1250 [0] NCCL INFO "
     "Using network IB",
     NCD_LOG_INFO, "node1", 1234, 1250, 0, NULL, 0, -1, 0, "Using network IB",
     "node1:1234:1250 [0] NCCL INFO Using network IB"},
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

/* The facts of an NCCL 2.3 log (phrasing of src/include/socket.h,
 * transport/net_ib.cu and init.cu of v2.3.5 / v2.3.7, as NVIDIA/nccl#147
 * and #207 show them): the same fields as from a current log. */
static void test_old_facts(void **state)
{
    (void)state;
    static const char log[] =
        "node1:46654:46654 [0] NCCL INFO NET : Using interface ib0:10.0.0.2<0>\n"
        "node1:46654:46654 [0] NCCL INFO NET/IB : Using interface ib0 for "
        "sideband communication\n"
        "node1:46654:46654 [0] NCCL INFO NET/IB: [0] mlx5_0:1/IB \n"
        "node1:46654:46654 [0] NCCL INFO NET/IB: [1] mlx5_1:1/RoCE \n"
        "node1:46654:46654 [0] NCCL INFO Using internal Network IB\n"
        "node1:46654:46654 [0] NCCL INFO NET : Using interface ib0:10.0.0.2<0>\n"
        "node1:46654:46654 [0] NCCL INFO NET : Using interface eth0:10.1.0.2<0>\n"
        "node1:46654:46654 [0] NCCL INFO NET/Socket : 2 interfaces found\n"
        "NCCL version 2.3.7+cuda9.0\n"
        "node1:46654:46654 [0] NCCL INFO rank 0 nranks 8\n"
        "node1:46654:47152 [0] NCCL INFO comm 0x7f1324000b20 rank 0 nranks 8\n"
        "node1:46654:47152 [0] NCCL INFO Ring 00 : 7 -> 0 via NET/IB/0/GDRDMA\n"
        "node1:46654:47152 [0] NCCL INFO Ring 00 : 0[0] -> 1[1] via P2P/IPC\n"
        "node1:46654:47152 [0] NCCL INFO Ring 01 : 0[0] -> 1[1] via direct "
        "shared memory\n"
        "node1:46654:47152 [0] NCCL INFO comm 0x7f1324000b20 rank 0 nranks 8 - "
        "COMPLETE\n";
    struct ncd_ctx *ctx;
    struct ncd_rules *rules;
    struct ncd_explain *ex;
    assert_int_equal(ncd_ctx_new("/", NULL, &ctx), 0);
    assert_int_equal(ncd_rules_new(&rules), 0);
    assert_true(ncd_rules_load_builtin(ctx, rules) > 0);
    assert_int_equal(ncd_explain_new(ctx, rules, &ex), 0);
    assert_int_equal(ncd_explain_begin(ex, "old.log"), 0);
    assert_int_equal(ncd_explain_feed(ex, log, sizeof log - 1), 0);
    ncd_explain_end(ex);
    json_t *f = ncd_explain_facts_json(ex);
    assert_non_null(f);
    json_t *procs = json_object_get(f, "processes");
    json_t *p = NULL;
    for (size_t i = 0; i < json_array_size(procs); i++)
        if (json_integer_value(json_object_get(json_array_get(procs, i), "pid")) == 46654)
            p = json_array_get(procs, i);
    assert_non_null(p);
    json_t *boot = json_object_get(p, "bootstrap");
    assert_int_equal(json_array_size(boot), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(boot, 0), "name")), "ib0");
    json_t *sock = json_object_get(p, "socket_ifaces");
    assert_int_equal(json_array_size(sock), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(sock, 1), "name")), "eth0");
    assert_string_equal(json_string_value(json_object_get(p, "ib_oob")), "ib0");
    json_t *ib = json_object_get(p, "ib_devices");
    assert_int_equal(json_array_size(ib), 2);
    assert_string_equal(json_string_value(json_array_get(ib, 1)), "mlx5_1:1/RoCE");
    assert_string_equal(json_string_value(json_object_get(p, "network")), "IB");
    assert_string_equal(json_string_value(json_object_get(p, "net_plugin")), "none");
    assert_int_equal(json_integer_value(json_object_get(p, "rank")), 0);
    assert_int_equal(json_integer_value(json_object_get(p, "nranks")), 8);
    assert_int_equal(json_integer_value(json_object_get(p, "init_complete")), 1);
    json_t *tr = json_object_get(p, "transports");
    assert_int_equal(json_integer_value(json_object_get(tr, "net")), 1);
    assert_int_equal(json_integer_value(json_object_get(tr, "net_gdr")), 1);
    assert_int_equal(json_integer_value(json_object_get(tr, "p2p")), 1);
    assert_int_equal(json_integer_value(json_object_get(tr, "shm")), 1);
    /* the bare version line is a per-file pseudo process's */
    json_t *vers = json_object_get(f, "nccl_versions");
    assert_int_equal(json_array_size(vers), 1);
    assert_string_equal(json_string_value(json_array_get(vers, 0)), "2.3.7");
    json_decref(f);
    ncd_explain_free(ex);
    ncd_rules_free(rules);
    ncd_ctx_free(ctx);
}

/* A connection line whose header was cut still counts as a transport. */
static void test_stripped_facts(void **state)
{
    (void)state;
    static const char log[] =
        "9[1a000] -> 2[6b000] [send] via NET/IB/0/GDRDMA\n"
        "Channel 01/0 : 9[1a000] -> 2[6b000] [send] via NET/IB/0/GDRDMA\n"
        "NCCL INFO Channel 00/0 : 3[3] -> 4[4] via P2P/IPC/read\n";
    struct ncd_ctx *ctx;
    struct ncd_rules *rules;
    struct ncd_explain *ex;
    assert_int_equal(ncd_ctx_new("/", NULL, &ctx), 0);
    assert_int_equal(ncd_rules_new(&rules), 0);
    assert_true(ncd_rules_load_builtin(ctx, rules) > 0);
    assert_int_equal(ncd_explain_new(ctx, rules, &ex), 0);
    assert_int_equal(ncd_explain_begin(ex, "cut.log"), 0);
    assert_int_equal(ncd_explain_feed(ex, log, sizeof log - 1), 0);
    ncd_explain_end(ex);
    unsigned long long nl;
    ncd_explain_stats(ex, NULL, NULL, &nl);
    assert_int_equal(nl, 3);
    json_t *f = ncd_explain_facts_json(ex);
    json_t *tr = json_object_get(f, "transports");
    assert_int_equal(json_integer_value(json_object_get(tr, "net_gdr")), 2);
    assert_int_equal(json_integer_value(json_object_get(tr, "p2p")), 1);
    json_decref(f);
    ncd_explain_free(ex);
    ncd_rules_free(rules);
    ncd_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_formats),
        cmocka_unit_test(test_timestamp_value),
        cmocka_unit_test(test_garbage),
        cmocka_unit_test(test_old_facts),
        cmocka_unit_test(test_stripped_facts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
