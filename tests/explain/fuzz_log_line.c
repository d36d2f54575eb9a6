/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the line parser, then a whole explain scan (facts,
 * rules, reasoning) over the input in odd-sized chunks. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ncd/ctx.h"
#include "ncd/explain.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct ncd_ctx *ctx;
static struct ncd_rules *rules;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char scratch[NCD_LOG_MAX_LINE + 1];
    if (!rules) {
        if (ncd_ctx_new("/", NULL, &ctx) < 0 || ncd_rules_new(&rules) < 0 ||
            ncd_rules_load_builtin(ctx, rules) < 0)
            abort();
    }
    const char *p = (const char *)data, *end = p + size;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        struct ncd_log_line l;
        if (ncd_log_parse(p, n, scratch, sizeof scratch, &l) != 0)
            abort();
        if (l.text_len != strlen(l.text) || l.text_len > NCD_LOG_MAX_LINE)
            abort();
        p += n + 1;
    }
    struct ncd_explain *ex;
    struct ncd_findings fl = {0};
    if (ncd_explain_new(ctx, rules, &ex) < 0)
        return 0;
    ncd_explain_begin(ex, "fuzz");
    size_t chunk = size % 7 + 1;
    for (size_t o = 0; o < size; o += chunk)
        ncd_explain_feed(ex, data + o, o + chunk > size ? size - o : chunk);
    ncd_explain_end(ex);
    ncd_explain_finish(ex, &fl);
    json_t *j = ncd_explain_facts_json(ex);
    json_decref(j);
    struct ncd_strbuf sb = {0};
    ncd_explain_facts_text(ex, &sb);
    ncd_sb_release(&sb);
    ncd_findings_release(&fl);
    ncd_explain_free(ex);
    return 0;
}
