/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the YAML rules loader (libyaml + PCRE2 + prefilter),
 * then the self-test and a scan with whatever loaded. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ncd/ctx.h"
#include "ncd/explain.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ncd_ctx *ctx;
    struct ncd_rules *rules;
    if (ncd_ctx_new("/", NULL, &ctx) < 0)
        return 0;
    if (ncd_rules_new(&rules) < 0) {
        ncd_ctx_free(ctx);
        return 0;
    }
    int n = ncd_rules_load_buf(ctx, rules, "fuzz.yaml", (const char *)data, size);
    if (n < 0 && ncd_rules_count(rules) != 0)
        abort(); /* a failed load keeps nothing */
    if (n > 0) {
        struct ncd_strbuf sb = {0};
        ncd_rules_selftest(rules, &sb);
        ncd_rules_dump_ere(rules, &sb);
        ncd_sb_release(&sb);
        struct ncd_explain *ex;
        struct ncd_findings fl = {0};
        if (ncd_explain_new(ctx, rules, &ex) == 0) {
            static const char log[] =
                "node1:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
                "node1:1:1 [0] x.cc:1 NCCL WARN frobnicate abc failed\n";
            ncd_explain_begin(ex, "l");
            ncd_explain_feed(ex, log, sizeof log - 1);
            ncd_explain_finish(ex, &fl);
            ncd_findings_release(&fl);
            ncd_explain_free(ex);
        }
    }
    ncd_rules_free(rules);
    ncd_ctx_free(ctx);
    return 0;
}
