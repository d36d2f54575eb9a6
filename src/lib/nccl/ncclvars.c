/* SPDX-License-Identifier: MIT */
/* The NCCL variable catalog (data/nccl-vars.yaml), value validation and
 * NCCL's config files. */
#define _GNU_SOURCE
#include "ncd/ncclvars.h"
#include "core/yaml.h"
#include "ncd/error.h"
#include "ncd/fs.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- loading (core/yaml.h) --------------------------------------------- */

static char *ydup(struct ncd__yaml *y, yaml_node_t *map, const char *key)
{
    const char *s = ncd__yaml_str(y, map, key);
    return s ? strdup(s) : NULL;
}

static const struct {
    const char *name;
    enum ncd_var_type t;
} type_names[] = {
    {"int", NCD_VT_INT},       {"flag1", NCD_VT_FLAG1},
    {"level", NCD_VT_LEVEL},   {"enum", NCD_VT_ENUM},
    {"list", NCD_VT_LIST},     {"iflist", NCD_VT_IFLIST},
    {"string", NCD_VT_STRING}, {"path", NCD_VT_PATH},
    {"hostport", NCD_VT_HOSTPORT},
};

static int load_def(struct ncd__yaml *y, yaml_node_t *n,
                    struct ncd_var_def *def)
{
    if (!n || n->type != YAML_MAPPING_NODE)
        return ncd__yaml_fail(y, n, NCD_EPARSE,
                              "variable entry is not a mapping");
    def->name = ydup(y, n, "name");
    if (!def->name || strncmp(def->name, "NCCL_", 5) != 0)
        return ncd__yaml_fail(y, n, NCD_EPARSE,
                              "variable without an NCCL_ name");
    const char *t = ncd__yaml_str(y, n, "type");
    int found = 0;
    for (size_t i = 0; t && i < sizeof type_names / sizeof type_names[0]; i++)
        if (strcmp(t, type_names[i].name) == 0) {
            def->type = type_names[i].t;
            found = 1;
        }
    if (!found)
        return ncd__yaml_fail(y, n, NCD_EPARSE, "missing or unknown 'type'");
    const char *ci = ncd__yaml_str(y, n, "ci");
    def->ci = ci && strcmp(ci, "true") == 0;
    def->since = ydup(y, n, "since");
    def->doc = ydup(y, n, "doc");
    const char *mn = ncd__yaml_str(y, n, "min");
    const char *mx = ncd__yaml_str(y, n, "max");
    if (mn) {
        def->has_min = 1;
        def->min = strtoll(mn, NULL, 0);
    }
    if (mx) {
        def->has_max = 1;
        def->max = strtoll(mx, NULL, 0);
    }
    yaml_node_t *vals = ncd__yaml_get(y, n, "values");
    if (vals) {
        if (vals->type != YAML_SEQUENCE_NODE)
            return ncd__yaml_fail(y, vals, NCD_EPARSE, "'values' is not a list");
        char **v;
        size_t cnt;
        int rc = ncd__yaml_strv(y, vals, "values", NCD_EPARSE, &v, &cnt);
        def->values = v;
        def->n_values = (int)cnt;
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int load_gone(struct ncd__yaml *y, yaml_node_t *n,
                     struct ncd_var_gone *g)
{
    if (!n || n->type != YAML_MAPPING_NODE)
        return ncd__yaml_fail(y, n, NCD_EPARSE, "entry is not a mapping");
    g->name = ydup(y, n, "name");
    g->instead = ydup(y, n, "instead");
    g->removed = ydup(y, n, "removed");
    g->rename = ydup(y, n, "rename");
    if (!g->name || !g->instead)
        return ncd__yaml_fail(y, n, NCD_EPARSE,
                              "entry needs 'name' and 'instead'");
    return 0;
}

int ncd_var_catalog_load(struct ncd_ctx *ctx, const char *buf, size_t len,
                         const char *fname, struct ncd_var_catalog *out)
{
    memset(out, 0, sizeof *out);
    struct ncd__yaml y;
    int rc = ncd__yaml_load(ctx, fname, buf, len, &y);
    if (rc < 0)
        goto done;
    yaml_node_t *root = ncd__yaml_root(&y);
    if (!root || root->type != YAML_MAPPING_NODE) {
        rc = ncd__yaml_fail(&y, root, NCD_EPARSE, "top level is not a mapping");
        goto done;
    }
    out->source = ydup(&y, root, "source");
    yaml_node_t *vars = ncd__yaml_get(&y, root, "variables");
    if (!vars || vars->type != YAML_SEQUENCE_NODE) {
        rc = ncd__yaml_fail(&y, root, NCD_EPARSE, "missing 'variables' list");
        goto done;
    }
    out->defs = calloc(ncd__yaml_seq_len(vars) + 1, sizeof *out->defs);
    if (!out->defs) {
        rc = NCD_ENOMEM;
        goto done;
    }
    for (size_t i = 0; i < ncd__yaml_seq_len(vars) && rc == 0; i++)
        rc = load_def(&y, ncd__yaml_seq_at(&y, vars, i),
                      &out->defs[out->n_defs++]);
    yaml_node_t *lists[2] = {ncd__yaml_get(&y, root, "removed"),
                             ncd__yaml_get(&y, root, "not_nccl")};
    out->gone = calloc(ncd__yaml_seq_len(lists[0]) +
                           ncd__yaml_seq_len(lists[1]) + 1,
                       sizeof *out->gone);
    if (!out->gone) {
        rc = NCD_ENOMEM;
        goto done;
    }
    for (int l = 0; l < 2 && rc == 0; l++)
        for (size_t i = 0; i < ncd__yaml_seq_len(lists[l]) && rc == 0; i++)
            rc = load_gone(&y, ncd__yaml_seq_at(&y, lists[l], i),
                           &out->gone[out->n_gone++]);
    yaml_node_t *oth = ncd__yaml_get(&y, root, "other_tools");
    size_t no = ncd__yaml_seq_len(oth);
    out->other_prefix = calloc(no + 1, sizeof(char *));
    out->other_tool = calloc(no + 1, sizeof(char *));
    if (!out->other_prefix || !out->other_tool) {
        rc = NCD_ENOMEM;
        goto done;
    }
    for (size_t i = 0; i < no && rc == 0; i++) {
        yaml_node_t *e = ncd__yaml_seq_at(&y, oth, i);
        out->other_prefix[i] = ydup(&y, e, "prefix");
        out->other_tool[i] = ydup(&y, e, "tool");
        out->n_other++;
        if (!out->other_prefix[i] || !out->other_tool[i])
            rc = ncd__yaml_fail(&y, e, NCD_EPARSE,
                                "other_tools entry needs prefix, tool");
    }
done:
    ncd__yaml_release(&y);
    return rc;
}

void ncd_var_catalog_release(struct ncd_var_catalog *c)
{
    if (c->is_static) {
        memset(c, 0, sizeof *c);
        return;
    }
    for (size_t i = 0; i < c->n_defs; i++) {
        struct ncd_var_def *d = &c->defs[i];
        free(d->name);
        free(d->since);
        free(d->doc);
        for (int j = 0; j < d->n_values; j++)
            free(d->values[j]);
        free(d->values);
    }
    for (size_t i = 0; i < c->n_gone; i++) {
        free(c->gone[i].name);
        free(c->gone[i].removed);
        free(c->gone[i].instead);
        free(c->gone[i].rename);
    }
    for (size_t i = 0; i < c->n_other; i++) {
        free(c->other_prefix[i]);
        free(c->other_tool[i]);
    }
    free(c->defs);
    free(c->gone);
    free(c->other_prefix);
    free(c->other_tool);
    free(c->source);
    memset(c, 0, sizeof *c);
}

const struct ncd_var_def *ncd_var_find(const struct ncd_var_catalog *c,
                                       const char *name)
{
    for (size_t i = 0; i < c->n_defs; i++)
        if (strcmp(c->defs[i].name, name) == 0)
            return &c->defs[i];
    return NULL;
}

const struct ncd_var_gone *ncd_var_find_gone(const struct ncd_var_catalog *c,
                                             const char *name)
{
    for (size_t i = 0; i < c->n_gone; i++)
        if (strcmp(c->gone[i].name, name) == 0)
            return &c->gone[i];
    return NULL;
}

/* Optimal string alignment distance (Damerau-Levenshtein, adjacent
 * transpositions), bounded to names of at most 63 characters. */
static int osa_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63)
        return 99;
    int d[64][64];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            int cost = a[i - 1] != b[j - 1];
            int v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v)
                v = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < v)
                v = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    return d[la][lb];
}

const char *ncd_var_suggest(const struct ncd_var_catalog *c, const char *name)
{
    int best = 99;
    const char *bn = NULL;
    size_t len = strlen(name);
    int limit = len / 5 > 2 ? (int)(len / 5) : 2;
    for (size_t i = 0; i < c->n_defs; i++) {
        int dist = osa_distance(name, c->defs[i].name);
        if (dist < best) {
            best = dist;
            bn = c->defs[i].name;
        }
    }
    return best <= limit ? bn : NULL;
}

int ncd_nccl_int_parse(const char *v, long long *out, int *junk)
{
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 0);
    *junk = end == v || *end != '\0';
    *out = end == v ? 0 : x;
    return errno == ERANGE ? NCD_ERANGE : 0;
}

static int in_values(const struct ncd_var_def *d, const char *tok, size_t len)
{
    for (int i = 0; i < d->n_values; i++)
        if (strlen(d->values[i]) == len &&
            (d->ci ? strncasecmp(d->values[i], tok, len)
                   : strncmp(d->values[i], tok, len)) == 0)
            return 1;
    return 0;
}

static const char *case_match(const struct ncd_var_def *d, const char *v)
{
    for (int i = 0; i < d->n_values; i++)
        if (strcasecmp(d->values[i], v) == 0)
            return d->values[i];
    return NULL;
}

static void values_text(const struct ncd_var_def *d, char *buf, size_t n)
{
    buf[0] = '\0';
    for (int i = 0; i < d->n_values; i++) {
        strncat(buf, i ? ", " : "", n - strlen(buf) - 1);
        strncat(buf, d->values[i], n - strlen(buf) - 1);
    }
}

#define VERDICT(s, ...)                                                       \
    do {                                                                      \
        v->sev = (s);                                                         \
        snprintf(v->msg, sizeof v->msg, __VA_ARGS__);                         \
        return;                                                               \
    } while (0)

void ncd_var_check_value(const struct ncd_var_def *d, const char *value,
                         struct ncd_var_verdict *v)
{
    memset(v, 0, sizeof *v);
    v->sev = NCD_SEV_OK;
    char vals[256];
    values_text(d, vals, sizeof vals);
    if (!*value && d->type == NCD_VT_IFLIST)
        return; /* interface lists are judged by the interface checks */
    if (!*value && strcmp(d->name, "NCCL_COMM_ID") == 0)
        return; /* set but empty fails NCCL's bootstrap ("if (env)",
                   src/bootstrap.cc): the NCCL_COMM_ID check says so */
    if (!*value) {
        if (d->type == NCD_VT_INT || d->type == NCD_VT_FLAG1)
            VERDICT(NCD_SEV_INFO, "empty: NCCL uses the default");
        VERDICT(NCD_SEV_INFO, "empty: NCCL treats it as unset");
    }
    switch (d->type) {
    case NCD_VT_INT:
    case NCD_VT_FLAG1: {
        long long x;
        int junk;
        if (ncd_nccl_int_parse(value, &x, &junk) < 0)
            VERDICT(NCD_SEV_WARNING,
                    "'%s' overflows: NCCL logs 'Invalid value' and uses the "
                    "default",
                    value);
        /* strtoll skips blanks and a sign before the base prefix */
        const char *digits = value;
        while (isspace((unsigned char)*digits))
            digits++;
        if (*digits == '-' || *digits == '+')
            digits++;
        int octal = digits[0] == '0' && isdigit((unsigned char)digits[1]);
        if (junk) {
            if (!strcasecmp(value, "true") || !strcasecmp(value, "yes") ||
                !strcasecmp(value, "on") || !strcasecmp(value, "y") ||
                !strcasecmp(value, "enable") || !strcasecmp(value, "enabled"))
                snprintf(v->fix, sizeof v->fix, "1");
            else if (!strcasecmp(value, "false") || !strcasecmp(value, "no") ||
                     !strcasecmp(value, "off") ||
                     !strcasecmp(value, "disable"))
                snprintf(v->fix, sizeof v->fix, "0");
            VERDICT(NCD_SEV_WARNING,
                    "'%s' is not a number: NCCL parses it with strtoll and "
                    "reads %lld%s",
                    value, x,
                    x == 0 && v->fix[0] == '1'
                        ? " -- the opposite of what the word says"
                        : " and silently ignores the rest");
        }
        if (octal && x != 0) {
            snprintf(v->fix, sizeof v->fix, "%lld", strtoll(value, NULL, 10));
            VERDICT(NCD_SEV_WARNING,
                    "'%s' has a leading 0, so NCCL reads it as octal: %lld",
                    value, x);
        }
        if (d->type == NCD_VT_FLAG1 && x != 1 && x != 0)
            VERDICT(NCD_SEV_WARNING,
                    "%lld has no effect: only exactly 1 disables it", x);
        if (d->n_values && !in_values(d, value, strlen(value))) {
            char num[32];
            snprintf(num, sizeof num, "%lld", x);
            if (!in_values(d, num, strlen(num)))
                VERDICT(NCD_SEV_WARNING, "%lld is not one of the values NCCL "
                                         "knows (%s)",
                        x, vals);
        }
        if (d->has_min && x < d->min)
            VERDICT(NCD_SEV_WARNING, "%lld is below the valid minimum %lld",
                    x, d->min);
        if (d->has_max && x > d->max)
            VERDICT(NCD_SEV_WARNING,
                    "%lld is above the valid maximum %lld (NCCL clamps or "
                    "ignores it)",
                    x, d->max);
        return;
    }
    case NCD_VT_LEVEL: {
        static const char *const lv[] = {"LOC", "NVL", "NVB", "C2C", "PIX",
                                         "PXB", "P2C", "PXN", "PHB", "SYS"};
        if (isdigit((unsigned char)value[0]))
            VERDICT(NCD_SEV_OK, "legacy numeric level");
        for (size_t i = 0; i < sizeof lv / sizeof lv[0]; i++) {
            if (strcmp(value, lv[i]) == 0)
                return;
            if (strcasecmp(value, lv[i]) == 0) {
                snprintf(v->fix, sizeof v->fix, "%s", lv[i]);
                VERDICT(NCD_SEV_WARNING,
                        "'%s' is silently ignored: level names are "
                        "case-sensitive (use %s)",
                        value, lv[i]);
            }
        }
        if (strcasecmp(value, "NODE") == 0) {
            snprintf(v->fix, sizeof v->fix, "PHB");
            VERDICT(NCD_SEV_WARNING,
                    "'%s' is nvidia-smi's word, not an NCCL level: NCCL "
                    "silently ignores it (the nearest NCCL level is PHB)",
                    value);
        }
        VERDICT(NCD_SEV_WARNING,
                "'%s' is not a level: NCCL silently ignores it (levels: LOC "
                "NVL NVB C2C PIX PXB P2C PXN PHB SYS)",
                value);
    }
    case NCD_VT_ENUM: {
        if (in_values(d, value, strlen(value)))
            return;
        const char *cm = case_match(d, value);
        if (cm) {
            snprintf(v->fix, sizeof v->fix, "%s", cm);
            VERDICT(NCD_SEV_WARNING,
                    "'%s' does not match: the value is case-sensitive (use "
                    "%s)",
                    value, cm);
        }
        VERDICT(NCD_SEV_WARNING,
                "'%s' is not a value NCCL knows (%s): it falls back to the "
                "default",
                value, vals);
    }
    case NCD_VT_LIST: {
        const char *p = value;
        if (*p == '^')
            p++;
        /* NCCL_ALGO/PROTO also take "func:list;func:list" (2.24). */
        while (*p) {
            size_t len = strcspn(p, ",;");
            const char *colon = memchr(p, ':', len);
            const char *tok = colon ? colon + 1 : p;
            size_t tl = colon ? len - (size_t)(colon - p) - 1 : len;
            if (tl && *tok == '^') {
                tok++;
                tl--;
            }
            if (tl && !in_values(d, tok, tl))
                VERDICT(NCD_SEV_WARNING,
                        "'%.*s' is not a known token (%s): NCCL warns "
                        "'Unrecognized element token' or ignores it",
                        (int)tl, tok, vals);
            p += len;
            if (*p)
                p++;
        }
        return;
    }
    case NCD_VT_HOSTPORT: {
        const char *colon = strrchr(value, ':');
        if (!colon || colon == value || !colon[1] ||
            strspn(colon + 1, "0123456789") != strlen(colon + 1))
            VERDICT(NCD_SEV_WARNING,
                    "'%s' is not <host>:<port> or [<ipv6>]:<port>", value);
        return;
    }
    case NCD_VT_IFLIST:
    case NCD_VT_STRING:
    case NCD_VT_PATH:
        return;
    }
}

/* ---- config files ------------------------------------------------------ */

static int conf_add(struct ncd_conf_result *res, const struct ncd_conf_entry *e)
{
    if (!res)
        return 0;
    struct ncd_conf_entry *nv = realloc(res->v, (res->n + 1) * sizeof *nv);
    if (!nv)
        return NCD_ENOMEM;
    res->v = nv;
    res->v[res->n++] = *e;
    return 0;
}

static int conf_file(struct ncd_ctx *ctx, const char *path,
                     struct ncd_conf_result *res, int explicit)
{
    char *buf;
    size_t len;
    if (ncd_fs_read(ctx, path, 1 << 20, &buf, &len) < 0) {
        if (explicit && res)
            snprintf(res->conf_file_error, sizeof res->conf_file_error, "%s",
                     ncd_ctx_errdetail(ctx));
        ncd_ctx_clear_error(ctx);
        return 0;
    }
    if (res && res->n_files < 2)
        snprintf(res->files_read[res->n_files++], sizeof res->files_read[0],
                 "%s", path);
    int rc = 0, lineno = 0;
    char *save = NULL;
    for (char *line = strtok_r(buf, "\n", &save); line && rc == 0;
         line = strtok_r(NULL, "\n", &save)) {
        lineno++;
        if (line[0] == '#' || line[0] == '\0')
            continue;
        struct ncd_conf_entry e = {.line = lineno};
        snprintf(e.file, sizeof e.file, "%s", path);
        char *eq = strchr(line, '=');
        if (!eq) {
            e.bad = 1;
            snprintf(e.name, sizeof e.name, "%s", line);
            rc = conf_add(res, &e);
            continue;
        }
        *eq = '\0';
        snprintf(e.name, sizeof e.name, "%s", line);
        snprintf(e.value, sizeof e.value, "%s", eq + 1);
        size_t nl = strlen(e.name);
        e.bad = nl == 0 || isspace((unsigned char)e.name[0]) ||
                isspace((unsigned char)e.name[nl - 1]);
        if (!e.bad) {
            /* setenv(..., 0): the environment and earlier files win. */
            e.applied = ncd_getenv(ctx, e.name) == NULL;
            if (e.applied && ncd_setenv(ctx, e.name, e.value, 0) < 0)
                rc = NCD_ENOMEM;
        }
        if (rc == 0)
            rc = conf_add(res, &e);
    }
    free(buf);
    return rc;
}

int ncd_nccl_conf_apply(struct ncd_ctx *ctx, struct ncd_conf_result *res)
{
    if (res)
        memset(res, 0, sizeof *res);
    const char *cf = ncd_getenv(ctx, "NCCL_CONF_FILE");
    char user[512] = "";
    int explicit = cf && *cf;
    if (explicit) {
        snprintf(user, sizeof user, "%s", cf);
    } else {
        const char *home = ncd_getenv(ctx, "HOME");
        if (home && *home)
            snprintf(user, sizeof user, "%s/.nccl.conf", home);
    }
    int rc = 0;
    if (user[0])
        rc = conf_file(ctx, user, res, explicit);
    if (rc == 0)
        rc = conf_file(ctx, "/etc/nccl.conf", res, 0);
    return rc;
}

void ncd_nccl_conf_release(struct ncd_conf_result *res)
{
    free(res->v);
    memset(res, 0, sizeof *res);
}
