/* SPDX-License-Identifier: MIT */
/*
 * An explain scan: chunked input -> lines -> facts + rule matches.
 *
 * Each line goes through two steps.  ncd__line_scan() is a pure function of
 * the line and the rules: normalise, parse the header, run the literal
 * prefilter and the candidate patterns (over all NCCL versions).
 * ncd__line_apply() updates the scan's state in input order: the process's
 * facts, the version filter of the match (re-matched with the process's
 * NCCL version only when the best rule does not apply to it), evidence,
 * captures.  Serially the two run back to back; with several threads
 * (ncd__explain_feed_fd) the threads scan blocks of lines concurrently and
 * apply them one block after the other, in input order, so the state is
 * the one a serial scan builds, byte for byte.
 */
#define _GNU_SOURCE
#include "explain/session.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
    ex->threads = 1;
    ex->block = NCD__BLOCK;
    ex->part = calloc(1, NCD_LOG_MAX_LINE + 1);
    ex->tail = calloc(1, NCD_LOG_MAX_LINE + 1);
    ex->scratch = calloc(1, NCD_LOG_MAX_LINE + 1);
    ex->recs = calloc(rules->n ? rules->n : 1, sizeof *ex->recs);
    ex->obsrecs = calloc(rules->nobs ? rules->nobs : 1, sizeof *ex->obsrecs);
    ex->phash = malloc(NCD__PROC_HASH0 * sizeof *ex->phash);
    ex->phash_mask = NCD__PROC_HASH0 - 1;
    if (!ex->part || !ex->tail || !ex->scratch || !ex->recs ||
        !ex->obsrecs || !ex->phash || ncd__matcher_init(&ex->m, rules) < 0) {
        ncd_explain_free(ex);
        return NCD_ENOMEM;
    }
    ex->wd_rule = ncd__rules_find(rules, "pytorch.watchdog-timeout");
    for (size_t i = 0; i < NCD__PROC_HASH0; i++)
        ex->phash[i].idx = -1;
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
    free(ex->seen);
    if (ex->recs)
        for (size_t i = 0; i < ex->rules->n; i++)
            ncd__rec_release(&ex->recs[i]);
    if (ex->obsrecs)
        for (size_t i = 0; i < ex->rules->nobs; i++)
            ncd__rec_release(&ex->obsrecs[i]);
    free(ex->obsrecs);
    for (size_t i = 0; i < NCD_CAT__COUNT; i++)
        ncd__rec_release(&ex->unmatched[i]);
    ncd__rec_release(&ex->unmatched_bare);
    for (size_t i = 0; i < ex->nwfiles; i++)
        ncd__rec_release(&ex->wfiles[i].rec);
    for (uint32_t i = 0; i < ex->nsrc; i++)
        free(ex->srcnames[i]);
    free(ex->srcnames);
    free(ex->part);
    free(ex->tail);
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
    ex->taillen = 0;
    ex->tailcut = 0;
    return 0;
}

/* Keeps captured named groups of the first match of a rule (pattern `pat`
 * matched `text`: the match runs again here, for its groups). */
static void keep_captures(struct ncd_explain *ex, struct ncd__rec *rec,
                          size_t pat, const char *text, size_t len)
{
    const struct ncd_rules *r = ex->rules;
    uint32_t count = 0, esize = 0;
    PCRE2_SPTR table;
    pcre2_code *re = ncd__pattern_code(r, pat);
    if (!re || pcre2_pattern_info(re, PCRE2_INFO_NAMECOUNT, &count) != 0 ||
        !count)
        return;
    if (pcre2_match(re, (PCRE2_SPTR)text, len, 0, 0, ex->m.md, NULL) < 0)
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

/* The stateless step: 1 when the line needs ncd__line_apply() (an NCCL
 * line, an nccl-tests '#' line or a rule match), 0 when it only counts. */
static int line_scan(const struct ncd_rules *r, struct ncd__matcher *m,
                     const char *line, size_t len, char *scratch,
                     size_t scratch_sz, struct ncd__lscan *o)
{
    if (len == 0 || (len == 1 && line[0] == '\r'))
        return 0; /* NCCL prints an empty line before every WARN */
    struct ncd__hdr_memo *hdr;
    const char *raw;
    if (ncd__log_parse_memo(line, len, scratch, scratch_sz, &o->ll, m->memo,
                            &hdr, &raw) < 0 ||
        o->ll.text_len == 0)
        return 0;
    /* the prefilter reads 4 bytes at every offset: in the copy just
     * written, a load across two of its 16-byte stores waits until every
     * older store is done, including the previous lines' stores to the
     * block's arena and records, which another core has just read (with 2
     * threads that cost the scanning thread 3x its time) */
    const char *mt = raw + (o->ll.text - scratch);
    /* the prefilter's windows inside a known header: those without a
     * bitmap hit once, not on every line of the process */
    size_t from = 0;
    if (hdr) {
        if (hdr->pf_from == 0xffff)
            hdr->pf_from = (uint16_t)ncd__prefilter_quiet(
                r, o->ll.text, (size_t)(hdr->plen - hdr->k));
        from = hdr->pf_from;
    }
    o->rule = ncd__rules_match_from(r, m, mt, o->ll.text_len, 0,
                                    o->ll.src, o->ll.src ? o->ll.src_len : 0,
                                    &o->pat, from);
    o->nobs = 0;
    for (size_t k = 0; k < m->nobs && k < NCD__MAX_OBS_PER_LINE; k++)
        o->obs[o->nobs++] = (uint32_t)m->obs[k];
    /* facts come from NCCL lines, nccl-tests' '#' lines and env dumps
     * ("NCCL_X=v", "export NCCL_X=v") */
    return o->ll.level != NCD_LOG_NONE || o->ll.text[0] == '#' ||
           o->ll.text[0] == 'N' || o->ll.text[0] == 'e' || o->rule >= 0 ||
           o->nobs > 0;
}

/* The stateful step, in input order; ex->lineno / ex->seq are the line's. */
static void line_apply(struct ncd_explain *ex, struct ncd__lscan *s)
{
    struct ncd_log_line *ll = &s->ll;
    struct ncd__proc *pr = NULL;
    if (ll->level != NCD_LOG_NONE) {
        ex->nccl_lines++;
        ex->info_lines += ll->level == NCD_LOG_INFO;
        pr = ncd__proc_get(ex, ll);
    }
    ex->curproc = pr ? (long)(pr - ex->procs) : -1;
    if (ll->level != NCD_LOG_NONE || ll->text[0] == '#' ||
        ll->text[0] == 'N' || ll->text[0] == 'e')
        ncd__facts_line(ex, ll, pr);

    /* the best rule over all versions is the answer unless the process's
     * NCCL version rules it out: then the best among those that apply */
    long ri = s->rule;
    size_t pat = s->pat;
    int version = pr ? pr->vcode : 0;
    if (ri >= 0 && version && !ncd__rule_applies(&ex->rules->v[ri], version))
        ri = ncd__rules_match(ex->rules, &ex->m, ll->text, ll->text_len,
                              version, ll->src, ll->src ? ll->src_len : 0,
                              &pat);
    /* the rank NCCL reported for this process, when the launcher gave none */
    if (ll->rank < 0 && pr && pr->rank >= 0)
        ll->rank = pr->rank;
    if (ri >= 0 && ri == ex->wd_rule)
        ncd__facts_watchdog(ex, ll);
    if (ri >= 0 && ll->level == NCD_LOG_NONE)
        ncd__facts_fw_version(ex, ll);
    if (ll->level == NCD_LOG_WARN)
        warn_file_add(ex, ll);
    for (uint32_t o = 0; o < s->nobs; o++) { /* known bugs' signatures */
        const struct ncd__pattern *op = &ex->rules->pats[s->obs[o]];
        if (!version ||
            ncd_known_bug_affects(&ex->rules->bugs.v[op->bug], version))
            ncd__rec_add(ex, &ex->obsrecs[op->obs_slot], ll, ex->nsrc - 1,
                         ex->lineno);
    }
    if (ri >= 0) {
        struct ncd__rec *rec = &ex->recs[ri];
        if (rec->count == 0 && pat != SIZE_MAX)
            keep_captures(ex, rec, pat, ll->text, ll->text_len);
        ncd__rec_add(ex, rec, ll, ex->nsrc - 1, ex->lineno);
        return;
    }
    if (ll->level == NCD_LOG_WARN) /* a WARN no rule knows */
        ncd__unmatched_add(ex, ll);
}

/* n lines in a row of one process that ncd__facts_inert() calls inert and
 * that match no rule nor known bug (ninfo of them INFO, opcount: one of
 * them NCD__INERT_OPCOUNT), the last of them ex->lineno: what line_apply()
 * does for each of them, once. */
static void lines_apply_inert(struct ncd_explain *ex,
                              const struct ncd_log_line *ll, uint32_t n,
                              uint32_t ninfo, int opcount)
{
    ex->nccl_lines += n;
    ex->info_lines += ninfo;
    struct ncd__proc *pr = ncd__proc_get(ex, ll);
    ex->curproc = pr ? (long)(pr - ex->procs) : -1;
    if (pr)
        ncd__facts_inert_lines(ex, pr, opcount);
}

/* Scans and applies `line` under the current line number. */
static void read_line(struct ncd_explain *ex, const char *line, size_t len)
{
    struct ncd__lscan s;
    if (line_scan(ex->rules, &ex->m, line, len, ex->scratch,
                  NCD_LOG_MAX_LINE + 1, &s))
        line_apply(ex, &s);
}

/* The next line of the input. */
static void process_line(struct ncd_explain *ex, const char *line, size_t len)
{
    ex->lineno++;
    ex->lines++;
    ex->seq++;
    read_line(ex, line, len);
}

/*
 * Lines longer than NCD_LOG_MAX_LINE.  Their first NCD_LOG_MAX_LINE bytes
 * are read as the line; so is one piece of the rest, with the same line
 * number: the text after the rest's last '\r' (what a terminal shows last:
 * progress bars redraw themselves with '\r' and never end their line, so
 * the next message sticks to them), else the rest's last NCD_LOG_MAX_LINE
 * bytes from a word boundary.  tail_add() keeps that window of the rest as
 * it streams by, tail_done() reads the piece at the line's end.
 */
static void tail_add(struct ncd_explain *ex, const char *p, size_t n)
{
    const size_t cap = NCD_LOG_MAX_LINE;
    if (n >= cap) {
        ex->tailcut |= n > cap || ex->taillen > 0;
        memcpy(ex->tail, p + (n - cap), cap);
        ex->taillen = cap;
        return;
    }
    if (ex->taillen + n > cap) {
        size_t drop = ex->taillen + n - cap;
        memmove(ex->tail, ex->tail + drop, ex->taillen - drop);
        ex->taillen -= drop;
        ex->tailcut = 1;
    }
    memcpy(ex->tail + ex->taillen, p, n);
    ex->taillen += n;
}

static void tail_done(struct ncd_explain *ex)
{
    const char *t = ex->tail, *e = t + ex->taillen;
    if (e > t && e[-1] == '\r') /* CRLF */
        e--;
    const char *cr = memrchr(t, '\r', (size_t)(e - t));
    if (cr)
        t = cr + 1;
    else if (ex->tailcut) { /* the window starts inside a word */
        const char *sp = memchr(t, ' ', (size_t)(e - t));
        if (sp)
            t = sp + 1;
    }
    ex->long_lines++;
    if (t < e) /* the same line: its number, once in the counts */
        read_line(ex, t, (size_t)(e - t));
    ex->taillen = 0;
    ex->tailcut = 0;
}

/*
 * Line ends of a buffer, 64 bytes at a time: a mask of the '\n' bytes of
 * each 64-byte window, so that a short line costs a bit scan instead of a
 * memchr() call (~90 instructions per call on 84-byte lines); the last
 * partial window with memchr().
 */
struct nl_scan {
    const char *buf, *end;
    size_t w;      /* the window at buf + w, 64 bytes */
    uint64_t mask; /* its '\n' bytes not handed out yet */
    int tail;      /* past the last whole window: memchr() */
};

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

static inline uint64_t nl_mask64(const char *p)
{
#if defined(__SSE2__)
    const __m128i nl = _mm_set1_epi8('\n');
    uint64_t m = 0;
    for (int k = 0; k < 4; k++) {
        __m128i v =
            _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * k));
        m |= (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(v, nl))
             << (16 * k);
    }
    return m;
#else
    uint64_t m = 0;
    for (int k = 0; k < 64; k++)
        m |= (uint64_t)(p[k] == '\n') << k;
    return m;
#endif
}

static inline void nl_init(struct nl_scan *s, const char *buf, size_t len)
{
    s->buf = buf;
    s->end = buf + len;
    s->w = 0;
    s->tail = len < 64;
    s->mask = s->tail ? 0 : nl_mask64(buf);
}

/* The first '\n' at or after p (p: just past the last one handed out, or
 * the buffer's start), NULL when none. */
static inline const char *nl_next(struct nl_scan *s, const char *p)
{
    while (!s->tail) {
        if (s->mask) {
            const char *nl = s->buf + s->w + (unsigned)__builtin_ctzll(s->mask);
            s->mask &= s->mask - 1;
            return nl;
        }
        if ((size_t)(s->end - s->buf) - (s->w + 64) < 64) {
            s->tail = 1;
            s->w += 64; /* memchr() from here on */
            break;
        }
        s->w += 64;
        s->mask = nl_mask64(s->buf + s->w);
    }
    const char *from = s->buf + s->w;
    if (p > from)
        from = p;
    return memchr(from, '\n', (size_t)(s->end - from));
}

int ncd_explain_feed(struct ncd_explain *ex, const void *buf, size_t len)
{
    if (!ex->open)
        return ncd_fail(ex->ctx, NCD_EINVAL, "feed before begin");
    const char *p = buf, *end = p + len;
    struct nl_scan ns;
    nl_init(&ns, p, len);
    ex->bytes += len;
    while (p < end) {
        const char *nl = nl_next(&ns, p);
        /* a partial line (no '\n' in this buffer) is kept up to the cap,
         * the window of its rest in ex->tail */
        size_t n = (size_t)((nl ? nl : end) - p);
        if (nl && !ex->partlen && !ex->skipping) {
            process_line(ex, p, n);
            if (n > NCD_LOG_MAX_LINE) {
                tail_add(ex, p + NCD_LOG_MAX_LINE, n - NCD_LOG_MAX_LINE);
                tail_done(ex);
            }
            p = nl + 1;
            continue;
        }
        if (ex->skipping) {
            tail_add(ex, p, n);
        } else {
            size_t room = NCD_LOG_MAX_LINE - ex->partlen;
            size_t k = n < room ? n : room;
            memcpy(ex->part + ex->partlen, p, k);
            ex->partlen += k;
            if (n > room) {
                ex->skipping = 1;
                tail_add(ex, p + room, n - room);
            }
        }
        if (!nl)
            return 0;
        process_line(ex, ex->part, ex->partlen);
        if (ex->skipping)
            tail_done(ex);
        ex->partlen = 0;
        ex->skipping = 0;
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
    if (ex->skipping)
        tail_done(ex);
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

unsigned long long ncd_explain_long_lines(const struct ncd_explain *ex)
{
    return ex->long_lines;
}

int ncd_explain_set_threads(struct ncd_explain *ex, int n)
{
    if (n < 1 || n > NCD_EXPLAIN_MAX_THREADS)
        return ncd_fail(ex->ctx, NCD_EINVAL, "threads: %d is not in 1..%d", n,
                        NCD_EXPLAIN_MAX_THREADS);
    ex->threads = n;
    return 0;
}

void ncd_explain_set_debug_on(struct ncd_explain *ex, int on)
{
    ex->debug_on = on != 0;
}

int ncd_explain_debug_on(const struct ncd_explain *ex)
{
    return ex->debug_on;
}

/* ------------------------------------------------ parallel block scan */

/*
 * Block k holds the lines that start in [k*B, (k+1)*B), B = ex->block
 * (NCD__BLOCK): its reader reads from one byte before (to see whether a
 * line starts at the block's first byte) to NCD_LOG_MAX_LINE + 1 bytes past
 * its end (the rest of its last line; the part of a line past
 * NCD_LOG_MAX_LINE is ignored anyway).
 *
 * Every thread reads and scans blocks, in order of k, into free slots (up
 * to SLOTS_PER_THREAD blocks per thread ahead of the applied ones, so a
 * thread on a slower or busier core does not hold the others back).  The
 * calling thread alone applies them, in order of k, whenever the next one
 * is ready, and scans otherwise: the scan's state (processes, matches)
 * stays in one core's cache.
 */
#define SLOTS_PER_THREAD 3
#define READ_TAIL 2048 /* bytes read past a block for its last line */
/* a block's kept lines, each padded to 8 bytes (blocks of lines shorter
 * than 8 bytes run out: the apply step scans the rest) */
#define ARENA_BYTES(B) (2 * (size_t)(B) + NCD_LOG_MAX_LINE + 16)

/*
 * A kept line as the scanning thread hands it over: 72 bytes instead of
 * the 184 of struct ncd__lscan (the calling thread reads every byte of it
 * from another core's cache or from memory), the fields of its
 * ncd_log_line as offsets into the line's bytes in the block's arena.
 */
struct lrec {
    uint32_t at;   /* the line's bytes: arena + at (the parse's scratch) */
    uint32_t line; /* index of the line in its block */
    int32_t rule;  /* rule index or -1 */
    uint32_t pat;  /* its pattern, UINT32_MAX: a subsystem rule of files: */
    uint16_t text_off, text_len, msg_off, msg_len;
    uint16_t host_off, host_len, src_off, src_len; /* _off 0xffff: none */
    int32_t src_line, rank, dev;
    uint8_t level, nobs; /* nobs uint32_t pattern indices follow the
                          * line's bytes, at the next 8-byte boundary */
    uint16_t obs_off;    /* their offset from arena + at */
    int64_t pid, tid;
    double ts;
};
_Static_assert(sizeof(struct lrec) == 72,
               "streamed 8 bytes at a time, no padding (pack_line)");
/*
 * A record with rule LREC_INERT stands for a run of lines in a row of the
 * block's kept lines, all of one process, that only count and mark the
 * process's last line (ncd__facts_inert(), no rule, no known bug): most of
 * NCCL's init output (topology dumps, "Ring 00 : 0 1 2 3", tuning tables)
 * and its COLL lines.  Only the host name's bytes go to the arena (at),
 * then: line: the run's last line; pat: its lines; src_line: how many of
 * them are INFO; level: 1 when one of them had "opCount"; pid; host_len.
 * The apply step does for the run what it does for each of its lines,
 * once (lines_apply_inert()); the lines' text never crosses cores.
 */
#define LREC_INERT (-2)
#define RUN_HOST_MAX 64 /* longer host names: a record per line */

struct slot {
    _Alignas(128) size_t k; /* its block */
    int state;              /* S_FREE, S_SCANNING, S_READY */
    char *buf;              /* the block's bytes, `got` of them */
    size_t got;
    char *arena;            /* normalised text of the lines kept */
    struct lrec *ev;
    size_t nev, capev;
    uint32_t nlines;        /* lines starting in the block, scanned */
    const char *first;      /* the first of them in buf */
    const char *lim;        /* lines start before this */
    size_t from;            /* the file offset of buf[0] */
    int owner;              /* the thread that scans into it, -1 any */
    int err;                /* errno of its read */
    int oom;                /* the lines from nlines on were not scanned */
};
enum { S_FREE, S_SCANNING, S_READY };

struct par {
    struct ncd_explain *ex;
    int fd;
    size_t size, nblocks;
    struct slot *slots;
    size_t nslots;
    pthread_mutex_t lock;
    pthread_cond_t cv;
    size_t next_scan;  /* next block to read and scan */
    size_t next_apply; /* next block to apply */
    int done;          /* the caller stopped (all applied, or a read failed) */
};

/* A scanning thread's own matcher, on cache lines of its own (it changes
 * on every line). */
struct scanner {
    _Alignas(128) struct par *P;
    int id; /* 0: the calling thread */
    struct ncd__matcher m;
    char *scratch; /* NCD_LOG_MAX_LINE + 8 bytes: the line being scanned */
};

/* The record of line `line` of a block, scanned into `ls` (its fields
 * pointing into `scratch`), whose bytes go to arena + at, its known bugs'
 * patterns to arena + at + obs_off. */
static void pack_line(struct lrec *r, const struct ncd__lscan *ls,
                      const char *scratch, uint32_t at, uint32_t line,
                      uint16_t obs_off)
{
    const struct ncd_log_line *ll = &ls->ll;
    r->at = at; /* every field is set: the record has no padding */
    r->line = line;
    r->rule = (int32_t)ls->rule;
    r->pat = ls->pat == SIZE_MAX ? UINT32_MAX : (uint32_t)ls->pat;
    r->text_off = (uint16_t)(ll->text - scratch);
    r->text_len = (uint16_t)ll->text_len;
    r->msg_off = (uint16_t)(ll->msg - scratch);
    r->msg_len = (uint16_t)ll->msg_len;
    r->host_off = ll->host ? (uint16_t)(ll->host - scratch) : 0xffff;
    r->host_len = (uint16_t)ll->host_len;
    r->src_off = ll->src ? (uint16_t)(ll->src - scratch) : 0xffff;
    r->src_len = (uint16_t)ll->src_len;
    r->src_line = ll->src_line;
    r->rank = ll->rank;
    r->dev = ll->dev;
    r->level = (uint8_t)ll->level;
    r->nobs = (uint8_t)ls->nobs;
    r->obs_off = obs_off;
    r->pid = ll->pid;
    r->tid = ll->tid;
    r->ts = ll->ts;
}

/* The line of record r, whose bytes are at arena + r->at. */
static void unpack_line(struct ncd__lscan *ls, const struct lrec *r,
                        const char *arena)
{
    const char *b = arena + r->at;
    struct ncd_log_line *ll = &ls->ll;
    ll->text = b + r->text_off;
    ll->text_len = r->text_len;
    ll->msg = b + r->msg_off;
    ll->msg_len = r->msg_len;
    ll->level = (enum ncd_log_level)r->level;
    ll->host = r->host_off == 0xffff ? NULL : b + r->host_off;
    ll->host_len = r->host_len;
    ll->pid = (long)r->pid;
    ll->tid = (long)r->tid;
    ll->dev = r->dev;
    ll->src = r->src_off == 0xffff ? NULL : b + r->src_off;
    ll->src_len = r->src_len;
    ll->src_line = r->src_line;
    ll->rank = r->rank;
    ll->ts = r->ts;
    ls->rule = r->rule;
    ls->pat = r->pat == UINT32_MAX ? SIZE_MAX : r->pat;
    ls->line = r->line;
    ls->nobs = r->nobs;
    if (r->nobs)
        memcpy(ls->obs, b + r->obs_off, r->nobs * sizeof ls->obs[0]);
}

/*
 * What a scanning thread keeps for the apply step goes out with
 * non-temporal stores, 8 bytes at a time (`to` 8-byte aligned): the
 * calling thread has read those lines of the slot the last time round, so
 * plain stores must first take each line back from its core, and a load
 * that cannot be forwarded from a store (the prefilter's 4-byte loads
 * across two of the scratch copy's 16-byte stores) waits for all of them.
 * Measured with 2 threads on the init-shaped log: the second thread
 * scanned a block in 3x the time of the first.  stream_fence() orders
 * them before the slot is handed over.
 */
#if defined(__SSE2__)
static inline void stream_words(void *to, const void *from, size_t words,
                                int nt)
{
    if (!nt) {
        memcpy(to, from, 8 * words);
        return;
    }
    long long *d = to;
    const char *f = from;
    for (size_t i = 0; i < words; i++) {
        long long w;
        memcpy(&w, f + 8 * i, 8);
        _mm_stream_si64(d + i, w);
    }
}
static inline void stream_fence(void)
{
    _mm_sfence();
}
#else
static inline void stream_words(void *to, const void *from, size_t words,
                                int nt)
{
    (void)nt;
    memcpy(to, from, 8 * words);
}
static inline void stream_fence(void)
{
}
#endif

/* The open run of inert lines of a block scan (LREC_INERT): its record,
 * to go to ev[idx], and its host name NUL-padded to whole words, as it
 * went to the arena. */
struct inert_run {
    int on;
    size_t idx;
    struct lrec r;
    uint64_t host[RUN_HOST_MAX / 8 + 1];
};

/* Hands the open run's record over (stream_words()), if one is open. */
static void run_close(struct inert_run *run, struct lrec *ev, int nt)
{
    if (run->on)
        stream_words(&ev[run->idx], &run->r, sizeof run->r / 8, nt);
    run->on = 0;
}

/* pread until `len` bytes or end of file; the count or -errno. */
static long read_at(int fd, char *buf, size_t len, size_t off)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = pread(fd, buf + got, len - got, (off_t)(off + got));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            break;
        got += (size_t)n;
    }
    return (long)got;
}

/* Reads block s->k and scans its lines into s (no lock held).  Lines are
 * those of ncd_explain_feed(): split at '\n', the file's last one may lack
 * it. */
static void scan_block(struct par *P, struct scanner *t, struct slot *s)
{
    const struct ncd_rules *rules = P->ex->rules;
    size_t B = P->ex->block, k = s->k;
    size_t start = k * B;
    size_t from = k ? start - 1 : 0;
    s->from = from;
    size_t to = start + B + NCD_LOG_MAX_LINE + 1;
    if (to > P->size)
        to = P->size;
    /* the block and READ_TAIL bytes, then the rest up to `to` only when
     * the block's last line goes on past them (every byte read is copied
     * by the kernel: 8 KiB more per block was ~3% more copying) */
    size_t want = start + B + READ_TAIL < to ? start + B + READ_TAIL - from
                                             : to - from;
    long got = read_at(P->fd, s->buf, want, from);
    if (got == (long)want && from + want < to &&
        !memchr(s->buf + (start + B - 1 - from), '\n',
                want - (start + B - 1 - from))) {
        long more =
            read_at(P->fd, s->buf + want, to - from - want, from + want);
        got = more < 0 ? more : got + more;
        want = to - from;
    }
    s->err = got < 0 ? (int)-got : (size_t)got < want ? EIO : 0;
    s->got = got > 0 ? (size_t)got : 0;
    s->nev = s->nlines = 0;
    s->oom = 0;
    const char *b = s->buf, *e = s->buf + s->got, *p = b;
    s->lim = s->buf + (start + B - from);
    if (k) { /* the first line starts after the first '\n' from start-1 */
        const char *nl = memchr(b, '\n', (size_t)(e - b));
        p = nl ? nl + 1 : e;
    }
    s->first = p;
    size_t nev = 0, capev = s->capev, used = 0, cap = ARENA_BYTES(B);
    struct lrec *ev = s->ev;
    uint32_t nlines = 0;
    const int nt = t->id != 0;
    struct inert_run run;
    run.on = 0;
    struct nl_scan ns;
    nl_init(&ns, p, (size_t)(e - p));
    while (!s->err && p < s->lim && p < e) {
        const char *nl = nl_next(&ns, p);
        /* without '\n' here: the file's last line, or one longer than
         * NCD_LOG_MAX_LINE */
        size_t len = (size_t)((nl ? nl : e) - p);
        if (len > NCD_LOG_MAX_LINE) {
            s->oom = 1; /* rare: apply reads it and the rest of the block */
            break;
        }
        if (nev == capev) {
            size_t nc = capev ? capev * 2 : 4096;
            struct lrec *nv = realloc(ev, nc * sizeof *nv);
            if (!nv) {
                s->oom = 1;
                break;
            }
            s->ev = ev = nv;
            s->capev = capev = nc;
        }
        struct ncd__lscan ls;
        int kept = line_scan(rules, &t->m, p, len, t->scratch,
                             NCD_LOG_MAX_LINE + 1, &ls),
            inert = 0;
        if (kept && ls.rule < 0 && ls.nobs == 0 &&
            ls.ll.host_len <= RUN_HOST_MAX &&
            (inert = ncd__facts_inert(&ls.ll)) != 0) {
            const char *h = ls.ll.host ? ls.ll.host : "";
            size_t hl = ls.ll.host ? ls.ll.host_len : 0;
            int info = ls.ll.level == NCD_LOG_INFO;
            if (run.on && run.r.pid == ls.ll.pid && run.r.host_len == hl &&
                memcmp(run.host, h, hl) == 0) {
                run.r.line = nlines;
                run.r.pat++;
                run.r.src_line += info;
                run.r.level |= inert == NCD__INERT_OPCOUNT;
            } else {
                run_close(&run, ev, nt);
                size_t at = (used + 7) & ~(size_t)7, words = hl / 8 + 1;
                if (at + words * 8 > cap || at > UINT32_MAX) {
                    s->oom = 1;
                    break;
                }
                memset(run.host, 0, sizeof run.host);
                memcpy(run.host, h, hl);
                stream_words(s->arena + at, run.host, words, nt);
                used = at + words * 8;
                memset(&run.r, 0, sizeof run.r);
                run.r.at = (uint32_t)at;
                run.r.line = nlines;
                run.r.rule = LREC_INERT;
                run.r.pat = 1;
                run.r.src_line = info;
                run.r.level = inert == NCD__INERT_OPCOUNT;
                run.r.host_len = (uint16_t)hl;
                run.r.src_off = 0xffff;
                run.r.pid = ls.ll.pid;
                run.idx = nev++;
                run.on = 1;
            }
        } else if (kept) {
            run_close(&run, ev, nt);
            /* the line's normalised bytes (from `scratch` up to the NUL
             * after the text) and its known bugs' patterns at 8-byte
             * boundaries of the arena, and its record */
            size_t n = (size_t)(ls.ll.text + ls.ll.text_len - t->scratch) + 1;
            size_t at = (used + 7) & ~(size_t)7, words = (n + 7) / 8;
            size_t owords = (ls.nobs + 1) / 2;
            if (at + (words + owords) * 8 > cap || at > UINT32_MAX) {
                s->oom = 1; /* lines of a few bytes: apply scans them */
                break;
            }
            struct lrec r;
            pack_line(&r, &ls, t->scratch, (uint32_t)at, nlines,
                      (uint16_t)(words * 8));
            stream_words(s->arena + at, t->scratch, words, nt);
            if (ls.nobs) {
                uint32_t o[NCD__MAX_OBS_PER_LINE + 1] = {0};
                memcpy(o, ls.obs, ls.nobs * sizeof o[0]);
                stream_words(s->arena + at + words * 8, o, owords, nt);
            }
            stream_words(&ev[nev], &r, sizeof r / 8, nt);
            used = at + (words + owords) * 8;
            nev++;
        }
        nlines++;
        if (!nl)
            break;
        p = nl + 1;
    }
    run_close(&run, ev, nt);
    stream_fence();
    s->nev = nev;
    s->nlines = nlines;
}

/* The rest of a line longer than NCD_LOG_MAX_LINE that goes on past block
 * s's bytes: read from the file at `off` up to its '\n' or the end of the
 * file, into tail_add() (the calling thread only).  Returns a read error,
 * 0 when none. */
static int read_long_rest(struct par *P, size_t off)
{
    if (off >= P->size)
        return 0;
    char *buf = malloc(65536);
    if (!buf)
        return ENOMEM;
    int err = 0;
    while (off < P->size) {
        size_t want = P->size - off < 65536 ? P->size - off : 65536;
        long got = read_at(P->fd, buf, want, off);
        if (got <= 0) {
            err = got < 0 ? (int)-got : EIO;
            break;
        }
        const char *nl = memchr(buf, '\n', (size_t)got);
        tail_add(P->ex, buf, nl ? (size_t)(nl - buf) : (size_t)got);
        if (nl)
            break;
        off += (size_t)got;
    }
    free(buf);
    return err;
}

/* Applies a scanned block to the scan's state (the calling thread only).
 * Returns its read error, 0 when none. */
static int apply_block(struct par *P, struct slot *s)
{
    struct ncd_explain *ex = P->ex;
    uint64_t line0 = ex->lineno, seq0 = ex->seq;
    for (size_t i = 0; i < s->nev; i++) {
        const struct lrec *r = &s->ev[i];
        if (r->rule == LREC_INERT) {
            struct ncd_log_line ll;
            memset(&ll, 0, sizeof ll);
            ll.host = s->arena + r->at;
            ll.host_len = r->host_len;
            ll.pid = (long)r->pid;
            ex->lineno = line0 + r->line + 1;
            ex->seq = seq0 + r->line + 1;
            lines_apply_inert(ex, &ll, r->pat, (uint32_t)r->src_line,
                              r->level);
            continue;
        }
        struct ncd__lscan ls;
        unpack_line(&ls, r, s->arena);
        ex->lineno = line0 + ls.line + 1;
        ex->seq = seq0 + ls.line + 1;
        line_apply(ex, &ls);
    }
    ex->lineno = line0 + s->nlines;
    ex->seq = seq0 + s->nlines;
    ex->lines += s->nlines;
    int err = s->err;
    if (s->oom) {
        /* no room to keep the rest, or a line longer than NCD_LOG_MAX_LINE
         * (its head and the piece of its rest, as ncd_explain_feed() reads
         * them): scan the rest here, in order */
        const char *p = s->first, *e = s->buf + s->got;
        for (uint32_t i = 0; i < s->nlines; i++)
            p = (const char *)memchr(p, '\n', (size_t)(e - p)) + 1;
        while (p < s->lim && p < e) {
            const char *nl = memchr(p, '\n', (size_t)(e - p));
            size_t len = (size_t)((nl ? nl : e) - p);
            process_line(ex, p, len);
            if (len > NCD_LOG_MAX_LINE) {
                tail_add(ex, p + NCD_LOG_MAX_LINE, len - NCD_LOG_MAX_LINE);
                if (!nl && !err) /* it goes on past the block's bytes */
                    err = read_long_rest(P, s->from + s->got);
                tail_done(ex);
            }
            if (!nl)
                break;
            p = nl + 1;
        }
    }
    return err;
}

/* A free slot for the next block to scan, NULL when there is none or no
 * block is left (lock held). */
static struct slot *take_slot(struct par *P, int id)
{
    if (P->done || P->next_scan >= P->nblocks)
        return NULL;
    for (size_t i = 0; i < P->nslots; i++)
        if (P->slots[i].state == S_FREE &&
            (P->slots[i].owner == id || P->slots[i].owner < 0)) {
            struct slot *s = &P->slots[i];
            s->state = S_SCANNING;
            s->k = P->next_scan++;
            return s;
        }
    return NULL;
}

/* The slot holding block k once scanned, else NULL (lock held). */
static struct slot *ready_slot(struct par *P, size_t k)
{
    for (size_t i = 0; i < P->nslots; i++)
        if (P->slots[i].state == S_READY && P->slots[i].k == k)
            return &P->slots[i];
    return NULL;
}

static void *scan_thread(void *arg)
{
    struct scanner *t = arg;
    struct par *P = t->P;
    pthread_mutex_lock(&P->lock);
    for (;;) {
        if (P->done || P->next_scan >= P->nblocks)
            break;
        struct slot *s = take_slot(P, t->id);
        if (!s) {
            pthread_cond_wait(&P->cv, &P->lock);
            continue;
        }
        pthread_mutex_unlock(&P->lock);
        scan_block(P, t, s);
        pthread_mutex_lock(&P->lock);
        s->state = S_READY;
        pthread_cond_broadcast(&P->cv);
    }
    pthread_mutex_unlock(&P->lock);
    return NULL;
}

/* The calling thread: applies the next block when it is ready, scans one
 * otherwise.  Returns the first read error (0 when none). */
static int apply_loop(struct par *P, struct scanner *t)
{
    int err = 0;
    pthread_mutex_lock(&P->lock);
    while (P->next_apply < P->nblocks) {
        struct slot *s = ready_slot(P, P->next_apply);
        if (s) {
            pthread_mutex_unlock(&P->lock);
            err = apply_block(P, s);
            pthread_mutex_lock(&P->lock);
            s->state = S_FREE;
            P->next_apply++;
            pthread_cond_broadcast(&P->cv);
            if (err)
                break; /* the lines after a failed read are not used */
            continue;
        }
        if ((s = take_slot(P, t->id))) {
            pthread_mutex_unlock(&P->lock);
            scan_block(P, t, s);
            pthread_mutex_lock(&P->lock);
            s->state = S_READY;
            continue;
        }
        pthread_cond_wait(&P->cv, &P->lock);
    }
    P->done = 1;
    pthread_cond_broadcast(&P->cv);
    pthread_mutex_unlock(&P->lock);
    return err;
}

static int scanner_init(struct scanner *t, struct par *P, int id)
{
    t->P = P;
    t->id = id;
    t->scratch = malloc(NCD_LOG_MAX_LINE + 8); /* + stream_words()'s tail */
    if (!t->scratch || ncd__matcher_init(&t->m, P->ex->rules) < 0) {
        free(t->scratch);
        return NCD_ENOMEM;
    }
    return 0;
}

static void scanner_release(struct scanner *t)
{
    ncd__matcher_release(&t->m);
    free(t->scratch);
}

static void slots_free(struct par *P)
{
    for (size_t i = 0; i < P->nslots; i++) {
        free(P->slots[i].buf);
        free(P->slots[i].arena);
        free(P->slots[i].ev);
    }
    free(P->slots);
}

int ncd__explain_feed_fd(struct ncd_explain *ex, int fd, size_t size)
{
    struct par P = {.ex = ex, .fd = fd, .size = size};
    P.nblocks = (size + ex->block - 1) / ex->block;
    int nt = ex->threads;
    if ((size_t)nt > P.nblocks)
        nt = P.nblocks ? (int)P.nblocks : 1;
    struct scanner t[NCD_EXPLAIN_MAX_THREADS];
    pthread_t tid[NCD_EXPLAIN_MAX_THREADS];
    P.nslots = (size_t)nt * SLOTS_PER_THREAD;
    P.slots = aligned_alloc(_Alignof(struct slot), P.nslots * sizeof *P.slots);
    if (!P.slots)
        return NCD_ENOMEM;
    memset(P.slots, 0, P.nslots * sizeof *P.slots);
    size_t ok = 0;
    for (; ok < P.nslots; ok++) {
        struct slot *s = &P.slots[ok];
        s->buf = calloc(1, ex->block + NCD_LOG_MAX_LINE + 2);
        s->arena = calloc(1, ARENA_BYTES(ex->block));
        if (!s->buf || !s->arena)
            break;
    }
    /* fewer slots than wanted still work; none does not */
    if (ok < 2 || scanner_init(&t[0], &P, 0) < 0) {
        slots_free(&P);
        return NCD_ENOMEM;
    }
    /* each thread reads and scans into slots of its own, so a slot's
     * buffers are written by one core only (a slot written by one thread
     * after another had read it waited for those cache lines: the second
     * thread scanned at half the first one's speed); with fewer slots
     * than asked for, any thread takes any */
    for (size_t i = 0; i < ok; i++)
        P.slots[i].owner = ok == P.nslots ? (int)(i / SLOTS_PER_THREAD) : -1;
    P.nslots = ok;
    pthread_mutex_init(&P.lock, NULL);
    pthread_cond_init(&P.cv, NULL);
    int started = 0;
    for (int i = 1; i < nt; i++) {
        if (scanner_init(&t[i], &P, i) < 0)
            break;
        if (pthread_create(&tid[i], NULL, scan_thread, &t[i]) != 0) {
            scanner_release(&t[i]);
            break; /* fewer threads: the same result */
        }
        started = i;
    }
    int err = apply_loop(&P, &t[0]);
    for (int i = 1; i <= started; i++) {
        pthread_join(tid[i], NULL);
        scanner_release(&t[i]);
    }
    scanner_release(&t[0]);
    pthread_mutex_destroy(&P.lock);
    pthread_cond_destroy(&P.cv);
    slots_free(&P);
    ex->bytes += err ? P.next_apply * ex->block : size;
    return err ? -err : 0;
}
