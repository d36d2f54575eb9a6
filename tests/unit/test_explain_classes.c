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

#include "explain_scan.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_override_graph_file),
        cmocka_unit_test(test_override_topo_file_and_wrappers),
        cmocka_unit_test(test_override_forced_feature),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
