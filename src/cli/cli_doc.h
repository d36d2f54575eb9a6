/* SPDX-License-Identifier: MIT */
/*
 * The command line as described in docs/cmdline, compiled at build
 * time by src/gen/cligen.c into gen/cli_doc.c (see docs/cmdline/README.md
 * for how to add an option).
 */
#ifndef NCD_CLI_DOC_H
#define NCD_CLI_DOC_H

#include <getopt.h>
#include <stdio.h>

/* One documented option: has_arg as getopt's no_argument (0),
 * required_argument (1), optional_argument (2). */
struct cli_doc_opt {
    const char *name; /* long name, without "--" */
    int letter;       /* short letter, 0 for none */
    int has_arg;
};

/* One command: its summary, its whole help text and every option it
 * takes (its own, then the shared ones), terminated by a zero entry. */
struct cli_doc {
    const char *name;
    const char *summary;
    const char *help;
    const struct cli_doc_opt *opts;
};

/* Every command in the documented order, terminated by a zero entry. */
extern const struct cli_doc cli_docs[];
/* `nccl-doctor --help`. */
extern const char cli_doc_main_help[];

/* The documentation of `cmd`, or NULL. */
const struct cli_doc *cli_doc_find(const char *cmd);

/*
 * Checks that a command's getopt table `lo` (terminated by a zero entry)
 * and short-option string `shortopts` take exactly the documented
 * options: the same long names with the same argument kind, and the same
 * short letters.  Returns 0, or -1 after printing what differs (an
 * internal error: docs/cmdline/CMD.yaml and the code disagree).
 */
int cli_doc_verify(const char *cmd, const struct option *lo,
                   const char *shortopts);

/*
 * getopt_long for command `cmd`, with opterr off: checks the tables once
 * (cli_doc_verify) and explains a bad option on stderr itself ("unknown
 * option '--jsn'; did you mean '--json'?", "needs an argument",
 * "ambiguous").  Returns what getopt_long returns ('?' for any problem).
 */
int cli_getopt(const char *cmd, int argc, char **argv, const char *shortopts,
               const struct option *lo);

/*
 * Prints why argv's option at getopt's current position was refused, with
 * the closest documented option of `cmd` as a suggestion (used by
 * cli_getopt, and by perf, which keeps nccl-tests' own message).
 */
void cli_explain_bad_option(const char *cmd, int argc, char **argv,
                            int word, const struct option *lo, FILE *f);

/* The closest of `n` names to `s` by edit distance, if close enough to
 * be a typo (git's rule of thumb); NULL otherwise. */
const char *cli_closest(const char *s, const char *const *names, size_t n);

#endif
