/* SPDX-License-Identifier: MIT */
/* nccl-doctor ifaces: the interface ranking and NCCL's predicted choice. */
#include <string.h>

#include "cmd.h"
#include "ncd/check.h"
#include "ncd/error.h"
#include "ncd/ncclvars.h"
#include "ncd/recommend.h"

int ncd_cmd_ifaces(int argc, char **argv)
{
    struct cli_common c;
    int pst = cli_parse("ifaces", argc, argv, &c, NULL, NULL, NULL, NULL);
    if (pst != CLI_CONTINUE)
        return pst;
    struct ncd_ctx *ctx = cli_ctx_new(&c);
    if (!ctx)
        return NCD_EXIT_TOOL;
    struct ncd_check_opts o;
    char src[600];
    struct ncd_netif_list nl = {0};
    struct ncd_recommendation rec = {0};
    struct ncd_nccl_choice ch;
    int status = NCD_EXIT_TOOL;
    if (cli_nccl_version(ctx, c.nccl_version, &o, src, sizeof src) < 0)
        goto out;
    /* ~/.nccl.conf and /etc/nccl.conf can set NCCL_SOCKET_IFNAME too. */
    int rc = ncd_nccl_conf_apply(ctx, NULL);
    if (rc == 0)
        rc = ncd_netif_probe(ctx, &nl);
    if (rc == 0)
        rc = ncd_recommend(ctx, &nl, &rec);
    if (rc == 0)
        rc = ncd_nccl_select(ctx, &nl, o.nccl_version, &ch);
    if (rc < 0) {
        cli_err("ifaces: %s%s%s", ncd_strerror(rc),
                *ncd_ctx_errdetail(ctx) ? ": " : "", ncd_ctx_errdetail(ctx));
        goto out;
    }
    if (c.json) {
        json_t *j = ncd_json_envelope(cli_hostname(ctx));
        json_t *body = ncd_net_report_json(&nl, &rec, &ch,
                                           o.nccl_version_source);
        if (j && body)
            json_object_update(j, body);
        else {
            json_decref(j);
            j = NULL;
        }
        json_decref(body);
        if (cli_print_json(j) < 0)
            goto out;
    } else {
        struct ncd_strbuf sb = {0};
        struct ncd_text_style st = cli_text_style(&c);
        ncd_net_render_text(&sb, &nl, &rec, &ch, o.nccl_version_source, 1,
                            &st);
        const char *names[8], *values[8];
        int ne = ncd_recommend_env(&rec, names, values);
        if (ne) {
            ncd_sb_puts(&sb, "\n  Recommended:\n");
            for (int i = 0; i < ne; i++) {
                ncd_sb_printf(&sb, "    export %s=", names[i]);
                ncd_sb_shell_quote(&sb, values[i]);
                ncd_sb_putc(&sb, '\n');
            }
            if (rec.ib_disable)
                ncd_sb_printf(&sb, "    (NCCL_IB_DISABLE=1: %s)\n",
                              rec.ib_reason);
        } else {
            ncd_sb_puts(&sb, "\n  No usable interface: nothing to "
                             "recommend.\n");
        }
        int w = cli_print_sb(&sb);
        ncd_sb_release(&sb);
        if (w < 0)
            goto out;
    }
    status = NCD_EXIT_OK;
out:
    ncd_recommendation_release(&rec);
    ncd_netif_list_release(&nl);
    ncd_ctx_free(ctx);
    return status;
}
