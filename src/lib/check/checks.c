/* SPDX-License-Identifier: MIT */
#include "ncd/check.h"
#include "ncd/error.h"

#define NCD_CHECK(name, fn) int fn(struct ncd_ctx *, const struct ncd_check_opts *, struct ncd_findings *, json_t *);
#include "check/checks.def"
#undef NCD_CHECK

const struct ncd_check ncd_checks[] = {
#define NCD_CHECK(name, fn) {#name, fn},
#include "check/checks.def"
#undef NCD_CHECK
    {NULL, NULL},
};

int ncd_run_checks(struct ncd_ctx *ctx, const struct ncd_check_opts *opts,
                   struct ncd_findings *out, json_t *facts)
{
    for (const struct ncd_check *c = ncd_checks; c->name; c++) {
        ncd_ctx_clear_error(ctx);
        size_t first = out->n;
        int rc = c->fn(ctx, opts, out, facts);
        if (rc == NCD_ENOMEM)
            return rc;
        if (rc < 0) {
            struct ncd_finding *f = ncd_findings_add(
                out, "tool.check-failed", NCD_CAT_SYS_VIRT, NCD_SEV_WARNING,
                "check '%s' could not run (%s): this part of the node was "
                "not examined",
                c->name, ncd_strerror(rc));
            if (!f)
                return NCD_ENOMEM;
            if (*ncd_ctx_errdetail(ctx))
                ncd_finding_evidence(f, "%s", ncd_ctx_errdetail(ctx));
        }
        for (size_t i = first; i < out->n; i++) /* which check said it */
            out->v[i].check = c->name;
    }
    ncd_ctx_clear_error(ctx);
    ncd_findings_sort(out);
    return 0;
}
