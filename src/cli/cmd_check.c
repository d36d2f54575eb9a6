/* SPDX-License-Identifier: MIT */
/* nccl-doctor check: run every node check and report findings. */
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "ncd/check.h"
#include "ncd/error.h"
#include "ncd/recommend.h"

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
    struct cli_common c;
    int pst = cli_parse("check", argc, argv, &c, NULL, NULL, NULL, NULL);
    if (pst != CLI_CONTINUE)
        return pst;
    struct ncd_ctx *ctx = cli_ctx_new(&c);
    if (!ctx)
        return NCD_EXIT_TOOL;
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
