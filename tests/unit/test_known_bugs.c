/* SPDX-License-Identifier: MIT */
/*
 * data/nccl-known-bugs.yaml, checked without any product loader: the YAML
 * parses (libyaml), every entry has its required fields, ids are unique,
 * kinds and areas come from the fixed lists, versions are NCCL releases of
 * the message catalogue (data/nccl-messages.tsv "# releases:"), every
 * affected version is older than the fixing release, signatures compile as
 * POSIX ERE and name their source.  Malformed documents are rejected with a
 * reason.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "ncd/finding.h"

#define MAXREL 256

struct releases {
    int code[MAXREL];
    int n;
};

static int vcode(const char *s, size_t n)
{
    int a = 0, b = 0, c = 0, used = 0;
    char tmp[32];
    if (n >= sizeof tmp)
        return 0;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    if (sscanf(tmp, "%d.%d.%d%n", &a, &b, &c, &used) != 3 || used != (int)n)
        return 0;
    return a * 10000 + b * 100 + c;
}

static int is_release(const struct releases *r, int code)
{
    for (int i = 0; i < r->n; i++)
        if (r->code[i] == code)
            return 1;
    return 0;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0, k;
    char tmp[65536];
    while ((k = fread(tmp, 1, sizeof tmp, f)) > 0) {
        if (n + k + 1 > cap) {
            cap = (n + k + 1) * 2;
            char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
        }
        memcpy(buf + n, tmp, k);
        n += k;
    }
    fclose(f);
    if (buf)
        buf[n] = '\0';
    *len = n;
    return buf;
}

static void load_releases(struct releases *r)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/data/nccl-messages.tsv", NCD_SOURCE_DIR);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char *line = NULL;
    size_t cap = 0;
    r->n = 0;
    while (getline(&line, &cap, f) > 0 && line[0] == '#') {
        if (strncmp(line, "# releases: ", 12) != 0)
            continue;
        char *save = NULL;
        for (char *t = strtok_r(line + 12, " \n", &save); t && r->n < MAXREL;
             t = strtok_r(NULL, " \n", &save))
            r->code[r->n++] = vcode(t, strlen(t));
    }
    free(line);
    fclose(f);
    assert_true(r->n > 40);
}

struct report {
    char text[8192];
    size_t len;
    int problems;
};

static void problem(struct report *rep, const yaml_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void problem(struct report *rep, const yaml_node_t *n, const char *fmt, ...)
{
    rep->problems++;
    if (rep->len + 200 >= sizeof rep->text)
        return;
    if (n)
        rep->len += (size_t)snprintf(rep->text + rep->len, sizeof rep->text - rep->len,
                                     "line %zu: ", n->start_mark.line + 1);
    va_list ap;
    va_start(ap, fmt);
    rep->len += (size_t)vsnprintf(rep->text + rep->len, sizeof rep->text - rep->len, fmt, ap);
    va_end(ap);
    rep->len += (size_t)snprintf(rep->text + rep->len, sizeof rep->text - rep->len, "\n");
}

static const char *scalar(yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static yaml_node_t *get(yaml_document_t *d, yaml_node_t *map, const char *key)
{
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        const char *k = scalar(yaml_document_get_node(d, p->key));
        if (k && strcmp(k, key) == 0)
            return yaml_document_get_node(d, p->value);
    }
    return NULL;
}

/* ">=2.20.3 <2.20.5" or "<2.18.3": the bounds as version codes (lo 0 when
 * absent); -1 when the text is not that form. */
static int parse_affected(const char *s, int *lo, int *hi)
{
    *lo = 0;
    *hi = 0;
    const char *p = s;
    while (*p) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        int ge = strncmp(p, ">=", 2) == 0, lt = p[0] == '<' && p[1] != '=';
        if (!ge && !lt)
            return -1;
        p += ge ? 2 : 1;
        size_t n = strcspn(p, " ");
        int c = vcode(p, n);
        if (!c || (ge && *lo) || (lt && *hi))
            return -1;
        *(ge ? lo : hi) = c;
        p += n;
    }
    return *hi ? 0 : -1;
}

static void check_entry(yaml_document_t *d, yaml_node_t *e, const struct releases *rel,
                        struct report *rep, char ids[][64], size_t *nids)
{
    static const char *const required[] = {"id", "summary", "kind", "area", "affected",
                                           "fixed", "source", NULL};
    static const char *const known[] = {"id",       "summary",   "kind",   "area",
                                        "affected", "fixed",     "source", "signature",
                                        "signature_source",      "workaround", "arch", NULL};
    static const char *const kinds[] = {"crash", "hang", "error", "data-corruption",
                                        "performance", NULL};
    if (e->type != YAML_MAPPING_NODE) {
        problem(rep, e, "entry is not a mapping");
        return;
    }
    for (yaml_node_pair_t *p = e->data.mapping.pairs.start; p < e->data.mapping.pairs.top; p++) {
        const char *k = scalar(yaml_document_get_node(d, p->key));
        int ok = 0;
        for (int i = 0; k && known[i]; i++)
            ok |= strcmp(k, known[i]) == 0;
        if (!ok)
            problem(rep, e, "unknown key '%s'", k ? k : "?");
    }
    for (int i = 0; required[i]; i++)
        if (!get(d, e, required[i]))
            problem(rep, e, "missing '%s'", required[i]);
    const char *id = scalar(get(d, e, "id"));
    if (id) {
        for (size_t i = 0; i < *nids; i++)
            if (strcmp(ids[i], id) == 0)
                problem(rep, e, "duplicate id '%s'", id);
        if (*nids < 512 && strlen(id) < 64)
            strcpy(ids[(*nids)++], id);
    }
    const char *summary = scalar(get(d, e, "summary"));
    if (get(d, e, "summary") && (!summary || strlen(summary) < 10))
        problem(rep, e, "summary too short");
    const char *kind = scalar(get(d, e, "kind"));
    if (get(d, e, "kind")) {
        int ok = 0;
        for (int i = 0; kind && kinds[i]; i++)
            ok |= strcmp(kind, kinds[i]) == 0;
        if (!ok)
            problem(rep, e, "unknown kind '%s'", kind ? kind : "?");
    }
    const char *area = scalar(get(d, e, "area"));
    if (get(d, e, "area") && (!area || ncd_category_parse(area) < 0))
        problem(rep, e, "area '%s' is not a category", area ? area : "?");
    const char *fixed = scalar(get(d, e, "fixed"));
    int fc = fixed ? vcode(fixed, strlen(fixed)) : 0;
    if (get(d, e, "fixed") && (!fc || !is_release(rel, fc)))
        problem(rep, e, "fixed '%s' is not an NCCL release", fixed ? fixed : "?");
    const char *aff = scalar(get(d, e, "affected"));
    int lo, hi;
    if (get(d, e, "affected")) {
        if (!aff || parse_affected(aff, &lo, &hi) < 0) {
            problem(rep, e, "affected '%s': want '<X' or '>=X <Y'", aff ? aff : "?");
        } else {
            if (!is_release(rel, hi) || (lo && !is_release(rel, lo)))
                problem(rep, e, "affected '%s' names a version that is not a release", aff);
            if (lo && lo >= hi)
                problem(rep, e, "affected '%s' is empty", aff);
            if (fc && hi > fc)
                problem(rep, e, "affected '%s' reaches past the fix %s", aff, fixed);
        }
    }
    yaml_node_t *src = get(d, e, "source");
    if (src && (src->type != YAML_SEQUENCE_NODE ||
                src->data.sequence.items.start == src->data.sequence.items.top))
        problem(rep, e, "source must be a non-empty list");
    else if (src)
        for (yaml_node_item_t *it = src->data.sequence.items.start;
             it < src->data.sequence.items.top; it++) {
            const char *s = scalar(yaml_document_get_node(d, *it));
            if (!s || strlen(s) < 10)
                problem(rep, e, "empty source");
        }
    yaml_node_t *sig = get(d, e, "signature");
    if (sig) {
        if (!scalar(get(d, e, "signature_source")))
            problem(rep, e, "signature without signature_source");
        if (sig->type != YAML_SEQUENCE_NODE)
            problem(rep, e, "signature must be a list of regexes");
        else
            for (yaml_node_item_t *it = sig->data.sequence.items.start;
                 it < sig->data.sequence.items.top; it++) {
                const char *s = scalar(yaml_document_get_node(d, *it));
                regex_t re;
                if (!s || regcomp(&re, s, REG_EXTENDED | REG_NOSUB) != 0) {
                    problem(rep, e, "signature '%s' is not a POSIX ERE", s ? s : "?");
                    continue;
                }
                regfree(&re);
            }
    }
}

/* Checks one document; returns the number of entries (problems in rep). */
static int validate(const char *buf, size_t len, const struct releases *rel,
                    struct report *rep)
{
    yaml_parser_t parser;
    yaml_document_t d;
    memset(rep, 0, sizeof *rep);
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
    if (!yaml_parser_load(&parser, &d)) {
        problem(rep, NULL, "YAML error at line %zu: %s", parser.problem_mark.line + 1,
                parser.problem ? parser.problem : "?");
        yaml_parser_delete(&parser);
        return 0;
    }
    yaml_parser_delete(&parser);
    int entries = 0;
    yaml_node_t *root = yaml_document_get_root_node(&d);
    yaml_node_t *bugs = root && root->type == YAML_MAPPING_NODE ? get(&d, root, "bugs") : NULL;
    if (!bugs || bugs->type != YAML_SEQUENCE_NODE) {
        problem(rep, root, "expected a mapping with a 'bugs:' list");
    } else {
        static char ids[512][64];
        size_t nids = 0;
        for (yaml_node_item_t *it = bugs->data.sequence.items.start;
             it < bugs->data.sequence.items.top; it++, entries++)
            check_entry(&d, yaml_document_get_node(&d, *it), rel, rep, ids, &nids);
    }
    yaml_document_delete(&d);
    return entries;
}

static void test_known_bugs_file(void **state)
{
    (void)state;
    struct releases rel;
    load_releases(&rel);
    char path[4096];
    snprintf(path, sizeof path, "%s/data/nccl-known-bugs.yaml", NCD_SOURCE_DIR);
    size_t len = 0;
    char *buf = slurp(path, &len);
    assert_non_null(buf);
    struct report rep;
    int n = validate(buf, len, &rel, &rep);
    free(buf);
    if (rep.problems)
        fail_msg("%s: %d problems:\n%s", path, rep.problems, rep.text);
    print_message("%d known bugs\n", n);
    assert_true(n >= 50);
}

static void test_bad_documents(void **state)
{
    (void)state;
    struct releases rel;
    load_releases(&rel);
    static const struct {
        const char *yaml, *want;
    } bad[] = {
        {"bugs: [\n", "YAML error"},
        {"other: []\n", "'bugs:' list"},
        {"bugs:\n  - id: a\n", "missing 'summary'"},
        {"bugs:\n  - {id: a, summary: 'a long summary', kind: crash, area: net.ib,"
         " affected: '<2.18.3', fixed: '2.18.1', source: ['https://example.org/x']}\n",
         "reaches past the fix"},
        {"bugs:\n  - {id: a, summary: 'a long summary', kind: crash, area: net.nope,"
         " affected: '<2.18.3', fixed: '2.18.3', source: ['https://example.org/x']}\n",
         "not a category"},
        {"bugs:\n  - {id: a, summary: 'a long summary', kind: crash, area: net.ib,"
         " affected: 'before 2.18', fixed: '2.18.3', source: ['https://example.org/x']}\n",
         "want '<X'"},
        {"bugs:\n  - {id: a, summary: 'a long summary', kind: crash, area: net.ib,"
         " affected: '<2.18.3', fixed: '2.18.2', source: ['https://example.org/x']}\n",
         "not an NCCL release"},
        {"bugs:\n  - {id: a, summary: 'a long summary', kind: crash, area: net.ib,"
         " affected: '>=2.19.1 <2.18.3', fixed: '2.18.3', source: ['https://example.org/x']}\n",
         "is empty"},
        {"bugs:\n  - {id: a, summary: 'a long summary', kind: oops, area: net.ib,"
         " affected: '<2.18.3', fixed: '2.18.3', source: []}\n",
         "unknown kind"},
        {"bugs:\n  - {id: a, summary: 'a long summary', kind: crash, area: net.ib,"
         " affected: '<2.18.3', fixed: '2.18.3', source: ['https://example.org/x'],"
         " signature: ['a(b']}\n",
         "without signature_source"},
        {"bugs:\n  - {id: a, summary: 'a long summary', kind: crash, area: net.ib,"
         " affected: '<2.18.3', fixed: '2.18.3', source: ['https://example.org/x']}\n"
         "  - {id: a, summary: 'a long summary', kind: crash, area: net.ib,"
         " affected: '<2.18.3', fixed: '2.18.3', source: ['https://example.org/x']}\n",
         "duplicate id"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct report rep;
        validate(bad[i].yaml, strlen(bad[i].yaml), &rel, &rep);
        print_message("case %zu: %s", i, rep.text);
        assert_true(rep.problems > 0);
        assert_non_null(strstr(rep.text, bad[i].want));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_bugs_file),
        cmocka_unit_test(test_bad_documents),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
