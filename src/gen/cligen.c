/* SPDX-License-Identifier: MIT */
/*
 * cligen: the command line's one source (docs/cmdline, described in
 * docs/cmdline/README.md) turned into everything that shows it, at build
 * time:
 *
 *   cligen [--version V] [--perf-names "a_perf b_perf"] [--readme README.md]
 *          -o OUTDIR global.yaml CMD.yaml...
 *
 * writes OUTDIR/cli_doc.c (help texts and option lists for src/cli),
 * OUTDIR/nccl-doctor.1 (man page), OUTDIR/nccl-doctor.bash,
 * OUTDIR/_nccl-doctor (zsh) and, with --readme, OUTDIR/README.md: the
 * given README with the block between the `commands` markers regenerated.
 * Every output is written to a temporary file and renamed.  Exit 0, or 1
 * with a message naming the file and the problem.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "cligen.h"

const char *version = "", *perf_names = "";

void die(const char *fmt, ...)
{
    va_list ap;
    fputs("cligen: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

/* YAML --------------------------------------------------------------------- */

static const char *scalar(yaml_document_t *d, yaml_node_t *n, const char *f,
                          const char *key)
{
    if (!n || n->type != YAML_SCALAR_NODE)
        die("%s: '%s' must be a string", f, key);
    return strdup((const char *)n->data.scalar.value);
}

static int list(yaml_document_t *d, yaml_node_t *n, const char *f,
                const char *key, const char **out, int max)
{
    if (!n || n->type != YAML_SEQUENCE_NODE)
        die("%s: '%s' must be a list", f, key);
    int k = 0;
    for (yaml_node_item_t *i = n->data.sequence.items.start;
         i < n->data.sequence.items.top; i++) {
        if (k == max)
            die("%s: too many entries in '%s'", f, key);
        out[k++] = scalar(d, yaml_document_get_node(d, *i), f, key);
    }
    return k;
}

static void parse_opt(yaml_document_t *d, yaml_node_t *n, const char *f,
                      struct opt *o)
{
    if (n->type != YAML_MAPPING_NODE)
        die("%s: an option must be a mapping", f);
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
         p < n->data.mapping.pairs.top; p++) {
        const char *k = scalar(d, yaml_document_get_node(d, p->key), f, "key");
        yaml_node_t *v = yaml_document_get_node(d, p->value);
        if (!strcmp(k, "long"))
            o->lng = scalar(d, v, f, k);
        else if (!strcmp(k, "short")) {
            const char *s = scalar(d, v, f, k);
            if (strlen(s) != 1 || !isalnum((unsigned char)*s))
                die("%s: short option '%s' is not one letter", f, s);
            o->shrt = *s;
        } else if (!strcmp(k, "arg"))
            o->arg = scalar(d, v, f, k);
        else if (!strcmp(k, "optional"))
            o->optional = !strcmp(scalar(d, v, f, k), "true");
        else if (!strcmp(k, "values"))
            o->nvalues = list(d, v, f, k, o->values, MAXV);
        else if (!strcmp(k, "complete")) {
            o->complete = scalar(d, v, f, k);
            if (strcmp(o->complete, "file") && strcmp(o->complete, "dir"))
                die("%s: complete: is file or dir, not '%s'", f, o->complete);
        } else if (!strcmp(k, "default"))
            o->def = scalar(d, v, f, k);
        else if (!strcmp(k, "help"))
            o->help = scalar(d, v, f, k);
        else
            die("%s: unknown option field '%s'", f, k);
    }
    if (!o->lng || !o->help)
        die("%s: an option needs long: and help:", f);
    for (const char *c = o->lng; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '-' && *c != '_')
            die("%s: bad option name '%s'", f, o->lng);
    if ((o->optional || o->nvalues || o->complete) && !o->arg)
        die("%s: --%s has optional/values/complete but no arg:", f, o->lng);
}

static void load(const char *f, struct cmd *c)
{
    FILE *fp = fopen(f, "rb");
    if (!fp)
        die("%s: %s", f, strerror(errno));
    yaml_parser_t p;
    yaml_document_t d;
    yaml_parser_initialize(&p);
    yaml_parser_set_input_file(&p, fp);
    if (!yaml_parser_load(&p, &d))
        die("%s:%zu: %s", f, p.problem_mark.line + 1,
            p.problem ? p.problem : "bad YAML");
    yaml_node_t *root = yaml_document_get_root_node(&d);
    if (!root || root->type != YAML_MAPPING_NODE)
        die("%s: not a mapping", f);
    memset(c, 0, sizeof *c);
    c->file = f;
    for (yaml_node_pair_t *pr = root->data.mapping.pairs.start;
         pr < root->data.mapping.pairs.top; pr++) {
        const char *k =
            scalar(&d, yaml_document_get_node(&d, pr->key), f, "key");
        yaml_node_t *v = yaml_document_get_node(&d, pr->value);
        if (!strcmp(k, "command") || !strcmp(k, "program"))
            c->name = scalar(&d, v, f, k);
        else if (!strcmp(k, "summary"))
            c->summary = scalar(&d, v, f, k);
        else if (!strcmp(k, "description"))
            c->description = scalar(&d, v, f, k);
        else if (!strcmp(k, "exit"))
            c->exit = scalar(&d, v, f, k);
        else if (!strcmp(k, "readme"))
            c->readme = scalar(&d, v, f, k);
        else if (!strcmp(k, "readme-name"))
            c->readme_name = scalar(&d, v, f, k);
        else if (!strcmp(k, "synopsis"))
            c->nsyn = list(&d, v, f, k, c->synopsis, 8);
        else if (!strcmp(k, "globals")) {
            c->nglobals = list(&d, v, f, k, c->globals, 32);
            c->has_globals = 1;
        } else if (!strcmp(k, "commands"))
            c->ncommands = list(&d, v, f, k, c->commands, 32);
        else if (!strcmp(k, "options")) {
            if (v->type != YAML_SEQUENCE_NODE)
                die("%s: options must be a list", f);
            for (yaml_node_item_t *i = v->data.sequence.items.start;
                 i < v->data.sequence.items.top; i++) {
                if (c->nopts == 64)
                    die("%s: too many options", f);
                parse_opt(&d, yaml_document_get_node(&d, *i), f,
                          &c->opts[c->nopts++]);
            }
        } else if (!strcmp(k, "environment")) {
            if (v->type != YAML_SEQUENCE_NODE)
                die("%s: environment must be a list", f);
            for (yaml_node_item_t *i = v->data.sequence.items.start;
                 i < v->data.sequence.items.top && c->nenv < 16; i++) {
                struct opt tmp = {0};
                yaml_node_t *e = yaml_document_get_node(&d, *i);
                for (yaml_node_pair_t *q = e->data.mapping.pairs.start;
                     e->type == YAML_MAPPING_NODE &&
                     q < e->data.mapping.pairs.top;
                     q++) {
                    const char *ek = scalar(
                        &d, yaml_document_get_node(&d, q->key), f, "key");
                    const char *ev = scalar(
                        &d, yaml_document_get_node(&d, q->value), f, ek);
                    if (!strcmp(ek, "name"))
                        tmp.lng = ev;
                    else if (!strcmp(ek, "help"))
                        tmp.help = ev;
                }
                if (!tmp.lng || !tmp.help)
                    die("%s: environment entries need name: and help:", f);
                c->env_name[c->nenv] = tmp.lng;
                c->env_help[c->nenv++] = tmp.help;
            }
        } else
            die("%s: unknown field '%s'", f, k);
    }
    if (!c->name || !c->summary)
        die("%s: needs command: and summary:", f);
    for (int i = 0; i < c->nopts; i++)
        for (int j = 0; j < i; j++)
            if (!strcmp(c->opts[i].lng, c->opts[j].lng) ||
                (c->opts[i].shrt && c->opts[i].shrt == c->opts[j].shrt))
                die("%s: --%s described twice", f, c->opts[i].lng);
    yaml_document_delete(&d);
    yaml_parser_delete(&p);
    fclose(fp);
}

/* Text helpers -------------------------------------------------------------- */

struct buf {
    char *s;
    size_t n, cap;
};

static void bput(struct buf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        b->cap = (b->n + n + 1) * 2;
        b->s = realloc(b->s, b->cap);
        if (!b->s)
            die("out of memory");
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = 0;
}

static void bputs(struct buf *b, const char *s)
{
    bput(b, s, strlen(s));
}

static void bprintf(struct buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void bprintf(struct buf *b, const char *fmt, ...)
{
    char *s;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0)
        die("out of memory");
    bput(b, s, (size_t)n);
    free(s);
}

/* Appends `text` word-wrapped at `width`, every line indented by `indent`
 * spaces except the first, which starts at column `col`. */
static void wrap(struct buf *b, const char *text, int col, int indent,
                 int width)
{
    const char *p = text;
    int first = 1;
    while (*p) {
        while (*p == ' ' || *p == '\n')
            p++;
        if (!*p)
            break;
        const char *e = p;
        while (*e && *e != ' ' && *e != '\n')
            e++;
        int wl = (int)(e - p);
        if (!first && col + 1 + wl > width) {
            bputs(b, "\n");
            for (col = 0; col < indent; col++)
                bputs(b, " ");
        } else if (!first) {
            bputs(b, " ");
            col++;
        }
        bput(b, p, (size_t)wl);
        col += wl;
        first = 0;
        p = e;
    }
}

/* Calls fn for each paragraph of a description: kind 'p' (text to fill) or
 * 'v' (lines indented by two spaces, kept verbatim). */
static void paragraphs(const char *text,
                       void (*fn)(void *, int kind, const char *, size_t),
                       void *arg)
{
    const char *p = text;
    while (*p) {
        while (*p == '\n')
            p++;
        if (!*p)
            break;
        int kind = (p[0] == ' ' && p[1] == ' ') ? 'v' : 'p';
        const char *e = p;
        for (;;) { /* to the end of the paragraph or a change of kind */
            const char *nl = strchr(e, '\n');
            const char *next = nl ? nl + 1 : e + strlen(e);
            e = next;
            if (!*e || *e == '\n')
                break;
            int k2 = (e[0] == ' ' && e[1] == ' ') ? 'v' : 'p';
            if (k2 != kind)
                break;
        }
        fn(arg, kind, p, (size_t)(e - p));
        p = e;
    }
}

static void help_para(void *arg, int kind, const char *s, size_t n)
{
    struct buf *b = arg;
    char *t = strndup(s, n);
    if (b->n)
        bputs(b, "\n");
    if (kind == 'v') {
        bputs(b, t);
        if (n && t[n - 1] != '\n')
            bputs(b, "\n");
    } else {
        wrap(b, t, 0, 0, 76);
        bputs(b, "\n");
    }
    free(t);
}

struct cmd *global;

static const struct opt *global_opt(const char *name)
{
    for (int i = 0; i < global->nopts; i++)
        if (!strcmp(global->opts[i].lng, name))
            return &global->opts[i];
    return NULL;
}

/* The shared options command c takes; the short letter of one is dropped
 * where c's own option uses it (perf: -V). */
int globals_of(const struct cmd *c, struct opt *out)
{
    int n = 0;
    for (int i = 0; i < global->nopts; i++) {
        int take = !c->has_globals;
        for (int k = 0; k < c->nglobals; k++)
            take |= !strcmp(c->globals[k], global->opts[i].lng);
        if (!take)
            continue;
        out[n] = global->opts[i];
        for (int k = 0; k < c->nopts; k++)
            if (out[n].shrt && c->opts[k].shrt == out[n].shrt)
                out[n].shrt = 0;
        n++;
    }
    return n;
}

static void opt_lines(struct buf *b, const struct opt *o, int n)
{
    for (int i = 0; i < n; i++) {
        struct buf h = {0};
        if (o[i].shrt)
            bprintf(&h, "  -%c, --%s", o[i].shrt, o[i].lng);
        else
            bprintf(&h, "  --%s", o[i].lng);
        if (o[i].arg)
            bprintf(&h, o[i].optional ? "[=%s]" : " %s", o[i].arg);
        bputs(b, h.s);
        int col = (int)h.n;
        if (col > 24) {
            bputs(b, "\n");
            col = 0;
        }
        for (; col < 26; col++)
            bputs(b, " ");
        struct buf t = {0};
        bputs(&t, o[i].help);
        if (o[i].def)
            bprintf(&t, " [%s]", o[i].def);
        wrap(b, t.s, 26, 26, 78);
        bputs(b, "\n");
        free(h.s);
        free(t.s);
    }
}

/* `help CMD` text. */
static char *help_text(const struct cmd *c)
{
    struct buf b = {0};
    char lead[128];
    snprintf(lead, sizeof lead, "usage: %s %s ", global->name, c->name);
    bputs(&b, lead);
    for (int i = 0; i < c->nsyn; i++) {
        if (i)
            bprintf(&b, "\n%*s", (int)strlen(lead), "");
        bputs(&b, c->synopsis[i]);
    }
    bputs(&b, "\n");
    struct buf d = {0};
    if (c->description)
        paragraphs(c->description, help_para, &d);
    if (d.n)
        bprintf(&b, "\n%s", d.s);
    free(d.s);
    if (c->nopts) {
        bputs(&b, "\nOptions:\n");
        opt_lines(&b, c->opts, c->nopts);
    }
    struct opt g[32];
    int ng = globals_of(c, g);
    if (ng) {
        bputs(&b, "\nShared options:\n");
        opt_lines(&b, g, ng);
    }
    const char *ex = c->exit ? c->exit : global->exit;
    if (ex) {
        bputs(&b, "\nExit status: ");
        wrap(&b, ex, 13, 0, 76);
        bputs(&b, "\n");
    }
    return b.s;
}

static char *main_help(struct cmd *cmds, int n)
{
    struct buf b = {0};
    bprintf(&b, "usage: %s %s\n", global->name, global->synopsis[0]);
    struct buf d = {0};
    paragraphs(global->description, help_para, &d);
    bprintf(&b, "\n%s\nCommands:\n", d.s);
    free(d.s);
    for (int i = 0; i < n; i++)
        bprintf(&b, "  %-10s %s\n", cmds[i].name, cmds[i].summary);
    bputs(&b, "\nShared options:\n");
    opt_lines(&b, global->opts, global->nopts);
    bprintf(&b, "\n`%s help COMMAND` shows a command's options;\n"
                "`man %s` has them all.\n",
            global->name, global->name);
    return b.s;
}

static void c_string(FILE *f, const char *s)
{
    fputs("    \"", f);
    for (; *s; s++) {
        if (*s == '\n')
            fputs(s[1] ? "\\n\"\n    \"" : "\\n", f);
        else if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else
            fputc(*s, f);
    }
    fputs("\"", f);
}

static void c_str_or_null(FILE *f, const char *s)
{
    if (!s) {
        fputs("NULL", f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* Output files ---------------------------------------------------------------- */

static char tmpname[4096], finalname[4096];

FILE *out_open(const char *dir, const char *name)
{
    snprintf(finalname, sizeof finalname, "%s/%s", dir, name);
    snprintf(tmpname, sizeof tmpname, "%s/.%s.tmp", dir, name);
    FILE *f = fopen(tmpname, "w");
    if (!f)
        die("%s: %s", tmpname, strerror(errno));
    return f;
}

void out_close(FILE *f)
{
    if (ferror(f) | fclose(f))
        die("%s: write error", tmpname);
    if (rename(tmpname, finalname))
        die("%s: %s", finalname, strerror(errno));
}

static void opts_c(FILE *f, const char *ident, const struct opt *o, int n)
{
    fprintf(f, "static const struct cli_doc_opt %s[] = {\n", ident);
    for (int i = 0; i < n; i++) {
        fprintf(f, "    {\"%s\", %d, %d},\n", o[i].lng, o[i].shrt,
                !o[i].arg ? 0 : o[i].optional ? 2 : 1);
    }
    fputs("    {0, 0, 0},\n};\n", f);
}

static void write_c(const char *dir, struct cmd *cmds, int n)
{
    FILE *f = out_open(dir, "cli_doc.c");
    fputs("/* Generated by src/gen/cligen.c from docs/cmdline: do not "
          "edit. */\n#include <stddef.h>\n\n#include \"cli_doc.h\"\n\n",
          f);
    for (int i = 0; i < n; i++) {
        struct opt all[96];
        int k = 0;
        for (int j = 0; j < cmds[i].nopts; j++)
            all[k++] = cmds[i].opts[j];
        k += globals_of(&cmds[i], all + k);
        char id[64];
        snprintf(id, sizeof id, "opts_%d", i);
        opts_c(f, id, all, k);
        char *h = help_text(&cmds[i]);
        fprintf(f, "static const char help_%d[] =\n", i);
        c_string(f, h);
        fputs(";\n\n", f);
        free(h);
    }
    fputs("const struct cli_doc cli_docs[] = {\n", f);
    for (int i = 0; i < n; i++) {
        fprintf(f, "    {\"%s\", ", cmds[i].name);
        c_str_or_null(f, cmds[i].summary);
        fprintf(f, ", help_%d, opts_%d},\n", i, i);
    }
    fputs("    {NULL, NULL, NULL, NULL},\n};\n\n", f);
    char *m = main_help(cmds, n);
    fputs("const char cli_doc_main_help[] =\n", f);
    c_string(f, m);
    fputs(";\n", f);
    free(m);
    out_close(f);
}

/* roff: escape backslashes and hyphens; protect a leading dot or quote. */
static void roff(struct buf *b, const char *s, size_t n)
{
    int bol = 1;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (bol && (ch == '.' || ch == '\''))
            bputs(b, "\\&");
        if (ch == '\\')
            bputs(b, "\\e");
        else if (ch == '-')
            bputs(b, "\\-");
        else
            bput(b, &ch, 1);
        bol = ch == '\n';
    }
}

static void roffs(struct buf *b, const char *s)
{
    roff(b, s, strlen(s));
}

static void man_para(void *arg, int kind, const char *s, size_t n)
{
    struct buf *b = arg;
    if (kind == 'v') {
        bputs(b, ".PP\n.nf\n");
        roff(b, s, n);
        if (n && s[n - 1] != '\n')
            bputs(b, "\n");
        bputs(b, ".fi\n");
        return;
    }
    bputs(b, ".PP\n");
    /* one output line per input line, without the leading spaces */
    const char *p = s, *e = s + n;
    while (p < e) {
        while (p < e && *p == ' ')
            p++;
        if (p == e)
            break;
        const char *nl = memchr(p, '\n', (size_t)(e - p));
        const char *le = nl ? nl : e;
        if (le > p) {
            roff(b, p, (size_t)(le - p));
            bputs(b, "\n");
        }
        p = nl ? nl + 1 : e; /* never past e */
    }
}

static void man_opts(struct buf *b, const struct opt *o, int n)
{
    for (int i = 0; i < n; i++) {
        bputs(b, ".TP\n");
        if (o[i].shrt)
            bprintf(b, "\\fB\\-%c\\fR, ", o[i].shrt);
        bputs(b, "\\fB\\-\\-");
        roffs(b, o[i].lng);
        bputs(b, "\\fR");
        if (o[i].arg) {
            bputs(b, o[i].optional ? "[=\\fI" : " \\fI");
            roffs(b, o[i].arg);
            bputs(b, o[i].optional ? "\\fR]" : "\\fR");
        }
        bputs(b, "\n");
        roffs(b, o[i].help);
        if (o[i].def) {
            bputs(b, " (default ");
            roffs(b, o[i].def);
            bputs(b, ")");
        }
        bputs(b, ".\n");
    }
}

static void write_man(const char *dir, struct cmd *cmds, int n)
{
    struct buf b = {0};
    const char *P = global->name;
    bprintf(&b,
            ".\\\" Generated by src/gen/cligen.c from docs/cmdline: "
            "do not edit.\n"
            ".TH NCCL\\-DOCTOR 1 \"\" \"%s %s\" \"User Commands\"\n"
            ".SH NAME\n",
            P, version);
    roffs(&b, P);
    bputs(&b, " \\- ");
    roffs(&b, global->summary);
    bputs(&b, "\n.SH SYNOPSIS\n");
    for (int i = 0; i < n; i++) {
        bprintf(&b, ".B %s %s\n", P, cmds[i].name);
        for (int k = 0; k < cmds[i].nsyn; k++) {
            roffs(&b, cmds[i].synopsis[k]);
            bputs(&b, "\n");
        }
        bputs(&b, ".br\n");
    }
    bputs(&b, ".SH DESCRIPTION\n");
    paragraphs(global->description, man_para, &b);
    bputs(&b, ".SH COMMANDS\n");
    for (int i = 0; i < n; i++) {
        bprintf(&b, ".TP\n.B %s\n", cmds[i].name);
        roffs(&b, cmds[i].summary);
        bputs(&b, ".\n");
    }
    bputs(&b, ".SH SHARED OPTIONS\n");
    man_opts(&b, global->opts, global->nopts);
    for (int i = 0; i < n; i++) {
        const struct cmd *c = &cmds[i];
        bprintf(&b, ".SH %s %s\n", P, c->name);
        bprintf(&b, ".B %s %s\n", P, c->name);
        for (int k = 0; k < c->nsyn; k++) {
            roffs(&b, c->synopsis[k]);
            bputs(&b, "\n");
        }
        if (c->description)
            paragraphs(c->description, man_para, &b);
        if (c->nopts) {
            bputs(&b, ".SS Options\n");
            man_opts(&b, c->opts, c->nopts);
        }
        struct opt g[32];
        int ng = globals_of(c, g);
        if (ng && c->has_globals) {
            bputs(&b, ".PP\nShared options taken:");
            for (int k = 0; k < ng; k++) {
                bputs(&b, k ? ", \\-\\-" : " \\-\\-");
                roffs(&b, g[k].lng);
            }
            bputs(&b, ".\n");
        }
        if (c->exit) {
            bputs(&b, ".SS Exit status\n");
            roffs(&b, c->exit);
        }
    }
    bputs(&b, ".SH ENVIRONMENT\n");
    for (int i = 0; i < global->nenv; i++) {
        bprintf(&b, ".TP\n.B %s\n", global->env_name[i]);
        roffs(&b, global->env_help[i]);
        bputs(&b, ".\n");
    }
    bputs(&b, ".SH EXIT STATUS\n");
    roffs(&b, global->exit);
    bputs(&b, ".SH SEE ALSO\n.BR nvidia\\-smi (1),\n.BR lstopo (1)\n");
    FILE *f = out_open(dir, "nccl-doctor.1");
    fputs(b.s, f);
    out_close(f);
    free(b.s);
}

/* Completion ---------------------------------------------------------------- */

/* README ----------------------------------------------------------------- */

#define BEGIN_MARK "<!-- commands: generated from docs/cmdline/*.yaml -->"
#define END_MARK "<!-- end of commands -->"


static void write_readme(const char *dir, const char *readme, struct cmd *cmds,
                         int n)
{
    FILE *in = fopen(readme, "rb");
    if (!in)
        die("%s: %s", readme, strerror(errno));
    struct buf r = {0};
    char chunk[8192];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, in)) > 0)
        bput(&r, chunk, got);
    fclose(in);
    char *b = r.s ? strstr(r.s, BEGIN_MARK) : NULL;
    char *e = b ? strstr(b, END_MARK) : NULL;
    if (!b || !e)
        die("%s: no '%s' ... '%s' block", readme, BEGIN_MARK, END_MARK);
    FILE *f = out_open(dir, "README.md");
    fwrite(r.s, 1, (size_t)(b - r.s), f);
    fputs(BEGIN_MARK "\n\n| command | what it does |\n|---|---|\n", f);
    for (int i = 0; i < n; i++) {
        if (cmds[i].readme_name)
            fprintf(f, "| %s | ", cmds[i].readme_name);
        else
            fprintf(f, "| `%s` | ", cmds[i].name);
        fprintf(f, "%s |\n", cmds[i].readme ? cmds[i].readme
                                              : cmds[i].summary);
    }
    fputs("\n", f);
    fputs(e, f);
    out_close(f);
    free(r.s);
}

int main(int argc, char **argv)
{
    const char *outdir = NULL, *readme = NULL;
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i += 2) {
        if (i + 1 >= argc)
            die("%s needs a value", argv[i]);
        if (!strcmp(argv[i], "-o"))
            outdir = argv[i + 1];
        else if (!strcmp(argv[i], "--version"))
            version = argv[i + 1];
        else if (!strcmp(argv[i], "--perf-names"))
            perf_names = argv[i + 1];
        else if (!strcmp(argv[i], "--readme"))
            readme = argv[i + 1];
        else
            die("unknown option %s", argv[i]);
    }
    if (!outdir || i >= argc)
        die("usage: cligen [--version V] [--perf-names LIST] [--readme FILE] "
            "-o OUTDIR global.yaml CMD.yaml...");
    static struct cmd g, files[32], cmds[32];
    global = &g;
    load(argv[i++], &g);
    if (!g.ncommands || !g.nsyn || !g.description)
        die("%s: needs commands:, synopsis: and description:", g.file);
    int nf = 0;
    for (; i < argc; i++) {
        if (nf == 32)
            die("too many command files");
        load(argv[i], &files[nf++]);
    }
    /* commands: in global.yaml's order, each described exactly once */
    for (int k = 0; k < g.ncommands; k++) {
        int found = -1;
        for (int j = 0; j < nf; j++)
            if (!strcmp(files[j].name, g.commands[k]))
                found = j;
        if (found < 0)
            die("%s lists '%s' but no file describes it", g.file,
                g.commands[k]);
        cmds[k] = files[found];
    }
    for (int j = 0; j < nf; j++) {
        int listed = 0;
        for (int k = 0; k < g.ncommands; k++)
            listed |= !strcmp(files[j].name, g.commands[k]);
        if (!listed)
            die("%s describes '%s', which %s does not list", files[j].file,
                files[j].name, g.file);
        for (int k = 0; k < files[j].nglobals; k++)
            if (!global_opt(files[j].globals[k]))
                die("%s: '%s' is not a shared option", files[j].file,
                    files[j].globals[k]);
    }
    int n = g.ncommands;
    write_c(outdir, cmds, n);
    write_man(outdir, cmds, n);
    write_bash(outdir, cmds, n);
    write_zsh(outdir, cmds, n);
    if (readme)
        write_readme(outdir, readme, cmds, n);
    return 0;
}
