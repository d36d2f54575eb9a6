/* SPDX-License-Identifier: MIT */
/* Helpers shared by the node probes (src/lib/node); not public. */
#ifndef NCD_NODE_INTERNAL_H
#define NCD_NODE_INTERNAL_H

#include <stddef.h>
#include <string.h>

/* Copies a string into a fixed buffer, truncating; always terminated. */
static inline void ncd__scpy(char *dst, size_t n, const char *src)
{
    if (!n)
        return;
    size_t l = 0;
    while (l + 1 < n && src[l]) {
        dst[l] = src[l];
        l++;
    }
    dst[l] = 0;
}

/* A JSON string from text read out of a capture (any bytes): invalid
 * UTF-8 becomes '?' instead of making jansson return NULL. */
#include <jansson.h>
#include <stdlib.h>
#include "ncd/strbuf.h"
static inline json_t *ncd__jstr(const char *s)
{
    json_t *j = json_string(s);
    if (j || !s)
        return j ? j : json_null();
    char *c = strdup(s);
    if (!c)
        return NULL;
    ncd_utf8_sanitize(c);
    j = json_string(c);
    free(c);
    return j;
}

/*
 * ncd_sysroot_unpack() (ncd/gather.h) of a tarball held in memory (len
 * bytes at buf, not copied, read only during the call); `label` names it
 * in messages.  Same limits, results and cleanup; tests/fuzz/fuzz_archive.c
 * drives it.
 */
int ncd__sysroot_unpack_mem(const void *buf, size_t len, const char *label,
                            char *dir, size_t dirsz, char *top, size_t topsz,
                            char *err, size_t errsz);

#endif
