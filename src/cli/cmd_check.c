/* SPDX-License-Identifier: MIT */
/* nccl-doctor check: probe the node, run every check, report. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd.h"
#include "ncd/check.h"
#include "ncd/error.h"
#include "ncd/health.h"
#include "ncd/node_report.h"

/* --format: the report for people, JSON, or a health-check answer. */
enum check_format { FMT_TEXT, FMT_JSON, FMT_PROMETHEUS, FMT_SLURM, FMT_NPD };
static const char *const format_names[] = {"text", "json", "prometheus",
                                           "slurm", "npd", NULL};

enum { OPT_FORMAT = CLI_OPT__NEXT, OPT_OUTPUT };

struct check_cli {
    int format; /* enum check_format; -1: not given */
    const char *output;
};

static int check_opt(int opt, const char *arg, void *data)
{
    struct check_cli *k = data;
    if (opt == OPT_OUTPUT) {
        if (!*arg) {
            cli_err("check: --output needs a file name");
            return -1;
        }
        k->output = arg;
        return 0;
    }
    for (int i = 0; format_names[i]; i++)
        if (strcmp(arg, format_names[i]) == 0) {
            k->format = i;
            return 0;
        }
    cli_err("check: --format takes text, json, prometheus, slurm or npd, "
            "not '%s'",
            arg);
    return -1;
}

/* A health-check format: renders, writes, returns the exit status.  `l`
 * is NULL and `error` set when the checks could not run; `n` may be NULL
 * (no node probed). */
static int health_out(const struct check_cli *k, const struct cli_common *c,
                      const struct ncd_node *n, const struct ncd_findings *l,
                      const char *error)
{
    const char *checks[64];
    size_t nc = 0;
    for (const struct ncd_check *ch = ncd_checks; ch->name && nc < 63; ch++)
        checks[nc++] = ch->name;
    checks[nc] = NULL;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    struct ncd_health_run run = {
        .findings = l,
        .checks = checks,
        .nccl_version = n ? n->sys.nccl_version : 0,
        .nccl_version_source = n ? n->sys.nccl_version_source : NULL,
        .time_s = (double)now.tv_sec + now.tv_nsec / 1e9,
        .strict = c->strict,
        .error = error};
    struct ncd_strbuf sb = {0};
    int st;
    if (k->format == FMT_PROMETHEUS) {
        ncd_health_prometheus(&run, &sb);
        st = error ? NCD_EXIT_TOOL : cli_exit_for(c, ncd_findings_worst(l));
    } else if (k->format == FMT_SLURM) {
        st = ncd_health_slurm(&run, &sb);
    } else {
        st = ncd_health_npd(&run, &sb);
    }
    if (cli_emit(k->output, &sb) < 0)
        st = k->format == FMT_NPD     ? NCD_HEALTH_NPD_UNKNOWN
             : k->format == FMT_SLURM ? NCD_HEALTH_SLURM_DRAIN
                                      : NCD_EXIT_TOOL;
    ncd_sb_release(&sb);
    return st;
}

/* After bad usage: the health-check format the arguments ask for (slurm
 * or npd, as `--format X` or `--format=X`), or -1.  A health check started
 * with a wrong option must still answer in its own convention (a reason
 * line, NHC's or NPD's status), or the wrapper drains the node with an
 * empty reason. */
static int health_format_asked(int argc, char **argv)
{
    int f = -1;
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        if (strcmp(argv[i], "--") == 0)
            break;
        if (strcmp(argv[i], "--format") == 0 && i + 1 < argc)
            v = argv[++i];
        else if (strncmp(argv[i], "--format=", 9) == 0)
            v = argv[i] + 9;
        if (v && strcmp(v, "slurm") == 0)
            f = FMT_SLURM;
        else if (v && strcmp(v, "npd") == 0)
            f = FMT_NPD;
        else if (v)
            f = -1;
    }
    return f;
}

int ncd_cmd_check(int argc, char **argv)
{
    static const struct option extra[] = {
        {"format", required_argument, 0, OPT_FORMAT},
        {"output", required_argument, 0, OPT_OUTPUT},
        {0, 0, 0, 0},
    };
    struct cli_common c = {0};
    struct check_cli k = {.format = -1};
    int pst = cli_parse("check", argc, argv, &c, extra, check_opt, &k, NULL);
    if (pst == NCD_EXIT_TOOL && (k.format = health_format_asked(argc, argv)) >= 0) {
        k.output = NULL; /* the answer goes where the health check reads it */
        return health_out(&k, &c, NULL, NULL,
                          "bad usage of nccl-doctor check (see its stderr)");
    }
    if (pst != CLI_CONTINUE)
        return pst;
    if (k.format < 0) {
        k.format = c.json ? FMT_JSON : FMT_TEXT;
    } else if (c.json && k.format != FMT_JSON) {
        cli_err("check: --json and --format %s contradict each other",
                format_names[k.format]);
        return NCD_EXIT_TOOL;
    }
    c.json = k.format == FMT_JSON;
    int health = k.format >= FMT_PROMETHEUS;
    struct ncd_ctx *ctx = cli_ctx_new(&c);
    if (!ctx)
        return health ? health_out(&k, &c, NULL, NULL,
                                   "cannot open the sysroot")
                      : NCD_EXIT_TOOL;
    struct ncd_node n = {0};
    struct ncd_findings l = {0};
    struct ncd_check_opts co = {0};
    int status = NCD_EXIT_TOOL, rc;
    if (cli_node_probe(ctx, "check", &c, NULL, ncd_checks_parts(&co), &n) < 0) {
        if (health)
            status = health_out(&k, &c, NULL, NULL, "the node probe failed");
        goto out;
    }
    if ((rc = ncd_run_checks(&n, &co, &l)) < 0) {
        cli_err("check failed: %s", ncd_strerror(rc));
        if (health)
            status = health_out(&k, &c, &n, NULL, ncd_strerror(rc));
        goto out;
    }
    if (health) {
        status = health_out(&k, &c, &n, &l, NULL);
        goto out;
    }
    json_t *env = ncd_recommended_env(&n, &l);
    struct ncd_strbuf sb = {0};
    if (c.json) {
        json_t *j = ncd_json_envelope(n.sys.host);
        if (j) {
            json_object_set_new(j, "live", json_boolean(n.sys.live));
            json_object_set_new(j, "findings", ncd_findings_to_json(&l));
            json_object_set_new(j, "recommended_env", env);
            json_object_set_new(j, "facts", ncd_node_facts_json(&n));
        } else {
            json_decref(env);
        }
        cli_json_sb(j, &sb);
    } else {
        struct ncd_text_style st = cli_text_style(&c);
        if (k.output)
            st.color = 0;
        ncd_node_check_text(&sb, &n, &l, env, &st);
        json_decref(env);
    }
    int w = cli_emit(k.output, &sb);
    ncd_sb_release(&sb);
    if (w < 0)
        goto out;
    status = cli_exit_for(&c, ncd_findings_worst(&l));
out:
    ncd_findings_release(&l);
    ncd_node_release(&n);
    ncd_ctx_free(ctx);
    return status;
}
