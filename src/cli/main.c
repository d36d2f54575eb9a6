/* SPDX-License-Identifier: MIT */
/* nccl-doctor: dispatch to the subcommand named by argv[1] (default check). */
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "ncd/report.h"

static const struct cli_cmd commands[] = {
    {"check", ncd_cmd_check,
     "diagnose this node's NCCL setup (default command)",
     ncd_cmd_check_usage},
    {"ifaces", ncd_cmd_ifaces,
     "rank network interfaces and predict NCCL's choice",
     ncd_cmd_ifaces_usage},
    {"env", ncd_cmd_env,
     "print or install the recommended NCCL_* settings",
     ncd_cmd_env_usage},
    {"perf", ncd_cmd_perf,
     "nccl-tests compatible collective benchmark (NCCL or TCP sockets)",
     ncd_cmd_perf_usage},
    {"probe", ncd_cmd_probe,
     "can every rank reach every rank on NCCL's interface? (matrix)",
     ncd_cmd_probe_usage},
    {"explain", ncd_cmd_explain,
     "name the root cause of a failed or slow job from its logs",
     ncd_cmd_explain_usage},
    {"tune", ncd_cmd_tune,
     "measure NCCL settings against each other (A/B with repetitions)",
     ncd_cmd_tune_usage},
    {"verify", ncd_cmd_verify,
     "verify this node and its GPUs step by step (PASS/FAIL/SKIP)",
     ncd_cmd_verify_usage},
    {"run", ncd_cmd_run,
     "run a job with NCCL logging on, keep its logs, explain a failure",
     ncd_cmd_run_usage},
    {"topo", ncd_cmd_topo,
     "GPU/NIC topology matrix (like nvidia-smi topo -m)",
     ncd_cmd_topo_usage},
    {"gather", ncd_cmd_gather,
     "record this node's state into a tarball for offline diagnosis",
     ncd_cmd_gather_usage},
};

const struct cli_cmd *cli_find_cmd(const char *name)
{
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

void cli_usage(const char *cmd, FILE *f)
{
    const struct cli_cmd *c = cli_find_cmd(cmd);
    if (c)
        fputs(c->usage, f);
}

static void main_usage(FILE *f)
{
    fputs("usage: nccl-doctor [COMMAND] [OPTIONS]\n"
          "\n"
          "Finds why NCCL (PyTorch, Paddle, nccl-tests) fails or is slow on\n"
          "this node, with evidence and fixes.\n"
          "\n"
          "Commands:\n",
          f);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fputs("  help CMD   show the options of CMD\n"
          "\n"
          "  --help     this text        --version  print the version\n"
          "\n"
          "With no command, `check` runs.\n",
          f);
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
        if (argc >= 2 && strcmp(argv[1], "--help") == 0) {
            main_usage(stdout);
            return 0;
        }
        if (argc >= 2 && strcmp(argv[1], "--version") == 0) {
            printf("nccl-doctor %s\n", ncd_version());
            return 0;
        }
        /* Default command: check, with the options given. */
        argv[0] = (char *)"check";
        return ncd_cmd_check(argc, argv);
    }
    if (strcmp(argv[1], "help") == 0) {
        if (argc < 3) {
            main_usage(stdout);
            return 0;
        }
        if (!cli_find_cmd(argv[2])) {
            cli_err("unknown command '%s' (try: nccl-doctor --help)", argv[2]);
            return NCD_EXIT_TOOL;
        }
        cli_usage(argv[2], stdout);
        return 0;
    }
    if (strcmp(argv[1], "version") == 0) {
        printf("nccl-doctor %s\n", ncd_version());
        return 0;
    }
    const struct cli_cmd *c = cli_find_cmd(argv[1]);
    if (!c) {
        cli_err("unknown command '%s' (try: nccl-doctor --help)", argv[1]);
        return NCD_EXIT_TOOL;
    }
    return c->fn(argc - 1, argv + 1);
}
