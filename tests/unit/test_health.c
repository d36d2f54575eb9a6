/* SPDX-License-Identifier: MIT */
/*
 * Health-check renderers (ncd/health.h) and the atomic file writer
 * (readall.h): the Prometheus text is read back by a strict parser of the
 * exposition format (0.0.4, as node_exporter's textfile collector reads
 * it: HELP/TYPE before a family's samples, families contiguous, no
 * duplicate series, escapes \\ \" \n only, no timestamps); the Slurm and
 * NPD lines keep their length limits on long and multi-byte titles.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ncd/health.h"
#include "ncd/readall.h"
#include "ncd/report.h"

/* ---- a strict reader of the text exposition format ---------------- */

#define MAXS 512
struct expo {
    char fam[64][80];   /* families in order */
    int typed[64];
    int nfam;
    char series[MAXS][200]; /* name{labels} seen */
    double value[MAXS];
    int ns;
    char err[200];
};

static int name_ok(const char *s, size_t n, int metric)
{
    if (!n)
        return 0;
    for (size_t i = 0; i < n; i++) {
        int c = (unsigned char)s[i];
        int ok = isalpha(c) || c == '_' || (metric && c == ':') ||
                 (i > 0 && isdigit(c));
        if (!ok)
            return 0;
    }
    return 1;
}

static int fam_index(struct expo *e, const char *name, size_t n)
{
    for (int i = 0; i < e->nfam; i++)
        if (strlen(e->fam[i]) == n && !strncmp(e->fam[i], name, n))
            return i;
    return -1;
}

static int bad(struct expo *e, int line, const char *why)
{
    snprintf(e->err, sizeof e->err, "line %d: %s", line, why);
    return -1;
}

/* Parses text; 0, or -1 with e->err. */
static int expo_parse(const char *text, struct expo *e)
{
    memset(e, 0, sizeof *e);
    size_t len = strlen(text);
    if (!len || text[len - 1] != '\n')
        return bad(e, 0, "does not end with a newline");
    int ln = 0, cur = -1;
    for (const char *l = text; *l;) {
        const char *nl = strchr(l, '\n');
        size_t n = (size_t)(nl - l);
        ln++;
        char line[1024];
        if (n >= sizeof line)
            return bad(e, ln, "line too long");
        memcpy(line, l, n);
        line[n] = '\0';
        l = nl + 1;
        if (!n)
            return bad(e, ln, "empty line");
        if (line[0] == '#') {
            int help = !strncmp(line, "# HELP ", 7);
            int type = !strncmp(line, "# TYPE ", 7);
            if (!help && !type)
                return bad(e, ln, "comment that is neither HELP nor TYPE");
            const char *nm = line + 7;
            size_t nn = strcspn(nm, " ");
            if (!name_ok(nm, nn, 1) || nm[nn] != ' ')
                return bad(e, ln, "bad metric name in HELP/TYPE");
            int f = fam_index(e, nm, nn);
            if (f < 0) {
                if (e->nfam == 64)
                    return bad(e, ln, "too many families");
                f = e->nfam++;
                snprintf(e->fam[f], sizeof e->fam[f], "%.*s", (int)nn, nm);
            } else if (f != cur) {
                return bad(e, ln, "family split");
            }
            cur = f;
            const char *rest = nm + nn + 1;
            if (type) {
                if (e->typed[f])
                    return bad(e, ln, "second TYPE");
                if (strcmp(rest, "gauge") && strcmp(rest, "counter") &&
                    strcmp(rest, "untyped") && strcmp(rest, "summary") &&
                    strcmp(rest, "histogram"))
                    return bad(e, ln, "unknown type");
                e->typed[f] = 1;
            } else {
                for (const char *p = rest; *p; p++)
                    if (*p == '\\' && p[1] != '\\' && p[1] != 'n')
                        return bad(e, ln, "bad escape in HELP");
                    else if (*p == '\\')
                        p++;
            }
            continue;
        }
        size_t nn = strcspn(line, "{ ");
        if (!name_ok(line, nn, 1))
            return bad(e, ln, "bad metric name");
        int f = fam_index(e, line, nn);
        if (f < 0 || !e->typed[f])
            return bad(e, ln, "sample before its TYPE");
        if (f != cur)
            return bad(e, ln, "sample outside its family's block");
        char key[200];
        size_t k = 0;
        const char *p = line + nn;
        if (*p == '{') {
            p++;
            while (*p != '}') {
                size_t ln_ = strcspn(p, "=");
                if (!name_ok(p, ln_, 0) || !strncmp(p, "__", 2) ||
                    p[ln_] != '=' || p[ln_ + 1] != '"')
                    return bad(e, ln, "bad label name");
                p += ln_ + 2;
                while (*p != '"') {
                    if (!*p)
                        return bad(e, ln, "unterminated label value");
                    if (*p == '\\') {
                        if (p[1] != '\\' && p[1] != '"' && p[1] != 'n')
                            return bad(e, ln, "bad escape in label value");
                        p++;
                    }
                    p++;
                }
                p++;
                if (*p == ',')
                    p++;
                else if (*p != '}')
                    return bad(e, ln, "bad label separator");
            }
            p++;
        }
        k = (size_t)(p - line);
        if (k >= sizeof key)
            return bad(e, ln, "series too long");
        memcpy(key, line, k);
        key[k] = '\0';
        if (*p++ != ' ')
            return bad(e, ln, "no blank before the value");
        char *end;
        double v = strtod(p, &end);
        if (end == p || (*end && *end != ' '))
            return bad(e, ln, "bad value");
        if (*end == ' ')
            return bad(e, ln, "timestamp (the textfile collector refuses "
                              "them)");
        for (int i = 0; i < e->ns; i++)
            if (!strcmp(e->series[i], key))
                return bad(e, ln, "duplicate series");
        if (e->ns == MAXS)
            return bad(e, ln, "too many samples");
        snprintf(e->series[e->ns], sizeof e->series[0], "%s", key);
        e->value[e->ns++] = v;
    }
    return 0;
}

static double expo_get(const struct expo *e, const char *key)
{
    for (int i = 0; i < e->ns; i++)
        if (!strcmp(e->series[i], key))
            return e->value[i];
    return NAN;
}

static void test_parser_rejects(void **state)
{
    (void)state;
    static const char *const badtexts[] = {
        "a 1\n",                                       /* no TYPE */
        "# TYPE a gauge\na 1",                         /* no final newline */
        "# TYPE a gauge\na 1\na 2\n",                  /* duplicate */
        "# TYPE a gauge\na 1 1700000000\n",            /* timestamp */
        "# TYPE a gauge\na{x=\"\\t\"} 1\n",            /* bad escape */
        "# TYPE a gauge\n# TYPE b gauge\nb 1\na 1\n",  /* split family */
        "# TYPE a gauge\na{__x=\"1\"} 1\n",            /* reserved label */
        "# TYPE a gauge\na{x=\"1\" 1\n",               /* unterminated */
        "# TYPE a gauge\na one\n",                     /* bad value */
        "# a comment\n",                               /* stray comment */
    };
    struct expo *e = malloc(sizeof *e);
    assert_non_null(e);
    for (size_t i = 0; i < sizeof badtexts / sizeof badtexts[0]; i++)
        assert_int_equal(expo_parse(badtexts[i], e), -1);
    assert_int_equal(expo_parse("# HELP a x\\\\y\n# TYPE a gauge\n"
                                "a{x=\"q\\\"\\n\"} +Inf\n",
                                e),
                     0);
    free(e);
}

/* ---- the renderers ------------------------------------------------- */

static const char *const checks[] = {"netif", "shm", "rdma", NULL};

static void sample(struct ncd_findings *l)
{
    struct ncd_finding *f;
    f = ncd_findings_add(l, "shm.small", NCD_CAT_SYS_SHM, NCD_SEV_ERROR,
                         "/dev/shm is 64 MiB");
    f->check = "shm";
    f = ncd_findings_add(l, "netif.docker", NCD_CAT_NET_IFACE_CHOICE,
                         NCD_SEV_WARNING, "NCCL would pick docker0");
    f->check = "netif";
    f = ncd_findings_add(l, "tool.check-failed", NCD_CAT_SYS_VIRT,
                         NCD_SEV_WARNING, "check 'rdma' could not run");
    f->check = "rdma";
    f = ncd_findings_add(l, "netif.ok", NCD_CAT_NET_IFNAME, NCD_SEV_OK, "ok");
    f->check = "netif";
    ncd_findings_sort(l);
}

static void test_prometheus(void **state)
{
    (void)state;
    struct ncd_findings l = {0};
    sample(&l);
    struct ncd_health_run r = {.findings = &l,
                               .checks = checks,
                               .nccl_version = 22809,
                               .nccl_version_source = "/usr/lib/\"x\"\\y",
                               .time_s = 1700000000.25};
    struct ncd_strbuf sb = {0};
    ncd_health_prometheus(&r, &sb);
    struct expo *e = malloc(sizeof *e);
    assert_non_null(e);
    if (expo_parse(ncd_sb_str(&sb), e))
        fail_msg("%s\n%s", e->err, ncd_sb_str(&sb));
    assert_true(expo_get(e, "nccl_doctor_up") == 1);
    assert_true(expo_get(e, "nccl_doctor_last_run_timestamp_seconds") ==
                1700000000.25);
    assert_true(expo_get(e, "nccl_doctor_worst_severity") == 3);
    assert_true(expo_get(e, "nccl_doctor_findings{category=\"sys.shm\","
                            "severity=\"error\"}") == 1);
    assert_true(expo_get(e, "nccl_doctor_findings{category=\"sys.shm\","
                            "severity=\"warning\"}") == 0);
    assert_true(expo_get(e, "nccl_doctor_findings{category=\"net.iface-"
                            "choice\",severity=\"warning\"}") == 1);
    /* ok findings are not counted as findings of a problem */
    assert_true(expo_get(e, "nccl_doctor_findings{category=\"net.ifname\","
                            "severity=\"info\"}") == 0);
    assert_true(expo_get(e, "nccl_doctor_check_severity{check=\"shm\"}") == 3);
    assert_true(expo_get(e, "nccl_doctor_check_severity{check=\"netif\"}") ==
                2);
    assert_true(expo_get(e, "nccl_doctor_check_up{check=\"rdma\"}") == 0);
    assert_true(expo_get(e, "nccl_doctor_check_up{check=\"netif\"}") == 1);
    char info[200];
    snprintf(info, sizeof info,
             "nccl_doctor_info{version=\"%s\",nccl_version=\"2.28.9\","
             "nccl_version_source=\"/usr/lib/\\\"x\\\"\\\\y\"}",
             ncd_version());
    assert_true(expo_get(e, info) == 1);
    /* 21 categories x 3 severities, whatever was found */
    int nf = 0;
    for (int i = 0; i < e->ns; i++)
        nf += !strncmp(e->series[i], "nccl_doctor_findings{", 21);
    assert_int_equal(nf, 21 * 3);

    /* a failed run: up 0, no stale findings */
    ncd_sb_reset(&sb);
    r.findings = NULL;
    r.error = "out of memory";
    ncd_health_prometheus(&r, &sb);
    if (expo_parse(ncd_sb_str(&sb), e))
        fail_msg("%s", e->err);
    assert_true(expo_get(e, "nccl_doctor_up") == 0);
    assert_true(isnan(expo_get(e, "nccl_doctor_worst_severity")));
    free(e);
    ncd_sb_release(&sb);
    ncd_findings_release(&l);
}

static void test_slurm_npd(void **state)
{
    (void)state;
    struct ncd_findings l = {0};
    sample(&l);
    struct ncd_health_run r = {.findings = &l, .checks = checks};
    struct ncd_strbuf sb = {0};
    assert_int_equal(ncd_health_slurm(&r, &sb), NCD_HEALTH_SLURM_DRAIN);
    assert_string_equal(ncd_sb_str(&sb),
                        "nccl-doctor: /dev/shm is 64 MiB [sys.shm]\n");
    ncd_sb_reset(&sb);
    r.strict = 1; /* the two warnings count too */
    ncd_health_slurm(&r, &sb);
    assert_string_equal(ncd_sb_str(&sb),
                        "nccl-doctor: /dev/shm is 64 MiB (+2 more) "
                        "[sys.shm]\n");
    ncd_sb_reset(&sb);
    assert_int_equal(ncd_health_npd(&r, &sb), NCD_HEALTH_NPD_PROBLEM);
    assert_string_equal(ncd_sb_str(&sb),
                        "/dev/shm is 64 MiB (+2 more) [sys.shm]\n");

    /* a long title with multi-byte characters and a newline: cut on a
     * character boundary, one line, within the limits */
    struct ncd_findings big = {0};
    struct ncd_finding *f = ncd_findings_add(
        &big, "x", NCD_CAT_NET_IB, NCD_SEV_ERROR, "%s",
        "Port mlx5_0/1 is DOWN\nand the ÄÖÜ fabric — ∑ errors ∑ errors ∑ "
        "errors ∑ errors ∑ errors ∑ errors ∑ errors ∑ errors ∑ errors ∑");
    assert_non_null(f);
    r.findings = &big;
    r.strict = 0;
    for (int fmt = 0; fmt < 2; fmt++) {
        ncd_sb_reset(&sb);
        int st = fmt ? ncd_health_npd(&r, &sb) : ncd_health_slurm(&r, &sb);
        assert_int_equal(st, 1);
        const char *s = ncd_sb_str(&sb);
        size_t n = strlen(s), max = fmt ? NCD_HEALTH_NPD_MAX
                                        : NCD_HEALTH_SLURM_MAX;
        assert_true(n - 1 <= max);
        assert_true(n - 1 >= max - 3); /* filled, not cut short */
        assert_int_equal(s[n - 1], '\n');
        assert_null(memchr(s, '\n', n - 1));
        assert_non_null(strstr(s, "... [net.ib]\n"));
        char *c = strdup(s); /* valid UTF-8: nothing to replace */
        ncd_utf8_sanitize(c);
        assert_string_equal(c, s);
        free(c);
    }

    /* healthy: no reason, status 0; NPD says so */
    struct ncd_findings ok = {0};
    ncd_findings_add(&ok, "w", NCD_CAT_PERF_CONFIG, NCD_SEV_WARNING, "w");
    r.findings = &ok;
    ncd_sb_reset(&sb);
    assert_int_equal(ncd_health_slurm(&r, &sb), NCD_HEALTH_SLURM_OK);
    assert_int_equal(sb.len, 0);
    assert_int_equal(ncd_health_npd(&r, &sb), NCD_HEALTH_NPD_OK);
    assert_string_equal(ncd_sb_str(&sb), "NCCL node checks pass (1 warning)\n");

    /* the run failed: drain (NHC) / unknown (NPD), saying why */
    r.findings = NULL;
    r.error = "cannot open the sysroot";
    ncd_sb_reset(&sb);
    assert_int_equal(ncd_health_slurm(&r, &sb), NCD_HEALTH_SLURM_DRAIN);
    assert_string_equal(ncd_sb_str(&sb), "nccl-doctor: could not check the "
                                         "node: cannot open the sysroot\n");
    ncd_sb_reset(&sb);
    assert_int_equal(ncd_health_npd(&r, &sb), NCD_HEALTH_NPD_UNKNOWN);
    ncd_sb_release(&sb);
    ncd_findings_release(&l);
    ncd_findings_release(&big);
    ncd_findings_release(&ok);
}

/* ---- ncd_write_file_atomic ---------------------------------------- */

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
    closedir(d);
    return n;
}

static void test_atomic_write(void **state)
{
    (void)state;
    char dir[] = "/tmp/ncd-health.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128], bad[160];
    snprintf(path, sizeof path, "%s/nccl.prom", dir);
    assert_int_equal(ncd_write_file_atomic(path, "a 1\n", 4, 0644), 0);
    assert_int_equal(ncd_write_file_atomic(path, "b 2\n", 4, 0644), 0);
    struct ncd_rdbuf b = {0};
    assert_int_equal(ncd_read_file(path, &b), 0);
    assert_string_equal(b.data, "b 2\n");
    ncd_rdbuf_release(&b);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0644);
    assert_int_equal(count_entries(dir), 1); /* no temporary file left */
    /* a missing directory: error, nothing written anywhere */
    snprintf(bad, sizeof bad, "%s/missing/x.prom", dir);
    assert_int_equal(ncd_write_file_atomic(bad, "c", 1, 0644), -1);
    assert_int_equal(errno, ENOENT);
    /* a directory as the target: the old content stays, no leftovers */
    snprintf(bad, sizeof bad, "%s/sub", dir);
    assert_int_equal(mkdir(bad, 0755), 0);
    assert_int_equal(ncd_write_file_atomic(bad, "c", 1, 0644), -1);
    assert_int_equal(count_entries(dir), 2);
    rmdir(bad);
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parser_rejects),
        cmocka_unit_test(test_prometheus),
        cmocka_unit_test(test_slurm_npd),
        cmocka_unit_test(test_atomic_write),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
