/* SPDX-License-Identifier: MIT */
/* nccl-doctor topo: the GPU/NIC matrix as `nvidia-smi topo -m` prints it. */
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "ncd/error.h"
#include "ncd/node_report.h"

enum { OPT_TOPOLOGY = CLI_OPT__NEXT, OPT_NO_NVML };

static const struct option options[] = {
    {"topology", required_argument, 0, OPT_TOPOLOGY},
    {"no-nvml", no_argument, 0, OPT_NO_NVML},
    {0, 0, 0, 0},
};

const char ncd_cmd_topo_usage[] =
     "usage: nccl-doctor topo [--json] [--sysroot DIR|TARBALL]\n"
     "                        [--topology FILE.xml] [--no-nvml]\n"
     "\n"
     "Prints the GPU and NIC matrix as `nvidia-smi topo -m` does (X, NV#,\n"
     "PIX, PXB, PHB, NODE, SYS, CPU and NUMA affinity, NIC legend),\n"
     "computed from the PCI tree in /sys; NVLink counts and GPU names come\n"
     "from NVML (libnvidia-ml.so.1) when it can be loaded.\n"
     "\n"
     "  --topology FILE     read an hwloc XML export (lstopo file.xml)\n"
     "  --no-nvml           do not load NVML\n";

static int topo_opt(int opt, const char *arg, void *data)
{
    struct ncd_node_opts *o = data;
    if (opt == OPT_TOPOLOGY)
        o->topology_xml = arg;
    else if (opt == OPT_NO_NVML)
        o->nvml = NCD_NVML_NEVER;
    return 0;
}

int ncd_cmd_topo(int argc, char **argv)
{
    struct cli_common c;
    struct ncd_node_opts o = {.nvml = NCD_NVML_ALWAYS};
    int pst = cli_parse("topo", argc, argv, &c, options, topo_opt, &o, NULL);
    if (pst != CLI_CONTINUE)
        return pst;
    /* hwloc's own variables name the same inputs (hwloc(7)): an XML
     * export, or a directory standing for / such as an unpacked
     * hwloc-gather-topology capture. */
    const char *hx = getenv("HWLOC_XMLFILE"), *hf = getenv("HWLOC_FSROOT");
    if (!o.topology_xml && !c.sysroot && hx && *hx)
        o.topology_xml = hx;
    if (!o.topology_xml && !c.sysroot && hf && *hf)
        c.sysroot = hf;
    struct ncd_ctx *ctx = cli_ctx_new(&c);
    if (!ctx)
        return NCD_EXIT_TOOL;
    struct ncd_node n = {0};
    int status = NCD_EXIT_TOOL;
    if (cli_node_probe(ctx, "topo", &c, &o, NCD_PART_BIT(NCD_PART_PCI), &n) < 0)
        goto out;
    if (!ncd_node_has(&n, NCD_PART_PCI)) {
        const struct ncd_node_status *s = &n.status[NCD_PART_PCI];
        cli_err("topo: %s%s%s", ncd_strerror(s->rc), *s->detail ? ": " : "",
                s->detail);
        goto out;
    }
    status = NCD_EXIT_OK;
    if (c.json) {
        json_t *env = ncd_json_envelope(cli_hostname(ctx));
        json_t *tj = ncd_topo_to_json(&n.topo);
        if (env && tj)
            json_object_set_new(env, "topology", tj);
        else
            json_decref(tj);
        if (cli_print_json(env) < 0)
            status = NCD_EXIT_TOOL;
    } else {
        struct ncd_strbuf sb = {0};
        ncd_topo_matrix_text(&n.topo, &sb);
        if (cli_print_sb(&sb) < 0)
            status = NCD_EXIT_TOOL;
        ncd_sb_release(&sb);
    }
out:
    ncd_node_release(&n);
    ncd_ctx_free(ctx);
    return status;
}
