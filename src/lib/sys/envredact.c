/* SPDX-License-Identifier: MIT */
/*
 * How nccl-doctor records an environment variable's value wherever it
 * writes one down (gather's .ncd/env, perf's -J document): the one
 * redaction rule, include/ncd/sysops.h ncd_env_redact().
 */
#define _GNU_SOURCE
#include <string.h>

#include "ncd/sysops.h"
#include "ncd/strbuf.h"

#define REDACTED "<redacted>"

/* A character that ends a token in a value ("a,b", "x y", "k=v;..."). */
static int sep(char c)
{
    return c == ' ' || c == '\t' || c == ',' || c == ';' || c == '=' ||
           c == '"' || c == '\'' || c == '\n' || c == '\r';
}

void ncd_env_redact(const char *name, const char *value,
                    struct ncd_strbuf *out)
{
    if (!value)
        return;
    if (name && ncd_env_is_secret(name)) {
        ncd_sb_puts(out, REDACTED);
        return;
    }
    /* Credentials in URLs and host specs: "scheme://user:pass@host",
     * "scheme://token@host", "user:pass@host".  The user information (all
     * of it: a token is often the "user") becomes <redacted>. */
    const char *p = value;
    while (*p) {
        const char *at = strchr(p, '@');
        if (!at) {
            ncd_sb_puts(out, p);
            return;
        }
        /* start of the token holding this '@' */
        const char *start = at;
        while (start > p && !sep(start[-1]))
            start--;
        const char *scheme = NULL;
        for (const char *s = start; s + 3 <= at; s++)
            if (!strncmp(s, "://", 3)) {
                scheme = s + 3;
                break;
            }
        const char *user = scheme ? scheme : start;
        /* the user information may not hold '/' (else '@' is in a path) */
        int in_path = memchr(user, '/', (size_t)(at - user)) != NULL;
        int creds = !in_path && at > user &&
                    (scheme || memchr(user, ':', (size_t)(at - user)));
        if (creds) {
            ncd_sb_add(out, p, (size_t)(user - p));
            ncd_sb_puts(out, REDACTED);
        } else {
            ncd_sb_add(out, p, (size_t)(at - p));
        }
        ncd_sb_putc(out, '@');
        p = at + 1;
    }
}
