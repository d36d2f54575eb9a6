/* SPDX-License-Identifier: MIT */
/*
 * The -J file: nccl-tests' naming rule (never overwrite: PATH, PATH.0,
 * PATH.1 ...) and an atomic write (temporary file, then rename).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ncd/error.h"
#include "ncd/perf.h"
#include "ncd/readall.h"

int ncd_perf_json_check_name(const char *path)
{
    size_t n = path ? strlen(path) : 0;
    return n >= 5 && strcmp(path + n - 5, ".json") == 0 ? 0 : NCD_EINVAL;
}

int ncd_perf_json_pick_path(const char *asked, char *out, size_t outlen)
{
    if (ncd_perf_json_check_name(asked))
        return NCD_EINVAL;
    struct stat st;
    if (stat(asked, &st) != 0) {
        snprintf(out, outlen, "%s", asked);
        return 0;
    }
    for (int i = 0; i < 10000; i++) {
        snprintf(out, outlen, "%s.%d", asked, i);
        if (stat(out, &st) != 0)
            return 0;
    }
    out[0] = '\0';
    return NCD_EEXISTS;
}

int ncd_perf_json_write(struct ncd_ctx *ctx, const json_t *doc,
                        const char *path)
{
    char *s = json_dumps(doc, JSON_PRESERVE_ORDER | JSON_COMPACT);
    if (!s)
        return ncd_fail(ctx, NCD_ENOMEM, "out of memory writing %s", path);
    size_t n = strlen(s);
    s[n] = '\n'; /* json_dumps' NUL becomes the final newline */
    int rc = 0;
    if (ncd_write_file_atomic(path, s, n + 1, 0644) != 0) {
        int e = errno;
        rc = ncd_fail(ctx, ncd_err_from_errno(e), "cannot write %s: %s", path,
                      strerror(e));
    }
    free(s);
    return rc;
}
