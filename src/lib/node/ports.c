/* SPDX-License-Identifier: MIT */
/* Port range and nftables analysis (see ncd/ports.h). */
#define _GNU_SOURCE
#include "ncd/ports.h"
#include "ncd/error.h"
#include "ncd/fs.h"
#include "ncd/strbuf.h"
#include "ncd/sysops.h"
#include "node_internal.h"
#include "jflat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ncd_port_range_parse(const char *buf, int *lo, int *hi)
{
    int a, b;
    if (sscanf(buf, "%d %d", &a, &b) != 2 || a < 1 || b > 65535 || a > b)
        return NCD_EPARSE;
    *lo = a;
    *hi = b;
    return 0;
}

/* ---- nftables -------------------------------------------------------------- */

static void fw_ev(struct ncd_fw *fw, const char *a, const char *b)
{
    if (fw->n_evidence < 8)
        snprintf(fw->evidence[fw->n_evidence++], sizeof fw->evidence[0],
                 "%s%s", a, b);
}

/* Port intervals, inclusive. */
struct ivs {
    long (*v)[2];
    size_t n, cap;
    int oom;
};

static void iv_add(struct ivs *s, long a, long b)
{
    if (a > b || s->oom)
        return;
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 16;
        long (*nv)[2] = realloc(s->v, nc * sizeof *nv);
        if (!nv) {
            s->oom = 1;
            return;
        }
        s->v = nv;
        s->cap = nc;
    }
    s->v[s->n][0] = a;
    s->v[s->n][1] = b;
    s->n++;
}

/* jflat.h, over the document `d` in scope */
#define G(x, k) ncd__jf_get(d, (x), (k))
#define S(x) ncd__jf_str(d, (x))
#define F(x) ncd__jf_first(d, (x))
#define N(x, k) ncd__jf_next(d, (x), (k))
#define IS_INT(x) (JF_TYPE(d, (x)) == JF_INT)
#define IS_ARR(x) (JF_TYPE(d, (x)) == JF_ARR)
#define IS_STR(x) (JF_TYPE(d, (x)) == JF_STR)
#define INT(x) (d->n[(x)].i)
#define JF_FOREACH(arr, it) for (unsigned it = F(arr); it; it = N((arr), it))

/* Does value v hold the string w (itself, or in an array or set)? */
static int has_str(const struct jf *d, unsigned v, const char *w)
{
    if (IS_STR(v))
        return strcmp(S(v), w) == 0;
    if (!IS_ARR(v) && !IS_ARR(G(v, "set")))
        return 0;
    JF_FOREACH(IS_ARR(v) ? v : G(v, "set"), e) if (has_str(d, e, w)) return 1;
    return 0;
}

/* The elements of the named set "family table name" (node index in d). */
static unsigned set_elems(const struct jf *d, unsigned arr, const char *fam, const char *table,
                         const char *name)
{
    JF_FOREACH(arr, o) {
        unsigned st = G(o, "set");
        const char *f = S(G(st, "family"));
        const char *t = S(G(st, "table"));
        const char *n = S(G(st, "name"));
        if (f && t && n && !strcmp(f, fam) && !strcmp(t, table) &&
            !strcmp(n, name))
            return G(st, "elem");
    }
    return 0;
}

/* Ports matched by a "right" operand: number, {"range":[a,b]},
 * {"set":[...]}, "@named-set" (elements from the rule set's set objects). */
static void ports_in(const struct jf *d, unsigned right, unsigned all, const char *fam,
                     const char *table, struct ivs *out, int depth)
{
    if (depth > 4)
        return;
    if (IS_INT(right)) {
        long p = (long)INT(right);
        iv_add(out, p, p);
        return;
    }
    const char *ref = S(right);
    if (ref && ref[0] == '@') {
        ports_in(d, set_elems(d, all, fam, table, ref + 1), all, fam, table, out,
                 depth + 1);
        return;
    }
    unsigned r = G(right, "range");
    if (IS_ARR(r) && ncd__jf_size(d, r) == 2) {
        iv_add(out, (long)INT(F(r)),
               (long)INT(N(r, F(r))));
        return;
    }
    unsigned set = IS_ARR(right) ? right : G(right, "set");
    if (IS_ARR(set)) {
        JF_FOREACH(set, e) ports_in(d, e, all, fam, table, out, depth + 1);
    }
}

static int cmp_iv(const void *a, const void *b)
{
    const long *x = a, *y = b;
    return (x[0] > y[0]) - (x[0] < y[0]);
}

/* Do the intervals cover all of [lo, hi]? */
static int iv_covers(struct ivs *s, long lo, long hi)
{
    if (s->n)
        qsort(s->v, s->n, sizeof *s->v, cmp_iv);
    long next = lo; /* first port not yet covered */
    for (size_t i = 0; i < s->n && next <= hi; i++) {
        if (s->v[i][0] > next)
            return 0;
        if (s->v[i][1] >= next)
            next = s->v[i][1] + 1;
    }
    return next > hi;
}

static int is_tcp_dport(const struct jf *d, unsigned left)
{
    unsigned pl = G(left, "payload");
    const char *proto = S(G(pl, "protocol"));
    const char *field = S(G(pl, "field"));
    return proto && field && strcmp(proto, "tcp") == 0 &&
           strcmp(field, "dport") == 0;
}

/* A match a new connection from a peer host passes for sure?  ct state
 * established/related does not (new connections), nor does iif lo. */
static int match_excludes_new_peer(const struct jf *d, unsigned m)
{
    unsigned left = G(m, "left");
    unsigned ct = G(left, "ct");
    const char *key = S(G(ct, "key"));
    if (key && strcmp(key, "state") == 0) {
        return !has_str(d, G(m, "right"), "new");
    }
    unsigned meta = G(left, "meta");
    const char *mk = S(G(meta, "key"));
    const char *rv = S(G(m, "right"));
    if (mk && rv && (strcmp(mk, "iifname") == 0 || strcmp(mk, "iif") == 0) &&
        strcmp(rv, "lo") == 0)
        return 1;
    return 0;
}

/* A match only packets of another protocol than TCP pass: udp dport,
 * meta l4proto udp, ip protocol udp... */
static int match_other_proto(const struct jf *d, unsigned m)
{
    unsigned left = G(m, "left");
    const char *op = S(G(m, "op"));
    if (op && strcmp(op, "==") != 0)
        return 0;
    unsigned pl = G(left, "payload");
    const char *proto = S(G(pl, "protocol"));
    const char *field = S(G(pl, "field"));
    if (proto && strcmp(proto, "tcp") && strcmp(proto, "ip") &&
        strcmp(proto, "ip6") && strcmp(proto, "th"))
        return 1;
    const char *mk =
        S(G(G(left, "meta"), "key"));
    int l4 = (mk && strcmp(mk, "l4proto") == 0) ||
             (proto && field && (strcmp(field, "protocol") == 0 ||
                                 strcmp(field, "nexthdr") == 0));
    const char *rv = S(G(m, "right"));
    return l4 && rv && strcmp(rv, "tcp") != 0;
}

/* ---- nft-like text of a rule, for evidence ---------------------------------- */

static void txt_value(const struct jf *d, struct ncd_strbuf *o, unsigned v,
                      int quote)
{
    if (IS_INT(v)) {
        ncd_sb_printf(o, "%lld", (long long)INT(v));
    } else if (IS_STR(v)) {
        ncd_sb_printf(o, quote ? "\"%s\"" : "%s", S(v));
    } else if (IS_ARR(v)) {
        JF_FOREACH(v, e) {
            if (e != F(v))
                ncd_sb_putc(o, ',');
            txt_value(d, o, e, quote);
        }
    } else if (G(v, "range")) {
        unsigned r = G(v, "range");
        txt_value(d, o, F(r), quote);
        ncd_sb_putc(o, '-');
        txt_value(d, o, N(r, F(r)), quote);
    } else if (G(v, "prefix")) {
        unsigned p = G(v, "prefix");
        txt_value(d, o, G(p, "addr"), 0);
        ncd_sb_printf(o, "/%lld",
                      (long long)INT(G(p, "len")));
    } else if (G(v, "set")) {
        ncd_sb_puts(o, "{ ");
        JF_FOREACH(G(v, "set"), e) {
            if (e != F(G(v, "set")))
                ncd_sb_puts(o, ", ");
            txt_value(d, o, e, quote);
        }
        ncd_sb_puts(o, " }");
    } else {
        ncd_sb_puts(o, "?");
    }
}

/* "tcp dport { 3000, 4000-4100 } drop", as `nft list ruleset` shows it. */
static void rule_text(const struct jf *d, struct ncd_strbuf *o, unsigned expr)
{
    JF_FOREACH(expr, e) {
        size_t before = o->len;
        if (before && o->buf[before - 1] != ' ')
            ncd_sb_putc(o, ' ');
        unsigned m = G(e, "match");
        const char *vk = NULL;
        if (m) {
            unsigned l = G(m, "left");
            unsigned pl = G(l, "payload");
            const char *meta = S(
                G(G(l, "meta"), "key"));
            const char *ct = S(
                G(G(l, "ct"), "key"));
            int quote = 0;
            if (G(pl, "protocol"))
                ncd_sb_printf(o, "%s %s",
                              S(G(pl, "protocol")),
                              S(G(pl, "field")));
            else if (pl)
                ncd_sb_printf(o, "@%s,%lld,%lld",
                              S(G(pl, "base")),
                              (long long)INT(G(pl, "offset")),
                              (long long)INT(G(pl, "len")));
            else if (meta && (!strcmp(meta, "iifname") || !strcmp(meta, "oifname") ||
                              !strcmp(meta, "iif") || !strcmp(meta, "oif")))
                ncd_sb_puts(o, meta), quote = meta[3] == 'n' || meta[2] == 'f';
            else if (meta)
                ncd_sb_printf(o, "meta %s", meta);
            else if (ct)
                ncd_sb_printf(o, "ct %s", ct);
            else
                ncd_sb_puts(o, "?");
            const char *op = S(G(m, "op"));
            if (op && strcmp(op, "==") && strcmp(op, "in"))
                ncd_sb_printf(o, " %s", op);
            ncd_sb_putc(o, ' ');
            txt_value(d, o, G(m, "right"), quote && meta && strstr(meta, "name"));
        } else if (G(e, "accept")) {
            vk = "accept";
        } else if (G(e, "drop")) {
            vk = "drop";
        } else if (G(e, "reject")) {
            const char *t = S(
                G(G(e, "reject"), "type"));
            ncd_sb_puts(o, t && !strcmp(t, "tcp reset") ? "reject with tcp reset"
                                                        : "reject");
        } else if (G(e, "jump") || G(e, "goto")) {
            int j = G(e, "jump") != 0;
            ncd_sb_printf(o, "%s %s", j ? "jump" : "goto",
                          S(G(
                              G(e, j ? "jump" : "goto"), "target")));
        } else {
            o->len = before; /* counter and the like: left out */
            if (o->buf)
                o->buf[before] = '\0';
        }
        if (vk)
            ncd_sb_puts(o, vk);
    }
}

int ncd_nft_analyze(struct ncd_ctx *ctx, const char *js, size_t len, int lo,
                    int hi, struct ncd_fw *out)
{
    struct jf doc;
    const struct jf *d = &doc;
    int prc = ncd__jf_parse(&doc, js, len);
    if (prc == -2)
        return NCD_ENOMEM;
    if (prc < 0)
        return ncd_fail(ctx, NCD_EPARSE, "nft JSON: not valid JSON");
    unsigned arr = G(1, "nftables");
    if (!IS_ARR(arr)) {
        ncd__jf_free(&doc);
        return ncd_fail(ctx, NCD_EPARSE, "nft JSON: no \"nftables\" array");
    }
    out->known = 1;
    /* input base chains: "family table name" */
    char chains[32][160];
    int nch = 0;
    JF_FOREACH(arr, o) {
        unsigned ch = G(o, "chain");
        const char *hook = S(G(ch, "hook"));
        if (!hook || strcmp(hook, "input") != 0 || nch >= 32)
            continue;
        snprintf(chains[nch++], sizeof chains[0], "%s %s %s",
                 S(G(ch, "family")),
                 S(G(ch, "table")),
                 S(G(ch, "name")));
        out->input_chains++;
        const char *pol = S(G(ch, "policy"));
        if (pol && strcmp(pol, "drop") == 0) {
            out->policy_drop = 1;
            fw_ev(out, chains[nch - 1], ": input hook, policy drop");
        }
    }
    int accept_all = 0;
    struct ivs acc = {0}, cov = {0};
    JF_FOREACH(arr, o) {
        unsigned r = G(o, "rule");
        if (!r)
            continue;
        const char *fam = S(G(r, "family"));
        const char *table = S(G(r, "table"));
        char key[160];
        snprintf(key, sizeof key, "%s %s %s", fam, table,
                 S(G(r, "chain")));
        int in_input = 0;
        for (int k = 0; k < nch; k++)
            in_input |= strcmp(chains[k], key) == 0;
        if (!in_input)
            continue; /* jumps into user chains are not followed */
        unsigned expr = G(r, "expr");
        int verdict = 0; /* 1 accept, 2 drop/reject */
        int has_dport = 0, excludes = 0, other_proto = 0;
        cov.n = 0;
        JF_FOREACH(expr, e) {
            if (G(e, "accept"))
                verdict = 1;
            else if (G(e, "drop") || G(e, "reject"))
                verdict = 2;
            unsigned m = G(e, "match");
            if (!m)
                continue;
            unsigned left = G(m, "left");
            const char *op = S(G(m, "op"));
            if (is_tcp_dport(d, left) && op &&
                (strcmp(op, "==") == 0 || strcmp(op, "in") == 0)) {
                has_dport = 1;
                ports_in(d, G(m, "right"), arr, fam ? fam : "",
                         table ? table : "", &cov, 0);
            } else if (match_excludes_new_peer(d, m)) {
                excludes = 1;
            } else if (match_other_proto(d, m)) {
                other_proto = 1;
            }
        }
        if (verdict == 1 && !excludes && !other_proto) {
            if (!has_dport)
                accept_all = 1;
            for (size_t p = 0; p < cov.n; p++)
                iv_add(&acc, cov.v[p][0], cov.v[p][1]);
        } else if (verdict == 2 && has_dport && !other_proto) {
            int overlap = 0;
            for (size_t p = 0; p < cov.n; p++)
                overlap |= cov.v[p][0] <= hi && cov.v[p][1] >= lo;
            if (overlap) {
                out->drop_overlap = 1;
                struct ncd_strbuf t = {0};
                ncd_sb_printf(&t, "%s: ", key);
                rule_text(d, &t, expr);
                fw_ev(out, "drops part of the range: ", ncd_sb_str(&t));
                ncd_sb_release(&t);
            }
        }
    }
    out->accept_covers = accept_all || iv_covers(&acc, lo, hi);
    int oom = acc.oom || cov.oom;
    free(acc.v);
    free(cov.v);
    ncd__jf_free(&doc);
    return oom ? NCD_ENOMEM : 0;
}

int ncd_fw_probe(struct ncd_ctx *ctx, int lo, int hi, struct ncd_fw *out)
{
    memset(out, 0, sizeof *out);
    char *buf = NULL;
    size_t len = 0;
    int rc = ncd_sys_firewall(ctx, 2000, &buf, &len, out->source,
                              sizeof out->source);
    if (rc == NCD_ENOMEM)
        return rc;
    if (rc < 0)
        return 0; /* detail stays in the ctx for the caller to show */
    rc = ncd_nft_analyze(ctx, buf, len, lo, hi, out);
    free(buf);
    return rc == NCD_ENOMEM ? rc : 0;
}
