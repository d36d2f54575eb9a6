/* SPDX-License-Identifier: MIT */
/*
 * `verify` (include/ncd/verify.h) without a GPU: the link bandwidth table
 * (data/link-bandwidth.yaml) and its arithmetic, sysfs link speeds, the
 * expectation over GPU pairs from recorded sysroots, the sweep's clamp to
 * free memory, and the report's text, JSON and exit status.
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

#include "ncd/ctx.h"
#include "ncd/error.h"
#include "ncd/verify.h"
#include "verify/verify_int.h"

#define NEAR(a, b) assert_true(fabs((a) - (b)) < 0.01)

static struct ncd_linkbw *table(struct ncd_ctx **ctx)
{
    assert_int_equal(ncd_ctx_new(NULL, NULL, ctx), 0);
    struct ncd_linkbw *lb = NULL;
    assert_int_equal(ncd_linkbw_load(*ctx, &lb), 0);
    assert_non_null(lb);
    return lb;
}

static void test_pcie(void **state)
{
    (void)state;
    struct ncd_ctx *ctx;
    struct ncd_linkbw *lb = table(&ctx);
    int gen = -1;
    /* GT/s x encoding efficiency / 8 x lanes, per direction */
    NEAR(ncd_linkbw_pcie(lb, 2.5, 16, &gen), 4.0);
    assert_int_equal(gen, 1);
    NEAR(ncd_linkbw_pcie(lb, 5.0, 8, &gen), 4.0);
    assert_int_equal(gen, 2);
    NEAR(ncd_linkbw_pcie(lb, 8.0, 16, &gen), 15.754);
    assert_int_equal(gen, 3);
    NEAR(ncd_linkbw_pcie(lb, 16.0, 16, &gen), 31.508);
    assert_int_equal(gen, 4);
    NEAR(ncd_linkbw_pcie(lb, 16.0, 8, &gen), 15.754);
    NEAR(ncd_linkbw_pcie(lb, 32.0, 16, &gen), 63.015);
    assert_int_equal(gen, 5);
    NEAR(ncd_linkbw_pcie(lb, 64.0, 16, &gen), 121.0);
    assert_int_equal(gen, 6);
    assert_true(ncd_linkbw_pcie(lb, 12.0, 16, &gen) == 0);
    assert_int_equal(gen, 0);
    assert_true(ncd_linkbw_pcie(lb, 16.0, 0, NULL) == 0);
    ncd_linkbw_free(lb);
    ncd_ctx_free(ctx);
}

static void test_nvlink(void **state)
{
    (void)state;
    struct ncd_ctx *ctx;
    struct ncd_linkbw *lb = table(&ctx);
    struct {
        const char *gpu;
        double per_link;
        int gen;
    } cases[] = {
        {"Tesla P100-SXM2-16GB", 20, 1},
        {"Tesla V100-SXM2-32GB", 25, 2},
        {"NVIDIA A100-SXM4-80GB", 25, 3},
        {"NVIDIA A800-SXM4-80GB", 25, 3},
        {"NVIDIA RTX A6000", 14.0625, 3},
        {"NVIDIA GeForce RTX 3090", 14.0625, 3},
        {"NVIDIA H100 80GB HBM3", 25, 4},
        {"NVIDIA H200", 25, 4},
        {"NVIDIA GH200 480GB", 25, 4},
        {"NVIDIA H20", 25, 4},
        {"NVIDIA B200", 50, 5},
        {"NVIDIA GB200", 50, 5},
        {"NVIDIA GeForce RTX 4090", 0, 0}, /* no NVLink */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int gen = -1;
        double v = ncd_linkbw_nvlink(lb, cases[i].gpu, &gen);
        if (fabs(v - cases[i].per_link) > 1e-9 || gen != cases[i].gen)
            fail_msg("%s: %g GB/s NVLink %d, want %g NVLink %d", cases[i].gpu,
                     v, gen, cases[i].per_link, cases[i].gen);
    }
    /* datasheet totals: 12 x A100 = 300 GB/s a direction (600 both),
     * 18 x H100 = 450 (900), 18 x B200 = 900 (1.8 TB/s) */
    NEAR(12 * ncd_linkbw_nvlink(lb, "A100", NULL), 300);
    NEAR(18 * ncd_linkbw_nvlink(lb, "H100", NULL), 450);
    NEAR(18 * ncd_linkbw_nvlink(lb, "B200", NULL), 900);
    ncd_linkbw_free(lb);
    ncd_ctx_free(ctx);
}

static void test_speed_parse(void **state)
{
    (void)state;
    double g = 0;
    assert_int_equal(ncd_pcie_speed_parse("16.0 GT/s PCIe", &g), 0);
    NEAR(g, 16);
    assert_int_equal(ncd_pcie_speed_parse("8 GT/s", &g), 0);
    NEAR(g, 8);
    assert_int_equal(ncd_pcie_speed_parse("2.5 GT/s", &g), 0);
    NEAR(g, 2.5);
    assert_int_equal(ncd_pcie_speed_parse("Unknown", &g), -1);
    assert_int_equal(ncd_pcie_speed_parse("", &g), -1);
    assert_int_equal(ncd_pcie_speed_parse("16 GB/s", &g), -1);
    assert_int_equal(ncd_pcie_speed_parse("-8 GT/s", &g), -1);
    assert_int_equal(ncd_pcie_speed_parse(NULL, &g), -1);
}

static void test_clamp(void **state)
{
    (void)state;
    const size_t M = 1u << 20, G = 1u << 30;
    /* plenty: the whole sweep */
    assert_int_equal(verify__clamp_max(M, G, 2, 80 * G), G);
    assert_int_equal(verify__clamp_max(G, 4 * G, 2, 80 * G), 4 * G);
    /* 600 MiB free: 512 MiB stay for NCCL, two buffers of 44 -> 32 MiB */
    assert_int_equal(verify__clamp_max(M, G, 2, 600 * M), 32 * M);
    /* 40 GiB: a tenth stays, 18 GiB per buffer -> 4 GiB of the seed's */
    assert_int_equal(verify__clamp_max(G, 4 * G, 2, 40 * G), 4 * G);
    /* 10 GiB: 4.5 GiB per buffer -> 4 GiB; 8 GiB: 3.6 -> 2 GiB */
    assert_int_equal(verify__clamp_max(G, 4 * G, 2, 10 * G), 4 * G);
    assert_int_equal(verify__clamp_max(G, 4 * G, 2, 8 * G), 2 * G);
    /* not even -b fits, or nothing free */
    assert_int_equal(verify__clamp_max(G, 4 * G, 2, 2 * G), 0);
    assert_int_equal(verify__clamp_max(M, G, 2, 512 * M), 0);
    assert_int_equal(verify__clamp_max(M, G, 2, 0), 0);
    /* -f 1: one size */
    assert_int_equal(verify__clamp_max(M, G, 1, 80 * G), M);
}

static int topo_of(const char *fixture, struct ncd_ctx **ctx,
                   struct ncd_topo *t)
{
    char root[512];
    snprintf(root, sizeof root, "%s/tests/fixtures/sysroots/%s",
             NCD_SOURCE_DIR, fixture);
    assert_int_equal(ncd_ctx_new(root, NULL, ctx), 0);
    return ncd_topo_probe(*ctx, 1, t);
}

static void test_expected_nvlink(void **state)
{
    (void)state;
    struct ncd_ctx *ctx;
    struct ncd_topo t;
    assert_int_equal(topo_of("dgx-8gpu-4hca", &ctx, &t), 0);
    struct ncd_linkbw *lb = NULL;
    assert_int_equal(ncd_linkbw_load(ctx, &lb), 0);
    int map[3] = {0, 1, 5};
    struct ncd_verify_path p;
    char why[256] = "";
    assert_int_equal(ncd_verify_expected(ctx, &t, lb, map, 3, NULL, &p, why,
                                         sizeof why),
                     0);
    assert_int_equal(p.link, NCD_LINK_NV);
    assert_int_equal(p.nvlinks, 12);
    NEAR(p.gbps, 300);
    assert_string_equal(p.desc, "GPU0-GPU1 NV12: 12 x NVLink 3 at 25 GB/s = "
                                "300.0 GB/s");
    /* a CUDA device the topology does not know */
    map[2] = -1;
    assert_int_equal(ncd_verify_expected(ctx, &t, lb, map, 3, NULL, &p, why,
                                         sizeof why),
                     NCD_ENOENT);
    assert_string_equal(why,
                        "CUDA device 2 is not in this node's PCI topology");
    /* one GPU: no pair */
    assert_int_equal(ncd_verify_expected(ctx, &t, lb, map, 1, NULL, &p, why,
                                         sizeof why),
                     NCD_ENOENT);
    ncd_linkbw_free(lb);
    ncd_topo_release(&t);
    ncd_ctx_free(ctx);
}

static void test_expected_pcie(void **state)
{
    (void)state;
    struct ncd_ctx *ctx;
    struct ncd_topo t;
    assert_int_equal(topo_of("docker-shm64m", &ctx, &t), 0);
    struct ncd_linkbw *lb = NULL;
    assert_int_equal(ncd_linkbw_load(ctx, &lb), 0);
    int map[4] = {0, 1, 2, 3};
    struct ncd_verify_path p;
    char why[256] = "";
    /* four RTX 3090 on PCIe 4.0 x16 (max_link_* only in this capture):
     * NODE and SYS paths both come down to one x16 link */
    struct ncd_verify_links *l = ncd_verify_links_new(&t);
    assert_non_null(l);
    ncd_verify_sample_links(ctx, l, &t);
    assert_int_equal(ncd_verify_expected(ctx, &t, lb, map, 4, l, &p, why,
                                         sizeof why),
                     0);
    NEAR(p.gbps, 31.508);
    assert_int_equal(p.a, 0);
    assert_int_equal(p.b, 1);
    assert_int_equal(p.link, NCD_LINK_NODE);
    assert_non_null(strstr(p.desc, "PCIe 4.0 x16 at 0000:17:00.0 (max link "
                                   "rate, 31.5 GB/s)"));
    ncd_verify_links_free(l);
    ncd_linkbw_free(lb);
    ncd_topo_release(&t);
    ncd_ctx_free(ctx);
}

static void test_report(void **state)
{
    (void)state;
    struct ncd_verify_report r = {0};
    struct ncd_verify_step *s = ncd_verify_add(&r, "node", NCD_VERIFY_PASS);
    assert_non_null(s);
    ncd_verify_reason(s, "no error finding\nsecond line dropped");
    s->seconds = 0.25;
    s = ncd_verify_add(&r, "gpu", NCD_VERIFY_FAIL);
    ncd_verify_reason(s, "no driver: %s", "none here");
    assert_int_equal(ncd_verify_evidence(s, "a\nb"), 0);
    assert_int_equal(ncd_verify_evidence_lines(s, "c\nd\n"), 0);
    s = ncd_verify_add(&r, "all-gpus", NCD_VERIFY_SKIP);
    ncd_verify_reason(s, "no usable GPU");
    r.seconds = 1.5;
    int p, f, k;
    ncd_verify_count(&r, &p, &f, &k);
    assert_int_equal(p * 100 + f * 10 + k, 111);
    assert_int_equal(ncd_verify_exit_status(&r), 2);
    assert_string_equal(r.steps[0].reason, "no error finding");
    assert_int_equal(r.steps[1].n_evidence, 3);

    struct ncd_text_style st;
    memset(&st, 0, sizeof st);
    struct ncd_strbuf sb = {0};
    ncd_verify_text(&r, 0, &st, &sb);
    assert_string_equal(ncd_sb_str(&sb),
                        "[PASS] node            0.2 s  no error finding\n"
                        "[FAIL] gpu             0.0 s  no driver: none here\n"
                        "       | a\n"
                        "       | c\n"
                        "       | d\n"
                        "[SKIP] all-gpus        0.0 s  no usable GPU\n"
                        "verify: 1 passed, 1 failed, 1 skipped in 1.5 s: "
                        "FAIL\n");
    ncd_sb_release(&sb);

    json_t *j = ncd_verify_json(&r, "h1");
    assert_non_null(j);
    json_t *steps = json_object_get(j, "steps");
    assert_int_equal(json_array_size(steps), 3);
    json_t *g = json_array_get(steps, 1);
    assert_string_equal(json_string_value(json_object_get(g, "name")), "gpu");
    assert_string_equal(json_string_value(json_object_get(g, "status")),
                        "FAIL");
    assert_int_equal(json_array_size(json_object_get(g, "evidence")), 3);
    assert_true(json_is_real(json_object_get(g, "seconds")));
    json_t *sum = json_object_get(j, "summary");
    assert_string_equal(json_string_value(json_object_get(sum, "status")),
                        "FAIL");
    assert_int_equal(json_integer_value(json_object_get(sum, "skipped")), 1);
    assert_string_equal(json_string_value(json_object_get(j, "host")), "h1");
    json_decref(j);

    /* only SKIPs and PASSes: exit 0 */
    r.steps[1].status = NCD_VERIFY_SKIP;
    assert_int_equal(ncd_verify_exit_status(&r), 0);
    ncd_verify_report_release(&r);
    assert_int_equal(r.n, 0);
    ncd_verify_report_release(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pcie),
        cmocka_unit_test(test_nvlink),
        cmocka_unit_test(test_speed_parse),
        cmocka_unit_test(test_clamp),
        cmocka_unit_test(test_expected_nvlink),
        cmocka_unit_test(test_expected_pcie),
        cmocka_unit_test(test_report),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
