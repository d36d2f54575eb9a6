/* SPDX-License-Identifier: MIT */
/*
 * The message catalogue against the rules: every failure format of
 * data/nccl-messages.tsv that NCCL prints in a release from --since (2.18)
 * to the newest is filled with plausible values (printf conversions ->
 * device, interface, address, errno text, numbers) and turned into log
 * lines:
 *
 *   full      the line NCCL writes in that release: WARN
 *             "[ts] host:pid:tid [dev] file.cc:line (func) NCCL WARN msg"
 *             (time stamp from 2.26, "(func)" from 2.30.7), INFO
 *             "host:pid:tid [dev] NCCL INFO msg";
 *   stripped  "NCCL WARN msg" / "NCCL INFO msg": no host header and no
 *             file:line, as log collectors and old formats show it;
 *   bare      "msg" alone (ncclGetLastError() text as nccl-tests and
 *             PyTorch repeat it): reported, not required.
 *
 * Each line is classified by the built-in rules exactly as `explain` does
 * for one input line (ncd_rules_classify) and must be claimed by the rule
 * id or category of the catalogue's `expect` column.  Prints coverage per
 * variant for the newest release and for --since..newest, and the lines
 * that fail.  --lines FILE writes the full and stripped lines for the
 * batch `nccl-doctor explain --json` run of catalog.sh.
 *
 * Usage: explain_catalog [--since 2.18.0] [--lines FILE] [--ids FILE] [--verbose] TSV
 * --ids FILE gets the rule ids the rows expect (for catalog.sh).
 * Exit: 0 all full and stripped lines claimed as expected, 1 otherwise,
 * 77 when the catalogue is missing.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncd/ctx.h"
#include "ncd/explain.h"
#include "ncd/finding.h"

#define MAXREL 256

enum { V_FULL, V_STRIPPED, V_BARE, V__N };
static const char *const vname[V__N] = {"full", "stripped", "bare"};

static char *rel_name[MAXREL];
static int rel_code[MAXREL];
static int nrel;

static int vcode(const char *s)
{
    int a = 0, b = 0, c = 0;
    if (sscanf(s, "%d.%d.%d", &a, &b, &c) < 2)
        return 0;
    return a * 10000 + b * 100 + c;
}

static int rel_index(const char *s, size_t n)
{
    for (int i = 0; i < nrel; i++)
        if (strlen(rel_name[i]) == n && memcmp(rel_name[i], s, n) == 0)
            return i;
    return -1;
}

/* "2.4.2-2.12.12,2.18.1" -> in[] flags; 0, or -1 on a name not listed */
static int parse_ranges(const char *s, unsigned char *in)
{
    memset(in, 0, MAXREL);
    while (*s) {
        const char *e = s + strcspn(s, ",");
        const char *dash = memchr(s, '-', (size_t)(e - s));
        int a = rel_index(s, (size_t)((dash ? dash : e) - s));
        int b = dash ? rel_index(dash + 1, (size_t)(e - dash - 1)) : a;
        if (a < 0 || b < a)
            return -1;
        for (int i = a; i <= b; i++)
            in[i] = 1;
        s = *e ? e + 1 : e;
    }
    return 0;
}

static void unescape(char *s)
{
    char *o = s;
    for (; *s; s++) {
        if (*s == '\\' && s[1]) {
            s++;
            *o++ = *s == 't' ? '\t' : *s == 'n' ? '\n' : *s;
        } else {
            *o++ = *s;
        }
    }
    *o = '\0';
}

static int ends_with_word(const char *pre, size_t n, const char *const *words)
{
    for (size_t w = 0; words[w]; w++) {
        size_t l = strlen(words[w]);
        if (n >= l && strncasecmp(pre + n - l, words[w], l) == 0)
            return 1;
    }
    return 0;
}

/* A plausible value for a %s, from the text just before and after it
 * (scripts/nccl-messages.py fill() makes the same choices). */
static const char *str_value(const char *pre, size_t n, const char *post)
{
    static const char *const err[] = {"failed : ", "failed: ", "error: ", "error : ",
                                      "error ", "returned ", "errno: ", "failed with ",
                                      "err ", "reason: ", NULL};
    static const char *const cuda[] = {"failure '", "error '", "CUDA error ", NULL};
    static const char *const dev[] = {"device ", "HCA ", "dev ", "devName ", "NIC ",
                                      "HCA '", "port ", NULL};
    static const char *const addr[] = {"address ", "addr ", "peer ", "connect to ",
                                       "from ", " to ", "remote ", "host ", "root ",
                                       "with ", "listen ", "socket ", NULL};
    static const char *const path[] = {"file ", "path ", "segment ", "extend ",
                                       "open ", "create ", "map ", "shmPath ", NULL};
    static const char *const iface[] = {"interface ", "IFNAME ", "ifname ", "Using ",
                                        NULL};
    static const char *const var[] = {"NCCL_", "variable ", "env ", NULL};
    static const char *const at_file[] = {"failure ", " at ", NULL};
    static const char *const realpath[] = {"real path of ", NULL};
    static const char *const realpath2[] = {"real path of %s (", NULL};
    static const char *const op[] = {"operation ", NULL};
    static const char *const callto[] = {"Call to ", NULL};
    if (strncmp(post, ":%d", 3) == 0 && (n == 0 || ends_with_word(pre, n, at_file)))
        return "common.cu";
    if (ends_with_word(pre, n, realpath))
        return strncmp(post, " (", 2) == 0 ? "mlx5_0"
                                           : "/sys/class/pci_bus/0000:1b/../../0000:1b:00.0";
    if (ends_with_word(pre, n, realpath2))
        return "/sys/class/infiniband/mlx5_0/device";
    if (strncmp(post, ", using default", 15) == 0 || post[0] == '=')
        return "NCCL_IB_TIMEOUT";
    if (strncmp(post, " shared memory", 14) == 0)
        return "creating";
    if (ends_with_word(pre, n, callto))
        return strncmp(post, " %s", 3) == 0 ? "recv from" : "socket";
    if (ends_with_word(pre, n, op))
        return "Connect";
    if ((n == 0 || (n >= 4 && strncmp(pre + n - 4, " .. ", 4) == 0)) &&
        (strncmp(post, ": Test", 6) == 0 || strncmp(post, " pid ", 5) == 0))
        return "node1";
    if (n == 0)
        return "ncclProxyConnect";
    if (ends_with_word(pre, n, cuda))
        return "invalid argument";
    if (ends_with_word(pre, n, err))
        return "Input/output error";
    if (ends_with_word(pre, n, dev))
        return "mlx5_0";
    if (ends_with_word(pre, n, iface))
        return "eth0";
    if (ends_with_word(pre, n, path))
        return "/dev/shm/nccl-Xq3z9L";
    if (ends_with_word(pre, n, addr))
        return "10.0.0.2<43215>";
    if (ends_with_word(pre, n, var))
        return "IB_HCA";
    return "mlx5_0";
}

/* Fills the printf conversions of fmt (first line only) into out. */
static void fill(const char *fmt, char *out, size_t cap)
{
    size_t o = 0;
#define PUT(s)                                                                 \
    do {                                                                       \
        const char *s_ = (s);                                                  \
        while (*s_ && o + 1 < cap)                                             \
            out[o++] = *s_++;                                                  \
    } while (0)
    for (const char *p = fmt; *p && *p != '\n' && o + 1 < cap;) {
        if (*p != '%') {
            out[o++] = *p++;
            continue;
        }
        const char *q = p + 1;
        while (*q && strchr("-+ #0'", *q))
            q++;
        while (*q == '*' || isdigit((unsigned char)*q))
            q++;
        if (*q == '.') {
            q++;
            while (*q == '*' || isdigit((unsigned char)*q))
                q++;
        }
        char len[3] = "";
        while (*q && strchr("hlLqjzt", *q) && strlen(len) < 2)
            len[strlen(len)] = *q++;
        char conv = *q ? *q++ : '\0';
        switch (conv) {
        case '%':
            PUT("%");
            break;
        case 'd':
        case 'i':
        case 'u':
            PUT(len[0] ? "4194304" : "3");
            break;
        case 'x':
        case 'X':
            PUT(len[0] ? "1b000" : "1b");
            break;
        case 'o':
            PUT("7");
            break;
        case 'p':
            PUT("0x7f5a2c000000");
            break;
        case 'e':
        case 'E':
        case 'f':
        case 'F':
        case 'g':
        case 'G':
        case 'a':
        case 'A':
            PUT("2.50");
            break;
        case 'c':
            PUT("x");
            break;
        case 'm':
            PUT("Input/output error");
            break;
        case 's':
            PUT(str_value(fmt, (size_t)(p - fmt), q));
            break;
        default:
            PUT("?");
        }
        p = q;
    }
#undef PUT
    /* NCCL's trailing blanks and newlines do not survive a log file */
    while (o && (out[o - 1] == ' ' || out[o - 1] == '\n'))
        o--;
    out[o] = '\0';
}

struct counts {
    long total[V__N], ok[V__N];
};

/* Does rule `ri` satisfy `expect` (a rule id or a category name)? */
static int claimed_as(const struct ncd_rules *rules, long ri, const char *expect)
{
    struct ncd_rule_info info;
    if (ri < 0 || ncd_rules_info(rules, (size_t)ri, &info) != 0)
        return 0;
    int cat = ncd_category_parse(expect);
    return cat >= 0 ? (int)info.category == cat : strcmp(info.id, expect) == 0;
}

static const char *rule_id(const struct ncd_rules *rules, long ri)
{
    struct ncd_rule_info info;
    if (ri < 0 || ncd_rules_info(rules, (size_t)ri, &info) != 0)
        return "(no rule)";
    return info.id;
}

enum { C_PROJECT, C_LEVEL, C_FORMAT, C_FILE, C_FUNC, C_VIA, C_RELEASES, C_FIRST,
       C_LAST, C_LINE, C_NOTE, C_EXPECT, C_EXPECT_MSG, C__N };

int main(int argc, char **argv)
{
    const char *since = "2.18.0", *lines_path = NULL, *tsv = NULL, *ids_path = NULL;
    int verbose = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--since") == 0 && i + 1 < argc)
            since = argv[++i];
        else if (strcmp(argv[i], "--lines") == 0 && i + 1 < argc)
            lines_path = argv[++i];
        else if (strcmp(argv[i], "--ids") == 0 && i + 1 < argc)
            ids_path = argv[++i];
        else if (strcmp(argv[i], "--verbose") == 0)
            verbose = 1;
        else
            tsv = argv[i];
    }
    FILE *f = tsv ? fopen(tsv, "r") : NULL;
    if (!f) {
        printf("catalogue %s not found: skipped\n", tsv ? tsv : "(none given)");
        return 77;
    }
    struct ncd_ctx *ctx;
    struct ncd_rules *rules;
    if (ncd_ctx_new("/", NULL, &ctx) < 0 || ncd_rules_new(&rules) < 0 ||
        ncd_rules_load_builtin(ctx, rules) < 0) {
        fprintf(stderr, "cannot load rules: %s\n", ncd_ctx_errdetail(ctx));
        ncd_rules_free(rules);
        ncd_ctx_free(ctx);
        fclose(f);
        return 1;
    }
    FILE *lf = NULL, *idf = NULL;
    if (lines_path && !(lf = fopen(lines_path, "w"))) {
        perror(lines_path);
        return 1;
    }
    if (ids_path && !(idf = fopen(ids_path, "w"))) {
        perror(ids_path);
        return 1;
    }
    int since_code = vcode(since);
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    long rows = 0, bad_rows = 0, shown = 0, dynamic = 0, other_rows = 0, other_ok = 0;
    struct counts all = {0}, newest = {0};
    static struct counts per_rel[MAXREL];
    unsigned char in[MAXREL];
    int fails = 0;
    while ((n = getline(&line, &cap, f)) > 0) {
        if (line[n - 1] == '\n')
            line[--n] = '\0';
        if (strncmp(line, "# releases: ", 12) == 0) {
            char *save = NULL;
            for (char *t = strtok_r(line + 12, " ", &save); t && nrel < MAXREL;
                 t = strtok_r(NULL, " ", &save)) {
                rel_name[nrel] = strdup(t);
                rel_code[nrel++] = vcode(t);
            }
            continue;
        }
        if (line[0] == '#' || strncmp(line, "project\t", 8) == 0)
            continue;
        char *col[C__N];
        int nc = 0;
        char *save = line;
        for (char *c = line; nc < C__N; c++)
            if (*c == '\t' || *c == '\0') {
                int end = *c == '\0';
                *c = '\0';
                col[nc++] = save;
                save = c + 1;
                if (end)
                    break;
            }
        if (nc < C__N) {
            bad_rows++;
            continue;
        }
        unescape(col[C_FORMAT]);
        char msg[2048];
        fill(col[C_FORMAT], msg, sizeof msg);
        const char *expect = col[C_EXPECT], *expect_msg = col[C_EXPECT_MSG];

        if (strcmp(col[C_PROJECT], "nccl") != 0) {
            /* nccl-tests and the frameworks print the line as it is */
            other_rows++;
            long ri = ncd_rules_classify(rules, msg, strlen(msg));
            if (claimed_as(rules, ri, expect)) {
                other_ok++;
            } else {
                fails++;
                printf("FAIL %-10s want %-28s got %-28s %s\n", col[C_PROJECT], expect,
                       rule_id(rules, ri), msg);
            }
            if (lf)
                fprintf(lf, "%s\n", msg);
            if (idf && ncd_category_parse(expect) < 0)
                fprintf(idf, "%s\n", expect);
            continue;
        }
        if (parse_ranges(col[C_RELEASES], in) < 0) {
            fprintf(stderr, "bad releases '%s'\n", col[C_RELEASES]);
            bad_rows++;
            continue;
        }
        int first_sel = -1, last_sel = -1;
        for (int r = 0; r < nrel; r++)
            if (in[r] && (rel_code[r] >= since_code || r == nrel - 1)) {
                if (first_sel < 0)
                    first_sel = r;
                last_sel = r;
            }
        if (first_sel < 0)
            continue;
        rows++;
        const char *level = col[C_LEVEL], *file = col[C_FILE], *func = col[C_FUNC];
        int is_warn = strcmp(level, "WARN") == 0;
        /* a format without a literal of 4+ characters is told only by the
         * file:line of a full line */
        int is_dynamic = strstr(col[C_NOTE], "dynamic") != NULL ||
                         strcmp(expect_msg, "-") == 0;
        dynamic += is_dynamic;

        /* WARN lines in the styles of the first and last selected release:
         * time stamp from 2.26, "(func)" from 2.30.7 */
        char ln[4][2600];
        const char *want[4];
        int kind[4];
        int nl = 0;
        int styles[2] = {rel_code[first_sel], rel_code[last_sel]};
        for (int st = 0; st < (is_warn ? 2 : 1); st++) {
            int c = styles[st];
            if (st == 1 && (c >= 22600) == (styles[0] >= 22600) &&
                (c >= 23007) == (styles[0] >= 23007))
                break;
            if (is_warn)
                snprintf(ln[nl], sizeof ln[0], "%snode1:2345:2399 [3] %s:%s %s%s%sNCCL WARN %s",
                         c >= 22600 ? "[2026-03-04 10:11:12] " : "", file, col[C_LINE],
                         c >= 23007 ? "(" : "", c >= 23007 ? (func[0] ? func : "<unknown>") : "",
                         c >= 23007 ? ") " : "", msg);
            else
                snprintf(ln[nl], sizeof ln[0], "node1:2345:2399 [3] NCCL INFO %s", msg);
            want[nl] = expect;
            kind[nl++] = V_FULL;
        }
        if (!is_dynamic) {
            snprintf(ln[nl], sizeof ln[0], "NCCL %s %s", level, msg);
            want[nl] = expect_msg;
            kind[nl++] = V_STRIPPED;
            snprintf(ln[nl], sizeof ln[0], "%s", msg);
            want[nl] = expect_msg;
            kind[nl++] = V_BARE;
        }
        int ok_v[V__N] = {1, 1, 1};
        int has_v[V__N] = {0, 0, 0};
        for (int k = 0; k < nl; k++) {
            int v = kind[k];
            has_v[v] = 1;
            long ri = ncd_rules_classify(rules, ln[k], strlen(ln[k]));
            if (claimed_as(rules, ri, want[k]))
                continue;
            ok_v[v] = 0;
            if (v != V_BARE) {
                fails++;
                if (shown++ < 200 || verbose)
                    printf("FAIL %-8s want %-28s got %-28s %s\n", vname[v], want[k],
                           rule_id(rules, ri), ln[k]);
            } else if (verbose) {
                printf("bare     want %-28s got %-28s %s\n", want[k], rule_id(rules, ri), ln[k]);
            }
        }
        for (int k = 0; lf && k < nl; k++)
            if (kind[k] != V_BARE)
                fprintf(lf, "%s\n", ln[k]);
        if (idf) {
            if (ncd_category_parse(expect) < 0)
                fprintf(idf, "%s\n", expect);
            if (!is_dynamic && ncd_category_parse(expect_msg) < 0)
                fprintf(idf, "%s\n", expect_msg);
        }
        for (int v = 0; v < V__N; v++) {
            if (!has_v[v])
                continue;
            all.total[v]++;
            all.ok[v] += ok_v[v];
            if (in[nrel - 1]) {
                newest.total[v]++;
                newest.ok[v] += ok_v[v];
            }
            for (int r = first_sel; r <= last_sel; r++)
                if (in[r]) {
                    per_rel[r].total[v]++;
                    per_rel[r].ok[v] += ok_v[v];
                }
        }
    }
    free(line);
    fclose(f);
    if ((lf && fclose(lf) != 0) || (idf && fclose(idf) != 0)) {
        perror("output");
        return 1;
    }
    if (!nrel || !rows) {
        printf("catalogue has no releases or no NCCL rows: failed\n");
        return 1;
    }
    printf("catalogue rows (format, file, function) in NCCL %s..%s: %ld (%ld told only by "
           "their file)%s\n",
           since, rel_name[nrel - 1], rows, dynamic, bad_rows ? "; some rows malformed" : "");
    for (int r = 0; r < nrel; r++)
        if (per_rel[r].total[0])
            printf("  %-8s full %ld/%ld  stripped %ld/%ld  bare %ld/%ld\n", rel_name[r],
                   per_rel[r].ok[V_FULL], per_rel[r].total[V_FULL],
                   per_rel[r].ok[V_STRIPPED], per_rel[r].total[V_STRIPPED],
                   per_rel[r].ok[V_BARE], per_rel[r].total[V_BARE]);
    for (int v = 0; v < V__N; v++)
        printf("coverage %-8s: %s..%s %ld/%ld (%.1f%%), newest %s %ld/%ld (%.1f%%)%s\n",
               vname[v], since, rel_name[nrel - 1], all.ok[v], all.total[v],
               all.total[v] ? 100.0 * all.ok[v] / all.total[v] : 0, rel_name[nrel - 1],
               newest.ok[v], newest.total[v],
               newest.total[v] ? 100.0 * newest.ok[v] / newest.total[v] : 0,
               v == V_BARE ? " (reported only)" : "");
    printf("other projects (nccl-tests, PyTorch, Gloo, Horovod, vLLM, Ray, Paddle): %ld/%ld\n", other_ok, other_rows);
    ncd_rules_free(rules);
    ncd_ctx_free(ctx);
    for (int r = 0; r < nrel; r++)
        free(rel_name[r]);
    if (bad_rows)
        return 1;
    return fails ? 1 : 0;
}
