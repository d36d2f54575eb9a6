/* SPDX-License-Identifier: MIT */
/*
 * Conditions for logs whose cause no rule names: WARN lines no rule claims,
 * NCCL's error trail, where a silent init stopped.
 */
#define _GNU_SOURCE
#include "explain/reason.h"

#include <stdio.h>
#include <string.h>

#include "ncd/error.h"

/* One finding per category guessed from the WARN's NCCL source file. */
int ncd__cond_unmatched_warn(struct ncd__reason *rs, size_t rule)
{
    int n = 0;
    for (int c = 0; c < NCD_CAT__COUNT; c++) {
        if (!rs->ex->unmatched[c].count)
            continue;
        struct ncd__hit *h = ncd__hit_new(rs, rule);
        if (!h)
            return NCD_ENOMEM;
        h->rec = &rs->ex->unmatched[c];
        h->cat = (enum ncd_category)c;
        ncd__hit_from_rec(h, h->rec);
        n++;
    }
    return n;
}

/* NCCL logged a failure trail but no WARN we could read: the file of the
 * deepest frame names the subsystem (reference B7, end). */
int ncd__cond_error_trail(struct ncd__reason *rs, size_t rule)
{
    /* ncclResult_t, NCCL src/nccl.h.in */
    static const char *const results[] = {
        "ncclSuccess",       "ncclUnhandledCudaError", "ncclSystemError",
        "ncclInternalError", "ncclInvalidArgument",    "ncclInvalidUsage",
        "ncclRemoteError",   "ncclInProgress"};
    const struct ncd_explain *ex = rs->ex;
    if (!ex->trail_file[0] || ex->trail_code <= 0)
        return 0;
    struct ncd__hit *h = ncd__hit_new(rs, rule);
    if (!h)
        return NCD_ENOMEM;
    char code[40];
    snprintf(code, sizeof code, "%s (%d)",
             ex->trail_code < 8 ? results[ex->trail_code] : "error",
             ex->trail_code);
    h->cat = ncd__category_for_src(ex->rules, ex->trail_file,
                                   strlen(ex->trail_file));
    ncd__hit_var(h, "file", ex->trail_file);
    ncd__hit_var(h, "result", code);
    ncd__hit_ev(h, "%s:%llu: %s", ncd__src_name(ex, ex->trail_src),
                (unsigned long long)ex->trail_line, ex->trail_text);
    h->seq = ex->trail_seq;
    return 1;
}

/* A process whose last NCCL lines are in init phase `want`, with no Init
 * COMPLETE and no WARN after them. */
static int init_hang(struct ncd__reason *rs, size_t rule, int want)
{
    const struct ncd_explain *ex = rs->ex;
    char where[96];
    for (size_t i = 0; i < ex->nprocs; i++) {
        const struct ncd__proc *p = &ex->procs[i];
        if (p->ncomplete || p->nwarn || p->phase != want)
            continue;
        struct ncd__hit *h = ncd__hit_proc(rs, rule, p, where, sizeof where);
        if (!h)
            return NCD_ENOMEM;
        ncd__hit_var(h, "where", where);
        if (p->phase_line && p->phase_line != p->last_line)
            ncd__hit_ev(h, "%s:%llu: %s entered this phase: %s",
                        ncd__src_name(ex, p->src),
                        (unsigned long long)p->phase_line, where, p->phase_text);
        else if (p->phase_line)
            ncd__hit_ev(h, "%s:%llu: %s: %s", ncd__src_name(ex, p->src),
                        (unsigned long long)p->phase_line, where, p->phase_text);
        ncd__hit_ev(h, "%s:%llu: the last NCCL line of %s; no 'Init COMPLETE' "
                       "and no WARN follow",
                    ncd__src_name(ex, p->last_src),
                    (unsigned long long)p->last_line, where);
        h->seq = p->last_seq;
        return 1;
    }
    return 0;
}

int ncd__cond_init_hang_nvls(struct ncd__reason *rs, size_t rule)
{
    return init_hang(rs, rule, PH_NVLS);
}

int ncd__cond_init_hang_bootstrap(struct ncd__reason *rs, size_t rule)
{
    return init_hang(rs, rule, PH_BOOTSTRAP);
}

int ncd__cond_init_hang_connect(struct ncd__reason *rs, size_t rule)
{
    return init_hang(rs, rule, PH_CONNECT);
}
