/* SPDX-License-Identifier: MIT */
/* nccl-doctor check: probe the node, run every check, report. */
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "ncd/check.h"
#include "ncd/error.h"
#include "ncd/node_report.h"

const char ncd_cmd_check_usage[] =
     "usage: nccl-doctor check [--json] [--strict] [--verbose]\n"
     "                         [--sysroot DIR] [--nccl-version X.Y.Z]\n"
     "\n"
     "Probes network interfaces, NCCL's own interface choice and the NCCL_*\n"
     "environment (plus ~/.nccl.conf and /etc/nccl.conf), and reports\n"
     "findings with cause, evidence and fix.\n"
     "\n"
     "  --json              machine-readable report\n"
     "  --strict            exit 1 when there are warnings but no errors\n"
     "  --verbose, -v       also list checks that passed\n"
     "  --sysroot DIR       read /sys and /proc below DIR (a capture)\n"
     "  --nccl-version V    predict NCCL V's behaviour (default: the\n"
     "                      installed libnccl.so.2, else the newest)\n"
     "  --color[=WHEN]      always, never or auto (default; NO_COLOR honoured)\n"
     "\n"
     "Exit status: 0 no errors, 1 warnings only (with --strict),\n"
     "2 errors found, 3 the tool itself failed or bad usage.\n";

int ncd_cmd_check(int argc, char **argv)
{
    struct cli_common c;
    int pst = cli_parse("check", argc, argv, &c, NULL, NULL, NULL, NULL);
    if (pst != CLI_CONTINUE)
        return pst;
    struct ncd_ctx *ctx = cli_ctx_new(&c);
    if (!ctx)
        return NCD_EXIT_TOOL;
    struct ncd_node n = {0};
    struct ncd_findings l = {0};
    struct ncd_check_opts co = {0};
    int status = NCD_EXIT_TOOL, rc;
    if (cli_node_probe(ctx, "check", &c, NULL, ncd_checks_parts(&co), &n) < 0)
        goto out;
    if ((rc = ncd_run_checks(&n, &co, &l)) < 0) {
        cli_err("check failed: %s", ncd_strerror(rc));
        goto out;
    }
    json_t *env = ncd_recommended_env(&n, &l);
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
        if (cli_print_json(j) < 0)
            goto out;
    } else {
        struct ncd_strbuf sb = {0};
        struct ncd_text_style st = cli_text_style(&c);
        ncd_node_check_text(&sb, &n, &l, env, &st);
        json_decref(env);
        int w = cli_print_sb(&sb);
        ncd_sb_release(&sb);
        if (w < 0)
            goto out;
    }
    status = cli_exit_for(&c, ncd_findings_worst(&l));
out:
    ncd_findings_release(&l);
    ncd_node_release(&n);
    ncd_ctx_free(ctx);
    return status;
}
