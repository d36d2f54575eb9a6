/* SPDX-License-Identifier: MIT */
/* Options, context creation and printing shared by the subcommands. */
#define _GNU_SOURCE
#include <errno.h>
#include <langinfo.h>
#include <locale.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_doc.h"
#include "cmd.h"
#include "ncd/error.h"
#include "ncd/fs.h"
#include "ncd/sysops.h"
#include "ncd/node.h"
#include "ncd/readall.h"

extern char **environ;

static int color_auto(void)
{
    const char *nc = getenv("NO_COLOR");
    if (nc && *nc)
        return 0;
    const char *term = getenv("TERM");
    if (term && strcmp(term, "dumb") == 0)
        return 0;
    return isatty(STDOUT_FILENO);
}

void cli_common_init(struct cli_common *c)
{
    memset(c, 0, sizeof *c);
    c->sysroot = getenv("NCD_SYSROOT");
    c->color = color_auto();
    setlocale(LC_CTYPE, "");
    const char *cs = nl_langinfo(CODESET);
    c->unicode = cs && strcmp(cs, "UTF-8") == 0;
}

int cli_common_opt(struct cli_common *c, int opt, const char *arg)
{
    switch (opt) {
    case CLI_OPT_SYSROOT:
        if (!*arg) {
            cli_err("--sysroot needs a directory or a capture tarball");
            return -1;
        }
        c->sysroot = arg;
        return 1;
    case CLI_OPT_JSON:
        c->json = 1;
        return 1;
    case CLI_OPT_COLOR:
        if (!arg || strcmp(arg, "always") == 0)
            c->color = 1;
        else if (strcmp(arg, "never") == 0)
            c->color = 0;
        else if (strcmp(arg, "auto") == 0)
            c->color = color_auto();
        else {
            cli_err("--color takes always, never or auto, not '%s'", arg);
            return -1;
        }
        return 1;
    case CLI_OPT_NO_COLOR:
        c->color = 0;
        return 1;
    case CLI_OPT_STRICT:
        c->strict = 1;
        return 1;
    case 'v':
        c->verbose = 1;
        return 1;
    case CLI_OPT_NCCL_VERSION:
        c->nccl_version = arg;
        return 1;
    case 'V':
        return cli_print_version() == NCD_EXIT_OK ? 2 : -1;
    }
    return 0;
}

int cli_parse(const char *cmd, int argc, char **argv, struct cli_common *c,
              const struct option *extra, cli_opt_fn fn, void *data,
              int *first_arg)
{
    static const struct option common[] = {CLI_COMMON_OPTS};
    size_t nc = sizeof common / sizeof common[0], ne = 0;
    while (extra && extra[ne].name)
        ne++;
    struct option *lo = calloc(nc + ne + 1, sizeof *lo);
    if (!lo) {
        cli_err("out of memory");
        return NCD_EXIT_TOOL;
    }
    /* the shared options the command's docs/cmdline file lists (its
     * `globals:`, default all): one it does not take is not accepted */
    const struct cli_doc *d = cli_doc_find(cmd);
    size_t k = 0;
    for (size_t i = 0; i < nc && common[i].name; i++) {
        int take = !d;
        for (const struct cli_doc_opt *x = d ? d->opts : NULL; x && x->name;
             x++)
            take |= strcmp(x->name, common[i].name) == 0;
        if (take)
            lo[k++] = common[i];
    }
    if (ne)
        memcpy(lo + k, extra, ne * sizeof *lo);
    /* A command's option whose value is a letter is also that short
     * option ("-o FILE" for {"output", required_argument, 0, 'o'}). */
    char shorts[64] = CLI_COMMON_SHORT;
    size_t sl = strlen(shorts);
    for (size_t i = 0; i < ne && sl + 3 < sizeof shorts; i++)
        if (extra[i].val > ' ' && extra[i].val < 0x7f) {
            shorts[sl++] = (char)extra[i].val;
            if (extra[i].has_arg == required_argument)
                shorts[sl++] = ':';
            shorts[sl] = '\0';
        }
    cli_common_init(c);
    optind = 1;
    int opt, status = CLI_CONTINUE;
    while (status == CLI_CONTINUE &&
           (opt = cli_getopt(cmd, argc, argv, shorts, lo)) != -1) {
        int r = cli_common_opt(c, opt, optarg);
        if (r < 0) {
            status = NCD_EXIT_TOOL;
        } else if (r == 2) {
            status = NCD_EXIT_OK;
        } else if (r == 0 && opt == 'h') {
            status = cli_usage(cmd, stdout);
        } else if (r == 0 && (opt == '?' || opt == ':' || !fn)) {
            cli_usage_hint(cmd);
            status = NCD_EXIT_TOOL;
        } else if (r == 0 && fn(opt, optarg, data) < 0) {
            status = NCD_EXIT_TOOL;
        }
    }
    free(lo);
    if (status != CLI_CONTINUE)
        return status;
    if (first_arg) {
        *first_arg = optind;
    } else if (optind < argc) {
        cli_err("%s: unexpected argument '%s'", cmd, argv[optind]);
        return NCD_EXIT_TOOL;
    }
    return CLI_CONTINUE;
}

void cli_usage_hint(const char *cmd)
{
    fprintf(stderr, "(`nccl-doctor help %s` lists its options)\n", cmd);
}

void cli_put_clean(FILE *f, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch < 0x20 || ch == 0x7f)
            fprintf(f, "\\x%02x", ch);
        else
            fputc(ch, f);
    }
}

/* prefix + the message with control characters as \xNN + '\n', written to
 * stderr in one write: ranks of one job print at the same time, and a
 * character-at-a-time stream would interleave their messages. */
static void put_line(const char *prefix, const char *s, size_t n)
{
    size_t pl = strlen(prefix), cap = pl + 4 * n + 2, k = pl;
    char *out = malloc(cap);
    if (!out) {
        fputs(prefix, stderr);
        cli_put_clean(stderr, s, n);
        fputc('\n', stderr);
        return;
    }
    memcpy(out, prefix, pl);
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch < 0x20 || ch == 0x7f)
            k += (size_t)snprintf(out + k, cap - k, "\\x%02x", ch);
        else
            out[k++] = (char)ch;
    }
    out[k++] = '\n';
    fflush(stderr);
    fwrite(out, 1, k, stderr);
    fflush(stderr);
    free(out);
}

static void vmsg(const char *prefix, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
static void vmsg(const char *prefix, const char *fmt, va_list ap)
{
    char *s = NULL;
    int n = vasprintf(&s, fmt, ap);
    if (n >= 0)
        put_line(prefix, s, (size_t)n);
    else /* out of memory: the bare format */
        put_line(prefix, fmt, strlen(fmt));
    free(s);
}

void cli_msg(const char *prefix, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmsg(prefix, fmt, ap);
    va_end(ap);
}

void cli_err(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmsg("nccl-doctor: ", fmt, ap);
    va_end(ap);
}

struct ncd_ctx *cli_ctx_new(const struct cli_common *c)
{
    struct ncd_ctx *ctx;
    char why[1024];
    struct ncd_ctx_config cfg = {.sysroot = c->sysroot, .envp = environ};
    int rc = ncd_ctx_open(&cfg, &ctx, why, sizeof why);
    if (rc < 0) {
        cli_err("%s", *why ? why : ncd_strerror(rc));
        return NULL;
    }
    return ctx;
}

struct ncd_text_style cli_text_style(const struct cli_common *c)
{
    struct ncd_text_style st = {.color = c->color && !c->json,
                                .unicode = c->unicode,
                                .verbose = c->verbose};
    return st;
}

int cli_print_sb(const struct ncd_strbuf *sb)
{
    if (sb->oom) {
        cli_err("out of memory while rendering");
        return -1;
    }
    if (fwrite(ncd_sb_str(sb), 1, sb->len, stdout) != sb->len ||
        fflush(stdout) != 0) {
        cli_err("cannot write output: %s", strerror(errno));
        return -1;
    }
    return 0;
}

int cli_print_json(json_t *j)
{
    if (!j) {
        cli_err("out of memory while building JSON");
        return -1;
    }
    char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(j);
    if (!s) {
        cli_err("out of memory while printing JSON");
        return -1;
    }
    int rc = 0;
    if (fputs(s, stdout) == EOF || fputc('\n', stdout) == EOF ||
        fflush(stdout) != 0) {
        cli_err("cannot write output: %s", strerror(errno));
        rc = -1;
    }
    free(s);
    return rc;
}

int cli_output_writable(const char *opt, const char *path)
{
    if (!path || ncd_file_writable(path) == 0)
        return 0;
    cli_err("%s %s: cannot write there: %s (checked before starting, so "
            "nothing ran)", opt, path, strerror(errno));
    return -1;
}

int cli_emit(const char *output, const struct ncd_strbuf *sb)
{
    if (!output)
        return cli_print_sb(sb);
    if (sb->oom) {
        cli_err("out of memory while rendering");
        return -1;
    }
    if (ncd_write_file_atomic(output, ncd_sb_str(sb), sb->len, 0644)) {
        cli_err("cannot write %s: %s", output, strerror(errno));
        return -1;
    }
    return 0;
}

void cli_json_sb(json_t *j, struct ncd_strbuf *sb)
{
    char *s = j ? json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(j);
    if (!s) {
        sb->oom = 1;
        return;
    }
    ncd_sb_puts(sb, s);
    ncd_sb_putc(sb, '\n');
    free(s);
}

int cli_exit_for(const struct cli_common *c, enum ncd_severity worst)
{
    if (worst >= NCD_SEV_ERROR)
        return NCD_EXIT_FINDINGS;
    if (worst == NCD_SEV_WARNING && c->strict)
        return NCD_EXIT_WARN;
    return NCD_EXIT_OK;
}

const char *cli_hostname(struct ncd_ctx *ctx)
{
    static char host[256];
    ncd_sys_hostname(ctx, host, sizeof host);
    return host;
}

int cli_nccl_version(struct ncd_ctx *ctx, const char *opt, int *version,
                     char *src, size_t srclen)
{
    if (ncd_nccl_target(ctx, opt, version, src, srclen) < 0) {
        cli_err("%s", ncd_ctx_errdetail(ctx));
        return -1;
    }
    return 0;
}

int cli_node_probe(struct ncd_ctx *ctx, const char *cmd,
                   const struct cli_common *c, struct ncd_node_opts *o,
                   unsigned parts, struct ncd_node *n)
{
    struct ncd_node_opts none = {0};
    if (!o)
        o = &none;
    o->nccl_version = c->nccl_version;
    int rc = ncd_node_probe(ctx, o, parts, n);
    if (rc == NCD_EINVAL) { /* a bad --nccl-version */
        cli_err("%s", ncd_ctx_errdetail(ctx));
        return -1;
    }
    if (rc < 0) {
        cli_err("%s: %s", cmd, ncd_strerror(rc));
        return -1;
    }
    return 0;
}

int cli_parse_range(const char *s, long lo, long hi, long *out)
{
    char *e;
    errno = 0;
    long v = strtol(s, &e, 10);
    if (!*s || *e || errno || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}
