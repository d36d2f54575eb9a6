/* SPDX-License-Identifier: MIT */
/*
 * explain: the reasoning classes of issue 9, on lines in NCCL's own formats
 * (format strings of the NCCL release named at each test, NVIDIA/nccl
 * tags): failures inside an override, causes that come from a peer or from
 * the odd host out, errno-specific advice, config structs from another
 * nccl.h, known bugs of a release.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>

#include "explain/internal.h"
#include "explain_scan.h"
#include "ncd/knownbugs.h"

/* Scans one log; fails the test unless finding 0 is `id` (dumps all). */
static struct ncd_explain *first(const char *log, const char *id,
                                 struct ncd_findings *fl)
{
    struct src s[] = {{"job.log", log}};
    struct ncd_explain *ex = scan(s, 1, 0, fl);
    if (!id ? fl->n != 0 : !fl->n || strcmp(fl->v[0].id, id) != 0) {
        dump(fl);
        fail_msg("first finding: want %s", id ? id : "none");
    }
    return ex;
}

/* The role the reasoner gave finding `id` (fails when absent). */
static enum ncd_rule_role role_of(const struct ncd_explain *ex,
                                  const struct ncd_findings *fl, const char *id)
{
    for (size_t i = 0; i < fl->n; i++)
        if (strcmp(fl->v[i].id, id) == 0)
            return ncd_explain_role(ex, i);
    fail_msg("no finding %s", id);
    return NCD_ROLE_CONTEXT;
}

static void done(struct ncd_explain *ex, struct ncd_findings *fl)
{
    ncd_findings_release(fl);
    ncd_explain_free(ex);
}

/* ---------------------------------------------------------- overrides */

/* NCCL 2.18.6: src/graph/topo.cc and search.cc echo the files, search.cc:703
 * WARNs "XML Import Channel : dev %d not found." */
static void test_override_graph_file(void **state)
{
    (void)state;
    struct ncd_findings fl = {0};
    struct ncd_explain *ex = first(
        "vm1:16674:16674 [0] NCCL INFO cudaDriverVersion 12020\n"
        "NCCL version 2.18.6+cuda11.8\n"
        "vm1:16674:17023 [0] NCCL INFO NCCL_TOPO_FILE set by environment to /opt/img/topo.xml\n"
        "vm1:16674:17023 [0] NCCL INFO NCCL_GRAPH_FILE set by environment to /opt/img/graph.xml\n"
        "\n"
        "vm1:16674:17023 [0] graph/search.cc:703 NCCL WARN XML Import Channel : dev 1 not found.\n"
        "vm1:16674:17023 [0] NCCL INFO graph/search.cc:733 -> 2\n",
        "env.override-graph-file", &fl);
    assert_string_equal(env_of(&fl.v[0], "NCCL_GRAPH_FILE"), "(unset)");
    assert_non_null(strstr(fl.v[0].cause, "XML Import Channel : dev 1 not found."));
    /* one override names the failure, and the WARN follows as its
     * consequence */
    assert_null(ncd_findings_find(&fl, "env.override-topo-file"));
    assert_int_equal(ncd_explain_role(ex, 1), NCD_ROLE_CONSEQUENCE);
    done(ex, &fl);
}

/* The topology file alone, and a framework summary only. */
static void test_override_topo_file_and_wrappers(void **state)
{
    (void)state;
    struct ncd_findings fl = {0};
    struct ncd_explain *ex = first(
        "node1:2196:2275 [1] NCCL INFO NCCL_TOPO_FILE set by environment to /opt/ofi/p5.48xl-topo.xml\n"
        "node1:2196:2275 [1] graph/xml.h:101 NCCL WARN Attribute arch of node cpu not found\n"
        "node1:2196:2275 [1] NCCL INFO graph/topo.cc:493 -> 3\n",
        "env.override-topo-file", &fl);
    assert_string_equal(env_of(&fl.v[0], "NCCL_TOPO_FILE"), "(unset)");
    done(ex, &fl);
    /* a framework summary counts for the graph file (no other cause) ... */
    ex = first("NCCL_GRAPH_FILE=/opt/img/graph.xml\n"
               "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1269, unhandled system error, NCCL version 2.18.6\n",
               "env.override-graph-file", &fl);
    done(ex, &fl);
    /* ... but not when a root cause elsewhere is known */
    ex = first("node1:1:1 [0] NCCL INFO NCCL_GRAPH_FILE set by environment to /opt/img/graph.xml\n"
               "node1:1:1 [0] NCCL INFO NCCL_TOPO_FILE set by environment to /opt/img/topo.xml\n"
               "node1:1:2 [0] transport/net_ib.cc:1291 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<51522> with error 12, opcode 0, len 0, vendor err 129\n"
               "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1269, unhandled system error, NCCL version 2.18.6\n",
               "ib.completion.retry-exceeded", &fl);
    assert_null(ncd_findings_find(&fl, "env.override-graph-file"));
    assert_null(ncd_findings_find(&fl, "env.override-topo-file"));
    done(ex, &fl);
    /* set, and nothing failed: no finding at all */
    ex = first("node1:1:1 [0] NCCL INFO NCCL_GRAPH_FILE set by environment to /opt/img/graph.xml\n"
               "node1:1:1 [0] NCCL INFO ncclCommInitRank comm 0x55 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId 0x1 - Init COMPLETE\n",
               NULL, &fl);
    done(ex, &fl);
}

/* NCCL 2.27.7: a forced feature (param echo "%s set by environment to
 * %lld.", src/misc/param.cc) and a WARN of its file. */
static void test_override_forced_feature(void **state)
{
    (void)state;
    struct ncd_findings fl = {0};
    struct ncd_explain *ex = first(
        "node1:5:5 [0] NCCL INFO NCCL_NVLS_ENABLE set by environment to 1.\n"
        "\n"
        "node1:5:9 [0] transport/nvls.cc:154 NCCL WARN Cuda failure 1 'invalid argument'\n",
        "env.override-nvls", &fl);
    assert_string_equal(env_of(&fl.v[0], "NCCL_NVLS_ENABLE"), "(unset)");
    done(ex, &fl);
    /* the default value forces nothing */
    struct src s[] = {{"a", "node1:5:5 [0] NCCL INFO NCCL_NVLS_ENABLE set by environment to 2.\n"
                            "node1:5:9 [0] transport/nvls.cc:154 NCCL WARN Cuda failure 1 'invalid argument'\n"}};
    ex = scan(s, 1, 0, &fl);
    assert_null(ncd_findings_find(&fl, "env.override-nvls"));
    done(ex, &fl);
}

/* ---------------------------------------------------------- peers */

/* NCCL 2.19.3 src/misc/socket.cc:714: ncclSocketToString prints "" for a
 * family it does not know, hence "address  with". */
static const char garbage_warn[] =
    "node2:525781:525957 [0] misc/socket.cc:714 NCCL WARN ncclSocketInit: connecting to address  with family 0 is neither AF_INET(2) nor AF_INET6(10)\n";

static void test_peer_garbage_address(void **state)
{
    (void)state;
    struct ncd_findings fl = {0};
    char log[2048];
    snprintf(log, sizeof log,
             "node2:525781:525781 [0] NCCL INFO Bootstrap : Using ens7:10.0.0.31<0>\n"
             "node2:525781:525781 [0] NCCL INFO NCCL version 2.19.3+cuda12.3\n"
             "node2:525781:525957 [0] NCCL INFO NET/Socket : Using [0]ens7:10.0.0.31<0>\n"
             "%s", garbage_warn);
    struct ncd_explain *ex = first(log, "version.peer-garbage-address", &fl);
    assert_int_equal(fl.v[0].category, NCD_CAT_VERSION_MISMATCH);
    assert_non_null(strstr(fl.v[0].cause, "ens7"));
    assert_null(env_of(&fl.v[0], "NCCL_SOCKET_IFNAME"));
    assert_int_equal(role_of(ex, &fl, "socket.family-garbage"), NCD_ROLE_CONSEQUENCE);
    done(ex, &fl);
    /* no interface of its own: the address is its own, unset (IFNAME) */
    snprintf(log, sizeof log,
             "node2:5:5 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth9\n%s",
             garbage_warn);
    ex = first(log, "net.ifname-no-match", &fl);
    assert_null(ncd_findings_find(&fl, "version.peer-garbage-address"));
    done(ex, &fl);
    ex = first(garbage_warn, "socket.family-garbage", &fl);
    done(ex, &fl);
    /* two versions logged: the version mismatch says it all */
    snprintf(log, sizeof log,
             "node1:7:7 [0] NCCL INFO NCCL version 2.20.5+cuda12.3\n"
             "node2:525781:525781 [0] NCCL INFO Bootstrap : Using ens7:10.0.0.31<0>\n"
             "node2:525781:525781 [0] NCCL INFO NCCL version 2.19.3+cuda12.3\n%s",
             garbage_warn);
    ex = first(log, "version.nccl-mismatch", &fl);
    assert_null(ncd_findings_find(&fl, "version.peer-garbage-address"));
    done(ex, &fl);
}

/* NCCL_SOCKET_IFNAME with a blank: NCCL trims none (src/misc/utils.cc
 * parseStringList), so the value without its blanks is the fix; without a
 * blank the general no-match rule answers and exports nothing. */
static void test_ifname_blank(void **state)
{
    (void)state;
    static const struct {
        const char *value, *id, *fixed;
    } cases[] = {
        {"eth1, eth0", "net.ifname-blank", "eth1,eth0"},
        {" ens5", "net.ifname-blank", "ens5"},
        {"=eth0 ", "net.ifname-no-match", NULL}, /* the log drops it */
        {"eth9", "net.ifname-no-match", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct ncd_findings fl = {0};
        char log[512];
        snprintf(log, sizeof log,
                 "node1:10:10 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to %s\n"
                 "node1:10:10 [0] misc/socket.cc:412 NCCL WARN Bootstrap : no socket interface found\n",
                 cases[i].value);
        struct ncd_explain *ex = first(log, cases[i].id, &fl);
        assert_int_equal(fl.v[0].category, NCD_CAT_NET_IFNAME);
        const char *v = env_of(&fl.v[0], "NCCL_SOCKET_IFNAME");
        if (cases[i].fixed)
            assert_string_equal(v ? v : "(none)", cases[i].fixed);
        else
            assert_null(v);
        done(ex, &fl);
    }
}

/* NCCL 2.27.3 src/misc/socket.cc: "%s: connect to %s returned %s, exceeded
 * error retry count after %d attempts". */
static void test_peer_loopback(void **state)
{
    (void)state;
    struct ncd_findings fl = {0};
    static const char head[] =
        "node1:10:10 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to ^docker0\n"
        "node1:10:10 [0] NCCL INFO Bootstrap: Using eth0:10.0.0.1<0>\n";
    static const char warn[] =
        "node1:10:20 [0] misc/socket.cc:611 NCCL WARN socketPollConnect: connect to 127.0.1.1<43125> returned Connection refused, exceeded error retry count after 35 attempts\n";
    char log[2048];
    snprintf(log, sizeof log,
             "%snode1:10:20 [0] NCCL INFO comm 0x5 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0\n%s",
             head, warn);
    struct ncd_explain *ex = first(log, "net.peer-loopback", &fl);
    assert_int_equal(fl.v[0].category, NCD_CAT_NET_IFNAME);
    assert_string_equal(env_of(&fl.v[0], "NCCL_SOCKET_IFNAME"), "eth0");
    assert_non_null(strstr(fl.v[0].cause, "does not exclude lo"));
    done(ex, &fl);
    /* one node: loopback is where the peers are */
    snprintf(log, sizeof log,
             "%snode1:10:20 [0] NCCL INFO comm 0x5 rank 0 nRanks 8 nNodes 1 localRanks 8 localRank 0 MNNVL 0\n%s",
             head, warn);
    ex = first(log, "socket.connect-failed", &fl);
    assert_null(ncd_findings_find(&fl, "net.peer-loopback"));
    done(ex, &fl);
}

/* Paddle's TCP store (paddle/phi/core/distributed/store/tcp_utils.cc). */
static void test_peer_unusable_address(void **state)
{
    (void)state;
    struct ncd_findings fl = {0};
    struct ncd_explain *ex = first(
        "I1127 21:34:05.015228 3935673 tcp_utils.cc:107] Retry to connect to 0.1.68.146:63314 while the server is not yet listening.\n",
        "net.peer-unusable-address", &fl);
    done(ex, &fl);
    ex = first("I1127 21:34:05.015228 3935673 tcp_utils.cc:107] Retry to connect to 10.0.0.1:63314 while the server is not yet listening.\n",
               "paddle.store-connect-retry", &fl);
    done(ex, &fl);
    ex = first("node1:1:2 [0] misc/socket.cc:611 NCCL WARN socketPollConnect: connect to 224.0.0.1<5000> returned Connection timed out, exceeded error retry count after 35 attempts\n",
               "net.peer-unusable-address", &fl);
    done(ex, &fl);
}

static void test_peer_refused(void **state)
{
    (void)state;
    struct ncd_findings fl = {0};
    static const char hosts[] =
        "node1:10:10 [0] NCCL INFO Bootstrap: Using eth0:10.0.0.1<0>\n"
        "node1:10:10 [0] NCCL INFO comm 0x5 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0\n"
        "node2:20:20 [0] NCCL INFO Bootstrap: Using eth0:10.0.0.2<0>\n"
        "node2:20:20 [0] NCCL INFO comm 0x6 rank 8 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0\n";
    char log[2048];
    /* the address of a process of the job: it is gone */
    snprintf(log, sizeof log,
             "%snode1:10:20 [0] misc/socket.cc:611 NCCL WARN socketPollConnect: connect to 10.0.0.2<43125> returned Connection refused, exceeded error retry count after 35 attempts\n",
             hosts);
    struct ncd_explain *ex = first(log, "net.peer-refused", &fl);
    assert_non_null(strstr(fl.v[0].cause, "node2"));
    done(ex, &fl);
    /* every node is here and none has that address: a stale address */
    snprintf(log, sizeof log,
             "%snode1:10:20 [0] misc/socket.cc:611 NCCL WARN socketPollConnect: connect to 10.0.0.99<43125> returned Connection refused, exceeded error retry count after 35 attempts\n",
             hosts);
    ex = first(log, "net.peer-refused", &fl);
    assert_non_null(strstr(fl.v[0].cause, "stale"));
    done(ex, &fl);
    /* a time-out is not a refusal */
    snprintf(log, sizeof log,
             "%snode1:10:20 [0] misc/socket.cc:611 NCCL WARN socketPollConnect: connect to 10.0.0.2<43125> returned Connection timed out, exceeded error retry count after 35 attempts\n",
             hosts);
    ex = first(log, "socket.connect-failed", &fl);
    assert_null(ncd_findings_find(&fl, "net.peer-refused"));
    done(ex, &fl);
}

/* ---------------------------------------------------------- odd host out */

/* NCCL 2.19.3 src/transport/net.cc: "[send]" lines are printed by the
 * sender, "[receive]" lines by the receiver. */
static void test_gdr_odd_host(void **state)
{
    (void)state;
    struct ncd_findings fl = {0};
    struct src s[] = {
        {"node1.log",
         "node1:1:2 [1] NCCL INFO Channel 00/0 : 9[1] -> 2[1] [send] via NET/IB/0/GDRDMA\n"
         "node1:1:2 [1] NCCL INFO Channel 00/0 : 2[1] -> 9[1] [receive] via NET/IB/0/GDRDMA\n"},
        {"node2.log",
         "node2:5:6 [1] NCCL INFO Channel 00/0 : 9[1] -> 2[1] [receive] via NET/IB/1\n"
         "node2:5:6 [1] NCCL INFO Channel 00/0 : 2[1] -> 9[1] [send] via NET/IB/1\n"}};
    struct ncd_explain *ex = scan(s, 2, 0, &fl);
    assert_true(fl.n > 0);
    assert_string_equal(fl.v[0].id, "net.peer-gdr-missing");
    assert_int_equal(fl.v[0].severity, NCD_SEV_ERROR);
    assert_non_null(strstr(fl.v[0].title, "host node1 but not on node2"));
    done(ex, &fl);
    /* header stripped: ranks stand in for hosts (a warning) */
    ex = first("[0] NCCL INFO Channel 00/0 : 9[1a000] -> 2[6b000] [send] via NET/IB/0/GDRDMA\n"
               "[0] NCCL INFO Channel 00/0 : 9[1a000] -> 2[6b000] [receive] via NET/IB/1\n",
               "net.peer-gdr-missing", &fl);
    assert_int_equal(fl.v[0].severity, NCD_SEV_WARNING);
    assert_non_null(strstr(fl.v[0].title, "rank 9 but not on 2"));
    done(ex, &fl);
    /* two ranks of one host differ: PCI distance, not a module */
    struct src one[] = {{"node1.log",
        "node1:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA\n"
        "node1:3:4 [7] NCCL INFO Channel 00/0 : 7[7] -> 15[7] [send] via NET/IB/3\n"}};
    ex = scan(one, 1, 0, &fl);
    assert_null(ncd_findings_find(&fl, "net.peer-gdr-missing"));
    done(ex, &fl);
}

/* NCCL 2.19.3 src/transport/nvls.cc: "NVLS multicast support is %savailable
 * on dev %d". */
static void test_nvls_odd_host(void **state)
{
    (void)state;
    struct ncd_findings fl = {0};
    struct ncd_explain *ex = first(
        "node1:1:2 [0] NCCL INFO NVLS multicast support is available on dev 0\n"
        "node2:3:4 [0] NCCL INFO NVLS multicast support is not available on dev 0\n",
        "gpu.host-nvls-missing", &fl);
    assert_non_null(strstr(fl.v[0].title, "on node1 but not on node2"));
    done(ex, &fl);
}

/* Hosts that bootstrap on different interfaces, and a failed connection
 * (NCCL 2.27.3 formats). */
static void test_host_iface_differs(void **state)
{
    (void)state;
    struct ncd_findings fl = {0};
    static const char hosts[] =
        "node1:1:1 [0] NCCL INFO Bootstrap: Using ib0:10.1.0.1<0>\n"
        "node2:2:2 [0] NCCL INFO Bootstrap: Using eth0:10.0.0.2<0>\n"
        "node3:3:3 [0] NCCL INFO Bootstrap: Using eth0:10.0.0.3<0>\n";
    char log[1024];
    snprintf(log, sizeof log,
             "%snode1:1:5 [0] misc/socket.cc:611 NCCL WARN socketPollConnect: connect to 10.0.0.2<43125> returned Connection timed out, exceeded error retry count after 35 attempts\n",
             hosts);
    struct ncd_explain *ex = first(log, "net.host-iface-differs", &fl);
    assert_string_equal(env_of(&fl.v[0], "NCCL_SOCKET_IFNAME"), "eth0");
    assert_non_null(strstr(fl.v[0].title, "eth0 on node2, node3, ib0 on node1"));
    done(ex, &fl);
    /* nothing failed: different names alone are fine */
    struct src s1[] = {{"ok.log", hosts}};
    ex = scan(s1, 1, 0, &fl);
    assert_null(ncd_findings_find(&fl, "net.host-iface-differs"));
    done(ex, &fl);
}

/* ---------------------------------------------------------- errno advice */

/* NCCL 2.7.8 src/misc/ibvwrap.cc: "Call to %s failed with error %s";
 * 2.27.7: "Call to ibv_modify_qp failed with %d %s, on dev %s:%d, ...". */
static void test_ib_errno_enodev(void **state)
{
    (void)state;
    struct ncd_findings fl = {0};
    struct ncd_explain *ex = first(
        "node1:76786:76786 [0] NCCL INFO NET/IB : Using [0]mlx5_3:1/RoCE ; OOB eth1:10.0.0.81<0>\n"
        "NCCL version 2.7.8+cuda10.2\n"
        "node1:76786:77145 [3] misc/ibvwrap.cc:284 NCCL WARN Call to ibv_modify_qp failed with error No such device\n",
        "ib.verb-errno", &fl);
    assert_string_equal(env_of(&fl.v[0], "NCCL_IB_HCA"), "^mlx5_3");
    assert_non_null(strstr(fl.v[0].title, "ENODEV"));
    assert_int_equal(role_of(ex, &fl, "ib.modify-qp"), NCD_ROLE_CONSEQUENCE);
    done(ex, &fl);
    /* the line names the HCA (2.24+) among several */
    ex = first("node1:5:5 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; OOB eth0:10.0.0.1<0>\n"
               "node1:5:9 [0] misc/ibvwrap.cc:301 NCCL WARN Call to ibv_modify_qp failed with 19 No such device, on dev mlx5_1:1, curr state INIT, next state RTR, local GID index 3, local GID ::ffff:10.0.0.1, remote GID ::ffff:10.0.0.2\n",
               "ib.verb-errno", &fl);
    assert_string_equal(env_of(&fl.v[0], "NCCL_IB_HCA"), "^mlx5_1");
    done(ex, &fl);
    /* several HCAs and a line that does not say which: no guess */
    ex = first("node1:5:5 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE ; OOB eth0:10.0.0.1<0>\n"
               "node1:5:9 [0] misc/ibvwrap.cc:284 NCCL WARN Call to ibv_modify_qp failed with error No such device errno 19\n",
               "ib.verb-errno", &fl);
    assert_null(env_of(&fl.v[0], "NCCL_IB_HCA"));
    done(ex, &fl);
    /* an errno the table does not know keeps the verb's rule */
    ex = first("node1:5:9 [0] misc/ibvwrap.cc:301 NCCL WARN Call to ibv_modify_qp failed with 16 Device or resource busy, on dev mlx5_1:1, curr state INIT, next state RTR, local GID index 3, local GID N/A, remote GID N/A\n",
               "ib.modify-qp", &fl);
    done(ex, &fl);
}

/* ETIMEDOUT: GID index 0 before 2.21 (RoCE), cross-rail from 2.21
 * (NCCL 2.30.7 printIbModifyQpHint); the QP message dates a log without a
 * version line (2.24.3+). */
static void test_ib_errno_timeout_by_version(void **state)
{
    (void)state;
    static const char warn_old[] =
        "node1:5:9 [0] misc/ibvwrap.cc:284 NCCL WARN Call to ibv_modify_qp failed with error Connection timed out errno 110\n";
    struct ncd_findings fl = {0};
    char log[1024];
    snprintf(log, sizeof log,
             "node1:5:5 [0] NCCL INFO NCCL version 2.19.3+cuda12.3\n"
             "node1:5:5 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE ; OOB eth0:10.0.0.1<0>\n%s",
             warn_old);
    struct ncd_explain *ex = first(log, "ib.verb-errno", &fl);
    assert_string_equal(env_of(&fl.v[0], "NCCL_IB_GID_INDEX"), "3");
    done(ex, &fl);
    snprintf(log, sizeof log,
             "node1:5:5 [0] NCCL INFO NCCL version 2.23.4+cuda12.6\n"
             "node1:5:5 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE ; OOB eth0:10.0.0.1<0>\n%s",
             warn_old);
    ex = first(log, "ib.verb-errno", &fl);
    assert_string_equal(env_of(&fl.v[0], "NCCL_CROSS_NIC"), "0");
    assert_null(env_of(&fl.v[0], "NCCL_IB_GID_INDEX"));
    done(ex, &fl);
    ex = first("[2026-03-13 22:26:02] node1:7:7 [5] misc/ibvwrap.cc:262 NCCL WARN Call to ibv_modify_qp failed with 110 Connection timed out, on dev mlx5_5:1, curr state INIT, next state RTR, local GID index 3, local GID ::ffff:10.0.0.1, remote GID ::ffff:10.0.1.2\n",
               "ib.verb-errno", &fl);
    assert_string_equal(env_of(&fl.v[0], "NCCL_CROSS_NIC"), "0");
    done(ex, &fl);
}

/* A suggestion of a variable the logged NCCL does not read is dropped
 * (data/nccl-vars.yaml since / removed). */
static void test_env_by_release(void **state)
{
    (void)state;
    static const char rule[] =
        "rules:\n"
        "  - id: t.frob\n"
        "    category: gpu.fabric\n"
        "    severity: error\n"
        "    title: t\n"
        "    patterns: ['frobnicate failed']\n"
        "    cause: c\n    fix: f\n    nccl_versions: any\n    source: test\n"
        "    env: {NCCL_NVLS_ENABLE: '0', NCCL_IB_GDR_LEVEL: '2', NCCL_P2P_DISABLE: '1'}\n"
        "    examples: {match: ['frobnicate failed'], no_match: ['frobnicate ok']}\n";
    struct ncd_rules *r;
    assert_int_equal(ncd_rules_new(&r), 0);
    assert_int_equal(ncd_rules_load_buf(ctx, r, "t.yaml", rule, strlen(rule)), 1);
    static const struct {
        const char *version;
        const char *nvls, *gdr_level;
    } cases[] = {
        {"node1:1:1 [0] NCCL INFO NCCL version 2.16.5+cuda12.0\n", NULL, NULL},
        {"node1:1:1 [0] NCCL INFO NCCL version 2.18.6+cuda12.2\n", "0", NULL},
        {"node1:1:1 [0] NCCL INFO NCCL version 2.3.7+cuda10.0\n", NULL, "2"},
        {"", "0", "2"}, /* no version: nothing can be ruled out */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char log[512];
        snprintf(log, sizeof log, "%snode1:1:1 [0] x.cc:1 NCCL WARN frobnicate failed\n",
                 cases[i].version);
        struct ncd_explain *ex;
        struct ncd_findings fl = {0};
        assert_int_equal(ncd_explain_new(ctx, r, &ex), 0);
        ncd_explain_begin(ex, "v.log");
        ncd_explain_feed(ex, log, strlen(log));
        assert_true(ncd_explain_finish(ex, &fl) >= 1);
        const struct ncd_finding *f = ncd_findings_find(&fl, "t.frob");
        assert_non_null(f);
        const char *a = env_of(f, "NCCL_NVLS_ENABLE"), *b = env_of(f, "NCCL_IB_GDR_LEVEL");
        if ((a == NULL) != (cases[i].nvls == NULL) || (b == NULL) != (cases[i].gdr_level == NULL))
            fail_msg("case %zu: NVLS_ENABLE %s, IB_GDR_LEVEL %s", i, a ? a : "-", b ? b : "-");
        assert_string_equal(env_of(f, "NCCL_P2P_DISABLE"), "1");
        done(ex, &fl);
    }
    ncd_rules_free(r);
}

/* ---------------------------------------------------------- libraries */

/* NCCL 2.14.3 src/init.cc:1270 rejects the INT_MIN that 2.17+'s
 * NCCL_CONFIG_INITIALIZER writes (NCCL_CONFIG_UNDEF_INT). */
static void test_config_from_another_header(void **state)
{
    (void)state;
    struct ncd_findings fl = {0};
    struct ncd_explain *ex = first(
        "node1:1234:1234 [0] NCCL INFO NCCL version 2.14.3+cuda11.7\n"
        "\n"
        "node1:1234:1234 [0] init.cc:1270 NCCL WARN Invalid config blocking attribute value -2147483648\n",
        "lib.header-mismatch", &fl);
    assert_int_equal(fl.v[0].category, NCD_CAT_LIB_NCCL);
    done(ex, &fl);
    ex = first("node1:1234:1234 [0] init.cc:1270 NCCL WARN Invalid config blocking attribute value 3\n",
               "nccl.api-misuse", &fl);
    done(ex, &fl);
}

/* ---------------------------------------------------------- NVLS */

/* NCCL 2.18.5 src/transport/nvls.cc: CUCHECK's "Cuda failure %d '%s'" is
 * an NVLS (Fabric Manager) problem there, a CUDA one elsewhere. */
static void test_cuda_failure_by_file(void **state)
{
    (void)state;
    struct ncd_findings fl = {0};
    struct ncd_explain *ex = first(
        "node1:12098:12098 [2] NCCL INFO NCCL version 2.18.5+cuda12.2\n"
        "node1:12098:12141 [2] transport/nvls.cc:244 NCCL WARN Cuda failure 1 'invalid argument'\n"
        "node1:12098:12141 [2] NCCL INFO transport/nvls.cc:394 -> 1\n",
        "nvls.cuda-failure", &fl);
    assert_string_equal(env_of(&fl.v[0], "NCCL_NVLS_ENABLE"), "0");
    done(ex, &fl);
    ex = first("node1:12098:12141 [2] enqueue.cc:1500 NCCL WARN Cuda failure 1 'invalid argument'\n",
               "cuda.error.invalid-usage", &fl);
    done(ex, &fl);
}

/* ---------------------------------------------------------- known bugs */

/* Entries in the schema of data/nccl-known-bugs.yaml (include/ncd/
 * knownbugs.h); facts from NCCL's release notes as that file cites. */
static const char sample_bugs[] =
    "bugs:\n"
    "  - id: t-uds-split\n"
    "    summary: 'cuMem UDS connection fails with ncclCommSplit: the UDS socket name is reused'\n"
    "    kind: error\n"
    "    area: sys.shm\n"
    "    affected: '>=2.20.3 <2.20.5'\n"
    "    fixed: '2.20.5'\n"
    "    signature:\n"
    "      - 'UDS: Binding to socket [^ ]+ failed : Address already in use'\n"
    "    signature_source: 'log in issue #1185 (2.20.3)'\n"
    "    source: ['https://github.com/NVIDIA/nccl/issues/1185']\n"
    "  - id: t-match-subnet\n"
    "    summary: 'With NCCL_COMM_ID the bootstrap picks an interface outside its subnet, often lo'\n"
    "    kind: error\n"
    "    area: net.iface-choice\n"
    "    affected: '>=2.29.2 <2.30.3'\n"
    "    fixed: '2.30.3'\n"
    "    signature:\n"
    "      - 'NCCL_COMM_ID set by environment to'\n"
    "      - 'Bootstrap ?: Using lo:127\\.0\\.0\\.1'\n"
    "    signature_source: 'PR #2047'\n"
    "    source: ['https://github.com/NVIDIA/nccl/pull/2047']\n"
    "  - id: t-no-signature\n"
    "    summary: 'a hang the log does not show'\n"
    "    kind: hang\n"
    "    area: timeout\n"
    "    affected: '<2.19.1'\n"
    "    fixed: '2.19.1'\n"
    "    source: ['https://github.com/NVIDIA/nccl/commit/f9c3dc251e0f']\n";

static void test_known_bugs_loader(void **state)
{
    (void)state;
    struct ncd_known_bugs kb;
    assert_int_equal(ncd_known_bugs_load(ctx, sample_bugs, strlen(sample_bugs), "s.yaml", &kb), 0);
    assert_int_equal(kb.n, 3);
    assert_int_equal(kb.v[0].vmin, 22003);
    assert_int_equal(kb.v[0].vmax, 22005);
    assert_int_equal(kb.v[0].fixed_code, 22005);
    assert_int_equal(kb.v[1].n_signature, 2);
    assert_true(ncd_known_bug_affects(&kb.v[0], 22003));
    assert_false(ncd_known_bug_affects(&kb.v[0], 22005));
    assert_false(ncd_known_bug_affects(&kb.v[2], 0)); /* unknown: no */
    ncd_known_bugs_release(&kb);
    static const struct {
        const char *yaml, *detail;
    } bad[] = {
        {"bugs: 3\n", "expected a mapping with a 'bugs:' list"},
        {"bugs:\n  - id: a\n    summary: s\n    kind: flaky\n    area: timeout\n"
         "    affected: '<2.19.1'\n    fixed: '2.19.1'\n    source: [x]\n", "unknown kind 'flaky'"},
        {"bugs:\n  - id: a\n    summary: s\n    kind: hang\n    area: slow\n"
         "    affected: '<2.19.1'\n    fixed: '2.19.1'\n    source: [x]\n", "must be a finding category"},
        {"bugs:\n  - id: a\n    summary: s\n    kind: hang\n    area: timeout\n"
         "    affected: '<2.19.1'\n    fixed: '2.18.1'\n    source: [x]\n", "the fixing release 2.18.1 is affected"},
        {"bugs:\n  - id: a\n    summary: s\n    kind: hang\n    area: timeout\n"
         "    affected: 'soon'\n    fixed: '2.19.1'\n    source: [x]\n", "are not NCCL versions"},
        {"bugs:\n  - id: a\n    summary: s\n    kind: hang\n    area: timeout\n"
         "    affected: '<2.19.1'\n    fixed: '2.19.1'\n    signature: [x]\n    source: [x]\n",
         "needs 'signature_source'"},
        {"bugs:\n  - id: a\n    summary: s\n    kind: hang\n    area: timeout\n"
         "    affected: '<2.19.1'\n    fixed: '2.19.1'\n", "no 'source'"},
        {"bugs:\n  - id: a\n    summary: s\n    kind: hang\n    area: timeout\n"
         "    affected: '<2.19.1'\n    fixed: '2.19.1'\n    source: [x]\n"
         "  - id: a\n    summary: s\n    kind: hang\n    area: timeout\n"
         "    affected: '<2.19.1'\n    fixed: '2.19.1'\n    source: [x]\n", "duplicate bug id 'a'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ncd_ctx_clear_error(ctx);
        assert_int_equal(ncd_known_bugs_load(ctx, bad[i].yaml, strlen(bad[i].yaml), "b.yaml", &kb),
                         NCD_EPARSE);
        if (!strstr(ncd_ctx_errdetail(ctx), bad[i].detail) || !strstr(ncd_ctx_errdetail(ctx), "b.yaml"))
            fail_msg("case %zu: %s", i, ncd_ctx_errdetail(ctx));
        assert_int_equal(kb.n, 0);
        ncd_known_bugs_release(&kb);
    }
    /* a signature the prefilter cannot use is refused, the rules unchanged */
    static const char nolit[] =
        "bugs:\n  - id: a\n    summary: s\n    kind: hang\n    area: timeout\n"
        "    affected: '<2.19.1'\n    fixed: '2.19.1'\n    signature: ['[0-9]+ x']\n"
        "    signature_source: s\n    source: [x]\n";
    struct ncd_rules *r;
    assert_int_equal(ncd_rules_new(&r), 0);
    assert_true(ncd_rules_load_builtin(ctx, r) > 0);
    struct ncd_rule_info before, after;
    long kr = ncd__rules_find(r, "version.known-bug");
    assert_true(kr >= 0);
    ncd_rules_info(r, (size_t)kr, &before);
    ncd_ctx_clear_error(ctx);
    assert_int_equal(ncd__rules_attach_bugs(ctx, r, "n.yaml", nolit, strlen(nolit)), NCD_EINVAL);
    assert_non_null(strstr(ncd_ctx_errdetail(ctx), "literal of 4+"));
    ncd_rules_info(r, (size_t)kr, &after);
    assert_int_equal(before.n_patterns, after.n_patterns);
    ncd_rules_free(r);
}

/* Scans `log` with the built-in rules plus the sample bugs. */
static struct ncd_rules *bug_rules;

static struct ncd_explain *scan_bugs(const char *log, struct ncd_findings *fl)
{
    struct ncd_rules *r;
    struct ncd_explain *ex;
    assert_int_equal(ncd_rules_new(&r), 0);
    assert_true(ncd_rules_load_builtin(ctx, r) > 0);
    ncd_ctx_clear_error(ctx);
    if (ncd__rules_attach_bugs(ctx, r, "s.yaml", sample_bugs, strlen(sample_bugs)) < 0)
        fail_msg("%s", ncd_ctx_errdetail(ctx));
    assert_int_equal(ncd_explain_new(ctx, r, &ex), 0);
    ncd_explain_begin(ex, "bug.log");
    ncd_explain_feed(ex, log, strlen(log));
    ncd_explain_end(ex);
    assert_true(ncd_explain_finish(ex, fl) >= 0);
    bug_rules = r; /* the scan uses them: freed by free_bugs_scan */
    return ex;
}

static void free_bugs_scan(struct ncd_explain *ex, struct ncd_findings *fl)
{
    done(ex, fl);
    ncd_rules_free(bug_rules);
    bug_rules = NULL;
}

/* NCCL 2.20.3 src/misc/ipcsocket.cc:57 "UDS: Binding to socket %s failed :
 * %s (%d)"; 2.29.2 src/bootstrap.cc "Bootstrap: Using%s". */
static void test_known_bug_tied_to_version(void **state)
{
    (void)state;
    static const char uds[] =
        "\n"
        "node1:7:9 [1] misc/ipcsocket.cc:57 NCCL WARN UDS: Binding to socket /tmp/nccl-socket-1-deadbeef failed : Address already in use (98)\n";
    struct ncd_findings fl = {0};
    char log[1024];
    snprintf(log, sizeof log, "node1:7:7 [1] NCCL INFO NCCL version 2.20.3+cuda12.3\n%s", uds);
    struct ncd_explain *ex = scan_bugs(log, &fl);
    dump(&fl);
    assert_true(fl.n >= 2);
    assert_string_equal(fl.v[0].id, "version.known-bug");
    assert_int_equal(fl.v[0].category, NCD_CAT_VERSION_KNOWN_BUG);
    assert_non_null(strstr(fl.v[0].title, "2.20.3"));
    assert_non_null(strstr(fl.v[0].title, "fixed in 2.20.5"));
    /* the rule that explains the line still does, as a cause too */
    assert_int_equal(role_of(ex, &fl, "p2p.uds-blocked"), NCD_ROLE_ROOT);
    free_bugs_scan(ex, &fl);
    /* the fixed release, and a log without a version: no bug claimed */
    snprintf(log, sizeof log, "node1:7:7 [1] NCCL INFO NCCL version 2.20.5+cuda12.3\n%s", uds);
    ex = scan_bugs(log, &fl);
    assert_null(ncd_findings_find(&fl, "version.known-bug"));
    free_bugs_scan(ex, &fl);
    ex = scan_bugs(uds, &fl);
    assert_null(ncd_findings_find(&fl, "version.known-bug"));
    free_bugs_scan(ex, &fl);
    /* two signatures: both in one process */
    ex = scan_bugs("node1:5:5 [0] NCCL INFO NCCL version 2.29.3+cuda12.9\n"
                   "node1:5:5 [0] NCCL INFO NCCL_COMM_ID set by environment to 10.0.0.1:29500\n"
                   "node1:5:5 [0] NCCL INFO Bootstrap: Using lo:127.0.0.1<0>\n",
                   &fl);
    const struct ncd_finding *f = ncd_findings_find(&fl, "version.known-bug");
    assert_non_null(f);
    assert_non_null(strstr(f->title, "fixed in 2.30.3"));
    free_bugs_scan(ex, &fl);
    /* ... not one in each of two processes */
    ex = scan_bugs("node1:5:5 [0] NCCL INFO NCCL version 2.29.3+cuda12.9\n"
                   "node1:5:5 [0] NCCL INFO NCCL_COMM_ID set by environment to 10.0.0.1:29500\n"
                   "node2:6:6 [0] NCCL INFO NCCL version 2.29.3+cuda12.9\n"
                   "node2:6:6 [0] NCCL INFO Bootstrap: Using lo:127.0.0.1<0>\n",
                   &fl);
    assert_null(ncd_findings_find(&fl, "version.known-bug"));
    free_bugs_scan(ex, &fl);
}

/* The list of this build, when it has one, loads and attaches. */
static void test_known_bugs_builtin(void **state)
{
    (void)state;
    struct ncd_known_bugs kb;
    int rc = ncd_known_bugs_builtin(ctx, &kb);
    if (rc == NCD_ENOENT) {
        ncd_known_bugs_release(&kb);
        skip(); /* data/nccl-known-bugs.yaml is not in this tree yet */
    }
    if (rc < 0)
        fail_msg("%s", ncd_ctx_errdetail(ctx));
    assert_true(kb.n > 0);
    size_t nsig = 0;
    for (size_t i = 0; i < kb.n; i++)
        nsig += kb.v[i].n_signature;
    struct ncd_rules *r;
    assert_int_equal(ncd_rules_new(&r), 0);
    assert_true(ncd_rules_load_builtin(ctx, r) > 0);
    struct ncd_rule_info ri;
    ncd_rules_info(r, (size_t)ncd__rules_find(r, "version.known-bug"), &ri);
    assert_int_equal(ri.n_patterns, nsig);
    ncd_rules_free(r);
    ncd_known_bugs_release(&kb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_override_graph_file),
        cmocka_unit_test(test_override_topo_file_and_wrappers),
        cmocka_unit_test(test_override_forced_feature),
        cmocka_unit_test(test_peer_garbage_address),
        cmocka_unit_test(test_ifname_blank),
        cmocka_unit_test(test_peer_loopback),
        cmocka_unit_test(test_peer_unusable_address),
        cmocka_unit_test(test_peer_refused),
        cmocka_unit_test(test_gdr_odd_host),
        cmocka_unit_test(test_nvls_odd_host),
        cmocka_unit_test(test_host_iface_differs),
        cmocka_unit_test(test_ib_errno_enodev),
        cmocka_unit_test(test_ib_errno_timeout_by_version),
        cmocka_unit_test(test_env_by_release),
        cmocka_unit_test(test_config_from_another_header),
        cmocka_unit_test(test_cuda_failure_by_file),
        cmocka_unit_test(test_known_bugs_loader),
        cmocka_unit_test(test_known_bug_tied_to_version),
        cmocka_unit_test(test_known_bugs_builtin),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
