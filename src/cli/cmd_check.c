/* SPDX-License-Identifier: MIT */
/* nccl-doctor check: run every node check and report findings. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd.h"
#include "ncd/check.h"
#include "ncd/error.h"
#include "ncd/health.h"
#include "ncd/readall.h"
#include "ncd/recommend.h"

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

/* Writes the rendered text to --output (atomically) or stdout. */
static int emit(const struct check_cli *k, struct ncd_strbuf *sb)
{
    if (!k->output)
        return cli_print_sb(sb);
    if (sb->oom) {
        cli_err("out of memory while rendering");
        return -1;
    }
    if (ncd_write_file_atomic(k->output, ncd_sb_str(sb), sb->len, 0644)) {
        cli_err("check: cannot write %s: %s", k->output, strerror(errno));
        return -1;
    }
    return 0;
}

/* A health-check format: renders, writes, returns the exit status.  `l`
 * is NULL and `error` set when the checks could not run. */
static int health_out(const struct check_cli *k, const struct cli_common *c,
                      const struct ncd_check_opts *o,
                      const struct ncd_findings *l, const char *error)
{
    const char *checks[64];
    size_t n = 0;
    for (const struct ncd_check *ch = ncd_checks; ch->name && n < 63; ch++)
        checks[n++] = ch->name;
    checks[n] = NULL;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    struct ncd_health_run run = {
        .findings = l,
        .checks = checks,
        .nccl_version = !o ? 0 : o->nccl_version ? o->nccl_version : NCD_NCCL_NEWEST,
        .nccl_version_source = o ? o->nccl_version_source : NULL,
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
    if (emit(k, &sb) < 0)
        st = k->format == FMT_NPD ? NCD_HEALTH_NPD_UNKNOWN
             : k->format == FMT_SLURM ? NCD_HEALTH_SLURM_DRAIN
                                      : NCD_EXIT_TOOL;
    ncd_sb_release(&sb);
    return st;
}

static void render_text(struct ncd_strbuf *sb, const char *host,
                        struct ncd_ctx *ctx, const struct ncd_check_opts *o,
                        const struct ncd_findings *l, json_t *facts,
                        json_t *env, const struct ncd_text_style *st)
{
    char vb[16];
    if (ncd_ctx_is_live(ctx))
        ncd_sb_printf(sb, "nccl-doctor %s: check of %s\n", ncd_version(),
                      host);
    else
        ncd_sb_printf(sb, "nccl-doctor %s: check of %s (capture %s)\n",
                      ncd_version(), host, ncd_ctx_sysroot(ctx));
    ncd_sb_printf(sb, "NCCL behaviour predicted: %s (%s)\n\n",
                  ncd_nccl_version_str(o->nccl_version ? o->nccl_version
                                                       : NCD_NCCL_NEWEST,
                                       vb, sizeof vb),
                  o->nccl_version_source);
    json_t *net = json_object_get(facts, "network");
    if (net) {
        ncd_sb_puts(sb, "Network interfaces\n");
        size_t i;
        json_t *it;
        json_array_foreach(json_object_get(net, "interfaces"), i, it)
        {
            json_t *rank = json_object_get(it, "rank");
            json_t *sp = json_object_get(it, "speed_mbps");
            ncd_sb_printf(sb, "  %s %-16s %-16s %-8s",
                          json_is_integer(rank) ? "#" : " ",
                          json_string_value(json_object_get(it, "name")),
                          json_string_value(json_object_get(it, "kind")),
                          json_string_value(json_object_get(it, "operstate")));
            if (json_is_integer(sp))
                ncd_sb_printf(sb, " %6lldM", (long long)json_integer_value(sp));
            else
                ncd_sb_puts(sb, "       ?");
            size_t j;
            json_t *a;
            json_array_foreach(json_object_get(it, "addresses"), j, a)
                ncd_sb_printf(sb, " %s/%lld",
                              json_string_value(json_object_get(a, "address")),
                              (long long)json_integer_value(
                                  json_object_get(a, "prefix")));
            ncd_sb_puts(sb, "\n");
        }
        json_t *nccl = json_object_get(net, "nccl");
        json_t *boot = json_object_get(nccl, "bootstrap");
        ncd_sb_printf(sb, "  recommended: %s; NCCL would bootstrap on: %s\n\n",
                      json_string_value(json_object_get(net, "recommended"))
                          ? json_string_value(
                                json_object_get(net, "recommended"))
                          : "none",
                      json_is_string(boot) ? json_string_value(boot) : "none");
    }
    ncd_sb_puts(sb, "Findings\n");
    ncd_render_findings_text(sb, l, st);
    if (json_object_size(env)) {
        ncd_sb_puts(sb, "\nRecommended environment (nccl-doctor env prints "
                        "it; env --write FILE keeps it)\n");
        const char *k;
        json_t *v;
        json_object_foreach(env, k, v)
        {
            if (json_is_string(v)) {
                ncd_sb_printf(sb, "  export %s=", k);
                ncd_sb_shell_quote(sb, json_string_value(v));
                ncd_sb_putc(sb, '\n');
            } else {
                ncd_sb_printf(sb, "  unset %s\n", k);
            }
        }
    }
}

int ncd_cmd_check(int argc, char **argv)
{
    static const struct option extra[] = {
        {"format", required_argument, 0, OPT_FORMAT},
        {"output", required_argument, 0, OPT_OUTPUT},
        {0, 0, 0, 0},
    };
    struct cli_common c;
    struct check_cli k = {.format = -1};
    int pst = cli_parse("check", argc, argv, &c, extra, check_opt, &k, NULL);
    if (pst != CLI_CONTINUE)
        return pst;
    if (k.format < 0)
        k.format = c.json ? FMT_JSON : FMT_TEXT;
    else if (c.json && k.format != FMT_JSON) {
        cli_err("check: --json and --format %s contradict each other",
                format_names[k.format]);
        return NCD_EXIT_TOOL;
    }
    c.json = k.format == FMT_JSON;
    int health = k.format >= FMT_PROMETHEUS;
    struct ncd_ctx *ctx = cli_ctx_new(&c);
    if (!ctx)
        return health ? health_out(&k, &c, NULL, NULL, "cannot open the "
                                                       "sysroot")
                      : NCD_EXIT_TOOL;
    struct ncd_check_opts o;
    char src[600];
    if (cli_nccl_version(ctx, c.nccl_version, &o, src, sizeof src) < 0) {
        ncd_ctx_free(ctx);
        return NCD_EXIT_TOOL;
    }
    struct ncd_findings l = {0};
    json_t *facts = json_object();
    int rc = facts ? ncd_run_checks(ctx, &o, &l, facts) : NCD_ENOMEM;
    int status = NCD_EXIT_TOOL;
    if (rc < 0) {
        cli_err("check failed: %s", ncd_strerror(rc));
        if (health)
            status = health_out(&k, &c, &o, NULL, ncd_strerror(rc));
        goto out;
    }
    if (health) {
        status = health_out(&k, &c, &o, &l, NULL);
        goto out;
    }
    const char *host = cli_hostname(ctx);
    json_t *env = ncd_recommended_env(facts, &l);
    if (c.json) {
        json_t *j = ncd_json_envelope(host);
        if (j) {
            json_object_set_new(j, "live", json_boolean(ncd_ctx_is_live(ctx)));
            json_object_set_new(j, "findings", ncd_findings_to_json(&l));
            json_object_set_new(j, "recommended_env", env);
            json_object_set(j, "facts", facts);
        } else {
            json_decref(env);
        }
        char *js = j ? json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER)
                     : NULL;
        json_decref(j);
        struct ncd_strbuf sb = {0};
        ncd_sb_puts(&sb, js);
        ncd_sb_putc(&sb, '\n');
        if (!js)
            sb.oom = 1;
        free(js);
        int w = emit(&k, &sb);
        ncd_sb_release(&sb);
        if (w < 0)
            goto out;
    } else {
        struct ncd_strbuf sb = {0};
        struct ncd_text_style st = cli_text_style(&c);
        if (k.output)
            st.color = 0;
        render_text(&sb, host, ctx, &o, &l, facts, env, &st);
        json_decref(env);
        int w = emit(&k, &sb);
        ncd_sb_release(&sb);
        if (w < 0)
            goto out;
    }
    status = cli_exit_for(&c, ncd_findings_worst(&l));
out:
    json_decref(facts);
    ncd_findings_release(&l);
    ncd_ctx_free(ctx);
    return status;
}
