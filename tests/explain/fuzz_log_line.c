/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the line parser, then a whole explain scan (facts,
 * rules, reasoning) over the input in odd-sized chunks, and the same scan
 * by the threaded block reader, which must report the same. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "explain/session.h"
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
    struct ncd_strbuf out[2] = {{0}, {0}};
    /* the threaded reader on every 8th input: threads cost time per input */
    int fd = size % 8 == 0 ? memfd_create("fuzz", 0) : -1;
    if (fd >= 0 && write(fd, data, size) != (ssize_t)size) {
        close(fd);
        fd = -1;
    }
    for (int pass = 0; pass < (fd >= 0 ? 2 : 1); pass++) {
        struct ncd_explain *ex;
        struct ncd_findings fl = {0};
        if (ncd_explain_new(ctx, rules, &ex) < 0)
            break;
        ncd_explain_begin(ex, "fuzz");
        if (pass == 0) {
            size_t chunk = size % 7 + 1;
            for (size_t o = 0; o < size; o += chunk)
                ncd_explain_feed(ex, data + o, o + chunk > size ? size - o : chunk);
        } else {
            ex->block = size % 509 + 1;
            ncd_explain_set_threads(ex, 2);
            if (ncd__explain_feed_fd(ex, fd, size) != 0)
                abort();
        }
        ncd_explain_end(ex);
        ncd_explain_finish(ex, &fl);
        json_t *j = ncd_explain_facts_json(ex);
        json_decref(j);
        ncd_explain_facts_text(ex, &out[pass]);
        for (size_t i = 0; i < fl.n; i++) {
            ncd_sb_printf(&out[pass], "%s %s\n", fl.v[i].id,
                          ncd_rule_role_name(ncd_explain_role(ex, i)));
            for (size_t k = 0; k < fl.v[i].n_evidence; k++)
                ncd_sb_printf(&out[pass], "  %s\n", fl.v[i].evidence[k]);
        }
        ncd_findings_release(&fl);
        ncd_explain_free(ex);
    }
    if (fd >= 0) {
        if (strcmp(ncd_sb_str(&out[0]), ncd_sb_str(&out[1])) != 0)
            abort(); /* threads must not change the report */
        close(fd);
    }
    ncd_sb_release(&out[0]);
    ncd_sb_release(&out[1]);
    return 0;
}
