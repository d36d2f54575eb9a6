/* SPDX-License-Identifier: MIT */
/* Option tables checked against docs/cmdline, and "did you mean". */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "cli_doc.h"
#include "cmd.h"

const struct cli_doc *cli_doc_find(const char *cmd)
{
    for (const struct cli_doc *d = cli_docs; d->name; d++)
        if (strcmp(d->name, cmd) == 0)
            return d;
    return NULL;
}

/* Optimal string alignment distance (Damerau-Levenshtein without
 * repeated edits of one substring), for short names. */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64)
        return (size_t)-1;
    size_t d[65][65];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            size_t cost = a[i - 1] != b[j - 1];
            size_t v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v)
                v = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < v)
                v = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
                a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    return d[la][lb];
}

const char *cli_closest(const char *s, const char *const *names, size_t n)
{
    const char *best = NULL;
    size_t bd = (size_t)-1;
    for (size_t i = 0; i < n; i++) {
        size_t d = edit_distance(s, names[i]);
        if (d < bd) {
            bd = d;
            best = names[i];
        }
    }
    /* one edit for short words, two from five letters, three from nine */
    size_t len = strlen(s), max = len >= 9 ? 3 : len >= 5 ? 2 : 1;
    return best && bd <= max && bd < len ? best : NULL;
}

int cli_doc_verify(const char *cmd, const struct option *lo,
                   const char *shortopts)
{
    const struct cli_doc *d = cli_doc_find(cmd);
    if (!d) {
        cli_err("internal error: command '%s' is not in docs/cmdline", cmd);
        return -1;
    }
    int bad = 0;
    for (const struct option *o = lo; o->name; o++) {
        const struct cli_doc_opt *m = NULL;
        for (const struct cli_doc_opt *x = d->opts; x->name; x++)
            if (strcmp(x->name, o->name) == 0)
                m = x;
        if (!m) {
            cli_err("internal error: %s takes --%s, which "
                    "docs/cmdline/%s.yaml does not describe",
                    cmd, o->name, cmd);
            bad = 1;
        } else if (m->has_arg != o->has_arg) {
            cli_err("internal error: %s --%s: docs/cmdline/%s.yaml and the "
                    "code disagree on its argument",
                    cmd, o->name, cmd);
            bad = 1;
        }
    }
    for (const struct cli_doc_opt *x = d->opts; x->name; x++) {
        int found = 0;
        for (const struct option *o = lo; o->name; o++)
            found |= strcmp(x->name, o->name) == 0;
        if (!found) {
            cli_err("internal error: docs/cmdline/%s.yaml describes --%s, "
                    "which %s does not take",
                    cmd, x->name, cmd);
            bad = 1;
        }
        if (x->letter) {
            const char *p = strchr(shortopts, x->letter);
            int arg = p && p[1] == ':';
            if (!p || arg != (x->has_arg == 1)) {
                cli_err("internal error: docs/cmdline/%s.yaml describes "
                        "-%c, which %s does not take as described",
                        cmd, x->letter, cmd);
                bad = 1;
            }
        }
    }
    for (const char *p = shortopts; *p; p++) {
        if (*p == ':' || *p == '+' || *p == '-')
            continue;
        int found = 0;
        for (const struct cli_doc_opt *x = d->opts; x->name; x++)
            found |= x->letter == *p;
        if (!found) {
            cli_err("internal error: %s takes -%c, which docs/cmdline/%s.yaml "
                    "does not describe",
                    cmd, *p, cmd);
            bad = 1;
        }
    }
    return bad ? -1 : 0;
}

/* The long names of lo, for suggestions. */
static size_t long_names(const struct option *lo, const char **names,
                         size_t max)
{
    size_t n = 0;
    for (; lo->name && n < max; lo++)
        names[n++] = lo->name;
    return n;
}

void cli_explain_bad_option(const char *cmd, int argc, char **argv, int word,
                            const struct option *lo, FILE *f)
{
    const char *names[128];
    size_t n = long_names(lo, names, 128);
    const char *w = word < argc ? argv[word] : "";
    if (w[0] == '-' && w[1] == '-') { /* a long option */
        char name[128];
        snprintf(name, sizeof name, "%s", w + 2);
        name[strcspn(name, "=")] = 0;
        const struct option *exact = NULL;
        size_t nprefix = 0;
        for (const struct option *o = lo; o->name; o++) {
            if (strcmp(o->name, name) == 0)
                exact = o;
            if (strncmp(o->name, name, strlen(name)) == 0)
                nprefix++;
        }
        if (exact && exact->has_arg == required_argument)
            fprintf(f, "nccl-doctor: %s: option '--%s' needs an argument\n",
                    cmd, name);
        else if (exact)
            fprintf(f, "nccl-doctor: %s: option '--%s' takes no argument\n",
                    cmd, name);
        else if (nprefix > 1) {
            fprintf(f, "nccl-doctor: %s: option '--%s' is ambiguous:", cmd,
                    name);
            for (const struct option *o = lo; o->name; o++)
                if (strncmp(o->name, name, strlen(name)) == 0)
                    fprintf(f, " --%s", o->name);
            fputc('\n', f);
        } else {
            const char *s = cli_closest(name, names, n);
            fprintf(f, "nccl-doctor: %s: unknown option '--%s'", cmd, name);
            if (s)
                fprintf(f, "; did you mean '--%s'?", s);
            fputc('\n', f);
        }
        return;
    }
    /* a short option, maybe a long one written with one dash (-json) */
    int c = optopt;
    if (w[0] == '-' && strlen(w) > 2) {
        const char *s = cli_closest(w + 1, names, n);
        for (size_t i = 0; i < n && !s; i++)
            if (strcmp(names[i], w + 1) == 0)
                s = names[i];
        if (s) {
            fprintf(f, "nccl-doctor: %s: unknown option '%s'; did you mean "
                       "'--%s'?\n",
                    cmd, w, s);
            return;
        }
    }
    if (c > 32 && c < 127) {
        for (const struct option *o = lo; o->name; o++)
            if (o->val == c && o->has_arg == required_argument) {
                fprintf(f, "nccl-doctor: %s: option '-%c' needs an argument\n",
                        cmd, c);
                return;
            }
        fprintf(f, "nccl-doctor: %s: unknown option '-%c'\n", cmd, c);
    } else {
        fprintf(f, "nccl-doctor: %s: unknown option '%s'\n", cmd, w);
    }
}

int cli_getopt(const char *cmd, int argc, char **argv, const char *shortopts,
               const struct option *lo)
{
    static const char *verified;
    if (verified != cmd) {
        if (cli_doc_verify(cmd, lo, shortopts) < 0)
            return '?';
        verified = cmd;
    }
    /* The word getopt looks at: argv[optind] while inside it (a cluster
     * of short options), else the one it has just passed. */
    int before = optind;
    opterr = 0;
    int c = getopt_long(argc, argv, shortopts, lo, NULL);
    if (c == '?') {
        int word = before < argc && argv[before][0] == '-' ? before
                                                           : optind - 1;
        if (optind > before && argv[optind - 1][0] == '-' &&
            argv[optind - 1][1] == '-')
            word = optind - 1;
        cli_explain_bad_option(cmd, argc, argv, word, lo, stderr);
    }
    return c;
}
