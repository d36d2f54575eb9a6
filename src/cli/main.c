/* SPDX-License-Identifier: MIT */
/* nccl-doctor: dispatch to the subcommand named by argv[1] (default check). */
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "ncd/report.h"

static const struct cli_cmd commands[] = {
    {"check", ncd_cmd_check,
     "diagnose this node's NCCL setup (default command)",
     "usage: nccl-doctor check [--json] [--strict] [--verbose]\n"
     "                         [--sysroot DIR] [--nccl-version X.Y.Z]\n"
     "\n"
     "Probes network interfaces, NCCL's own interface choice and the NCCL_*\n"
     "environment (plus ~/.nccl.conf and /etc/nccl.conf), and reports\n"
     "findings with cause, evidence and fix.\n"
     "\n"
     "  --json              machine-readable report\n"
     "  --strict            exit 1 when there are warnings but no errors\n"
     "  --verbose, -v       also list checks that passed\n"
     "  --sysroot DIR       read /sys and /proc below DIR (a capture)\n"
     "  --nccl-version V    predict NCCL V's behaviour (default: the\n"
     "                      installed libnccl.so.2, else the newest)\n"
     "  --color[=WHEN]      always, never or auto (default; NO_COLOR honoured)\n"
     "\n"
     "Exit status: 0 no errors, 1 warnings only (with --strict),\n"
     "2 errors found, 3 the tool itself failed or bad usage.\n"},
    {"ifaces", ncd_cmd_ifaces,
     "rank network interfaces and predict NCCL's choice",
     "usage: nccl-doctor ifaces [--json] [--verbose] [--sysroot DIR]\n"
     "                          [--nccl-version X.Y.Z]\n"
     "\n"
     "Lists every interface (flags, addresses, kind, speed, traffic), the\n"
     "interface nccl-doctor recommends and why, and what NCCL itself would\n"
     "pick for the bootstrap and the Socket transport.\n"},
    {"env", ncd_cmd_env,
     "print or install the recommended NCCL_* settings",
     "usage: nccl-doctor env [--format env|docker|k8s|slurm]\n"
     "                       [--profile kubernetes|docker|ethernet|infiniband]\n"
     "                       [--write FILE [--dry-run] | --remove FILE]\n"
     "\n"
     "Prints the settings recommended for this node as export lines (or in\n"
     "another format).  --write FILE keeps them in one marked block\n"
     "(# >>> nccl-doctor >>> ... # <<< nccl-doctor <<<) that re-runs replace\n"
     "in place; the file is replaced atomically, a backup is kept, and\n"
     "nothing outside the block changes.  --remove takes the block out and\n"
     "gives back the original bytes.  Symbolic links are followed; a\n"
     "hard-linked or read-only file is left alone (--dry-run shows the new\n"
     "content); an edit made by another program meanwhile stops the update.\n"},
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
     "usage: nccl-doctor topo [--json] [--sysroot DIR|TARBALL]\n"
     "                        [--topology FILE.xml] [--no-nvml]\n"
     "\n"
     "Prints the GPU and NIC matrix as `nvidia-smi topo -m` does (X, NV#,\n"
     "PIX, PXB, PHB, NODE, SYS, CPU and NUMA affinity, NIC legend),\n"
     "computed from the PCI tree in /sys; NVLink counts and GPU names come\n"
     "from NVML (libnvidia-ml.so.1) when it can be loaded.\n"
     "\n"
     "  --topology FILE     read an hwloc XML export (lstopo file.xml)\n"
     "  --no-nvml           do not load NVML\n"},
    {"gather", ncd_cmd_gather,
     "record this node's state into a tarball for offline diagnosis",
     "usage: nccl-doctor gather -o FILE.tar.gz\n"
     "\n"
     "Writes the sysfs/procfs files nccl-doctor's probes read, the address\n"
     "list, the NCCL/CUDA environment (secrets redacted), library versions\n"
     "and limits into one tarball.  Replay it anywhere with\n"
     "`nccl-doctor check --sysroot FILE.tar.gz` (or any other command).\n"
     "\n"
     "  -o, --output FILE   the tarball to write (written to a temporary\n"
     "                      file, then renamed)\n"},
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
