/* SPDX-License-Identifier: MIT */
/* An explain scan: chunked input -> lines -> facts + rule matches. */
#define _GNU_SOURCE
#include "explain/session.h"

#include <stdlib.h>
#include <string.h>

#include "ncd/error.h"

int ncd_explain_new(struct ncd_ctx *ctx, const struct ncd_rules *rules,
                    struct ncd_explain **out)
{
    struct ncd_explain *ex = calloc(1, sizeof *ex);
    if (!ex)
        return NCD_ENOMEM;
    ex->ctx = ctx;
    ex->rules = rules;
    ex->lastproc = -1;
    ex->curproc = -1;
    ex->part = malloc(NCD_LOG_MAX_LINE + 1);
    ex->scratch = malloc(NCD_LOG_MAX_LINE + 1);
    ex->recs = calloc(rules->n ? rules->n : 1, sizeof *ex->recs);
    ex->obsrecs = calloc(rules->nobs ? rules->nobs : 1, sizeof *ex->obsrecs);
    ex->phash = malloc(NCD__PROC_HASH * sizeof *ex->phash);
    if (!ex->part || !ex->scratch || !ex->recs || !ex->obsrecs || !ex->phash ||
        ncd__matcher_init(&ex->m, rules) < 0) {
        ncd_explain_free(ex);
        return NCD_ENOMEM;
    }
    ex->wd_rule = ncd__rules_find(rules, "pytorch.watchdog-timeout");
    for (size_t i = 0; i < NCD__PROC_HASH; i++)
        ex->phash[i] = -1;
    for (size_t i = 0; i < NCD__HOST_HASH; i++)
        ex->hhash[i] = -1;
    *out = ex;
    return 0;
}

void ncd__rec_release(struct ncd__rec *rec)
{
    for (size_t i = 0; i < rec->nev; i++)
        free(rec->ev[i].text);
    for (size_t i = 0; i < rec->ncaps; i++) {
        free(rec->cap_name[i]);
        free(rec->cap_val[i]);
    }
    memset(rec, 0, sizeof *rec);
}

void ncd_explain_free(struct ncd_explain *ex)
{
    if (!ex)
        return;
    ncd__matcher_release(&ex->m);
    if (ex->recs)
        for (size_t i = 0; i < ex->rules->n; i++)
            ncd__rec_release(&ex->recs[i]);
    if (ex->obsrecs)
        for (size_t i = 0; i < ex->rules->nobs; i++)
            ncd__rec_release(&ex->obsrecs[i]);
    free(ex->obsrecs);
    for (size_t i = 0; i < NCD_CAT__COUNT; i++)
        ncd__rec_release(&ex->unmatched[i]);
    for (size_t i = 0; i < ex->nwfiles; i++)
        ncd__rec_release(&ex->wfiles[i].rec);
    for (uint32_t i = 0; i < ex->nsrc; i++)
        free(ex->srcnames[i]);
    free(ex->srcnames);
    free(ex->part);
    free(ex->scratch);
    free(ex->recs);
    free(ex->procs);
    free(ex->hosts);
    free(ex->phash);
    free(ex->gpus);
    free(ex->rnet);
    free(ex->wd);
    free(ex->roles);
    free(ex->first_ts);
    free(ex->first_rank);
    free(ex);
}

const char *ncd__src_name(const struct ncd_explain *ex, uint32_t src)
{
    return src < ex->nsrc ? ex->srcnames[src] : "?";
}

int ncd_explain_begin(struct ncd_explain *ex, const char *name)
{
    if (ex->open)
        ncd_explain_end(ex);
    if (ex->nsrc >= NCD__MAX_SOURCES)
        return ncd_fail(ex->ctx, NCD_ERANGE, "more than %d inputs",
                        NCD__MAX_SOURCES);
    char **nv = realloc(ex->srcnames, (ex->nsrc + 1) * sizeof *nv);
    if (!nv)
        return NCD_ENOMEM;
    ex->srcnames = nv;
    if (!(nv[ex->nsrc] = strdup(name ? name : "-")))
        return NCD_ENOMEM;
    ex->nsrc++;
    ex->open = 1;
    ex->lineno = 0;
    ex->partlen = 0;
    ex->skipping = 0;
    return 0;
}

/* Keeps captured named groups of the first match of a rule. */
static void keep_captures(struct ncd_explain *ex, struct ncd__rec *rec,
                          size_t pat, const char *text)
{
    const struct ncd_rules *r = ex->rules;
    uint32_t count = 0, esize = 0;
    PCRE2_SPTR table;
    pcre2_code *re = r->pats[pat].re;
    if (pcre2_pattern_info(re, PCRE2_INFO_NAMECOUNT, &count) != 0 || !count)
        return;
    pcre2_pattern_info(re, PCRE2_INFO_NAMEENTRYSIZE, &esize);
    pcre2_pattern_info(re, PCRE2_INFO_NAMETABLE, &table);
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(ex->m.md);
    uint32_t npairs = pcre2_get_ovector_count(ex->m.md);
    for (uint32_t i = 0; i < count && rec->ncaps < NCD__MAX_CAPS; i++) {
        const unsigned char *e = table + i * esize;
        uint32_t g = (uint32_t)(e[0] << 8 | e[1]);
        if (g >= npairs || ov[2 * g] == PCRE2_UNSET)
            continue;
        const char *nm = (const char *)e + 2;
        int dup = 0;
        for (size_t k = 0; k < rec->ncaps; k++)
            dup |= strcmp(rec->cap_name[k], nm) == 0;
        if (dup)
            continue;
        size_t l = ov[2 * g + 1] - ov[2 * g];
        if (l > 200)
            l = 200;
        rec->cap_name[rec->ncaps] = strdup(nm);
        rec->cap_val[rec->ncaps] = strndup(text + ov[2 * g], l);
        if (rec->cap_val[rec->ncaps])
            ncd__sanitize(rec->cap_val[rec->ncaps], strlen(rec->cap_val[rec->ncaps]));
        if (!rec->cap_name[rec->ncaps] || !rec->cap_val[rec->ncaps]) {
            free(rec->cap_name[rec->ncaps]);
            free(rec->cap_val[rec->ncaps]);
            return;
        }
        rec->ncaps++;
    }
}

void ncd__rec_add(struct ncd_explain *ex, struct ncd__rec *rec,
                  const struct ncd_log_line *ll, uint32_t src, uint64_t line)
{
    if (rec->count == 0)
        rec->first_ts = -1;
    rec->count++;
    char host[48] = "";
    if (ll->host) {
        size_t hl = ll->host_len < sizeof host - 1 ? ll->host_len
                                                   : sizeof host - 1;
        memcpy(host, ll->host, hl);
        host[hl] = '\0';
        int known = 0;
        for (size_t i = 0; i < rec->nhosts && i < 4; i++)
            known |= strcmp(rec->hosts[i], host) == 0;
        if (!known && rec->nhosts < 5) {
            if (rec->nhosts < 4)
                memcpy(rec->hosts[rec->nhosts], host, sizeof host);
            rec->nhosts++;
        }
    }
    if (ll->ts >= 0 && (rec->first_ts < 0 || ll->ts < rec->first_ts))
        rec->first_ts = ll->ts;
    /* Keep the first lines, but let an earlier-stamped line replace the
     * last kept one so the root-cause time is right across files. */
    size_t slot;
    if (rec->nev < NCD__MAX_EVID)
        slot = rec->nev++;
    else if (ll->ts >= 0 && rec->ev[NCD__MAX_EVID - 1].ts > ll->ts)
        slot = NCD__MAX_EVID - 1;
    else
        return;
    struct ncd__evid *e = &rec->ev[slot];
    free(e->text);
    size_t tl = ll->text_len < NCD__EV_TEXT ? ll->text_len : NCD__EV_TEXT;
    e->text = strndup(ll->text, tl);
    if (e->text)
        ncd__sanitize(e->text, strlen(e->text));
    e->proc = (int32_t)ex->curproc;
    e->src = src;
    e->line = line;
    e->seq = ex->seq;
    e->ts = ll->ts;
    e->rank = ll->rank;
    memcpy(e->host, host, sizeof host);
    ncd__sanitize(e->host, strlen(e->host));
    if (rec->count == 1)
        rec->first_seq = ex->seq;
}

enum ncd_category ncd__category_for_src(const struct ncd_rules *r,
                                       const char *src, size_t len)
{
    /* the subsystem rules' `files:` (rules/source-files.yaml) */
    long k = ncd__file_rule(r, src, len, 0);
    return k >= 0 ? r->v[k].cat : NCD_CAT_NET_UNREACHABLE;
}

/* The WARN lines of each NCCL source file, whichever rule claimed them. */
static void warn_file_add(struct ncd_explain *ex, const struct ncd_log_line *ll)
{
    if (!ll->src || !ll->src_len || ll->src_len >= sizeof ex->wfiles[0].name)
        return;
    size_t i;
    for (i = 0; i < ex->nwfiles; i++)
        if (strlen(ex->wfiles[i].name) == ll->src_len &&
            memcmp(ex->wfiles[i].name, ll->src, ll->src_len) == 0)
            break;
    if (i == ex->nwfiles) {
        if (ex->nwfiles == NCD__MAX_WFILES)
            return;
        memcpy(ex->wfiles[i].name, ll->src, ll->src_len);
        ex->wfiles[i].name[ll->src_len] = '\0';
        ncd__sanitize(ex->wfiles[i].name, ll->src_len);
        ex->nwfiles++;
    }
    ncd__rec_add(ex, &ex->wfiles[i].rec, ll, ex->nsrc - 1, ex->lineno);
}

static void process_line(struct ncd_explain *ex, const char *line, size_t len)
{
    struct ncd_log_line ll;
    ex->lineno++;
    ex->lines++;
    ex->seq++;
    if (len == 0 || (len == 1 && line[0] == '\r'))
        return; /* NCCL prints an empty line before every WARN */
    if (ncd_log_parse(line, len, ex->scratch, NCD_LOG_MAX_LINE + 1, &ll) < 0)
        return;
    if (ll.text_len == 0)
        return;
    struct ncd__proc *pr = NULL;
    if (ll.level != NCD_LOG_NONE) {
        ex->nccl_lines++;
        ex->info_lines += ll.level == NCD_LOG_INFO;
        pr = ncd__proc_get(ex, &ll);
    }
    ex->curproc = pr ? (long)(pr - ex->procs) : -1;
    if (ll.level != NCD_LOG_NONE || ll.text[0] == '#' || ll.text[0] == 'N' ||
        ll.text[0] == 'e')
        ncd__facts_line(ex, &ll, pr);

    size_t pat;
    long ri = ncd__rules_match(ex->rules, &ex->m, ll.text, ll.text_len,
                               pr ? pr->vcode : 0, ll.src,
                               ll.src ? ll.src_len : 0, &pat);
    /* the rank NCCL reported for this process, when the launcher gave none */
    if (ll.rank < 0 && pr && pr->rank >= 0)
        ll.rank = pr->rank;
    if (ri >= 0 && ri == ex->wd_rule)
        ncd__facts_watchdog(ex, &ll);
    if (ll.level == NCD_LOG_WARN)
        warn_file_add(ex, &ll);
    for (size_t o = 0; o < ex->m.nobs; o++) /* known bugs' signatures */
        ncd__rec_add(ex, &ex->obsrecs[ex->rules->pats[ex->m.obs[o]].obs_slot],
                     &ll, ex->nsrc - 1, ex->lineno);
    if (ri >= 0) {
        struct ncd__rec *rec = &ex->recs[ri];
        if (rec->count == 0 && pat != SIZE_MAX)
            keep_captures(ex, rec, pat, ll.text);
        ncd__rec_add(ex, rec, &ll, ex->nsrc - 1, ex->lineno);
        return;
    }
    if (ll.level == NCD_LOG_WARN) {
        /* A WARN no rule knows, of a file no subsystem rule names */
        enum ncd_category cat = ncd__category_for_src(
            ex->rules, ll.src, ll.src ? ll.src_len : 0);
        ncd__rec_add(ex, &ex->unmatched[cat], &ll, ex->nsrc - 1, ex->lineno);
    }
}

int ncd_explain_feed(struct ncd_explain *ex, const void *buf, size_t len)
{
    if (!ex->open)
        return ncd_fail(ex->ctx, NCD_EINVAL, "feed before begin");
    const char *p = buf, *end = p + len;
    ex->bytes += len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) {
            /* partial line: keep up to the cap, drop the rest */
            size_t n = (size_t)(end - p);
            if (!ex->skipping) {
                size_t room = NCD_LOG_MAX_LINE - ex->partlen;
                if (n > room) {
                    n = room;
                    ex->skipping = 1;
                }
                memcpy(ex->part + ex->partlen, p, n);
                ex->partlen += n;
            }
            return 0;
        }
        size_t n = (size_t)(nl - p);
        if (ex->partlen || ex->skipping) {
            if (!ex->skipping) {
                size_t room = NCD_LOG_MAX_LINE - ex->partlen;
                size_t k = n < room ? n : room;
                memcpy(ex->part + ex->partlen, p, k);
                ex->partlen += k;
            }
            process_line(ex, ex->part, ex->partlen);
            ex->partlen = 0;
            ex->skipping = 0;
        } else {
            process_line(ex, p, n);
        }
        p = nl + 1;
    }
    return 0;
}

void ncd_explain_end(struct ncd_explain *ex)
{
    if (!ex->open)
        return;
    if (ex->partlen)
        process_line(ex, ex->part, ex->partlen);
    ex->partlen = 0;
    ex->skipping = 0;
    ex->open = 0;
}

void ncd_explain_stats(const struct ncd_explain *ex, unsigned long long *bytes,
                       unsigned long long *lines,
                       unsigned long long *nccl_lines)
{
    if (bytes)
        *bytes = ex->bytes;
    if (lines)
        *lines = ex->lines;
    if (nccl_lines)
        *nccl_lines = ex->nccl_lines;
}
