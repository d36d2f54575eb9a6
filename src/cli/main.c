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
     "usage: nccl-doctor perf COLLECTIVE [nccl-tests options] [-np N]\n"
     "                        [--backend nccl|socket|auto] [--iface IF]\n"
     "                        [--rendezvous HOST:PORT] [--algo ring|direct]\n"
     "       all_reduce_perf [options]   (and the other *_perf names)\n"
     "\n"
     "COLLECTIVE: all_reduce all_gather reduce_scatter broadcast reduce\n"
     "            alltoall sendrecv gather scatter hypercube\n"
     "\n"
     "nccl-tests options (same parsing, output and exit status):\n"
     "  -t,--nthreads N      threads (ranks) per process          [1]\n"
     "  -g,--ngpus N         GPUs (socket: ranks) per thread      [1]\n"
     "  -b,--minbytes S      smallest size, K/M/G suffixes        [32M]\n"
     "  -e,--maxbytes S      largest size                         [32M]\n"
     "  -i,--stepbytes S     additive step (when -f <= 1)         [1M]\n"
     "  -f,--stepfactor F    multiplicative step                  [1]\n"
     "  -n,--iters N         timed iterations per size            [20]\n"
     "  -m,--agg_iters N     operations fused in one group        [1]\n"
     "  -w,--warmup_iters N  warm-up iterations                   [1]\n"
     "  -N,--run_cycles N    repeat the sweep (0 = for ever)      [1]\n"
     "  -c,--check N         check results (0 = off, #wrong N/A)  [1]\n"
     "  -o,--op OP           sum prod max min avg mulsum all      [sum]\n"
     "  -d,--datatype T      int8 uint8 int32 uint32 int64 uint64 half\n"
     "                       float double bfloat16 f8e4m3 f8e5m2 all [float]\n"
     "  -r,--root R          root rank, -1 = every root           [0]\n"
     "  -z,--blocking 0-3    sync/barrier after each operation    [0]\n"
     "  -T,--timeout S       abort after S seconds waiting (0 off)[0]\n"
     "  -C,--report_cputime  report CPU time instead of wall time [0]\n"
     "  -S,--report_timestamps 1: add a timestamp column          [0]\n"
     "  -a,--average 0-3     combine times: rank0 avg min max     [1]\n"
     "  -u,--unalign N       offset buffers by N elements         [0]\n"
     "  -J,--output_file F   also write nccl-tests JSON to F (.json)\n"
     "  -p -y -G -R -M -x -D -V -I -K   accepted; GPU-only ones noted\n"
     "\n"
     "nccl-doctor options:\n"
     "  -np N                fork N local processes (ranks) and run them\n"
     "  --backend B          nccl (libnccl.so.2 + CUDA, default when a GPU\n"
     "                       is usable), socket (TCP, any machine), auto\n"
     "  --algo A             socket: ring, direct or auto (ring for\n"
     "                       all_reduce/all_gather/reduce_scatter/broadcast/\n"
     "                       reduce, direct otherwise)\n"
     "  --iface IF           socket: interface to use (else\n"
     "                       NCCL_SOCKET_IFNAME, else the rendezvous route)\n"
     "  --rendezvous H:P     TCP rendezvous root (rank 0 listens on it);\n"
     "                       default MASTER_ADDR:MASTER_PORT\n"
     "  --peer-timeout S     socket: give up after S s without progress [60]\n"
     "  --nccl-lib PATH, --cudart-lib PATH   libraries to dlopen\n"
     "  --json               print the -J JSON document on stdout\n"
     "\n"
     "Under mpirun, srun, torchrun or paddle.distributed.launch the rank and\n"
     "size come from the launcher's variables.  NCCL_SOCKET_NTHREADS and\n"
     "NCCL_NSOCKS_PERTHREAD set the socket backend's threads and sockets.\n"
     "NCCL_TESTS_MIN_BW=X fails (exit 7) when the average bus bandwidth is\n"
     "below 0.9 X GB/s.  Exit status: 0 ok, 1 internal, 2 CUDA, 3 NCCL or\n"
     "network, 4 timeout, 5 not implemented, 6 usage, 7 wrong results or\n"
     "below NCCL_TESTS_MIN_BW, 255 bad sizes.\n"},
    {"probe", ncd_cmd_probe,
     "can every rank reach every rank on NCCL's interface? (matrix)",
     "usage: nccl-doctor probe [-np N | --rendezvous HOST:PORT] [--json]\n"
     "                         [--timeout MS] [--burst SIZE] [--no-mtu]\n"
     "                         [--nccl-version X.Y.Z] [--strict]\n"
     "\n"
     "Launched like perf (-np N on one host; under mpirun, srun, torchrun or\n"
     "paddle.distributed.launch; or --rendezvous HOST:PORT with WORLD_SIZE\n"
     "and RANK on every host).  Every rank reports its host, NCCL's\n"
     "predicted interface and address, the interface nccl-doctor recommends\n"
     "and the NCCL version; then every pair of ranks connects both ways on\n"
     "the address NCCL would use (a port from the ephemeral range, as NCCL\n"
     "gets, plus a control port outside it), measures connect time, round\n"
     "trip and a bandwidth burst, and sends don't-fragment datagrams of\n"
     "increasing size.  Rank 0 prints the host x host reachability matrix\n"
     "(ok, refused, timed-out, no-route, reset, wrong-peer, no-address) and\n"
     "findings: port filters (naming the host and port range), interfaces\n"
     "that do not reach, NCCL_SOCKET_IFNAME differences, NCCL version and\n"
     "MTU mismatches, host names resolving differently.\n"
     "\n"
     "  -np N                 fork N local ranks\n"
     "  --rendezvous H:P      rank 0 listens there, the others connect\n"
     "  --timeout MS          per connection attempt            [2000]\n"
     "  --rendezvous-timeout S  wait for all ranks               [60]\n"
     "  --burst SIZE          bandwidth burst per pair, 0 = none [4M]\n"
     "  --no-mtu              skip the don't-fragment probes\n"
     "  --nccl-version V      predict NCCL V's interface choice\n"
     "  --json                envelope + ranks, hosts, matrix, rank_matrix\n"
     "\n"
     "Exit status: 0 no errors, 1 warnings only (with --strict), 2 errors\n"
     "found, 3 the probe itself failed (a rank died, no rendezvous).\n"},
    {"explain", ncd_cmd_explain,
     "name the root cause of a failed or slow job from its logs",
     ncd_cmd_explain_usage},
    {"tune", ncd_cmd_tune,
     "measure NCCL settings against each other (A/B with repetitions)",
     "usage: nccl-doctor tune [-np N | --rendezvous HOST:PORT] [--reps R]\n"
     "                        [--candidates FILE | --families LIST]\n"
     "                        [--metric largest|average] [--backend B]\n"
     "                        [--run-timeout S] [--json] [-- PERF OPTIONS]\n"
     "\n"
     "Runs the same `perf` sweep (default: all_reduce -b 256K -e 4M -f 4\n"
     "-n 5 -w 1) under the current environment and under each candidate,\n"
     "R times each (interleaved), and prints per candidate the median bus\n"
     "bandwidth, the spread ((max-min)/median) and the ratio to the current\n"
     "settings.  A candidate whose range overlaps the current range is\n"
     "\"within noise\"; the winner must beat every current run.  The winning\n"
     "settings are printed as export lines.\n"
     "\n"
     "Candidates by default (--families ifname,ib,shm,sockets = all):\n"
     "NCCL_SOCKET_IFNAME==IF for each interface usable on every host,\n"
     "NCCL_IB_DISABLE=0/1 when an HCA exists, NCCL_SHM_DISABLE=1 on one\n"
     "host, NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD 2x2 and 4x4.\n"
     "--candidates FILE: one candidate per line, `[label:] NAME=VALUE ...`\n"
     "(-NAME unsets), '#' comments.\n"
     "\n"
     "Launch: -np N on one host; on several hosts start tune like perf\n"
     "(mpirun, srun, torchrun, or --rendezvous HOST:PORT with WORLD_SIZE\n"
     "and RANK): every rank runs its perf child against a fresh port on\n"
     "rank 0's host.  Works with --backend socket and nccl.\n"
     "\n"
     "  --reps R             runs per candidate                  [3]\n"
     "  --metric M           largest: busbw at the largest size (mean of\n"
     "                       out-of-place and in-place); average: nccl-tests'\n"
     "                       Avg bus bandwidth                   [largest]\n"
     "  --run-timeout S      kill a perf run after S seconds     [300]\n"
     "\n"
     "Exit status: 0 (1 with --strict when a candidate wins), 2 the current\n"
     "settings fail, 3 the tool failed.\n"},
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
