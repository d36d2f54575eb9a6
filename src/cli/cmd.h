/* SPDX-License-Identifier: MIT */
/*
 * The nccl-doctor command line: one file per subcommand, one table.
 *
 * How to add a subcommand (cmd_check.c is the one to copy):
 *  1. Write src/cli/cmd_<name>.c with its option table and the function
 *       int ncd_cmd_<name>(int argc, char **argv);
 *     argv[0] is the subcommand name; parse the rest with cli_parse(),
 *     which adds the common options below (or cli_getopt() with
 *     CLI_COMMON_OPTS / cli_common_opt()).
 *  2. Declare it here and add a line to commands[] in main.c.
 *  3. Describe it and its options in docs/cmdline/<name>.yaml and list it
 *     in docs/cmdline/global.yaml (docs/cmdline/README.md): help, man
 *     page, completion and README's table are generated from that, and
 *     cli_getopt()/cli_parse() refuse a getopt table that differs.
 *  4. Add tests/shell/tNNNN-<name>.sh.
 * The library does the work; a command parses options, calls libncd
 * (node.h: probe the snapshot; check.h; node_report.h: render), prints and
 * returns an exit status from the list below.
 */
#ifndef NCD_CLI_CMD_H
#define NCD_CLI_CMD_H

#include <getopt.h>
#include <stdio.h>

#include "ncd/ctx.h"
#include "ncd/report.h"

/*
 * Exit statuses of check-like commands (check, ifaces, env, topo, explain,
 * probe, tune).  `perf` keeps nccl-tests' statuses instead (see cmd_perf.c).
 */
enum {
    NCD_EXIT_OK = 0,       /* no error findings */
    NCD_EXIT_WARN = 1,     /* warnings only, and --strict was given */
    NCD_EXIT_FINDINGS = 2, /* at least one error finding */
    NCD_EXIT_TOOL = 3,     /* the tool itself failed, or bad usage */
};

struct cli_cmd {
    const char *name;
    int (*fn)(int argc, char **argv);
};

/* Looks a command up by name; NULL when unknown. */
const struct cli_cmd *cli_find_cmd(const char *name);

/* Options every command accepts. */
struct cli_common {
    const char *sysroot; /* --sysroot DIR (default: NCD_SYSROOT or "/") */
    int json;            /* --json */
    int color;           /* resolved: 1 colour, 0 none */
    int unicode;         /* resolved: 1 when the locale is UTF-8 */
    int verbose;         /* --verbose / -v */
    int strict;          /* --strict: warnings make exit status 1 */
    const char *nccl_version; /* --nccl-version X.Y.Z, or NULL */
};

/* Long options shared by all commands; their `val`s start at 0x1000. */
enum {
    CLI_OPT_SYSROOT = 0x1000,
    CLI_OPT_JSON,
    CLI_OPT_COLOR,
    CLI_OPT_NO_COLOR,
    CLI_OPT_STRICT,
    CLI_OPT_HELP,
    CLI_OPT_NCCL_VERSION,
    CLI_OPT_VERSION,
    CLI_OPT__NEXT /* first free value for a command's own long options */
};
#define CLI_COMMON_OPTS                                                       \
    {"sysroot", required_argument, 0, CLI_OPT_SYSROOT},                       \
        {"json", no_argument, 0, CLI_OPT_JSON},                               \
        {"color", optional_argument, 0, CLI_OPT_COLOR},                       \
        {"no-color", no_argument, 0, CLI_OPT_NO_COLOR},                       \
        {"strict", no_argument, 0, CLI_OPT_STRICT},                           \
        {"nccl-version", required_argument, 0, CLI_OPT_NCCL_VERSION},         \
        {"verbose", no_argument, 0, 'v'}, {"help", no_argument, 0, 'h'},     \
        {"version", no_argument, 0, 'V'}
/* Their short letters, for getopt's short-option string. */
#define CLI_COMMON_SHORT "vhV"

/* Sets defaults (colour auto, sysroot from NCD_SYSROOT). */
void cli_common_init(struct cli_common *c);

/*
 * Handles one common option returned by getopt_long.  Returns 1 when it was
 * one (handled), 0 when not (also for 'h': the caller prints its usage with
 * cli_usage()), -1 on a bad value (message printed), 2 after printing the
 * version (-V, --version): the caller returns NCD_EXIT_OK.
 */
int cli_common_opt(struct cli_common *c, int opt, const char *arg);

/* A command's handler for its own options: `opt` is getopt_long's value,
 * `arg` its optarg.  Returns 0 when handled, -1 on a bad value (message
 * printed). */
typedef int (*cli_opt_fn)(int opt, const char *arg, void *data);

/* cli_parse() result meaning "options parsed, go on". */
#define CLI_CONTINUE (-1)

/*
 * Parses argv (argv[0] = the command name) with the common options plus
 * the command's `extra` long options (terminated by a zero entry; NULL for
 * none) handled by `fn`.  Positional arguments are refused unless
 * `first_arg` is non-NULL; then it receives the index of the first.
 * Returns CLI_CONTINUE, or an exit status to return at once: NCD_EXIT_OK
 * after --help, NCD_EXIT_TOOL on bad usage (message printed).
 */
int cli_parse(const char *cmd, int argc, char **argv, struct cli_common *c,
              const struct option *extra, cli_opt_fn fn, void *data,
              int *first_arg);

/* Prints "nccl-doctor VERSION"; returns NCD_EXIT_OK, or NCD_EXIT_TOOL
 * when stdout could not be written. */
int cli_print_version(void);

/* After a bad option: says on stderr where the options are listed. */
void cli_usage_hint(const char *cmd);

/* Prints the usage of `cmd` to `f` and flushes it.  Returns NCD_EXIT_OK,
 * or NCD_EXIT_TOOL when it could not be written (a full disk, a closed
 * pipe): the status of `--help`. */
int cli_usage(const char *cmd, FILE *f);

/* Parses a decimal integer in [lo, hi] (the whole string); -1 otherwise. */
int cli_parse_range(const char *s, long lo, long hi, long *out);

/* Prints "nccl-doctor: <msg>\n" to stderr, control characters of the
 * message (from file names, values, peers) written as \xNN so that none
 * reaches the terminal raw. */
void cli_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The same with another prefix ("nccl-doctor probe (rank 3): "). */
void cli_msg(const char *prefix, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Writes n bytes of s to f with control characters as \xNN. */
void cli_put_clean(FILE *f, const char *s, size_t n);

/*
 * Creates the library context for the chosen sysroot with a copy of this
 * process's environment.  Prints an error and returns NULL on failure.
 */
struct ncd_ctx *cli_ctx_new(const struct cli_common *c);

/*
 * For a command that reads large inputs (explain): glibc's malloc keeps
 * and reuses freed memory (no mmap() for blocks under 32 MiB, no trim,
 * one arena), and `reserve` bytes of heap (below 32 MiB: glibc's most
 * for a block from the heap) are set aside and marked for
 * transparent huge pages (madvise MADV_HUGEPAGE).  Each page touched for
 * the first time is a fault, and on virtual machines a fault costs 10 us
 * or more (13 us measured on the development VM, where explain's fixed
 * cost was ~2,800 faults).  Process-wide, so the CLI's to call, before the
 * command allocates; nothing with another libc or under AddressSanitizer
 * (its allocator is not glibc's).  Untouched reserved memory costs none.
 */
void cli_heap_bulk(size_t reserve);

/* Text style for renderers from the common options. */
struct ncd_text_style cli_text_style(const struct cli_common *c);

/* Prints a JSON value (indented, newline-terminated) to stdout and drops the
 * reference.  Returns 0, or -1 when it could not be written. */
int cli_print_json(json_t *j);

/* Writes the whole buffer to stdout; -1 on a write error (message printed). */
int cli_print_sb(const struct ncd_strbuf *sb);

/*
 * Writes the rendered buffer to `output` atomically (a temporary file in
 * its directory, mode 0644, then rename: ncd_write_file_atomic()) when it
 * is set, else to stdout.  Returns 0, or -1 after a message (also when the
 * buffer ran out of memory).
 */
int cli_emit(const char *output, const struct ncd_strbuf *sb);

/*
 * Before a command's work: checks that the file `path` named by option
 * `opt` (e.g. "--plot") can be written at the end (ncd_file_writable(): a
 * temporary file created and removed in its directory).  NULL path: 0.
 * Returns 0, or -1 after a message naming the option, path and reason;
 * the caller exits with its usage status.
 */
int cli_output_writable(const char *opt, const char *path);

/* Appends a JSON value as cli_print_json() prints it (indented, with a
 * newline) and drops the reference; NULL or a failed dump marks sb oom. */
void cli_json_sb(json_t *j, struct ncd_strbuf *sb);

/* Exit status for a findings list under the common options. */
int cli_exit_for(const struct cli_common *c, enum ncd_severity worst);

/* The host name as recorded in the sysroot (or live). Static buffer. */
const char *cli_hostname(struct ncd_ctx *ctx);

/*
 * The NCCL version to predict (ncd_nccl_target(): --nccl-version `opt`,
 * may be NULL, else the libnccl.so.2 this process loads, else the newest
 * known) into *version, its source in words into src.
 * Returns 0, or -1 on a bad --nccl-version (message printed).
 */
int cli_nccl_version(struct ncd_ctx *ctx, const char *opt, int *version,
                     char *src, size_t srclen);

/*
 * Probes the node parts (node.h) with the common options (--nccl-version).
 * Returns 0, or -1 with the message printed ("<cmd>: ...").
 */
struct ncd_node;
struct ncd_node_opts;
int cli_node_probe(struct ncd_ctx *ctx, const char *cmd,
                   const struct cli_common *c, struct ncd_node_opts *o,
                   unsigned parts, struct ncd_node *n);

int ncd_cmd_check(int argc, char **argv);
int ncd_cmd_ifaces(int argc, char **argv);
int ncd_cmd_env(int argc, char **argv);
int ncd_cmd_perf(int argc, char **argv);
int ncd_cmd_probe(int argc, char **argv);
int ncd_cmd_tune(int argc, char **argv);
int ncd_cmd_explain(int argc, char **argv);
int ncd_cmd_topo(int argc, char **argv);
int ncd_cmd_gather(int argc, char **argv);
int ncd_cmd_run(int argc, char **argv);
int ncd_cmd_verify(int argc, char **argv);

#endif
