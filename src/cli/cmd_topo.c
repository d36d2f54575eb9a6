/* SPDX-License-Identifier: MIT */
/* nccl-doctor topo: the GPU/NIC matrix as `nvidia-smi topo -m` prints it. */
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "ncd/error.h"
#include "ncd/node_report.h"

enum { OPT_TOPOLOGY = CLI_OPT__NEXT, OPT_NO_NVML, OPT_FORMAT, OPT_OUTPUT };

static const struct option options[] = {
    {"topology", required_argument, 0, OPT_TOPOLOGY},
    {"no-nvml", no_argument, 0, OPT_NO_NVML},
    {"format", required_argument, 0, OPT_FORMAT},
    {"output", required_argument, 0, OPT_OUTPUT},
    {0, 0, 0, 0},
};

/* topo's options beyond what the node probe takes */
struct topo_cli {
    struct ncd_node_opts node;
    const char *format; /* "text", "json", "svg"; NULL: text (or --json) */
    const char *output;
};

static int topo_opt(int opt, const char *arg, void *data)
{
    struct topo_cli *o = data;
    if (opt == OPT_TOPOLOGY)
        o->node.topology_xml = arg;
    else if (opt == OPT_NO_NVML)
        o->node.nvml = NCD_NVML_NEVER;
    else if (opt == OPT_OUTPUT && *arg)
        o->output = arg;
    else if (opt == OPT_FORMAT && (!strcmp(arg, "text") ||
                                   !strcmp(arg, "json") || !strcmp(arg, "svg")))
        o->format = arg;
    else {
        cli_err("topo: %s", opt == OPT_OUTPUT
                                ? "--output needs a file name"
                                : "--format takes text, json or svg");
        return -1;
    }
    return 0;
}

int ncd_cmd_topo(int argc, char **argv)
{
    struct cli_common c;
    struct topo_cli o = {.node = {.nvml = NCD_NVML_ALWAYS}};
    int pst = cli_parse("topo", argc, argv, &c, options, topo_opt, &o, NULL);
    if (pst != CLI_CONTINUE)
        return pst;
    if (o.format && c.json && strcmp(o.format, "json") != 0) {
        cli_err("topo: --json and --format %s contradict each other",
                o.format);
        return NCD_EXIT_TOOL;
    }
    if (o.format)
        c.json = !strcmp(o.format, "json");
    int svg = o.format && !strcmp(o.format, "svg");
    /* hwloc's own variables name the same inputs (hwloc(7)): an XML
     * export, or a directory standing for / such as an unpacked
     * hwloc-gather-topology capture. */
    const char *hx = getenv("HWLOC_XMLFILE"), *hf = getenv("HWLOC_FSROOT");
    if (!o.node.topology_xml && !c.sysroot && hx && *hx)
        o.node.topology_xml = hx;
    if (!o.node.topology_xml && !c.sysroot && hf && *hf)
        c.sysroot = hf;
    struct ncd_ctx *ctx = cli_ctx_new(&c);
    if (!ctx)
        return NCD_EXIT_TOOL;
    struct ncd_node n = {0};
    int status = NCD_EXIT_TOOL;
    if (cli_node_probe(ctx, "topo", &c, &o.node, NCD_PART_BIT(NCD_PART_PCI),
                       &n) < 0)
        goto out;
    if (!ncd_node_has(&n, NCD_PART_PCI)) {
        const struct ncd_node_status *s = &n.status[NCD_PART_PCI];
        cli_err("topo: %s%s%s", ncd_strerror(s->rc), *s->detail ? ": " : "",
                s->detail);
        goto out;
    }
    struct ncd_strbuf sb = {0};
    if (svg) {
        ncd_topo_svg(&n.topo, o.node.topology_xml ? NULL : cli_hostname(ctx),
                     &sb);
    } else if (c.json) {
        json_t *env = ncd_json_envelope(cli_hostname(ctx));
        json_t *tj = ncd_topo_to_json(&n.topo);
        if (env && tj)
            json_object_set_new(env, "topology", tj);
        else
            json_decref(tj);
        cli_json_sb(env, &sb);
    } else {
        ncd_topo_matrix_text(&n.topo, &sb);
    }
    status = cli_emit(o.output, &sb) < 0 ? NCD_EXIT_TOOL : NCD_EXIT_OK;
    ncd_sb_release(&sb);
out:
    ncd_node_release(&n);
    ncd_ctx_free(ctx);
    return status;
}
