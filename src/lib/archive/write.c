/* SPDX-License-Identifier: MIT */
/* Writing a capture tarball (see ncd/archive.h). */
#define _GNU_SOURCE
#include "archive/libarchive.h"
#include "ncd/archive.h"
#include "ncd/error.h"

#include <string.h>
#include <time.h>

/* A failed libarchive call: the errno of the system call under it (ENOSPC
 * of a full disk) when it kept one, else NCD_EIO with its text. */
static int archive_fail(struct ncd_ctx *ctx, const struct ncd__archive_api *A,
                        struct archive *a, const char *what)
{
    int e = A->err_no(a);
    const char *s = A->error_string(a);
    if (e > 0)
        return ncd_fail(ctx, ncd_err_from_errno(e), "%s: %s (libarchive: %s)",
                        what, strerror(e), s ? s : "no detail");
    return ncd_fail(ctx, NCD_EIO, "%s: %s", what, s ? s : "no detail");
}

int ncd_tar_write(struct ncd_ctx *ctx, int fd, const struct ncd_tar_entry *v,
                  size_t n)
{
    char err[256];
    const struct ncd__archive_api *A = ncd__archive(err, sizeof err);
    if (!A)
        return ncd_fail(ctx, NCD_EDLOPEN, "%s", err);
    struct archive *a = A->write_new();
    if (!a)
        return NCD_ENOMEM;
    int rc = 0;
    if (A->write_add_filter_gzip(a) != ARCHIVE_OK ||
        A->write_set_format_pax_restricted(a) != ARCHIVE_OK ||
        A->write_open_fd(a, fd) != ARCHIVE_OK) {
        rc = archive_fail(ctx, A, a, "archive");
        A->write_free(a);
        return rc;
    }
    struct archive_entry *e = A->entry_new();
    if (!e) {
        A->write_free(a);
        return NCD_ENOMEM;
    }
    time_t now = time(NULL);
    for (size_t i = 0; i < n && !rc; i++) {
        const struct ncd_tar_entry *x = &v[i];
        A->entry_clear(e);
        A->entry_set_pathname(e, x->path);
        A->entry_set_mtime(e, now, 0);
        if (x->type == NCD_TAR_DIR) {
            A->entry_set_filetype(e, AE_IFDIR);
            A->entry_set_perm(e, 0755);
        } else if (x->type == NCD_TAR_LINK) {
            A->entry_set_filetype(e, AE_IFLNK);
            A->entry_set_perm(e, 0777);
            A->entry_set_symlink(e, x->data);
        } else {
            A->entry_set_filetype(e, AE_IFREG);
            A->entry_set_perm(e, 0644);
            A->entry_set_size(e, (la_int64_t)x->len);
        }
        if (A->write_header(a, e) != ARCHIVE_OK ||
            (x->type == NCD_TAR_FILE && x->len &&
             A->write_data(a, x->data, x->len) != (la_ssize_t)x->len))
            rc = archive_fail(ctx, A, a, "writing the archive");
    }
    A->entry_free(e);
    if (A->write_close(a) != ARCHIVE_OK && !rc)
        rc = archive_fail(ctx, A, a, "closing the archive");
    A->write_free(a);
    return rc;
}
