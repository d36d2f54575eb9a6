/* SPDX-License-Identifier: MIT */
/*
 * The outer layers of a log line, before NCCL's header (line.c): JSON
 * wrappers of log collectors, ANSI escapes and CRs, and the launcher /
 * collector prefix shapes (mpirun, torchrun, srun, Ray, kubectl, CRI,
 * syslog), each with its source.  Steps 1-3 of line.c's pipeline.
 */
#define _GNU_SOURCE
#include "explain/internal.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "ncd/error.h"

static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* ------------------------------------------------------------- cleaning */

/* Drops ANSI escapes and CRs; NULs and line feeds become blanks.  `out`
 * may be `in` (the output never runs ahead of the input). */
size_t ncd__line_clean_slow(const char *in, size_t len, char *out)
{
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
        out[o++] = c == 0 || c == '\n' ? ' ' : (char)c;
    }
    out[o] = '\0';
    return o;
}

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Copies in[0, len) to out; returns 1 when it holds a byte below 0x20
 * (an escape, CR, NUL or tab: the slow path then does the work). */
static int copy_has_ctl(const char *in, size_t len, char *out)
{
    size_t i = 0;
    int any = 0;
#if defined(__SSE2__)
    const __m128i lim = _mm_set1_epi8(0x1f);
    if (len >= 16) {
        for (; i + 16 <= len; i += 16) {
            __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(in + i));
            _mm_storeu_si128((__m128i *)(void *)(out + i), v);
            /* v <= 0x1f unsigned  <=>  min(v, 0x1f) == v */
            any |= _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(v, lim), v));
        }
        if (i < len) { /* the last 16 bytes, overlapping */
            __m128i v = _mm_loadu_si128(
                (const __m128i *)(const void *)(in + len - 16));
            _mm_storeu_si128((__m128i *)(void *)(out + len - 16), v);
            any |= _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(v, lim), v));
            i = len;
        }
    }
#else
    uint64_t acc = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, in + i, 8);
        memcpy(out + i, &w, 8);
        /* a byte below 0x20 exists (exact for existence) */
        acc |= (w - 0x2020202020202020ull) & ~w & 0x8080808080808080ull;
    }
    any = acc != 0;
#endif
    for (; i < len; i++) {
        out[i] = in[i];
        any |= (unsigned char)in[i] < 0x20;
    }
    return any;
}

/* The raw line into `out`, cleaned (see ncd__line_clean_slow); *same is
 * 1 when out holds the raw bytes unchanged. */
size_t ncd__line_clean_copy(const char *in, size_t len, char *out, int *same)
{
    if (!copy_has_ctl(in, len, out)) {
        out[len] = '\0';
        *same = 1;
        return len;
    }
    *same = 0;
    return ncd__line_clean_slow(in, len, out);
}

/* ------------------------------------------------------ JSON wrappers */

/*
 * Collectors that store each line as a JSON object, and the key holding
 * the line (first found in this order wins): Docker's json-file driver
 * {"log":"..\n","stream":"stdout","time":"..."} (also Fluent Bit and
 * Fluentd on Kubernetes), Elastic ECS / Vector / Logstash "message",
 * journalctl -o json "MESSAGE", Google Cloud Logging "textPayload",
 * structured loggers "msg".  The time comes from "time", "timestamp" or
 * "@timestamp" when it is an ISO 8601 string.
 */
static const char *const json_msg_keys[] = {"log", "message", "MESSAGE",
                                            "textPayload", "msg"};
static const char *const json_time_keys[] = {"time", "timestamp",
                                             "@timestamp"};

/* Index just past the JSON string starting at s[i] == '"', 0 if none. */
static size_t json_str_end(const char *s, size_t n, size_t i)
{
    for (i++; i < n; i++) {
        if (s[i] == '\\')
            i++;
        else if (s[i] == '"')
            return i + 1;
    }
    return 0;
}

static size_t json_ws(const char *s, size_t n, size_t i)
{
    while (i < n && (s[i] == ' ' || s[i] == '\t'))
        i++;
    return i;
}

/* Index just past the JSON value at s[i], 0 when malformed. */
static size_t json_value_end(const char *s, size_t n, size_t i)
{
    if (i >= n)
        return 0;
    if (s[i] == '"')
        return json_str_end(s, n, i);
    if (s[i] == '{' || s[i] == '[') {
        int depth = 0;
        for (; i < n; i++) {
            if (s[i] == '"') {
                size_t e = json_str_end(s, n, i);
                if (!e)
                    return 0;
                i = e - 1;
            } else if (s[i] == '{' || s[i] == '[') {
                depth++;
            } else if ((s[i] == '}' || s[i] == ']') && --depth == 0) {
                return i + 1;
            }
        }
        return 0;
    }
    size_t j = i; /* number, true, false, null */
    while (j < n && s[j] != ',' && s[j] != '}' && s[j] != ' ')
        j++;
    return j > i ? j : 0;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static long hex4(const char *s, size_t n)
{
    if (n < 4)
        return -1;
    long v = 0;
    for (int k = 0; k < 4; k++) {
        int h = hexval(s[k]);
        if (h < 0)
            return -1;
        v = v * 16 + h;
    }
    return v;
}

/* Decodes the body of a JSON string (between the quotes) into out; never
 * longer than the input.  Returns the bytes written. */
static size_t json_decode(const char *s, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '\\' || i + 1 >= n) {
            out[o++] = s[i];
            continue;
        }
        char e = s[++i];
        switch (e) {
        case 'n': out[o++] = '\n'; break;
        case 't': out[o++] = '\t'; break;
        case 'r': out[o++] = '\r'; break;
        case 'b': out[o++] = '\b'; break;
        case 'f': out[o++] = '\f'; break;
        case 'u': {
            long cp = hex4(s + i + 1, n - i - 1);
            if (cp < 0) {
                out[o++] = '?';
                break;
            }
            i += 4;
            if (cp >= 0xd800 && cp <= 0xdbff && i + 2 < n && s[i + 1] == '\\' &&
                s[i + 2] == 'u') {
                long lo = hex4(s + i + 3, n - i - 3);
                if (lo >= 0xdc00 && lo <= 0xdfff) {
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                    i += 6;
                }
            }
            if (cp < 0x80) {
                out[o++] = (char)cp;
            } else if (cp < 0x800) {
                out[o++] = (char)(0xc0 | cp >> 6);
                out[o++] = (char)(0x80 | (cp & 0x3f));
            } else if (cp < 0x10000) {
                out[o++] = (char)(0xe0 | cp >> 12);
                out[o++] = (char)(0x80 | (cp >> 6 & 0x3f));
                out[o++] = (char)(0x80 | (cp & 0x3f));
            } else {
                out[o++] = (char)(0xf0 | cp >> 18);
                out[o++] = (char)(0x80 | (cp >> 12 & 0x3f));
                out[o++] = (char)(0x80 | (cp >> 6 & 0x3f));
                out[o++] = (char)(0x80 | (cp & 0x3f));
            }
            break;
        }
        default: out[o++] = e; break; /* \" \\ \/ */
        }
    }
    return o;
}

static int key_in(const char *k, size_t kl, const char *const *keys,
                  size_t nkeys)
{
    for (size_t i = 0; i < nkeys; i++)
        if (strlen(keys[i]) == kl && memcmp(keys[i], k, kl) == 0)
            return (int)i;
    return -1;
}

/*
 * A JSON object holding a log line: its message decoded into `out` (which
 * may not overlap `s`), the time into *ts.  Returns the message length, or
 * (size_t)-1 when `s` is not such an object.
 */
size_t ncd__line_json_unwrap(const char *s, size_t n, char *out, double *ts)
{
    size_t i = json_ws(s, n, 0);
    while (n > i && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        n--;
    if (i >= n || s[i] != '{' || s[n - 1] != '}')
        return (size_t)-1;
    size_t best_a = 0, best_b = 0, time_a = 0, time_b = 0;
    int best = -1;
    i++;
    for (;;) {
        i = json_ws(s, n, i);
        if (i >= n || s[i] != '"')
            break;
        size_t ke = json_str_end(s, n, i);
        if (!ke)
            return (size_t)-1;
        size_t k0 = i + 1, kl = ke - 1 - k0;
        i = json_ws(s, n, ke);
        if (i >= n || s[i] != ':')
            return (size_t)-1;
        i = json_ws(s, n, i + 1);
        size_t ve = json_value_end(s, n, i);
        if (!ve)
            return (size_t)-1;
        if (s[i] == '"') {
            int m = key_in(s + k0, kl, json_msg_keys,
                           sizeof json_msg_keys / sizeof json_msg_keys[0]);
            if (m >= 0 && (best < 0 || m < best)) {
                best = m;
                best_a = i + 1;
                best_b = ve - 1;
            }
            if (key_in(s + k0, kl, json_time_keys,
                       sizeof json_time_keys / sizeof json_time_keys[0]) >= 0) {
                time_a = i + 1;
                time_b = ve - 1;
            }
        }
        i = json_ws(s, n, ve);
        if (i < n && s[i] == ',')
            i++;
    }
    if (best < 0)
        return (size_t)-1;
    if (time_b > time_a) {
        double t;
        if (ncd__parse_timestamp(s + time_a, time_b - time_a, &t))
            *ts = t;
    }
    return json_decode(s + best_a, best_b - best_a, out);
}

/* ------------------------------------------------------------ prefixes */

static int is_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int is_hostc(char c)
{
    return is_alpha(c) || is_digit(c) || c == '.' || c == '-' || c == '_';
}

/* "Jan  2 03:04:05" (syslog, journalctl's default output): its length. */
static size_t syslog_time(const char *s, size_t n)
{
    static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
    if (n < 15 || s[3] != ' ' || s[6] != ' ' || s[9] != ':' || s[12] != ':')
        return 0;
    int ok = 0;
    for (int m = 0; m < 12; m++)
        ok |= memcmp(s, months + 3 * m, 3) == 0;
    if (!ok || !(s[4] == ' ' || is_digit(s[4])) || !is_digit(s[5]))
        return 0;
    for (int k = 7; k < 15; k++)
        if (k != 9 && k != 12 && !is_digit(s[k]))
            return 0;
    return 15;
}

/*
 * Shape language of the prefix and message tables:
 *   %R  digits: the rank          %N  digits
 *   %A  a name: letters, '_', '-' %V  an identifier: letters, digits, '_'
 *   %h  host: letters, digits, '.', '-', '_'   %H  the same with a digit
 *   %I  an address or host name (letters, digits, '.', ':', '-')
 *   %W  bytes up to the pattern's next character (no blank unless that
 *       character is one)
 *   %T  ISO 8601 time stamp       %S  syslog time "Jan  2 03:04:05"
 *   %_  blanks, maybe none        other bytes match themselves
 * Returns the bytes matched (0: no match); *rank / *ts get what it carried.
 */
size_t ncd__line_shape_match(const char *pat, const char *s, size_t n, int *rank,
                          double *ts)
{
    size_t i = 0;
    long rk = -1;
    double t = -1;
    for (const char *p = pat; *p; p++) {
        if (*p != '%') {
            if (i >= n || s[i] != *p)
                return 0;
            i++;
            continue;
        }
        char k = *++p;
        size_t j = i;
        switch (k) {
        case 'R':
        case 'N':
            while (j < n && is_digit(s[j]) && j - i < 13)
                j++;
            if (j == i || j - i > (k == 'R' ? 7u : 12u))
                return 0;
            if (k == 'R' && ncd__parse_uint(s + i, j - i, &rk) < 0)
                return 0;
            break;
        case 'A':
            while (j < n && j - i < 40 &&
                   (is_alpha(s[j]) || (j > i && (s[j] == '_' || s[j] == '-'))))
                j++;
            break;
        case 'V':
            while (j < n && j - i < 64 &&
                   (is_alpha(s[j]) || is_digit(s[j]) || s[j] == '_'))
                j++;
            break;
        case 'h':
        case 'H': {
            int digit = 0;
            while (j < n && j - i < 64 && is_hostc(s[j]))
                digit |= is_digit(s[j++]);
            if (k == 'H' && !digit)
                return 0;
            break;
        }
        case 'I':
            while (j < n && j - i < 64 && (is_hostc(s[j]) || s[j] == ':'))
                j++;
            break;
        case 'W': {
            char stop = p[1];
            while (j < n && s[j] != stop && j - i < 128) {
                if (s[j] == ' ' && stop != ' ')
                    return 0;
                j++;
            }
            if (j >= n || s[j] != stop)
                return 0;
            break;
        }
        case 'T':
            j = i + ncd__parse_timestamp(s + i, n - i, &t);
            break;
        case 'S':
            j = i + syslog_time(s + i, n - i);
            break;
        case '_':
            while (j < n && (s[j] == ' ' || s[j] == '\t'))
                j++;
            i = j;
            continue; /* may match nothing */
        default:
            return 0;
        }
        if (j == i)
            return 0;
        i = j;
    }
    if (rk >= 0 && rk <= 0x7fffffff)
        *rank = (int)rk;
    if (t >= 0)
        *ts = t;
    return i;
}

/*
 * Prefixes that launchers and log collectors put in front of a process's
 * output, tried in this order at the start of the line (and again after
 * each one removed, at most 8 deep).
 */
static const struct {
    const char *shape;
    const char *source;
} shapes[] = {
    {"[%N,%R]<%A>:%_", "Open MPI mpirun --tag-output: [jobid,rank]<stdout>:"},
    {"[%R]<%A>:%_", "Horovod horovodrun (Gloo): [rank]<stdout>: "
                    "(horovod test/single/test_service.py)"},
    {"[%A%R]:%_", "torchrun (torch.distributed.elastic --tee): [default0]:, "
                  "PyTorch 2.x [rank3]:, [trainer3]:"},
    {"[%A%N|%R]:%_", "[trainer0|0]: (NVIDIA/nccl#1837)"},
    {"[%T]%_", "bracketed time stamp (NCCL 2.26+ WARN, Python logging)"},
    {"[%R] ", "MPICH/Intel MPI mpiexec -l and -prepend-rank: [rank] "},
    {"[rank=%R] ", "Determined AI wrap_rank.py: [rank=N] "},
    {"[pod/%W/%W] ", "kubectl logs --prefix: [pod/<pod>/<container>] "},
    {"(%A pid=%N, ip=%I)%_", "Ray actor/task output: (RayWorkerWrapper "
                             "pid=1019, ip=10.0.0.2) "},
    {"(pid=%N, ip=%I)%_", "Ray worker output: (pid=123, ip=10.0.0.2) "},
    {"(%A pid=%N)%_", "Ray actor output on the head node"},
    {"(pid=%N)%_", "Ray worker output on the head node"},
    {"%T std%A %A ", "CRI container log files (containerd, CRI-O): "
                     "<RFC3339Nano> stdout F "},
    {"%T:%_", "ISO 8601 time stamp and ':'"},
    {"%T]%_", "ISO 8601 time stamp and ']'"},
    {"%T%_", "ISO 8601 time stamp (kubectl logs --timestamps, collectors)"},
    {"%S %h %W: ", "syslog / journalctl: Jan  2 03:04:05 node1 python3[42]: "},
    {"rank%R:%_", "rank labels (pdsh-like wrappers): rank3:"},
    {"rank %R:%_", "rank labels: rank 3:"},
    {"Rank%R:%_", "rank labels: Rank3:"},
    {"Rank %R:%_", "rank labels: Rank 3:"},
    {"%R: ", "Slurm srun --label: 3: "},
    {"%h%_| ", "docker compose: <service>  | "},
};

/* Whether shape `sh` can match text starting with c (a cheap first test). */
int ncd__line_first_ok(const char *sh, char c)
{
    if (sh[0] != '%')
        return sh[0] == c;
    switch (sh[1]) {
    case 'R':
    case 'N':
    case 'T':
        return is_digit(c);
    case 'S':
        return c >= 'A' && c <= 'Z';
    case 'A':
        return is_alpha(c);
    case 'V':
        return is_alpha(c) || is_digit(c) || c == '_';
    case 'h':
    case 'H':
    case 'I':
        return is_hostc(c);
    default:
        return 1;
    }
}

#define NSHAPES (sizeof shapes / sizeof shapes[0])

/* For each first byte, the shapes that ncd__line_first_ok() lets through
 * (bit k: shapes[k]), so that a line tries only those. */
static uint32_t first_mask[256];
static pthread_once_t first_once = PTHREAD_ONCE_INIT;

static void first_mask_init(void)
{
    _Static_assert(NSHAPES <= 32, "first_mask holds 32 shapes");
    for (unsigned c = 0; c < 256; c++)
        for (size_t k = 0; k < NSHAPES; k++)
            if (ncd__line_first_ok(shapes[k].shape, (char)c))
                first_mask[c] |= 1u << k;
}

/* The end of %N / %R's digits at s[i] (the interpreter's bound: 13). */
static inline size_t digits_end(const char *s, size_t n, size_t i)
{
    size_t j = i;
    while (j < n && is_digit(s[j]) && j - i < 13)
        j++;
    return j;
}

/* The end of %A's name at s[i]. */
static inline size_t name_end(const char *s, size_t n, size_t i)
{
    size_t j = i;
    while (j < n && j - i < 40 &&
           (is_alpha(s[j]) || (j > i && (s[j] == '_' || s[j] == '-'))))
        j++;
    return j;
}

/* %R: 1..7 digits at s[i]; their end (0: none) and value in *rk. */
static inline size_t rank_end(const char *s, size_t n, size_t i, long *rk)
{
    size_t j = digits_end(s, n, i);
    if (j == i || j - i > 7)
        return 0;
    long v = 0;
    for (size_t k = i; k < j; k++)
        v = v * 10 + (s[k] - '0');
    *rk = v;
    return j;
}

static inline size_t blanks_end(const char *s, size_t n, size_t i)
{
    while (i < n && (s[i] == ' ' || s[i] == '\t'))
        i++;
    return i;
}

/* shapes[0], "[%N,%R]<%A>:%_" (Open MPI), as ncd__line_shape_match() reads
 * it: the most common prefix, so not through the interpreter. */
static size_t shape_ompi(const char *s, size_t n, int *rank)
{
    size_t i = 1, j = digits_end(s, n, 1); /* s[0] == '[' */
    long rk;
    if (j == i || j - i > 12 || j >= n || s[j] != ',')
        return 0;
    if (!(i = rank_end(s, n, j + 1, &rk)) || i + 1 >= n || s[i] != ']' ||
        s[i + 1] != '<')
        return 0;
    j = name_end(s, n, i + 2);
    if (j == i + 2 || j + 1 >= n || s[j] != '>' || s[j + 1] != ':')
        return 0;
    *rank = (int)rk;
    return blanks_end(s, n, j + 2);
}

/* shapes[2], "[%A%R]:%_" (torchrun, PyTorch), likewise. */
static size_t shape_torch(const char *s, size_t n, int *rank)
{
    size_t i = name_end(s, n, 1), j; /* s[0] == '[' */
    long rk;
    if (i == 1 || !(j = rank_end(s, n, i, &rk)) || j + 1 >= n ||
        s[j] != ']' || s[j + 1] != ':')
        return 0;
    *rank = (int)rk;
    return blanks_end(s, n, j + 2);
}

/* One prefix of shapes[] at the start of s (after blanks): its length. */
size_t ncd__line_strip_one(const char *s, size_t n, int *rank, double *ts,
                           int *shape)
{
    size_t i = 0;
    while (i < n && (s[i] == ' ' || s[i] == '\t'))
        i++;
    if (i >= n)
        return 0;
    pthread_once(&first_once, first_mask_init);
    for (uint32_t m = first_mask[(unsigned char)s[i]]; m; m &= m - 1) {
        unsigned k = (unsigned)__builtin_ctz(m);
        size_t len;
        if (k == NCD__SHAPE_OMPI)
            len = shape_ompi(s + i, n - i, rank);
        else if (k == NCD__SHAPE_TORCH)
            len = shape_torch(s + i, n - i, rank);
        else
            len = ncd__line_shape_match(shapes[k].shape, s + i, n - i, rank,
                                        ts);
        if (len) {
            if (shape)
                *shape = (int)k;
            return i + len;
        }
    }
    return 0;
}
