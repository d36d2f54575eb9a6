/* SPDX-License-Identifier: MIT */
/* nccl-doctor: dispatch to the subcommand named by argv[1] (default check). */
#include <stdio.h>
#include <string.h>

#include "cli_doc.h"
#include "cmd.h"
#include "ncd/report.h"

/* The commands; their summaries, help texts and options are described in
 * docs/cmdline/CMD.yaml (cli_doc.h).  `help` is handled below. */
static const struct cli_cmd commands[] = {
    {"check", ncd_cmd_check},   {"ifaces", ncd_cmd_ifaces},
    {"env", ncd_cmd_env},       {"perf", ncd_cmd_perf},
    {"probe", ncd_cmd_probe},   {"explain", ncd_cmd_explain},
    {"tune", ncd_cmd_tune},     {"verify", ncd_cmd_verify},
    {"run", ncd_cmd_run},       {"topo", ncd_cmd_topo},
    {"gather", ncd_cmd_gather},
};

const struct cli_cmd *cli_find_cmd(const char *name)
{
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

/* `text` to stdout; the exit status of printing help */
static int put_help(const char *text)
{
    fputs(text, stdout);
    return fflush(stdout) || ferror(stdout) ? NCD_EXIT_TOOL : NCD_EXIT_OK;
}

int cli_usage(const char *cmd, FILE *f)
{
    const struct cli_doc *d = cli_doc_find(cmd);
    if (d)
        fputs(d->help, f);
    return fflush(f) || ferror(f) ? NCD_EXIT_TOOL : NCD_EXIT_OK;
}

int cli_print_version(void)
{
    printf("nccl-doctor %s\n", ncd_version());
    return fflush(stdout) || ferror(stdout) ? NCD_EXIT_TOOL : NCD_EXIT_OK;
}

/* "unknown command 'chek'; did you mean 'check'?" */
static int unknown_command(const char *name)
{
    const char *names[64];
    size_t n = 0;
    for (const struct cli_doc *d = cli_docs; d->name && n < 64; d++)
        names[n++] = d->name;
    const char *s = cli_closest(name, names, n);
    if (s)
        cli_err("unknown command '%s'; did you mean '%s'?", name, s);
    else
        cli_err("unknown command '%s' (try: nccl-doctor --help)", name);
    return NCD_EXIT_TOOL;
}

/* nccl-doctor help [COMMAND] */
static int cmd_help(int argc, char **argv)
{
    if (argc < 3)
        return put_help(cli_doc_main_help);
    const char *a = argv[2];
    if (!strcmp(a, "--version") || !strcmp(a, "-V"))
        return cli_print_version();
    if (!strcmp(a, "--help") || !strcmp(a, "-h"))
        a = "help";
    else if (a[0] == '-') {
        static const struct option lo[] = {{"help", no_argument, 0, 'h'},
                                           {"version", no_argument, 0, 'V'},
                                           {0, 0, 0, 0}};
        cli_explain_bad_option("help", argc, argv, 2, lo, stderr);
        return NCD_EXIT_TOOL;
    }
    if (!cli_doc_find(a))
        return unknown_command(a);
    if (argc > 3) {
        cli_err("help: one command at a time ('%s' is one too many)",
                argv[3]);
        return NCD_EXIT_TOOL;
    }
    return cli_usage(a, stdout);
}

int main(int argc, char **argv)
{
    const char *base = strrchr(argv[0], '/');
    base = base ? base + 1 : argv[0];
    /* all_reduce_perf & co. are symlinks to this binary. */
    size_t bl = strlen(base);
    if (bl > 5 && strcmp(base + bl - 5, "_perf") == 0 && cli_find_cmd("perf"))
        return cli_find_cmd("perf")->fn(argc, argv);

    if (argc < 2 || argv[1][0] == '-') {
        if (argc >= 2 &&
            (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
            return put_help(cli_doc_main_help);
        }
        /* Default command: check, with the options given (--version and
         * -V anywhere are handled by the option parser). */
        argv[0] = (char *)"check";
        return ncd_cmd_check(argc, argv);
    }
    if (strcmp(argv[1], "help") == 0)
        return cmd_help(argc, argv);
    if (strcmp(argv[1], "version") == 0)
        return cli_print_version();
    const struct cli_cmd *c = cli_find_cmd(argv[1]);
    if (!c)
        return unknown_command(argv[1]);
    return c->fn(argc - 1, argv + 1);
}
