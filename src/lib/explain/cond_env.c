/* SPDX-License-Identifier: MIT */
/*
 * Conditions on NCCL_* values NCCL echoed ("X set by environment to V").
 * Values are judged by the variable catalog (data/nccl-vars.yaml) and its
 * checker, which parses them as NCCL does (ncclvars.h); integer knobs are
 * echoed by NCCL already parsed ("%lld.", NCCL src/misc/param.cc).
 */
#define _GNU_SOURCE
#include "explain/reason.h"

#include <stdio.h>
#include <string.h>

#include "ncd/error.h"

/* The hit for variable `name` echoed as e, with {name}, {value} and an
 * evidence line. */
static struct ncd__hit *env_hit(struct ncd__reason *rs, size_t rule,
                                const char *name, const struct ncd__env *e,
                                const char *quote)
{
    struct ncd__hit *h = ncd__hit_new(rs, rule);
    if (!h)
        return NULL;
    ncd__hit_var(h, "name", name);
    ncd__hit_var(h, "value", e->value);
    ncd__hit_ev(h, "%s:%llu: %s set by environment to %s%s%s",
                ncd__src_name(rs->ex, e->src), (unsigned long long)e->line,
                name, quote, e->value, quote);
    h->seq = e->seq;
    return h;
}

/* NCCL_P2P_LEVEL / NCCL_NET_GDR_LEVEL with a value NCCL silently ignores
 * (level names are case-sensitive; "NODE" is nvidia-smi's word). */
int ncd__cond_env_level_value(struct ncd__reason *rs, size_t rule)
{
    static const char *const vars[] = {"NCCL_P2P_LEVEL", "NCCL_NET_GDR_LEVEL"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const struct ncd__env *e = NULL;
        if (!ncd__env_get(rs->ex, vars[i], &e))
            continue;
        int rc;
        const struct ncd_var_catalog *cat = ncd__reason_vars(rs, &rc);
        if (!cat)
            return rc;
        const struct ncd_var_def *d = ncd_var_find(cat, vars[i]);
        struct ncd_var_verdict vd;
        if (!d)
            continue;
        ncd_var_check_value(d, e->value, &vd);
        if (vd.sev < NCD_SEV_WARNING)
            continue;
        return env_hit(rs, rule, vars[i], e, "") ? 1 : NCD_ENOMEM;
    }
    return 0;
}

/* NCCL_IB_RETRY_CNT / NCCL_IB_TIMEOUT outside the range the NIC takes.
 * NCCL passes both straight to ibv_modify_qp (nccl-facts.md §5):
 * retry_cnt is a 3-bit field, timeout 5 bits with 0 = infinite; the
 * ranges are the catalog's. */
int ncd__cond_env_ib_range(struct ncd__reason *rs, size_t rule)
{
    static const struct {
        const char *name, *why;
        int zero_infinite;
    } knobs[] = {
        {"NCCL_IB_RETRY_CNT",
         "the InfiniBand retry count is a 3-bit field (0-7); larger values "
         "are invalid for the NIC",
         0},
        {"NCCL_IB_TIMEOUT",
         "0 or values of 32 and more mean an infinite transport timeout: a "
         "dead peer or link then hangs the job instead of failing it",
         1},
    };
    for (size_t i = 0; i < sizeof knobs / sizeof knobs[0]; i++) {
        const struct ncd__env *e = NULL;
        const char *v = ncd__env_get(rs->ex, knobs[i].name, &e);
        long long x;
        int junk, rc;
        if (!v || ncd_nccl_int_parse(v, &x, &junk) < 0)
            continue; /* overflow: NCCL keeps its default */
        const struct ncd_var_catalog *cat = ncd__reason_vars(rs, &rc);
        if (!cat)
            return rc;
        const struct ncd_var_def *d = ncd_var_find(cat, knobs[i].name);
        if (!d)
            continue;
        int below = d->has_min && x < d->min, above = d->has_max && x > d->max;
        int infinite = knobs[i].zero_infinite && x == 0 && !junk;
        if (!below && !above && !infinite)
            continue;
        const char *why = knobs[i].why;
        struct ncd_var_verdict vd;
        if (below && knobs[i].zero_infinite) {
            /* the text above does not cover it: the catalog's words */
            ncd_var_check_value(d, v, &vd);
            why = vd.msg;
        }
        struct ncd__hit *h = env_hit(rs, rule, knobs[i].name, e, "");
        if (!h)
            return NCD_ENOMEM;
        ncd__hit_var(h, "why", why);
        return 1;
    }
    return 0;
}

/* An interface or HCA list NCCL ignores or never matches. */
int ncd__cond_env_ifname_ignored(struct ncd__reason *rs, size_t rule)
{
    static const char *const vars[] = {"NCCL_SOCKET_IFNAME", "NCCL_IB_HCA",
                                       "NCCL_OOB_NET_IFNAME"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const struct ncd__env *e = NULL;
        const char *v = ncd__env_get(rs->ex, vars[i], &e);
        if (!v)
            continue;
        const char *why = NULL;
        if (strlen(v) <= 1)
            why = "a value of one character or less is ignored by NCCL, "
                  "so automatic selection runs";
        else if (strchr(v, ' '))
            why = "NCCL does not trim blanks: a token with a space never "
                  "matches an interface";
        if (!why)
            continue;
        struct ncd__hit *h = env_hit(rs, rule, vars[i], e, "'");
        if (!h)
            return NCD_ENOMEM;
        ncd__hit_var(h, "why", why);
        return 1;
    }
    return 0;
}

/* Workarounds that cost speed, echoed by NCCL. */
int ncd__cond_env_slow_settings(struct ncd__reason *rs, size_t rule)
{
    static const struct {
        const char *name, *value;
    } slow[] = {{"NCCL_P2P_DISABLE", "1"},  {"NCCL_SHM_DISABLE", "1"},
                {"NCCL_IB_DISABLE", "1"},   {"NCCL_NET_GDR_LEVEL", "LOC"},
                {"NCCL_NVLS_ENABLE", "0"},  {"NCCL_CUMEM_ENABLE", "0"},
                {"NCCL_P2P_LEVEL", "LOC"},  {"NCCL_MAX_NCHANNELS", "1"},
                {"NCCL_ALGO", "Ring"},      {"NCCL_PROTO", "Simple"}};
    char list[256] = "";
    const struct ncd__env *first = NULL;
    for (size_t k = 0; k < sizeof slow / sizeof slow[0]; k++) {
        const struct ncd__env *e = NULL;
        const char *v = ncd__env_get(rs->ex, slow[k].name, &e);
        if (!v || strcmp(v, slow[k].value) != 0)
            continue;
        size_t l = strlen(list);
        snprintf(list + l, sizeof list - l, "%s%s=%s", l ? ", " : "",
                 slow[k].name, v);
        if (!first)
            first = e;
    }
    if (!first)
        return 0;
    struct ncd__hit *h = ncd__hit_new(rs, rule);
    if (!h)
        return NCD_ENOMEM;
    ncd__hit_var(h, "settings", list);
    ncd__hit_ev(h, "%s:%llu: NCCL echoed %s", ncd__src_name(rs->ex, first->src),
                (unsigned long long)first->line, list);
    h->seq = first->seq;
    return 1;
}

/* The same NCCL_* variable echoed with different values by different
 * processes; per-host names may legitimately differ. */
int ncd__cond_env_differs(struct ncd__reason *rs, size_t rule)
{
    static const char *const per_host[] = {
        "NCCL_SOCKET_IFNAME",   "NCCL_IB_HCA",     "NCCL_OOB_NET_IFNAME",
        "NCCL_DEBUG",           "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE",
        "NCCL_HOSTID",          "NCCL_TOPO_FILE",  "NCCL_TOPO_DUMP_FILE",
        "NCCL_GRAPH_DUMP_FILE", "NCCL_COMM_ID",    "NCCL_IB_GID_INDEX",
        "NCCL_CONF_FILE",       NULL};
    const struct ncd_explain *ex = rs->ex;
    for (size_t i = 0; i < ex->nenv; i++)
        for (size_t j = i + 1; j < ex->nenv; j++) {
            const struct ncd__env *a = &ex->env[i], *b = &ex->env[j];
            if (strcmp(a->name, b->name) != 0 ||
                strcmp(a->value, b->value) == 0)
                continue;
            int skip = 0;
            for (size_t k = 0; per_host[k] && !skip; k++)
                skip = strcmp(per_host[k], a->name) == 0;
            if (skip)
                continue;
            struct ncd__hit *h = ncd__hit_new(rs, rule);
            if (!h)
                return NCD_ENOMEM;
            char buf[256];
            ncd__hit_var(h, "name", a->name);
            snprintf(buf, sizeof buf, "%s on %s, %s on %s", a->value,
                     a->host[0] ? a->host : "one process", b->value,
                     b->host[0] ? b->host : "another");
            ncd__hit_var(h, "values", buf);
            ncd__hit_ev(h, "%s:%llu: %s set by environment to %s",
                        ncd__src_name(ex, a->src), (unsigned long long)a->line,
                        a->name, a->value);
            ncd__hit_ev(h, "%s:%llu: %s set by environment to %s",
                        ncd__src_name(ex, b->src), (unsigned long long)b->line,
                        b->name, b->value);
            h->seq = b->seq;
            return 1;
        }
    return 0;
}

/* A failure an override explains: the first WARN of the rule's `files:`,
 * else the first match of its `absorbs` (framework summaries count only
 * when no root cause was found: they say that something failed, not
 * where). */
static const struct ncd__rec *override_failure(struct ncd__reason *rs,
                                               size_t rule)
{
    const struct ncd_explain *ex = rs->ex;
    const struct ncd__rule *r = &ex->rules->v[rule];
    const struct ncd__rec *warn = ncd__rule_warns(ex, rule);
    if (warn)
        return warn;
    int other_root = 0;
    for (size_t i = 0; i < rs->n && !other_root; i++) {
        const struct ncd__rule *o = &ex->rules->v[rs->v[i].rule];
        int absorbed = 0;
        for (size_t a = 0; a < r->nabsorbs && !absorbed; a++)
            absorbed = strcmp(r->absorbs[a], o->id) == 0;
        other_root = !absorbed && rs->v[i].role == NCD_ROLE_ROOT &&
                     rs->v[i].sev >= NCD_SEV_WARNING;
    }
    const struct ncd__rec *best = NULL;
    for (size_t a = 0; a < r->nabsorbs; a++) {
        long k = ncd__rules_find(ex->rules, r->absorbs[a]);
        if (k < 0 || !ex->recs[k].count ||
            (other_root && ex->rules->v[k].role == NCD_ROLE_WRAPPER))
            continue;
        if (!best || ex->recs[k].first_seq < best->first_seq)
            best = &ex->recs[k];
    }
    return best;
}

/* A variable the user, a config file or an image set ("X set by
 * environment to V" echoes all of them) that matches the rule's patterns
 * as "NAME=VALUE", and a failure where that override acts.  One finding
 * per failure: the first override rule (load order) that explains it
 * names it. */
int ncd__cond_override_failed(struct ncd__reason *rs, size_t rule)
{
    const struct ncd_explain *ex = rs->ex;
    for (size_t i = 0; i < ex->nenv; i++) {
        const struct ncd__env *e = &ex->env[i];
        char nv[200];
        snprintf(nv, sizeof nv, "%s=%s", e->name, e->value);
        int m = ncd__rule_fact_match(ex, rule, nv);
        if (m < 0)
            return m;
        if (!m)
            continue;
        const struct ncd__rec *fail = override_failure(rs, rule);
        if (!fail)
            return 0;
        for (size_t k = 0; k < rs->n; k++) /* explained already */
            if (ex->rules->v[rs->v[k].rule].cond == NCD__COND_override_failed &&
                rs->v[k].explains_seq == fail->first_seq)
                return 0;
        struct ncd__hit *h = env_hit(rs, rule, e->name, e, "");
        if (!h)
            return NCD_ENOMEM;
        h->explains_seq = fail->first_seq;
        const char *ft = fail->nev ? fail->ev[0].text : "";
        const char *w = strstr(ft, "NCCL WARN ");
        ncd__hit_var(h, "failure", w ? w + 10 : ft);
        ncd__hit_ev_rec(ex, h, fail);
        /* named first: the setting is older than what it broke */
        if (fail->first_seq < h->seq)
            h->seq = fail->first_seq;
        return 1;
    }
    return 0;
}
