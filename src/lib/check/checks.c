/* SPDX-License-Identifier: MIT */
/* The check runner (see ncd/check.h). */
#include "ncd/check.h"
#include "ncd/error.h"

#include <string.h>

#define NCD_CHECK(name, fn, parts)                                            \
    int fn(const struct ncd_node *, const struct ncd_check_opts *,            \
           struct ncd_findings *);
#include "check/checks.def"
#undef NCD_CHECK

const struct ncd_check ncd_checks[] = {
#define NCD_CHECK(name, fn, parts) {#name, fn, parts},
#include "check/checks.def"
#undef NCD_CHECK
    {NULL, NULL, 0},
};

/* Whether `name` is in the comma-separated list (NULL or "": all). */
static int selected(const char *only, const char *name)
{
    if (!only || !*only)
        return 1;
    size_t nl = strlen(name);
    for (const char *p = only; *p;) {
        size_t l = strcspn(p, ",");
        if (l == nl && strncmp(p, name, l) == 0)
            return 1;
        p += l + (p[l] == ',');
    }
    return 0;
}

/* Every name in `only` is a check. */
static int only_valid(const char *only)
{
    for (const char *p = only; p && *p;) {
        size_t l = strcspn(p, ",");
        int found = 0;
        for (const struct ncd_check *c = ncd_checks; c->name && !found; c++)
            found = strlen(c->name) == l && strncmp(p, c->name, l) == 0;
        if (!found)
            return 0;
        p += l + (p[l] == ',');
    }
    return 1;
}

unsigned ncd_checks_parts(const struct ncd_check_opts *opts)
{
    const char *only = opts ? opts->only : NULL;
    if (!only_valid(only))
        return 0;
    unsigned parts = 0;
    for (const struct ncd_check *c = ncd_checks; c->name; c++)
        if (selected(only, c->name))
            parts |= c->parts;
    return parts;
}

/* The first part of `parts` that was not probed successfully, or -1. */
static int failed_part(const struct ncd_node *n, unsigned parts)
{
    for (int p = 0; p < NCD_PART__N; p++)
        if ((parts & NCD_PART_BIT(p)) && !ncd_node_has(n, p))
            return p;
    return -1;
}

static int check_failed(struct ncd_findings *out, const char *name, int rc,
                        const char *detail)
{
    struct ncd_finding *f = ncd_findings_add(
        out, "tool.check-failed", NCD_CAT_SYS_VIRT, NCD_SEV_WARNING,
        "check '%s' could not run (%s): this part of the node was not "
        "examined",
        name, ncd_strerror(rc));
    if (!f)
        return NCD_ENOMEM;
    if (detail && *detail)
        ncd_finding_evidence(f, "%s", detail);
    return 0;
}

int ncd_run_checks(const struct ncd_node *n, const struct ncd_check_opts *opts,
                   struct ncd_findings *out)
{
    static const struct ncd_check_opts all = {0};
    if (!opts)
        opts = &all;
    if (!only_valid(opts->only))
        return NCD_EINVAL;
    for (const struct ncd_check *c = ncd_checks; c->name; c++) {
        if (!selected(opts->only, c->name))
            continue;
        int p = failed_part(n, c->parts), rc;
        if (p >= 0) {
            /* a part never probed is the caller's mistake: say so */
            int prc = (n->filled & NCD_PART_BIT(p)) ? n->status[p].rc
                                                    : NCD_EINVAL;
            rc = check_failed(out, c->name, prc, n->status[p].detail);
        } else {
            rc = c->fn(n, opts, out);
            if (rc < 0 && rc != NCD_ENOMEM)
                rc = check_failed(out, c->name, rc, NULL);
        }
        if (rc == NCD_ENOMEM)
            return rc;
    }
    ncd_findings_sort(out);
    return 0;
}
