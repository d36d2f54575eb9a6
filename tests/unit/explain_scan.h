/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the explain unit tests (cmocka): the built-in rules, a scan
 * over named in-memory logs, finding look-ups.  Include after <cmocka.h>.
 */
#ifndef NCD_TEST_EXPLAIN_SCAN_H
#define NCD_TEST_EXPLAIN_SCAN_H

#include <stdio.h>
#include <string.h>

#include "ncd/ctx.h"
#include "ncd/error.h"
#include "ncd/explain.h"

static struct ncd_ctx *ctx;
static struct ncd_rules *rules;

static int setup(void **state)
{
    (void)state;
    if (ncd_ctx_new("/", NULL, &ctx) < 0 || ncd_rules_new(&rules) < 0)
        return -1;
    return ncd_rules_load_builtin(ctx, rules) > 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    ncd_rules_free(rules);
    ncd_ctx_free(ctx);
    return 0;
}

struct src {
    const char *name, *text;
};

/* Runs a scan over the sources; chunk 0 = whole buffers at once. */
static struct ncd_explain *scan(const struct src *s, size_t n, size_t chunk,
                                struct ncd_findings *fl)
{
    struct ncd_explain *ex;
    assert_int_equal(ncd_explain_new(ctx, rules, &ex), 0);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(ncd_explain_begin(ex, s[i].name), 0);
        size_t len = strlen(s[i].text);
        if (!chunk)
            chunk = len ? len : 1;
        for (size_t o = 0; o < len; o += chunk)
            ncd_explain_feed(ex, s[i].text + o, o + chunk > len ? len - o : chunk);
        ncd_explain_end(ex);
    }
    assert_true(ncd_explain_finish(ex, fl) >= 0);
    return ex;
}

static void dump(const struct ncd_findings *fl)
{
    for (size_t i = 0; i < fl->n; i++)
        print_message("  %zu: %s [%s] %s\n", i, fl->v[i].id,
                      ncd_category_name(fl->v[i].category), fl->v[i].title);
}

/* The suggested value of `name` in finding f: "(unset)" for an unset
 * suggestion, NULL when f does not suggest it. */
static const char *env_of(const struct ncd_finding *f, const char *name)
{
    for (size_t i = 0; i < f->n_env; i++)
        if (strcmp(f->env[i].name, name) == 0)
            return f->env[i].value ? f->env[i].value : "(unset)";
    return NULL;
}

#endif
