/* SPDX-License-Identifier: MIT */
/*
 * Internals of the rule set, shared by the explain modules.
 *
 * The modules of src/lib/explain/ (public API: include/ncd/explain.h):
 *   line.c          one log line -> header + message (JSON wrappers,
 *                   launcher/collector prefixes and cut headers as tables
 *                   of shapes, time stamps, NCCL's header formats 1.x..)
 *   rules.c         rules/NAME.yaml -> rules (through core/yaml.h)
 *   prefilter.c     literal prefilter + PCRE2 matcher over the rule set
 *   rules_check.c   the rules' self-test and their POSIX ERE form
 *   explain.c       a scan: chunks -> lines -> facts + per-rule matches;
 *                   a line's pure step (parse + match) and its ordered
 *                   apply; the threaded block reader
 *   facts.c         facts of NCCL INFO / nccl-tests lines, per process
 *   facts_report.c  the facts as JSON and as `--facts` text
 *   reason.c        matches + conditions -> ranked findings
 *   cond_*.c        the conditions of derived rules, by family (cond.h)
 *   input.c         files, gzip, directories, stdin, rules directories
 *   knownbugs.c     data/nccl-known-bugs.yaml (public: ncd/knownbugs.h);
 *                   its signatures join the rule set as observer patterns
 *   iberrno.c       data/ib-verbs-errors.yaml (errno of IB verbs calls)
 * Headers: internal.h (this) <- session.h (scan state) <- reason.h
 * (reasoner); cond.h (the condition list) stands alone.
 */
#ifndef NCD_EXPLAIN_INTERNAL_H
#define NCD_EXPLAIN_INTERNAL_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "ncd/explain.h"
#include "ncd/knownbugs.h"

/* ---- string search ---- */

/*
 * First occurrence of nd[0, nl) in h[0, hl), or NULL.  With SSE2, 16
 * candidate positions at a time whose first two bytes match the needle's,
 * then memcmp; else (and for the last positions) memchr on the needle's
 * first non-blank byte, then memcmp.  Both cheaper than glibc's memmem on
 * one log message and a short literal (memmem's set-up dominated the fact
 * extractor's profile; memchr stopped at every 'o' of a line when looking
 * for "opCount").  Reads no byte outside h[0, hl).  NCD__FIND takes a
 * string literal.
 */
static inline const char *ncd__find(const char *h, size_t hl, const char *nd,
                                    size_t nl)
{
    if (nl == 0)
        return h;
    if (hl < nl)
        return NULL;
#if defined(__SSE2__)
    if (nl >= 2) {
        /* positions i with h[i] == nd[0] and h[i + 1] == nd[1]; a block
         * of 16 reads h[i .. i + 16] */
        const __m128i c0 = _mm_set1_epi8(nd[0]), c1 = _mm_set1_epi8(nd[1]);
        size_t i = 0;
        for (; i + 17 <= hl && i + nl <= hl; i += 16) {
            __m128i b0 = _mm_loadu_si128((const __m128i *)(const void *)(h + i));
            __m128i b1 =
                _mm_loadu_si128((const __m128i *)(const void *)(h + i + 1));
            unsigned m = (unsigned)_mm_movemask_epi8(
                _mm_and_si128(_mm_cmpeq_epi8(b0, c0), _mm_cmpeq_epi8(b1, c1)));
            while (m) {
                size_t j = i + (size_t)__builtin_ctz(m);
                if (j + nl > hl)
                    return NULL;
                if (memcmp(h + j + 2, nd + 2, nl - 2) == 0)
                    return h + j;
                m &= m - 1;
            }
        }
        for (; i + nl <= hl; i++)
            if (h[i] == nd[0] && memcmp(h + i + 1, nd + 1, nl - 1) == 0)
                return h + i;
        return NULL;
    }
#endif
    size_t a = 0;
    while (a + 1 < nl && nd[a] == ' ')
        a++;
    const char *p = h + a, *last = h + (hl - nl) + a;
    while (p <= last) {
        p = (const char *)memchr(p, nd[a], (size_t)(last - p) + 1);
        if (!p)
            return NULL;
        if (memcmp(p - a, nd, nl) == 0)
            return p - a;
        p++;
    }
    return NULL;
}
#define NCD__FIND(h, hl, lit) ncd__find((h), (hl), (lit), sizeof(lit) - 1)

/* ---- line.c ---- */
size_t ncd__parse_timestamp(const char *s, size_t n, double *ts);
/* Decimal s[0, n) (1..12 digits) into *out: 0, or -1 when not one. */
int ncd__parse_uint(const char *s, size_t n, long *out);

/* ---- line_wrap.c: the layers outside NCCL's header (see line.c) ---- */
/* Drops ANSI escapes and CRs; NULs and line feeds become blanks; `out`
 * holds len bytes.  Returns the cleaned length. */
size_t ncd__line_clean_slow(const char *in, size_t len, char *out);
/* The raw line into `out`, cleaned as ncd__line_clean_slow(); *same is
 * set to 1 when `out` holds the raw bytes unchanged, else 0. */
size_t ncd__line_clean_copy(const char *in, size_t len, char *out, int *same);
/* A JSON-wrapped line's message decoded into `out` (its time stamp into
 * *ts when it has one): the message length, 0 when not such a line. */
size_t ncd__line_json_unwrap(const char *s, size_t n, char *out, double *ts);
/* Prefix shape `pat` at the start of s: its length (rank and time stamp it
 * carries into *rank / *ts), 0 when it does not match. */
size_t ncd__line_shape_match(const char *pat, const char *s, size_t n,
                             int *rank, double *ts);
/* Whether shape `sh` can match text starting with c (a cheap first test). */
int ncd__line_first_ok(const char *sh, char c);
/* One launcher / collector prefix at the start of s (after blanks): its
 * length, 0 when none; *shape (when not NULL) the index of the shape in
 * line_wrap.c's table, NCD__SHAPE_OMPI or NCD__SHAPE_TORCH for the two
 * read by dedicated code (their result depends on the bytes matched and
 * the one after only). */
size_t ncd__line_strip_one(const char *s, size_t n, int *rank, double *ts,
                           int *shape);
#define NCD__SHAPE_OMPI 0  /* "[%N,%R]<%A>:%_" */
#define NCD__SHAPE_TORCH 2 /* "[%A%R]:%_" */

/*
 * Headers of lines parsed before (line.c): a line that starts with the
 * same bytes as one of them up to and including the blank after the level
 * word, and goes on past it, has the same header, launcher prefix and
 * message offset (the parse reads nothing past that blank on the paths
 * kept: see memo_keep).  NCD__MEMO_SLOTS of them, direct-mapped by the
 * line's first 16 bytes (launcher prefix, host, pid: one process), so the
 * lines of up to a few hundred processes, in runs or interleaved, skip the
 * prefix shapes and the header parse.  Per scanning thread.
 */
#define NCD__MEMO_SLOTS 1024
#define NCD__MEMO_KEY 128
struct ncd__hdr_memo {
    uint16_t plen;  /* key bytes (the message's offset); 0: empty */
    uint16_t k;     /* launcher prefix bytes (shapes[0] or [2]), 0: none */
    uint16_t host_off, host_len, src_off, src_len;
    int src_line, dev, rank;
    enum ncd_log_level level;
    long pid, tid;
    uint16_t pf_from; /* ncd__prefilter_quiet() of the header in text
                       * (the matcher's rules); 0xffff: not known yet */
    char key[NCD__MEMO_KEY];
};

/* ncd_log_parse() with a memo of headers (NCD__MEMO_SLOTS of them, zeroed
 * at first; NULL: none). */
int ncd__log_parse_memo(const char *line, size_t len, char *scratch,
                        size_t scratch_sz, struct ncd_log_line *o,
                        struct ncd__hdr_memo *mm, struct ncd__hdr_memo **used,
                        const char **raw);
/* *used: the memo slot holding this line's header (o->text starts with
 * its key[k, plen)), NULL when none.  *raw (raw may be NULL): `line` when
 * the line needed no cleaning, so that raw + (o->text - scratch) holds
 * o->text's bytes too, where no recent store lies (matching there does
 * not wait for the copy's stores); else scratch. */
/* Replaces control characters and invalid UTF-8 in s[0, n) by '?', so
 * evidence prints safely and JSON (jansson wants UTF-8) keeps it. */
void ncd__sanitize(char *s, size_t n);

/* ---- rules.c ---- */
#define NCD__PF_BITS 16 /* prefilter bitmap: 2^16 bits = 8 KiB, fits L1 */

struct ncd__pattern {
    char *src;
    pcre2_code *re; /* user rules: compiled at load (errors show then);
                       built-in: NULL until the first use.  Read it only
                       through ncd__pattern_code() */
    size_t rule;    /* owning rule index */
    /* an observer pattern (a known bug's signature): it never claims a
     * line, its matches are reported beside the claiming rule's */
    int bug;      /* index in rules->bugs, -1 for an ordinary pattern */
    int obs_slot; /* index among the observer patterns */
};

struct ncd__lit {
    char *s;
    size_t len;
    uint32_t gram; /* the 4 bytes used by the prefilter */
    size_t off;    /* offset of gram inside s */
    size_t pat;    /* pattern index */
};

struct ncd__gram {
    uint32_t gram;
    uint32_t lit;
    uint32_t off; /* offset of this window in the literal */
};

struct ncd__rule {
    char *id, *title, *cause, *fix, *when, *file, *versions, *source;
    int line;
    enum ncd_category cat;
    enum ncd_severity sev;
    enum ncd_rule_role role;
    int priority;
    size_t pat0, npats; /* range in rules->pats */
    char **env_names, **env_vals;
    size_t nenv;
    char **ex_match, **ex_nomatch;
    size_t n_ex_match, n_ex_nomatch;
    char **absorbs;
    size_t nabsorbs;
    char **files; /* `files:` NCCL source globs (src/-relative), or NULL */
    size_t nfiles;
    int cond; /* enum ncd__cond named by `when`, -1 for a pattern rule */
    int vmin, vmax; /* version codes M*10000+m*100+p; vmax exclusive; 0 open */
};

struct ncd_rules {
    struct ncd__rule *v;
    size_t n, cap;
    struct ncd__pattern *pats;
    size_t npats, capp;
    struct ncd__lit *lits;
    size_t nlits, capl;
    /* prefilter */
    uint64_t bitmap[(1u << NCD__PF_BITS) / 64];
    uint32_t *bstart; /* 2^BITS+1 offsets into bitems */
    uint32_t *bitems; /* indexes into grams */
    size_t *pat_order; /* pattern indexes sorted by rule priority desc */
    size_t *pat_rank;  /* inverse of pat_order */
    uint32_t max_match_captures;
    unsigned stride; /* scan every stride-th byte; each literal has stride
                        consecutive windows in the bitmap */
    struct ncd__gram *grams; /* (gram, literal, offset), bucketed */
    size_t ngrams;
    /* subsystem rules: `files:` and neither patterns nor `when`, by
     * priority (highest first); they claim WARN lines of those files */
    size_t *file_rules;
    size_t nfile_rules;
    /* known bugs whose signatures are observer patterns of the rule with
     * `when: known-bug` (attached by ncd_rules_load_builtin) */
    struct ncd_known_bugs bugs;
    size_t nobs; /* observer patterns */
    int prefilter_stale; /* rules added since the last ncd__prefilter_build */
    struct ncd__jit *jit; /* lazy JIT state (mutable in a read-only set) */
};

static inline uint32_t ncd__gram_hash(uint32_t g)
{
    return (g * 0x9E3779B1u) >> (32 - NCD__PF_BITS);
}

/* ---- knownbugs.c ---- */
/* Frees the strings of one bug (not the bug itself). */
void ncd__known_bug_free(struct ncd_known_bug *b);

/* ---- prefilter.c ---- */

/*
 * Splits a pattern at its top-level '|' and returns, per alternative, its
 * longest mandatory literal (malloc'ed, in *lits_out).  Returns the number
 * of alternatives, or -1 when one has no literal of >= 4 bytes.
 */
int ncd__literals_extract(const char *pat, char ***lits_out);

/* Adds literal `s` (taken over) of pattern `pat`.  0 or NCD_ENOMEM. */
int ncd__literal_add(struct ncd_rules *r, char *s, size_t pat);

/* Rebuilds the prefilter bitmap, buckets and the pattern priority order
 * after rules were added or rolled back.  0 or NCD_ENOMEM. */
int ncd__prefilter_build(struct ncd_rules *r);

/*
 * Pattern p's code, compiled and JIT-compiled on first use; NULL when it
 * does not compile (the self-test reports it; it never matches).  A loaded
 * rule set is shared read-only by scans in several threads: the first
 * caller compiles under a lock, the others wait for it.  Compiling all
 * patterns at load cost ~20 ms of start-up that a log touching a handful
 * of rules never repays.
 */
pcre2_code *ncd__pattern_code(const struct ncd_rules *r, size_t p);

/* PCRE2 compile of a rule pattern (bytes, as grep -E in the C locale). */
pcre2_code *ncd__pattern_compile(const char *src, int *err, PCRE2_SIZE *off);

/* An upper bound of the capturing groups of a pattern. */
uint32_t ncd__pattern_groups(const char *src);

/* Match scratch for ncd__rules_match(). */
#define NCD__MAX_OBS_PER_LINE 8
struct ncd__matcher {
    pcre2_match_data *md;
    pcre2_match_data *md_obs;      /* observers' (md keeps the claim's) */
    size_t obs[NCD__MAX_OBS_PER_LINE]; /* observer patterns that matched */
    size_t nobs;
    uint32_t *cand;      /* candidate pattern ranks */
    size_t ncand;
    unsigned char *seen; /* per pattern rank */
    struct ncd__hdr_memo *memo; /* NCD__MEMO_SLOTS headers (line.c) */
};

int ncd__matcher_init(struct ncd__matcher *m, const struct ncd_rules *r);
void ncd__matcher_release(struct ncd__matcher *m);

/*
 * Best rule for a normalised line: returns the rule index or -1.
 * `version` (0 unknown) filters rules by their NCCL version range.  `src`
 * (src_len bytes, NULL for none) is the NCCL source file a WARN names
 * ("transport/net_ib.cc"): rules with `files:` apply only to WARNs of those
 * files, and subsystem rules (files, no patterns) claim such a WARN unless
 * a pattern rule of at least their priority does.  On a pattern match
 * m->md holds the match of pattern *pat; a subsystem rule sets *pat to
 * SIZE_MAX.
 */
long ncd__rules_match(const struct ncd_rules *r, struct ncd__matcher *m,
                      const char *text, size_t len, int version,
                      const char *src, size_t src_len, size_t *pat);
/* ncd__rules_match() whose prefilter starts at text[from]: `from` as
 * ncd__prefilter_quiet() gave it for the start of text, so the windows
 * skipped have no bitmap hit. */
long ncd__rules_match_from(const struct ncd_rules *r, struct ncd__matcher *m,
                           const char *text, size_t len, int version,
                           const char *src, size_t src_len, size_t *pat,
                           size_t from);
/* The first window position of the prefilter's scan of text (a multiple
 * of its stride) whose 4 bytes are not all in text[0, n) or hit the
 * bitmap: a line starting with text[0, n) can skip the windows before it,
 * they are no candidate's. */
size_t ncd__prefilter_quiet(const struct ncd_rules *r, const char *text,
                            size_t n);

/* Adds the known bugs in YAML text buf[0, len) to the rule set, their
 * signatures as observer patterns of the rule with `when: known-bug` (no
 * such rule: nothing to do).  0, or the loader's / a pattern's error
 * (NCD_EPARSE, NCD_EINVAL: also for an id known already, NCD_ENOMEM) with
 * the rule set unchanged.  ncd_rules_load_builtin() does it with
 * data/nccl-known-bugs.yaml when the build has one. */
int ncd__rules_attach_bugs(struct ncd_ctx *ctx, struct ncd_rules *r,
                           const char *name, const char *buf, size_t len);

/* 1 when NCCL source file src[0, len) matches one of the rule's `files:`
 * globs (fnmatch, '*' crosses '/'; a build path before "src/" is
 * ignored). */
int ncd__rule_file_match(const struct ncd__rule *rule, const char *src,
                         size_t len);

/* The highest-priority subsystem rule whose `files:` match src applying to
 * `version`, or -1. */
long ncd__file_rule(const struct ncd_rules *r, const char *src, size_t len,
                    int version);

/* ---- rules.c ---- */

/*
 * ncd_rules_load_buf() with the prefilter rebuilt only when `build` (a
 * caller loading several documents builds once at the end, when
 * r->prefilter_stale).  A failed document rolls back and rebuilds.
 * `lazy`: patterns compile on first use (built-in rules, which the test
 * suite compiles); else now, and a bad one fails the load.
 */
int ncd__rules_load_doc(struct ncd_ctx *ctx, struct ncd_rules *rules,
                        const char *name, const char *buf, size_t len,
                        int build, int lazy);
void ncd__jit_free(struct ncd__jit *j);

/* Frees a string vector of n items (NULL allowed). */
void ncd__strv_free(char **v, size_t n);

/* "2.19.3" -> 21903; 0 when not a version. */
int ncd__version_code(const char *s);
/* A version range as rules write it: "any", or tokens ">=2.19" "<2.20.1"
 * (also ">", "<=", "=="); bounds as codes, vmax exclusive, 0 open.
 * 0, or -1 when malformed. */
int ncd__versions_parse(const char *s, int *vmin, int *vmax);
/* 1 when `version` (a code; 0 = unknown, always in) is in [vmin, vmax). */
int ncd__version_in(int vmin, int vmax, int version);
int ncd__rule_applies(const struct ncd__rule *rule, int version);
long ncd__rules_find(const struct ncd_rules *r, const char *id);

#endif
