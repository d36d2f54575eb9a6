/* SPDX-License-Identifier: MIT */
/*
 * nccl-doctor explain [FILE|DIR|-]...: name the root cause of a failed or
 * slow NCCL job from its logs.  Options, then the library: rules
 * (ncd_rules_load_builtin/_dir), inputs (ncd_explain_feed_path), the
 * reasoner (ncd_explain_finish) and the reports (ncd_explain_report_*);
 * see include/ncd/explain.h.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "ncd/error.h"
#include "ncd/explain.h"

enum {
    OPT_FACTS = CLI_OPT__NEXT,
    OPT_RULES,
    OPT_LIST_RULES,
    OPT_DUMP_PATTERNS,
    OPT_CHECK_RULES,
    OPT_STATS,
    OPT_THREADS,
};

static const struct option options[] = {
    {"facts", no_argument, 0, OPT_FACTS},
    {"rules", required_argument, 0, OPT_RULES},
    {"list-rules", no_argument, 0, OPT_LIST_RULES},
    {"dump-patterns", no_argument, 0, OPT_DUMP_PATTERNS},
    {"check-rules", no_argument, 0, OPT_CHECK_RULES},
    {"stats", no_argument, 0, OPT_STATS},
    {"threads", required_argument, 0, OPT_THREADS},
    {0, 0, 0, 0},
};

#define MAX_RULE_DIRS 16

struct explain_opts {
    int facts_only, list, dump, check_rules, stats;
    int threads; /* 0: auto */
    const char *rule_dirs[MAX_RULE_DIRS];
    int nrule_dirs;
};

static int explain_opt(int opt, const char *arg, void *data)
{
    struct explain_opts *o = data;
    switch (opt) {
    case OPT_FACTS:
        o->facts_only = 1;
        return 0;
    case OPT_RULES:
        if (o->nrule_dirs == MAX_RULE_DIRS) {
            cli_err("explain: at most %d --rules directories", MAX_RULE_DIRS);
            return -1;
        }
        o->rule_dirs[o->nrule_dirs++] = arg;
        return 0;
    case OPT_LIST_RULES:
        o->list = 1;
        return 0;
    case OPT_DUMP_PATTERNS:
        o->dump = 1;
        return 0;
    case OPT_CHECK_RULES:
        o->check_rules = 1;
        return 0;
    case OPT_STATS:
        o->stats = 1;
        return 0;
    case OPT_THREADS: {
        long v;
        if (strcmp(arg, "auto") == 0) {
            o->threads = 0;
            return 0;
        }
        if (cli_parse_range(arg, 1, NCD_EXPLAIN_MAX_THREADS, &v) < 0) {
            cli_err("explain: --threads wants 1..%d or auto, not '%s'",
                    NCD_EXPLAIN_MAX_THREADS, arg);
            return -1;
        }
        o->threads = (int)v;
        return 0;
    }
    }
    cli_usage_hint("explain");
    return -1;
}

/* The built-in rules plus every --rules DIR; NULL after a message. */
static struct ncd_rules *load_rules(struct ncd_ctx *ctx,
                                    const struct explain_opts *o)
{
    struct ncd_rules *rules = NULL;
    if (ncd_rules_new(&rules) < 0 || ncd_rules_load_builtin(ctx, rules) < 0) {
        cli_err("explain: built-in rules: %s", ncd_ctx_errdetail(ctx));
        ncd_rules_free(rules);
        return NULL;
    }
    for (int i = 0; i < o->nrule_dirs; i++) {
        int rc = ncd_rules_load_dir(ctx, rules, o->rule_dirs[i]);
        if (rc < 0) {
            const char *why = ncd_ctx_errdetail(ctx);
            cli_err("--rules: %s", *why ? why : ncd_strerror(rc));
            ncd_rules_free(rules);
            return NULL;
        }
    }
    return rules;
}

/* --list-rules / --check-rules --json: one object, {"rules": [...]} with
 * each rule's id, category, severity, role, title, condition, NCCL
 * versions, source and where it was loaded from, and for --check-rules
 * {"checked", "problems", "report"} (the self-test's lines). */
static int rules_only_json(const struct ncd_rules *rules,
                           const struct explain_opts *o)
{
    json_t *doc = json_object(), *arr = json_array();
    if (!doc || !arr) {
        json_decref(doc);
        json_decref(arr);
        cli_err("explain: out of memory");
        return NCD_EXIT_TOOL;
    }
    json_object_set_new(doc, "rules", arr);
    for (size_t i = 0; o->list && i < ncd_rules_count(rules); i++) {
        struct ncd_rule_info ri;
        ncd_rules_info(rules, i, &ri);
        json_array_append_new(
            arr,
            json_pack("{s:s, s:s, s:s, s:s, s:s?, s:s?, s:s?, s:s?, s:s?, s:i}",
                      "id", ri.id, "category", ncd_category_name(ri.category),
                      "severity", ncd_severity_name(ri.severity), "role",
                      ncd_rule_role_name(ri.role), "title", ri.title, "when",
                      ri.when, "nccl_versions", ri.nccl_versions, "source",
                      ri.source, "file", ri.file, "line", ri.line));
    }
    int status = NCD_EXIT_OK;
    if (o->check_rules) {
        struct ncd_strbuf sb = {0};
        size_t fails = ncd_rules_selftest(rules, &sb);
        json_t *rep = json_array();
        const char *p = ncd_sb_str(&sb);
        while (rep && p && *p) {
            const char *nl = strchr(p, '\n');
            size_t n = nl ? (size_t)(nl - p) : strlen(p);
            json_array_append_new(rep, json_stringn(p, n));
            p = nl ? nl + 1 : p + n;
        }
        ncd_sb_release(&sb);
        json_object_set_new(doc, "checked",
                            json_integer((json_int_t)ncd_rules_count(rules)));
        json_object_set_new(doc, "problems", json_integer((json_int_t)fails));
        json_object_set_new(doc, "report", rep ? rep : json_array());
        if (fails)
            status = NCD_EXIT_TOOL;
    }
    return cli_print_json(doc) < 0 ? NCD_EXIT_TOOL : status;
}

/* --list-rules, --dump-patterns, --check-rules: the rules, no input. */
static int rules_only(const struct cli_common *c, const struct ncd_rules *rules,
                      const struct explain_opts *o)
{
    if (c->json)
        return rules_only_json(rules, o);
    struct ncd_strbuf sb = {0};
    int status = NCD_EXIT_OK;
    if (o->dump)
        ncd_rules_dump_ere(rules, &sb);
    for (size_t i = 0; o->list && i < ncd_rules_count(rules); i++) {
        struct ncd_rule_info ri;
        ncd_rules_info(rules, i, &ri);
        ncd_sb_printf(&sb, "%-34s %-20s %-8s %-11s %s:%d\n", ri.id,
                      ncd_category_name(ri.category),
                      ncd_severity_name(ri.severity),
                      ncd_rule_role_name(ri.role), ri.file, ri.line);
    }
    if (o->check_rules) {
        size_t fails = ncd_rules_selftest(rules, &sb);
        ncd_sb_printf(&sb, "%zu rules, %zu problem%s\n", ncd_rules_count(rules),
                      fails, fails == 1 ? "" : "s");
        if (fails)
            status = NCD_EXIT_TOOL;
    }
    if (cli_print_sb(&sb) < 0)
        status = NCD_EXIT_TOOL;
    ncd_sb_release(&sb);
    return status;
}

/* An input that could not be read: said on stderr, and kept for --json's
 * input.problems (arg: a JSON array). */
static void on_problem(void *arg, const char *msg)
{
    cli_err("%s", msg);
    if (arg)
        json_array_append_new(arg, json_string(msg));
}

static double seconds_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + (t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/* Prints the report; returns the exit status. */
static int report(const struct cli_common *c, const struct explain_opts *o,
                  struct ncd_ctx *ctx, const struct ncd_explain *ex,
                  const struct ncd_findings *fl, int ninputs, json_t *problems)
{
    int status = ncd_findings_worst(fl) >= NCD_SEV_WARNING ? NCD_EXIT_FINDINGS
                                                           : NCD_EXIT_OK;
    if (c->json) {
        json_t *j = ncd_explain_report_json(ex, fl, ninputs, cli_hostname(ctx));
        if (!j) {
            cli_err("explain: out of memory");
            return NCD_EXIT_TOOL;
        }
        json_t *input = json_object_get(j, "input");
        if (input && problems)
            json_object_set(input, "problems", problems);
        return cli_print_json(j) < 0 ? NCD_EXIT_TOOL : status;
    }
    struct ncd_strbuf sb = {0};
    struct ncd_text_style st = cli_text_style(c);
    if (o->facts_only)
        ncd_explain_facts_text(ex, &sb);
    else
        ncd_explain_report_text(ex, fl, &st, ninputs, &sb);
    if (cli_print_sb(&sb) < 0)
        status = NCD_EXIT_TOOL;
    ncd_sb_release(&sb);
    return status;
}

int ncd_cmd_explain(int argc, char **argv)
{
    struct cli_common c;
    struct explain_opts o = {0};
    int first = 0;
    int pst = cli_parse("explain", argc, argv, &c, options, explain_opt, &o,
                        &first);
    if (pst != CLI_CONTINUE)
        return pst;
    if ((o.list || o.dump || o.check_rules) && first < argc) {
        cli_err("explain: --list-rules, --dump-patterns and --check-rules "
                "read the rules, not logs ('%s' given)",
                argv[first]);
        return NCD_EXIT_TOOL;
    }
    if (o.dump && c.json) {
        cli_err("explain: --dump-patterns writes patterns for grep -E -f; "
                "it has no --json form");
        return NCD_EXIT_TOOL;
    }
    if (first >= argc && !o.list && !o.dump && !o.check_rules &&
        isatty(STDIN_FILENO)) {
        cli_err("explain: give log files or directories, or pipe a log on "
                "stdin (see nccl-doctor help explain)");
        return NCD_EXIT_TOOL;
    }
    cli_heap_bulk((size_t)30 << 20);
    struct ncd_ctx *ctx = cli_ctx_new(&c);
    if (!ctx)
        return NCD_EXIT_TOOL;
    int status = NCD_EXIT_TOOL;
    struct ncd_explain *ex = NULL;
    struct ncd_findings fl = {0};
    json_t *problems = NULL; /* inputs that could not be read */
    struct ncd_rules *rules = load_rules(ctx, &o);
    if (!rules)
        goto out;
    if (o.list || o.dump || o.check_rules) {
        status = rules_only(&c, rules, &o);
        goto out;
    }
    if (ncd_explain_new(ctx, rules, &ex) < 0) {
        cli_err("explain: out of memory");
        goto out;
    }
    int nthreads = o.threads;
    if (!nthreads) {
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        nthreads = ncpu < 1 ? 1 : ncpu > 8 ? 8 : (int)ncpu;
    }
    ncd_explain_set_threads(ex, nthreads);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    problems = json_array();
    struct ncd_explain_inputs in = {.problem = on_problem, .arg = problems};
    if (first >= argc && ncd_explain_feed_path(ex, "-", &in) == NCD_ENOMEM)
        goto oom;
    for (int i = first; i < argc; i++)
        if (ncd_explain_feed_path(ex, argv[i], &in) == NCD_ENOMEM)
            goto oom;
    if (in.nagain)
        cli_err("explain: %d input%s skipped: read already (the same file or "
                "directory named twice, or reached again through a link)",
                in.nagain, in.nagain == 1 ? "" : "s");
    if (in.nlinkdirs)
        cli_err("explain: %d link%s to directories not followed (name the "
                "directory to read it)",
                in.nlinkdirs, in.nlinkdirs == 1 ? "" : "s");
    if (!in.nread) {
        cli_err("explain: no input could be read");
        goto out;
    }
    int n = ncd_explain_finish(ex, &fl);
    if (n < 0) {
        cli_err("explain: %s", ncd_strerror(n));
        goto out;
    }
    if (o.stats) {
        unsigned long long bytes, lines, nl;
        ncd_explain_stats(ex, &bytes, &lines, &nl);
        double s = seconds_since(&t0);
        fprintf(stderr,
                "explain: %llu bytes, %llu lines (%llu NCCL) in %.3f s = %.1f MB/s\n",
                bytes, lines, nl, s, s > 0 ? bytes / s / 1e6 : 0.0);
    }
    status = report(&c, &o, ctx, ex, &fl, in.nread, problems);
    if (in.nfailed && status == NCD_EXIT_OK)
        status = NCD_EXIT_TOOL;
    goto out;
oom:
    cli_err("explain: out of memory");
out:
    json_decref(problems);
    ncd_findings_release(&fl);
    ncd_explain_free(ex);
    ncd_rules_free(rules);
    ncd_ctx_free(ctx);
    return status;
}
