/* SPDX-License-Identifier: MIT */
/*
 * explain on the real-failure corpus (shared/corpus/cases/<id>/{log.txt,
 * case.json}).  A log_sufficient case passes when the first finding's
 * category is in expect_categories and the root findings' env suggestions
 * contain every env_fix variable (the README's criterion).  Other cases
 * must still get at least one finding (a general diagnosis), except an
 * empty log, which must get none.
 * Usage: explain_corpus <cases dir>; exit 77 when the corpus is absent.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncd/ctx.h"
#include "ncd/explain.h"

static int cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : NULL;
    DIR *d = dir ? opendir(dir) : NULL;
    if (!d) {
        printf("corpus not found (%s): skipped\n", dir ? dir : "no path");
        return 77;
    }
    char *names[1024];
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < 1024)
        if (de->d_name[0] != '.')
            names[n++] = strdup(de->d_name);
    closedir(d);
    qsort(names, n, sizeof *names, cmp);

    struct ncd_ctx *ctx;
    struct ncd_rules *rules;
    if (ncd_ctx_new("/", NULL, &ctx) < 0 || ncd_rules_new(&rules) < 0 ||
        ncd_rules_load_builtin(ctx, rules) < 0) {
        fprintf(stderr, "cannot load rules: %s\n", ncd_ctx_errdetail(ctx));
        return 1;
    }
    int suff = 0, suff_ok = 0, other = 0, other_ok = 0;
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s/case.json", dir, names[i]);
        json_error_t jerr;
        json_t *c = json_load_file(path, 0, &jerr);
        if (!c) {
            free(names[i]);
            continue;
        }
        snprintf(path, sizeof path, "%s/%s/log.txt", dir, names[i]);
        FILE *f = fopen(path, "rb");
        struct ncd_explain *ex;
        struct ncd_findings fl = {0};
        if (ncd_explain_new(ctx, rules, &ex) < 0)
            return 1;
        ncd_explain_begin(ex, path);
        char buf[65536];
        size_t k;
        while (f && (k = fread(buf, 1, sizeof buf, f)) > 0)
            ncd_explain_feed(ex, buf, k);
        if (f)
            fclose(f);
        ncd_explain_end(ex);
        ncd_explain_finish(ex, &fl);

        int sufficient = json_is_true(json_object_get(c, "log_sufficient"));
        int ok = 0;
        const char *got = fl.n ? ncd_category_name(fl.v[0].category) : "(none)";
        if (sufficient) {
            json_t *cats = json_object_get(c, "expect_categories");
            for (size_t j = 0; j < json_array_size(cats); j++)
                ok |= fl.n && strcmp(json_string_value(json_array_get(cats, j)), got) == 0;
            const char *var;
            json_t *val;
            json_object_foreach(json_object_get(c, "env_fix"), var, val) {
                int has = 0;
                for (size_t a = 0; a < fl.n; a++) {
                    if (a > 0 && ncd_explain_role(ex, a) != NCD_ROLE_ROOT)
                        continue;
                    for (size_t e = 0; e < fl.v[a].n_env; e++)
                        has |= strcmp(fl.v[a].env[e].name, var) == 0;
                }
                if (!has) {
                    printf("  %s: env %s not suggested\n", names[i], var);
                    ok = 0;
                }
            }
            suff++;
            suff_ok += ok;
        } else {
            /* a general diagnosis; an empty log (the failure printed
             * nothing: check's job) must get none, since no known failure
             * is no finding */
            unsigned long long lines = 0;
            ncd_explain_stats(ex, NULL, &lines, NULL);
            ok = lines ? fl.n > 0 : fl.n == 0;
            other++;
            other_ok += ok;
        }
        printf("%-4s %s %-12s first: %s [%s]\n", ok ? "ok" : "FAIL", names[i],
               sufficient ? "sufficient" : "general", fl.n ? fl.v[0].id : "-", got);
        ncd_findings_release(&fl);
        ncd_explain_free(ex);
        json_decref(c);
        free(names[i]);
    }
    printf("log_sufficient cases: %d/%d pass; other cases with a general "
           "diagnosis: %d/%d\n",
           suff_ok, suff, other_ok, other);
    ncd_rules_free(rules);
    ncd_ctx_free(ctx);
    return suff_ok == suff && other_ok == other && suff > 0 ? 0 : 1;
}
