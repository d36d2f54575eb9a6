/* SPDX-License-Identifier: MIT */
/*
 * `check`'s known-bugs check (issue 9 item 2): the installed libnccl
 * versions against data/nccl-known-bugs.yaml, kept to the bugs that can
 * concern the node (IB bugs with RDMA devices, one-architecture bugs on
 * that architecture), and the /proc/cpuinfo architecture parser it needs.
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

#include "ncd/check.h"
#include "ncd/ctx.h"
#include "ncd/knownbugs.h"
#include "ncd/node.h"
#include "ncd/pci.h"

static const struct ncd_check *knownbugs_check(void)
{
    for (const struct ncd_check *c = ncd_checks; c->name; c++)
        if (strcmp(c->name, "knownbugs") == 0)
            return c;
    return NULL;
}

struct fx {
    struct ncd_ctx *ctx;
    struct ncd_node n;
    struct ncd_nccl_file files[2];
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    assert_int_equal(ncd_ctx_new(NULL, NULL, &f->ctx), 0);
    assert_int_equal(ncd_known_bugs_builtin(f->ctx, &f->n.known_bugs), 0);
    snprintf(f->files[0].path, sizeof f->files[0].path,
             "/usr/lib/x86_64-linux-gnu/libnccl.so.2");
    snprintf(f->files[0].origin, sizeof f->files[0].origin, "ld.so.cache");
    f->n.libs.scan.v = f->files;
    f->n.libs.scan.n = 1;
    f->n.libs.scan.winner = 0;
    snprintf(f->n.platform.virt.arch, sizeof f->n.platform.virt.arch,
             "x86_64");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    ncd_known_bugs_release(&f->n.known_bugs);
    ncd_ctx_free(f->ctx);
    free(f);
    return 0;
}

/* The bug ids in the evidence of the check's finding, "" when none. */
static void run(struct fx *f, char *ids, size_t idsz, int *sev)
{
    struct ncd_findings out = {0};
    struct ncd_check_opts o = {0};
    const struct ncd_check *c = knownbugs_check();
    assert_non_null(c);
    assert_int_equal(c->fn(&f->n, &o, &out), 0);
    ids[0] = '\0';
    *sev = -1;
    for (size_t i = 0; i < out.n; i++) {
        assert_string_equal(out.v[i].id, "lib.nccl.known-bugs");
        assert_int_equal(out.v[i].category, NCD_CAT_VERSION_KNOWN_BUG);
        *sev = (int)out.v[i].severity;
        for (size_t e = 0; e < out.v[i].n_evidence; e++) {
            size_t l = strlen(ids);
            snprintf(ids + l, idsz - l, "%s|", out.v[i].evidence[e]);
        }
    }
    ncd_findings_release(&out);
}

static void affected_release_is_reported(void **state)
{
    struct fx *f = *state;
    char ids[16384];
    int sev;
    f->files[0].version = 22809; /* 2.28.9 */
    run(f, ids, sizeof ids, &sev);
    assert_int_equal(sev, NCD_SEV_WARNING);
    assert_non_null(strstr(ids, "libnccl.so.2: NCCL 2.28.9"));
    assert_non_null(strstr(ids, "p2p-then-collective-buffer-crash"));
    /* an IB bug without RDMA devices, an ARM bug on x86: not here */
    assert_null(strstr(ids, "gin-init-segfault"));
    assert_null(strstr(ids, "arm-cas-gcc9-hang"));
}

static void node_facts_select_bugs(void **state)
{
    struct fx *f = *state;
    char ids[16384];
    int sev;
    f->files[0].version = 22809;
    snprintf(f->n.platform.virt.arch, sizeof f->n.platform.virt.arch,
             "aarch64");
    struct ncd_ib_dev dev;
    memset(&dev, 0, sizeof dev);
    f->n.rdma.r.v = &dev;
    f->n.rdma.r.n = 1;
    run(f, ids, sizeof ids, &sev);
    f->n.rdma.r.v = NULL;
    f->n.rdma.r.n = 0;
    assert_non_null(strstr(ids, "gin-init-segfault"));
    assert_non_null(strstr(ids, "arm-cas-gcc9-hang"));
    /* unknown architecture: a one-architecture bug is left out */
    f->n.platform.virt.arch[0] = '\0';
    run(f, ids, sizeof ids, &sev);
    assert_null(strstr(ids, "arm-cas-gcc9-hang"));
}

static void fixed_release_and_unknown_version_are_quiet(void **state)
{
    struct fx *f = *state;
    char ids[16384];
    int sev;
    /* newer than every fix in the list */
    int newest = 0;
    for (size_t i = 0; i < f->n.known_bugs.n; i++)
        if (f->n.known_bugs.v[i].fixed_code > newest)
            newest = f->n.known_bugs.v[i].fixed_code;
    f->files[0].version = newest + 1;
    run(f, ids, sizeof ids, &sev);
    assert_int_equal(sev, -1);
    f->files[0].version = 0;
    run(f, ids, sizeof ids, &sev);
    assert_int_equal(sev, -1);
}

static void two_versions_two_findings(void **state)
{
    struct fx *f = *state;
    struct ncd_findings out = {0};
    struct ncd_check_opts o = {0};
    f->files[0].version = 22809;
    f->files[1] = f->files[0];
    snprintf(f->files[1].path, sizeof f->files[1].path,
             "/opt/venv/lib/python3.12/site-packages/nvidia/nccl/lib/"
             "libnccl.so.2");
    f->files[1].version = 21805; /* 2.18.5 */
    f->n.libs.scan.n = 2;
    assert_int_equal(knownbugs_check()->fn(&f->n, &o, &out), 0);
    assert_int_equal(out.n, 2);
    assert_non_null(strstr(out.v[0].title, "NCCL 2.28.9"));
    assert_non_null(strstr(out.v[1].title, "NCCL 2.18.5"));
    ncd_findings_release(&out);
}

static void cpuinfo_arch(void **state)
{
    (void)state;
    const char x86[] = "processor\t: 0\nvendor_id\t: GenuineIntel\n"
                       "flags\t\t: fpu vme hypervisor\n";
    const char arm[] = "processor\t: 0\nBogoMIPS\t: 50.00\n"
                       "Features\t: fp asimd\nCPU implementer\t: 0x41\n";
    const char ppc[] = "processor\t: 0\ncpu\t\t: POWER9 (raw), altivec "
                       "supported\nplatform\t: PowerNV\n";
    assert_string_equal(ncd_cpuinfo_arch(x86, sizeof x86 - 1), "x86_64");
    assert_string_equal(ncd_cpuinfo_arch(arm, sizeof arm - 1), "aarch64");
    assert_string_equal(ncd_cpuinfo_arch(ppc, sizeof ppc - 1), "ppc64le");
    assert_string_equal(ncd_cpuinfo_arch("", 0), "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(affected_release_is_reported, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(node_facts_select_bugs, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            fixed_release_and_unknown_version_are_quiet, setup, teardown),
        cmocka_unit_test_setup_teardown(two_versions_two_findings, setup,
                                        teardown),
        cmocka_unit_test(cpuinfo_arch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
