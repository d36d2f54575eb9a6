/* SPDX-License-Identifier: MIT */
/*
 * The reasoner: pattern matches and derived conditions become hits, hits
 * become ranked findings.
 *
 * Conditions are dispatched through one table built from explain/cond.h;
 * each lives in cond_<family>.c.  Ranking (reference B7/B8: "the earliest
 * WARN is usually the root cause; later 'Connection closed by remote peer'
 * / 'remote process exited' lines on other ranks are consequences"):
 *   1. root causes of severity >= warning: worst first, then earliest (time
 *      stamp when both have one, else input order);
 *   2. framework wrappers (the diagnosis when nothing deeper is visible);
 *   3. consequences, including matches a derived finding absorbed;
 *   4. context and info.
 */
#define _GNU_SOURCE
#include "explain/reason.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncd/error.h"
#include "ncd/ifclass.h"

/* ----------------------------------------------------------- conditions */

static const struct {
    const char *name;
    ncd__cond_fn fn;
    enum ncd__cond_phase phase;
} conds[NCD__COND__COUNT] = {
#define NCD__COND_ROW(fn, name, phase) {name, ncd__cond_##fn, NCD__PH_##phase},
    NCD__CONDITIONS(NCD__COND_ROW)
#undef NCD__COND_ROW
};

int ncd__cond_find(const char *name)
{
    for (int i = 0; i < NCD__COND__COUNT; i++)
        if (strcmp(conds[i].name, name) == 0)
            return i;
    return -1;
}

const char *ncd__cond_name(int c)
{
    return c >= 0 && c < NCD__COND__COUNT ? conds[c].name : NULL;
}

/* ----------------------------------------------------------- hits */

struct ncd__hit *ncd__hit_new(struct ncd__reason *rs, size_t rule)
{
    if (rs->n == rs->cap) {
        size_t nc = rs->cap ? rs->cap * 2 : 32;
        struct ncd__hit *nv = realloc(rs->v, nc * sizeof *nv);
        if (!nv)
            return NULL;
        rs->v = nv;
        rs->cap = nc;
    }
    struct ncd__hit *h = &rs->v[rs->n++];
    memset(h, 0, sizeof *h);
    const struct ncd__rule *r = &rs->ex->rules->v[rule];
    h->rule = rule;
    h->cat = r->cat;
    h->sev = r->sev;
    h->role = r->role;
    h->ts = -1;
    h->seq = UINT64_MAX;
    h->derived = r->cond >= 0;
    return h;
}

struct ncd__hit *ncd__hit_proc(struct ncd__reason *rs, size_t rule,
                               const struct ncd__proc *p, char *where,
                               size_t wsz)
{
    struct ncd__hit *h = ncd__hit_new(rs, rule);
    if (!h)
        return NULL;
    ncd__proc_where(p, where, wsz);
    ncd__hit_var(h, "host", p->host);
    return h;
}

void ncd__hit_var(struct ncd__hit *h, const char *n, const char *v)
{
    if (h->nv >= NCD__HIT_VARS)
        return;
    h->vn[h->nv] = strdup(n);
    h->vv[h->nv] = strdup(v ? v : "");
    if (!h->vn[h->nv] || !h->vv[h->nv]) {
        free(h->vn[h->nv]);
        free(h->vv[h->nv]);
        return;
    }
    h->nv++;
}

void ncd__hit_ev(struct ncd__hit *h, const char *fmt, ...)
{
    if (h->nev >= NCD__MAX_EVID)
        return;
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) >= 0) {
        ncd__sanitize(s, strlen(s));
        h->ev[h->nev++] = s;
    }
    va_end(ap);
}

void ncd__hit_ev_rec(const struct ncd_explain *ex, struct ncd__hit *h,
                     const struct ncd__rec *rec)
{
    for (size_t k = 0; k < rec->nev && h->nev < NCD__MAX_EVID; k++)
        ncd__hit_ev(h, "%s:%llu: %s", ncd__src_name(ex, rec->ev[k].src),
                    (unsigned long long)rec->ev[k].line, rec->ev[k].text);
}

void ncd__hit_from_rec(struct ncd__hit *h, const struct ncd__rec *rec)
{
    if (!rec)
        return;
    h->seq = rec->first_seq;
    h->ts = rec->first_ts;
    h->from = rec;
}

static void hits_release(struct ncd__reason *rs)
{
    for (size_t i = 0; i < rs->n; i++) {
        for (size_t k = 0; k < rs->v[i].nv; k++) {
            free(rs->v[i].vn[k]);
            free(rs->v[i].vv[k]);
        }
        for (size_t k = 0; k < rs->v[i].nev; k++)
            free(rs->v[i].ev[k]);
    }
    free(rs->v);
    if (rs->vars_state == 1)
        ncd_var_catalog_release(&rs->vars);
    if (rs->iberr_state == 1)
        ncd__iberr_release(&rs->iberr);
}

/* ----------------------------------------------------------- facts */

const char *ncd__env_get(const struct ncd_explain *ex, const char *name,
                         const struct ncd__env **which)
{
    for (size_t i = 0; i < ex->nenv; i++)
        if (strcmp(ex->env[i].name, name) == 0) {
            if (which)
                *which = &ex->env[i];
            return ex->env[i].value;
        }
    return NULL;
}

const struct ncd__rec *ncd__rec_of(const struct ncd_explain *ex,
                                   const char *id)
{
    long k = ncd__rules_find(ex->rules, id);
    return k >= 0 && ex->recs[k].count ? &ex->recs[k] : NULL;
}

int ncd__rec_version(const struct ncd_explain *ex, const struct ncd__rec *rec)
{
    if (rec && rec->nev) {
        const struct ncd__evid *e = &rec->ev[0];
        if (e->proc >= 0 && (size_t)e->proc < ex->nprocs &&
            ex->procs[e->proc].vcode)
            return ex->procs[e->proc].vcode;
        for (size_t i = 0; i < ex->nprocs; i++) {
            const struct ncd__proc *p = &ex->procs[i];
            if (p->vcode && (e->host[0] ? strcmp(p->host, e->host) == 0
                                        : p->src == e->src))
                return p->vcode;
        }
    }
    int v = 0;
    for (size_t i = 0; i < ex->nprocs; i++) {
        int c = ex->procs[i].vcode;
        if (c && v && c != v)
            return 0;
        if (c)
            v = c;
    }
    /* no NCCL "NCCL version" line: the one a framework's error named */
    return v ? v : ex->fw_vcode > 0 ? ex->fw_vcode : 0;
}

const char *ncd__rec_cap(const struct ncd__rec *rec, const char *name)
{
    for (size_t c = 0; rec && c < rec->ncaps; c++)
        if (strcmp(rec->cap_name[c], name) == 0)
            return rec->cap_val[c];
    return NULL;
}

int ncd__rec_absorbed(const struct ncd_explain *ex, size_t rule,
                      const struct ncd__rec **first)
{
    const struct ncd__rule *r = &ex->rules->v[rule];
    const struct ncd__rec *best = NULL;
    int best_root = 0;
    for (size_t a = 0; a < r->nabsorbs; a++) {
        long k = ncd__rules_find(ex->rules, r->absorbs[a]);
        if (k < 0 || !ex->recs[k].count)
            continue;
        int root = ex->rules->v[k].role == NCD_ROLE_ROOT;
        if (!best || (root && !best_root) ||
            (root == best_root && ex->recs[k].first_seq < best->first_seq)) {
            best = &ex->recs[k];
            best_root = root;
        }
    }
    if (first)
        *first = best;
    return best != NULL;
}

int ncd__rule_fact_match(const struct ncd_explain *ex, size_t rule,
                         const char *s)
{
    const struct ncd_rules *R = ex->rules;
    const struct ncd__rule *r = &R->v[rule];
    if (!r->npats)
        return 0;
    pcre2_match_data *md = pcre2_match_data_create(R->max_match_captures + 1,
                                                   NULL);
    if (!md)
        return NCD_ENOMEM;
    int hit = 0;
    for (size_t k = 0; k < r->npats && !hit; k++) {
        pcre2_code *re = ncd__pattern_code(R, r->pat0 + k);
        hit = re && pcre2_match(re, (PCRE2_SPTR)s, strlen(s), 0, 0, md,
                                NULL) >= 0;
    }
    pcre2_match_data_free(md);
    return hit;
}

const struct ncd__rec *ncd__rule_warns(const struct ncd_explain *ex,
                                       size_t rule)
{
    const struct ncd__rule *r = &ex->rules->v[rule];
    const struct ncd__rec *best = NULL;
    for (size_t i = 0; i < ex->nwfiles; i++)
        if (ncd__rule_file_match(r, ex->wfiles[i].name,
                                 strlen(ex->wfiles[i].name)) &&
            (!best || ex->wfiles[i].rec.first_seq < best->first_seq))
            best = &ex->wfiles[i].rec;
    return best;
}

void ncd__proc_where(const struct ncd__proc *p, char *out, size_t osz)
{
    if (p->rank >= 0)
        snprintf(out, osz, "%s pid %ld (rank %d)", p->host[0] ? p->host : "?",
                 p->pid, p->rank);
    else if (p->pid >= 0)
        snprintf(out, osz, "%s pid %ld", p->host[0] ? p->host : "?", p->pid);
    else
        snprintf(out, osz, "%s", p->host[0] ? p->host : "this log");
}

const struct ncd_var_catalog *ncd__reason_vars(struct ncd__reason *rs, int *rc)
{
    if (rs->vars_state == 0) {
        int r = ncd_var_catalog_builtin(rs->ex->ctx, &rs->vars);
        if (r < 0)
            ncd_var_catalog_release(&rs->vars);
        rs->vars_state = r < 0 ? r : 1;
    }
    *rc = rs->vars_state < 0 ? rs->vars_state : 0;
    return rs->vars_state == 1 ? &rs->vars : NULL;
}

const struct ncd__iberr_table *ncd__reason_iberr(struct ncd__reason *rs,
                                                 int *rc)
{
    if (rs->iberr_state == 0) {
        int r = ncd__iberr_builtin(rs->ex->ctx, &rs->iberr);
        rs->iberr_state = r < 0 ? r : 1;
    }
    *rc = rs->iberr_state < 0 ? rs->iberr_state : 0;
    return rs->iberr_state == 1 ? &rs->iberr : NULL;
}

/* ----------------------------------------------------------- interfaces */

int ncd__addr_linklocal(const char *a)
{
    return strncasecmp(a, "fe80", 4) == 0;
}

int ncd__addr_loopback(const char *name, const char *a)
{
    return strncmp(a, "127.", 4) == 0 || strcmp(a, "::1") == 0 ||
           strcmp(name, "lo") == 0;
}

int ncd__ifname_virtual(const char *n)
{
    /* container, VM and VPN plumbing by the one name classifier (net/
     * ifnames.def); NCCL itself excludes only docker*, lo and virbr* */
    return ncd_ifname_is_plumbing(n);
}

void ncd__good_iface(const struct ncd_explain *ex, char *out, size_t osz)
{
    const char *fallback = NULL;
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < ex->nprocs; i++) {
            const struct ncd__proc *p = &ex->procs[i];
            const struct ncd__iface *lists[2] = {p->boot, p->sock};
            int ns[2] = {p->nboot, p->nsock};
            for (int l = 0; l < 2; l++)
                for (int k = 0; k < ns[l]; k++) {
                    const struct ncd__iface *f = &lists[l][k];
                    if (!f->addr[0] || ncd__addr_linklocal(f->addr) ||
                        ncd__addr_loopback(f->name, f->addr))
                        continue;
                    if (!ncd__ifname_virtual(f->name)) {
                        snprintf(out, osz, "%s", f->name);
                        return;
                    }
                    if (!fallback)
                        fallback = f->name;
                }
        }
    if (fallback && !ncd__ifname_virtual(fallback)) {
        snprintf(out, osz, "%s", fallback);
        return;
    }
    /* what NCCL would not pick by itself is still better than nothing */
    if (fallback && strncmp(fallback, "docker", 6) != 0 &&
        strncmp(fallback, "virbr", 5) != 0) {
        snprintf(out, osz, "%s", fallback);
        return;
    }
    snprintf(out, osz, "<the interface that reaches the other nodes>");
}

/* ----------------------------------------------------------- templates */

static const char *lookup(const struct ncd__hit *h, const struct ncd__rec *rec,
                          const char *name, size_t nl)
{
    for (size_t i = 0; i < h->nv; i++)
        if (strlen(h->vn[i]) == nl && memcmp(h->vn[i], name, nl) == 0)
            return h->vv[i];
    if (rec)
        for (size_t i = 0; i < rec->ncaps; i++)
            if (strlen(rec->cap_name[i]) == nl &&
                memcmp(rec->cap_name[i], name, nl) == 0)
                return rec->cap_val[i];
    return NULL;
}

/* "{name}" and "{name|default}" from the hit's variables / captures. */
static char *expand(const char *tpl, const struct ncd__hit *h,
                    const struct ncd__rec *rec)
{
    struct ncd_strbuf sb = {0};
    for (const char *p = tpl; *p; p++) {
        if (*p == '{') {
            const char *e = strchr(p, '}');
            const char *bar = e ? memchr(p, '|', (size_t)(e - p)) : NULL;
            size_t nl = (size_t)((bar ? bar : e ? e : p) - p - 1);
            if (e && nl > 0 && nl < 40) {
                const char *v = lookup(h, rec, p + 1, nl);
                if (v && *v)
                    ncd_sb_puts(&sb, v);
                else if (bar)
                    ncd_sb_add(&sb, bar + 1, (size_t)(e - bar - 1));
                else
                    ncd_sb_add(&sb, p, (size_t)(e - p + 1));
                p = e;
                continue;
            }
        }
        ncd_sb_putc(&sb, *p);
    }
    /* YAML folded text ends with a newline */
    while (sb.len && sb.buf[sb.len - 1] == '\n')
        sb.buf[--sb.len] = '\0';
    if (sb.oom) {
        ncd_sb_release(&sb);
        return NULL;
    }
    return ncd_sb_detach(&sb);
}

char *ncd__hit_expand(const struct ncd__hit *h, const char *tpl)
{
    return expand(tpl, h, NULL);
}

/* ----------------------------------------------------------- ranking */

static int group_of(const struct ncd__hit *h)
{
    if (h->sev <= NCD_SEV_INFO || h->role == NCD_ROLE_CONTEXT)
        return 3;
    if (h->role == NCD_ROLE_ROOT)
        return 0;
    if (h->role == NCD_ROLE_WRAPPER)
        return 1;
    return 2;
}

/* Time stamps first; without them, across different inputs (per-rank
 * logs) the lower rank, else input order. */
static int earlier(const struct ncd__hit *a, const struct ncd__hit *b)
{
    if (a->ts >= 0 && b->ts >= 0 && a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    const struct ncd__rec *ra = a->rec ? a->rec : a->from;
    const struct ncd__rec *rb = b->rec ? b->rec : b->from;
    if (a->ts < 0 && b->ts < 0 && ra && rb && ra->nev && rb->nev &&
        ra->ev[0].src != rb->ev[0].src && ra->ev[0].rank >= 0 &&
        rb->ev[0].rank >= 0 && ra->ev[0].rank != rb->ev[0].rank)
        return ra->ev[0].rank < rb->ev[0].rank ? -1 : 1;
    if (a->seq != b->seq)
        return a->seq < b->seq ? -1 : 1;
    return 0;
}

static int cmp_hits(const void *x, const void *y)
{
    const struct ncd__hit *a = x, *b = y;
    int ga = group_of(a), gb = group_of(b);
    if (ga != gb)
        return ga - gb;
    if (a->sev != b->sev)
        return (int)b->sev - (int)a->sev;
    int e = earlier(a, b);
    if (e)
        return e;
    /* the same line: what a condition concluded from it comes first */
    if (a->derived != b->derived)
        return b->derived - a->derived;
    return a->rule < b->rule ? -1 : a->rule > b->rule;
}

/* ----------------------------------------------------------- findings */

static void emit_evidence(const struct ncd_explain *ex,
                          const struct ncd__hit *h, struct ncd_finding *f)
{
    const struct ncd__rec *rec = h->rec;
    for (size_t i = 0; i < h->nev; i++)
        ncd_finding_evidence(f, "%s", h->ev[i]);
    if (!rec)
        return;
    for (size_t i = 0; i < rec->nev; i++) {
        const struct ncd__evid *e = &rec->ev[i];
        if (e->rank >= 0 && !strstr(e->text, "rank"))
            ncd_finding_evidence(f, "%s:%llu: [rank %d] %s",
                                 ncd__src_name(ex, e->src),
                                 (unsigned long long)e->line, e->rank, e->text);
        else
            ncd_finding_evidence(f, "%s:%llu: %s", ncd__src_name(ex, e->src),
                                 (unsigned long long)e->line, e->text);
    }
    if (rec->count <= rec->nev)
        return;
    if (rec->nhosts > 1)
        ncd_finding_evidence(f, "... %llu matching lines in all, on %s%zu hosts",
                             (unsigned long long)rec->count,
                             rec->nhosts > 4 ? "more than " : "",
                             rec->nhosts > 4 ? (size_t)4 : rec->nhosts);
    else
        ncd_finding_evidence(f, "... %llu matching lines in all",
                             (unsigned long long)rec->count);
}

int ncd__var_in_release(struct ncd__reason *rs, const char *name,
                        int version)
{
    int rc;
    const struct ncd_var_catalog *cat = ncd__reason_vars(rs, &rc);
    if (!version || !cat)
        return 1;
    const struct ncd_var_def *d = ncd_var_find(cat, name);
    if (d && d->since && version < ncd__version_code(d->since))
        return 0;
    const struct ncd_var_gone *g = ncd_var_find_gone(cat, name);
    if (g && g->removed && version >= ncd__version_code(g->removed))
        return 0;
    return 1;
}

static void emit_env(struct ncd__reason *rs, const struct ncd__hit *h,
                     struct ncd_finding *f)
{
    const struct ncd_explain *ex = rs->ex;
    const struct ncd__rule *r = &ex->rules->v[h->rule];
    /* never suggest a variable the logged NCCL does not read */
    int version = ncd__rec_version(ex, h->rec);
    /* NCCL ignores NCCL_IB_GID_INDEX on InfiniBand link layer ports
     * (nccl-facts.md §4): drop the suggestion when every port NCCL listed
     * is /IB. */
    int ib_only = 0, roce = 0;
    for (size_t i = 0; i < ex->nprocs; i++) {
        ib_only += ex->procs[i].ib_ib;
        roce += ex->procs[i].ib_roce;
    }
    ib_only = ib_only > 0 && roce == 0;
    for (size_t i = 0; i < r->nenv; i++) {
        if (ib_only && strcmp(r->env_names[i], "NCCL_IB_GID_INDEX") == 0)
            continue;
        /* NCCL_DEBUG=INFO is advice for logs that lack INFO lines */
        if (ex->info_lines && strcmp(r->env_names[i], "NCCL_DEBUG") == 0)
            continue;
        char *v = r->env_vals[i] ? expand(r->env_vals[i], h, h->rec) : NULL;
        char *nm = expand(r->env_names[i], h, h->rec); /* "{name}": ~ works */
        /* a value the logs could not determine ("<the interface ...>")
         * stays in the fix text: never suggest exporting a placeholder */
        int placeholder = v && v[0] == '<';
        if (nm && nm[0] && !strchr(nm, '{') && !placeholder &&
            ncd__var_in_release(rs, nm, version))
            ncd_finding_env(f, nm, v);
        free(nm);
        free(v);
    }
}

static int emit(struct ncd__reason *rs, const struct ncd__hit *h,
                struct ncd_findings *out)
{
    const struct ncd_explain *ex = rs->ex;
    const struct ncd__rule *r = &ex->rules->v[h->rule];
    char *title = expand(r->title, h, h->rec);
    if (!title)
        return NCD_ENOMEM;
    struct ncd_finding *f = ncd_findings_add(out, r->id, h->cat, h->sev, "%s",
                                             title);
    free(title);
    if (!f)
        return NCD_ENOMEM;
    emit_evidence(ex, h, f);
    char *c = expand(r->cause, h, h->rec), *x = expand(r->fix, h, h->rec);
    if (c)
        ncd_finding_cause(f, "%s", c);
    if (x)
        ncd_finding_fix(f, "%s", x);
    free(c);
    free(x);
    emit_env(rs, h, f);
    return 0;
}

/* ----------------------------------------------------------- finish */

/* Runs the conditions of one phase, rules in load order. */
static int run_phase(struct ncd__reason *rs, enum ncd__cond_phase ph)
{
    const struct ncd_rules *R = rs->ex->rules;
    if (ph == NCD__PH_FALLBACK)
        for (size_t i = 0; i < rs->n; i++)
            if (rs->v[i].sev >= NCD_SEV_WARNING)
                return 0; /* something already explains the failure */
    for (size_t i = 0; i < R->n; i++) {
        int c = R->v[i].cond;
        if (c < 0 || conds[c].phase != ph)
            continue;
        int rc = conds[c].fn(rs, i);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* A derived finding turns the matches it explains into consequences. */
static void absorb(struct ncd__reason *rs)
{
    const struct ncd_rules *R = rs->ex->rules;
    for (size_t i = 0; i < rs->n; i++) {
        const struct ncd__rule *r = &R->v[rs->v[i].rule];
        if (r->cond < 0 || rs->v[i].no_absorb)
            continue;
        for (size_t a = 0; a < r->nabsorbs; a++)
            for (size_t j = 0; j < rs->n; j++)
                if (R->v[rs->v[j].rule].cond < 0 &&
                    strcmp(R->v[rs->v[j].rule].id, r->absorbs[a]) == 0 &&
                    rs->v[j].role != NCD_ROLE_CONTEXT)
                    rs->v[j].role = NCD_ROLE_CONSEQUENCE;
    }
}

static int rank_and_emit(struct ncd__reason *rs, struct ncd_findings *out)
{
    struct ncd_explain *ex = rs->ex;
    for (size_t i = 0; i < rs->n; i++) /* lookups take the first */
        ncd__hit_var(&rs->v[i], "good_iface", rs->good_iface);
    if (rs->n > 1)
        qsort(rs->v, rs->n, sizeof *rs->v, cmp_hits);
    free(ex->roles);
    free(ex->first_ts);
    free(ex->first_rank);
    ex->roles = calloc(rs->n ? rs->n : 1, sizeof *ex->roles);
    ex->first_ts = calloc(rs->n ? rs->n : 1, sizeof *ex->first_ts);
    ex->first_rank = calloc(rs->n ? rs->n : 1, sizeof *ex->first_rank);
    if (!ex->roles || !ex->first_ts || !ex->first_rank)
        return NCD_ENOMEM;
    size_t base = out->n;
    for (size_t i = 0; i < rs->n; i++) {
        const struct ncd__hit *h = &rs->v[i];
        int rc = emit(rs, h, out);
        if (rc < 0)
            return rc;
        ex->roles[i] = h->role;
        ex->first_ts[i] = h->ts;
        const struct ncd__rec *fr = h->rec ? h->rec : h->from;
        ex->first_rank[i] = fr && fr->nev ? fr->ev[0].rank : -1;
    }
    ex->nroles = rs->n;
    return (int)(out->n - base);
}

int ncd_explain_finish(struct ncd_explain *ex, struct ncd_findings *out)
{
    const struct ncd_rules *R = ex->rules;
    if (ex->finished)
        return ncd_fail(ex->ctx, NCD_EINVAL, "explain: finish called twice");
    if (ex->open)
        ncd_explain_end(ex);
    struct ncd__reason rs = {.ex = ex};
    ncd__good_iface(ex, rs.good_iface, sizeof rs.good_iface);
    int rc = 0;
    /* 1. pattern rules that matched */
    for (size_t i = 0; i < R->n && rc == 0; i++) {
        if (R->v[i].cond >= 0 || !ex->recs[i].count)
            continue;
        struct ncd__hit *h = ncd__hit_new(&rs, i);
        if (!h) {
            rc = NCD_ENOMEM;
            break;
        }
        h->rec = &ex->recs[i];
        ncd__hit_from_rec(h, h->rec);
    }
    /* 2. derived conditions, phase by phase */
    for (int ph = 0; ph < NCD__PH__COUNT && rc == 0; ph++)
        rc = run_phase(&rs, (enum ncd__cond_phase)ph);
    if (rc == 0) {
        absorb(&rs);
        rc = rank_and_emit(&rs, out);
    }
    hits_release(&rs);
    ex->finished = 1;
    return rc;
}

enum ncd_rule_role ncd_explain_role(const struct ncd_explain *ex, size_t i)
{
    return ex->roles && i < ex->nroles ? ex->roles[i] : NCD_ROLE_CONTEXT;
}

int ncd_explain_first_seen(const struct ncd_explain *ex, size_t i, double *ts,
                           int *rank)
{
    if (!ex->roles || i >= ex->nroles)
        return NCD_EINVAL;
    if (ts)
        *ts = ex->first_ts[i];
    if (rank)
        *rank = ex->first_rank[i];
    return 0;
}
