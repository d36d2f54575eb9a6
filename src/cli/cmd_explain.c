/* SPDX-License-Identifier: MIT */
/*
 * nccl-doctor explain [FILE|DIR|-]...: name the root cause of a failed or
 * slow NCCL job from its logs.  Reads plain or gzip files (zlib's gzread
 * reads both), directories of per-rank logs, and stdin; the library does
 * the parsing and reasoning (include/ncd/explain.h).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "cmd.h"
#include "ncd/fs.h"
#include "ncd/error.h"
#include "ncd/explain.h"

#define READ_CHUNK (1u << 20)
#define MAX_DEPTH 4

enum {
    OPT_FACTS = CLI_OPT__NEXT,
    OPT_RULES,
    OPT_LIST_RULES,
    OPT_DUMP_PATTERNS,
    OPT_CHECK_RULES,
    OPT_STATS,
};

struct run {
    struct ncd_ctx *ctx;
    struct ncd_explain *ex;
    char *buf;
    int nfiles, nfailed;
};

static int cmp_names(const void *x, const void *y)
{
    return ncd_natcmp(*(char *const *)x, *(char *const *)y);
}

/* Plain regular files: read() straight into the chunk buffer (zlib's
 * transparent mode would copy every byte once more). */
static int feed_plain(struct run *r, int fd, const char *name)
{
    if (ncd_explain_begin(r->ex, name) < 0) {
        cli_err("%s: %s", name, ncd_ctx_errdetail(r->ctx));
        close(fd);
        r->nfailed++;
        return -1;
    }
    int rc = 0;
    for (;;) {
        ssize_t n = read(fd, r->buf, READ_CHUNK);
        if (n > 0) {
            ncd_explain_feed(r->ex, r->buf, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            cli_err("%s: %s (the lines before it were used)", name, strerror(errno));
            r->nfailed++;
            rc = -1;
        }
        break;
    }
    ncd_explain_end(r->ex);
    close(fd);
    r->nfiles++;
    return rc;
}

static int feed_fd(struct run *r, int fd, const char *name)
{
    struct stat st;
    unsigned char magic[2];
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
        !(pread(fd, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b))
        return feed_plain(r, fd, name);
    gzFile gz = gzdopen(fd, "rb");
    if (!gz) {
        close(fd);
        cli_err("%s: cannot read: out of memory", name);
        r->nfailed++;
        return -1;
    }
    gzbuffer(gz, 256 * 1024);
    if (ncd_explain_begin(r->ex, name) < 0) {
        cli_err("%s: %s", name, ncd_ctx_errdetail(r->ctx));
        gzclose(gz);
        r->nfailed++;
        return -1;
    }
    int rc = 0;
    for (;;) {
        int n = gzread(gz, r->buf, READ_CHUNK);
        if (n > 0) {
            ncd_explain_feed(r->ex, r->buf, (size_t)n);
            continue;
        }
        if (n < 0) {
            int errnum;
            const char *msg = gzerror(gz, &errnum);
            if (strncmp(msg, "<fd:", 4) == 0 && strstr(msg, ": "))
                msg = strstr(msg, ": ") + 2;
            r->nfailed++;
            /* a truncated .gz still gave us its lines: say so, go on */
            cli_err("%s: %s (the lines before it were used)", name,
                    errnum == Z_ERRNO ? strerror(errno) : msg);
            rc = -1;
        } else {
            /* end of input: a truncated .gz shows as Z_BUF_ERROR */
            int errnum;
            const char *msg = gzerror(gz, &errnum);
            if (errnum != Z_OK) {
                if (strncmp(msg, "<fd:", 4) == 0 && strstr(msg, ": "))
                    msg = strstr(msg, ": ") + 2;
                r->nfailed++;
                cli_err("%s: %s%s (the lines before it were used)", name, msg,
                        errnum == Z_BUF_ERROR ? ", truncated gzip file" : "");
                rc = -1;
            }
        }
        break;
    }
    ncd_explain_end(r->ex);
    gzclose(gz);
    r->nfiles++;
    return rc;
}

static void feed_path(struct run *r, const char *path, int depth)
{
    if (strcmp(path, "-") == 0) {
        int fd = dup(STDIN_FILENO);
        if (fd < 0) {
            cli_err("stdin: %s", strerror(errno));
            r->nfailed++;
            return;
        }
        feed_fd(r, fd, "<stdin>");
        return;
    }
    /* inside directories only regular files and directories: a FIFO or a
     * device there would block or never end */
    struct stat pre;
    if (depth > 0 && stat(path, &pre) == 0 && !S_ISREG(pre.st_mode) &&
        !S_ISDIR(pre.st_mode))
        return;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        cli_err("%s: %s", path, strerror(errno));
        r->nfailed++;
        return;
    }
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        close(fd);
        if (depth >= MAX_DEPTH)
            return;
        DIR *d = opendir(path);
        if (!d) {
            cli_err("%s: %s", path, strerror(errno));
            r->nfailed++;
            return;
        }
        char **names = NULL;
        size_t n = 0, cap = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
            if (de->d_name[0] == '.')
                continue;
            if (n == cap) {
                cap = cap ? cap * 2 : 64;
                char **nv = realloc(names, cap * sizeof *nv);
                if (!nv)
                    break;
                names = nv;
            }
            names[n] = strdup(de->d_name);
            if (names[n])
                n++;
        }
        closedir(d);
        if (n > 1)
            qsort(names, n, sizeof *names, cmp_names);
        for (size_t i = 0; i < n; i++) {
            char *p = NULL;
            if (asprintf(&p, "%s/%s", path, names[i]) >= 0) {
                feed_path(r, p, depth + 1);
                free(p);
            }
            free(names[i]);
        }
        free(names);
        return;
    }
    feed_fd(r, fd, path);
}

static int load_rules_dir(struct ncd_ctx *ctx, struct ncd_rules *rules,
                          const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        cli_err("--rules %s: %s", dir, strerror(errno));
        return -1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (de->d_name[0] == '.' || l < 6 ||
            (strcmp(de->d_name + l - 5, ".yaml") && strcmp(de->d_name + l - 4, ".yml")))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            char **nv = realloc(names, cap * sizeof *nv);
            if (!nv)
                break;
            names = nv;
        }
        if ((names[n] = strdup(de->d_name)))
            n++;
    }
    closedir(d);
    if (n > 1)
        qsort(names, n, sizeof *names, cmp_names);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        char *p = NULL;
        if (rc == 0 && asprintf(&p, "%s/%s", dir, names[i]) >= 0) {
            FILE *f = fopen(p, "rb");
            char *buf = NULL;
            size_t len = 0;
            if (!f) {
                cli_err("%s: %s", p, strerror(errno));
                rc = -1;
            } else {
                FILE *m = open_memstream(&buf, &len);
                char tmp[8192];
                size_t k;
                while (m && (k = fread(tmp, 1, sizeof tmp, f)) > 0)
                    fwrite(tmp, 1, k, m);
                if (m)
                    fclose(m);
                fclose(f);
                if (!buf || ncd_rules_load_buf(ctx, rules, p, buf, len) < 0) {
                    cli_err("%s", buf ? ncd_ctx_errdetail(ctx) : "out of memory");
                    rc = -1;
                }
                free(buf);
            }
            free(p);
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

static const char *role_heading(enum ncd_rule_role role)
{
    switch (role) {
    case NCD_ROLE_ROOT:
        return "Root cause";
    case NCD_ROLE_WRAPPER:
        return "Most likely cause (these logs hold only the framework's "
               "summary of the NCCL error)";
    case NCD_ROLE_CONSEQUENCE:
        return "Most likely cause (these logs show only the consequences of a "
               "failure elsewhere)";
    default:
        return "Result";
    }
}

/* Appends `text` word-wrapped at `width` columns, continuation lines
 * indented by `indent` blanks; the first line starts at column `col`. */
static void wrap(struct ncd_strbuf *out, const char *text, int col, int indent,
                 int width)
{
    const char *p = text;
    while (*p) {
        while (*p == ' ')
            p++;
        const char *w = p;
        while (*p && *p != ' ' && *p != '\n')
            p++;
        int wl = (int)(p - w);
        if (!wl) {
            if (*p == '\n') {
                ncd_sb_printf(out, "\n%*s", indent, "");
                col = indent;
                p++;
            }
            continue;
        }
        if (col > indent && col + 1 + wl > width) {
            ncd_sb_printf(out, "\n%*s", indent, "");
            col = indent;
        } else if (col > indent) {
            ncd_sb_putc(out, ' ');
            col++;
        }
        ncd_sb_add(out, w, (size_t)wl);
        col += wl;
    }
    ncd_sb_putc(out, '\n');
}

static void render_one(struct ncd_strbuf *out, const struct ncd_finding *f,
                       const struct ncd_text_style *st, int full)
{
    ncd_sb_printf(out, "  %s%s%s %s  [%s]\n", ncd_severity_color(f->severity, st),
                  ncd_severity_mark(f->severity, st), ncd_color_reset(st),
                  f->title, ncd_category_name(f->category));
    size_t max_ev = st->verbose ? f->n_evidence : full ? 6 : 3;
    for (size_t i = 0; i < f->n_evidence && i < max_ev; i++)
        ncd_sb_printf(out, "      | %s\n", f->evidence[i]);
    if (f->n_evidence > max_ev)
        ncd_sb_printf(out, "      | ... %zu more (use --verbose)\n",
                      f->n_evidence - max_ev);
    if (!full)
        return;
    if (f->cause) {
        ncd_sb_puts(out, "      why:  ");
        wrap(out, f->cause, 12, 12, 100);
    }
    if (f->fix) {
        ncd_sb_puts(out, "      fix:  ");
        wrap(out, f->fix, 12, 12, 100);
    }
    for (size_t i = 0; i < f->n_env; i++) {
        if (f->env[i].value) {
            ncd_sb_printf(out, "      env:  export %s=", f->env[i].name);
            ncd_sb_shell_quote(out, f->env[i].value);
            ncd_sb_putc(out, '\n');
        } else {
            ncd_sb_printf(out, "      env:  unset %s\n", f->env[i].name);
        }
    }
}

static void render_text(struct ncd_explain *ex, const struct ncd_findings *fl,
                        const struct ncd_text_style *st, int nfiles,
                        struct ncd_strbuf *out)
{
    unsigned long long bytes, lines, nl;
    ncd_explain_stats(ex, &bytes, &lines, &nl);
    json_t *facts = ncd_explain_facts_json(ex);
    size_t nhosts = facts ? json_array_size(json_object_get(facts, "hosts")) : 0;
    json_t *vers = facts ? json_object_get(facts, "nccl_versions") : NULL;
    ncd_sb_printf(out, "nccl-doctor explain: %d input%s, %llu lines (%llu from NCCL)",
                  nfiles, nfiles == 1 ? "" : "s", lines, nl);
    if (nhosts)
        ncd_sb_printf(out, ", %zu host%s", nhosts, nhosts == 1 ? "" : "s");
    for (size_t i = 0; vers && i < json_array_size(vers); i++)
        ncd_sb_printf(out, "%s%s", i ? ", " : ", NCCL ",
                      json_string_value(json_array_get(vers, i)));
    ncd_sb_puts(out, "\n\n");
    json_decref(facts);

    int problems = 0;
    for (size_t i = 0; i < fl->n; i++)
        problems += fl->v[i].severity >= NCD_SEV_WARNING;
    /* the diagnosis, then other causes in full, then what follows from
     * them (consequences, framework summaries) briefly, then context */
    int section = -1;
    for (size_t i = 0; i < fl->n; i++) {
        const struct ncd_finding *f = &fl->v[i];
        enum ncd_rule_role role = ncd_explain_role(ex, i);
        int sec;
        if (i == 0)
            sec = 0;
        else if (f->severity >= NCD_SEV_WARNING && role == NCD_ROLE_ROOT)
            sec = 1;
        else if (f->severity >= NCD_SEV_WARNING)
            sec = 2;
        else
            sec = 3;
        if (sec != section) {
            static const char *const head[] = {
                NULL, "\nOther problems found\n",
                "\nConsequences and framework messages (they follow from the "
                "above)\n",
                "\nAlso worth knowing\n"};
            if (sec == 0)
                ncd_sb_printf(out, "%s\n", f->severity >= NCD_SEV_WARNING
                                               ? role_heading(role)
                                               : "Result");
            else
                ncd_sb_puts(out, head[sec]);
            section = sec;
        }
        render_one(out, f, st, sec != 2 || st->verbose);
    }
    if (!fl->n)
        ncd_sb_puts(out, "  (no findings)\n");
    ncd_sb_puts(out, "\nNext steps\n");
    if (!nl)
        ncd_sb_puts(out, "  - These logs have no NCCL debug lines: re-run with "
                         "NCCL_DEBUG=INFO and\n    collect every rank's output "
                         "(NCCL_DEBUG_FILE=/tmp/nccl.%h.%p.log).\n");
    if (problems)
        ncd_sb_puts(out, "  - Apply the fix above on every node, then re-run the "
                         "job.\n");
    ncd_sb_puts(out, "  - Verify the nodes themselves with `nccl-doctor check` "
                     "(interfaces, IB, /dev/shm,\n    limits, P2P/ACS, driver): it "
                     "sees what logs cannot show.\n");
}

struct explain_opts {
    int facts_only, list, dump, check_rules, stats;
    const char *rule_dirs[16];
    int nrule_dirs;
};

static int explain_opt(int opt, const char *arg, void *data)
{
    struct explain_opts *o = data;
    switch (opt) {
    case OPT_FACTS:
        o->facts_only = 1;
        return 0;
    case OPT_RULES:
        if (o->nrule_dirs == 16) {
            cli_err("explain: at most 16 --rules directories");
            return -1;
        }
        o->rule_dirs[o->nrule_dirs++] = arg;
        return 0;
    case OPT_LIST_RULES:
        o->list = 1;
        return 0;
    case OPT_DUMP_PATTERNS:
        o->dump = 1;
        return 0;
    case OPT_CHECK_RULES:
        o->check_rules = 1;
        return 0;
    case OPT_STATS:
        o->stats = 1;
        return 0;
    }
    cli_usage("explain", stderr);
    return -1;
}

int ncd_cmd_explain(int argc, char **argv)
{
    static const struct option extra[] = {
        {"facts", no_argument, 0, OPT_FACTS},
        {"rules", required_argument, 0, OPT_RULES},
        {"list-rules", no_argument, 0, OPT_LIST_RULES},
        {"dump-patterns", no_argument, 0, OPT_DUMP_PATTERNS},
        {"check-rules", no_argument, 0, OPT_CHECK_RULES},
        {"stats", no_argument, 0, OPT_STATS},
        {0, 0, 0, 0},
    };
    struct cli_common c;
    struct explain_opts o = {0};
    int first = 0;
    int pst = cli_parse("explain", argc, argv, &c, extra, explain_opt, &o, &first);
    if (pst != CLI_CONTINUE)
        return pst;
    int facts_only = o.facts_only, list = o.list, dump = o.dump,
        check_rules = o.check_rules, stats = o.stats;
    struct ncd_ctx *ctx = cli_ctx_new(&c);
    if (!ctx)
        return NCD_EXIT_TOOL;
    int status = NCD_EXIT_TOOL;
    struct ncd_rules *rules = NULL;
    struct run r = {.ctx = ctx};
    struct ncd_findings fl = {0};
    if (ncd_rules_new(&rules) < 0 || ncd_rules_load_builtin(ctx, rules) < 0) {
        cli_err("explain: built-in rules: %s", ncd_ctx_errdetail(ctx));
        goto out;
    }
    for (int i = 0; i < o.nrule_dirs; i++)
        if (load_rules_dir(ctx, rules, o.rule_dirs[i]) < 0)
            goto out;
    if (list || dump || check_rules) {
        struct ncd_strbuf sb = {0};
        status = NCD_EXIT_OK;
        if (dump)
            ncd_rules_dump_ere(rules, &sb);
        if (list)
            for (size_t i = 0; i < ncd_rules_count(rules); i++) {
                struct ncd_rule_info ri;
                ncd_rules_info(rules, i, &ri);
                ncd_sb_printf(&sb, "%-34s %-20s %-8s %-11s %s:%d\n", ri.id,
                              ncd_category_name(ri.category),
                              ncd_severity_name(ri.severity),
                              ncd_rule_role_name(ri.role), ri.file, ri.line);
            }
        if (check_rules) {
            size_t fails = ncd_rules_selftest(rules, &sb);
            ncd_sb_printf(&sb, "%zu rules, %zu problem%s\n", ncd_rules_count(rules),
                          fails, fails == 1 ? "" : "s");
            if (fails)
                status = NCD_EXIT_TOOL;
        }
        if (cli_print_sb(&sb) < 0)
            status = NCD_EXIT_TOOL;
        ncd_sb_release(&sb);
        goto out;
    }
    r.buf = malloc(READ_CHUNK);
    if (!r.buf || ncd_explain_new(ctx, rules, &r.ex) < 0) {
        cli_err("explain: out of memory");
        goto out;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (first >= argc) {
        if (isatty(STDIN_FILENO)) {
            cli_err("explain: give log files or directories, or pipe a log "
                    "on stdin (see nccl-doctor help explain)");
            goto out;
        }
        feed_path(&r, "-", 0);
    }
    for (int i = first; i < argc; i++)
        feed_path(&r, argv[i], 0);
    if (!r.nfiles) {
        cli_err("explain: no input could be read");
        goto out;
    }
    int n = ncd_explain_finish(r.ex, &fl);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (n < 0) {
        cli_err("explain: %s", ncd_strerror(n));
        goto out;
    }
    if (stats) {
        unsigned long long bytes, lines, nl;
        ncd_explain_stats(r.ex, &bytes, &lines, &nl);
        double s = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
        fprintf(stderr,
                "explain: %llu bytes, %llu lines (%llu NCCL) in %.3f s = %.1f MB/s\n",
                bytes, lines, nl, s, s > 0 ? bytes / s / 1e6 : 0.0);
    }
    enum ncd_severity worst = NCD_SEV_OK;
    for (size_t i = 0; i < fl.n; i++)
        if (fl.v[i].severity > worst)
            worst = fl.v[i].severity;
    status = worst >= NCD_SEV_WARNING ? NCD_EXIT_FINDINGS : NCD_EXIT_OK;

    if (c.json) {
        json_t *env = ncd_json_envelope(cli_hostname(ctx));
        json_t *arr = json_array();
        json_t *rec = json_object();
        for (size_t i = 0; env && arr && i < fl.n; i++) {
            json_t *jf = ncd_finding_to_json(&fl.v[i]);
            enum ncd_rule_role role = ncd_explain_role(r.ex, i);
            json_object_set_new(jf, "role", json_string(ncd_rule_role_name(role)));
            double ts;
            int rk;
            if (ncd_explain_first_seen(r.ex, i, &ts, &rk) == 0) {
                char iso[32] = "";
                if (ts >= 0) {
                    time_t t = (time_t)ts;
                    struct tm tm;
                    gmtime_r(&t, &tm);
                    strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%S", &tm);
                }
                json_object_set_new(jf, "first_seen",
                                    json_pack("{s:o, s:o}", "time",
                                              iso[0] ? json_string(iso) : json_null(),
                                              "rank", rk >= 0 ? json_integer(rk) : json_null()));
            }
            json_array_append_new(arr, jf);
            /* recommended env: the root causes' suggestions (the first
             * finding always counts) */
            if (fl.v[i].severity >= NCD_SEV_WARNING &&
                (i == 0 || role == NCD_ROLE_ROOT))
                for (size_t k = 0; k < fl.v[i].n_env; k++)
                    if (!json_object_get(rec, fl.v[i].env[k].name))
                        json_object_set_new(rec, fl.v[i].env[k].name,
                                            fl.v[i].env[k].value
                                                ? json_string(fl.v[i].env[k].value)
                                                : json_null());
        }
        unsigned long long bytes, lines, nl;
        ncd_explain_stats(r.ex, &bytes, &lines, &nl);
        json_object_set_new(env, "findings", arr);
        json_object_set_new(env, "recommended_env", rec);
        json_object_set_new(env, "facts", ncd_explain_facts_json(r.ex));
        json_object_set_new(env, "input",
                            json_pack("{s:i, s:I, s:I, s:I}", "inputs", r.nfiles,
                                      "bytes", (json_int_t)bytes, "lines",
                                      (json_int_t)lines, "nccl_lines", (json_int_t)nl));
        json_object_set_new(env, "next_steps",
                            json_pack("[s]", "nccl-doctor check"));
        if (cli_print_json(env) < 0)
            status = NCD_EXIT_TOOL;
    } else {
        struct ncd_strbuf sb = {0};
        struct ncd_text_style st = cli_text_style(&c);
        if (facts_only)
            ncd_explain_facts_text(r.ex, &sb);
        else
            render_text(r.ex, &fl, &st, r.nfiles, &sb);
        if (cli_print_sb(&sb) < 0)
            status = NCD_EXIT_TOOL;
        ncd_sb_release(&sb);
    }
    if (r.nfailed && status == NCD_EXIT_OK)
        status = NCD_EXIT_TOOL;
out:
    ncd_findings_release(&fl);
    ncd_explain_free(r.ex);
    free(r.buf);
    ncd_rules_free(rules);
    ncd_ctx_free(ctx);
    return status;
}
