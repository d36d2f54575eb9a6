/* SPDX-License-Identifier: MIT */
/* nccl-doctor ifaces: the interface ranking and NCCL's predicted choice. */
#include "cmd.h"
#include "ncd/error.h"
#include "ncd/node_report.h"

const char ncd_cmd_ifaces_usage[] =
     "usage: nccl-doctor ifaces [--json] [--verbose] [--sysroot DIR]\n"
     "                          [--nccl-version X.Y.Z]\n"
     "\n"
     "Lists every interface (flags, addresses, kind, speed, traffic), the\n"
     "interface nccl-doctor recommends and why, and what NCCL itself would\n"
     "pick for the bootstrap and the Socket transport.\n";

int ncd_cmd_ifaces(int argc, char **argv)
{
    struct cli_common c;
    int pst = cli_parse("ifaces", argc, argv, &c, NULL, NULL, NULL, NULL);
    if (pst != CLI_CONTINUE)
        return pst;
    struct ncd_ctx *ctx = cli_ctx_new(&c);
    if (!ctx)
        return NCD_EXIT_TOOL;
    struct ncd_node n = {0};
    int status = NCD_EXIT_TOOL;
    /* ~/.nccl.conf and /etc/nccl.conf can set NCCL_SOCKET_IFNAME too: the
     * NET part needs ENV, which applies them. */
    if (cli_node_probe(ctx, "ifaces", &c, NULL, NCD_PART_BIT(NCD_PART_NET),
                       &n) < 0)
        goto out;
    if (!ncd_node_has(&n, NCD_PART_NET)) {
        const struct ncd_node_status *s = &n.status[NCD_PART_NET];
        cli_err("ifaces: %s%s%s", ncd_strerror(s->rc), *s->detail ? ": " : "",
                s->detail);
        goto out;
    }
    if (c.json) {
        json_t *j = ncd_json_envelope(n.sys.host);
        json_t *body = ncd_node_ifaces_json(&n);
        if (j && body) {
            json_object_update(j, body);
        } else {
            json_decref(j);
            j = NULL;
        }
        json_decref(body);
        if (cli_print_json(j) < 0)
            goto out;
    } else {
        struct ncd_strbuf sb = {0};
        struct ncd_text_style st = cli_text_style(&c);
        ncd_node_ifaces_text(&sb, &n, &st);
        int w = cli_print_sb(&sb);
        ncd_sb_release(&sb);
        if (w < 0)
            goto out;
    }
    status = NCD_EXIT_OK;
out:
    ncd_node_release(&n);
    ncd_ctx_free(ctx);
    return status;
}
