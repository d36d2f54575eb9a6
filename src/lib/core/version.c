/* SPDX-License-Identifier: MIT */
/* NCCL version codes (see ncd/version.h): the one parser of the library. */
#define _GNU_SOURCE
#include "ncd/version.h"
#include "ncd/error.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

int ncd_nccl_version_parse(const char *s, int *code)
{
    if (!s)
        return NCD_EPARSE;
    while (isspace((unsigned char)*s))
        s++;
    if (*s == 'v' || *s == 'V')
        s++;
    int maj = 0, min = 0, pat = 0, n = 0;
    if (sscanf(s, "%d.%d%n", &maj, &min, &n) < 2)
        return NCD_EPARSE;
    const char *rest = s + n;
    if (*rest == '.') {
        int m = 0;
        if (sscanf(rest + 1, "%d%n", &pat, &m) < 1)
            return NCD_EPARSE;
        rest += 1 + m;
    }
    /* "-1" (package release) and "+cuda12.2" suffixes are fine. */
    if (*rest && *rest != '-' && *rest != '+' && !isspace((unsigned char)*rest))
        return NCD_EPARSE;
    if (maj < 1 || maj > 9 || min < 0 || min > 99 || pat < 0 || pat > 99)
        return NCD_EPARSE;
    *code = maj * 10000 + min * 100 + pat;
    return 0;
}

int ncd_nccl_version_from_code(int c)
{
    /* NCCL_VERSION_CODE was X*1000+Y*100+Z before 2.9 (NCCL nccl.h.in). */
    if (c > 0 && c < 10000)
        return (c / 1000) * 10000 + ((c % 1000) / 100) * 100 + c % 100;
    return c;
}

const char *ncd_nccl_version_str(int code, char *buf, size_t len)
{
    snprintf(buf, len, "%d.%d.%d", code / 10000, (code / 100) % 100,
             code % 100);
    return buf;
}

int ncd_nccl_version_in_buf(const char *buf, size_t len, int *code,
                            char *cuda, size_t cudasz)
{
    static const char tag[] = "NCCL version ";
    const size_t tl = sizeof tag - 1;
    const char *p = buf, *end = buf + len;
    while (p < end) {
        const char *h = memmem(p, (size_t)(end - p), tag, tl);
        if (!h)
            return 0;
        const char *v = h + tl;
        p = v;
        if (v >= end || !isdigit((unsigned char)*v))
            continue;
        char tmp[64];
        size_t k = 0;
        while (v + k < end && k < sizeof tmp - 1 && v[k] &&
               !isspace((unsigned char)v[k])) {
            tmp[k] = v[k];
            k++;
        }
        tmp[k] = '\0';
        char *plus = strstr(tmp, "+cuda");
        if (cudasz)
            cuda[0] = '\0';
        if (plus) {
            snprintf(cuda, cudasz, "%s", plus + 5);
            *plus = '\0';
        }
        if (ncd_nccl_version_parse(tmp, code) == 0)
            return 1;
    }
    return 0;
}
