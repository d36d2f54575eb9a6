/* SPDX-License-Identifier: MIT */
/* nccl-doctor topo: the GPU/NIC matrix as `nvidia-smi topo -m` prints it. */
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "ncd/error.h"
#include "ncd/topo.h"

enum { OPT_TOPOLOGY = CLI_OPT__NEXT, OPT_NO_NVML };

int ncd_cmd_topo(int argc, char **argv)
{
    static const struct option opts[] = {
        CLI_COMMON_OPTS,
        {"topology", required_argument, 0, OPT_TOPOLOGY},
        {"no-nvml", no_argument, 0, OPT_NO_NVML},
        {0, 0, 0, 0},
    };
    struct cli_common c;
    const char *xml = NULL;
    int use_nvml = 1, opt;
    cli_common_init(&c);
    optind = 1;
    while ((opt = getopt_long(argc, argv, "vh", opts, NULL)) != -1) {
        int r = cli_common_opt(&c, opt, optarg);
        if (r < 0)
            return NCD_EXIT_TOOL;
        if (r > 0)
            continue;
        switch (opt) {
        case 'h':
            cli_usage("topo", stdout);
            return NCD_EXIT_OK;
        case OPT_TOPOLOGY:
            xml = optarg;
            break;
        case OPT_NO_NVML:
            use_nvml = 0;
            break;
        default:
            cli_usage("topo", stderr);
            return NCD_EXIT_TOOL;
        }
    }
    if (optind < argc) {
        cli_err("topo: unexpected argument '%s'", argv[optind]);
        return NCD_EXIT_TOOL;
    }
    struct ncd_ctx *ctx = cli_ctx_new(&c);
    if (!ctx)
        return NCD_EXIT_TOOL;
    struct ncd_topo t;
    int rc = xml ? ncd_topo_load_xml(ctx, xml, &t)
                 : ncd_topo_probe(ctx, use_nvml, &t);
    if (rc < 0) {
        cli_err("topo: %s%s%s", ncd_strerror(rc),
                *ncd_ctx_errdetail(ctx) ? ": " : "", ncd_ctx_errdetail(ctx));
        ncd_topo_release(&t);
        ncd_ctx_free(ctx);
        return NCD_EXIT_TOOL;
    }
    int status = NCD_EXIT_OK;
    if (c.json) {
        json_t *env = ncd_json_envelope(cli_hostname(ctx));
        json_t *tj = ncd_topo_to_json(&t);
        if (env && tj)
            json_object_set_new(env, "topology", tj);
        else
            json_decref(tj);
        if (cli_print_json(env) < 0)
            status = NCD_EXIT_TOOL;
    } else {
        struct ncd_strbuf sb = {0};
        if (!t.n_gpu)
            ncd_sb_printf(&sb,
                          "No NVIDIA GPU found (source: %s): nothing for NCCL "
                          "to connect on this node.\n\n",
                          t.source);
        ncd_topo_matrix_text(&t, &sb);
        if (cli_print_sb(&sb) < 0)
            status = NCD_EXIT_TOOL;
        ncd_sb_release(&sb);
    }
    ncd_topo_release(&t);
    ncd_ctx_free(ctx);
    return status;
}
