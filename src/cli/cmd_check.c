/* SPDX-License-Identifier: MIT */
/* nccl-doctor check: run every node check and report findings. */
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "ncd/check.h"
#include "ncd/error.h"
#include "ncd/recommend.h"

enum { OPT_NCCL_VERSION = CLI_OPT__NEXT };

/* The recommended environment: the interface recommendation first, then
 * the env suggestions of warning/error findings. */
static json_t *recommended_env(json_t *facts, const struct ncd_findings *l)
{
    json_t *env = json_object();
    json_t *net = json_object_get(json_object_get(facts, "network"),
                                  "recommended_env");
    if (net)
        json_object_update(env, net);
    json_t *more = ncd_findings_env_json(l, NCD_SEV_WARNING);
    const char *k;
    json_t *v;
    json_object_foreach(more, k, v)
    {
        if (!json_object_get(env, k))
            json_object_set(env, k, v);
    }
    json_decref(more);
    return env;
}

static void render_text(struct ncd_strbuf *sb, const char *host,
                        struct ncd_ctx *ctx, const struct ncd_check_opts *o,
                        const struct ncd_findings *l, json_t *facts,
                        json_t *env, const struct ncd_text_style *st)
{
    char vb[16];
    ncd_sb_printf(sb, "nccl-doctor %s: check of %s%s%s\n", ncd_version(),
                  host, ncd_ctx_is_live(ctx) ? "" : " (capture ",
                  ncd_ctx_is_live(ctx) ? "" : ncd_ctx_sysroot(ctx));
    if (!ncd_ctx_is_live(ctx))
        ncd_sb_puts(sb, ")\n");
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
    static const struct option lo[] = {
        CLI_COMMON_OPTS,
        {"nccl-version", required_argument, 0, OPT_NCCL_VERSION},
        {0, 0, 0, 0},
    };
    struct cli_common c;
    const char *ver = NULL;
    cli_common_init(&c);
    optind = 1;
    int opt;
    while ((opt = getopt_long(argc, argv, "vh", lo, NULL)) != -1) {
        int r = cli_common_opt(&c, opt, optarg);
        if (r < 0)
            return NCD_EXIT_TOOL;
        if (r)
            continue;
        if (opt == 'h') {
            cli_usage("check", stdout);
            return NCD_EXIT_OK;
        }
        if (opt == OPT_NCCL_VERSION) {
            ver = optarg;
            continue;
        }
        cli_usage("check", stderr);
        return NCD_EXIT_TOOL;
    }
    if (optind < argc) {
        cli_err("check: unexpected argument '%s'", argv[optind]);
        return NCD_EXIT_TOOL;
    }
    struct ncd_ctx *ctx = cli_ctx_new(&c);
    if (!ctx)
        return NCD_EXIT_TOOL;
    struct ncd_check_opts o;
    char src[600];
    if (cli_nccl_version(ctx, ver, &o, src, sizeof src) < 0) {
        ncd_ctx_free(ctx);
        return NCD_EXIT_TOOL;
    }
    struct ncd_findings l = {0};
    json_t *facts = json_object();
    int rc = facts ? ncd_run_checks(ctx, &o, &l, facts) : NCD_ENOMEM;
    int status = NCD_EXIT_TOOL;
    if (rc < 0) {
        cli_err("check failed: %s", ncd_strerror(rc));
        goto out;
    }
    const char *host = cli_hostname(ctx);
    json_t *env = recommended_env(facts, &l);
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
        if (cli_print_json(j) < 0)
            goto out;
    } else {
        struct ncd_strbuf sb = {0};
        struct ncd_text_style st = cli_text_style(&c);
        render_text(&sb, host, ctx, &o, &l, facts, env, &st);
        json_decref(env);
        int w = cli_print_sb(&sb);
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
