/* SPDX-License-Identifier: MIT */
/* nccl-doctor gather: capture this node into one tarball for offline
 * diagnosis (`check --sysroot FILE.tar.gz`). */
#include <stdio.h>
#include <string.h>

#include "cli_doc.h"
#include "cmd.h"
#include "ncd/error.h"
#include "ncd/gather.h"

static const struct option options[] = {
    {"output", required_argument, 0, 'o'},
    {0, 0, 0, 0},
};

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
        ncd_gather_stats_release(&st);
        ncd_ctx_free(ctx);
        return NCD_EXIT_TOOL;
    }
    /* the files it could not read, and those left out on purpose, by name
     * (also in the capture: .ncd/unreadable, .ncd/skipped) */
    static const char *const head[] = {"could not read", "left out"};
    const char *lists[] = {st.unreadable, st.left_out};
    for (int k = 0; k < 2; k++) {
        const char *p = lists[k];
        for (int shown = 0; p && *p; shown++) {
            const char *nl = strchr(p, '\n');
            size_t n = nl ? (size_t)(nl - p) : strlen(p);
            if (shown < 20) {
                fprintf(stderr, "nccl-doctor: gather: %s ", head[k]);
                cli_put_clean(stderr, p, n);
                fputc('\n', stderr);
            } else if (shown == 20) {
                fprintf(stderr, "nccl-doctor: gather: ... and more: see "
                                ".ncd/%s in the capture\n",
                        k ? "skipped" : "unreadable");
            }
            p += n + (nl != NULL);
        }
    }
    if (c.json) {
        json_t *env = ncd_json_envelope(cli_hostname(ctx));
        json_t *unread = json_array(), *left = json_array();
        for (int k = 0; k < 2; k++)
            for (const char *p = lists[k]; p && *p;) {
                const char *nl = strchr(p, '\n');
                size_t n = nl ? (size_t)(nl - p) : strlen(p);
                json_array_append_new(k ? left : unread,
                                      json_stringn_nocheck(p, n));
                p += n + (nl != NULL);
            }
        if (env)
            json_object_set_new(
                env, "gather",
                json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:o,s:o}", "output", outp,
                          "files", (json_int_t)st.files, "links",
                          (json_int_t)st.links, "dirs", (json_int_t)st.dirs,
                          "skipped", (json_int_t)st.skipped, "bytes",
                          (json_int_t)st.bytes, "unreadable", unread,
                          "left_out", left));
        else {
            json_decref(unread);
            json_decref(left);
        }
        rc = cli_print_json(env) < 0 ? -1 : 0;
    } else {
        printf("wrote %s: %zu files, %zu symlinks, %zu directories, %lld "
               "bytes%s\n"
               "environment values of *TOKEN*/*SECRET*/*PASSWORD*/*KEY*/"
               "*CREDENTIAL* variables and user:password@ in values are "
               "redacted; review before sharing.\n"
               "replay: nccl-doctor check --sysroot %s\n",
               outp, st.files, st.links, st.dirs, st.bytes,
               st.skipped ? " (unreadable files named above)" : "", outp);
        rc = fflush(stdout) ? -1 : 0;
    }
    ncd_gather_stats_release(&st);
    ncd_ctx_free(ctx);
    return rc < 0 ? NCD_EXIT_TOOL : NCD_EXIT_OK;
}
