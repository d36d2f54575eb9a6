/* SPDX-License-Identifier: MIT */
/* Node probes: the pure parsers and NCCL's rules (GID choice, path types,
 * /dev/shm need), table-driven. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "ncd/container.h"
#include "ncd/ctx.h"
#include "ncd/error.h"
#include "ncd/gather.h"
#include "ncd/libs.h"
#include "ncd/pci.h"
#include "ncd/ports.h"
#include "ncd/rdma.h"
#include "ncd/shm.h"
#include "ncd/strbuf.h"
#include "ncd/topo.h"
#include "ncd/sysops.h"
#include "sys/sys_internal.h"

static void test_pci_path_split(void **state)
{
    (void)state;
    static const struct {
        const char *path, *root;
        int n;
        const char *last;
    } cases[] = {
        {"/sys/devices/pci0000:00/0000:00:01.0/0000:17:00.0", "pci0000:00", 2,
         "0000:17:00.0"},
        {"/sys/devices/pci0000:00/0000:00:01.0/0000:17:00.0/net/eth0",
         "pci0000:00", 2, "0000:17:00.0"},
        /* Hyper-V: a PCI domain per device below VMBUS */
        {"/sys/devices/LNXSYSTM:00/VMBUS:00/pci7870:00/7870:00:00.0",
         "pci7870:00", 1, "7870:00:00.0"},
        {"/sys/devices/pci0000:3A/0000:3A:00.0", "pci0000:3A", 1, "0000:3a:00.0"},
        {"/sys/devices/virtual/net/lo", "", 0, ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char root[32], chain[8][16];
        int n = ncd_pci_path_split(cases[i].path, root, chain, 8);
        assert_int_equal(n, cases[i].n);
        assert_string_equal(root, cases[i].root);
        if (n)
            assert_string_equal(chain[n - 1], cases[i].last);
    }
}

static void put16(unsigned char *b, size_t o, unsigned v)
{
    b[o] = (unsigned char)v;
    b[o + 1] = (unsigned char)(v >> 8);
}

static void put32(unsigned char *b, size_t o, unsigned v)
{
    put16(b, o, v & 0xffff);
    put16(b, o + 2, v >> 16);
}

static void test_pci_config(void **state)
{
    (void)state;
    unsigned char cfg[4096];
    memset(cfg, 0, sizeof cfg);
    cfg[6] = 0x10;
    cfg[0x34] = 0x50;
    cfg[0x50] = 0x01; /* power management, next 0x60 */
    cfg[0x51] = 0x60;
    cfg[0x60] = 0x10; /* PCIe, downstream port */
    put16(cfg, 0x62, 0x2 | (6 << 4));
    assert_int_equal(ncd_pci_cfg_pcie_type(cfg, sizeof cfg), NCD_PCIE_DOWNSTREAM);
    assert_int_equal(ncd_pci_cfg_pcie_type(cfg, 32), NCD_PCIE_UNKNOWN);
    unsigned cap = 0, ctrl = 0;
    /* no extended space */
    assert_int_equal(ncd_pci_cfg_acs(cfg, 256, &cap, &ctrl), NCD_ERANGE);
    /* empty list */
    assert_int_equal(ncd_pci_cfg_acs(cfg, sizeof cfg, &cap, &ctrl), 0);
    /* AER at 0x100 -> ACS at 0x148 */
    put32(cfg, 0x100, 0x0001 | (2u << 16) | (0x148u << 20));
    put32(cfg, 0x148, 0x000d | (1u << 16));
    put16(cfg, 0x14c, 0x5f);
    put16(cfg, 0x14e, 0x1d);
    assert_int_equal(ncd_pci_cfg_acs(cfg, sizeof cfg, &cap, &ctrl), 1);
    assert_int_equal(cap, 0x5f);
    assert_int_equal(ctrl, 0x1d);
    char s[128];
    assert_string_equal(ncd_acs_ctrl_str(ctrl, s, sizeof s),
                        "SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ "
                        "UpstreamFwd+ EgressCtrl- DirectTrans-");
    /* a loop is malformed, not endless */
    put32(cfg, 0x148, 0x0002 | (1u << 16) | (0x100u << 20));
    assert_int_equal(ncd_pci_cfg_acs(cfg, sizeof cfg, &cap, &ctrl), NCD_EPARSE);
}

/* A hand-built PCI list: host bridge A with root port -> switch (up + 3
 * down) -> GPU, GPU, NIC; host bridge B on NUMA 1 with one GPU. */
static void test_pci_link(void **state)
{
    (void)state;
    struct ncd_pci_dev v[9];
    memset(v, 0, sizeof v);
    const struct {
        const char *bdf, *root;
        int parent;
        enum ncd_pcie_type t;
        int numa;
    } d[] = {
        {"0000:10:01.0", "pci0000:10", -1, NCD_PCIE_ROOT_PORT, 0}, /* 0 */
        {"0000:11:00.0", "pci0000:10", 0, NCD_PCIE_UPSTREAM, 0},    /* 1 */
        {"0000:12:00.0", "pci0000:10", 1, NCD_PCIE_DOWNSTREAM, 0},  /* 2 */
        {"0000:12:04.0", "pci0000:10", 1, NCD_PCIE_DOWNSTREAM, 0},  /* 3 */
        {"0000:13:00.0", "pci0000:10", 2, NCD_PCIE_ENDPOINT, 0},    /* 4 GPU */
        {"0000:14:00.0", "pci0000:10", 3, NCD_PCIE_ENDPOINT, 0},    /* 5 GPU */
        {"0000:14:00.1", "pci0000:10", 3, NCD_PCIE_ENDPOINT, 0},    /* 6 fn 1 */
        {"0000:80:01.0", "pci0000:80", -1, NCD_PCIE_ROOT_PORT, 1},  /* 7 */
        {"0000:81:00.0", "pci0000:80", 7, NCD_PCIE_ENDPOINT, 1},    /* 8 GPU */
    };
    for (size_t i = 0; i < 9; i++) {
        snprintf(v[i].bdf, sizeof v[i].bdf, "%s", d[i].bdf);
        snprintf(v[i].root, sizeof v[i].root, "%s", d[i].root);
        v[i].parent = d[i].parent;
        v[i].pcie_type = d[i].t;
        v[i].numa_node = d[i].numa;
    }
    struct ncd_pci_list l = {v, 9, 1};
    assert_int_equal(ncd_pci_link(&l, 4, 4), NCD_LINK_X);
    assert_int_equal(ncd_pci_link(&l, 4, 5), NCD_LINK_PIX); /* one switch */
    assert_int_equal(ncd_pci_link(&l, 5, 6), NCD_LINK_PIX); /* same device */
    assert_int_equal(ncd_pci_link(&l, 4, 8), NCD_LINK_SYS);
    v[7].numa_node = 0;
    v[8].numa_node = 0;
    assert_int_equal(ncd_pci_link(&l, 4, 8), NCD_LINK_NODE);
    /* an extra switch level makes it PXB */
    v[3].pcie_type = NCD_PCIE_ROOT_PORT; /* pretend: a second "switch" */
    v[3].parent = 0;
    assert_int_equal(ncd_pci_link(&l, 4, 5), NCD_LINK_PXB);
    assert_string_equal(ncd_link_name(NCD_LINK_PHB), "PHB");
}

static struct ncd_ib_gid mkgid(int idx, const char *s, enum ncd_gid_type t)
{
    struct ncd_ib_gid g;
    memset(&g, 0, sizeof g);
    g.index = idx;
    assert_int_equal(ncd_ib_gid_parse(s, &g), 0);
    g.type = t;
    return g;
}

static void test_gid_auto(void **state)
{
    (void)state;
    const char *ll = "fe80:0000:0000:0000:0202:c9ff:fe00:0001";
    const char *v4 = "0000:0000:0000:0000:0000:ffff:0a00:0005"; /* 10.0.0.5 */
    const char *v6 = "fd00:0000:0000:0000:0000:0000:0000:0005";
    struct ncd_gid_prefs p = {.family = AF_INET, .roce_version = 2};
    /* typical mlx5 table: 0 fe80 v1, 1 fe80 v2, 2 IPv4 v1, 3 IPv4 v2 -> 3 */
    struct ncd_ib_gid t1[] = {mkgid(0, ll, NCD_GID_TYPE_V1),
                              mkgid(1, ll, NCD_GID_TYPE_V2),
                              mkgid(2, v4, NCD_GID_TYPE_V1),
                              mkgid(3, v4, NCD_GID_TYPE_V2)};
    struct ncd_ib_port port = {.gids = t1, .n_gids = 4, .gid_tbl_len = 4};
    assert_int_equal(ncd_ib_gid_auto(&port, &p), 3);
    /* RoCE v1 wanted -> 2 */
    p.roce_version = 1;
    assert_int_equal(ncd_ib_gid_auto(&port, &p), 2);
    p.roce_version = 2;
    /* link-local only -> stays 0 */
    port.n_gids = 2;
    port.gid_tbl_len = 2;
    assert_int_equal(ncd_ib_gid_auto(&port, &p), 0);
    /* IPv6 preferred, table with a global v6 v2 entry at 5 */
    struct ncd_ib_gid t2[] = {mkgid(0, ll, NCD_GID_TYPE_V1),
                              mkgid(1, ll, NCD_GID_TYPE_V2),
                              mkgid(2, v4, NCD_GID_TYPE_V1),
                              mkgid(3, v4, NCD_GID_TYPE_V2),
                              mkgid(4, v6, NCD_GID_TYPE_V1),
                              mkgid(5, v6, NCD_GID_TYPE_V2)};
    struct ncd_ib_port port2 = {.gids = t2, .n_gids = 6, .gid_tbl_len = 6};
    assert_int_equal(ncd_ib_gid_auto(&port2, &p), 3);
    p.family = AF_INET6;
    assert_int_equal(ncd_ib_gid_auto(&port2, &p), 5);
    /* type not readable (not mapped in a container): skipped */
    t1[3].type = NCD_GID_TYPE_UNKNOWN;
    port.n_gids = 4;
    port.gid_tbl_len = 4;
    p.family = AF_INET;
    assert_int_equal(ncd_ib_gid_auto(&port, &p), 2);
    /* NCCL_IB_ADDR_RANGE excluding 10/8 -> nothing qualifies */
    struct ncd_ctx *ctx;
    char *envp[] = {"NCCL_IB_ADDR_RANGE=192.168.0.0/16", NULL};
    assert_int_equal(ncd_ctx_new("/", envp, &ctx), 0);
    ncd_gid_prefs_from_env(ctx, &p);
    assert_int_equal(p.have_range, 1);
    t1[3].type = NCD_GID_TYPE_V2;
    assert_int_equal(ncd_ib_gid_auto(&port, &p), 0);
    ncd_ctx_free(ctx);
    struct ncd_ib_gid g;
    assert_int_equal(ncd_ib_gid_parse("zz", &g), NCD_EPARSE);
    assert_int_equal(ncd_ib_gid_type_parse("RoCE v2"), NCD_GID_TYPE_V2);
    assert_int_equal(ncd_ib_gid_type_parse("IB/RoCE v1"), NCD_GID_TYPE_V1);
}

static void test_mounts_and_sizes(void **state)
{
    (void)state;
    const char *m = "overlay / overlay rw 0 0\n"
                    "tmpfs /dev/shm tmpfs rw,nosuid 0 0\n"
                    "shm /dev/shm tmpfs rw,nosuid,nodev,size=65536k 0 0\n"
                    "tmpfs /my\\040dir tmpfs ro,size=1g 0 0\n";
    struct ncd_mount mt;
    assert_int_equal(ncd_mounts_find(m, strlen(m), "/dev/shm", &mt), 1);
    assert_string_equal(mt.dev, "shm"); /* last wins */
    assert_int_equal(ncd_tmpfs_size(mt.opts, 0), 65536LL * 1024);
    assert_int_equal(ncd_mount_is_ro(mt.opts), 0);
    assert_int_equal(ncd_mounts_find(m, strlen(m), "/my dir", &mt), 1);
    assert_int_equal(ncd_mount_is_ro(mt.opts), 1);
    assert_int_equal(ncd_tmpfs_size(mt.opts, 0), 1LL << 30);
    assert_int_equal(ncd_mounts_find(m, strlen(m), "/nope", &mt), 0);
    assert_int_equal(ncd_tmpfs_size("rw", 8LL << 30), 4LL << 30);
    assert_int_equal(ncd_tmpfs_size("rw,size=50%", 8LL << 30), 4LL << 30);
    assert_int_equal(ncd_tmpfs_size("rw", 0), -1);
    const char *mi = "MemTotal:       16119024 kB\nMemFree: 1 kB\n";
    assert_int_equal(ncd_meminfo_total(mi, strlen(mi)), 16119024LL * 1024);
    /* the formula: 8 GPUs ~ 1 GiB, 2 GPUs ~ 37 MiB, 1 GPU 0 */
    assert_int_equal(ncd_shm_need_bytes(8, 0), 56LL * 2 * 9633792);
    assert_int_equal(ncd_shm_need_bytes(2, 0), 2LL * 2 * 9633792);
    assert_int_equal(ncd_shm_need_bytes(1, 0), 0);
    assert_int_equal(ncd_shm_need_bytes(2, 1 << 20),
                     2LL * 2 * ((1 << 20) + 4915200 + 524288));
}

static void test_logind_limits_caps(void **state)
{
    (void)state;
    static const struct {
        const char *conf;
        int want;
    } cases[] = {
        {"[Login]\n#RemoveIPC=yes\n", -1},
        {"[Login]\nRemoveIPC=no\n", 0},
        {"[Login]\nRemoveIPC = yes\n", 1},
        {"[Login]\nRemoveIPC=no\nRemoveIPC=yes\n", 1},
        {"[Other]\nRemoveIPC=no\n", -1},
        {"  [Login]  \n  RemoveIPC=false  \n", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        assert_int_equal(ncd_logind_removeipc(cases[i].conf,
                                              strlen(cases[i].conf)),
                         cases[i].want);
    const char *lim =
        "Limit                     Soft Limit           Hard Limit           Units     \n"
        "Max locked memory         65536                unlimited            bytes     \n";
    struct ncd_limit l;
    assert_int_equal(ncd_limits_parse(lim, strlen(lim), "Max locked memory", &l), 1);
    assert_int_equal(l.soft, 65536);
    assert_int_equal(l.hard, -1);
    assert_int_equal(ncd_limits_parse(lim, strlen(lim), "Max open files", &l), 0);
    const char *st = "Name:\tx\nCapEff:\t00000000a80425fb\n";
    unsigned long long cap;
    assert_int_equal(ncd_status_capeff(st, strlen(st), &cap), 1);
    assert_int_equal(cap, 0xa80425fbULL);
    assert_false((cap >> NCD_CAP_IPC_LOCK) & 1);
}

static void test_cgroup_and_env(void **state)
{
    (void)state;
    static const struct {
        const char *cg;
        enum ncd_runtime rt;
        int k8s;
    } cases[] = {
        {"0::/\n", NCD_RT_NONE, 0},
        {"12:memory:/docker/4f2a9c\n", NCD_RT_DOCKER, 0},
        {"0::/system.slice/docker-4f2a.scope\n", NCD_RT_DOCKER, 0},
        {"0::/kubepods.slice/kubepods-pod1.slice/cri-containerd-9f.scope\n",
         NCD_RT_CONTAINERD, 1},
        {"0::/machine.slice/libpod-abc.scope\n", NCD_RT_PODMAN, 0},
        {"0::/lxc.payload.c1\n", NCD_RT_LXC, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        enum ncd_runtime rt = NCD_RT_NONE;
        int k8s = 0;
        ncd_cgroup_classify(cases[i].cg, strlen(cases[i].cg), &rt, &k8s);
        assert_int_equal(rt, cases[i].rt);
        assert_int_equal(k8s, cases[i].k8s);
    }
    assert_true(ncd_env_is_secret("WANDB_API_KEY"));
    assert_true(ncd_env_is_secret("hf_token"));
    assert_true(ncd_env_is_secret("AWS_SECRET_ACCESS_KEY"));
    /* IB partition keys are settings (user trial: replay warned about
     * NCCL_IB_PKEY='<redacted>'); a key next to one still is a secret */
    assert_false(ncd_env_is_secret("NCCL_IB_PKEY"));
    assert_false(ncd_env_is_secret("OMPI_MCA_btl_openib_pkey"));
    assert_true(ncd_env_is_secret("NCCL_IB_PKEY_API_KEY"));
    assert_false(ncd_env_is_secret("NCCL_IB_HCA"));
    assert_true(ncd_gather_env_wanted("NCCL_DEBUG"));
    assert_true(ncd_gather_env_wanted("LD_LIBRARY_PATH"));
    assert_true(ncd_gather_env_wanted("TORCH_NCCL_ASYNC_ERROR_HANDLING"));
    assert_true(ncd_gather_env_wanted("RANK"));
    assert_false(ncd_gather_env_wanted("RANKING"));
    assert_false(ncd_gather_env_wanted("SSH_AUTH_SOCK"));
}

static void ldc_cb(const char *name, const char *path, void *arg)
{
    char *out = arg;
    strcat(out, name);
    strcat(out, "=");
    strcat(out, path);
    strcat(out, ";");
}

static void test_ldcache(void **state)
{
    (void)state;
    /* new-format cache: header 48 bytes, entries 24 bytes, strings after */
    unsigned char buf[512];
    memset(buf, 0, sizeof buf);
    memcpy(buf, "glibc-ld.so.cache1.1", 20);
    const char *strs[] = {"libnccl.so.2", "/usr/lib/libnccl.so.2", "libz.so.1",
                          "/lib/libz.so.1", "libnccl.so", "/opt/x/libnccl.so"};
    size_t so = 48 + 3 * 24, offs[6];
    for (int i = 0; i < 6; i++) {
        offs[i] = so;
        strcpy((char *)buf + so, strs[i]);
        so += strlen(strs[i]) + 1;
    }
    put32(buf, 20, 3);
    for (int e = 0; e < 3; e++) {
        put32(buf, 48 + (size_t)e * 24 + 4, (unsigned)offs[2 * e]);
        put32(buf, 48 + (size_t)e * 24 + 8, (unsigned)offs[2 * e + 1]);
    }
    char out[256] = "";
    assert_int_equal(ncd_ldcache_parse(buf, so, "libnccl.so", ldc_cb, out), 2);
    assert_string_equal(out, "libnccl.so.2=/usr/lib/libnccl.so.2;"
                             "libnccl.so=/opt/x/libnccl.so;");
    assert_int_equal(ncd_ldcache_parse(buf, 30, "x", NULL, NULL), NCD_EPARSE);
    /* an offset past the end is refused */
    put32(buf, 48 + 4, 5000);
    assert_int_equal(ncd_ldcache_parse(buf, so, "lib", NULL, NULL), NCD_EPARSE);
    const char ro[] = "junk\0NCCL version %s\0NCCL version 2.21.5+cuda12.4\0x";
    int code;
    char cuda[16];
    assert_int_equal(ncd_nccl_version_in_buf(ro, sizeof ro, &code, cuda,
                                             sizeof cuda), 1);
    assert_int_equal(code, 22105);
    assert_string_equal(cuda, "12.4");
    assert_int_equal(ncd_nccl_version_in_buf("nothing", 7, &code, cuda,
                                             sizeof cuda), 0);
}

static void test_ports_and_fw(void **state)
{
    (void)state;
    int lo, hi;
    assert_int_equal(ncd_port_range_parse("32768\t60999\n", &lo, &hi), 0);
    assert_int_equal(lo, 32768);
    assert_int_equal(ncd_port_range_parse("x", &lo, &hi), NCD_EPARSE);
    assert_int_equal(ncd_port_range_parse("60000 50000", &lo, &hi), NCD_EPARSE);
    const char *tcp =
        "  sl  local_address rem_address   st\n"
        "   0: 0100007F:6D9C 00000000:0000 0A 0\n"  /* 28060 */
        "   1: 00000000:6DBC 00000000:0000 0A 0\n"  /* 28092 */
        "   2: 0100007F:6D9C 0100007F:8000 01 0\n"; /* established */
    assert_int_equal(ncd_proc_net_tcp_listeners(tcp, strlen(tcp), 0x6D9C), 1);
    assert_int_equal(ncd_proc_net_tcp_listeners(tcp, strlen(tcp), 22), 0);
    struct ncd_ctx *ctx;
    assert_int_equal(ncd_ctx_new("/", NULL, &ctx), 0);
    const char *pol =
        "{\"nftables\":[{\"chain\":{\"family\":\"inet\",\"table\":\"f\","
        "\"name\":\"in\",\"hook\":\"input\",\"policy\":\"drop\"}},"
        "{\"rule\":{\"family\":\"inet\",\"table\":\"f\",\"chain\":\"in\","
        "\"expr\":[{\"match\":{\"op\":\"==\",\"left\":{\"payload\":{"
        "\"protocol\":\"tcp\",\"field\":\"dport\"}},\"right\":{\"range\":"
        "[50000,51000]}}},{\"accept\":null}]}}]}";
    struct ncd_fw fw;
    memset(&fw, 0, sizeof fw);
    assert_int_equal(ncd_nft_analyze(ctx, pol, strlen(pol), 50000, 51000, &fw), 0);
    assert_true(fw.policy_drop);
    assert_true(fw.accept_covers);
    memset(&fw, 0, sizeof fw);
    assert_int_equal(ncd_nft_analyze(ctx, pol, strlen(pol), 32768, 60999, &fw), 0);
    assert_false(fw.accept_covers);
    const char *drop =
        "{\"nftables\":[{\"chain\":{\"family\":\"ip\",\"table\":\"t\","
        "\"name\":\"c\",\"hook\":\"input\",\"policy\":\"accept\"}},"
        "{\"rule\":{\"family\":\"ip\",\"table\":\"t\",\"chain\":\"c\","
        "\"expr\":[{\"match\":{\"op\":\"==\",\"left\":{\"payload\":{"
        "\"protocol\":\"tcp\",\"field\":\"dport\"}},\"right\":{\"set\":"
        "[22,{\"range\":[40000,40010]}]}}},{\"drop\":null}]}}]}";
    memset(&fw, 0, sizeof fw);
    assert_int_equal(ncd_nft_analyze(ctx, drop, strlen(drop), 32768, 60999, &fw), 0);
    assert_true(fw.drop_overlap);
    assert_false(fw.policy_drop);
    memset(&fw, 0, sizeof fw);
    assert_int_equal(ncd_nft_analyze(ctx, "[1]", 3, 1, 2, &fw), NCD_EPARSE);
    /* coverage from several rules and a named interval set, udp-only rules
     * not counted, nft-like evidence, escaped strings, broken JSON */
    const char *multi =
        "{\"nftables\":[{\"chain\":{\"family\":\"inet\",\"table\":\"f\","
        "\"name\":\"in\",\"hook\":\"input\",\"policy\":\"drop\"}},"
        "{\"set\":{\"family\":\"inet\",\"table\":\"f\",\"name\":\"hi\","
        "\"elem\":[{\"range\":[40001,60999]}]}},"
        "{\"rule\":{\"family\":\"inet\",\"table\":\"f\",\"chain\":\"in\","
        "\"expr\":[{\"match\":{\"op\":\"==\",\"left\":{\"payload\":{"
        "\"protocol\":\"tcp\",\"field\":\"dport\"}},\"right\":{\"set\":"
        "[{\"range\":[32768,40000]}]}}},{\"accept\":null}]}},"
        "{\"rule\":{\"family\":\"inet\",\"table\":\"f\",\"chain\":\"in\","
        "\"expr\":[{\"match\":{\"op\":\"==\",\"left\":{\"payload\":{"
        "\"protocol\":\"tcp\",\"field\":\"dport\"}},\"right\":\"@hi\"}},"
        "{\"accept\":null}]}},"
        "{\"rule\":{\"family\":\"inet\",\"table\":\"f\",\"chain\":\"in\","
        "\"expr\":[{\"match\":{\"op\":\"==\",\"left\":{\"meta\":{"
        "\"key\":\"l4proto\"}},\"right\":\"udp\"}},{\"accept\":null}]}},"
        "{\"rule\":{\"family\":\"inet\",\"table\":\"f\",\"chain\":\"in\","
        "\"expr\":[{\"match\":{\"op\":\"==\",\"left\":{\"meta\":{"
        "\"key\":\"iifname\"}},\"right\":\"e\\u0074h0\"}},"
        "{\"match\":{\"op\":\"==\",\"left\":{\"payload\":{"
        "\"protocol\":\"tcp\",\"field\":\"dport\"}},\"right\":45000}},"
        "{\"counter\":{\"packets\":1,\"bytes\":2}},{\"drop\":null}]}}]}";
    memset(&fw, 0, sizeof fw);
    assert_int_equal(ncd_nft_analyze(ctx, multi, strlen(multi), 32768, 60999, &fw), 0);
    assert_true(fw.accept_covers);
    assert_true(fw.drop_overlap);
    assert_string_equal(fw.evidence[1], "drops part of the range: inet f in: "
                                        "iifname \"eth0\" tcp dport 45000 drop");
    memset(&fw, 0, sizeof fw);
    assert_int_equal(ncd_nft_analyze(ctx, multi, strlen(multi), 32000, 60999, &fw), 0);
    assert_false(fw.accept_covers); /* 32000-32767 open to no rule */
    memset(&fw, 0, sizeof fw);
    assert_int_equal(ncd_nft_analyze(ctx, multi, strlen(multi) - 3, 1, 2, &fw),
                     NCD_EPARSE);
    ncd_ctx_free(ctx);
}

static void test_utf8_sanitize(void **state)
{
    (void)state;
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"plain", "plain"},
        {"caf\xc3\xa9", "caf\xc3\xa9"},           /* valid 2-byte */
        {"\xe2\x82\xac ok", "\xe2\x82\xac ok"}, /* valid 3-byte */
        {"a\xff" "b", "a?b"},                          /* invalid byte */
        {"\xc3(", "?("},                            /* truncated */
        {"\xc0\xaf", "??"},                        /* overlong */
        {"\xed\xa0\x80", "???"},                  /* surrogate */
        {"\xf4\x90\x80\x80", "????"},            /* > U+10FFFF */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char buf[32];
        snprintf(buf, sizeof buf, "%s", cases[i].in);
        ncd_utf8_sanitize(buf);
        assert_string_equal(buf, cases[i].out);
    }
}

static void test_iommu_dl_record(void **state)
{
    (void)state;
    struct ncd_iommu io;
    const char *cl = "BOOT_IMAGE=/vmlinuz ro intel_iommu=on iommu=pt quiet";
    memset(&io, 0, sizeof io);
    ncd_iommu_parse_cmdline(cl, strlen(cl), &io);
    assert_true(io.cmdline_on);
    assert_true(io.cmdline_pt);
    assert_false(io.cmdline_off);
    assert_string_equal(io.cmdline_opts, "intel_iommu=on iommu=pt");
    const char *rec = "libibverbs.so.1 ok /usr/lib/libibverbs.so.1\n"
                      "libcuda.so.1 missing libcuda.so.1: cannot open\n";
    struct ncd_dl_probe dp;
    assert_int_equal(ncd_dl_record_lookup(rec, strlen(rec), "libcuda.so.1", &dp), 1);
    assert_true(dp.known);
    assert_false(dp.ok);
    assert_string_equal(dp.detail, "libcuda.so.1: cannot open");
    assert_int_equal(ncd_dl_record_lookup(rec, strlen(rec), "libibverbs.so.1", &dp), 1);
    assert_true(dp.ok);
    assert_int_equal(ncd_dl_record_lookup(rec, strlen(rec), "libibverbs.so", &dp), 0);
}

/* The fixture trees drive the full probes. */
static void test_fixture_probes(void **state)
{
    (void)state;
    char root[4096];
    snprintf(root, sizeof root, "%s/tests/fixtures/sysroots/dgx-8gpu-4hca",
             NCD_SOURCE_DIR);
    struct ncd_ctx *ctx;
    assert_int_equal(ncd_ctx_new(root, NULL, &ctx), 0);
    struct ncd_topo t;
    assert_int_equal(ncd_topo_probe(ctx, 1, &t), 0);
    assert_int_equal(t.n_gpu, 8);
    assert_int_equal(t.n_nic, 5);
    assert_true(t.nvlink_known);
    int nv;
    assert_int_equal(ncd_topo_link(&t, 0, 1, &nv), NCD_LINK_NV);
    assert_int_equal(nv, 12);
    assert_int_equal(ncd_topo_link(&t, 0, 8, NULL), NCD_LINK_PIX);  /* GPU0-NIC0 */
    assert_int_equal(ncd_topo_link(&t, 0, 9, NULL), NCD_LINK_NODE); /* GPU0-NIC1 */
    assert_int_equal(ncd_topo_link(&t, 0, 10, NULL), NCD_LINK_SYS);
    assert_string_equal(t.dev[0].name, "NVIDIA A100-SXM4-80GB");
    ncd_topo_release(&t);
    struct ncd_rdma r;
    assert_int_equal(ncd_rdma_probe(ctx, &r), 0);
    assert_int_equal(r.n, 4);
    assert_string_equal(r.v[0].name, "mlx5_0");
    assert_int_equal(r.v[0].ports[0].state, 4);
    assert_true(r.peermem);
    assert_int_equal(r.n_uverbs, 4);
    ncd_rdma_release(&r);
    struct ncd_nccl_scan s;
    assert_int_equal(ncd_nccl_scan(ctx, &s), 0);
    assert_int_equal(s.n, 2);
    assert_int_equal(s.winner, 0);
    assert_int_equal(s.v[1].version, 22602);
    ncd_nccl_scan_release(&s);
    ncd_ctx_free(ctx);
}


/* ---- NVML stand-in: 9 devices (one unknown to sysfs), GPU0-GPU1 joined by
 * 4 direct links, every other link to an NVSwitch. */
static const struct ncd_topo *fake_topo;
static int fake_init_rc;
static int f_init(void) { return fake_init_rc; }
static int f_shutdown(void) { return 0; }
static int f_count(unsigned *n) { *n = 9; return 0; }
static long fake_devs[9];
static int f_handle(unsigned i, void **d)
{
    *d = &fake_devs[i];
    return 0;
}
static int dev_idx(void *d) { return (int)((long *)d - fake_devs); }
static void put_bus(void *pci, const char *bdf)
{
    /* nvmlPciInfo_t v3: busId at offset 16 + 5 * 4 */
    snprintf((char *)pci + 36, 32, "0000%s", bdf);
}
static int f_pci(void *d, void *pci)
{
    int i = dev_idx(d);
    put_bus(pci, i < 8 ? fake_topo->dev[i].bdf : "0000:ee:00.0");
    return 0;
}
static int f_name(void *d, char *buf, unsigned len)
{
    snprintf(buf, len, "NVIDIA H200 #%d", dev_idx(d));
    return 0;
}
static int f_state(void *d, unsigned link, int *active)
{
    (void)d;
    if (link >= 18)
        return 2; /* NVML_ERROR_INVALID_ARGUMENT */
    *active = 1;
    return 0;
}
static int f_remote(void *d, unsigned link, void *pci)
{
    int i = dev_idx(d);
    if (i <= 1 && link < 4)
        put_bus(pci, fake_topo->dev[1 - i].bdf);
    else
        put_bus(pci, "0000:ff:00.0"); /* NVSwitch */
    return 0;
}
static int f_drv(char *b, unsigned n)
{
    snprintf(b, n, "570.86.15");
    return 0;
}
static int f_cuda(int *v)
{
    *v = 12080;
    return 0;
}

static void test_nvml_table(void **state)
{
    (void)state;
    char root[4096];
    snprintf(root, sizeof root, "%s/tests/fixtures/sysroots/dgx-8gpu-4hca",
             NCD_SOURCE_DIR);
    struct ncd_ctx *ctx;
    assert_int_equal(ncd_ctx_new(root, NULL, &ctx), 0);
    struct ncd_topo t;
    assert_int_equal(ncd_topo_probe(ctx, 0, &t), 0);
    assert_false(t.nvlink_known);
    fake_topo = &t;
    struct ncd__nvml_api api = {f_init, f_shutdown, f_count, f_handle, f_name,
                                f_pci, f_state, f_remote, f_drv, f_cuda};
    struct ncd_nvml_answer a = {0};
    fake_init_rc = 9; /* NVML_ERROR_DRIVER_NOT_LOADED */
    assert_int_equal(ncd__nvml_query(&api, &a), 0);
    assert_false(a.known);
    assert_int_equal(ncd_topo_apply_nvml(&t, &a), 0);
    ncd_nvml_answer_release(&a);
    assert_false(t.nvlink_known);
    assert_non_null(strstr(t.nvlink_source, "error 9"));
    fake_init_rc = 0;
    assert_int_equal(ncd__nvml_query(&api, &a), 0);
    assert_true(a.known);
    snprintf(a.source, sizeof a.source, "NVML");
    assert_int_equal(ncd_topo_apply_nvml(&t, &a), 0);
    /* the answer survives a round trip through the .ncd/nvml record */
    struct ncd_strbuf sb = {0};
    ncd_nvml_format(&a, &sb);
    struct ncd_nvml_answer b = {0};
    assert_int_equal(ncd_nvml_parse(ctx, ncd_sb_str(&sb), sb.len, &b), 0);
    assert_true(b.known);
    assert_int_equal(b.n_gpu, a.n_gpu);
    assert_int_equal(b.n_link, a.n_link);
    for (size_t i = 0; i < a.n_link; i++) {
        assert_string_equal(b.link[i].bdf, a.link[i].bdf);
        assert_string_equal(b.link[i].peer, a.link[i].peer);
        assert_int_equal(b.link[i].count, a.link[i].count);
    }
    ncd_nvml_answer_release(&b);
    ncd_sb_release(&sb);
    ncd_nvml_answer_release(&a);
    assert_true(t.nvlink_known);
    int nv;
    assert_int_equal(ncd_topo_link(&t, 0, 1, &nv), NCD_LINK_NV);
    assert_int_equal(nv, 4 + 14);
    assert_int_equal(ncd_topo_link(&t, 0, 2, &nv), NCD_LINK_NV);
    assert_int_equal(nv, 14);
    assert_int_equal(ncd_topo_link(&t, 2, 3, &nv), NCD_LINK_NV);
    assert_int_equal(nv, 18);
    assert_string_equal(t.dev[3].name, "NVIDIA H200 #3");
    assert_string_equal(t.driver_version, "570.86.15");
    assert_int_equal(t.cuda_driver_version, 12080);
    ncd_topo_release(&t);
    ncd_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pci_path_split),
        cmocka_unit_test(test_pci_config),
        cmocka_unit_test(test_pci_link),
        cmocka_unit_test(test_gid_auto),
        cmocka_unit_test(test_mounts_and_sizes),
        cmocka_unit_test(test_logind_limits_caps),
        cmocka_unit_test(test_cgroup_and_env),
        cmocka_unit_test(test_ldcache),
        cmocka_unit_test(test_ports_and_fw),
        cmocka_unit_test(test_utf8_sanitize),
        cmocka_unit_test(test_iommu_dl_record),
        cmocka_unit_test(test_fixture_probes),
        cmocka_unit_test(test_nvml_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
