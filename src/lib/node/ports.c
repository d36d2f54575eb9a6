/* SPDX-License-Identifier: MIT */
/* Port range and nftables analysis (see ncd/ports.h). */
#define _GNU_SOURCE
#include "ncd/ports.h"
#include "ncd/error.h"
#include "ncd/fs.h"
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

/* Ports matched by a "right" operand: number, {"range":[a,b]}, {"set":[...]}.
 * Sets cover[] bits relative to [lo,hi]: returns how many of the range's
 * ports are matched. */
static long ports_in(json_t *right, int lo, int hi, unsigned char *cover)
{
    long n = 0;
    if (json_is_integer(right)) {
        long p = (long)json_integer_value(right);
        if (p >= lo && p <= hi && !cover[p - lo]++)
            n++;
        return n;
    }
    json_t *r = json_object_get(right, "range");
    if (json_is_array(r) && json_array_size(r) == 2) {
        long a = (long)json_integer_value(json_array_get(r, 0));
        long b = (long)json_integer_value(json_array_get(r, 1));
        for (long p = a < lo ? lo : a; p <= b && p <= hi; p++)
            if (!cover[p - lo]++)
                n++;
        return n;
    }
    json_t *set = json_object_get(right, "set");
    if (json_is_array(set)) {
        size_t i;
        json_t *e;
        json_array_foreach(set, i, e) n += ports_in(e, lo, hi, cover);
    }
    return n;
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
        char *s = json_dumps(json_object_get(m, "right"), JSON_COMPACT);
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
    int span = hi - lo + 1;
    unsigned char *acc = calloc((size_t)span, 1);
    if (!acc) {
        json_decref(root);
        return NCD_ENOMEM;
    }
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
    json_array_foreach(arr, i, o)
    {
        json_t *r = json_object_get(o, "rule");
        if (!r)
            continue;
        char key[160];
        snprintf(key, sizeof key, "%s %s %s",
                 json_string_value(json_object_get(r, "family")),
                 json_string_value(json_object_get(r, "table")),
                 json_string_value(json_object_get(r, "chain")));
        int in_input = 0;
        for (int k = 0; k < nch; k++)
            in_input |= strcmp(chains[k], key) == 0;
        if (!in_input)
            continue; /* jumps into user chains are not followed */
        json_t *expr = json_object_get(r, "expr");
        int verdict = 0; /* 1 accept, 2 drop/reject */
        int has_dport = 0, excludes = 0, other_proto = 0;
        unsigned char *cov = calloc((size_t)span, 1);
        if (!cov)
            break;
        long covered = 0;
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
                covered += ports_in(json_object_get(m, "right"), lo, hi, cov);
            } else if (match_excludes_new_peer(m)) {
                excludes = 1;
            } else {
                json_t *pl = json_object_get(left, "payload");
                const char *proto =
                    json_string_value(json_object_get(pl, "protocol"));
                if (proto && strcmp(proto, "udp") == 0)
                    other_proto = 1;
            }
        }
        char *txt = json_dumps(expr, JSON_COMPACT);
        if (verdict == 1 && !excludes && !other_proto) {
            if (!has_dport) {
                accept_all = 1;
            } else {
                for (int p = 0; p < span; p++)
                    acc[p] |= cov[p];
            }
        } else if (verdict == 2 && has_dport && covered > 0) {
            out->drop_overlap = 1;
            fw_ev(out, "drops part of the range: ", txt ? txt : "?");
        }
        free(txt);
        free(cov);
    }
    int all = 1;
    for (int p = 0; p < span; p++)
        all &= acc[p] != 0;
    out->accept_covers = accept_all || all;
    free(acc);
    json_decref(root);
    return 0;
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
