/* SPDX-License-Identifier: MIT */
/* nccl-doctor gather: capture this node into one tarball for offline
 * diagnosis (`check --sysroot FILE.tar.gz`). */
#include <stdio.h>

#include "cmd.h"
#include "ncd/error.h"
#include "ncd/gather.h"

static const struct option options[] = {
    {"output", required_argument, 0, 'o'},
    {0, 0, 0, 0},
};

const char ncd_cmd_gather_usage[] =
     "usage: nccl-doctor gather -o FILE.tar.gz\n"
     "\n"
     "Writes the sysfs/procfs files nccl-doctor's probes read, the address\n"
     "list, the NCCL/CUDA environment (secrets redacted), library versions\n"
     "and limits into one tarball.  Replay it anywhere with\n"
     "`nccl-doctor check --sysroot FILE.tar.gz` (or any other command).\n"
     "\n"
     "  -o, --output FILE   the tarball to write (written to a temporary\n"
     "                      file, then renamed)\n";

static int gather_opt(int opt, const char *arg, void *data)
{
    if (opt != 'o')
        return -1;
    *(const char **)data = arg;
    return 0;
}

int ncd_cmd_gather(int argc, char **argv)
{
    struct cli_common c;
    const char *outp = NULL;
    int pst = cli_parse("gather", argc, argv, &c, options, gather_opt, &outp,
                        NULL);
    if (pst != CLI_CONTINUE)
        return pst;
    if (!outp) {
        cli_err("gather: -o FILE.tar.gz is required");
        cli_usage("gather", stderr);
        return NCD_EXIT_TOOL;
    }
    struct ncd_ctx *ctx = cli_ctx_new(&c);
    if (!ctx)
        return NCD_EXIT_TOOL;
    struct ncd_gather_stats st;
    int rc = ncd_gather(ctx, outp, &st);
    if (rc < 0) {
        cli_err("gather: %s%s%s", ncd_strerror(rc),
                *ncd_ctx_errdetail(ctx) ? ": " : "", ncd_ctx_errdetail(ctx));
        ncd_ctx_free(ctx);
        return NCD_EXIT_TOOL;
    }
    if (c.json) {
        json_t *env = ncd_json_envelope(cli_hostname(ctx));
        if (env)
            json_object_set_new(
                env, "gather",
                json_pack("{s:s,s:I,s:I,s:I,s:I,s:I}", "output", outp,
                          "files", (json_int_t)st.files, "links",
                          (json_int_t)st.links, "dirs", (json_int_t)st.dirs,
                          "skipped", (json_int_t)st.skipped, "bytes",
                          (json_int_t)st.bytes));
        rc = cli_print_json(env) < 0 ? -1 : 0;
    } else {
        printf("wrote %s: %zu files, %zu symlinks, %zu directories, %lld "
               "bytes%s\n"
               "environment values of *TOKEN*/*SECRET*/*PASSWORD*/*KEY*/"
               "*CREDENTIAL* variables are redacted; review before sharing.\n"
               "replay: nccl-doctor check --sysroot %s\n",
               outp, st.files, st.links, st.dirs, st.bytes,
               st.skipped ? " (some unreadable files skipped)" : "", outp);
    }
    ncd_ctx_free(ctx);
    return rc < 0 ? NCD_EXIT_TOOL : NCD_EXIT_OK;
}
