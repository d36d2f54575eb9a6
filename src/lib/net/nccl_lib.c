/* SPDX-License-Identifier: MIT */
/* The libnccl.so.2 this process would load, and its version. */
#define _GNU_SOURCE
#include "ncd/error.h"
#include "ncd/fs.h"
#include "ncd/nccl.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

int ncd_nccl_lib_detect(struct ncd_ctx *ctx, struct ncd_nccl_lib *out)
{
    memset(out, 0, sizeof *out);
    if (!ncd_ctx_is_live(ctx)) {
        char v[64];
        if (ncd_fs_read_str(ctx, "/.ncd/nccl-version", v, sizeof v) == 0 &&
            ncd_nccl_version_parse(v, &out->version) == 0) {
            out->found = 1;
            snprintf(out->path, sizeof out->path, "recorded in the capture: /.ncd/nccl-version");
        } else {
            snprintf(out->error, sizeof out->error,
                     "no /.ncd/nccl-version in this capture");
        }
        ncd_ctx_clear_error(ctx);
        return 0;
    }
    /* RTLD_LAZY: resolve nothing we do not call; LOCAL: keep the
     * library's symbols away from anything else we load later. */
    void *h = dlopen("libnccl.so.2", RTLD_LAZY | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(out->error, sizeof out->error, "%s",
                 e ? e : "dlopen failed");
        return 0;
    }
    struct link_map *lm = NULL;
    if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name)
        snprintf(out->path, sizeof out->path, "%s", lm->l_name);
    int (*get_version)(int *) = (int (*)(int *))dlsym(h, "ncclGetVersion");
    int code = 0;
    if (!get_version) {
        snprintf(out->error, sizeof out->error,
                 "%s has no ncclGetVersion symbol", out->path);
    } else if (get_version(&code) != 0 || code <= 0) {
        snprintf(out->error, sizeof out->error,
                 "ncclGetVersion() failed in %s", out->path);
    } else {
        out->version = ncd_nccl_version_from_code(code);
        out->found = 1;
    }
    dlclose(h);
    return 0;
}
