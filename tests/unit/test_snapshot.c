/* SPDX-License-Identifier: MIT */
/* The node snapshot and the system-operations layer: every probe runs once
 * per run, paths.def covers every file the probes read, answers come only
 * through the operations table, and record -> replay keeps them. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ncd/check.h"
#include "ncd/error.h"
#include "ncd/fs.h"
#include "ncd/gather.h"
#include "ncd/ifclass.h"
#include "ncd/node.h"
#include "ncd/node_report.h"
#include "ncd/resolve.h"
#include "ncd/sysops.h"

static const char *fixtures[] = {
    "baremetal-8gpu-ipoib", "cloud-vm-ens5-docker", "dgx-8gpu-4hca",
    "docker-shm64m",        "k8s-pod-gpu",          "k8s-pod-veth",
    "laptop-dgpu",          "laptop-wifi",          "roce-cloud",
};

/* ---- trace of file accesses ---------------------------------------------- */

/* How often one component accessed one path, one way. */
struct access {
    char *path;
    int what, in_sysop, part, count;
};

struct trace {
    struct access *v;
    size_t n, cap;
    int part; /* the component running, -1 outside the node probe */
};

static void on_access(void *arg, enum ncd_fs_access what, const char *path,
                      int in_sysop)
{
    struct trace *t = arg;
    for (size_t i = 0; i < t->n; i++)
        if ((int)what == t->v[i].what && t->v[i].in_sysop == in_sysop &&
            t->v[i].part == t->part && strcmp(t->v[i].path, path) == 0) {
            t->v[i].count++;
            return;
        }
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 256;
        t->v = realloc(t->v, t->cap * sizeof *t->v);
        assert_non_null(t->v);
    }
    t->v[t->n++] =
        (struct access){strdup(path), (int)what, in_sysop, t->part, 1};
}

static void on_component(void *arg, enum ncd_node_part p)
{
    ((struct trace *)arg)->part = (int)p;
}

/* Times `path` was opened, by any component. */
static int opens(const struct trace *t, const char *pattern)
{
    int c = 0;
    for (size_t i = 0; i < t->n; i++)
        if (t->v[i].what == NCD_FS_OPEN &&
            fnmatch(pattern, t->v[i].path, FNM_PATHNAME) == 0)
            c += t->v[i].count;
    return c;
}

static void trace_free(struct trace *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->v[i].path);
    free(t->v);
    memset(t, 0, sizeof *t);
}

extern char **environ;

/* A fixture's context; "live" is this machine. */
static struct ncd_ctx *open_fixture(const char *name)
{
    char root[4096], err[512];
    snprintf(root, sizeof root, "%s/tests/fixtures/sysroots/%s",
             NCD_SOURCE_DIR, name);
    struct ncd_ctx *ctx;
    int live = strcmp(name, "live") == 0;
    struct ncd_ctx_config cfg = {.sysroot = live ? NULL : root,
                                 .envp = live ? environ : NULL};
    if (ncd_ctx_open(&cfg, &ctx, err, sizeof err) < 0)
        fail_msg("%s: %s", name, err);
    return ctx;
}

/* What `check` does, with every renderer: probe, check, facts, text. */
static void check_run(struct ncd_ctx *ctx, struct ncd_node *n,
                      struct trace *t)
{
    struct ncd_check_opts co = {0};
    struct ncd_findings l = {0};
    struct ncd_node_opts o = {.on_component = on_component,
                              .on_component_arg = t};
    assert_int_equal(ncd_node_probe(ctx, &o, ncd_checks_parts(&co), n), 0);
    t->part = -1;
    assert_int_equal(ncd_run_checks(n, &co, &l), 0);
    json_t *facts = ncd_node_facts_json(n);
    json_t *env = ncd_recommended_env(n, &l);
    assert_non_null(facts);
    assert_non_null(env);
    struct ncd_strbuf sb = {0};
    struct ncd_text_style st = {0};
    ncd_node_check_text(&sb, n, &l, env, &st);
    if (ncd_node_has(n, NCD_PART_NET))
        ncd_node_ifaces_text(&sb, n, &st);
    assert_false(sb.oom);
    ncd_sb_release(&sb);
    json_decref(facts);
    json_decref(env);
    ncd_findings_release(&l);
}

/* Every probe runs once: each component once per node, no component opens
 * a file twice, and the things read over and over before the snapshot
 * (the PCI tree three times, eight interface probes, /proc/version four
 * times) are read once.  Two components may read the same attribute (the
 * interface probe reads a NIC's numa_node, the PCI probe every device's). */
static void test_probe_once(void **state)
{
    (void)state;
    for (size_t f = 0; f < sizeof fixtures / sizeof *fixtures; f++) {
        struct ncd_ctx *ctx = open_fixture(fixtures[f]);
        struct trace t = {.part = -1};
        ncd_ctx_set_fs_trace(ctx, on_access, &t);
        struct ncd_node n = {0};
        check_run(ctx, &n, &t);
        size_t kinds = t.n;
        int total = opens(&t, "*");
        /* asking again for every part probes nothing */
        assert_int_equal(ncd_node_probe(ctx, NULL, NCD_PARTS_ALL, &n), 0);
        for (int p = 0; p < NCD_PART__N; p++)
            assert_int_equal(n.status[p].runs, 1);
        assert_int_equal(t.n, kinds);
        assert_int_equal(opens(&t, "*"), total);
        for (size_t i = 0; i < t.n; i++) {
            const struct access *a = &t.v[i];
            if (a->count > 1 && a->what == NCD_FS_OPEN && !a->in_sysop)
                fail_msg("%s: component %s opened %s %d times", fixtures[f],
                         ncd_node_part_name(a->part), a->path, a->count);
        }
        assert_int_equal(opens(&t, "/proc/version"), 1);
        assert_int_equal(opens(&t, "/sys/bus/pci/devices"), 1);
        assert_in_range(opens(&t, "/sys/bus/pci/devices/*/config"), 0,
                        n.topo.pci.n);
        assert_int_equal(opens(&t, "/proc/net/route"), 1);
        assert_int_equal(opens(&t, "/proc/self/limits"), 1);
        for (size_t i = 0; i < n.net.nl.n; i++) {
            char p[300];
            snprintf(p, sizeof p, "/sys/class/net/%s/flags", n.net.nl.v[i].name);
            assert_int_equal(opens(&t, p), 1);
        }
        ncd_node_release(&n);
        trace_free(&t);
        ncd_ctx_free(ctx);
    }
}

/* ---- paths.def covers what the probes read ------------------------------- */

struct gathered {
    char **v;
    size_t n, cap;
};

static int on_gathered(void *arg, const char *path, int is_dir)
{
    (void)is_dir;
    struct gathered *g = arg;
    if (g->n == g->cap) {
        g->cap = g->cap ? g->cap * 2 : 1024;
        g->v = realloc(g->v, g->cap * sizeof *g->v);
        assert_non_null(g->v);
    }
    g->v[g->n++] = strdup(path);
    return 0;
}

/* `p` is `e`, or a directory above it. */
static int covers(const char *e, const char *p)
{
    size_t l = strlen(p);
    return strncmp(e, p, l) == 0 && (e[l] == '\0' || e[l] == '/' || l == 1);
}

/* The patterns of paths.def, read from the source. */
static size_t load_patterns(char (*pat)[256], size_t max)
{
    char file[4096], line[512];
    snprintf(file, sizeof file, "%s/src/lib/snapshot/paths.def",
             NCD_SOURCE_DIR);
    FILE *f = fopen(file, "r");
    assert_non_null(f);
    size_t n = 0;
    while (n < max && fgets(line, sizeof line, f)) {
        char *q = strchr(line, '"');
        if (strncmp(line, "NCD_GATHER(", 11) != 0 || !q)
            continue;
        char *e = strchr(q + 1, '"');
        assert_non_null(e);
        snprintf(pat[n++], 256, "%.*s", (int)(e - q - 1), q + 1);
    }
    fclose(f);
    assert_true(n > 50);
    return n;
}

/* `path` matches pattern `pat`, or is a directory on the way to it. */
static int pattern_covers(const char *pat, const char *path)
{
    if (fnmatch(pat, path, FNM_PATHNAME) == 0)
        return 1;
    char pre[256];
    snprintf(pre, sizeof pre, "%s", pat);
    for (char *s = strrchr(pre, '/'); s && s > pre; s = strrchr(pre, '/')) {
        *s = '\0';
        if (fnmatch(pre, path, FNM_PATHNAME) == 0)
            return 1;
    }
    return 0;
}

/* Every file a probe reads (outside the recorded answers) is one gather
 * copies: on each fixture, a path that exists there (or what it resolves
 * to) is in gather's list or a directory above an entry; a path that does
 * not is covered by a paths.def pattern, so a capture of a node that has
 * it would hold it. */
static void test_paths_def(void **state)
{
    (void)state;
    static char pat[256][256];
    size_t npat = load_patterns(pat, 256);
    int misses = 0;
    for (size_t f = 0; f <= sizeof fixtures / sizeof *fixtures; f++) {
        const char *name = f < sizeof fixtures / sizeof *fixtures
                               ? fixtures[f]
                               : "live";
        struct ncd_ctx *ctx = open_fixture(name);
        struct trace t = {.part = -1};
        ncd_ctx_set_fs_trace(ctx, on_access, &t);
        struct ncd_node n = {0};
        check_run(ctx, &n, &t);
        ncd_node_release(&n);
        ncd_ctx_set_fs_trace(ctx, NULL, NULL);
        struct gathered g = {0};
        assert_int_equal(ncd_gather_paths(ctx, on_gathered, &g), 0);
        const char *home = ncd_getenv(ctx, "HOME");
        char conf[600] = "";
        if (home)
            snprintf(conf, sizeof conf, "%s/.nccl.conf", home);
        for (size_t i = 0; i < t.n; i++) {
            const struct access *a = &t.v[i];
            if (a->in_sysop || strcmp(a->path, conf) == 0)
                continue;
            int ok = 0;
            char real[4096];
            if (ncd_fs_exists(ctx, a->path) &&
                ncd_fs_realpath(ctx, a->path, real, sizeof real) == 0)
                for (size_t k = 0; k < g.n && !ok; k++)
                    ok = covers(g.v[k], a->path) || covers(g.v[k], real);
            for (size_t k = 0; k < npat && !ok; k++)
                ok = pattern_covers(pat[k], a->path);
            if (!ok) {
                print_message("%s: %s reads %s, which no paths.def line "
                              "covers\n",
                              name, ncd_node_part_name(a->part), a->path);
                misses++;
            }
        }
        for (size_t k = 0; k < g.n; k++)
            free(g.v[k]);
        free(g.v);
        trace_free(&t);
        ncd_ctx_free(ctx);
    }
    assert_int_equal(misses, 0);
}

/* ---- the operations table is the only way to system answers -------------- */

static int fake_getifaddrs(struct ncd_ctx *ctx, struct ncd_sys_ifaddrs *out)
{
    out->v = calloc(1, sizeof *out->v);
    assert_non_null(out->v);
    snprintf(out->v[0].name, sizeof out->v[0].name, "eth0");
    out->v[0].flags = 0x11043; /* UP BROADCAST RUNNING MULTICAST LOWER_UP */
    assert_int_equal(ncd_if_addr_from_string(&out->v[0].a, "198.51.100.7", 24),
                     0);
    out->n = 1;
    out->known = 1;
    return ncd_ctx_errcode(ctx) < 0 ? NCD_EIO : 0;
}

static int fake_statvfs(struct ncd_ctx *ctx, const char *dir,
                        struct ncd_sys_space *out)
{
    (void)ctx;
    if (strcmp(dir, "/dev/shm") == 0) {
        out->known = 1;
        out->source = "fake";
        out->size_bytes = 12345 << 10;
        out->avail_bytes = 1 << 10;
    }
    return 0;
}

static void test_fake_ops(void **state)
{
    (void)state;
    static const struct ncd_sysops fake = {
        .name = "fake",
        .getifaddrs = fake_getifaddrs,
        .statvfs = fake_statvfs,
    };
    struct ncd_ctx *ctx = open_fixture("laptop-wifi");
    ncd_ctx_set_sysops(ctx, &fake);
    assert_string_equal(ncd_sys(ctx)->name, "fake");
    struct ncd_node n = {0};
    assert_int_equal(ncd_node_probe(ctx, NULL,
                                    NCD_PART_BIT(NCD_PART_NET) |
                                        NCD_PART_BIT(NCD_PART_SHM),
                                    &n),
                     0);
    /* the fixture's recorded addresses are not used: the table's are */
    assert_int_equal(n.net.nl.n_ifa, 1);
    assert_string_equal(n.net.nl.ifa[0].a.addr, "198.51.100.7");
    assert_string_equal(n.shm.shm.size_source, "fake");
    assert_int_equal(n.shm.shm.size, 12345 << 10);
    /* members left unset fall back to the default (replay) */
    struct ncd_sys_identity id;
    ncd_sys_identity(ctx, &id);
    ncd_node_release(&n);
    ncd_ctx_free(ctx);
}

/* ---- record -> replay keeps the answers ---------------------------------- */

struct records {
    char names[32][32];
    char *data[32];
    size_t len[32];
    int n;
};

static int on_record(void *arg, const char *name, const char *data,
                     size_t len)
{
    struct records *r = arg;
    assert_true(r->n < 32);
    snprintf(r->names[r->n], sizeof r->names[0], "%s", name);
    r->data[r->n] = malloc(len + 1);
    memcpy(r->data[r->n], data, len);
    r->data[r->n][len] = '\0';
    r->len[r->n++] = len;
    return 0;
}

static const char *record_of(const struct records *r, const char *name)
{
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->names[i], name) == 0)
            return r->data[i];
    return NULL;
}

/* The record table over a replay of dgx-8gpu-4hca: the same probe records
 * answers that replay to the same node. */
static void test_record_replay(void **state)
{
    (void)state;
    struct ncd_ctx *ctx = open_fixture("dgx-8gpu-4hca");
    assert_int_equal(ncd_sys_record_begin(ctx, "test 1"), 0);
    assert_int_equal(ncd_sys_record_begin(ctx, "test 2"), NCD_EEXISTS);
    assert_string_equal(ncd_sys(ctx)->name, "record");
    struct ncd_node n = {0};
    struct ncd_node_opts o = {.nvml = NCD_NVML_ALWAYS};
    assert_int_equal(ncd_node_probe(ctx, &o, NCD_PARTS_ALL, &n), 0);
    /* a recording of replayed answers: "does not resolve" is kept too,
     * "cannot be replayed" is not */
    struct ncd_if_addr a;
    assert_int_equal(ncd_resolve_first(ctx, "10.0.0.1", 0, &a, NULL, 0), 0);
    assert_int_equal(ncd_resolve_first(ctx, "nowhere.invalid", 0, &a, NULL, 0),
                     NCD_ENOTLIVE);
    struct records r = {0};
    assert_int_equal(ncd_sys_record_each(ctx, on_record, &r), 0);
    static const char *want[] = {"env",   "ifaddrs", "statvfs",  "dlopen",
                                 "nccl-libs", "nccl-version", "nvml",
                                 "nft.json", "self", "resolve",
                                 "gather-info"};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        if (!record_of(&r, want[i]))
            fail_msg("no %s record", want[i]);
    assert_non_null(strstr(record_of(&r, "resolve"), "10.0.0.1 10.0.0.1"));
    assert_null(strstr(record_of(&r, "resolve"), "nowhere"));
    /* the recorded NVML answer replays to the same matrix */
    struct ncd_nvml_answer na = {0};
    const char *nv = record_of(&r, "nvml");
    assert_int_equal(ncd_nvml_parse(ctx, nv, strlen(nv), &na), 0);
    struct ncd_topo t2 = n.topo;
    t2.nvlinks = NULL;
    t2.nvlink_known = 0;
    /* apply to a copy of the GPU list: same links as the live-probed one */
    t2.dev = calloc(n.topo.n_dev, sizeof *t2.dev);
    memcpy(t2.dev, n.topo.dev, n.topo.n_dev * sizeof *t2.dev);
    snprintf(na.source, sizeof na.source, ".ncd/nvml");
    assert_int_equal(ncd_topo_apply_nvml(&t2, &na), 0);
    for (size_t i = 0; i < n.topo.n_gpu * n.topo.n_gpu; i++)
        assert_int_equal(t2.nvlinks[i], n.topo.nvlinks[i]);
    free(t2.dev);
    free(t2.nvlinks);
    ncd_nvml_answer_release(&na);
    /* the recorded addresses are the fixture's */
    struct ncd_ifaddr_entry *e;
    const char *ia = record_of(&r, "ifaddrs");
    int ne = ncd_ifaddrs_parse(ctx, ia, strlen(ia), &e);
    assert_int_equal(ne, (int)n.net.nl.n_ifa);
    for (int i = 0; i < ne; i++)
        assert_string_equal(e[i].a.addr, n.net.nl.ifa[i].a.addr);
    free(e);
    for (int i = 0; i < r.n; i++)
        free(r.data[i]);
    ncd_node_release(&n);
    ncd_ctx_free(ctx);
}

/* ---- the interface-name classifier --------------------------------------- */

static void test_ifname_classes(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        enum ncd_ifname_class cls;
    } cases[] = {
        {"eth0", NCD_IFN_OTHER},          {"ens5", NCD_IFN_OTHER},
        {"ib0", NCD_IFN_OTHER},           {"bond0", NCD_IFN_OTHER},
        {"lo", NCD_IFN_LOOPBACK},         {"docker0", NCD_IFN_CONTAINER_BRIDGE},
        {"br-1a2b3c", NCD_IFN_CONTAINER_BRIDGE},
        {"virbr0", NCD_IFN_CONTAINER_BRIDGE},
        {"cni0", NCD_IFN_CONTAINER_BRIDGE}, {"cbr0", NCD_IFN_CONTAINER_BRIDGE},
        {"kube-bridge", NCD_IFN_CONTAINER_BRIDGE},
        {"kube-ipvs0", NCD_IFN_PLUMBING}, {"vnet3", NCD_IFN_PLUMBING},
        {"veth9f1", NCD_IFN_VETH},        {"tunl0", NCD_IFN_TUNNEL},
        {"tun0", NCD_IFN_TUNNEL},         {"wg0", NCD_IFN_TUNNEL},
        {"cali12ab", NCD_IFN_TUNNEL},     {"flannel.1", NCD_IFN_TUNNEL},
        {"tailscale0", NCD_IFN_TUNNEL},   {"sit0", NCD_IFN_TUNNEL},
        {"ip6tnl0", NCD_IFN_TUNNEL},      {"br0", NCD_IFN_OTHER},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        enum ncd_ifname_class c = ncd_ifname_classify(cases[i].name);
        if (c != cases[i].cls)
            fail_msg("case %zu %s: class %d, want %d", i, cases[i].name, c,
                     cases[i].cls);
        assert_int_equal(ncd_ifname_is_plumbing(cases[i].name),
                         c != NCD_IFN_OTHER && c != NCD_IFN_LOOPBACK);
    }
    assert_non_null(strstr(ncd_ifname_why("docker0"), "Docker"));
    assert_null(ncd_ifname_why("eth0"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_probe_once),
        cmocka_unit_test(test_paths_def),
        cmocka_unit_test(test_fake_ops),
        cmocka_unit_test(test_record_replay),
        cmocka_unit_test(test_ifname_classes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
