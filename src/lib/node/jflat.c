/* SPDX-License-Identifier: MIT */
/* Flat JSON reader (see jflat.h).  RFC 8259 syntax; numbers with a
 * fraction or exponent are JF_REAL (value not kept). */
#include "jflat.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct pstate {
    struct jf *d;
    const char *p, *end;
    int oom;
};

static void ws(struct pstate *s)
{
    while (s->p < s->end &&
           (*s->p == ' ' || *s->p == '\n' || *s->p == '\t' || *s->p == '\r'))
        s->p++;
}

static unsigned node(struct pstate *s, unsigned char type, const char *key)
{
    struct jf *d = s->d;
    if (d->count == d->cap) {
        size_t nc = d->cap * 2;
        struct jf_node *nn = realloc(d->n, nc * sizeof *nn);
        if (!nn) {
            s->oom = 1;
            return 0;
        }
        d->n = nn;
        d->cap = nc;
    }
    unsigned i = (unsigned)d->count++;
    memset(&d->n[i], 0, sizeof d->n[i]);
    d->n[i].type = type;
    d->n[i].key = key;
    return i;
}

static int hex4(const char *p, unsigned *v)
{
    *v = 0;
    for (int k = 0; k < 4; k++) {
        char c = p[k];
        unsigned x = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
                     : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                     : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
                                            : 16u;
        if (x > 15)
            return -1;
        *v = *v << 4 | x;
    }
    return 0;
}

static void put_utf8(char **o, unsigned c)
{
    char *q = *o;
    if (c < 0x80) {
        *q++ = (char)c;
    } else if (c < 0x800) {
        *q++ = (char)(0xc0 | c >> 6);
        *q++ = (char)(0x80 | (c & 0x3f));
    } else if (c < 0x10000) {
        *q++ = (char)(0xe0 | c >> 12);
        *q++ = (char)(0x80 | (c >> 6 & 0x3f));
        *q++ = (char)(0x80 | (c & 0x3f));
    } else {
        *q++ = (char)(0xf0 | c >> 18);
        *q++ = (char)(0x80 | (c >> 12 & 0x3f));
        *q++ = (char)(0x80 | (c >> 6 & 0x3f));
        *q++ = (char)(0x80 | (c & 0x3f));
    }
    *o = q;
}

/* A string at s->p (on the quote) into the arena; NULL when malformed.
 * The arena holds the input's length: unescaped text plus its NUL never
 * exceeds the quoted text. */
static const char *string(struct pstate *s)
{
    char *out = s->d->arena + s->d->used, *q = out;
    s->p++;
    while (s->p < s->end && *s->p != '"') {
        unsigned char c = (unsigned char)*s->p;
        if (c < 0x20)
            return NULL;
        if (c != '\\') {
            *q++ = (char)c;
            s->p++;
            continue;
        }
        if (s->end - s->p < 2)
            return NULL;
        char e = s->p[1];
        s->p += 2;
        switch (e) {
        case '"': *q++ = '"'; break;
        case '\\': *q++ = '\\'; break;
        case '/': *q++ = '/'; break;
        case 'b': *q++ = '\b'; break;
        case 'f': *q++ = '\f'; break;
        case 'n': *q++ = '\n'; break;
        case 'r': *q++ = '\r'; break;
        case 't': *q++ = '\t'; break;
        case 'u': {
            unsigned v, lo;
            if (s->end - s->p < 4 || hex4(s->p, &v))
                return NULL;
            s->p += 4;
            if (v >= 0xd800 && v < 0xdc00 && s->end - s->p >= 6 &&
                s->p[0] == '\\' && s->p[1] == 'u' && !hex4(s->p + 2, &lo) &&
                lo >= 0xdc00 && lo < 0xe000) {
                v = 0x10000 + ((v - 0xd800) << 10) + (lo - 0xdc00);
                s->p += 6;
            } else if (v >= 0xd800 && v < 0xe000) {
                v = '?'; /* a lone surrogate */
            }
            if (v == 0)
                v = '?'; /* strings stay NUL-terminated */
            put_utf8(&q, v);
            break;
        }
        default: return NULL;
        }
    }
    if (s->p >= s->end)
        return NULL;
    s->p++;
    *q++ = '\0';
    s->d->used += (size_t)(q - out);
    return out;
}

static int value(struct pstate *s, const char *key, int depth)
{
    if (depth > 64)
        return -1;
    ws(s);
    if (s->p >= s->end)
        return -1;
    char c = *s->p;
    unsigned i;
    if (c == '{' || c == '[') {
        int obj = c == '{';
        char close = obj ? '}' : ']';
        i = node(s, obj ? JF_OBJ : JF_ARR, key);
        if (!i)
            return -2;
        s->p++;
        ws(s);
        if (s->p < s->end && *s->p == close) {
            s->p++;
        } else {
            for (;;) {
                const char *k = NULL;
                ws(s);
                if (obj) {
                    if (s->p >= s->end || *s->p != '"' || !(k = string(s)))
                        return -1;
                    ws(s);
                    if (s->p >= s->end || *s->p != ':')
                        return -1;
                    s->p++;
                }
                int rc = value(s, k, depth + 1);
                if (rc)
                    return rc;
                ws(s);
                if (s->p < s->end && *s->p == ',') {
                    s->p++;
                    continue;
                }
                if (s->p < s->end && *s->p == close) {
                    s->p++;
                    break;
                }
                return -1;
            }
        }
    } else if (c == '"') {
        if (!(i = node(s, JF_STR, key)))
            return -2;
        const char *str = string(s);
        if (!str)
            return -1;
        s->d->n[i].s = str;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
        const char *q = s->p + (c == '-');
        if (q >= s->end || *q < '0' || *q > '9')
            return -1;
        long long v = 0;
        int over = 0;
        while (q < s->end && *q >= '0' && *q <= '9') {
            if (v > (INT64_MAX - 9) / 10)
                over = 1;
            else
                v = v * 10 + (*q - '0');
            q++;
        }
        int real = over;
        if (q < s->end && *q == '.') {
            real = 1;
            for (q++; q < s->end && *q >= '0' && *q <= '9'; q++)
                ;
        }
        if (q < s->end && (*q == 'e' || *q == 'E')) {
            real = 1;
            q++;
            if (q < s->end && (*q == '+' || *q == '-'))
                q++;
            for (; q < s->end && *q >= '0' && *q <= '9'; q++)
                ;
        }
        if (!(i = node(s, real ? JF_REAL : JF_INT, key)))
            return -2;
        s->d->n[i].i = c == '-' ? -v : v;
        s->p = q;
    } else {
        static const struct { const char *w; unsigned char t; long long v; } lit[] = {
            {"true", JF_BOOL, 1}, {"false", JF_BOOL, 0}, {"null", JF_NULL, 0}};
        size_t k = 0;
        for (; k < 3; k++) {
            size_t l = strlen(lit[k].w);
            if ((size_t)(s->end - s->p) >= l && !memcmp(s->p, lit[k].w, l))
                break;
        }
        if (k == 3)
            return -1;
        if (!(i = node(s, lit[k].t, key)))
            return -2;
        s->d->n[i].i = lit[k].v;
        s->p += strlen(lit[k].w);
    }
    s->d->n[i].next = (unsigned)s->d->count;
    return 0;
}

int ncd__jf_parse(struct jf *d, const char *buf, size_t len)
{
    memset(d, 0, sizeof *d);
    if (len > (size_t)UINT32_MAX / 2)
        return -1;
    d->cap = len / 8 + 16;
    d->n = malloc(d->cap * sizeof *d->n);
    d->arena = malloc(len + 1);
    if (!d->n || !d->arena) {
        ncd__jf_free(d);
        return -2;
    }
    memset(&d->n[0], 0, sizeof d->n[0]); /* node 0: none */
    d->count = 1;
    struct pstate s = {.d = d, .p = buf, .end = buf + len};
    int rc = value(&s, NULL, 0);
    if (rc == 0) {
        ws(&s);
        if (s.p != s.end)
            rc = -1;
    }
    if (s.oom)
        rc = -2;
    if (rc)
        ncd__jf_free(d);
    return rc;
}

void ncd__jf_free(struct jf *d)
{
    free(d->n);
    free(d->arena);
    memset(d, 0, sizeof *d);
}

unsigned ncd__jf_first(const struct jf *d, unsigned i)
{
    if (!i || (d->n[i].type != JF_ARR && d->n[i].type != JF_OBJ))
        return 0;
    return i + 1 < d->n[i].next ? i + 1 : 0;
}

unsigned ncd__jf_next(const struct jf *d, unsigned i, unsigned k)
{
    if (!k)
        return 0;
    unsigned nx = d->n[k].next;
    return nx < d->n[i].next ? nx : 0;
}

unsigned ncd__jf_get(const struct jf *d, unsigned i, const char *key)
{
    if (!i || d->n[i].type != JF_OBJ)
        return 0;
    for (unsigned k = ncd__jf_first(d, i); k; k = ncd__jf_next(d, i, k))
        if (d->n[k].key && strcmp(d->n[k].key, key) == 0)
            return k;
    return 0;
}

const char *ncd__jf_str(const struct jf *d, unsigned i)
{
    return i && d->n[i].type == JF_STR ? d->n[i].s : NULL;
}

size_t ncd__jf_size(const struct jf *d, unsigned i)
{
    size_t n = 0;
    for (unsigned k = ncd__jf_first(d, i); k; k = ncd__jf_next(d, i, k))
        n++;
    return n;
}
