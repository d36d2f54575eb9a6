/* SPDX-License-Identifier: MIT */
/*
 * The gathered corpus (tests/explain/corpus/<id>/{log.txt,case.json}) run
 * through the command line: `nccl-doctor explain --json <log>` per case.
 *
 * Scoring is the rule of shared/corpus/README.md, as in corpus.c: a
 * log_sufficient case passes when the first finding's category is one of
 * expect_categories and, where env_fix is not empty, every env_fix variable
 * is suggested by the first finding or by a finding whose role is "root".
 * Other cases only count whether any finding came back (a general
 * diagnosis); they are reported, not scored.
 *
 * Usage: explain_corpus_cli <nccl-doctor> <corpus dir> <min percent>
 * Exit: 0 when the log_sufficient score reaches <min percent>, 1 below it,
 * 1 when the corpus is missing or holds no case (a corpus that cannot be
 * read must not pass), 2 on bad arguments.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_CASES 4096

static int cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Run `bin explain --json path`; return its stdout (malloc'd, NUL
 * terminated) or NULL.  *rc gets the exit status (-1: did not exit). */
static char *run_explain(const char *bin, const char *path, int *rc)
{
    int fd[2];
    *rc = -1;
    if (pipe(fd) < 0)
        return NULL;
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return NULL;
    }
    if (pid == 0) {
        dup2(fd[1], STDOUT_FILENO);
        close(fd[0]);
        close(fd[1]);
        execl(bin, bin, "explain", "--json", path, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    size_t cap = 65536, len = 0;
    char *buf = malloc(cap);
    ssize_t k;
    while (buf) {
        if (len + 4096 > cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        k = read(fd[0], buf + len, cap - len - 1);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        len += (size_t)k;
    }
    close(fd[0]);
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (WIFEXITED(st))
        *rc = WEXITSTATUS(st);
    if (buf)
        buf[len] = '\0';
    return buf;
}

/* Is variable `var` suggested by finding 0 or by a root finding? */
static int env_suggested(json_t *findings, const char *var)
{
    for (size_t a = 0; a < json_array_size(findings); a++) {
        json_t *f = json_array_get(findings, a);
        const char *role = json_string_value(json_object_get(f, "role"));
        if (a > 0 && (!role || strcmp(role, "root") != 0))
            continue;
        if (json_object_get(json_object_get(f, "env"), var))
            return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s <nccl-doctor> <corpus dir> <min percent>\n", argv[0]);
        return 2;
    }
    const char *bin = argv[1], *dir = argv[2];
    char *end;
    double min_pct = strtod(argv[3], &end);
    if (*end || end == argv[3] || min_pct < 0 || min_pct > 100) {
        fprintf(stderr, "bad minimum percentage '%s' (want 0..100)\n", argv[3]);
        return 2;
    }
    DIR *d = opendir(dir);
    if (!d) {
        printf("FAIL: corpus directory %s cannot be read: %s\n", dir, strerror(errno));
        return 1;
    }
    char *names[MAX_CASES];
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char p[4096];
        struct stat sb;
        snprintf(p, sizeof p, "%s/%s/case.json", dir, de->d_name);
        if (stat(p, &sb) == 0 && S_ISREG(sb.st_mode)) {
            if (n == MAX_CASES) {
                printf("FAIL: more than %d cases in %s\n", MAX_CASES, dir);
                closedir(d);
                return 1;
            }
            names[n++] = strdup(de->d_name);
        }
    }
    closedir(d);
    if (n == 0) {
        printf("FAIL: no case (<id>/case.json) in %s\n", dir);
        return 1;
    }
    qsort(names, n, sizeof *names, cmp);

    int suff = 0, suff_ok = 0, other = 0, other_ok = 0, broken = 0;
    int cat_ok = 0; /* all cases: first finding's category expected (informational) */
    char *failed = NULL;
    size_t failed_len = 0;
    FILE *fl = open_memstream(&failed, &failed_len);
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s/case.json", dir, names[i]);
        json_error_t jerr;
        json_t *c = json_load_file(path, 0, &jerr);
        if (!c || !json_is_array(json_object_get(c, "expect_categories")) ||
            !json_is_boolean(json_object_get(c, "log_sufficient"))) {
            printf("FAIL %s: unreadable case.json (%s)\n", names[i], c ? "fields" : jerr.text);
            broken++;
            json_decref(c);
            continue;
        }
        snprintf(path, sizeof path, "%s/%s/log.txt", dir, names[i]);
        int rc;
        char *out = run_explain(bin, path, &rc);
        json_t *res = out ? json_loads(out, 0, &jerr) : NULL;
        json_t *findings = json_object_get(res, "findings");
        json_t *first = json_array_get(findings, 0);
        const char *got = first ? json_string_value(json_object_get(first, "category")) : NULL;
        const char *id = first ? json_string_value(json_object_get(first, "id")) : NULL;
        int sufficient = json_is_true(json_object_get(c, "log_sufficient"));
        int ok = 0, cat = 0;
        json_t *cats = json_object_get(c, "expect_categories");
        for (size_t j = 0; got && j < json_array_size(cats); j++) {
            const char *want = json_string_value(json_array_get(cats, j));
            cat |= want && strcmp(want, got) == 0;
        }
        cat_ok += cat;
        if (sufficient) {
            ok = cat;
            const char *var;
            json_t *val;
            json_object_foreach(json_object_get(c, "env_fix"), var, val) {
                if (!env_suggested(findings, var)) {
                    printf("  %s: env %s not suggested\n", names[i], var);
                    ok = 0;
                }
            }
            suff++;
            suff_ok += ok;
            if (!ok)
                fprintf(fl, " %s", names[i]);
        } else {
            ok = json_array_size(findings) > 0;
            other++;
            other_ok += ok;
        }
        if (!res)
            printf("  %s: no JSON from nccl-doctor (exit %d)\n", names[i], rc);
        printf("%-4s %-6s %-10s first: %s [%s]\n", ok ? "ok" : "FAIL", names[i],
               sufficient ? "sufficient" : "general", id ? id : "-", got ? got : "(none)");
        json_decref(res);
        free(out);
        json_decref(c);
        free(names[i]);
    }
    fclose(fl);
    double pct = suff ? 100.0 * suff_ok / suff : 0.0;
    printf("log_sufficient cases: %d/%d pass (%.1f%%, minimum %.1f%%); other cases "
           "with a general diagnosis: %d/%d\n",
           suff_ok, suff, pct, min_pct, other_ok, other);
    printf("all cases, first finding in expect_categories (informational): %d/%zu\n", cat_ok, n);
    if (failed_len)
        printf("failing log_sufficient cases:%s\n", failed);
    free(failed);
    if (broken) {
        printf("FAIL: %d unreadable case(s)\n", broken);
        return 1;
    }
    if (suff == 0) {
        printf("FAIL: no log_sufficient case to score\n");
        return 1;
    }
    return pct + 1e-9 >= min_pct ? 0 : 1;
}
