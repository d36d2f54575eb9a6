/* SPDX-License-Identifier: MIT */
/*
 * Rules database: YAML (libyaml) -> compiled PCRE2 patterns + a literal
 * prefilter.
 *
 * Prefilter: every pattern must contain a literal of >= 4 bytes in each of
 * its top-level alternatives (checked at load).  For each literal a run of
 * `stride` consecutive 4-byte windows (the run least frequent in ordinary
 * NCCL INFO output) is hashed into a bitmap of 2^16 bits.  A line is scanned
 * once, hashing only every stride-th position (stride 4 when all literals
 * have >= 7 bytes), which still meets one window of every occurrence; only a
 * bitmap hit whose window and literal compare equal makes its pattern a
 * candidate, and only candidates run the regex (PCRE2, JIT-compiled).
 * Patterns run in byte mode, as grep -E does in the C locale.
 *
 * A loaded rule set is read-only: several scans (threads) may share it.
 */
#define _GNU_SOURCE
#include "explain/internal.h"

#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "core/embedded.h"
#include "ncd/error.h"

extern const char *const ncd__when_names[]; /* reason.c */

const char *ncd_rule_role_name(enum ncd_rule_role role)
{
    static const char *const n[] = {"root", "consequence", "wrapper",
                                    "context"};
    if ((int)role < 0 || role > NCD_ROLE_CONTEXT)
        return "?";
    return n[role];
}

static int role_parse(const char *s)
{
    for (int i = 0; i <= NCD_ROLE_CONTEXT; i++)
        if (strcmp(s, ncd_rule_role_name((enum ncd_rule_role)i)) == 0)
            return i;
    return -1;
}

int ncd_rules_new(struct ncd_rules **out)
{
    *out = calloc(1, sizeof **out);
    return *out ? 0 : NCD_ENOMEM;
}

static void free_strv(char **v, size_t n)
{
    if (!v)
        return;
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

/* Frees items [from, n) of v, not v itself. */
static void free_items(char **v, size_t from, size_t n)
{
    for (size_t i = from; i < n; i++)
        free(v[i]);
}

static void rule_release(struct ncd__rule *r)
{
    free(r->id);
    free(r->title);
    free(r->cause);
    free(r->fix);
    free(r->when);
    free(r->file);
    free(r->versions);
    free(r->source);
    free_strv(r->env_names, r->nenv);
    free_strv(r->env_vals, r->nenv);
    free_strv(r->ex_match, r->n_ex_match);
    free_strv(r->ex_nomatch, r->n_ex_nomatch);
    free_strv(r->absorbs, r->nabsorbs);
}

void ncd_rules_free(struct ncd_rules *rules)
{
    if (!rules)
        return;
    for (size_t i = 0; i < rules->n; i++)
        rule_release(&rules->v[i]);
    for (size_t i = 0; i < rules->npats; i++) {
        free(rules->pats[i].src);
        pcre2_code_free(rules->pats[i].re);
    }
    for (size_t i = 0; i < rules->nlits; i++)
        free(rules->lits[i].s);
    free(rules->v);
    free(rules->pats);
    free(rules->lits);
    free(rules->bstart);
    free(rules->bitems);
    free(rules->grams);
    free(rules->pat_order);
    free(rules->pat_rank);
    free(rules);
}

size_t ncd_rules_count(const struct ncd_rules *rules) { return rules->n; }

long ncd__rules_find(const struct ncd_rules *r, const char *id)
{
    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->v[i].id, id) == 0)
            return (long)i;
    return -1;
}

/* ---------------------------------------------------------------- versions */

int ncd__version_code(const char *s)
{
    int a = 0, b = 0, c = 0, k = 0;
    if (!s || !(*s >= '0' && *s <= '9'))
        return 0;
    /* bounded: a fuzzed "99999999999.1" must not overflow */
    while (*s >= '0' && *s <= '9' && a < 100000)
        a = a * 10 + (*s++ - '0');
    k++;
    if (*s == '.') {
        s++;
        while (*s >= '0' && *s <= '9' && b < 100000)
            b = b * 10 + (*s++ - '0');
        k++;
        if (*s == '.') {
            s++;
            while (*s >= '0' && *s <= '9' && c < 100000)
                c = c * 10 + (*s++ - '0');
        }
    }
    if (k < 2 || a > 99 || b > 99 || c > 99)
        return 0;
    return a * 10000 + b * 100 + c;
}

/* "any" | tokens ">=2.19" "<2.20.1" (also ">", "<=", "=="). */
static int parse_versions(const char *s, int *vmin, int *vmax)
{
    *vmin = *vmax = 0;
    if (strcmp(s, "any") == 0)
        return 0;
    const char *p = s;
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        if (!*p)
            break;
        char op[3] = {0};
        int k = 0;
        while ((*p == '<' || *p == '>' || *p == '=') && k < 2)
            op[k++] = *p++;
        int code = ncd__version_code(p);
        if (!code || !k)
            return -1;
        while (*p && *p != ' ' && *p != ',')
            p++;
        if (strcmp(op, ">=") == 0)
            *vmin = code;
        else if (strcmp(op, ">") == 0)
            *vmin = code + 1;
        else if (strcmp(op, "<") == 0)
            *vmax = code;
        else if (strcmp(op, "<=") == 0)
            *vmax = code + 1;
        else if (strcmp(op, "==") == 0 || strcmp(op, "=") == 0) {
            *vmin = code;
            *vmax = code + 1;
        } else
            return -1;
    }
    return 0;
}

int ncd__rule_applies(const struct ncd__rule *rule, int version)
{
    if (!version)
        return 1;
    if (rule->vmin && version < rule->vmin)
        return 0;
    if (rule->vmax && version >= rule->vmax)
        return 0;
    return 1;
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

static int extract_literals(const char *pat, char ***lits_out);

static int is_meta(char c)
{
    return strchr("\\^$.|?*+()[]{}", c) != NULL;
}

/*
 * Splits `pat` at top-level '|' and returns, per branch, its longest
 * mandatory literal.  Returns the number of branches, or -1 when a branch
 * has no literal of >= 4 bytes.  lits[i] is malloc'ed.
 */
static int extract_literals(const char *pat, char ***lits_out)
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
                        int ni = inner ? extract_literals(inner, &il) : -1;
                        if (ni == 1 && strlen(il[0]) > bl && strlen(il[0]) < sizeof best) {
                            bl = strlen(il[0]);
                            memcpy(best, il[0], bl);
                        }
                        if (ni > 0)
                            free_strv(il, (size_t)ni);
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
            free_strv(lits, (size_t)nl);
            return -1;
        }
        char **nv = realloc(lits, (size_t)(nl + 1) * sizeof *nv);
        if (!nv) {
            free_strv(lits, (size_t)nl);
            return -1;
        }
        lits = nv;
        lits[nl] = strndup(best, bl);
        if (!lits[nl]) {
            free_strv(lits, (size_t)nl);
            return -1;
        }
        nl++;
        b0 = i + 1;
    }
    *lits_out = lits;
    return nl;
}

static int add_literal(struct ncd_rules *r, char *s, size_t pat)
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

/* Rebuilds the bitmap, the buckets and the priority order.
 *
 * With stride S every literal contributes S consecutive 4-byte windows
 * (the least frequent run of S in the background text), so scanning only
 * positions 0, S, 2S... still meets one window of every occurrence. */
static int build_prefilter(struct ncd_rules *r)
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
    if (!bs || !bi || !gr || !po || !pr || !pi || !fill) {
        free(bs);
        free(bi);
        free(gr);
        free(po);
        free(pr);
        free(pi);
        free(fill);
        return NCD_ENOMEM;
    }
    size_t nbg = sizeof background - 4;
    uint32_t *bg = malloc(nbg * sizeof *bg);
    if (!bg) {
        free(bs);
        free(bi);
        free(gr);
        free(po);
        free(pr);
        free(pi);
        free(fill);
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
    return 0;
}

/* ---------------------------------------------------------------- YAML */

struct loader {
    struct ncd_ctx *ctx;
    struct ncd_rules *r;
    const char *name;
    yaml_document_t doc;
};

static int lfail(struct loader *L, yaml_node_t *n, int code, const char *fmt,
                 ...) __attribute__((format(printf, 4, 5)));
static int lfail(struct loader *L, yaml_node_t *n, int code, const char *fmt,
                 ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n)
        return ncd_fail(L->ctx, code, "%s:%zu:%zu: %s", L->name,
                        n->start_mark.line + 1, n->start_mark.column + 1,
                        msg);
    return ncd_fail(L->ctx, code, "%s: %s", L->name, msg);
}

static const char *scalar(yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value
                                            : NULL;
}

static yaml_node_t *map_get(struct loader *L, yaml_node_t *m, const char *key)
{
    if (!m || m->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start;
         p < m->data.mapping.pairs.top; p++) {
        const char *k = scalar(yaml_document_get_node(&L->doc, p->key));
        if (k && strcmp(k, key) == 0)
            return yaml_document_get_node(&L->doc, p->value);
    }
    return NULL;
}

/* A scalar or a sequence of scalars as a string vector. */
static int str_list(struct loader *L, yaml_node_t *n, const char *what,
                    char ***out, size_t *count)
{
    *out = NULL;
    *count = 0;
    if (!n)
        return 0;
    if (n->type == YAML_SCALAR_NODE) {
        *out = calloc(1, sizeof **out);
        if (!*out || !((*out)[0] = strdup(scalar(n))))
            return NCD_ENOMEM;
        *count = 1;
        return 0;
    }
    if (n->type != YAML_SEQUENCE_NODE)
        return lfail(L, n, NCD_EINVAL, "'%s' must be a string or a list", what);
    size_t k = (size_t)(n->data.sequence.items.top -
                        n->data.sequence.items.start);
    *out = calloc(k ? k : 1, sizeof **out);
    if (!*out)
        return NCD_ENOMEM;
    for (size_t i = 0; i < k; i++) {
        yaml_node_t *it =
            yaml_document_get_node(&L->doc, n->data.sequence.items.start[i]);
        const char *s = scalar(it);
        if (!s)
            return lfail(L, it ? it : n, NCD_EINVAL,
                         "items of '%s' must be strings", what);
        if (!((*out)[i] = strdup(s)))
            return NCD_ENOMEM;
        *count = i + 1;
    }
    return 0;
}

static int known_when(const char *w)
{
    for (size_t i = 0; ncd__when_names[i]; i++)
        if (strcmp(ncd__when_names[i], w) == 0)
            return 1;
    return 0;
}

static const char *const rule_keys[] = {
    "id",     "category", "severity", "role",          "priority",
    "title",  "patterns", "cause",    "fix",           "env",
    "source", "when",     "absorbs",  "nccl_versions", "examples", NULL};

static int load_rule(struct loader *L, yaml_node_t *m)
{
    struct ncd_rules *r = L->r;
    if (m->type != YAML_MAPPING_NODE)
        return lfail(L, m, NCD_EINVAL, "a rule must be a mapping");
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start;
         p < m->data.mapping.pairs.top; p++) {
        yaml_node_t *kn = yaml_document_get_node(&L->doc, p->key);
        const char *k = scalar(kn);
        int ok = 0;
        for (size_t i = 0; k && rule_keys[i]; i++)
            ok |= strcmp(k, rule_keys[i]) == 0;
        if (!ok)
            return lfail(L, kn, NCD_EINVAL, "unknown key '%s' in rule", k);
    }
    const char *id = scalar(map_get(L, m, "id"));
    if (!id || !*id)
        return lfail(L, m, NCD_EINVAL, "rule without an 'id'");
    if (ncd__rules_find(r, id) >= 0)
        return lfail(L, map_get(L, m, "id"), NCD_EINVAL,
                     "duplicate rule id '%s'", id);
    static const char *const req[] = {"category", "severity", "title",
                                      "cause",    "fix",      "source",
                                      "nccl_versions"};
    for (size_t i = 0; i < sizeof req / sizeof req[0]; i++)
        if (!scalar(map_get(L, m, req[i])))
            return lfail(L, m, NCD_EINVAL, "rule '%s' has no '%s'", id,
                         req[i]);
    if (r->n == r->cap) {
        size_t nc = r->cap ? r->cap * 2 : 64;
        struct ncd__rule *nv = realloc(r->v, nc * sizeof *nv);
        if (!nv)
            return NCD_ENOMEM;
        r->v = nv;
        r->cap = nc;
    }
    struct ncd__rule *ru = &r->v[r->n];
    memset(ru, 0, sizeof *ru);
    r->n++; /* owned from here; the caller rolls back on error */
    ru->line = (int)m->start_mark.line + 1;
    const char *cat = scalar(map_get(L, m, "category"));
    int c = ncd_category_parse(cat);
    if (c < 0)
        return lfail(L, map_get(L, m, "category"), NCD_EINVAL,
                     "unknown category '%s' (see categories.md)", cat);
    ru->cat = (enum ncd_category)c;
    const char *sev = scalar(map_get(L, m, "severity"));
    int s = ncd_severity_parse(sev);
    if (s < 0)
        return lfail(L, map_get(L, m, "severity"), NCD_EINVAL,
                     "unknown severity '%s'", sev);
    ru->sev = (enum ncd_severity)s;
    const char *role = scalar(map_get(L, m, "role"));
    int ro = role ? role_parse(role) : 0;
    if (ro < 0)
        return lfail(L, map_get(L, m, "role"), NCD_EINVAL,
                     "unknown role '%s' (root, consequence, wrapper, context)",
                     role);
    ru->role = (enum ncd_rule_role)ro;
    const char *prio = scalar(map_get(L, m, "priority"));
    ru->priority = 50;
    if (prio) {
        char *e;
        long pv = strtol(prio, &e, 10);
        if (*e || pv < 0 || pv > 1000)
            return lfail(L, map_get(L, m, "priority"), NCD_EINVAL,
                         "priority must be an integer 0..1000, not '%s'",
                         prio);
        ru->priority = (int)pv;
    }
    const char *vers = scalar(map_get(L, m, "nccl_versions"));
    if (parse_versions(vers, &ru->vmin, &ru->vmax) < 0)
        return lfail(L, map_get(L, m, "nccl_versions"), NCD_EINVAL,
                     "bad nccl_versions '%s' (\"any\" or \">=2.19 <2.20\")",
                     vers);
    const char *when = scalar(map_get(L, m, "when"));
    if (when && !known_when(when))
        return lfail(L, map_get(L, m, "when"), NCD_EINVAL,
                     "unknown condition '%s' in 'when'", when);
    if (!(ru->id = strdup(id)) ||
        !(ru->title = strdup(scalar(map_get(L, m, "title")))) ||
        !(ru->cause = strdup(scalar(map_get(L, m, "cause")))) ||
        !(ru->fix = strdup(scalar(map_get(L, m, "fix")))) ||
        !(ru->source = strdup(scalar(map_get(L, m, "source")))) ||
        !(ru->versions = strdup(vers)) || !(ru->file = strdup(L->name)) ||
        (when && !(ru->when = strdup(when))))
        return NCD_ENOMEM;

    /* env */
    yaml_node_t *env = map_get(L, m, "env");
    if (env) {
        if (env->type != YAML_MAPPING_NODE)
            return lfail(L, env, NCD_EINVAL,
                         "'env' of '%s' must be a mapping VAR: value", id);
        size_t k = (size_t)(env->data.mapping.pairs.top -
                            env->data.mapping.pairs.start);
        ru->env_names = calloc(k ? k : 1, sizeof(char *));
        ru->env_vals = calloc(k ? k : 1, sizeof(char *));
        if (!ru->env_names || !ru->env_vals)
            return NCD_ENOMEM;
        for (size_t i = 0; i < k; i++) {
            yaml_node_pair_t *p = &env->data.mapping.pairs.start[i];
            yaml_node_t *vn = yaml_document_get_node(&L->doc, p->value);
            const char *kk = scalar(yaml_document_get_node(&L->doc, p->key));
            const char *vv = scalar(vn);
            if (!kk || !vv)
                return lfail(L, vn, NCD_EINVAL,
                             "env of '%s': values must be strings", id);
            ru->env_names[i] = strdup(kk);
            /* "~" / null means: unset the variable */
            int unset = vn->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
                        (strcmp(vv, "~") == 0 || strcmp(vv, "null") == 0);
            ru->env_vals[i] = unset ? NULL : strdup(vv);
            ru->nenv = i + 1;
            if (!ru->env_names[i] || (!unset && !ru->env_vals[i]))
                return NCD_ENOMEM;
        }
    }
    int rc;
    if ((rc = str_list(L, map_get(L, m, "absorbs"), "absorbs", &ru->absorbs,
                       &ru->nabsorbs)) < 0)
        return rc;
    yaml_node_t *ex = map_get(L, m, "examples");
    if ((rc = str_list(L, map_get(L, ex, "match"), "examples.match",
                       &ru->ex_match, &ru->n_ex_match)) < 0 ||
        (rc = str_list(L, map_get(L, ex, "no_match"), "examples.no_match",
                       &ru->ex_nomatch, &ru->n_ex_nomatch)) < 0)
        return rc;

    /* patterns */
    char **pv = NULL;
    size_t np = 0;
    yaml_node_t *pn = map_get(L, m, "patterns");
    if ((rc = str_list(L, pn, "patterns", &pv, &np)) < 0) {
        free_strv(pv, np);
        return rc;
    }
    if (!np && !when) {
        free_strv(pv, np);
        return lfail(L, m, NCD_EINVAL,
                     "rule '%s' has neither 'patterns' nor 'when'", id);
    }
    if (np && (!ru->n_ex_match || !ru->n_ex_nomatch)) {
        free_strv(pv, np);
        return lfail(L, m, NCD_EINVAL,
                     "rule '%s' needs examples.match and examples.no_match",
                     id);
    }
    ru->pat0 = r->npats;
    for (size_t i = 0; i < np; i++) {
        /* only (?:...) and (?<name>...) groups: inline flags such as (?i)
         * would defeat the case-sensitive prefilter, and look-arounds are
         * not POSIX ERE */
        for (const char *q = strstr(pv[i], "(?"); q; q = strstr(q + 2, "(?")) {
            if (q > pv[i] && q[-1] == '\\')
                continue;
            if (q[2] == ':' ||
                (q[2] == '<' && ((q[3] >= 'a' && q[3] <= 'z') ||
                                 (q[3] >= 'A' && q[3] <= 'Z') || q[3] == '_')))
                continue;
            rc = lfail(L, pn, NCD_EINVAL,
                       "pattern '%s': only (?:...) and (?<name>...) groups are "
                       "allowed (no inline flags or look-arounds)",
                       pv[i]);
            free_items(pv, i, np);
            free(pv);
            return rc;
        }
        int err;
        PCRE2_SIZE off;
        pcre2_code *re = pcre2_compile((PCRE2_SPTR)pv[i], PCRE2_ZERO_TERMINATED,
                                       0 /* bytes, like grep in the C locale */,
                                       &err, &off, NULL);
        if (!re) {
            PCRE2_UCHAR buf[256];
            pcre2_get_error_message(err, buf, sizeof buf);
            char msg[400];
            snprintf(msg, sizeof msg, "%s at offset %zu", (char *)buf,
                     (size_t)off);
            rc = lfail(L, pn, NCD_EINVAL, "pattern '%s' does not compile: %s",
                       pv[i], msg);
            free_items(pv, i, np);
            free(pv);
            return rc;
        }
        pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* falls back if no JIT */
        uint32_t cap = 0;
        pcre2_pattern_info(re, PCRE2_INFO_CAPTURECOUNT, &cap);
        if (cap + 1 > r->max_match_captures)
            r->max_match_captures = cap + 1;
        if (r->npats == r->capp) {
            size_t nc = r->capp ? r->capp * 2 : 64;
            struct ncd__pattern *nv = realloc(r->pats, nc * sizeof *nv);
            if (!nv) {
                pcre2_code_free(re);
                free_items(pv, i, np);
                free(pv);
                return NCD_ENOMEM;
            }
            r->pats = nv;
            r->capp = nc;
        }
        r->pats[r->npats].src = pv[i];
        r->pats[r->npats].re = re;
        r->pats[r->npats].rule = r->n - 1;
        r->npats++;
        ru->npats++;
        if (!when) {
            char **lits;
            int nl = extract_literals(pv[i], &lits);
            if (nl < 0) {
                free_items(pv, i + 1, np);
                free(pv);
                return lfail(L, pn, NCD_EINVAL,
                             "pattern '%s' has an alternative without a "
                             "literal of 4+ characters (the prefilter needs "
                             "one)",
                             r->pats[r->npats - 1].src);
            }
            for (int j = 0; j < nl; j++)
                if (add_literal(r, lits[j], r->npats - 1) < 0) {
                    free_items(lits, (size_t)j, (size_t)nl);
                    free(lits);
                    free_items(pv, i + 1, np);
                    free(pv);
                    return NCD_ENOMEM;
                }
            free(lits);
        }
    }
    free(pv);
    return 0;
}

static void rollback(struct ncd_rules *r, size_t n0, size_t np0, size_t nl0)
{
    while (r->n > n0)
        rule_release(&r->v[--r->n]);
    while (r->npats > np0) {
        r->npats--;
        free(r->pats[r->npats].src);
        pcre2_code_free(r->pats[r->npats].re);
    }
    while (r->nlits > nl0)
        free(r->lits[--r->nlits].s);
}

int ncd_rules_load_buf(struct ncd_ctx *ctx, struct ncd_rules *rules,
                       const char *name, const char *buf, size_t len)
{
    struct loader L = {.ctx = ctx, .r = rules, .name = name};
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser))
        return NCD_ENOMEM;
    yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
    if (!yaml_parser_load(&parser, &L.doc)) {
        int rc = ncd_fail(ctx, NCD_EPARSE, "%s:%zu:%zu: %s%s%s", name,
                          parser.problem_mark.line + 1,
                          parser.problem_mark.column + 1,
                          parser.problem ? parser.problem : "YAML error",
                          parser.context ? " " : "",
                          parser.context ? parser.context : "");
        yaml_parser_delete(&parser);
        return rc;
    }
    yaml_parser_delete(&parser);
    size_t n0 = rules->n, np0 = rules->npats, nl0 = rules->nlits;
    int rc = 0;
    yaml_node_t *root = yaml_document_get_root_node(&L.doc);
    yaml_node_t *list = map_get(&L, root, "rules");
    if (!root || !list || list->type != YAML_SEQUENCE_NODE) {
        rc = lfail(&L, root, NCD_EINVAL,
                   "expected a mapping with a 'rules:' list%s", "");
        goto out;
    }
    for (yaml_node_item_t *it = list->data.sequence.items.start;
         it < list->data.sequence.items.top; it++) {
        rc = load_rule(&L, yaml_document_get_node(&L.doc, *it));
        if (rc < 0)
            goto out;
    }
    /* absorbs must name known rules (possibly in other files: checked in
     * the self-test, since files load one by one). */
    rc = build_prefilter(rules);
out:
    yaml_document_delete(&L.doc);
    if (rc < 0) {
        rollback(rules, n0, np0, nl0);
        build_prefilter(rules);
        return rc;
    }
    return (int)(rules->n - n0);
}

int ncd_rules_load_builtin(struct ncd_ctx *ctx, struct ncd_rules *rules)
{
    int total = 0;
    for (const struct ncd_embedded_file *f = ncd_embedded_files; f->name;
         f++) {
        size_t nl = strlen(f->name);
        if (strncmp(f->name, "rules/", 6) != 0 || nl < 5 ||
            strcmp(f->name + nl - 5, ".yaml") != 0)
            continue;
        int rc = ncd_rules_load_buf(ctx, rules, f->name,
                                    (const char *)f->data, f->size);
        if (rc < 0)
            return rc;
        total += rc;
    }
    return total;
}

int ncd_rules_info(const struct ncd_rules *rules, size_t i,
                   struct ncd_rule_info *o)
{
    if (i >= rules->n)
        return NCD_EINVAL;
    const struct ncd__rule *r = &rules->v[i];
    o->id = r->id;
    o->category = r->cat;
    o->severity = r->sev;
    o->role = r->role;
    o->title = r->title;
    o->when = r->when;
    o->file = r->file;
    o->line = r->line;
    o->nccl_versions = r->versions;
    o->source = r->source;
    o->n_patterns = r->npats;
    o->n_match_examples = r->n_ex_match;
    o->n_nomatch_examples = r->n_ex_nomatch;
    return 0;
}

const char *ncd_rules_pattern(const struct ncd_rules *rules, size_t i,
                              size_t j)
{
    if (i >= rules->n || j >= rules->v[i].npats)
        return NULL;
    return rules->pats[rules->v[i].pat0 + j].src;
}

const char *ncd_rules_example(const struct ncd_rules *rules, size_t i,
                              int match, size_t j)
{
    if (i >= rules->n)
        return NULL;
    const struct ncd__rule *r = &rules->v[i];
    if (match)
        return j < r->n_ex_match ? r->ex_match[j] : NULL;
    return j < r->n_ex_nomatch ? r->ex_nomatch[j] : NULL;
}

/* ---------------------------------------------------------------- match */

int ncd__matcher_init(struct ncd__matcher *m, const struct ncd_rules *r)
{
    memset(m, 0, sizeof *m);
    m->md = pcre2_match_data_create(r->max_match_captures + 1, NULL);
    m->cand = malloc((r->npats + 1) * sizeof *m->cand);
    m->seen = calloc(r->npats + 1, 1);
    if (!m->md || !m->cand || !m->seen) {
        ncd__matcher_release(m);
        return NCD_ENOMEM;
    }
    return 0;
}

void ncd__matcher_release(struct ncd__matcher *m)
{
    pcre2_match_data_free(m->md);
    free(m->cand);
    free(m->seen);
    memset(m, 0, sizeof *m);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

long ncd__rules_match(const struct ncd_rules *r, struct ncd__matcher *m,
                      const char *text, size_t len, int version, size_t *pat)
{
    if (len < 4 || !r->nlits)
        return -1;
    m->ncand = 0;
    const unsigned char *t = (const unsigned char *)text;
    const uint64_t *bm = r->bitmap;
    const size_t stride = r->stride ? r->stride : 1;
    for (size_t i = 0; i + 4 <= len; i += stride) {
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
        return -1;
    if (m->ncand > 1)
        qsort(m->cand, m->ncand, sizeof *m->cand, cmp_u32);
    long found = -1;
    for (size_t c = 0; c < m->ncand; c++) {
        m->seen[m->cand[c]] = 0;
        if (found >= 0)
            continue;
        size_t p = r->pat_order[m->cand[c]];
        const struct ncd__rule *ru = &r->v[r->pats[p].rule];
        if (!ncd__rule_applies(ru, version))
            continue;
        int rc = pcre2_match(r->pats[p].re, (PCRE2_SPTR)text, len, 0, 0, m->md,
                             NULL);
        if (rc >= 0) {
            found = (long)r->pats[p].rule;
            *pat = p;
        }
    }
    return found;
}

long ncd_rules_classify(const struct ncd_rules *rules, const char *line,
                        size_t len)
{
    char scratch[NCD_LOG_MAX_LINE + 1];
    struct ncd_log_line ll;
    if (ncd_log_parse(line, len, scratch, sizeof scratch, &ll) < 0)
        return -1;
    struct ncd__matcher m;
    if (ncd__matcher_init(&m, rules) < 0)
        return -1;
    size_t pat;
    long r = ncd__rules_match(rules, &m, ll.text, ll.text_len, 0, &pat);
    ncd__matcher_release(&m);
    return r;
}

/* ---------------------------------------------------------------- ERE */

/* PCRE2 -> POSIX ERE: "(?<name>" and "(?:" become "(". */
static void to_ere(const char *p, struct ncd_strbuf *out)
{
    for (size_t i = 0; p[i]; i++) {
        if (p[i] == '\\' && p[i + 1]) {
            ncd_sb_putc(out, p[i]);
            ncd_sb_putc(out, p[++i]);
            continue;
        }
        if (p[i] == '(' && p[i + 1] == '?') {
            if (p[i + 2] == ':') {
                ncd_sb_putc(out, '(');
                i += 2;
                continue;
            }
            if (p[i + 2] == '<' && p[i + 3] != '=' && p[i + 3] != '!') {
                const char *gt = strchr(p + i, '>');
                if (gt) {
                    ncd_sb_putc(out, '(');
                    i = (size_t)(gt - p);
                    continue;
                }
            }
        }
        ncd_sb_putc(out, p[i]);
    }
}

void ncd_rules_dump_ere(const struct ncd_rules *rules, struct ncd_strbuf *out)
{
    for (size_t i = 0; i < rules->npats; i++) {
        if (rules->v[rules->pats[i].rule].when)
            continue;
        to_ere(rules->pats[i].src, out);
        ncd_sb_putc(out, '\n');
    }
}

size_t ncd_rules_selftest(const struct ncd_rules *rules,
                          struct ncd_strbuf *report)
{
    size_t fails = 0;
    pcre2_match_data *md = pcre2_match_data_create(
        rules->max_match_captures + 1, NULL);
    for (size_t i = 0; i < rules->n; i++) {
        const struct ncd__rule *r = &rules->v[i];
        for (size_t a = 0; a < r->nabsorbs; a++)
            if (ncd__rules_find(rules, r->absorbs[a]) < 0) {
                ncd_sb_printf(report, "%s:%d: %s: absorbs unknown rule '%s'\n",
                              r->file, r->line, r->id, r->absorbs[a]);
                fails++;
            }
        for (size_t p = 0; p < r->npats; p++) {
            struct ncd_strbuf e = {0};
            to_ere(rules->pats[r->pat0 + p].src, &e);
            regex_t re;
            int rc = regcomp(&re, ncd_sb_str(&e), REG_EXTENDED | REG_NOSUB);
            if (rc != 0) {
                ncd_sb_printf(report,
                              "%s:%d: %s: pattern is not valid POSIX ERE: %s\n",
                              r->file, r->line, r->id, ncd_sb_str(&e));
                fails++;
            } else {
                regfree(&re);
            }
            ncd_sb_release(&e);
        }
        for (int want = 1; want >= 0; want--) {
            size_t n = want ? r->n_ex_match : r->n_ex_nomatch;
            char **ex = want ? r->ex_match : r->ex_nomatch;
            for (size_t k = 0; k < n; k++) {
                int got;
                long who = -1;
                if (r->when) {
                    /* derived rules: patterns apply to a fact string */
                    got = 0;
                    for (size_t p = 0; p < r->npats && md; p++)
                        got |= pcre2_match(rules->pats[r->pat0 + p].re,
                                           (PCRE2_SPTR)ex[k], strlen(ex[k]), 0,
                                           0, md, NULL) >= 0;
                } else {
                    who = ncd_rules_classify(rules, ex[k], strlen(ex[k]));
                    got = who == (long)i;
                }
                if (got != want) {
                    ncd_sb_printf(report, "%s:%d: %s: example %s: %s",
                                  r->file, r->line, r->id,
                                  want ? "should match but does not"
                                       : "must not match but does",
                                  ex[k]);
                    if (who >= 0 && want)
                        ncd_sb_printf(report, " (claimed by %s)",
                                      rules->v[who].id);
                    ncd_sb_putc(report, '\n');
                    fails++;
                }
            }
        }
    }
    pcre2_match_data_free(md);
    return fails;
}
