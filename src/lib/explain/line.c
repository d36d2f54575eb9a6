/* SPDX-License-Identifier: MIT */
/*
 * Line normaliser and NCCL header parser.
 *
 * A raw line goes through four steps (1-3 in line_wrap.c):
 *  1. unwrap: a JSON-wrapped line (Docker json-file, Fluent Bit/Fluentd,
 *     journald, Google Cloud Logging, ECS) gives its message string;
 *  2. clean: ANSI escapes, CRs and NULs go;
 *  3. prefixes: the launcher / collector prefix shapes of `shapes[]` (a
 *     table, each with its source) are removed, keeping the rank and time
 *     stamp they carry;
 *  4. header: NCCL's header is read forwards at the start of what is left
 *     (the common case), else searched anywhere in the line (text that an
 *     unknown wrapper put in front), else the message is recognised by its
 *     own shape (`bare[]`: a header that a collector or a copy-paste cut).
 *
 * NCCL's header formats (src/include/debug.h, src/debug.cc):
 *   2.3 .. 2.30 INFO   <host>:<pid>:<tid> [<dev>] NCCL INFO <msg>
 *   2.3 .. 2.25 WARN   <host>:<pid>:<tid> [<dev>] <file>:<line> NCCL WARN <msg>
 *   2.26 ..     WARN   [<%F %T>] <host>:<pid>:<tid> [<dev>] <file>:<line> NCCL WARN <msg>
 *   2.30.7 ..   WARN   ... <file>:<line> (<func>) NCCL WARN <msg>
 *   2.3 ..      TRACE  <host>:<pid>:<tid> [<dev>] <ms> <func>:<line> NCCL TRACE <msg>
 *   2.3 ..      ABORT  <host>:<pid>:<tid> [<dev>] <file>:<line> NCCL ABORT
 *   2.4 ..      CALL   <host>:<pid>:<tid> NCCL CALL <msg>
 *   2.0 .. 2.2  INFO   <host>:<pid>:<tid> [<dev>] INFO <msg>        (binary
 *               WARN   <host>:<pid>:<tid> [<dev>] <file>:<line> WARN <msg>
 *               releases, as quoted in NVIDIA/nccl#111)
 *   1.x         WARN   WARN <file>:<line> <msg>    (src/core.h of v1.3.4:
 *               INFO   INFO <msg>                   printf, no host)
 *   all         bare   NCCL version 2.19.3+cuda12.3 (printf, rank 0)
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

int ncd__parse_uint(const char *s, size_t n, long *out)
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
    if (ncd__parse_uint(s, 4, &y) || ncd__parse_uint(s + 5, 2, &mo) ||
        ncd__parse_uint(s + 8, 2, &d) || ncd__parse_uint(s + 11, 2, &h) ||
        ncd__parse_uint(s + 14, 2, &mi) || ncd__parse_uint(s + 17, 2, &se))
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


/* ------------------------------------------------------------- headers */

/* Level word at s ("INFO " or "INFO" at end; NCCL src/include/debug.h). */
static enum ncd_log_level level_at(const char *s, const char *end,
                                   size_t *wl)
{
    const char *w;
    enum ncd_log_level lvl;
    if (s >= end)
        return NCD_LOG_NONE;
    switch (s[0]) {
    case 'I': w = "INFO"; lvl = NCD_LOG_INFO; break;
    case 'W': w = "WARN"; lvl = NCD_LOG_WARN; break;
    case 'T': w = "TRACE"; lvl = NCD_LOG_TRACE; break;
    case 'A': w = "ABORT"; lvl = NCD_LOG_ABORT; break;
    case 'C': w = "CALL"; lvl = NCD_LOG_CALL; break;
    default: return NCD_LOG_NONE;
    }
    size_t l = w[4] ? 5 : 4;
    uint32_t a, b;
    if ((size_t)(end - s) < l)
        return NCD_LOG_NONE;
    memcpy(&a, s, 4);
    memcpy(&b, w, 4);
    if (a != b || (l == 5 && s[4] != w[4]) || (s + l != end && s[l] != ' '))
        return NCD_LOG_NONE;
    *wl = l;
    return lvl;
}

/* Sets the message: after the level word at s[at] (wl bytes) and a blank. */
static void set_msg(struct ncd_log_line *o, const char *s, size_t n, size_t at)
{
    if (at < n && s[at] == ' ')
        at++;
    if (at > n)
        at = n;
    o->msg = s + at;
    o->msg_len = n - at;
}

/* Bytes that end NCCL's host name in its header (':' and blanks; '[' and
 * ']' never occur in a host name and mark a launcher tag instead). */
static const unsigned char host_end[256] = {
    [':'] = 1, [' '] = 1, ['\t'] = 1, ['['] = 1, [']'] = 1, ['\0'] = 1,
};

/* Decimal digits at s[*i] (at most 12, not followed by another digit)
 * into *v and *i past them; 0 when there are none.  Up to 7 digits (pids,
 * tids) are read 8 bytes at a time (SWAR: a digit is a byte 0x30..0x39). */
static inline __attribute__((always_inline)) int
scan_uint(const char *s, size_t n, size_t *i, long *v)
{
    size_t k0 = *i, k = k0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (n - k0 >= 8) {
        uint64_t w;
        memcpy(&w, s + k0, 8);
        /* a zero byte where s has a digit; the +6 cannot carry out of a
         * digit byte, so the bytes up to the first non-digit are right */
        uint64_t m = ((w & 0xF0F0F0F0F0F0F0F0ull) ^ 0x3030303030303030ull) |
                     (((w + 0x0606060606060606ull) & 0xF0F0F0F0F0F0F0F0ull) ^
                      0x3030303030303030ull);
        if (m) { /* fewer than 8 digits (x86-64 and arm64 are little-endian) */
            unsigned len = (unsigned)__builtin_ctzll(m) >> 3;
            if (len == 0)
                return 0;
            uint64_t x = (w - 0x3030303030303030ull) << (8 * (8 - len));
            x = (x * 10 + (x >> 8)) & 0x00FF00FF00FF00FFull;
            x = (x * 100 + (x >> 16)) & 0x0000FFFF0000FFFFull;
            x = (x * 10000 + (x >> 32)) & 0xFFFFFFFFull;
            *v = (long)x;
            *i = k0 + len;
            return 1;
        }
    }
#endif
    size_t lim = n - k0 > 12 ? k0 + 12 : n;
    long x = 0;
    unsigned d;
    while (k < lim && (d = (unsigned)(unsigned char)s[k] - '0') < 10) {
        x = x * 10 + d;
        k++;
    }
    if (k == k0 || (k < n && is_digit(s[k])))
        return 0;
    *v = x;
    *i = k;
    return 1;
}

/* "NCCL " at s (n bytes left). */
static int at_nccl(const char *s, size_t n)
{
    uint32_t w;
    if (n < 5)
        return 0;
    memcpy(&w, s, 4);
    uint32_t lit;
    memcpy(&lit, "NCCL", 4);
    return w == lit && s[4] == ' ';
}

/*
 * NCCL's header read forwards at s[0] (see the table at the top).  Fills
 * o and returns 1; *skip is the length of a leading "[<time>] " stamp,
 * which is not part of the normalised text.  0 when s does not start so.
 */
static int header_fwd(const char *s, size_t n, struct ncd_log_line *o,
                      size_t *skip)
{
    size_t i = 0;
    double ts = -1;
    if (n < 10)
        return 0;
    if (s[0] == '[') {
        size_t u = ncd__parse_timestamp(s + 1, n - 1, &ts);
        if (!u || u + 3 > n || s[1 + u] != ']' || s[2 + u] != ' ')
            return 0;
        i = u + 3;
    }
    size_t h0 = i, hmax = n - i > 256 ? i + 256 : n;
    while (i < hmax && !host_end[(unsigned char)s[i]])
        i++;
    if (i == h0 || i >= n || s[i] != ':')
        return 0;
    size_t h1 = i++;
    long pid, tid;
    if (!scan_uint(s, n, &i, &pid) || i >= n || s[i] != ':')
        return 0;
    i++;
    if (!scan_uint(s, n, &i, &tid) || i >= n || s[i] != ' ')
        return 0;
    i++;
    const char *end = s + n;
    enum ncd_log_level lvl = NCD_LOG_NONE;
    size_t wl = 0, src0 = 0, src1 = 0;
    long ln = 0;
    long dev = -1;
    if (s[i] == 'N' && n - i >= 9 && memcmp(s + i, "NCCL CALL", 9) == 0) {
        lvl = NCD_LOG_CALL;
        i += 5;
        wl = 4;
    } else {
        /* [dev] */
        if (s[i] != '[')
            return 0;
        i++;
        if (i < n && s[i] == '-') { /* "[-1]" */
            long neg;
            i++;
            if (!scan_uint(s, n, &i, &neg))
                return 0;
        } else if (!scan_uint(s, n, &i, &dev)) {
            return 0;
        }
        if (i + 1 >= n || s[i] != ']' || s[i + 1] != ' ' || dev > 0x7fffffff)
            return 0;
        i += 2;
        if (at_nccl(s + i, n - i)) {
            lvl = level_at(s + i + 5, end, &wl);
            i += 5;
        } else if ((lvl = level_at(s + i, end, &wl)) != NCD_LOG_INFO &&
                   lvl != NCD_LOG_WARN) {
            /* <file>:<line> [(<func>)], or TRACE's <ms> <func>:<line> */
            lvl = NCD_LOG_NONE;
            size_t a = i;
            while (i < n && s[i] != ' ')
                i++;
            size_t b = i;
            int ms = b > a;
            for (size_t k = a; k < b; k++)
                ms &= is_digit(s[k]) || s[k] == '.';
            if (ms) {
                if (i >= n)
                    return 0;
                a = ++i;
                while (i < n && s[i] != ' ')
                    i++;
                b = i;
            }
            size_t c = b;
            while (c > a && is_digit(s[c - 1]))
                c--;
            if (c == b || c < a + 2 || s[c - 1] != ':' ||
                memchr(s + a, ':', c - 1 - a) || s[a] == '[' ||
                ncd__parse_uint(s + c, b - c, &ln) < 0 || ln > 0x7fffffff || i >= n)
                return 0;
            src0 = a;
            src1 = c - 1;
            i++;
            if (i < n && s[i] == '(') { /* (func), 2.30.7+ */
                const char *rp = memchr(s + i, ')', n - i);
                if (!rp || rp + 1 >= end || rp[1] != ' ')
                    return 0;
                i = (size_t)(rp - s) + 2;
            }
            if (at_nccl(s + i, n - i)) {
                lvl = level_at(s + i + 5, end, &wl);
                i += 5;
            } else {
                lvl = level_at(s + i, end, &wl); /* 2.0 .. 2.2: no "NCCL" */
                if (lvl != NCD_LOG_WARN && lvl != NCD_LOG_INFO)
                    return 0;
            }
            if (lvl == NCD_LOG_NONE || (ms && lvl != NCD_LOG_TRACE))
                return 0;
        }
        if (lvl == NCD_LOG_NONE || lvl == NCD_LOG_CALL)
            return 0;
    }
    o->level = lvl;
    o->host = s + h0;
    o->host_len = h1 - h0;
    o->pid = pid;
    o->tid = tid;
    o->dev = (int)dev;
    if (src1 > src0) {
        o->src = s + src0;
        o->src_len = src1 - src0;
        o->src_line = (int)ln;
    }
    if (ts >= 0)
        o->ts = ts;
    *skip = h0;
    set_msg(o, s, n, i + wl);
    return 1;
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
 * The general case, for a header behind text nobody stripped: parses the
 * part of the header before the level word backwards: [ts] host:pid:tid
 * [dev] [file:line] [(func)].  `hdr_end` points at the blank before the
 * level word (or "NCCL").  `old` = the form without "NCCL", where the
 * host:pid:tid [dev] part is mandatory.
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
            if (!old && ncd__parse_uint(c, (size_t)(e - c), &ln) == 0) {
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
        if (ncd__parse_uint(t + 1, (size_t)(e - t - 2), &dv) == 0)
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
    if (ncd__parse_uint(pid, (size_t)(pe - pid), &v) == 0)
        o->pid = v;
    if (ncd__parse_uint(tid, (size_t)(e - tid), &v) == 0)
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

/* "NCCL <LEVEL>" anywhere in text, or the bare version line at its start. */
static int header_anywhere(const char *text, size_t n, struct ncd_log_line *o)
{
    const char *end = text + n, *p = text;
    while (p < end) {
        /* 'N' is rare in NCCL lines before the header */
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
            set_msg(o, text, n, (size_t)(hit - text) + 5 + wl);
            return 1;
        }
        /* the bare "NCCL version" line starts the line; PyTorch's
         * "..., NCCL version 2.18.1" inside an error message is not one */
        if (hit == text && n > 13 && memcmp(hit, "NCCL version ", 13) == 0) {
            o->level = NCD_LOG_VERSION;
            o->msg = hit;
            o->msg_len = n;
            return 1;
        }
        p = hit + 5;
    }
    /* 2.0 .. 2.2 form behind other text: "host:pid:tid [d] INFO msg" */
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
                set_msg(o, text, n, (size_t)(hit - text) + 2 + wl);
                return 1;
            }
        }
        p = hit + 2;
    }
    return 0;
}

/*
 * Messages NCCL prints at INFO level, recognised by their start when the
 * header is gone (a collector or a copy-paste cut it, or NCCL 1.x, which
 * printed "INFO <msg>" only).  `skip`: bytes before the message.
 */
static const struct {
    const char *shape;
    unsigned char skip;
    const char *source;
} bare[] = {
    {"Channel %N/%N : ", 0, "transport.cc 2.7+: rings and per-peer paths"},
    {"Channel %N : ", 0, "transport.cc 2.7+: SHM / CollNet paths"},
    {"Ring %N : ", 0, "transport.cc 2.3..2.6 paths; graph ring dumps"},
    {"%N[%W] -> %N[%W] ", 0, "a per-peer path with its \"Channel NN :\" cut"},
    {"Trees [", 0, "graph/connect.cc 2.4+"},
    {"NET/", 0, "net_ib, net_socket, plugin lines 2.3+"},
    {"NET : ", 0, "include/socket.h 2.3: NET : Using interface"},
    {"Bootstrap : Using", 0, "bootstrap.cc 2.4 .. 2.23"},
    {"Bootstrap: Using", 0, "bootstrap.cc 2.24+"},
    {"Using network ", 0, "init.cc 2.6+"},
    {"Using internal Network ", 0, "init.cu 2.3"},
    {"Using external Network ", 0, "init.cu 2.3"},
    {"NCCL_%V set by environment to ", 0, "param.cc / misc/utils.cc"},
    {"comm 0x%V rank %N n", 0, "init.cc: comm ... rank ... nRanks/nranks"},
    {"%V comm 0x%V rank %N nranks %N ", 0, "init.cc 2.21+: Init COMPLETE"},
    {"cudaDriverVersion %N", 0, "init.cc 2.12+"},
    {"Connected all ", 0, "transport.cc 2.9+"},
    {"INFO NCCL debug level set to ", 5, "NCCL 1.x src/core.cu"},
    {"INFO rank %N using ", 5, "NCCL 1.x src/core.cu"},
    {"INFO rank access %N -> %N via ", 5, "NCCL 1.x src/core.cu"},
    {"INFO Global device memory space is ", 5, "NCCL 1.x src/core.cu"},
};

static int bare_message(const char *text, size_t n, struct ncd_log_line *o)
{
    int r = -1;
    double ts = -1;
    for (size_t k = 0; k < sizeof bare / sizeof bare[0]; k++) {
        const char *sh = bare[k].shape;
        if (!ncd__line_first_ok(sh, text[0]))
            continue;
        if (ncd__line_shape_match(sh, text, n, &r, &ts)) {
            o->level = NCD_LOG_INFO;
            o->msg = text + bare[k].skip;
            o->msg_len = n - bare[k].skip;
            return 1;
        }
    }
    /* NCCL 1.x WARN: "WARN <file>:<line> <msg>" (printf, src/core.h) */
    if (n > 8 && memcmp(text, "WARN ", 5) == 0) {
        size_t a = 5, i = a;
        while (i < n && text[i] != ' ' && text[i] != ':')
            i++;
        size_t c = i + 1, b = c;
        while (b < n && is_digit(text[b]))
            b++;
        long ln;
        if (i > a && i < n && text[i] == ':' && b > c && b < n &&
            text[b] == ' ' && memchr(text + a, '.', i - a) &&
            ncd__parse_uint(text + c, b - c, &ln) == 0 && ln <= 0x7fffffff) {
            o->level = NCD_LOG_WARN;
            o->src = text + a;
            o->src_len = i - a;
            o->src_line = (int)ln;
            set_msg(o, text, n, b);
            return 1;
        }
    }
    return 0;
}

/* A "host: " label in front of something else: host-like word with a
 * digit ("node1", "gpu-03.cluster"). */
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

/* The fields parsed at `from` moved to the same bytes at `to`. */
static void rebase(struct ncd_log_line *o, const char *from, char *to)
{
    if (from == to)
        return;
    o->text = to + (o->text - from);
    o->msg = to + (o->msg - from);
    if (o->host)
        o->host = to + (o->host - from);
    if (o->src)
        o->src = to + (o->src - from);
}

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* a[0, n) == b[0, n) for 16 <= n <= NCD__MEMO_KEY (a memo key): 16 bytes
 * at a time, the last 16 overlapping; no call for a ~50-byte compare. */
static inline int key_equal(const char *a, const char *b, size_t n)
{
#if defined(__SSE2__)
    size_t i = 0;
    for (; i + 16 < n; i += 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(a + i));
        __m128i y = _mm_loadu_si128((const __m128i *)(const void *)(b + i));
        if (_mm_movemask_epi8(_mm_cmpeq_epi8(x, y)) != 0xffff)
            return 0;
    }
    __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(a + n - 16));
    __m128i y = _mm_loadu_si128((const __m128i *)(const void *)(b + n - 16));
    return _mm_movemask_epi8(_mm_cmpeq_epi8(x, y)) == 0xffff;
#else
    return memcmp(a, b, n) == 0;
#endif
}

/* The memo slot of a line: its first 16 bytes hashed. */
static inline size_t memo_slot(const char *s)
{
    uint64_t a, b;
    memcpy(&a, s, 8);
    memcpy(&b, s + 8, 8);
    uint64_t h = (a * 0x9E3779B97F4A7C15ull) ^ (b * 0xC2B2AE3D27D4EB4Full);
    h ^= h >> 29;
    return (size_t)((h * 0x9E3779B97F4A7C15ull) >> 32) & (NCD__MEMO_SLOTS - 1);
}

/* The memo's header for a line whose cleaned text starts with its key:
 * what the parse below would find (see ncd__log_parse_memo). */
static void memo_fill(const struct ncd__hdr_memo *mm, const char *text,
                      size_t n, struct ncd_log_line *o)
{
    o->level = mm->level;
    o->host = text + mm->host_off;
    o->host_len = mm->host_len;
    o->pid = mm->pid;
    o->tid = mm->tid;
    o->dev = mm->dev;
    if (mm->src_len) {
        o->src = text + mm->src_off;
        o->src_len = mm->src_len;
        o->src_line = mm->src_line;
    }
    o->rank = mm->rank;
    o->text = text + mm->k;
    o->text_len = n - mm->k;
    o->msg = text + mm->plen;
    o->msg_len = n - mm->plen;
}

/*
 * Keeps the header just parsed from text[0, n) (k bytes of launcher prefix
 * of `shape`, -1 none), returning 1, when the parse took a path that reads
 * nothing past the blank after the level word:
 *  - no launcher prefix, or one of shapes[NCD__SHAPE_OMPI / _TORCH] at the
 *    first byte (their code reads the prefix and the byte after it; the
 *    shapes tried before TORCH fail on its second byte, a letter);
 *  - the header starts with no "[<time>] " stamp: header_fwd() then reads
 *    the host up to ':', pid and tid (8 bytes at a time, which can reach
 *    one byte past the blank after "[dev] INFO" of the 2.0 form, a byte
 *    that cannot change the digits before it), "[dev]", "<file>:<line>"
 *    up to a blank, "(func)" up to its ')', "NCCL", the level word and the
 *    blank after it, all before the message; it compares n only to
 *    offsets inside the header;
 *  - a message follows (n > the key's length).
 * Header-less lines, JSON lines and time stamps are never kept.
 */
static int memo_keep(struct ncd__hdr_memo *mm, const char *text, size_t n,
                     size_t k, int shape, const struct ncd_log_line *o)
{
    size_t plen = (size_t)(o->msg - text);
    if (plen < 16)
        return 0; /* shorter than the slot's hash */
    if ((k && shape != NCD__SHAPE_OMPI && shape != NCD__SHAPE_TORCH) ||
        (k && text[0] != '[') || text[k] == '[' || o->ts >= 0 ||
        plen >= n || plen > NCD__MEMO_KEY || plen <= k ||
        text[plen - 1] != ' ' || o->msg != o->text + (plen - k))
        return 0;
    mm->plen = 0;
    memcpy(mm->key, text, plen);
    mm->k = (uint16_t)k;
    mm->level = o->level;
    mm->host_off = (uint16_t)(o->host - text);
    mm->host_len = (uint16_t)o->host_len;
    mm->src_off = o->src ? (uint16_t)(o->src - text) : 0;
    mm->src_len = o->src ? (uint16_t)o->src_len : 0;
    mm->src_line = o->src_line;
    mm->pid = o->pid;
    mm->tid = o->tid;
    mm->dev = o->dev;
    mm->rank = o->rank;
    mm->pf_from = 0xffff;
    mm->plen = (uint16_t)plen;
    return 1;
}

int ncd_log_parse(const char *line, size_t len, char *scratch,
                  size_t scratch_sz, struct ncd_log_line *o)
{
    return ncd__log_parse_memo(line, len, scratch, scratch_sz, o, NULL, NULL,
                               NULL);
}

int ncd__log_parse_memo(const char *line, size_t len, char *scratch,
                        size_t scratch_sz, struct ncd_log_line *o,
                        struct ncd__hdr_memo *mm, struct ncd__hdr_memo **used,
                        const char **raw)
{
    if (used)
        *used = NULL;
    if (raw)
        *raw = scratch;
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
    /* A line without control bytes (nearly all) is parsed where it lies,
     * not in the copy just written to scratch: loads that straddle the
     * copy's stores would wait for them.  The fields then point into
     * scratch, which holds the same bytes. */
    size_t n;
    const char *base = scratch;
    if (len && (line[0] == '{' || line[0] == ' ') &&
        (n = ncd__line_json_unwrap(line, len, scratch, &o->ts)) != (size_t)-1) {
        n = ncd__line_clean_slow(scratch, n, scratch);
        mm = NULL; /* its time stamp is not the header's */
    } else {
        int same;
        n = ncd__line_clean_copy(line, len, scratch, &same);
        if (same) {
            base = line;
            if (raw)
                *raw = line;
        }
    }
    /* trailing blanks carry nothing */
    while (n > 0 && (base[n - 1] == ' ' || base[n - 1] == '\t'))
        scratch[--n] = '\0';

    const char *text = base;
    size_t skip;
    if (mm && n > 16)
        mm += memo_slot(base);
    else
        mm = NULL;
    if (mm && mm->plen && n > mm->plen && key_equal(base, mm->key, mm->plen) &&
        /* after a launcher prefix, the header read at the first byte
         * fails, as it did (cheaply: at the '[') */
        (!mm->k || !header_fwd(base, n, o, &skip))) {
        memo_fill(mm, base, n, o);
        rebase(o, base, scratch);
        if (used)
            *used = mm;
        return 0;
    }
    size_t k0 = 0; /* the launcher prefix stripped, when one shape of it */
    int shape = -1;
    for (int iter = 0;; iter++) {
        if (header_fwd(text, n, o, &skip)) {
            o->text = text + skip;
            o->text_len = n - skip;
            if (mm && iter <= 1 &&
                memo_keep(mm, base, (size_t)(text - base) + n, k0, shape, o) &&
                used)
                *used = mm;
            rebase(o, base, scratch);
            return 0;
        }
        if (iter == 8)
            break;
        size_t k = ncd__line_strip_one(text, n, &o->rank, &o->ts,
                                       iter == 0 ? &shape : NULL);
        if (!k) {
            shape = -1;
            /* "host: " in front of another prefix */
            size_t h = host_label(text, n);
            if (h) {
                int r = -1;
                double ts = -1;
                size_t k2 = ncd__line_strip_one(text + h + 2, n - h - 2, &r,
                                                &ts, NULL);
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
        if (iter == 0)
            k0 = k;
        text += k;
        n -= k;
    }
    o->text = text;
    o->text_len = n;
    o->msg = text;
    o->msg_len = n;
    if (n && !header_anywhere(text, n, o))
        bare_message(text, n, o);
    rebase(o, base, scratch);
    return 0;
}
