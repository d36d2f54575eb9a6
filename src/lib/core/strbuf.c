/* SPDX-License-Identifier: MIT */
#include "ncd/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int sb_grow(struct ncd_strbuf *sb, size_t extra)
{
    if (sb->oom)
        return -1;
    if (sb->len + extra + 1 <= sb->cap)
        return 0;
    size_t want = sb->cap ? sb->cap : 64;
    while (want < sb->len + extra + 1) {
        if (want > ((size_t)-1) / 2) {
            sb->oom = 1;
            return -1;
        }
        want *= 2;
    }
    char *nb = realloc(sb->buf, want);
    if (!nb) {
        sb->oom = 1;
        return -1;
    }
    sb->buf = nb;
    sb->cap = want;
    return 0;
}

void ncd_sb_add(struct ncd_strbuf *sb, const void *data, size_t n)
{
    if (sb_grow(sb, n) < 0)
        return;
    if (n)
        memcpy(sb->buf + sb->len, data, n);
    sb->len += n;
    sb->buf[sb->len] = '\0';
}

void ncd_sb_puts(struct ncd_strbuf *sb, const char *s)
{
    if (s)
        ncd_sb_add(sb, s, strlen(s));
}

void ncd_sb_putc(struct ncd_strbuf *sb, char c)
{
    ncd_sb_add(sb, &c, 1);
}

void ncd_sb_vprintf(struct ncd_strbuf *sb, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return;
    if ((size_t)n < sizeof small) {
        ncd_sb_add(sb, small, (size_t)n);
        return;
    }
    if (sb_grow(sb, (size_t)n) < 0)
        return;
    vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
    sb->len += (size_t)n;
}

void ncd_sb_printf(struct ncd_strbuf *sb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ncd_sb_vprintf(sb, fmt, ap);
    va_end(ap);
}

const char *ncd_sb_str(const struct ncd_strbuf *sb)
{
    return sb->buf ? sb->buf : "";
}

void ncd_sb_reset(struct ncd_strbuf *sb)
{
    sb->len = 0;
    if (sb->buf)
        sb->buf[0] = '\0';
}

char *ncd_sb_detach(struct ncd_strbuf *sb)
{
    char *s = sb->buf;
    if (!s)
        s = calloc(1, 1);
    sb->buf = NULL;
    sb->len = sb->cap = 0;
    sb->oom = 0;
    return s;
}

void ncd_sb_release(struct ncd_strbuf *sb)
{
    free(sb->buf);
    sb->buf = NULL;
    sb->len = sb->cap = 0;
    sb->oom = 0;
}

char *ncd_strdup_printf(const char *fmt, ...)
{
    struct ncd_strbuf sb = {0};
    va_list ap;
    va_start(ap, fmt);
    ncd_sb_vprintf(&sb, fmt, ap);
    va_end(ap);
    if (sb.oom) {
        ncd_sb_release(&sb);
        return NULL;
    }
    return ncd_sb_detach(&sb);
}

void ncd_utf8_sanitize(char *s)
{
    unsigned char *p = (unsigned char *)s;
    while (p && *p) {
        unsigned c = *p;
        int n = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2
                : (c & 0xf8) == 0xf0 ? 3 : -1;
        int ok = n >= 0;
        unsigned cp = n == 0 ? c : n == 1 ? c & 0x1f : n == 2 ? c & 0x0f : c & 0x07;
        for (int i = 1; ok && i <= n; i++) {
            if ((p[i] & 0xc0) != 0x80)
                ok = 0;
            else
                cp = (cp << 6) | (p[i] & 0x3f);
        }
        if (ok && ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) ||
                   (n == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
                   (cp >= 0xd800 && cp <= 0xdfff)))
            ok = 0;
        /* Terminal control characters (ESC sequences in a replayed
         * capture) are neutralised too; tab and newline are kept. */
        if (!ok || (n == 0 && ((c < 0x20 && c != '\n' && c != '\t') ||
                               c == 0x7f))) {
            *p++ = '?';
            continue;
        }
        p += n + 1;
    }
}

int ncd_next_line(const char *buf, size_t len, size_t *pos, const char **s,
                  size_t *l)
{
    if (*pos >= len)
        return 0;
    *s = buf + *pos;
    const char *nl = memchr(*s, '\n', len - *pos);
    *l = nl ? (size_t)(nl - *s) : len - *pos;
    *pos += *l + 1;
    return 1;
}

int ncd_list_count(const char *s)
{
    if (!s || !*s)
        return 0;
    int n = 1;
    for (; *s; s++)
        n += *s == ',';
    return n;
}
