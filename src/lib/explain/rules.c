/* SPDX-License-Identifier: MIT */
/*
 * The rule set: YAML (rules/README.md, read through core/yaml.h) ->
 * validated rules with compiled PCRE2 patterns; the literal prefilter is
 * rebuilt after each document (prefilter.c).  A rule's `when:` must name a
 * condition of explain/cond.h.
 *
 * A loaded rule set is read-only: several scans (threads) may share it.
 */
#define _GNU_SOURCE
#include "explain/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/embedded.h"
#include "core/yaml.h"
#include "explain/cond.h"
#include "ncd/error.h"

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

void ncd__strv_free(char **v, size_t n)
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
    ncd__strv_free(r->env_names, r->nenv);
    ncd__strv_free(r->env_vals, r->nenv);
    ncd__strv_free(r->ex_match, r->n_ex_match);
    ncd__strv_free(r->ex_nomatch, r->n_ex_nomatch);
    ncd__strv_free(r->absorbs, r->nabsorbs);
    ncd__strv_free(r->files, r->nfiles);
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
    free(rules->file_rules);
    ncd_known_bugs_release(&rules->bugs);
    ncd__jit_free(rules->jit);
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

int ncd__versions_parse(const char *s, int *vmin, int *vmax)
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

int ncd__version_in(int vmin, int vmax, int version)
{
    if (!version)
        return 1;
    if (vmin && version < vmin)
        return 0;
    if (vmax && version >= vmax)
        return 0;
    return 1;
}

int ncd__rule_applies(const struct ncd__rule *rule, int version)
{
    return ncd__version_in(rule->vmin, rule->vmax, version);
}

/* ---------------------------------------------------------------- YAML */

struct loader {
    struct ncd__yaml y;
    struct ncd_rules *r;
    int lazy; /* compile patterns on first use (built-in, tested rules) */
};

#define LFAIL(L, n, ...) ncd__yaml_fail(&(L)->y, (n), NCD_EINVAL, __VA_ARGS__)

static yaml_node_t *get(struct loader *L, yaml_node_t *m, const char *key)
{
    return ncd__yaml_get(&L->y, m, key);
}

static const char *str(struct loader *L, yaml_node_t *m, const char *key)
{
    return ncd__yaml_str(&L->y, m, key);
}

static const char *const rule_keys[] = {
    "id",     "category", "severity", "role",          "priority",
    "title",  "patterns", "cause",    "fix",           "env",
    "source", "when",     "absorbs",  "nccl_versions", "examples",
    "files",  NULL};

/* Every key known, the required ones present, the id new. */
static int check_keys(struct loader *L, yaml_node_t *m, const char **idp)
{
    for (size_t p = 0; p < ncd__yaml_map_len(m); p++) {
        yaml_node_t *kn = ncd__yaml_map_key(&L->y, m, p);
        const char *k = ncd__yaml_scalar(kn);
        int ok = 0;
        for (size_t i = 0; k && rule_keys[i]; i++)
            ok |= strcmp(k, rule_keys[i]) == 0;
        if (!ok)
            return LFAIL(L, kn, "unknown key '%s' in rule", k);
    }
    const char *id = str(L, m, "id");
    if (!id || !*id)
        return LFAIL(L, m, "rule without an 'id'");
    if (ncd__rules_find(L->r, id) >= 0)
        return LFAIL(L, get(L, m, "id"), "duplicate rule id '%s'", id);
    static const char *const req[] = {"category", "severity", "title",
                                      "cause",    "fix",      "source",
                                      "nccl_versions"};
    for (size_t i = 0; i < sizeof req / sizeof req[0]; i++)
        if (!str(L, m, req[i]))
            return LFAIL(L, m, "rule '%s' has no '%s'", id, req[i]);
    *idp = id;
    return 0;
}

/* category, severity, role, priority, versions, when and the texts. */
static int load_head(struct loader *L, yaml_node_t *m, const char *id,
                     struct ncd__rule *ru)
{
    ru->line = (int)m->start_mark.line + 1;
    const char *cat = str(L, m, "category");
    int c = ncd_category_parse(cat);
    if (c < 0)
        return LFAIL(L, get(L, m, "category"),
                     "unknown category '%s' (see categories.md)", cat);
    ru->cat = (enum ncd_category)c;
    const char *sev = str(L, m, "severity");
    int s = ncd_severity_parse(sev);
    if (s < 0)
        return LFAIL(L, get(L, m, "severity"), "unknown severity '%s'", sev);
    ru->sev = (enum ncd_severity)s;
    const char *role = str(L, m, "role");
    int ro = role ? role_parse(role) : 0;
    if (ro < 0)
        return LFAIL(L, get(L, m, "role"),
                     "unknown role '%s' (root, consequence, wrapper, context)",
                     role);
    ru->role = (enum ncd_rule_role)ro;
    const char *prio = str(L, m, "priority");
    ru->priority = 50;
    if (prio) {
        char *e;
        long pv = strtol(prio, &e, 10);
        if (*e || pv < 0 || pv > 1000)
            return LFAIL(L, get(L, m, "priority"),
                         "priority must be an integer 0..1000, not '%s'", prio);
        ru->priority = (int)pv;
    }
    const char *vers = str(L, m, "nccl_versions");
    if (ncd__versions_parse(vers, &ru->vmin, &ru->vmax) < 0)
        return LFAIL(L, get(L, m, "nccl_versions"),
                     "bad nccl_versions '%s' (\"any\" or \">=2.19 <2.20\")",
                     vers);
    const char *when = str(L, m, "when");
    ru->cond = when ? ncd__cond_find(when) : -1;
    if (when && ru->cond < 0)
        return LFAIL(L, get(L, m, "when"), "unknown condition '%s' in 'when'",
                     when);
    if (!(ru->id = strdup(id)) || !(ru->title = strdup(str(L, m, "title"))) ||
        !(ru->cause = strdup(str(L, m, "cause"))) ||
        !(ru->fix = strdup(str(L, m, "fix"))) ||
        !(ru->source = strdup(str(L, m, "source"))) ||
        !(ru->versions = strdup(vers)) || !(ru->file = strdup(L->y.name)) ||
        (when && !(ru->when = strdup(when))))
        return NCD_ENOMEM;
    return 0;
}

/* env: {VAR: value}; "~" / null means: unset the variable. */
static int load_env(struct loader *L, yaml_node_t *env, const char *id,
                    struct ncd__rule *ru)
{
    if (!env)
        return 0;
    if (env->type != YAML_MAPPING_NODE)
        return LFAIL(L, env, "'env' of '%s' must be a mapping VAR: value", id);
    size_t k = ncd__yaml_map_len(env);
    ru->env_names = calloc(k ? k : 1, sizeof(char *));
    ru->env_vals = calloc(k ? k : 1, sizeof(char *));
    if (!ru->env_names || !ru->env_vals)
        return NCD_ENOMEM;
    for (size_t i = 0; i < k; i++) {
        yaml_node_t *vn = ncd__yaml_map_value(&L->y, env, i);
        const char *kk = ncd__yaml_scalar(ncd__yaml_map_key(&L->y, env, i));
        const char *vv = ncd__yaml_scalar(vn);
        if (!kk || !vv)
            return LFAIL(L, vn, "env of '%s': values must be strings", id);
        ru->env_names[i] = strdup(kk);
        int unset = ncd__yaml_is_null(vn);
        ru->env_vals[i] = unset ? NULL : strdup(vv);
        ru->nenv = i + 1;
        if (!ru->env_names[i] || (!unset && !ru->env_vals[i]))
            return NCD_ENOMEM;
    }
    return 0;
}

/* Only (?:...) and (?<name>...) groups: inline flags such as (?i) would
 * defeat the case-sensitive prefilter, and look-arounds are not POSIX ERE. */
static int groups_ok(const char *pat)
{
    for (const char *q = strstr(pat, "(?"); q; q = strstr(q + 2, "(?")) {
        if (q > pat && q[-1] == '\\')
            continue;
        if (q[2] == ':' ||
            (q[2] == '<' && ((q[3] >= 'a' && q[3] <= 'z') ||
                             (q[3] >= 'A' && q[3] <= 'Z') || q[3] == '_')))
            continue;
        return 0;
    }
    return 1;
}

/*
 * Compiles pattern `src` (taken over, freed on error) as a pattern of rule
 * `rule`, an observer of known bug `bug` when bug >= 0, and adds its
 * prefilter literals unless `literals` is 0; `lazy` leaves the compile to
 * the first use (built-in, tested patterns).  0, NCD_ENOMEM, or
 * NCD_EINVAL with the reason in why[].
 */
static int pattern_append(struct ncd_rules *r, char *src, size_t rule,
                          int bug, int literals, int lazy, char *why,
                          size_t whysz)
{
    if (!groups_ok(src)) {
        snprintf(why, whysz,
                 "pattern '%s': only (?:...) and (?<name>...) groups are "
                 "allowed (no inline flags or look-arounds)",
                 src);
        free(src);
        return NCD_EINVAL;
    }
    /* Rules given by the user compile now, so a bad pattern is reported at
     * load; built-in ones, which the test suite compiles, on their first
     * prefilter hit (ncd__pattern_code): compiling all 500+ cost most of
     * the start-up.  JIT compiling always waits for the first use. */
    pcre2_code *re = NULL;
    if (!lazy) {
        int err;
        PCRE2_SIZE off;
        re = ncd__pattern_compile(src, &err, &off);
        if (!re) {
            PCRE2_UCHAR buf[256];
            pcre2_get_error_message(err, buf, sizeof buf);
            snprintf(why, whysz,
                     "pattern '%s' does not compile: %s at offset %zu", src,
                     (char *)buf, (size_t)off);
            free(src);
            return NCD_EINVAL;
        }
    }
    uint32_t cap = ncd__pattern_groups(src);
    if (cap + 1 > r->max_match_captures)
        r->max_match_captures = cap + 1;
    if (r->npats == r->capp) {
        size_t nc = r->capp ? r->capp * 2 : 64;
        struct ncd__pattern *nv = realloc(r->pats, nc * sizeof *nv);
        if (!nv) {
            pcre2_code_free(re);
            free(src);
            return NCD_ENOMEM;
        }
        r->pats = nv;
        r->capp = nc;
    }
    struct ncd__pattern *pt = &r->pats[r->npats];
    pt->src = src;
    pt->re = re;
    pt->rule = rule;
    pt->bug = bug;
    pt->obs_slot = bug >= 0 ? (int)r->nobs++ : -1;
    r->npats++;
    r->v[rule].npats++;
    if (!literals)
        return 0;
    char **lits;
    int nl = ncd__literals_extract(src, &lits);
    if (nl < 0) {
        snprintf(why, whysz,
                 "pattern '%s' has an alternative without a literal of 4+ "
                 "characters (the prefilter needs one)",
                 src);
        return NCD_EINVAL;
    }
    for (int j = 0; j < nl; j++)
        if (ncd__literal_add(r, lits[j], r->npats - 1) < 0) {
            free_items(lits, (size_t)j, (size_t)nl);
            free(lits);
            return NCD_ENOMEM;
        }
    free(lits);
    return 0;
}

/* A pattern of the rule being loaded; derived rules' patterns match fact
 * strings, not lines, and need no literals. */
static int add_pattern(struct loader *L, yaml_node_t *pn, char *src)
{
    struct ncd_rules *r = L->r;
    char why[512];
    int rc = pattern_append(r, src, r->n - 1, -1, !r->v[r->n - 1].when,
                            L->lazy, why, sizeof why);
    return rc == NCD_EINVAL ? LFAIL(L, pn, "%s", why) : rc;
}

static int load_patterns(struct loader *L, yaml_node_t *m, const char *id,
                         struct ncd__rule *ru)
{
    char **pv = NULL;
    size_t np = 0;
    yaml_node_t *pn = get(L, m, "patterns");
    int rc = ncd__yaml_strv(&L->y, pn, "patterns", NCD_EINVAL, &pv, &np);
    if (rc == 0 && !np && !ru->when && !ru->nfiles)
        rc = LFAIL(L, m, "rule '%s' has neither 'patterns', 'files' nor 'when'",
                   id);
    if (rc == 0 && (np || (ru->nfiles && !ru->when)) &&
        (!ru->n_ex_match || !ru->n_ex_nomatch))
        rc = LFAIL(L, m, "rule '%s' needs examples.match and examples.no_match",
                   id);
    if (rc < 0) {
        ncd__strv_free(pv, np);
        return rc;
    }
    ru->pat0 = L->r->npats;
    size_t i = 0;
    while (i < np && rc == 0)
        rc = add_pattern(L, pn, pv[i++]); /* takes pv[i] */
    while (i < np)
        free(pv[i++]); /* after a failure: not reached */
    free(pv);
    return rc;
}

/* files: NCCL source files relative to NCCL's src/, fnmatch globs
 * ("transport/net_ib*.cc", "graph/x*.cc"). */
static int load_files(struct loader *L, yaml_node_t *m, const char *id,
                      struct ncd__rule *ru)
{
    yaml_node_t *fn = get(L, m, "files");
    int rc = ncd__yaml_strv(&L->y, fn, "files", NCD_EINVAL, &ru->files,
                            &ru->nfiles);
    for (size_t i = 0; rc == 0 && i < ru->nfiles; i++)
        if (!ru->files[i][0] || ru->files[i][0] == '/' ||
            strlen(ru->files[i]) > 100)
            rc = LFAIL(L, fn,
                       "'files' of '%s': '%s' is not a path relative to "
                       "NCCL's src/ (at most 100 characters)",
                       id, ru->files[i]);
    return rc;
}

static int load_rule(struct loader *L, yaml_node_t *m)
{
    struct ncd_rules *r = L->r;
    if (m->type != YAML_MAPPING_NODE)
        return LFAIL(L, m, "a rule must be a mapping");
    const char *id = NULL;
    int rc = check_keys(L, m, &id);
    if (rc < 0)
        return rc;
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
    ru->cond = -1;
    r->n++; /* owned from here; the caller rolls back on error */
    yaml_node_t *ex = get(L, m, "examples");
    if ((rc = load_head(L, m, id, ru)) < 0 ||
        (rc = load_env(L, get(L, m, "env"), id, ru)) < 0 ||
        (rc = ncd__yaml_strv(&L->y, get(L, m, "absorbs"), "absorbs",
                             NCD_EINVAL, &ru->absorbs, &ru->nabsorbs)) < 0 ||
        (rc = ncd__yaml_strv(&L->y, get(L, ex, "match"), "examples.match",
                             NCD_EINVAL, &ru->ex_match, &ru->n_ex_match)) < 0 ||
        (rc = ncd__yaml_strv(&L->y, get(L, ex, "no_match"),
                             "examples.no_match", NCD_EINVAL, &ru->ex_nomatch,
                             &ru->n_ex_nomatch)) < 0 ||
        (rc = load_files(L, m, id, ru)) < 0)
        return rc;
    return load_patterns(L, m, id, ru);
}

static void rollback(struct ncd_rules *r, size_t n0, size_t np0, size_t nl0)
{
    while (r->n > n0)
        rule_release(&r->v[--r->n]);
    while (r->npats > np0) {
        struct ncd__pattern *pt = &r->pats[--r->npats];
        if (pt->rule < r->n)
            r->v[pt->rule].npats--; /* a rule that stays (observers) */
        if (pt->bug >= 0)
            r->nobs--;
        free(pt->src);
        pcre2_code_free(pt->re);
    }
    while (r->nlits > nl0)
        free(r->lits[--r->nlits].s);
}

int ncd__rules_load_doc(struct ncd_ctx *ctx, struct ncd_rules *rules,
                        const char *name, const char *buf, size_t len,
                        int build, int lazy)
{
    struct loader L = {.r = rules, .lazy = lazy};
    size_t n0 = rules->n, np0 = rules->npats, nl0 = rules->nlits;
    yaml_node_t *list;
    int rc = ncd__yaml_load_list(ctx, name, buf, len, "rules", NCD_EINVAL,
                                 &L.y, &list);
    if (rc < 0 && !L.y.loaded)
        return rc; /* not YAML: nothing to roll back */
    for (size_t i = 0; i < ncd__yaml_seq_len(list) && rc == 0; i++)
        rc = load_rule(&L, ncd__yaml_seq_at(&L.y, list, i));
    /* absorbs must name known rules (possibly in other files: checked in
     * the self-test, since files load one by one). */
    if (rc == 0) {
        rules->prefilter_stale |= rules->n > n0;
        if (build)
            rc = ncd__prefilter_build(rules);
    }
    ncd__yaml_release(&L.y);
    if (rc < 0) {
        rollback(rules, n0, np0, nl0);
        ncd__prefilter_build(rules);
        return rc;
    }
    return (int)(rules->n - n0);
}

int ncd__rules_attach_bugs(struct ncd_ctx *ctx, struct ncd_rules *r,
                           const char *name, const char *buf, size_t len)
{
    size_t rule = 0;
    while (rule < r->n && r->v[rule].cond != NCD__COND_known_bug)
        rule++;
    if (rule == r->n)
        return 0; /* no rule reports them */
    struct ncd_known_bugs add;
    int rc = ncd_known_bugs_load(ctx, buf, len, name, &add);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < add.n && rc == 0; i++)
        for (size_t j = 0; j < r->bugs.n && rc == 0; j++)
            if (strcmp(add.v[i].id, r->bugs.v[j].id) == 0)
                rc = ncd_fail(ctx, NCD_EINVAL, "%s: bug '%s' is known already",
                              name, add.v[i].id);
    struct ncd_known_bug *nv =
        rc == 0 ? realloc(r->bugs.v, (r->bugs.n + add.n + 1) * sizeof *nv)
                : NULL;
    if (rc == 0 && !nv)
        rc = NCD_ENOMEM;
    if (rc < 0) {
        ncd_known_bugs_release(&add);
        return rc;
    }
    /* the observers index r->bugs: append, remember how to undo */
    r->bugs.v = nv;
    size_t b0 = r->bugs.n, np0 = r->npats, nl0 = r->nlits;
    memcpy(r->bugs.v + b0, add.v, add.n * sizeof *add.v);
    r->bugs.n += add.n;
    free(add.v);
    if (!r->v[rule].npats)
        r->v[rule].pat0 = r->npats;
    char why[512];
    for (size_t b = b0; b < r->bugs.n && rc == 0; b++)
        for (size_t k = 0; k < r->bugs.v[b].n_signature && rc == 0; k++) {
            char *src = strdup(r->bugs.v[b].signature[k]);
            rc = src ? pattern_append(r, src, rule, (int)b, 1, 0, why,
                                      sizeof why)
                     : NCD_ENOMEM;
            if (rc == NCD_EINVAL)
                rc = ncd_fail(ctx, NCD_EINVAL, "%s: bug %s: %s", name,
                              r->bugs.v[b].id, why);
        }
    if (rc == 0)
        rc = ncd__prefilter_build(r);
    if (rc < 0) {
        rollback(r, r->n, np0, nl0);
        for (size_t i = b0; i < r->bugs.n; i++) /* strings, not the array */
            ncd__known_bug_free(&r->bugs.v[i]);
        r->bugs.n = b0;
        ncd__prefilter_build(r);
    }
    return rc;
}

int ncd_rules_load_buf(struct ncd_ctx *ctx, struct ncd_rules *rules,
                       const char *name, const char *buf, size_t len)
{
    return ncd__rules_load_doc(ctx, rules, name, buf, len, 1, 0);
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
        /* one prefilter build for all files (it costs ~2M instructions) */
        int rc = ncd__rules_load_doc(ctx, rules, f->name,
                                     (const char *)f->data, f->size, 0, 1);
        if (rc < 0)
            return rc; /* the failed document rebuilt it */
        total += rc;
    }
    /* known bugs' signatures, where this build has the list (it builds the
     * prefilter when it adds any) */
    const struct ncd_embedded_file *kb =
        ncd_embedded_find("data/nccl-known-bugs.yaml");
    int rc = kb ? ncd__rules_attach_bugs(ctx, rules, kb->name,
                                         (const char *)kb->data, kb->size)
                : 0;
    if (rc < 0)
        return rc;
    if (rules->prefilter_stale && ncd__prefilter_build(rules) < 0)
        return NCD_ENOMEM;
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
    o->n_files = r->nfiles;
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
