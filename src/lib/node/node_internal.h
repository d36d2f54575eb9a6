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

#endif
