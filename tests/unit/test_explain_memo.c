/* SPDX-License-Identifier: MIT */
/*
 * explain: the shortcuts of the line parser give what the plain parse
 * gives.  (1) The dedicated code for the Open MPI and torchrun prefixes
 * against the shape interpreter, on listed and random prefixes.  (2) The
 * header memo (ncd__log_parse_memo): a line parsed after another that
 * primed the memo, with the same start and any ending (cut anywhere,
 * random bytes, blanks, CR, ANSI colour), parses as ncd_log_parse() does
 * without a memo, field by field.  (3) ncd__find against a plain search.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "explain/internal.h"
#include "ncd/ctx.h"

static const char *const prefixes[] = {
    "[1,0]<stdout>:", "[1,3]<stderr>: ", "[12,345]<stdout>:\t", "[1,0]<>:",
    "[1,0]<std_out>:", "[1,0]<-x>:", "[1,12345678]<stdout>:", "[1,1234567]<a>:",
    "[1234567890123,1]<a>:", "[123456789012,1]<a>:", "[1,0]<stdout>",
    "[1,0]<stdout",
    "[,0]<a>:", "[1,]<a>:", "[rank3]:", "[rank165]: ", "[default0]:",
    "[default-0]:", "[trainer_3]:", "[rank]:", "[3]:", "[r12345678]:",
    "[r1234567]:", "[trainer0|0]:", "[2026-01-02 03:04:05] ", "[5] ",
    "[rank=3] ", "[a-1]:", "[ab_-1]:",
    "[aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa1]:",
    "[aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa1]:", "[1,0]<stdout>:[rank3]:",
    "", "[", "[1", "[1,", "[1,0", "[1,0]", "[1,0]<", "[r", "[r1", "[r1]",
};

static const char *const headers[] = {
    "node1:12345:12399 [3] NCCL INFO ",
    "gpu-node-0123.cluster.local:1234567:12345678 [7] NCCL INFO ",
    "node2:7:8 [1] transport/net_ib.cc:881 NCCL WARN ",
    "node2:7:8 [1] os/linux.cc:560 (ncclOsSocketConnect) NCCL WARN ",
    "node3:11:12 [-1] NCCL INFO ",
    "node4:1:2 NCCL CALL ",
    "node5:1:2 [0] 12.5 init.cc:42 NCCL TRACE ",
    "node6:100:200 [0] INFO ",
    "node6:100:200 [0] misc/ibvwrap.cc:9 WARN ",
    "node7:123456789:1 [0] NCCL INFO ",
    "node8:1:2 [0] NCCL ABORT ",
    "[2026-01-02 03:04:05] node9:1:2 [0] NCCL INFO ",
    "node1:12345:12399 [3] NCCL INFO  ",
    "node1:12345:12399 [3] NCCL INFOX ",
    "n:1:2 [0] NCCL INFO ",
};

static const char *const messages[] = {
    "Bootstrap : Using eth0:10.0.0.1<0>", "x", " 6 : NET/0", "(",
    ") (x) NCCL WARN y", "12345678", "[0] NCCL INFO z", "NCCL INFO x",
    "\r", "\x1b[0m done", "   ", "\t",
    "comm 0x1 rank 0 nranks 8 - Init COMPLETE",
};

static const char *fast_shape[] = {"[%N,%R]<%A>:%_", "[%R]<%A>:%_",
                                   "[%A%R]:%_"};

/* What ncd__line_strip_one must give for s when one of shapes 0..2 (the
 * first three of the table, the dedicated ones among them) matches. */
static size_t reference_strip(const char *s, size_t n, int *rank, int *shape)
{
    for (int k = 0; k < 3; k++) {
        double ts = -1;
        size_t m = ncd__line_shape_match(fast_shape[k], s, n, rank, &ts);
        if (m) {
            *shape = k;
            return m;
        }
    }
    return 0;
}

static void check_prefix(const char *s, size_t n)
{
    int r1 = -5, r2 = -5, sh1 = -1, sh2 = -1;
    double ts = -1;
    size_t want = reference_strip(s, n, &r1, &sh1);
    size_t got = ncd__line_strip_one(s, n, &r2, &ts, &sh2);
    if (!want) {
        /* a later shape may take it; never shapes 0 and 2 */
        if (got)
            assert_true(sh2 != NCD__SHAPE_OMPI && sh2 != NCD__SHAPE_TORCH);
        return;
    }
    if (got != want || r1 != r2 || sh1 != sh2)
        fail_msg("prefix \"%.*s\": strip %zu rank %d shape %d, interpreter "
                 "%zu rank %d shape %d",
                 (int)n, s, got, r2, sh2, want, r1, sh1);
}

static void test_prefix_shapes(void **state)
{
    (void)state;
    char buf[256];
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        for (size_t h = 0; h < sizeof headers / sizeof headers[0]; h++) {
            int n = snprintf(buf, sizeof buf, "%s%s", prefixes[i], headers[h]);
            for (int cut = 0; cut <= n; cut++)
                check_prefix(buf, (size_t)cut);
        }
    /* random strings over the prefixes' bytes */
    static const char alpha[] = "[]<>:,|0123456789rankstdout_- \t";
    uint64_t x = 88172645463325252ull;
    for (int it = 0; it < 300000; it++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        size_t n = 1 + x % 24;
        buf[0] = '[';
        uint64_t y = x;
        for (size_t k = 1; k < n; k++) {
            y = y * 6364136223846793005ull + 1442695040888963407ull;
            buf[k] = alpha[(y >> 33) % (sizeof alpha - 1)];
        }
        check_prefix(buf, n);
    }
}

static void same_line(const char *in, size_t len, const struct ncd_log_line *a,
                      const struct ncd_log_line *b)
{
#define FIELD(f)                                                              \
    if (a->f != b->f)                                                         \
        fail_msg("\"%.*s\": " #f " %ld with the memo, %ld without", (int)len, \
                 in, (long)a->f, (long)b->f)
#define TEXT(f, l)                                                            \
    if ((a->f == NULL) != (b->f == NULL) || a->l != b->l ||                   \
        (a->f && memcmp(a->f, b->f, a->l) != 0))                              \
        fail_msg("\"%.*s\": " #f " \"%.*s\" with the memo, \"%.*s\" without", \
                 (int)len, in, a->f ? (int)a->l : 4, a->f ? a->f : "NULL",    \
                 b->f ? (int)b->l : 4, b->f ? b->f : "NULL")
    FIELD(level);
    FIELD(pid);
    FIELD(tid);
    FIELD(dev);
    FIELD(src_line);
    FIELD(rank);
    TEXT(text, text_len);
    TEXT(msg, msg_len);
    TEXT(host, host_len);
    TEXT(src, src_len);
    if (a->ts != b->ts)
        fail_msg("\"%.*s\": ts %f with the memo, %f without", (int)len, in,
                 a->ts, b->ts);
    assert_int_equal(strlen(a->text), a->text_len);
#undef FIELD
#undef TEXT
}

/* Primes a fresh memo with `first`, then parses `line` with it and without
 * one: the same fields. */
static void check_pair(struct ncd__hdr_memo *memo, const char *first,
                       size_t flen, const char *line, size_t len)
{
    static char s1[NCD_LOG_MAX_LINE + 1], s2[NCD_LOG_MAX_LINE + 1];
    struct ncd_log_line a, b;
    memset(memo, 0, NCD__MEMO_SLOTS * sizeof *memo);
    struct ncd__hdr_memo *used;
    const char *raw;
    assert_int_equal(ncd__log_parse_memo(first, flen, s1, sizeof s1, &a, memo,
                                         &used, &raw), 0);
    assert_int_equal(ncd__log_parse_memo(line, len, s1, sizeof s1, &a, memo,
                                         &used, &raw), 0);
    /* the raw bytes the matcher may read instead of the copy */
    assert_true(raw == s1 || raw == line);
    assert_memory_equal(raw + (a.text - s1), a.text, a.text_len);
    if (used) /* the text starts with the header the slot holds */
        assert_memory_equal(a.text, used->key + used->k, used->plen - used->k);
    assert_int_equal(ncd_log_parse(line, len, s2, sizeof s2, &b), 0);
    same_line(line, len, &a, &b);
}

static void test_memo(void **state)
{
    (void)state;
    struct ncd__hdr_memo *memo = calloc(NCD__MEMO_SLOTS, sizeof *memo);
    assert_non_null(memo);
    static const char *const lead[] = {"", "[1,0]<stdout>:", "[rank3]:",
                                       "[default-0]: ", "[1,2]<stderr>:  "};
    char first[512], line[512];
    uint64_t x = 0x2545F4914F6CDD1Dull;
    size_t npairs = 0;
    for (size_t l = 0; l < sizeof lead / sizeof lead[0]; l++)
        for (size_t h = 0; h < sizeof headers / sizeof headers[0]; h++)
            for (size_t m = 0; m < sizeof messages / sizeof messages[0]; m++) {
                int fn = snprintf(first, sizeof first, "%s%s%s", lead[l],
                                  headers[h], messages[m]);
                /* the same line cut anywhere, and with other endings */
                for (int cut = 0; cut <= fn; cut++) {
                    check_pair(memo, first, (size_t)fn, first, (size_t)cut);
                    npairs++;
                }
                for (size_t m2 = 0; m2 < sizeof messages / sizeof messages[0];
                     m2++) {
                    int n = snprintf(line, sizeof line, "%s%s%s", lead[l],
                                     headers[h], messages[m2]);
                    check_pair(memo, first, (size_t)fn, line, (size_t)n);
                    npairs++;
                }
                for (int it = 0; it < 40; it++) {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    int cut = (int)(x % (uint64_t)(fn + 1));
                    memcpy(line, first, (size_t)cut);
                    int extra = (int)((x >> 20) % 12);
                    /* its NUL too */
                    static const char noise[] = "() :[]NCL WARIFO\r\x1b 01";
                    for (int k = 0; k < extra; k++) {
                        size_t c = (x >> (3 * k + 8)) % sizeof noise;
                        line[cut + k] = noise[c];
                    }
                    check_pair(memo, first, (size_t)fn, line,
                               (size_t)(cut + extra));
                    npairs++;
                }
            }
    assert_true(npairs > 10000);
    free(memo);
}

/* The memo is a cache: lines of many processes interleaved, each parsed
 * with it, parse as without it; the rule found with the prefilter starting
 * past the header's quiet windows is the one found from the start. */
static void test_memo_interleaved(void **state)
{
    (void)state;
    struct ncd_ctx *ctx;
    struct ncd_rules *rules;
    struct ncd__matcher m;
    assert_int_equal(ncd_ctx_new("/", NULL, &ctx), 0);
    assert_int_equal(ncd_rules_new(&rules), 0);
    assert_true(ncd_rules_load_builtin(ctx, rules) > 0);
    assert_int_equal(ncd__matcher_init(&m, rules), 0);
    static const char *const msgs[] = {
        "AllReduce: opCount 1 sendbuff 0x1 count 5",
        ("NET/IB : Got completion from peer 10.0.0.2<49577> with error 12, "
         "opcode 0, len 0, vendor err 129"),
        "Call to ibv_create_qp failed",
        "misc/socket.cc:456 -> 2",
        "Bootstrap : Using eth0:10.0.0.1<0>",
        "x",
    };
    static char s1[NCD_LOG_MAX_LINE + 1], s2[NCD_LOG_MAX_LINE + 1];
    char line[256];
    uint64_t x = 12345;
    size_t matched = 0, skipped = 0;
    for (int it = 0; it < 200000; it++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        unsigned p = (unsigned)(x >> 33) % 3000;
        static const char *const lead[] = {"[1,7]<stdout>:", "[rank7]:", ""};
        int n = snprintf(line, sizeof line,
                         "%snode%u:%u:%u [%u] %sNCCL %s %s", lead[p % 3],
                         p / 8, 100000 + p, 200000 + p, p % 8,
                         p % 5 == 0 ? "transport/net_ib.cc:881 " : "",
                         p % 5 == 0 ? "WARN" : "INFO",
                         msgs[(x >> 40) % (sizeof msgs / sizeof msgs[0])]);
        struct ncd_log_line a, b;
        struct ncd__hdr_memo *used;
        const char *raw;
        assert_int_equal(ncd__log_parse_memo(line, (size_t)n, s1, sizeof s1,
                                             &a, m.memo, &used, &raw), 0);
        assert_true(raw == s1 || raw == line);
        assert_memory_equal(raw + (a.text - s1), a.text, a.text_len);
        assert_int_equal(ncd_log_parse(line, (size_t)n, s2, sizeof s2, &b), 0);
        same_line(line, (size_t)n, &a, &b);
        if (!used)
            continue;
        size_t from = ncd__prefilter_quiet(rules, a.text, used->plen - used->k);
        size_t p1 = 0, p2 = 0;
        long r1 = ncd__rules_match(rules, &m, a.text, a.text_len, 0, a.src,
                                   a.src ? a.src_len : 0, &p1);
        long r2 = ncd__rules_match_from(rules, &m, a.text, a.text_len, 0, a.src,
                                        a.src ? a.src_len : 0, &p2, from);
        assert_int_equal(r1, r2);
        if (r1 >= 0)
            assert_int_equal(p1, p2);
        matched += r1 >= 0;
        skipped += from > 0;
    }
    assert_true(matched > 1000); /* the rules' part was exercised */
    assert_true(skipped > 1000);
    ncd__matcher_release(&m);
    ncd_rules_free(rules);
    ncd_ctx_free(ctx);
}

/* (3) ncd__find (internal.h: 16 positions at a time with SSE2) against a
 * plain search, on haystacks of 0..99 bytes in buffers of exactly that
 * size (ASan: no byte read outside), needles of 1..12 bytes from a
 * 3-letter alphabet (many partial matches), blanks in front included. */
static const char *naive_find(const char *h, size_t hl, const char *nd,
                              size_t nl)
{
    for (size_t i = 0; i + nl <= hl; i++)
        if (memcmp(h + i, nd, nl) == 0)
            return h + i;
    return NULL;
}

static void test_find(void **state)
{
    (void)state;
    unsigned seed = 12345;
    for (int it = 0; it < 200000; it++) {
        seed = seed * 1103515245u + 12345u;
        size_t hl = (seed >> 8) % 100, nl = 1 + (seed >> 20) % 12;
        char *h = malloc(hl ? hl : 1), nd[12];
        for (size_t i = 0; i < hl; i++) {
            seed = seed * 1103515245u + 12345u;
            h[i] = "ab "[(seed >> 16) % 3];
        }
        for (size_t i = 0; i < nl; i++) {
            seed = seed * 1103515245u + 12345u;
            nd[i] = "ab "[(seed >> 16) % 3];
        }
        if (hl >= nl && (seed & 1)) { /* plant it somewhere */
            size_t at = (seed >> 9) % (hl - nl + 1);
            memcpy(h + at, nd, nl);
        }
        const char *want = naive_find(h, hl, nd, nl);
        const char *got = ncd__find(h, hl, nd, nl);
        if (got != want)
            fail_msg("find %.*s in %.*s: %td, want %td", (int)nl, nd, (int)hl,
                     h, got ? got - h : -1, want ? want - h : -1);
        free(h);
    }
    assert_null(NCD__FIND("AllReduce: opCoun", 17, "opCount"));
    const char *l = "AllReduce: opCount 1a sendbuff";
    assert_ptr_equal(NCD__FIND(l, strlen(l), "opCount"), l + 11);
    assert_ptr_equal(ncd__find(l, 5, "", 0), l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_find),
        cmocka_unit_test(test_prefix_shapes),
        cmocka_unit_test(test_memo),
        cmocka_unit_test(test_memo_interleaved),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
