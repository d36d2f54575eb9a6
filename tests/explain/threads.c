/* SPDX-License-Identifier: MIT */
/*
 * explain with several threads gives the report of one thread, byte for
 * byte: findings (ids, roles, evidence, first-seen), facts and stats.
 * Runs the threaded block reader (ncd__explain_feed_fd) with 2..4 threads
 * and block sizes from 1 byte to 1 MiB against the serial scan
 * (ncd_explain_feed) on every log of the corpus (argument 1, when present)
 * and on generated logs that mix launcher prefixes, NCCL versions (rules
 * that apply to some only), WARNs, nccl-tests lines, JSON-wrapped lines,
 * runs of a process's lines that take no fact, COLL lines before and after
 * its init completed, host names longer than a run record keeps,
 * CRLF, empty lines, lines longer than NCD_LOG_MAX_LINE and a last line
 * without '\n'; then ncd_explain_feed_path() on a file large enough for
 * the threaded path, as the CLI reads it.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "explain/session.h"
#include "ncd/ctx.h"
#include "ncd/explain.h"

static struct ncd_ctx *ctx;
static struct ncd_rules *rules;
static int failures;

/* Everything a scan reports, as one string (caller frees). */
static char *outcome(struct ncd_explain *ex)
{
    struct ncd_findings fl = {0};
    if (ncd_explain_finish(ex, &fl) < 0)
        return strdup("finish failed");
    json_t *j = ncd_explain_report_json(ex, &fl, 1, NULL);
    char *js = j ? json_dumps(j, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(j);
    struct ncd_strbuf sb = {0};
    struct ncd_text_style st = {0};
    st.verbose = 1;
    ncd_explain_report_text(ex, &fl, &st, 1, &sb);
    ncd_explain_facts_text(ex, &sb);
    unsigned long long b, l, n;
    ncd_explain_stats(ex, &b, &l, &n);
    for (size_t i = 0; i < fl.n; i++) {
        double ts;
        int rank;
        ncd_explain_first_seen(ex, i, &ts, &rank);
        ncd_sb_printf(&sb, "%zu %s %.6f %d\n", i,
                      ncd_rule_role_name(ncd_explain_role(ex, i)), ts, rank);
    }
    ncd_sb_printf(&sb, "stats %llu %llu %llu\n%s", b, l, n, js ? js : "");
    free(js);
    ncd_findings_release(&fl);
    char *s = strdup(ncd_sb_str(&sb));
    ncd_sb_release(&sb);
    return s;
}

static char *serial(const char *buf, size_t len)
{
    struct ncd_explain *ex;
    if (ncd_explain_new(ctx, rules, &ex) < 0)
        abort();
    ncd_explain_begin(ex, "log");
    for (size_t o = 0; o < len; o += 65536)
        ncd_explain_feed(ex, buf + o, len - o < 65536 ? len - o : 65536);
    ncd_explain_end(ex);
    char *s = outcome(ex);
    ncd_explain_free(ex);
    return s;
}

static char *threaded(int fd, size_t len, int threads, size_t block)
{
    struct ncd_explain *ex;
    if (ncd_explain_new(ctx, rules, &ex) < 0)
        abort();
    ex->block = block;
    ncd_explain_set_threads(ex, threads);
    ncd_explain_begin(ex, "log");
    if (ncd__explain_feed_fd(ex, fd, len) != 0)
        abort();
    ncd_explain_end(ex);
    char *s = outcome(ex);
    ncd_explain_free(ex);
    return s;
}

static void first_diff(const char *a, const char *b)
{
    size_t i = 0;
    while (a[i] && a[i] == b[i])
        i++;
    size_t from = i > 80 ? i - 80 : 0;
    fprintf(stderr, "  serial:   ...%.160s\n  threaded: ...%.160s\n", a + from,
            b + from);
}

/* The log in buf against every thread count and block size. */
static void check(const char *name, const char *buf, size_t len)
{
    char path[] = "/tmp/ncd-threads-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0 || write(fd, buf, len) != (ssize_t)len) {
        perror("temp file");
        exit(1);
    }
    unlink(path);
    char *want = serial(buf, len);
    static const size_t blocks[] = {1, 7, 100, 4096, 65536, NCD__BLOCK};
    int n = 0;
    for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++) {
        if (blocks[b] < 100 && len > 200000)
            continue; /* a block per byte: slow on big logs */
        for (int t = 2; t <= 4; t++, n++) {
            char *got = threaded(fd, len, t, blocks[b]);
            if (strcmp(want, got) != 0) {
                fprintf(stderr, "FAIL %s: %d threads, block %zu differs\n", name,
                        t, blocks[b]);
                first_diff(want, got);
                failures++;
            }
            free(got);
        }
    }
    close(fd);
    free(want);
    printf("ok   %s (%zu bytes, %d runs)\n", name, len, n);
}

static unsigned long long rng = 0x9E3779B97F4A7C15ull;
static unsigned rnd(unsigned n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng % n);
}

/* A generated log of about `size` bytes (caller frees). */
static char *generate(size_t size, size_t *len)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    static const char *const versions[] = {"2.19.3", "2.21.5", "2.3.7"};
    while (f && (size_t)ftell(f) < size) {
        int r = (int)rnd(24), kind = (int)rnd(40);
        char p[64];
        switch (r % 5) {
        case 0: p[0] = '\0'; break;
        case 1: snprintf(p, sizeof p, "[1,%d]<stdout>:", r); break;
        case 2: snprintf(p, sizeof p, "[rank%d]:", r); break;
        case 3: snprintf(p, sizeof p, "%d: ", r); break;
        default: snprintf(p, sizeof p, "(pid=%d, ip=10.0.0.9) ", r); break;
        }
        char h[160];
        /* one process in 6 on a host name longer than the 64 bytes a run
         * of inert lines keeps (explain.c, RUN_HOST_MAX) */
        snprintf(h, sizeof h, "%s%snode%d:%d:%d [%d]", p,
                 r % 6 == 5 ? "a-host-name-longer-than-sixty-four-bytes-"
                              "for-the-run-records."
                            : "",
                 r / 8, 1000 + r, 2000 + r, r % 8);
        switch (kind) {
        case 0:
            fprintf(f, "%s NCCL INFO NCCL version %s+cuda12.4\n", h,
                    versions[r % 3]);
            break;
        case 1:
            fprintf(f, "%s NCCL INFO Using network IB\n", h);
            break;
        case 2:
            fprintf(f, "\n%s misc/socket.cc:538 NCCL WARN socketProgress: "
                       "Connection closed by remote peer node%d<55426>\n",
                    h, r);
            break;
        case 3:
            fprintf(f, "\n[2025-05-06 07:08:%02d] %s transport/net_ib.cc:881 "
                       "NCCL WARN NET/IB : Got completion from peer "
                       "10.0.0.2<49577> with error 12\n",
                    rnd(60), h);
            break;
        case 4:
            fprintf(f, "%s NCCL INFO Bootstrap : Using eth%d:10.0.0.%d<0>\r\n", h,
                    r % 2, r);
            break;
        case 5: {
            int big = NCD_LOG_MAX_LINE + (int)rnd(3 * NCD_LOG_MAX_LINE);
            fprintf(f, "%s NCCL INFO ", h);
            for (int i = 0; i < big; i++)
                fputc("abc via NET/IB/0 "[i % 17], f);
            /* a message stuck to the line's end: after a progress bar's
             * '\r', or after plain text (read from a word boundary) */
            if (r % 3)
                fprintf(f, "%c%s NCCL WARN NET/IB : Got completion from peer "
                           "10.0.0.%d<49577> with error 12",
                        r % 3 == 1 ? '\r' : ' ', h, r);
            fputs(r % 4 == 3 ? "\r\n" : "\n", f);
            break;
        }
        case 6:
            fprintf(f, "#  Rank %2d Group  0 Pid %d on node%d device %d "
                       "[0x1b] NVIDIA H100\n",
                    r, 1000 + r, r / 8, r % 8);
            break;
        case 7:
            fprintf(f, "[rank%d]:[E ProcessGroupNCCL.cpp:563] [Rank %d] "
                       "Watchdog caught collective operation timeout: "
                       "WorkNCCL(SeqNum=%u, OpType=ALLREDUCE, NumelIn=1, "
                       "NumelOut=1, Timeout(ms)=600000) ran for 600041 "
                       "milliseconds before timing out.\n",
                    r, r, 100 + rnd(3));
            break;
        case 8:
            fprintf(f, "{\"log\":\"%s NCCL INFO NCCL_SOCKET_IFNAME set by "
                       "environment to eth%d\\n\",\"stream\":\"stdout\","
                       "\"time\":\"2024-05-06T07:08:%02dZ\"}\n",
                    h, r % 3, rnd(60));
            break;
        case 9:
            fprintf(f, "%s NCCL INFO comm 0x%x rank %d nRanks 24 nNodes 3 "
                       "localRanks 8 localRank %d MNNVL 0\n",
                    h, r, r, r % 8);
            break;
        case 10:
            fprintf(f, "\n");
            break;
        case 11:
            fprintf(f, "%d[%d] -> %d[%d] [send] via NET/IB/0/GDRDMA\n", r, r % 8,
                    (r + 1) % 24, (r + 1) % 8);
            break;
        case 12:
            fprintf(f, "%s NCCL INFO NET : Using interface ib0:10.0.1.%d<0>\n", h,
                    r);
            break;
        case 13: /* a process's lines that take no fact, in a row: runs */
        case 14:
        case 15:
            for (unsigned i = 0, k = 1 + rnd(12); i < k; i++)
                fprintf(f, "%s NCCL INFO %s\n", h,
                        i % 3 == 0   ? "+ PCI[24.0] - GPU/18000 (0)"
                        : i % 3 == 1 ? "Ring 00 : 1 -> 0 -> 1"
                                     : "threadThresholds 8/8/64 | 512");
            break;
        case 16: /* COLL lines: "running" once init completed */
        case 17:
            fprintf(f, "%s NCCL INFO AllReduce: opCount %x sendbuff 0x7f "
                       "recvbuff 0x7f count 8 datatype 7 op 0 root 0 comm "
                       "0x55 [nranks=24] stream 0x55\n",
                    h, rnd(100));
            break;
        case 18:
            fprintf(f, "%s NCCL INFO comm 0x55 rank %d nranks 24 cudaDev %d "
                       "busId 1b000 commId 0x1 - Init COMPLETE\n",
                    h, r, r % 8);
            break;
        default:
            fprintf(f, "%s NCCL INFO Channel %02u/0 : %d[%d] -> %d[%d] via "
                       "P2P/IPC/read\n",
                    h, rnd(32), r, r % 8, (r + 1) % 24, (r + 1) % 8);
            break;
        }
    }
    if (f)
        fprintf(f, "node1:1:2 [0] NCCL INFO last line without a newline");
    if (!f || fclose(f) != 0)
        abort();
    *len = n;
    return buf;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t n = 0;
    FILE *m = open_memstream(&buf, &n);
    char tmp[65536];
    size_t k;
    while (m && (k = fread(tmp, 1, sizeof tmp, f)) > 0)
        fwrite(tmp, 1, k, m);
    fclose(f);
    if (!m)
        return NULL;
    fclose(m);
    *len = n;
    return buf;
}

/* The CLI's way in: a file big enough for the threaded reader. */
static void check_path(void)
{
    size_t len;
    char *buf = generate((size_t)5 << 20, &len);
    char path[] = "/tmp/ncd-threads-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0 || write(fd, buf, len) != (ssize_t)len) {
        perror("temp file");
        exit(1);
    }
    close(fd);
    char *out[2];
    for (int t = 0; t < 2; t++) {
        struct ncd_explain *ex;
        struct ncd_explain_inputs in = {0};
        if (ncd_explain_new(ctx, rules, &ex) < 0)
            abort();
        ncd_explain_set_threads(ex, t + 1);
        if (ncd_explain_feed_path(ex, path, &in) != 0 || in.nread != 1)
            abort();
        out[t] = outcome(ex);
        ncd_explain_free(ex);
    }
    /* the source is named after the path in both */
    if (strcmp(out[0], out[1]) != 0) {
        fprintf(stderr, "FAIL feed_path: 2 threads differ from 1\n");
        first_diff(out[0], out[1]);
        failures++;
    } else {
        printf("ok   feed_path, %zu bytes, 1 and 2 threads\n", len);
    }
    unlink(path);
    free(out[0]);
    free(out[1]);
    free(buf);
}

/* The process table's index grows (1,024 slots at first, doubling at half
 * load): 5,000 processes on 50 hosts, each seen twice, in two different
 * orders, must stay 5,000 processes, each found again with its own
 * facts. */
static void check_procs(void)
{
    enum { NPROC = 5000 };
    struct ncd_strbuf sb = {0};
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < NPROC; i++) {
            int k = pass ? NPROC - 1 - i : i;
            ncd_sb_printf(&sb, "host%d:%d:%d [0] NCCL INFO %s\n", k % 50,
                          1000 + k, 1000 + k,
                          pass ? "NCCL version 2.21.5+cuda12.4"
                               : "Bootstrap : Using eth0:10.0.0.1<0>");
        }
    struct ncd_explain *ex;
    if (ncd_explain_new(ctx, rules, &ex) < 0)
        abort();
    ncd_explain_begin(ex, "procs");
    ncd_explain_feed(ex, ncd_sb_str(&sb), strlen(ncd_sb_str(&sb)));
    ncd_explain_end(ex);
    int bad = ex->nprocs != NPROC;
    for (size_t i = 0; i < ex->nprocs && !bad; i++) {
        const struct ncd__proc *p = &ex->procs[i];
        char host[16];
        snprintf(host, sizeof host, "host%ld", (p->pid - 1000) % 50);
        bad = p->hostlen != strlen(host) || memcmp(p->host, host, p->hostlen) ||
              strcmp(p->version, "2.21.5") != 0;
    }
    if (bad) {
        fprintf(stderr, "FAIL procs: %zu processes (want %d) or a process "
                        "lost its facts\n", ex->nprocs, (int)NPROC);
        failures++;
    } else {
        printf("ok   procs (%d processes, index of %u slots)\n", (int)NPROC,
               ex->phash_mask + 1);
    }
    ncd_explain_free(ex);
    ncd_sb_release(&sb);
}

int main(int argc, char **argv)
{
    if (ncd_ctx_new("/", NULL, &ctx) < 0 || ncd_rules_new(&rules) < 0 ||
        ncd_rules_load_builtin(ctx, rules) < 0) {
        fprintf(stderr, "cannot load rules\n");
        return 1;
    }
    DIR *d = argc > 1 ? opendir(argv[1]) : NULL;
    struct dirent *de;
    int ncorpus = 0;
    while (d && (de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s/log.txt", argv[1], de->d_name);
        size_t len;
        char *buf = slurp(path, &len);
        if (!buf)
            continue;
        check(de->d_name, buf, len);
        free(buf);
        ncorpus++;
    }
    if (d)
        closedir(d);
    if (!ncorpus)
        printf("corpus not found (%s): generated logs only\n",
               argc > 1 ? argv[1] : "no path");
    static const size_t sizes[] = {1000, 30000, 300000, 3000000};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t len;
        char *buf = generate(sizes[i], &len);
        char name[64];
        snprintf(name, sizeof name, "generated-%zu", sizes[i]);
        check(name, buf, len);
        free(buf);
    }
    /* lines of 1-3 bytes that the apply step needs ('N', '#', 'e'
     * start an env dump, an nccl-tests line or an export), mixed with a
     * WARN and short NCCL lines of two processes that take no fact (runs
     * of them cross as one record, LREC_INERT): kept at 8 bytes each, a
     * 64 KiB or larger block of them outgrows its arena, also while a run
     * is open, and the apply step scans the rest itself */
    {
        static const char *const tiny[] = {"N\n", "#\n", "e\n", "NN\n",
                                           "\n", "x\n",
                                           "a:1:2 [0] NCCL INFO x\n",
                                           "b:1:2 [0] NCCL INFO y\n"};
        size_t cap = 600000, len = 0;
        char *buf = malloc(cap + 256);
        while (len < cap) {
            const char *t = tiny[rnd(200) ? rnd(6) : 6 + rnd(2)];
            memcpy(buf + len, t, strlen(t));
            len += strlen(t);
            if (rnd(5000) == 0)
                len += (size_t)sprintf(buf + len,
                                       "node1:1:2 [0] NCCL WARN Call to "
                                       "connect returned Connection refused, "
                                       "retrying\n");
        }
        check("tiny-lines", buf, len);
        free(buf);
    }
    check_path();
    check_procs();
    ncd_rules_free(rules);
    ncd_ctx_free(ctx);
    printf("%s\n", failures ? "FAILED" : "all identical");
    return failures != 0;
}
