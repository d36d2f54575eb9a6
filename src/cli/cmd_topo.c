/* SPDX-License-Identifier: MIT */
/* nccl-doctor topo: the GPU/NIC matrix as `nvidia-smi topo -m` prints it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "ncd/error.h"
#include "ncd/readall.h"
#include "ncd/topo.h"

enum { OPT_TOPOLOGY = CLI_OPT__NEXT, OPT_NO_NVML, OPT_FORMAT, OPT_OUTPUT };

struct topo_opts {
    const char *xml;
    int use_nvml;
    const char *format; /* "text", "json", "svg"; NULL: text (or --json) */
    const char *output;
};

static int topo_opt(int opt, const char *arg, void *data)
{
    struct topo_opts *o = data;
    if (opt == OPT_TOPOLOGY)
        o->xml = arg;
    else if (opt == OPT_NO_NVML)
        o->use_nvml = 0;
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

/* The rendered text to --output (atomically) or stdout. */
static int topo_emit(const struct topo_opts *o, const struct ncd_strbuf *sb)
{
    if (!o->output)
        return cli_print_sb(sb);
    if (sb->oom) {
        cli_err("out of memory while rendering");
        return -1;
    }
    if (ncd_write_file_atomic(o->output, ncd_sb_str(sb), sb->len, 0644)) {
        cli_err("topo: cannot write %s: %s", o->output, strerror(errno));
        return -1;
    }
    return 0;
}

int ncd_cmd_topo(int argc, char **argv)
{
    static const struct option extra[] = {
        {"topology", required_argument, 0, OPT_TOPOLOGY},
        {"no-nvml", no_argument, 0, OPT_NO_NVML},
        {"format", required_argument, 0, OPT_FORMAT},
        {"output", required_argument, 0, OPT_OUTPUT},
        {0, 0, 0, 0},
    };
    struct cli_common c;
    struct topo_opts o = {NULL, 1, NULL, NULL};
    int pst = cli_parse("topo", argc, argv, &c, extra, topo_opt, &o, NULL);
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
    if (!o.xml && !c.sysroot && hx && *hx)
        o.xml = hx;
    if (!o.xml && !c.sysroot && hf && *hf)
        c.sysroot = hf;
    const char *xml = o.xml;
    int use_nvml = o.use_nvml;
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
    if (svg) {
        struct ncd_strbuf sb = {0};
        ncd_topo_svg(&t, xml ? NULL : cli_hostname(ctx), &sb);
        if (topo_emit(&o, &sb) < 0)
            status = NCD_EXIT_TOOL;
        ncd_sb_release(&sb);
    } else if (c.json) {
        json_t *env = ncd_json_envelope(cli_hostname(ctx));
        json_t *tj = ncd_topo_to_json(&t);
        if (env && tj)
            json_object_set_new(env, "topology", tj);
        else
            json_decref(tj);
        char *js = env ? json_dumps(env, JSON_INDENT(2) | JSON_PRESERVE_ORDER)
                       : NULL;
        json_decref(env);
        struct ncd_strbuf sb = {0};
        ncd_sb_puts(&sb, js);
        ncd_sb_putc(&sb, '\n');
        sb.oom |= !js;
        free(js);
        if (topo_emit(&o, &sb) < 0)
            status = NCD_EXIT_TOOL;
        ncd_sb_release(&sb);
    } else {
        struct ncd_strbuf sb = {0};
        if (!t.n_gpu)
            ncd_sb_printf(&sb,
                          "No NVIDIA GPU found (source: %s): nothing for NCCL "
                          "to connect on this node.\n\n",
                          t.source);
        ncd_topo_matrix_text(&t, &sb);
        if (topo_emit(&o, &sb) < 0)
            status = NCD_EXIT_TOOL;
        ncd_sb_release(&sb);
    }
    ncd_topo_release(&t);
    ncd_ctx_free(ctx);
    return status;
}
