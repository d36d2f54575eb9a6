/* SPDX-License-Identifier: MIT */
/* libFuzzer target: NCCL variable values as NCCL parses them
 * (src/lib/check/ncclvars.c).  Input: INDEX VALUE; INDEX picks a variable
 * of the built-in catalog, VALUE (up to the first NUL) is its value.
 * Properties, checked with abort():
 *  - the verdict is a pure function of (variable, value): twice, the same;
 *  - the integer parse of a printed value round-trips: "%lld" of what
 *    ncd_nccl_int_parse() read parses back to the same number, whole;
 *  - a number NCCL reads differently from what it says is never "ok": an
 *    integer variable whose value NCCL's strtoll(v, NULL, 0) does not read
 *    whole, overflows, or reads other than a decimal reading would (a
 *    leading 0, after blanks and a sign) gets a warning; hex is what it
 *    says;
 *  - a suggested fix is final: checking it suggests nothing more;
 *  - a name suggestion is a variable of the catalog. */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncd/ctx.h"
#include "ncd/ncclvars.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok, const char *what, const char *name, const char *v)
{
    if (!ok) {
        fprintf(stderr, "fuzz_ncclvars: property violated: %s (%s='%s')\n",
                what, name, v);
        abort();
    }
}

static struct ncd_var_catalog cat;
static int loaded;

static int same(const struct ncd_var_verdict *a,
                const struct ncd_var_verdict *b)
{
    return a->sev == b->sev && !strcmp(a->msg, b->msg) &&
           !strcmp(a->fix, b->fix);
}

/* After the blanks and the sign strtoll skips: "0x"/"0X" and a hex digit */
static int is_hex(const char *v)
{
    while (isspace((unsigned char)*v))
        v++;
    if (*v == '-' || *v == '+')
        v++;
    return v[0] == '0' && (v[1] == 'x' || v[1] == 'X') &&
           isxdigit((unsigned char)v[2]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!loaded) {
        struct ncd_ctx *ctx;
        if (ncd_ctx_new("/", NULL, &ctx) < 0)
            abort();
        if (ncd_var_catalog_builtin(ctx, &cat) < 0 || !cat.n_defs)
            abort();
        ncd_ctx_free(ctx);
        loaded = 1;
    }
    if (size < 1)
        return 0;
    const struct ncd_var_def *d = &cat.defs[data[0] % cat.n_defs];
    size_t vl = size - 1;
    char *v = malloc(vl + 1);
    if (!v)
        return 0;
    memcpy(v, data + 1, vl);
    v[vl] = '\0';

    struct ncd_var_verdict a, b;
    ncd_var_check_value(d, v, &a);
    ncd_var_check_value(d, v, &b);
    check(same(&a, &b), "the verdict is stable", d->name, v);
    check(memchr(a.msg, 0, sizeof a.msg) && memchr(a.fix, 0, sizeof a.fix),
          "texts terminated", d->name, v);

    /* the integer parse of a printed value round-trips */
    long long x, y;
    int junk, junk2;
    if (ncd_nccl_int_parse(v, &x, &junk) == 0) {
        char pr[32];
        snprintf(pr, sizeof pr, "%lld", x);
        check(ncd_nccl_int_parse(pr, &y, &junk2) == 0 && !junk2 && y == x,
              "a printed value parses back", d->name, v);
        if (d->type == NCD_VT_INT || d->type == NCD_VT_FLAG1) {
            struct ncd_var_verdict p;
            ncd_var_check_value(d, pr, &p);
            check(!strstr(p.msg, "octal") && !strstr(p.msg, "not a number"),
                  "a printed value is read as written", d->name, v);
        }
    }

    /* NCCL's own reading (src/misc/param.cc: strtoll(str, NULL, 0), the
     * default when errno is set) against what the value says */
    if ((d->type == NCD_VT_INT || d->type == NCD_VT_FLAG1) && *v &&
        a.sev == NCD_SEV_OK) {
        char *end;
        errno = 0;
        long long nccl = strtoll(v, &end, 0);
        int range = errno == ERANGE;
        errno = 0;
        long long dec = strtoll(v, NULL, 10);
        check(!range, "an overflow is not ok", d->name, v);
        check(end != v && *end == '\0', "junk is not ok", d->name, v);
        check(is_hex(v) || dec == nccl,
              "a value NCCL reads otherwise than written is not ok", d->name,
              v);
    }

    /* a fix is final */
    if (a.fix[0]) {
        struct ncd_var_verdict f;
        ncd_var_check_value(d, a.fix, &f);
        check(!f.fix[0], "a suggested fix needs no further fix", d->name, v);
    }

    /* a suggestion for a misspelt name is a catalog name */
    if (vl < 80) {
        const char *s = ncd_var_suggest(&cat, v);
        check(!s || ncd_var_find(&cat, s) != NULL, "suggestions exist",
              d->name, v);
    }
    free(v);
    return 0;
}
