/* SPDX-License-Identifier: MIT */
/* Port range and nftables analysis (see ncd/ports.h). */
#define _GNU_SOURCE
#include "ncd/ports.h"
#include "ncd/error.h"
#include "ncd/fs.h"
#include "ncd/strbuf.h"
#include "ncd/sysops.h"
#include "node_internal.h"

#include <jansson.h>
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

/* The elements of the named set "family table name" (json_t borrowed). */
static json_t *set_elems(json_t *arr, const char *fam, const char *table,
                         const char *name)
{
    size_t i;
    json_t *o;
    json_array_foreach(arr, i, o)
    {
        json_t *st = json_object_get(o, "set");
        const char *f = json_string_value(json_object_get(st, "family"));
        const char *t = json_string_value(json_object_get(st, "table"));
        const char *n = json_string_value(json_object_get(st, "name"));
        if (f && t && n && !strcmp(f, fam) && !strcmp(t, table) &&
            !strcmp(n, name))
            return json_object_get(st, "elem");
    }
    return NULL;
}

/* Ports matched by a "right" operand: number, {"range":[a,b]},
 * {"set":[...]}, "@named-set" (elements from the rule set's set objects). */
static void ports_in(json_t *right, json_t *all, const char *fam,
                     const char *table, struct ivs *out, int depth)
{
    if (depth > 4)
        return;
    if (json_is_integer(right)) {
        long p = (long)json_integer_value(right);
        iv_add(out, p, p);
        return;
    }
    const char *ref = json_string_value(right);
    if (ref && ref[0] == '@') {
        ports_in(set_elems(all, fam, table, ref + 1), all, fam, table, out,
                 depth + 1);
        return;
    }
    json_t *r = json_object_get(right, "range");
    if (json_is_array(r) && json_array_size(r) == 2) {
        iv_add(out, (long)json_integer_value(json_array_get(r, 0)),
               (long)json_integer_value(json_array_get(r, 1)));
        return;
    }
    json_t *set = json_is_array(right) ? right : json_object_get(right, "set");
    if (json_is_array(set)) {
        size_t i;
        json_t *e;
        json_array_foreach(set, i, e) ports_in(e, all, fam, table, out, depth + 1);
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

static int is_tcp_dport(json_t *left)
{
    json_t *pl = json_object_get(left, "payload");
    const char *proto = json_string_value(json_object_get(pl, "protocol"));
    const char *field = json_string_value(json_object_get(pl, "field"));
    return proto && field && strcmp(proto, "tcp") == 0 &&
           strcmp(field, "dport") == 0;
}

/* A match a new connection from a peer host passes for sure?  ct state
 * established/related does not (new connections), nor does iif lo. */
static int match_excludes_new_peer(json_t *m)
{
    json_t *left = json_object_get(m, "left");
    json_t *ct = json_object_get(left, "ct");
    const char *key = json_string_value(json_object_get(ct, "key"));
    if (key && strcmp(key, "state") == 0) {
        char *s = json_dumps(json_object_get(m, "right"),
                             JSON_COMPACT | JSON_ENCODE_ANY);
        int excl = s && !strstr(s, "new");
        free(s);
        return excl;
    }
    json_t *meta = json_object_get(left, "meta");
    const char *mk = json_string_value(json_object_get(meta, "key"));
    const char *rv = json_string_value(json_object_get(m, "right"));
    if (mk && rv && (strcmp(mk, "iifname") == 0 || strcmp(mk, "iif") == 0) &&
        strcmp(rv, "lo") == 0)
        return 1;
    return 0;
}

/* A match only packets of another protocol than TCP pass: udp dport,
 * meta l4proto udp, ip protocol udp... */
static int match_other_proto(json_t *m)
{
    json_t *left = json_object_get(m, "left");
    const char *op = json_string_value(json_object_get(m, "op"));
    if (op && strcmp(op, "==") != 0)
        return 0;
    json_t *pl = json_object_get(left, "payload");
    const char *proto = json_string_value(json_object_get(pl, "protocol"));
    const char *field = json_string_value(json_object_get(pl, "field"));
    if (proto && strcmp(proto, "tcp") && strcmp(proto, "ip") &&
        strcmp(proto, "ip6") && strcmp(proto, "th"))
        return 1;
    const char *mk =
        json_string_value(json_object_get(json_object_get(left, "meta"), "key"));
    int l4 = (mk && strcmp(mk, "l4proto") == 0) ||
             (proto && field && (strcmp(field, "protocol") == 0 ||
                                 strcmp(field, "nexthdr") == 0));
    const char *rv = json_string_value(json_object_get(m, "right"));
    return l4 && rv && strcmp(rv, "tcp") != 0;
}

/* ---- nft-like text of a rule, for evidence ---------------------------------- */

static void txt_value(struct ncd_strbuf *o, json_t *v, int quote)
{
    if (json_is_integer(v)) {
        ncd_sb_printf(o, "%lld", (long long)json_integer_value(v));
    } else if (json_is_string(v)) {
        ncd_sb_printf(o, quote ? "\"%s\"" : "%s", json_string_value(v));
    } else if (json_is_array(v)) {
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e)
        {
            if (i)
                ncd_sb_putc(o, ',');
            txt_value(o, e, quote);
        }
    } else if (json_object_get(v, "range")) {
        json_t *r = json_object_get(v, "range");
        txt_value(o, json_array_get(r, 0), quote);
        ncd_sb_putc(o, '-');
        txt_value(o, json_array_get(r, 1), quote);
    } else if (json_object_get(v, "prefix")) {
        json_t *p = json_object_get(v, "prefix");
        txt_value(o, json_object_get(p, "addr"), 0);
        ncd_sb_printf(o, "/%lld",
                      (long long)json_integer_value(json_object_get(p, "len")));
    } else if (json_object_get(v, "set")) {
        ncd_sb_puts(o, "{ ");
        size_t i;
        json_t *e;
        json_array_foreach(json_object_get(v, "set"), i, e)
        {
            if (i)
                ncd_sb_puts(o, ", ");
            txt_value(o, e, quote);
        }
        ncd_sb_puts(o, " }");
    } else {
        ncd_sb_puts(o, "?");
    }
}

/* "tcp dport { 3000, 4000-4100 } drop", as `nft list ruleset` shows it. */
static void rule_text(struct ncd_strbuf *o, json_t *expr)
{
    size_t i;
    json_t *e;
    json_array_foreach(expr, i, e)
    {
        size_t before = o->len;
        if (before && o->buf[before - 1] != ' ')
            ncd_sb_putc(o, ' ');
        json_t *m = json_object_get(e, "match");
        const char *vk = NULL;
        if (m) {
            json_t *l = json_object_get(m, "left");
            json_t *pl = json_object_get(l, "payload");
            const char *meta = json_string_value(
                json_object_get(json_object_get(l, "meta"), "key"));
            const char *ct = json_string_value(
                json_object_get(json_object_get(l, "ct"), "key"));
            int quote = 0;
            if (json_object_get(pl, "protocol"))
                ncd_sb_printf(o, "%s %s",
                              json_string_value(json_object_get(pl, "protocol")),
                              json_string_value(json_object_get(pl, "field")));
            else if (pl)
                ncd_sb_printf(o, "@%s,%lld,%lld",
                              json_string_value(json_object_get(pl, "base")),
                              (long long)json_integer_value(json_object_get(pl, "offset")),
                              (long long)json_integer_value(json_object_get(pl, "len")));
            else if (meta && (!strcmp(meta, "iifname") || !strcmp(meta, "oifname") ||
                              !strcmp(meta, "iif") || !strcmp(meta, "oif")))
                ncd_sb_puts(o, meta), quote = meta[3] == 'n' || meta[2] == 'f';
            else if (meta)
                ncd_sb_printf(o, "meta %s", meta);
            else if (ct)
                ncd_sb_printf(o, "ct %s", ct);
            else
                ncd_sb_puts(o, "?");
            const char *op = json_string_value(json_object_get(m, "op"));
            if (op && strcmp(op, "==") && strcmp(op, "in"))
                ncd_sb_printf(o, " %s", op);
            ncd_sb_putc(o, ' ');
            txt_value(o, json_object_get(m, "right"), quote && meta && strstr(meta, "name"));
        } else if (json_object_get(e, "accept")) {
            vk = "accept";
        } else if (json_object_get(e, "drop")) {
            vk = "drop";
        } else if (json_object_get(e, "reject")) {
            const char *t = json_string_value(
                json_object_get(json_object_get(e, "reject"), "type"));
            ncd_sb_puts(o, t && !strcmp(t, "tcp reset") ? "reject with tcp reset"
                                                        : "reject");
        } else if (json_object_get(e, "jump") || json_object_get(e, "goto")) {
            int j = json_object_get(e, "jump") != NULL;
            ncd_sb_printf(o, "%s %s", j ? "jump" : "goto",
                          json_string_value(json_object_get(
                              json_object_get(e, j ? "jump" : "goto"), "target")));
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
    json_error_t err;
    json_t *root = json_loadb(js, len, 0, &err);
    json_t *arr = json_object_get(root, "nftables");
    if (!json_is_array(arr)) {
        json_decref(root);
        return ncd_fail(ctx, NCD_EPARSE, "nft JSON: %s",
                        root ? "no \"nftables\" array" : err.text);
    }
    out->known = 1;
    /* input base chains: "family table name" */
    char chains[32][160];
    int nch = 0;
    size_t i;
    json_t *o;
    json_array_foreach(arr, i, o)
    {
        json_t *ch = json_object_get(o, "chain");
        const char *hook = json_string_value(json_object_get(ch, "hook"));
        if (!hook || strcmp(hook, "input") != 0 || nch >= 32)
            continue;
        snprintf(chains[nch++], sizeof chains[0], "%s %s %s",
                 json_string_value(json_object_get(ch, "family")),
                 json_string_value(json_object_get(ch, "table")),
                 json_string_value(json_object_get(ch, "name")));
        out->input_chains++;
        const char *pol = json_string_value(json_object_get(ch, "policy"));
        if (pol && strcmp(pol, "drop") == 0) {
            out->policy_drop = 1;
            fw_ev(out, chains[nch - 1], ": input hook, policy drop");
        }
    }
    int accept_all = 0;
    struct ivs acc = {0}, cov = {0};
    json_array_foreach(arr, i, o)
    {
        json_t *r = json_object_get(o, "rule");
        if (!r)
            continue;
        const char *fam = json_string_value(json_object_get(r, "family"));
        const char *table = json_string_value(json_object_get(r, "table"));
        char key[160];
        snprintf(key, sizeof key, "%s %s %s", fam, table,
                 json_string_value(json_object_get(r, "chain")));
        int in_input = 0;
        for (int k = 0; k < nch; k++)
            in_input |= strcmp(chains[k], key) == 0;
        if (!in_input)
            continue; /* jumps into user chains are not followed */
        json_t *expr = json_object_get(r, "expr");
        int verdict = 0; /* 1 accept, 2 drop/reject */
        int has_dport = 0, excludes = 0, other_proto = 0;
        cov.n = 0;
        size_t k;
        json_t *e;
        json_array_foreach(expr, k, e)
        {
            if (json_object_get(e, "accept"))
                verdict = 1;
            else if (json_object_get(e, "drop") || json_object_get(e, "reject"))
                verdict = 2;
            json_t *m = json_object_get(e, "match");
            if (!m)
                continue;
            json_t *left = json_object_get(m, "left");
            const char *op = json_string_value(json_object_get(m, "op"));
            if (is_tcp_dport(left) && op &&
                (strcmp(op, "==") == 0 || strcmp(op, "in") == 0)) {
                has_dport = 1;
                ports_in(json_object_get(m, "right"), arr, fam ? fam : "",
                         table ? table : "", &cov, 0);
            } else if (match_excludes_new_peer(m)) {
                excludes = 1;
            } else if (match_other_proto(m)) {
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
                rule_text(&t, expr);
                fw_ev(out, "drops part of the range: ", ncd_sb_str(&t));
                ncd_sb_release(&t);
            }
        }
    }
    out->accept_covers = accept_all || iv_covers(&acc, lo, hi);
    int oom = acc.oom || cov.oom;
    free(acc.v);
    free(cov.v);
    json_decref(root);
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
