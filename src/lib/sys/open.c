/* SPDX-License-Identifier: MIT */
/* ncd_ctx_open(): the one place a context is made for a sysroot, a capture
 * tarball or this machine (see ncd/ctx.h). */
#define _GNU_SOURCE
#include "ncd/archive.h"
#include "ncd/ctx.h"
#include "ncd/error.h"
#include "ncd/fs.h"
#include "ncd/sysops.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void remove_tree(void *arg)
{
    ncd_sysroot_remove(arg);
    free(arg);
}

/* A tarball: unpacked into a private tree removed with the context. */
static int open_tarball(const char *tarball, char *const *envp,
                        struct ncd_ctx **out, char *err, size_t errsz)
{
    char dir[PATH_MAX], top[PATH_MAX], why[512] = "";
    int rc = ncd_sysroot_unpack(tarball, dir, sizeof dir, top, sizeof top,
                                why, sizeof why);
    if (rc < 0)
        return ncd_errbuf(err, errsz, rc, "cannot open sysroot '%s': %s", tarball,
                   *why ? why : ncd_strerror(rc));
    char *keep = strdup(top);
    if (!keep) {
        ncd_sysroot_remove(top);
        return NCD_ENOMEM;
    }
    rc = ncd_ctx_new(dir, envp, out);
    if (rc < 0) {
        remove_tree(keep);
        return ncd_errbuf(err, errsz, rc, "cannot open sysroot '%s': %s", tarball,
                   ncd_strerror(rc));
    }
    ncd_ctx_on_free(*out, remove_tree, keep);
    /* Reports name the capture the user gave, not the temporary tree. */
    if (ncd_ctx_set_sysroot_label(*out, tarball) < 0) {
        ncd_ctx_free(*out);
        *out = NULL;
        return NCD_ENOMEM;
    }
    return 0;
}

/* "a character device", ... for a message about a path that is neither a
 * directory nor a regular file. */
static const char *file_kind(mode_t m)
{
    return S_ISCHR(m)    ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISFIFO(m) ? "a FIFO (named pipe)"
           : S_ISSOCK(m) ? "a socket"
                         : "not a regular file or directory";
}

int ncd_ctx_open(const struct ncd_ctx_config *cfg, struct ncd_ctx **out,
                 char *err, size_t errsz)
{
    const char *root = cfg->sysroot;
    struct stat st;
    int rc;
    *out = NULL;
    if (err && errsz)
        err[0] = '\0';
    int have = root && *root && stat(root, &st) == 0;
    if (have && S_ISREG(st.st_mode))
        rc = open_tarball(root, cfg->envp, out, err, errsz);
    else if (have && !S_ISDIR(st.st_mode))
        rc = ncd_errbuf(err, errsz, NCD_EINVAL,
                        "cannot open sysroot '%s': it is %s; expected a "
                        "capture directory or a capture tarball (made by "
                        "`nccl-doctor gather`)",
                        root, file_kind(st.st_mode));
    else if ((rc = ncd_ctx_new(root, cfg->envp, out)) < 0)
        ncd_errbuf(err, errsz, rc, "cannot open sysroot '%s': %s",
            root ? root : "/", ncd_strerror(rc));
    if (rc < 0)
        return rc;
    struct ncd_ctx *ctx = *out;
    if (ncd_ctx_is_live(ctx))
        return 0;
    if (!ncd_fs_exists(ctx, "/sys") && !ncd_fs_exists(ctx, "/proc") &&
        !ncd_fs_exists(ctx, "/.ncd")) {
        ncd_errbuf(err, errsz, NCD_EINVAL,
            "'%s' is not a capture: it has no sys/, proc/ or .ncd/ (make one "
            "with `nccl-doctor gather`)",
            root);
        rc = NCD_EINVAL;
    } else {
        /* A capture carries the environment it was taken with. */
        char *buf;
        size_t len;
        if (ncd_fs_read(ctx, "/.ncd/env", 1 << 20, &buf, &len) == 0) {
            rc = ncd_ctx_load_env(ctx, buf, len);
            free(buf);
            if (rc < 0)
                ncd_errbuf(err, errsz, rc, "%s/.ncd/env: %s", root,
                    *ncd_ctx_errdetail(ctx) ? ncd_ctx_errdetail(ctx)
                                            : ncd_strerror(rc));
        }
    }
    if (rc < 0) {
        ncd_ctx_free(ctx);
        *out = NULL;
        return rc;
    }
    ncd_ctx_clear_error(ctx);
    return 0;
}
