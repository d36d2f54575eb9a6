/* SPDX-License-Identifier: MIT */
/*
 * Line normaliser and NCCL header parser.
 *
 * Formats (NCCL src/debug.cc, 2.8 .. 2.30.7; reference B8):
 *   INFO  <host>:<pid>:<tid> [<dev>] NCCL INFO <msg>
 *   WARN  [<ts>] <host>:<pid>:<tid> [<dev>] <file>:<line> (<func>) NCCL WARN <msg>
 *   TRACE <host>:<pid>:<tid> [<dev>] <ms> <func>:<line> NCCL TRACE <msg>
 *   CALL  <host>:<pid>:<tid> NCCL CALL <msg>
 *   bare  NCCL version 2.19.3+cuda12.3
 * plus very old "<host>:<pid>:<tid> [<dev>] INFO <msg>" (no "NCCL").  The
 * header is searched anywhere because launchers prepend their own tags.
 */
#define _GNU_SOURCE
#include "explain/internal.h"

#include <string.h>

#include "ncd/error.h"

const char *ncd_log_level_name(enum ncd_log_level lvl)
{
    static const char *const n[] = {"none", "version", "info", "warn",
                                    "trace", "abort", "call"};
    if ((int)lvl < 0 || lvl > NCD_LOG_CALL)
        return "?";
    return n[lvl];
}

static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* Length of the valid UTF-8 sequence at s (RFC 3629), 0 when invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len;
    unsigned char lo = 0x80, hi = 0xbf;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        len = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        if (c == 0xe0)
            lo = 0xa0;
        if (c == 0xed)
            hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        if (c == 0xf0)
            lo = 0x90;
        if (c == 0xf4)
            hi = 0x8f;
    } else
        return 0;
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return len;
}

void ncd__sanitize(char *s, size_t n)
{
    unsigned char *u = (unsigned char *)s;
    for (size_t i = 0; i < n;) {
        if (u[i] < 0x80) {
            if ((u[i] < 0x20 && u[i] != '\t') || u[i] == 0x7f)
                u[i] = '?';
            i++;
            continue;
        }
        size_t l = utf8_len(u + i, n - i);
        if (!l) {
            u[i++] = '?';
            continue;
        }
        i += l;
    }
}

static int parse_uint(const char *s, size_t n, long *out)
{
    if (n == 0 || n > 12)
        return -1;
    long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (!is_digit(s[i]))
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

/* Days since 1970-01-01 of a civil date (H. Hinnant's algorithm). */
static long days_from_civil(long y, long m, long d)
{
    y -= m <= 2;
    long era = (y >= 0 ? y : y - 399) / 400;
    long yoe = y - era * 400;
    long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/*
 * "YYYY-MM-DD[T ]HH:MM:SS[.frac][Z|+hh[:]mm]" at s.  Returns the bytes used
 * (0 when it is not a time stamp) and the time in *ts.
 */
size_t ncd__parse_timestamp(const char *s, size_t n, double *ts)
{
    long y, mo, d, h, mi, se;
    if (n < 19 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != ' ') ||
        s[13] != ':' || s[16] != ':')
        return 0;
    if (parse_uint(s, 4, &y) || parse_uint(s + 5, 2, &mo) ||
        parse_uint(s + 8, 2, &d) || parse_uint(s + 11, 2, &h) ||
        parse_uint(s + 14, 2, &mi) || parse_uint(s + 17, 2, &se))
        return 0;
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60)
        return 0;
    size_t i = 19;
    double frac = 0, scale = 0.1;
    if (i < n && (s[i] == '.' || s[i] == ',')) {
        i++;
        while (i < n && is_digit(s[i])) {
            frac += (s[i] - '0') * scale;
            scale /= 10;
            i++;
        }
    }
    if (i < n && s[i] == 'Z')
        i++;
    else if (i + 2 < n && (s[i] == '+' || s[i] == '-') && is_digit(s[i + 1]) &&
             is_digit(s[i + 2])) {
        i += 3;
        if (i < n && s[i] == ':')
            i++;
        if (i + 1 < n && is_digit(s[i]) && is_digit(s[i + 1]))
            i += 2;
    }
    *ts = (double)days_from_civil(y, mo, d) * 86400.0 + h * 3600.0 +
          mi * 60.0 + se + frac;
    return i;
}

/* Copies the raw line into `out`, dropping ANSI escapes, CRs and NULs. */
static size_t clean_copy(const char *in, size_t len, char *out)
{
    /* fast path: most lines have nothing to clean */
    if (!memchr(in, 0x1b, len) && !memchr(in, '\r', len)) {
        /* memmove: gcc inlines memcpy here as `rep movsq`, which is slow
         * for the ~100-200 byte lines of NCCL logs */
        memmove(out, in, len);
        out[len] = '\0';
        /* NUL bytes would cut the C string short */
        for (char *z = memchr(out, 0, len); z; z = memchr(z, 0, (size_t)(out + len - z)))
            *z++ = ' ';
        return len;
    }
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)in[i];
        if (c == 0x1b) {
            /* CSI: ESC [ params final(0x40-0x7e); OSC: ESC ] ... BEL/ST;
             * other: ESC + one byte. */
            if (i + 1 < len && in[i + 1] == '[') {
                i += 2;
                while (i < len && !((unsigned char)in[i] >= 0x40 &&
                                    (unsigned char)in[i] <= 0x7e))
                    i++;
            } else if (i + 1 < len && in[i + 1] == ']') {
                i += 2;
                while (i < len && in[i] != '\a' &&
                       !(in[i] == 0x1b && i + 1 < len && in[i + 1] == '\\'))
                    i++;
                if (i < len && in[i] == 0x1b)
                    i++;
            } else {
                i++;
            }
            continue;
        }
        if (c == '\r')
            continue;
        out[o++] = c == 0 ? ' ' : (char)c;
    }
    out[o] = '\0';
    return o;
}

/*
 * One launcher prefix at the start of s (after optional blanks).  Returns the
 * bytes to drop, 0 when there is none; sets *rank / *ts when it carries one.
 */
static size_t strip_one(const char *s, size_t n, int *rank, double *ts)
{
    size_t i = 0;
    while (i < n && (s[i] == ' ' || s[i] == '\t'))
        i++;
    if (i >= n)
        return 0;
    const char *p = s + i;
    size_t m = n - i;
    long v;

    if (p[0] == '[') {
        /* [1,0]<stdout>:  (Open MPI --tag-output) */
        size_t j = 1;
        while (j < m && is_digit(p[j]))
            j++;
        if (j > 1 && j < m && p[j] == ',') {
            size_t k = j + 1;
            while (k < m && is_digit(p[k]))
                k++;
            if (k > j + 1 && k + 1 < m && p[k] == ']' && p[k + 1] == '<') {
                const char *gt = memchr(p + k, '>', m - k);
                if (gt && (size_t)(gt - p) + 1 < m && gt[1] == ':') {
                    if (parse_uint(p + j + 1, k - j - 1, &v) == 0)
                        *rank = (int)v;
                    return i + (size_t)(gt - p) + 2;
                }
            }
        }
        /* [YYYY-MM-DD HH:MM:SS(.f)] */
        size_t used = ncd__parse_timestamp(p + 1, m - 1, ts);
        if (used && 1 + used < m && p[1 + used] == ']') {
            size_t k = used + 2;
            while (k < m && p[k] == ' ')
                k++;
            return i + k;
        }
        /* "[3] " rank label (DeepSpeed/pdsh-style launchers) */
        {
            size_t k = 1;
            while (k < m && k < 8 && is_digit(p[k]))
                k++;
            if (k > 1 && k + 1 < m && p[k] == ']' && p[k + 1] == ' ' &&
                parse_uint(p + 1, k - 1, &v) == 0) {
                *rank = (int)v;
                return i + k + 2;
            }
        }
        /* [rank3]:  [default0]:  [trainer3]:  [trainer0|0]: */
        size_t k = 1;
        while (k < m && k < 40 &&
               ((p[k] >= 'a' && p[k] <= 'z') || (p[k] >= 'A' && p[k] <= 'Z') ||
                p[k] == '_' || p[k] == '-'))
            k++;
        size_t d0 = k;
        while (k < m && is_digit(p[k]))
            k++;
        size_t d1 = k;
        if (k < m && p[k] == '|') {
            k++;
            d0 = k;
            while (k < m && is_digit(p[k]))
                k++;
            d1 = k;
        }
        if (d1 > d0 && k + 1 < m && p[k] == ']' && p[k + 1] == ':') {
            if (parse_uint(p + d0, d1 - d0, &v) == 0)
                *rank = (int)v;
            k += 2;
            while (k < m && p[k] == ' ')
                k++;
            return i + k;
        }
        return 0;
    }
    /* ISO time stamp */
    size_t used = ncd__parse_timestamp(p, m, ts);
    if (used) {
        size_t k = used;
        if (k < m && (p[k] == ':' || p[k] == ']'))
            k++;
        while (k < m && p[k] == ' ')
            k++;
        return i + k;
    }
    /* rank3:  / rank 3:  (pdsh-like labels) */
    if (m > 5 && (p[0] == 'r' || p[0] == 'R') && p[1] == 'a' && p[2] == 'n' &&
        p[3] == 'k') {
        size_t k = 4;
        if (k < m && p[k] == ' ')
            k++;
        size_t d0 = k;
        while (k < m && is_digit(p[k]))
            k++;
        if (k > d0 && k < m && p[k] == ':') {
            if (parse_uint(p + d0, k - d0, &v) == 0)
                *rank = (int)v;
            k++;
            while (k < m && p[k] == ' ')
                k++;
            return i + k;
        }
    }
    /* srun --label: "3: " */
    if (is_digit(p[0])) {
        size_t k = 0;
        while (k < m && is_digit(p[k]))
            k++;
        if (k <= 6 && k + 1 < m && p[k] == ':' && p[k + 1] == ' ') {
            if (parse_uint(p, k, &v) == 0)
                *rank = (int)v;
            k += 2;
            return i + k;
        }
    }
    return 0;
}

/* A "host: " label in front of something else: lower-case host-like word
 * containing a digit ("node1", "gpu-03.cluster"). */
static size_t host_label(const char *s, size_t n)
{
    size_t k = 0;
    int digit = 0;
    while (k < n && k < 64 &&
           ((s[k] >= 'a' && s[k] <= 'z') || is_digit(s[k]) || s[k] == '-' ||
            s[k] == '.' || s[k] == '_')) {
        digit |= is_digit(s[k]);
        k++;
    }
    if (k == 0 || !digit || k + 1 >= n || s[k] != ':' || s[k + 1] != ' ')
        return 0;
    return k;
}

static const struct {
    const char *word;
    enum ncd_log_level lvl;
} levels[] = {
    {"INFO", NCD_LOG_INFO},   {"WARN", NCD_LOG_WARN}, {"TRACE", NCD_LOG_TRACE},
    {"ABORT", NCD_LOG_ABORT}, {"CALL", NCD_LOG_CALL},
};

/* Level word at s ("INFO " or "INFO" at end). */
static enum ncd_log_level level_at(const char *s, const char *end,
                                   size_t *wl)
{
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++) {
        size_t l = strlen(levels[i].word);
        if ((size_t)(end - s) >= l && memcmp(s, levels[i].word, l) == 0 &&
            (s + l == end || s[l] == ' ')) {
            *wl = l;
            return levels[i].lvl;
        }
    }
    return NCD_LOG_NONE;
}

/* The token ending just before `end` (skipping one blank). */
static const char *prev_token(const char *start, const char *end)
{
    const char *p = end;
    while (p > start && p[-1] != ' ')
        p--;
    return p;
}

/*
 * Parses the part of the header before the level word: [ts] host:pid:tid
 * [dev] [file:line] [(func)].  `hdr_end` points at the blank before the
 * level word (or "NCCL").  `old` = the very old form without "NCCL", where
 * the host:pid:tid [dev] part is mandatory.
 */
static int parse_header_back(const char *text, const char *hdr_end, int old,
                             enum ncd_log_level lvl, struct ncd_log_line *o)
{
    const char *e = hdr_end; /* points at ' ' */
    const char *t;

    /* (func) */
    t = prev_token(text, e);
    if (t < e && t[0] == '(' && e[-1] == ')' && t > text) {
        e = t - 1;
        t = prev_token(text, e);
    }
    /* file:line or func:line */
    if (t < e && is_digit(e[-1])) {
        const char *c = e;
        while (c > t && is_digit(c[-1]))
            c--;
        if (c > t + 1 && c[-1] == ':' && memchr(t, ':', (size_t)(c - 1 - t)) == NULL &&
            t[0] != '[') {
            long ln;
            if (!old && parse_uint(c, (size_t)(e - c), &ln) == 0) {
                o->src = t;
                o->src_len = (size_t)(c - 1 - t);
                o->src_line = (int)ln;
            }
            if (t == text) {
                return old ? -1 : 0;
            }
            e = t - 1;
            t = prev_token(text, e);
            /* TRACE: "<ms>" before func:line */
            if (lvl == NCD_LOG_TRACE && t < e && (is_digit(t[0]))) {
                if (t == text)
                    return 0;
                e = t - 1;
                t = prev_token(text, e);
            }
        }
    }
    /* [dev] */
    if (t < e && t[0] == '[' && e[-1] == ']' && e - t >= 3) {
        long dv;
        if (parse_uint(t + 1, (size_t)(e - t - 2), &dv) == 0)
            o->dev = (int)dv;
        else if (!(e - t > 3 && t[1] == '-')) /* "[-1]" */
            return old ? -1 : 0;
        if (t == text)
            return old ? -1 : 0;
        e = t - 1;
        t = prev_token(text, e);
    } else if (lvl != NCD_LOG_CALL) {
        return old ? -1 : 0;
    }
    /* host:pid:tid (possibly glued to a tag: "[trainer3]:node1:12:34") */
    const char *c = e;
    while (c > t && is_digit(c[-1]))
        c--;
    if (c == e || c <= t || c[-1] != ':')
        return old ? -1 : 0;
    const char *tid = c;
    c--;
    const char *pe = c;
    while (c > t && is_digit(c[-1]))
        c--;
    if (c == pe || c <= t || c[-1] != ':')
        return old ? -1 : 0;
    const char *pid = c;
    c--;
    const char *he = c;
    while (c > t && c[-1] != ':' && c[-1] != ']')
        c--;
    if (c == he)
        return old ? -1 : 0;
    long v;
    if (parse_uint(pid, (size_t)(pe - pid), &v) == 0)
        o->pid = v;
    if (parse_uint(tid, (size_t)(e - tid), &v) == 0)
        o->tid = v;
    o->host = c;
    o->host_len = (size_t)(he - c);
    /* "[YYYY-MM-DD HH:MM:SS] " just before */
    if (t > text + 2 && t[-1] == ' ' && t[-2] == ']') {
        const char *b = t - 2;
        const char *ob = b;
        while (ob > text && ob[-1] != '[')
            ob--;
        if (ob > text) {
            double ts;
            size_t used = ncd__parse_timestamp(ob, (size_t)(b - ob), &ts);
            if (used && used <= (size_t)(b - ob))
                o->ts = ts;
        }
    }
    return 1;
}

int ncd_log_parse(const char *line, size_t len, char *scratch,
                  size_t scratch_sz, struct ncd_log_line *o)
{
    if (len > NCD_LOG_MAX_LINE)
        len = NCD_LOG_MAX_LINE;
    /* field by field: a memset here compiles to `rep stos` */
    o->text = o->msg = o->host = o->src = NULL;
    o->text_len = o->msg_len = o->host_len = o->src_len = 0;
    o->level = NCD_LOG_NONE;
    o->src_line = 0;
    o->pid = o->tid = -1;
    o->dev = -1;
    o->rank = -1;
    o->ts = -1;
    if (scratch_sz < len + 1)
        return NCD_EINVAL;
    size_t n = clean_copy(line, len, scratch);
    /* trailing blanks carry nothing */
    while (n > 0 && (scratch[n - 1] == ' ' || scratch[n - 1] == '\t'))
        scratch[--n] = '\0';

    char *text = scratch;
    for (int iter = 0; iter < 8; iter++) {
        size_t k = strip_one(text, n, &o->rank, &o->ts);
        if (!k) {
            /* "host: " in front of another prefix or a time stamp */
            size_t h = host_label(text, n);
            if (h) {
                int r = -1;
                double ts = -1;
                size_t k2 = strip_one(text + h + 2, n - h - 2, &r, &ts);
                if (k2) {
                    o->host = text;
                    o->host_len = h;
                    if (r >= 0)
                        o->rank = r;
                    if (ts >= 0)
                        o->ts = ts;
                    k = h + 2 + k2;
                }
            }
        }
        if (!k)
            break;
        text += k;
        n -= k;
    }
    o->text = text;
    o->text_len = n;
    o->msg = text;
    o->msg_len = n;
    const char *end = text + n;

    /* NCCL header: search "NCCL <LEVEL>" anywhere */
    const char *p = text;
    while (p < end) {
        /* 'N' is rare in NCCL lines before the header: memchr is faster
         * than memmem here */
        const char *hit = memchr(p, 'N', (size_t)(end - p));
        if (!hit || end - hit < 5)
            break;
        if (memcmp(hit, "NCCL ", 5) != 0) {
            p = hit + 1;
            continue;
        }
        size_t wl;
        enum ncd_log_level lvl = level_at(hit + 5, end, &wl);
        if (lvl != NCD_LOG_NONE) {
            const char *save_host = o->host; /* a launcher "host: " label */
            size_t save_hl = o->host_len;
            o->level = lvl;
            if (hit > text && hit[-1] == ' ')
                parse_header_back(text, hit - 1, 0, lvl, o);
            if (!o->host && save_host) {
                o->host = save_host;
                o->host_len = save_hl;
            }
            const char *m = hit + 5 + wl;
            if (m < end && *m == ' ')
                m++;
            o->msg = m;
            o->msg_len = (size_t)(end - m);
            return 0;
        }
        /* the bare "NCCL version" line starts the line; PyTorch's
         * "..., NCCL version 2.18.1" inside an error message is not one */
        if (hit == text) {
            if ((size_t)(end - hit) > 13 &&
                memcmp(hit, "NCCL version ", 13) == 0) {
                o->level = NCD_LOG_VERSION;
                o->msg = hit;
                o->msg_len = (size_t)(end - hit);
                return 0;
            }
        }
        p = hit + 5;
    }
    /* Very old form: "host:pid:tid [d] INFO msg" */
    p = text;
    while (p < end) {
        const char *hit = memmem(p, (size_t)(end - p), "] ", 2);
        if (!hit)
            break;
        size_t wl;
        enum ncd_log_level lvl = level_at(hit + 2, end, &wl);
        if (lvl == NCD_LOG_INFO || lvl == NCD_LOG_WARN) {
            struct ncd_log_line tmp = *o;
            tmp.level = lvl;
            if (parse_header_back(text, hit + 1, 1, lvl, &tmp) == 1) {
                *o = tmp;
                const char *m = hit + 2 + wl;
                if (m < end && *m == ' ')
                    m++;
                o->msg = m;
                o->msg_len = (size_t)(end - m);
                return 0;
            }
        }
        p = hit + 2;
    }
    return 0;
}
