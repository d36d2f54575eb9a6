/* SPDX-License-Identifier: MIT */
/*
 * explain: reasoning across lines (facts + matches), root-cause ranking by
 * time stamp, consequences, streaming, facts extraction.
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

#include "explain_scan.h"

static void test_docker_plus_connect(void **state)
{
    (void)state;
    struct src s[] = {
        {"node1.log",
         "node1:10:10 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
         "node1:10:10 [0] NCCL INFO Bootstrap : Using docker0:172.17.0.1<0>\n"
         "node1:10:11 [0] NCCL INFO ncclOsSocketConnect: connect to 10.0.0.2<5000> "
         "returned Connection timed out, retrying (1/34) after sleep for 100 msec\n"
         "\n"
         "node1:10:11 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to "
         "10.0.0.2<5000> failed : Connection timed out\n"},
        {"node2.log",
         "node2:20:20 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
         "node2:20:20 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>\n"},
    };
    struct ncd_findings fl = {0};
    struct ncd_explain *ex = scan(s, 2, 0, &fl);
    dump(&fl);
    assert_true(fl.n >= 2);
    assert_string_equal(fl.v[0].id, "net.iface-wrong-connect");
    assert_int_equal(fl.v[0].category, NCD_CAT_NET_IFACE_CHOICE);
    assert_string_equal(env_of(&fl.v[0], "NCCL_SOCKET_IFNAME"), "eth0");
    assert_int_equal(ncd_explain_role(ex, 0), NCD_ROLE_ROOT);
    /* the connect failure is shown, as a consequence */
    size_t k;
    for (k = 0; k < fl.n && strcmp(fl.v[k].id, "socket.connect-failed"); k++)
        ;
    assert_true(k < fl.n);
    assert_int_equal(ncd_explain_role(ex, k), NCD_ROLE_CONSEQUENCE);
    assert_non_null(strstr(fl.v[k].evidence[0], "node1.log:5:"));
    ncd_findings_release(&fl);
    ncd_explain_free(ex);
}

static void test_linklocal_peer_and_unrelated_virtual(void **state)
{
    (void)state;
    /* connections to a link-local peer address: the interface is wrong */
    struct src a[] = {{"a", "\nn1:5:6 [5] misc/socket.cc:483 NCCL WARN socketStartConnect: Connect to "
                            "fe80::966d:ae03:a2:8cf0%ib1<17943> failed : Software caused connection abort\n"}};
    struct ncd_findings fl = {0};
    struct ncd_explain *ex = scan(a, 1, 0, &fl);
    dump(&fl);
    assert_string_equal(fl.v[0].id, "net.iface-linklocal");
    assert_non_null(strstr(fl.v[0].title, "ib1"));
    ncd_findings_release(&fl);
    ncd_explain_free(ex);
    /* a link-local VF in the socket list does not explain a failure to
     * connect to a normal address: the connect failure stays the root */
    struct src b[] = {{"b", "h:1:2 [0] NCCL INFO Bootstrap : Using eth0:10.51.1.14<0>\n"
                            "h:1:3 [0] NCCL INFO NET/Socket : Using [0]eth0:10.51.1.14<0> "
                            "[1]enP2s1:fe80::7e1e:52ff:fe3e:6d31%enP2s1<0>\n"
                            "h:1:3 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to "
                            "10.51.1.15<45763> failed : Software caused connection abort\n"}};
    ex = scan(b, 1, 0, &fl);
    dump(&fl);
    assert_string_equal(fl.v[0].id, "socket.connect-failed");
    assert_int_equal(ncd_explain_role(ex, 0), NCD_ROLE_ROOT);
    assert_string_equal(env_of(&fl.v[0], "NCCL_SOCKET_IFNAME"), "eth0");
    assert_non_null(ncd_findings_find(&fl, "net.iface-virtual"));
    ncd_findings_release(&fl);
    ncd_explain_free(ex);
}

/* A loopback bootstrap with no failed connection is latent (one node, or
 * nothing tried yet): an explicit error of the job ranks first.  With a
 * failed connection it stays the root cause. */
static void test_loopback_bootstrap_latent(void **state)
{
    (void)state;
    struct src a[] = {{"a",
        "node1:7:7 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to ^docker0\n"
        "node1:7:7 [0] NCCL INFO Bootstrap : Using lo:127.0.0.1<0>\n"
        "node1:7:7 [0] NCCL INFO NCCL version 2.23.4+cuda12.4\n"
        "node1:7:9 [0] NCCL INFO NET/OFI Selected Provider is tcp (found 1 nics)\n"
        "node1:7:9 [0] nccl_ofi_ofiutils_init_connection:335 NCCL WARN NET/OFI Disabling "
        "shared memory failed: Protocol not available\n"}};
    struct ncd_findings fl = {0};
    struct ncd_explain *ex = scan(a, 1, 0, &fl);
    dump(&fl);
    assert_string_equal(fl.v[0].id, "plugin.ofi-non-efa-provider");
    assert_int_equal(fl.v[0].category, NCD_CAT_NET_IB);
    const struct ncd_finding *ll = ncd_findings_find(&fl, "net.iface-linklocal");
    assert_non_null(ll);
    assert_int_equal(ll->severity, NCD_SEV_WARNING);
    ncd_findings_release(&fl);
    ncd_explain_free(ex);

    struct src b[] = {{"b",
        "node1:7:7 [0] NCCL INFO Bootstrap : Using lo:127.0.0.1<0>\n"
        "node1:7:7 [0] NCCL INFO NCCL version 2.23.4+cuda12.4\n"
        "node1:7:9 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to "
        "127.0.0.1<45069> failed : Connection refused\n"}};
    ex = scan(b, 1, 0, &fl);
    dump(&fl);
    assert_string_equal(fl.v[0].id, "net.iface-linklocal");
    assert_int_equal(fl.v[0].severity, NCD_SEV_ERROR);
    ncd_findings_release(&fl);
    ncd_explain_free(ex);
}

/* GLOO_SOCKET_IFNAME given NCCL's exclusion syntax: the Gloo failure is an
 * interface-name problem, and the interface NCCL bootstraps on (a real,
 * routable one) is the value to suggest; without NCCL lines nothing is
 * suggested rather than a placeholder. */
static void test_gloo_ifname_nccl_syntax(void **state)
{
    (void)state;
    struct src a[] = {{"a",
        "node1:7:7 [0] NCCL INFO Bootstrap : Using ens5:10.0.0.7<0>\n"
        "RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:84] "
        "ifa != nullptr. Unable to find address for: ^lo\n"}};
    struct ncd_findings fl = {0};
    struct ncd_explain *ex = scan(a, 1, 0, &fl);
    dump(&fl);
    assert_string_equal(fl.v[0].id, "gloo.ifname-nccl-syntax");
    assert_int_equal(fl.v[0].category, NCD_CAT_NET_IFNAME);
    assert_string_equal(env_of(&fl.v[0], "GLOO_SOCKET_IFNAME"), "ens5");
    ncd_findings_release(&fl);
    ncd_explain_free(ex);

    struct src b[] = {{"b",
        "RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:84] "
        "ifa != nullptr. Unable to find address for: ^lo,docker,veth\n"}};
    ex = scan(b, 1, 0, &fl);
    dump(&fl);
    assert_string_equal(fl.v[0].id, "gloo.ifname-nccl-syntax");
    assert_null(env_of(&fl.v[0], "GLOO_SOCKET_IFNAME"));
    ncd_findings_release(&fl);
    ncd_explain_free(ex);
}

static void test_ifname_absent(void **state)
{
    (void)state;
    struct src s[] = {{"r0.log",
                       "node7:1:1 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to enp6s0\n"
                       "\n"
                       "node7:1:1 [0] bootstrap.cc:100 NCCL WARN Bootstrap : no socket interface found\n"}};
    struct ncd_findings fl = {0};
    struct ncd_explain *ex = scan(s, 1, 0, &fl);
    dump(&fl);
    assert_string_equal(fl.v[0].id, "net.ifname-no-match");
    assert_non_null(strstr(fl.v[0].title, "enp6s0"));
    assert_non_null(strstr(fl.v[0].title, "node7"));
    ncd_findings_release(&fl);
    ncd_explain_free(ex);
}

static void test_two_versions(void **state)
{
    (void)state;
    struct src s[] = {
        {"a", "node1:1:1 [0] NCCL INFO NCCL version 2.18.3+cuda12.2\n"},
        {"b", "node2:2:2 [0] NCCL INFO NCCL version 2.19.3+cuda12.3\n"
              "node2:2:3 [0] NCCL INFO socketProgress: Connection closed by remote peer x\n"},
    };
    struct ncd_findings fl = {0};
    struct ncd_explain *ex = scan(s, 2, 0, &fl);
    dump(&fl);
    assert_string_equal(fl.v[0].id, "version.nccl-mismatch");
    assert_non_null(strstr(fl.v[0].title, "2.18.3"));
    assert_non_null(strstr(fl.v[0].title, "2.19.3"));
    json_t *j = ncd_explain_facts_json(ex);
    assert_int_equal(json_array_size(json_object_get(j, "nccl_versions")), 2);
    assert_int_equal(json_array_size(json_object_get(j, "hosts")), 2);
    json_decref(j);
    ncd_findings_release(&fl);
    ncd_explain_free(ex);
}

/* Without NCCL's own "NCCL version" line, the version PyTorch's NCCL error
 * names (C10D_NCCL_CHECK) ties a known bug's signature to the release; two
 * different such versions tie nothing; an NVLS WARN is not that signature. */
static void test_framework_version_known_bug(void **state)
{
    (void)state;
    struct src one[] = {{"a",
        "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1333, "
        "unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.18.1\n"
        "ncclUnhandledCudaError: Call to CUDA function failed.\n"
        "Last error:\n"
        "Cuda failure 'invalid argument'\n"}};
    struct ncd_findings fl = {0};
    struct ncd_explain *ex = scan(one, 1, 0, &fl);
    dump(&fl);
    assert_true(fl.n > 0);
    assert_string_equal(fl.v[0].id, "version.known-bug");
    assert_non_null(strstr(fl.v[0].title, "2.18.1"));
    assert_non_null(strstr(fl.v[0].title, "2.18.6"));
    ncd_findings_release(&fl);
    ncd_explain_free(ex);

    struct src two[] = {
        {"a", "RuntimeError: NCCL error in: x.cpp:1, unhandled cuda error, NCCL version 2.18.1\n"
              "Cuda failure 'invalid argument'\n"},
        {"b", "RuntimeError: NCCL error in: x.cpp:1, unhandled cuda error, NCCL version 2.19.3\n"}};
    ex = scan(two, 2, 0, &fl);
    dump(&fl);
    for (size_t i = 0; i < fl.n; i++)
        assert_string_not_equal(fl.v[i].id, "version.known-bug");
    ncd_findings_release(&fl);
    ncd_explain_free(ex);

    struct src nvls[] = {{"a",
        "node1:1:1 [0] NCCL INFO NCCL version 2.18.5+cuda12.2\n"
        "node1:1:2 [0] transport/nvls.cc:165 NCCL WARN Cuda failure 'invalid argument'\n"}};
    ex = scan(nvls, 1, 0, &fl);
    dump(&fl);
    for (size_t i = 0; i < fl.n; i++)
        assert_string_not_equal(fl.v[i].id, "version.known-bug");
    ncd_findings_release(&fl);
    ncd_explain_free(ex);
}

static void test_ib_silent_fallback(void **state)
{
    (void)state;
    struct src s[] = {
        {"a", "node1:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.1<0>\n"
              "node1:1:1 [0] NCCL INFO Using network IB\n"},
        {"b", "node2:2:2 [0] NCCL INFO NET/IB : No device found.\n"
              "node2:2:2 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.2<0>\n"
              "node2:2:2 [0] NCCL INFO Using network Socket\n"},
    };
    struct ncd_findings fl = {0};
    struct ncd_explain *ex = scan(s, 2, 0, &fl);
    dump(&fl);
    assert_string_equal(fl.v[0].id, "net.ib-fallback");
    assert_int_equal(fl.v[0].category, NCD_CAT_NET_IB);
    ncd_findings_release(&fl);
    ncd_explain_free(ex);
    /* the same INFO line on a host without IB anywhere is only context */
    struct src t[] = {{"c", "node2:2:2 [0] NCCL INFO NET/IB : No device found.\n"
                            "node2:2:2 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.2<0>\n"
                            "node2:2:2 [0] NCCL INFO Using network Socket\n"
                            "node2:2:2 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n"}};
    ex = scan(t, 1, 0, &fl);
    dump(&fl);
    assert_true(ncd_findings_worst(&fl) <= NCD_SEV_INFO);
    ncd_findings_release(&fl);
    ncd_explain_free(ex);
}

/* An ibv_modify_qp EINVAL on an HCA of an iWARP-capable provider (irdma,
 * named by the process's NET/IB line) gets the provider entry of
 * data/ib-verbs-errors.yaml (NCCL_IB_DISABLE=1); the same errno on an mlx5
 * HCA keeps the GID-index rule, and so does a line whose HCA is unknown. */
static void test_iwarp_provider_modify_qp(void **state)
{
    (void)state;
    const char *qp = "misc/ibvwrap.cc:206 NCCL WARN Call to ibv_modify_qp failed with error "
                     "Invalid argument errno 22\n";
    char buf[512];
    snprintf(buf, sizeof buf,
             "host1:1:2 [3] NCCL INFO NET/IB : Using [0]irdma0:1/RoCE [RO]; \nhost1:1:2 [3] %s", qp);
    struct src a[] = {{"a", buf}};
    struct ncd_findings fl = {0};
    struct ncd_explain *ex = scan(a, 1, 0, &fl);
    dump(&fl);
    assert_string_equal(fl.v[0].id, "ib.verb-errno");
    int disable = 0;
    for (size_t i = 0; i < fl.v[0].n_env; i++)
        disable |= strcmp(fl.v[0].env[i].name, "NCCL_IB_DISABLE") == 0;
    assert_true(disable);
    ncd_findings_release(&fl);
    ncd_explain_free(ex);

    snprintf(buf, sizeof buf,
             "host1:1:2 [3] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [RO]; \nhost1:1:2 [3] %s", qp);
    struct src b[] = {{"b", buf}};
    ex = scan(b, 1, 0, &fl);
    dump(&fl);
    assert_string_equal(fl.v[0].id, "ib.modify-qp-gid-invalid");
    ncd_findings_release(&fl);
    ncd_explain_free(ex);

    snprintf(buf, sizeof buf, "host1:1:2 [3] %s", qp);
    struct src c[] = {{"c", buf}};
    ex = scan(c, 1, 0, &fl);
    dump(&fl);
    assert_string_equal(fl.v[0].id, "ib.modify-qp-gid-invalid");
    ncd_findings_release(&fl);
    ncd_explain_free(ex);

    /* 2.24+ names the HCA on the line itself */
    struct src d[] = {{"d", "host1:1:2 [3] misc/ibvwrap.cc:300 NCCL WARN Call to ibv_modify_qp failed "
                            "with 22 Invalid argument, on dev iwp175s0f0:1, curr state INIT, next state RTR\n"}};
    ex = scan(d, 1, 0, &fl);
    dump(&fl);
    assert_string_equal(fl.v[0].id, "ib.verb-errno");
    ncd_findings_release(&fl);
    ncd_explain_free(ex);
}

static void test_earliest_timestamp_wins(void **state)
{
    (void)state;
    /* b's error is older although b is read second */
    struct src s[] = {
        {"rank0.log", "[2026-01-01 10:00:50] node1:1:1 [0] x.cc:1 NCCL WARN Cuda failure 'out of memory'\n"},
        {"rank1.log", "[2026-01-01 10:00:10] node2:2:2 [0] misc/ibvwrap.cc:2 NCCL WARN Call to "
                      "ibv_modify_qp failed with error Connection timed out\n"
                      "[2026-01-01 10:00:20] node2:2:2 [0] misc/socket.cc:3 NCCL WARN socketProgress: "
                      "Connection closed by remote peer node1<5>\n"},
    };
    struct ncd_findings fl = {0};
    struct ncd_explain *ex = scan(s, 2, 0, &fl);
    dump(&fl);
    /* the errno-specific finding (data/ib-verbs-errors.yaml) leads */
    assert_string_equal(fl.v[0].id, "ib.verb-errno");
    assert_string_equal(fl.v[1].id, "cuda.out-of-memory");
    assert_string_equal(fl.v[fl.n - 1].id, "socket.connection-closed");
    assert_int_equal(ncd_explain_role(ex, fl.n - 1), NCD_ROLE_CONSEQUENCE);
    ncd_findings_release(&fl);
    ncd_explain_free(ex);
}

static void test_rank_order_without_timestamps(void **state)
{
    (void)state;
    /* per-rank logs read rank 1 first; no time stamps: rank 0's error leads */
    struct src s[] = {
        {"r1.log", "[1,1]<stdout>:node2:2:2 [1] x.cc:1 NCCL WARN Cuda failure 'out of memory'\n"},
        {"r0.log", "[1,0]<stdout>:node1:1:1 [0] misc/ibvwrap.cc:2 NCCL WARN Call to "
                   "ibv_modify_qp failed with error Connection timed out\n"},
    };
    struct ncd_findings fl = {0};
    struct ncd_explain *ex = scan(s, 2, 0, &fl);
    dump(&fl);
    assert_string_equal(fl.v[0].id, "ib.verb-errno");
    ncd_findings_release(&fl);
    ncd_explain_free(ex);
}

static void test_only_consequences(void **state)
{
    (void)state;
    struct src s[] = {{"r3.log",
                       "node2:2:3 [0] misc/socket.cc:3 NCCL WARN socketProgress: Connection closed by remote peer node1<5>\n"
                       "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, remote process "
                       "exited or there was a network error, NCCL version 2.20.5\n"}};
    struct ncd_findings fl = {0};
    struct ncd_explain *ex = scan(s, 1, 0, &fl);
    dump(&fl);
    assert_int_equal(ncd_explain_role(ex, 0), NCD_ROLE_CONSEQUENCE);
    assert_int_equal(fl.v[0].severity, NCD_SEV_ERROR);
    ncd_findings_release(&fl);
    ncd_explain_free(ex);
}

static void test_timeout_and_blog_advice(void **state)
{
    (void)state;
    struct src s[] = {{"job.log",
                       "+ export NCCL_TIMEOUT=7200\n"
                       "+ export NCCL_PORT_RANGE=50000-51000\n"
                       "[rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog caught collective operation timeout: "
                       "WorkNCCL(SeqNum=9, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.\n"}};
    struct ncd_findings fl = {0};
    struct ncd_explain *ex = scan(s, 1, 0, &fl);
    dump(&fl);
    assert_string_equal(fl.v[0].id, "pytorch.watchdog-timeout");
    assert_int_equal(fl.v[0].category, NCD_CAT_TIMEOUT);
    assert_non_null(strstr(fl.v[0].fix, "timeout=timedelta"));
    assert_non_null(ncd_findings_find(&fl, "env.nccl-timeout"));
    assert_non_null(ncd_findings_find(&fl, "env.port-range"));
    assert_non_null(strstr(ncd_findings_find(&fl, "env.port-range")->fix, "ip_local_port_range"));
    ncd_findings_release(&fl);
    ncd_explain_free(ex);
}

static const char big_log[] =
    "node1:1:1 [0] NCCL INFO NCCL version 2.23.4+cuda12.6\n"
    "node1:1:1 [0] NCCL INFO cudaDriverVersion 12060\n"
    "node1:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
    "node1:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; OOB eth0:10.0.0.1<0>\n"
    "node1:1:2 [0] NCCL INFO Using network IB\n"
    "node1:1:2 [0] NCCL INFO comm 0x55 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0\n"
    "node1:1:2 [0] NCCL INFO Channel 00/02 : 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15\n"
    "node1:1:2 [0] NCCL INFO Trees [0] 1/8/-1->0->-1 [1] 1/-1/-1->0->8\n"
    "node1:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read\n"
    "node1:1:2 [0] NCCL INFO Channel 00/0 : 15[7] -> 0[0] [receive] via NET/IB/0/GDRDMA\n"
    "node1:1:2 [0] NCCL INFO NCCL_IB_HCA set by environment to mlx5_0,mlx5_1\n"
    "node1:1:2 [0] NCCL INFO NCCL_P2P_LEVEL set by environment to pix\n"
    "node1:1:2 [0] NCCL INFO ncclCommInitRank comm 0x55 rank 0 nranks 16 cudaDev 0 nvmlDev 0 busId 1b000 commId 0x77 - Init COMPLETE\n"
    "node1:1:2 [0] NCCL INFO Init timings - ncclCommInitRank: rank 0 nranks 16 total 1.25 (kernels 0.1)\n";

static void test_facts_and_streaming(void **state)
{
    (void)state;
    struct src s[] = {{"r0.log", big_log}};
    struct ncd_findings a = {0}, b = {0};
    struct ncd_explain *ex = scan(s, 1, 0, &a);
    struct ncd_explain *ey = scan(s, 1, 1, &b); /* byte by byte */
    assert_int_equal(a.n, b.n);
    for (size_t i = 0; i < a.n; i++) {
        assert_string_equal(a.v[i].id, b.v[i].id);
        assert_int_equal(a.v[i].n_evidence, b.v[i].n_evidence);
    }
    /* env.level-value from the echoed NCCL_P2P_LEVEL=pix */
    assert_non_null(ncd_findings_find(&a, "env.level-value"));
    json_t *j = ncd_explain_facts_json(ex);
    json_t *p = json_array_get(json_object_get(j, "processes"), 0);
    assert_non_null(p);
    assert_string_equal(json_string_value(json_object_get(p, "nccl_version")), "2.23.4");
    assert_string_equal(json_string_value(json_object_get(p, "cuda_version")), "12.6");
    assert_int_equal(json_integer_value(json_object_get(p, "cuda_driver")), 12060);
    assert_int_equal(json_integer_value(json_object_get(p, "rank")), 0);
    assert_int_equal(json_integer_value(json_object_get(p, "nranks")), 16);
    assert_int_equal(json_integer_value(json_object_get(p, "nnodes")), 2);
    assert_string_equal(json_string_value(json_object_get(p, "bus_id")), "1b000");
    assert_string_equal(json_string_value(json_object_get(p, "network")), "IB");
    assert_int_equal(json_array_size(json_object_get(p, "ib_devices")), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(p, "bootstrap"), 0), "name")), "eth0");
    json_t *tr = json_object_get(p, "transports");
    assert_int_equal(json_integer_value(json_object_get(tr, "p2p")), 1);
    assert_int_equal(json_integer_value(json_object_get(tr, "net")), 1);
    assert_int_equal(json_integer_value(json_object_get(tr, "net_gdr")), 1);
    assert_string_equal(json_string_value(json_object_get(p, "last_phase")), "complete");
    assert_true(json_real_value(json_object_get(p, "init_seconds")) > 1.2);
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "env"), "NCCL_IB_HCA")), "mlx5_0,mlx5_1");
    json_decref(j);
    struct ncd_strbuf sb = {0};
    ncd_explain_facts_text(ex, &sb);
    assert_non_null(strstr(ncd_sb_str(&sb), "2.23.4"));
    assert_non_null(strstr(ncd_sb_str(&sb), "mlx5_0:1/RoCE"));
    ncd_sb_release(&sb);
    ncd_findings_release(&a);
    ncd_findings_release(&b);
    ncd_explain_free(ex);
    ncd_explain_free(ey);
}

static void test_nothing_and_overlong(void **state)
{
    (void)state;
    struct src e[] = {{"empty", ""}};
    struct ncd_findings fl = {0};
    struct ncd_explain *ex = scan(e, 1, 0, &fl);
    assert_int_equal(fl.n, 0); /* nothing found is no finding */
    ncd_findings_release(&fl);
    ncd_explain_free(ex);

    /* a 100 kB line, then a WARN: the WARN is still found on line 2 */
    size_t n = 100000;
    char *buf = malloc(n + 200);
    memset(buf, 'x', n);
    strcpy(buf + n, "\nnode1:1:1 [0] NCCL WARN Cuda failure 'out of memory'\n");
    struct src o[] = {{"long", buf}};
    ex = scan(o, 1, 4096, &fl);
    assert_string_equal(fl.v[0].id, "cuda.out-of-memory");
    assert_non_null(strstr(fl.v[0].evidence[0], "long:2:"));
    unsigned long long lines;
    ncd_explain_stats(ex, NULL, &lines, NULL);
    assert_int_equal(lines, 2);
    ncd_findings_release(&fl);
    ncd_explain_free(ex);
    free(buf);
}

static void test_container_bridge_and_trail(void **state)
{
    (void)state;
    struct src s[] = {{"a", "node1:1:1 [0] NCCL INFO Bootstrap : Using eth0:172.17.0.2<0>\n"
                            "node2:2:2 [0] NCCL INFO Bootstrap : Using eth0:172.17.0.2<0>\n"}};
    struct ncd_findings fl = {0};
    struct ncd_explain *ex = scan(s, 1, 0, &fl);
    dump(&fl);
    assert_string_equal(fl.v[0].id, "net.container-bridge");
    assert_int_equal(fl.v[0].category, NCD_CAT_NET_UNREACHABLE);
    ncd_findings_release(&fl);
    ncd_explain_free(ex);

    /* only an error trail: the deepest frame's file names the subsystem */
    struct src t[] = {{"b", "node1:1:1 [0] NCCL INFO transport/shm.cc:120 -> 2\n"
                            "node1:1:1 [0] NCCL INFO transport.cc:30 -> 2 [Async thread]\n"}};
    ex = scan(t, 1, 0, &fl);
    dump(&fl);
    assert_string_equal(fl.v[0].id, "nccl.error-trail");
    assert_int_equal(fl.v[0].category, NCD_CAT_SYS_SHM);
    assert_non_null(strstr(fl.v[0].title, "ncclSystemError"));
    ncd_findings_release(&fl);
    ncd_explain_free(ex);
}

static void test_tests_header_mismatch(void **state)
{
    (void)state;
    struct src s[] = {{"t", "# nccl-tests version 2.13.8 nccl-headers=21903 nccl-library=21805\n"
                            "# nThread 1 nGpus 1 minBytes 8 maxBytes 128\n"}};
    struct ncd_findings fl = {0};
    struct ncd_explain *ex = scan(s, 1, 0, &fl);
    assert_string_equal(fl.v[0].id, "lib.tests-header-mismatch");
    assert_non_null(strstr(fl.v[0].title, "2.19.3"));
    assert_non_null(strstr(fl.v[0].title, "2.18.5"));
    ncd_findings_release(&fl);
    ncd_explain_free(ex);
    struct src t[] = {{"t", "# nccl-tests version 2.13.8 nccl-headers=21903 nccl-library=21905\n"}};
    ex = scan(t, 1, 0, &fl);
    assert_null(ncd_findings_find(&fl, "lib.tests-header-mismatch"));
    ncd_findings_release(&fl);
    ncd_explain_free(ex);
}

static void test_watchdog_reasoning(void **state)
{
    (void)state;
    char buf[4096] = "";
    for (int r = 0; r < 8; r++) {
        if (r == 5)
            continue;
        size_t l = strlen(buf);
        snprintf(buf + l, sizeof buf - l,
                 "[rank%d]:[E626 06:24:44.9 ProcessGroupNCCL.cpp:616] [Rank %d] Watchdog caught "
                 "collective operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, "
                 "Timeout(ms)=600000) ran for 600020 milliseconds before timing out.\n", r, r);
    }
    struct src s[] = {{"w", buf}};
    struct ncd_findings fl = {0};
    struct ncd_explain *ex = scan(s, 1, 0, &fl);
    dump(&fl);
    assert_string_equal(fl.v[0].id, "pytorch.watchdog-missing-rank");
    assert_non_null(strstr(fl.v[0].title, "Rank 5 "));
    ncd_findings_release(&fl);
    ncd_explain_free(ex);
    /* different collectives: out of step */
    struct src t[] = {{"w",
        "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, Timeout(ms)=1) ran for 2 milliseconds before timing out.\n"
        "[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=807, OpType=BROADCAST, Timeout(ms)=1) ran for 2 milliseconds before timing out.\n"}};
    ex = scan(t, 1, 0, &fl);
    dump(&fl);
    assert_string_equal(fl.v[0].id, "pytorch.watchdog-desync");
    assert_int_equal(fl.v[0].category, NCD_CAT_USAGE_MISMATCH);
    ncd_findings_release(&fl);
    ncd_explain_free(ex);
}

static void test_env_differs(void **state)
{
    (void)state;
    struct src s[] = {{"e", "n1:1:1 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.\n"
                            "n2:2:2 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 0.\n"
                            "n1:1:1 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0\n"
                            "n2:2:2 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to ens5\n"}};
    struct ncd_findings fl = {0};
    struct ncd_explain *ex = scan(s, 1, 0, &fl);
    dump(&fl);
    struct ncd_finding *f = ncd_findings_find(&fl, "env.differs-across-ranks");
    assert_non_null(f);
    assert_non_null(strstr(f->title, "NCCL_IB_DISABLE"));
    assert_null(strstr(f->title, "SOCKET_IFNAME")); /* per-host names may differ */
    ncd_findings_release(&fl);
    ncd_explain_free(ex);
}

static void test_gid_advice_only_on_roce(void **state)
{
    (void)state;
    struct src ib[] = {{"ib", "node1:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.1<0>\n"
                              "node1:1:1 [0] x.cc:1 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<1> with error 12, opcode 0, len 0, vendor err 129\n"}};
    struct ncd_findings fl = {0};
    struct ncd_explain *ex = scan(ib, 1, 0, &fl);
    assert_string_equal(fl.v[0].id, "ib.completion.retry-exceeded");
    assert_null(env_of(&fl.v[0], "NCCL_IB_GID_INDEX"));
    ncd_findings_release(&fl);
    ncd_explain_free(ex);
    struct src roce[] = {{"roce", "node1:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE ; OOB eth0:10.0.0.1<0>\n"
                                  "node1:1:1 [0] x.cc:1 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<1> with error 12, opcode 0, len 0, vendor err 129\n"}};
    ex = scan(roce, 1, 0, &fl);
    assert_non_null(env_of(&fl.v[0], "NCCL_IB_GID_INDEX"));
    ncd_findings_release(&fl);
    ncd_explain_free(ex);
}

/* Echoed values judged with the variable catalog (data/nccl-vars.yaml):
 * NCCL echoes integer knobs already parsed ("8."), level names as given. */
static void test_env_values_by_catalog(void **state)
{
    (void)state;
    static const struct {
        const char *line;
        const char *want; /* finding id, or NULL for none */
        const char *cause; /* part of its cause, or NULL */
    } cases[] = {
        {"NCCL_IB_RETRY_CNT set by environment to 8.", "env.ib-out-of-range", "3-bit"},
        {"NCCL_IB_RETRY_CNT set by environment to 7.", NULL, NULL},
        {"NCCL_IB_RETRY_CNT set by environment to -1.", "env.ib-out-of-range", "3-bit"},
        {"NCCL_IB_TIMEOUT set by environment to 0.", "env.ib-out-of-range", "infinite"},
        {"NCCL_IB_TIMEOUT set by environment to 31.", NULL, NULL},
        {"NCCL_IB_TIMEOUT set by environment to 32.", "env.ib-out-of-range", "infinite"},
        {"NCCL_IB_TIMEOUT set by environment to -1.", "env.ib-out-of-range", "minimum 0"},
        {"NCCL_IB_TIMEOUT set by environment to 99999999999999999999.", NULL, NULL},
        {"NCCL_P2P_LEVEL set by environment to node", "env.level-value", NULL},
        {"NCCL_P2P_LEVEL set by environment to Phb", "env.level-value", NULL},
        {"NCCL_P2P_LEVEL set by environment to PHB", NULL, NULL},
        {"NCCL_NET_GDR_LEVEL set by environment to 2", NULL, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char log[256];
        snprintf(log, sizeof log, "n1:1:1 [0] NCCL INFO %s\n", cases[i].line);
        struct src s[] = {{"env.log", log}};
        struct ncd_findings fl = {0};
        struct ncd_explain *ex = scan(s, 1, 0, &fl);
        const char *got = fl.n && fl.v[0].severity >= NCD_SEV_WARNING ? fl.v[0].id : NULL;
        if (cases[i].want ? !got || strcmp(got, cases[i].want) != 0 : got != NULL)
            fail_msg("case %zu (%s): got %s, want %s", i, cases[i].line,
                     got ? got : "nothing", cases[i].want ? cases[i].want : "nothing");
        if (cases[i].cause && !strstr(fl.v[0].cause, cases[i].cause))
            fail_msg("case %zu: cause '%s' lacks '%s'", i, fl.v[0].cause, cases[i].cause);
        ncd_findings_release(&fl);
        ncd_explain_free(ex);
    }
}


/* nvidia-nccl-cu* wheels for two CUDA majors in an environment report: the
 * cause of a wrong-libnccl symptom (error, first), a warning without one
 * (below a real NCCL error), nothing for one major listed twice. */
static void test_nccl_wheels_mixed(void **state)
{
    (void)state;
    struct src a[] = {{"env", "ImportError: /opt/py/torch/lib/libtorch_cuda.so: undefined symbol: ncclCommShrink\n"
                              "[pip3] nvidia-nccl-cu12==2.21.5\n"
                              "[conda] nvidia-nccl-cu13          2.28.3                   pypi_0    pypi\n"}};
    struct ncd_findings fl = {0};
    struct ncd_explain *ex = scan(a, 1, 0, &fl);
    assert_string_equal(fl.v[0].id, "lib.nccl-wheels-mixed");
    assert_int_equal(fl.v[0].severity, NCD_SEV_ERROR);
    assert_non_null(strstr(fl.v[0].title, "nvidia-nccl-cu12 2.21.5"));
    assert_non_null(strstr(fl.v[0].title, "nvidia-nccl-cu13 2.28.3"));
    ncd_findings_release(&fl);
    ncd_explain_free(ex);

    struct src b[] = {{"env", "[pip3] nvidia-nccl-cu11==2.14.3\n"
                              "nvidia-nccl-cu12                  2.20.5\n"
                              "node1:1:9 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<1> with error 12, opcode 0, len 0, vendor err 129 (Recv)\n"}};
    ex = scan(b, 1, 0, &fl);
    assert_string_not_equal(fl.v[0].id, "lib.nccl-wheels-mixed");
    const struct ncd_finding *w = ncd_findings_find(&fl, "lib.nccl-wheels-mixed");
    assert_non_null(w);
    assert_int_equal(w->severity, NCD_SEV_WARNING);
    ncd_findings_release(&fl);
    ncd_explain_free(ex);

    struct src c[] = {{"env", "[pip3] nvidia-nccl-cu12==2.21.5\n"
                              "[conda] nvidia-nccl-cu12          2.21.5                   pypi_0    pypi\n"}};
    ex = scan(c, 1, 0, &fl);
    assert_null(ncd_findings_find(&fl, "lib.nccl-wheels-mixed"));
    ncd_findings_release(&fl);
    ncd_explain_free(ex);
}

/* A multicast bind failure: fatal from 2.29.2 (CUDA error 2: multicast
 * resources), an INFO that NCCL 2.27.3-2.28 continued after (no failure). */
static void test_nvls_bind_by_release(void **state)
{
    (void)state;
    struct src a[] = {{"a", "node1:1:1 [0] NCCL INFO NCCL version 2.30.7+cuda13.0\n"
                            "node1:1:1 [0] transport/nvls.cc:376 NCCL WARN Failed to bind NVLink SHARP (NVLS) Multicast memory of size 4194304 : CUDA error 2 'out of memory'.\n"}};
    struct ncd_findings fl = {0};
    struct ncd_explain *ex = scan(a, 1, 0, &fl);
    assert_string_equal(fl.v[0].id, "nvls.bind-out-of-resources");
    ncd_findings_release(&fl);
    ncd_explain_free(ex);

    struct src b[] = {{"b", "node1:1:1 [0] NCCL INFO NCCL version 2.28.9+cuda12.9\n"
                            "node1:1:1 [0] NCCL INFO Failed to bind NVLink SHARP (NVLS) Multicast memory of size 4194304 : CUDA error 401 'the operation cannot be performed in the present state'. Proceeding without NVLS support.\n"}};
    ex = scan(b, 1, 0, &fl);
    assert_null(ncd_findings_find(&fl, "nvls.bind-failed"));
    for (size_t i = 0; i < fl.n; i++)
        assert_true(fl.v[i].severity < NCD_SEV_ERROR);
    ncd_findings_release(&fl);
    ncd_explain_free(ex);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_docker_plus_connect),
        cmocka_unit_test(test_ifname_absent),
        cmocka_unit_test(test_linklocal_peer_and_unrelated_virtual),
        cmocka_unit_test(test_loopback_bootstrap_latent),
        cmocka_unit_test(test_gloo_ifname_nccl_syntax),
        cmocka_unit_test(test_two_versions),
        cmocka_unit_test(test_framework_version_known_bug),
        cmocka_unit_test(test_ib_silent_fallback),
        cmocka_unit_test(test_iwarp_provider_modify_qp),
        cmocka_unit_test(test_earliest_timestamp_wins),
        cmocka_unit_test(test_rank_order_without_timestamps),
        cmocka_unit_test(test_only_consequences),
        cmocka_unit_test(test_timeout_and_blog_advice),
        cmocka_unit_test(test_facts_and_streaming),
        cmocka_unit_test(test_nothing_and_overlong),
        cmocka_unit_test(test_container_bridge_and_trail),
        cmocka_unit_test(test_gid_advice_only_on_roce),
        cmocka_unit_test(test_env_differs),
        cmocka_unit_test(test_watchdog_reasoning),
        cmocka_unit_test(test_tests_header_mismatch),
        cmocka_unit_test(test_env_values_by_catalog),
        cmocka_unit_test(test_nccl_wheels_mixed),
        cmocka_unit_test(test_nvls_bind_by_release),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
