/* SPDX-License-Identifier: MIT */
/*
 * The literal prefilter and the matcher.
 *
 * Every pattern must contain a literal of >= 4 bytes in each of its
 * top-level alternatives (checked at load).  For each literal a run of
 * `stride` consecutive 4-byte windows (the run least frequent in ordinary
 * NCCL INFO output) is hashed into a bitmap of 2^16 bits.  A line is scanned
 * once, hashing only every stride-th position (stride 4 when all literals
 * have >= 7 bytes), which still meets one window of every occurrence; only a
 * bitmap hit whose window and literal compare equal makes its pattern a
 * candidate, and only candidates run the regex (PCRE2, JIT-compiled).
 * Patterns run in byte mode, as grep -E does in the C locale.
 */
#define _GNU_SOURCE
#include "explain/internal.h"

#include <fnmatch.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "ncd/error.h"

/* Lazy JIT: one flag per pattern (1 = JIT done or tried), one lock. */
struct ncd__jit {
    pthread_mutex_t lock;
    size_t n;
    atomic_uchar done[];
};

pcre2_code *ncd__pattern_compile(const char *src, int *err, PCRE2_SIZE *off)
{
    return pcre2_compile((PCRE2_SPTR)src, PCRE2_ZERO_TERMINATED,
                         0 /* bytes, like grep in the C locale */, err, off,
                         NULL);
}

uint32_t ncd__pattern_groups(const char *src)
{
    uint32_t n = 0;
    int incl = 0;
    for (const char *p = src; *p; p++) {
        if (*p == '\\') {
            if (!*++p)
                break;
        } else if (incl) {
            incl = *p != ']';
        } else if (*p == '[') {
            incl = 1;
            if (p[1] == '^')
                p++;
            if (p[1] == ']')
                p++;
        } else if (*p == '(' && (p[1] != '?' || p[2] == '<' || p[2] == 'P')) {
            n++;
        }
    }
    return n;
}

pcre2_code *ncd__pattern_code(const struct ncd_rules *r, size_t p)
{
    struct ncd__jit *j = r->jit;
    if (!j || p >= j->n ||
        atomic_load_explicit(&j->done[p], memory_order_acquire))
        return r->pats[p].re;
    pthread_mutex_lock(&j->lock);
    struct ncd__pattern *pt = &r->pats[p];
    if (!atomic_load_explicit(&j->done[p], memory_order_relaxed)) {
        if (!pt->re) {
            int err;
            PCRE2_SIZE off;
            pt->re = ncd__pattern_compile(pt->src, &err, &off);
        }
        if (pt->re)
            pcre2_jit_compile(pt->re, PCRE2_JIT_COMPLETE); /* or interpret */
        atomic_store_explicit(&j->done[p], 1, memory_order_release);
    }
    pthread_mutex_unlock(&j->lock);
    return pt->re;
}

/* (Re)sizes the lazy JIT state to the patterns; flags of patterns already
 * compiled stay set.  0 or NCD_ENOMEM. */
static int jit_state(struct ncd_rules *r)
{
    struct ncd__jit *old = r->jit;
    if (old && old->n == r->npats)
        return 0;
    struct ncd__jit *j = malloc(sizeof *j + (r->npats + 1) * sizeof j->done[0]);
    if (!j)
        return NCD_ENOMEM;
    pthread_mutex_init(&j->lock, NULL);
    j->n = r->npats;
    for (size_t i = 0; i < r->npats; i++)
        atomic_init(&j->done[i],
                    old && i < old->n ? atomic_load(&old->done[i]) : 0);
    ncd__jit_free(old);
    r->jit = j;
    return 0;
}

void ncd__jit_free(struct ncd__jit *j)
{
    if (!j)
        return;
    pthread_mutex_destroy(&j->lock);
    free(j);
}

/* ---------------------------------------------------------- literals */

/*
 * Text typical of healthy NCCL INFO output: the prefilter avoids 4-byte
 * windows frequent here.
 */
static const char background[] =
    "node1:12345:12399 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
    "node1:12345:12399 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
    "node1:12345:12399 [0] NCCL INFO NET/Plugin: No plugin found "
    "(libnccl-net.so), using internal implementation\n"
    "node1:12345:12399 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB "
    "[1]mlx5_1:1/RoCE [RO]; OOB eth0:10.0.0.1<0>\n"
    "node1:12345:12399 [0] NCCL INFO Using network IB\n"
    "node1:12345:12399 [0] NCCL INFO comm 0x5555 rank 3 nRanks 16 nNodes 2 "
    "localRanks 8 localRank 3 MNNVL 0\n"
    "node1:12345:12399 [0] NCCL INFO Channel 00/32 : 0 1 2 3 4 5 6 7\n"
    "node1:12345:12399 [0] NCCL INFO Trees [0] 1/-1/-1->0->-1 [1] "
    "1/-1/-1->0->-1\n"
    "node1:12345:12399 [0] NCCL INFO Channel 00/0 : 3[3] -> 4[4] via "
    "P2P/IPC/read\n"
    "node1:12345:12399 [0] NCCL INFO Channel 01/0 : 7[7] -> 8[0] [send] via "
    "NET/IB/0/GDRDMA\n"
    "node1:12345:12399 [0] NCCL INFO Connected all rings\n"
    "node1:12345:12399 [0] NCCL INFO Connected all trees\n"
    "node1:12345:12399 [0] NCCL INFO threadThresholds 8/8/64 | 128/8/64 | "
    "512 | 512\n"
    "node1:12345:12399 [0] NCCL INFO 32 coll channels, 32 collnet channels, "
    "0 nvls channels, 32 p2p channels, 32 p2p channels per peer\n"
    "node1:12345:12399 [0] NCCL INFO ncclCommInitRank comm 0x5555 rank 3 "
    "nranks 16 cudaDev 3 nvmlDev 3 busId 4c000 commId 0x1234 - Init "
    "COMPLETE\n"
    "node1:12345:12399 [0] NCCL INFO AllReduce: opCount 1a sendbuff "
    "0x7f0000 recvbuff 0x7f0000 count 262144 datatype 7 op 0 root 0 comm "
    "0x5555 [nranks=16] stream 0x5555\n"
    "node1:12345:12399 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment "
    "to eth0\n"
    "node1:12345:12399 [0] NCCL INFO Setting affinity for GPU 3 to ffff\n"
    "node1:12345:12399 [0] NCCL INFO GPU Direct RDMA Enabled for HCA 0 "
    "'mlx5_0'\n"
    "node1:12345:12399 [0] NCCL INFO Init timings: rank 3 nranks 16 total "
    "0.52 (kernels 0.11, bootstrap 0.02, allgathers 0.01, topo 0.10, "
    "graphs 0.01, connections 0.20, rest 0.07)\n";

static int cmp_gram(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Occurrences of g in the background text; `bg` is its sorted windows. */
static size_t gram_count(const uint32_t *bg, size_t nbg, uint32_t g)
{
    size_t lo = 0, hi = nbg;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (bg[mid] < g)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t c = 0;
    while (lo + c < nbg && bg[lo + c] == g)
        c++;
    return c;
}

/* 1 when pat[a, b) has no '|' outside nested groups and classes. */
static int depth_ok(const char *pat, size_t a, size_t b)
{
    int d = 0, incl = 0;
    for (size_t k = a; k < b; k++) {
        if (pat[k] == '\\') {
            k++;
            continue;
        }
        if (incl) {
            if (pat[k] == ']')
                incl = 0;
            continue;
        }
        if (pat[k] == '[')
            incl = 1;
        else if (pat[k] == '(')
            d++;
        else if (pat[k] == ')')
            d--;
        else if (pat[k] == '|' && d == 0)
            return 0;
    }
    return 1;
}

static int is_meta(char c)
{
    return strchr("\\^$.|?*+()[]{}", c) != NULL;
}

/*
 * Splits `pat` at top-level '|' and returns, per branch, its longest
 * mandatory literal.  Returns the number of branches, or -1 when a branch
 * has no literal of >= 4 bytes.  lits[i] is malloc'ed.
 */
int ncd__literals_extract(const char *pat, char ***lits_out)
{
    size_t n = strlen(pat);
    char **lits = NULL;
    int nl = 0;
    size_t b0 = 0;
    int depth = 0, inclass = 0;
    for (size_t i = 0; i <= n; i++) {
        char c = i < n ? pat[i] : '|';
        if (i < n && c == '\\') {
            i++;
            continue;
        }
        if (inclass) {
            if (c == ']')
                inclass = 0;
            continue;
        }
        if (c == '[') {
            inclass = 1;
            if (i + 1 < n && pat[i + 1] == ']')
                i++;
            if (i + 1 < n && pat[i + 1] == '^' && i + 2 < n && pat[i + 2] == ']')
                i += 2;
            continue;
        }
        if (c == '(')
            depth++;
        else if (c == ')')
            depth--;
        if (c != '|' || depth != 0)
            continue;
        /* branch pat[b0, i) */
        char best[256] = {0}, cur[256] = {0};
        size_t bl = 0, cl = 0;
        for (size_t j = b0; j < i; j++) {
            char ch = pat[j];
            int lit = 0;
            char lc = 0;
            size_t next = j + 1;
            if (ch == '\\' && j + 1 < i) {
                char e = pat[j + 1];
                next = j + 2;
                if (!((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') ||
                      (e >= '0' && e <= '9'))) {
                    lit = 1;
                    lc = e;
                }
            } else if (ch == '[') {
                size_t k = j + 1;
                if (k < i && pat[k] == '^')
                    k++;
                if (k < i && pat[k] == ']')
                    k++;
                while (k < i && pat[k] != ']') {
                    if (pat[k] == '\\')
                        k++;
                    k++;
                }
                next = k + 1;
            } else if (ch == '(') {
                int d = 1;
                size_t k = j + 1;
                int incl = 0;
                while (k < i && d > 0) {
                    if (pat[k] == '\\')
                        k++;
                    else if (incl) {
                        if (pat[k] == ']')
                            incl = 0;
                    } else if (pat[k] == '[')
                        incl = 1;
                    else if (pat[k] == '(')
                        d++;
                    else if (pat[k] == ')')
                        d--;
                    k++;
                }
                next = k;
                /* a mandatory group without alternatives: its own best
                 * literal is a candidate too ("(?<var>NCCL_X)") */
                char qq = next < i ? pat[next] : 0;
                if (qq != '?' && qq != '*' && qq != '{' && depth_ok(pat, j + 1, k - 1)) {
                    size_t c0 = j + 1;
                    if (pat[c0] == '?') {
                        if (pat[c0 + 1] == ':')
                            c0 += 2;
                        else if (pat[c0 + 1] == '<' && memchr(pat + c0, '>', k - 1 - c0))
                            c0 = (size_t)((const char *)memchr(pat + c0, '>', k - 1 - c0) - pat) + 1;
                    }
                    if (c0 < k - 1 && pat[c0] != '?') {
                        char *inner = strndup(pat + c0, k - 1 - c0);
                        char **il = NULL;
                        int ni = inner ? ncd__literals_extract(inner, &il) : -1;
                        if (ni == 1 && strlen(il[0]) > bl && strlen(il[0]) < sizeof best) {
                            bl = strlen(il[0]);
                            memcpy(best, il[0], bl);
                        }
                        if (ni > 0)
                            ncd__strv_free(il, (size_t)ni);
                        free(inner);
                    }
                }
            } else if (!is_meta(ch)) {
                lit = 1;
                lc = ch;
            }
            /* quantifier after this atom? */
            char q = next < i ? pat[next] : 0;
            int optional = q == '?' || q == '*' ||
                           (q == '{' && next + 1 < i &&
                            (pat[next + 1] == '0' || pat[next + 1] == ','));
            int repeat = q == '+' || q == '{';
            if (lit && !optional && cl < sizeof cur - 1)
                cur[cl++] = lc;
            if (!lit || optional || repeat) {
                if (cl > bl) {
                    memcpy(best, cur, cl);
                    bl = cl;
                }
                cl = 0;
            }
            if (q == '?' || q == '*' || q == '+') {
                next++;
                if (next < i && pat[next] == '?')
                    next++;
            } else if (q == '{') {
                while (next < i && pat[next] != '}')
                    next++;
                next++;
            }
            j = next - 1;
        }
        if (cl > bl) {
            memcpy(best, cur, cl);
            bl = cl;
        }
        if (bl < 4) {
            ncd__strv_free(lits, (size_t)nl);
            return -1;
        }
        char **nv = realloc(lits, (size_t)(nl + 1) * sizeof *nv);
        if (!nv) {
            ncd__strv_free(lits, (size_t)nl);
            return -1;
        }
        lits = nv;
        lits[nl] = strndup(best, bl);
        if (!lits[nl]) {
            ncd__strv_free(lits, (size_t)nl);
            return -1;
        }
        nl++;
        b0 = i + 1;
    }
    *lits_out = lits;
    return nl;
}

int ncd__literal_add(struct ncd_rules *r, char *s, size_t pat)
{
    if (r->nlits == r->capl) {
        size_t nc = r->capl ? r->capl * 2 : 64;
        struct ncd__lit *nv = realloc(r->lits, nc * sizeof *nv);
        if (!nv)
            return NCD_ENOMEM;
        r->lits = nv;
        r->capl = nc;
    }
    struct ncd__lit *l = &r->lits[r->nlits++];
    l->s = s;
    l->len = strlen(s);
    l->pat = pat;
    l->off = 0;
    l->gram = 0;
    return 0;
}

struct prio_idx {
    int prio;
    size_t idx;
};

static int cmp_prio(const void *a, const void *b)
{
    const struct prio_idx *x = a, *y = b;
    if (x->prio != y->prio)
        return y->prio - x->prio;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* The subsystem rules (files, no patterns, no `when`) by priority. */
static int file_rules_build(struct ncd_rules *r)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n; i++)
        n += r->v[i].nfiles && !r->v[i].npats && r->v[i].cond < 0;
    struct prio_idx *pi = malloc((n ? n : 1) * sizeof *pi);
    size_t *fr = malloc((n ? n : 1) * sizeof *fr);
    if (!pi || !fr) {
        free(pi);
        free(fr);
        return NCD_ENOMEM;
    }
    size_t k = 0;
    for (size_t i = 0; i < r->n; i++)
        if (r->v[i].nfiles && !r->v[i].npats && r->v[i].cond < 0) {
            pi[k].prio = r->v[i].priority;
            pi[k++].idx = i;
        }
    if (n > 1)
        qsort(pi, n, sizeof *pi, cmp_prio);
    for (size_t i = 0; i < n; i++)
        fr[i] = pi[i].idx;
    free(pi);
    free(r->file_rules);
    r->file_rules = fr;
    r->nfile_rules = n;
    return 0;
}

/* Rebuilds the bitmap, the buckets and the priority order.
 *
 * With stride S every literal contributes S consecutive 4-byte windows
 * (the least frequent run of S in the background text), so scanning only
 * positions 0, S, 2S... still meets one window of every occurrence. */
int ncd__prefilter_build(struct ncd_rules *r)
{
    size_t minlen = 64;
    for (size_t i = 0; i < r->nlits; i++)
        if (r->lits[i].len < minlen)
            minlen = r->lits[i].len;
    unsigned stride = minlen >= 7 ? 4 : (unsigned)(minlen - 3);
    size_t nb = (size_t)1 << NCD__PF_BITS;
    size_t ng = r->nlits * stride;
    uint32_t *bs = calloc(nb + 1, sizeof *bs);
    uint32_t *bi = malloc((ng ? ng : 1) * sizeof *bi);
    struct ncd__gram *gr = malloc((ng ? ng : 1) * sizeof *gr);
    size_t *po = malloc((r->npats ? r->npats : 1) * sizeof *po);
    size_t *pr = malloc((r->npats ? r->npats : 1) * sizeof *pr);
    struct prio_idx *pi = malloc((r->npats ? r->npats : 1) * sizeof *pi);
    uint32_t *fill = calloc(nb, sizeof *fill);
    size_t nbg = sizeof background - 4;
    uint32_t *bg = malloc(nbg * sizeof *bg);
    if (!bs || !bi || !gr || !po || !pr || !pi || !fill || !bg) {
        free(bs);
        free(bi);
        free(gr);
        free(po);
        free(pr);
        free(pi);
        free(fill);
        free(bg);
        return NCD_ENOMEM;
    }
    for (size_t i = 0; i < nbg; i++)
        memcpy(&bg[i], background + i, 4);
    qsort(bg, nbg, sizeof *bg, cmp_gram);
    size_t k = 0;
    for (size_t i = 0; i < r->nlits; i++) {
        struct ncd__lit *l = &r->lits[i];
        size_t best = 0, bestc = (size_t)-1;
        for (size_t o = 0; o + 3 + stride <= l->len; o++) {
            size_t c = 0;
            for (unsigned w = 0; w < stride; w++) {
                uint32_t g;
                memcpy(&g, l->s + o + w, 4);
                c += gram_count(bg, nbg, g);
            }
            if (c < bestc) {
                bestc = c;
                best = o;
            }
        }
        l->off = best;
        memcpy(&l->gram, l->s + best, 4);
        for (unsigned w = 0; w < stride; w++, k++) {
            memcpy(&gr[k].gram, l->s + best + w, 4);
            gr[k].lit = (uint32_t)i;
            gr[k].off = (uint32_t)(best + w);
        }
    }
    free(bg);
    memset(r->bitmap, 0, sizeof r->bitmap);
    for (size_t i = 0; i < ng; i++) {
        uint32_t h = ncd__gram_hash(gr[i].gram);
        r->bitmap[h >> 6] |= 1ull << (h & 63);
        bs[h + 1]++;
    }
    for (size_t h = 0; h < nb; h++)
        bs[h + 1] += bs[h];
    for (size_t i = 0; i < ng; i++) {
        uint32_t h = ncd__gram_hash(gr[i].gram);
        bi[bs[h] + fill[h]++] = (uint32_t)i;
    }
    free(fill);
    for (size_t i = 0; i < r->npats; i++) {
        pi[i].prio = r->v[r->pats[i].rule].priority;
        pi[i].idx = i;
    }
    if (r->npats > 1)
        qsort(pi, r->npats, sizeof *pi, cmp_prio);
    for (size_t i = 0; i < r->npats; i++)
        po[i] = pi[i].idx;
    free(pi);
    for (size_t i = 0; i < r->npats; i++)
        pr[po[i]] = i;
    free(r->bstart);
    free(r->bitems);
    free(r->grams);
    free(r->pat_order);
    free(r->pat_rank);
    r->bstart = bs;
    r->bitems = bi;
    r->grams = gr;
    r->ngrams = ng;
    r->stride = stride;
    r->pat_order = po;
    r->pat_rank = pr;
    r->prefilter_stale = 0;
    int rc = file_rules_build(r);
    return rc < 0 ? rc : jit_state(r);
}

/* ---------------------------------------------------------------- match */

/* A matcher's scratch changes on every line: allocated on cache lines of
 * its own, so matchers of different threads never share one. */
#define LINE_PAD 128
static void *pad_alloc(size_t n, void *arg)
{
    (void)arg;
    return aligned_alloc(LINE_PAD, (n + LINE_PAD - 1) / LINE_PAD * LINE_PAD);
}

static void pad_free(void *p, void *arg)
{
    (void)arg;
    free(p);
}

int ncd__matcher_init(struct ncd__matcher *m, const struct ncd_rules *r)
{
    memset(m, 0, sizeof *m);
    pcre2_general_context *gc = pcre2_general_context_create(pad_alloc, pad_free,
                                                             NULL);
    m->md = gc ? pcre2_match_data_create(r->max_match_captures + 1, gc) : NULL;
    m->md_obs =
        gc ? pcre2_match_data_create(r->max_match_captures + 1, gc) : NULL;
    pcre2_general_context_free(gc);
    m->cand = pad_alloc((r->npats + 1) * sizeof *m->cand, NULL);
    m->seen = pad_alloc(r->npats + 1, NULL);
    if (m->seen)
        memset(m->seen, 0, r->npats + 1);
    m->memo = calloc(NCD__MEMO_SLOTS, sizeof *m->memo);
    if (!m->md || !m->md_obs || !m->cand || !m->seen || !m->memo) {
        ncd__matcher_release(m);
        return NCD_ENOMEM;
    }
    return 0;
}

void ncd__matcher_release(struct ncd__matcher *m)
{
    pcre2_match_data_free(m->md);
    pcre2_match_data_free(m->md_obs);
    free(m->cand);
    free(m->seen);
    free(m->memo);
    memset(m, 0, sizeof *m);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

int ncd__rule_file_match(const struct ncd__rule *rule, const char *src,
                         size_t len)
{
    char buf[128];
    if (!src || !len || len >= sizeof buf)
        return 0;
    memcpy(buf, src, len);
    buf[len] = '\0';
    /* "/build/nccl/src/transport/net_ib.cc" -> "transport/net_ib.cc" */
    const char *rel = buf;
    for (const char *q = strstr(buf, "src/"); q; q = strstr(q + 1, "src/"))
        if (q == buf || q[-1] == '/')
            rel = q + 4;
    for (size_t i = 0; i < rule->nfiles; i++)
        if (fnmatch(rule->files[i], rel, 0) == 0)
            return 1;
    return 0;
}

long ncd__file_rule(const struct ncd_rules *r, const char *src, size_t len,
                    int version)
{
    if (!src || !len)
        return -1;
    for (size_t k = 0; k < r->nfile_rules; k++) {
        const struct ncd__rule *ru = &r->v[r->file_rules[k]];
        if (ncd__rule_applies(ru, version) &&
            ncd__rule_file_match(ru, src, len))
            return (long)r->file_rules[k];
    }
    return -1;
}

size_t ncd__prefilter_quiet(const struct ncd_rules *r, const char *text,
                            size_t n)
{
    const size_t stride = r->stride ? r->stride : 1;
    size_t i = 0;
    if (!r->nlits)
        return 0;
    for (; i + 4 <= n; i += stride) {
        uint32_t g;
        memcpy(&g, text + i, 4);
        uint32_t h = ncd__gram_hash(g);
        if (r->bitmap[h >> 6] & (1ull << (h & 63)))
            break;
    }
    return i;
}

long ncd__rules_match(const struct ncd_rules *r, struct ncd__matcher *m,
                      const char *text, size_t len, int version,
                      const char *src, size_t src_len, size_t *pat)
{
    return ncd__rules_match_from(r, m, text, len, version, src, src_len, pat,
                                 0);
}

long ncd__rules_match_from(const struct ncd_rules *r, struct ncd__matcher *m,
                           const char *text, size_t len, int version,
                           const char *src, size_t src_len, size_t *pat,
                           size_t from)
{
    /* a WARN of a subsystem's file: the bar a pattern rule must reach */
    long frule = src ? ncd__file_rule(r, src, src_len, version) : -1;
    int fprio = frule >= 0 ? r->v[frule].priority : -1;
    m->ncand = 0;
    m->nobs = 0;
    if (len < 4 || !r->nlits)
        goto none;
    const unsigned char *t = (const unsigned char *)text;
    const uint64_t *bm = r->bitmap;
    const size_t stride = r->stride ? r->stride : 1;
    for (size_t i = from; i + 4 <= len; i += stride) {
        uint32_t g;
        memcpy(&g, t + i, 4);
        uint32_t h = ncd__gram_hash(g);
        if (!(bm[h >> 6] & (1ull << (h & 63))))
            continue;
        for (uint32_t k = r->bstart[h]; k < r->bstart[h + 1]; k++) {
            const struct ncd__gram *gr = &r->grams[r->bitems[k]];
            if (gr->gram != g || i < gr->off)
                continue;
            const struct ncd__lit *l = &r->lits[gr->lit];
            size_t st = i - gr->off;
            if (st + l->len > len || memcmp(t + st, l->s, l->len) != 0)
                continue;
            uint32_t rank = (uint32_t)r->pat_rank[l->pat];
            if (!m->seen[rank]) {
                m->seen[rank] = 1;
                m->cand[m->ncand++] = rank;
            }
        }
    }
    if (!m->ncand)
        goto none;
    if (m->ncand > 1)
        qsort(m->cand, m->ncand, sizeof *m->cand, cmp_u32);
    long found = -1;
    int done = 0;
    for (size_t c = 0; c < m->ncand; c++) {
        m->seen[m->cand[c]] = 0;
        size_t p = r->pat_order[m->cand[c]];
        if (r->pats[p].bug >= 0) {
            /* a known bug's signature: noted, never the claim */
            if (m->nobs < NCD__MAX_OBS_PER_LINE &&
                (!version || ncd_known_bug_affects(
                                 &r->bugs.v[r->pats[p].bug], version)) &&
                ncd__pattern_code(r, p) &&
                pcre2_match(ncd__pattern_code(r, p), (PCRE2_SPTR)text, len, 0,
                            0, m->md_obs, NULL) >= 0)
                m->obs[m->nobs++] = p;
            continue;
        }
        if (done)
            continue;
        const struct ncd__rule *ru = &r->v[r->pats[p].rule];
        if (ru->priority < fprio) {
            done = 1; /* candidates come by priority: the file rule wins */
            continue;
        }
        if (!ncd__rule_applies(ru, version) ||
            (ru->nfiles && !ncd__rule_file_match(ru, src, src_len)))
            continue;
        pcre2_code *re = ncd__pattern_code(r, p);
        int rc = re ? pcre2_match(re, (PCRE2_SPTR)text, len, 0, 0, m->md, NULL)
                    : PCRE2_ERROR_NOMATCH;
        if (rc >= 0) {
            found = (long)r->pats[p].rule;
            *pat = p;
            done = 1;
        }
    }
    if (found >= 0)
        return found;
none:
    if (frule >= 0)
        *pat = SIZE_MAX;
    return frule;
}

long ncd_rules_classify(const struct ncd_rules *rules, const char *line,
                        size_t len)
{
    /* zeroed: PCRE2's JIT reads a little past the subject (see
     * ncd_rules_selftest); 8 KiB per call, never on the scan's path */
    char scratch[NCD_LOG_MAX_LINE + 1] = {0};
    struct ncd_log_line ll;
    if (ncd_log_parse(line, len, scratch, sizeof scratch, &ll) < 0)
        return -1;
    struct ncd__matcher m;
    if (ncd__matcher_init(&m, rules) < 0)
        return -1;
    size_t pat;
    long r = ncd__rules_match(rules, &m, ll.text, ll.text_len, 0, ll.src,
                              ll.src ? ll.src_len : 0, &pat);
    ncd__matcher_release(&m);
    return r;
}
