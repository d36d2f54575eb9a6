/* SPDX-License-Identifier: MIT */
/*
 * ncd__facts_inert() (facts.c) against ncd__facts_line(): a line it calls
 * inert must leave every fact as it was, except the process's last line
 * (and, for NCD__INERT_OPCOUNT, a completed init moving to "running"),
 * whatever the process's state.  The threaded reader hands such lines to
 * the apply step as runs without their text (explain.c, LREC_INERT), so a
 * line wrongly called inert would lose a fact with 2 threads only.
 *
 * Checked on fixed lines that must and must not be inert (every branch of
 * ncd__facts_line()), then on every line of the logs under the directories
 * given as arguments (the corpora) and of the log files given (bench's
 * generated init and COLL shapes), each with its process fresh, with its
 * init complete and running.  Prints how many lines were inert.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "explain/session.h"
#include "ncd/ctx.h"
#include "ncd/explain.h"

static struct ncd_ctx *ctx;
static struct ncd_rules *rules;
static struct ncd_explain *ex;
static char scratch[NCD_LOG_MAX_LINE + 1];
static int failures;
static unsigned long nlines, ninert, nopcount;

struct global { /* the scan-wide facts a line could add to */
    size_t nhosts, nrnet, nenv, nwd, nprocs;
    int fw_vcode;
    char trail0;
};

static struct global global_of(void)
{
    struct global g = {ex->nhosts, ex->nrnet, ex->nenv, ex->nwd, ex->nprocs,
                       ex->fw_vcode, ex->trail_file[0]};
    return g;
}

/* One line, its process in state `phase`: 0 when the classification holds. */
static int check_state(const struct ncd_log_line *ll, int kind, uint8_t phase)
{
    struct ncd__proc *pr = ncd__proc_get(ex, ll);
    if (!pr)
        return 0; /* the table is full: nothing to compare */
    pr->phase = phase;
    ex->lineno++;
    ex->seq++;
    struct ncd__proc want;
    memcpy(&want, pr, sizeof want);
    ncd__facts_inert_lines(ex, &want, kind == NCD__INERT_OPCOUNT);
    struct global g0 = global_of();
    ncd__facts_line(ex, ll, pr);
    struct global g1 = global_of();
    return memcmp(&want, pr, sizeof want) != 0 ||
           memcmp(&g0, &g1, sizeof g0) != 0;
}

static void check_line(const char *line, size_t len, const char *where)
{
    struct ncd_log_line ll;
    if (ncd_log_parse(line, len, scratch, sizeof scratch, &ll) < 0)
        return;
    nlines++;
    int kind = ncd__facts_inert(&ll);
    if (!kind)
        return;
    ninert++;
    nopcount += kind == NCD__INERT_OPCOUNT;
    /* a trail already kept stops the trail test: start without one */
    ex->trail_file[0] = '\0';
    if (check_state(&ll, kind, 0) || check_state(&ll, kind, PH_COMPLETE) ||
        check_state(&ll, kind, PH_RUNNING)) {
        if (failures++ < 20)
            fprintf(stderr, "FAIL %s: called inert (%d) but a fact changed: "
                            "%.*s\n",
                    where, kind, (int)ll.text_len, ll.text);
    }
}

/* The fixed lines: `want` 0 (facts are taken) or nonzero (inert). */
static void expect(const char *line, int want)
{
    struct ncd_log_line ll;
    ncd_log_parse(line, strlen(line), scratch, sizeof scratch, &ll);
    int kind = ncd__facts_inert(&ll);
    if (!kind != !want || (want && kind != want)) {
        fprintf(stderr, "FAIL %d, want %d: %s\n", kind, want, line);
        failures++;
    }
    check_line(line, strlen(line), "fixed line");
}

static const char *H = "node1:100:200 [0] NCCL INFO ";

static void expect_info(const char *msg, int want)
{
    char b[512];
    snprintf(b, sizeof b, "%s%s", H, msg);
    expect(b, want);
}

static void fixed_lines(void)
{
    const int I = NCD__INERT, O = NCD__INERT_OPCOUNT;
    /* facts of every branch of ncd__facts_line() */
    expect_info("NCCL version 2.21.5+cuda12.4", 0);
    expect_info("NCCL_SOCKET_IFNAME set by environment to eth0", 0);
    expect_info("NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>", 0);
    expect_info("NET/IB : No device found.", 0);
    expect_info("NET/Socket : Using [0]eth0:10.0.0.1<0>", 0);
    expect_info("NET/Plugin: No plugin found (libnccl-net.so)", 0);
    expect_info("NET : Using interface eno2:10.0.0.2<0>", 0);
    expect_info("NET/IB: [0] mlx5_0:1/IB ", 0);
    expect_info("NVLS multicast support is not available on dev 0", 0);
    expect_info("Bootstrap : Using eth0:10.0.0.1<0>", 0);
    expect_info("Using network IB", 0);
    expect_info("Using internal Network Socket", 0);
    expect_info("rank 0 nranks 8", 0);
    expect_info("rank access 0 -> 1 via P2P device mem", 0);
    expect_info("9[1a000] -> 2[6b000] [send] via NET/IB/0/GDRDMA", 0);
    expect_info("Plugin Path : /opt/libnccl-net.so", 0);
    expect_info("Failed to open libibverbs.so[.1]", 0);
    expect_info("Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read", 0);
    expect_info("Channel 00/24 :    0   1   2   3", 0);
    expect_info("Connected all rings", 0);
    expect_info("Ring 00 : 3 -> 4 via NET/IB/0", 0);
    expect_info("Trees [0] 1/-1/-1->0->-1", 0);
    expect_info("GPU Direct RDMA Enabled for HCA 0 'mlx5_0'", 0);
    expect_info("Init timings: rank 0 nranks 2 total 0.53 (kernels 0.1)", 0);
    expect_info("cudaDriverVersion 12040", 0);
    expect_info("comm 0x55d0 rank 0 nRanks 2 nNodes 1 localRanks 2 "
                "localRank 0 MNNVL 0",
                0);
    expect_info("init.cc:1234 -> 3", 0);
    expect_info("transport.cc:91 (ncclTransportP2pSetup) -> 2 [Async thread]",
                0);
    expect_info("ncclCommInitRank comm 0x55 rank 0 nranks 2 cudaDev 0 busId "
                "18000 commId 0x1 - Init COMPLETE",
                0);
    expect_info("comm 0x7f13 rank 1 nranks 8 - COMPLETE", 0);
    expect("node1:100:200 [0] misc/socket.cc:50 NCCL WARN Net : Connect "
           "to 10.0.0.2<1234> failed : Connection refused",
           0);
    expect("NCCL_DEBUG=INFO", 0);       /* an environment dump: not NCCL's */
    expect("#  out-of-place in-place", 0); /* nccl-tests */
    /* inert: the process's last line, nothing else */
    expect_info("Setting affinity for GPU 0 to ffff,ffffffff", I);
    expect_info("+ PCI[24.0] - PCI/10000 (1000c01010000000)", I);
    expect_info("Ring 00 : 1 -> 0 -> 1", I);
    expect_info("Pattern 4, crossNic 0, nChannels 8, bw 40.000000/40.000000, "
                "type NVL/PIX, sameChannels 1",
                I);
    expect_info("8 coll channels, 8 collnet channels, 0 nvls channels", I);
    expect_info("NCCL_P2P_LEVEL not set", I);
    expect_info("CPU/0 (1/1/2)", I);
    expect_info("threadThresholds 8/8/64 | 16/8/64 | 512 | 512", I);
    expect_info("P2P Chunksize set to 524288", I);
    expect_info("AllReduce: opCount 1a2 sendbuff 0x7f recvbuff 0x7f count 8 "
                "datatype 7 op 0 root 0 comm 0x55 [nranks=2] stream 0x55",
                O);
}

static void check_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, f)) >= 0) {
        if (n > 0 && line[n - 1] == '\n')
            n--;
        check_line(line, (size_t)n, path);
    }
    free(line);
    fclose(f);
}

static void walk(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(p, &st) < 0)
            continue;
        size_t nl = strlen(e->d_name);
        if (S_ISDIR(st.st_mode))
            walk(p);
        else if (nl > 4 && (strcmp(e->d_name + nl - 4, ".txt") == 0 ||
                            strcmp(e->d_name + nl - 4, ".log") == 0))
            check_file(p);
    }
    closedir(d);
}

int main(int argc, char **argv)
{
    if (ncd_ctx_new("/", NULL, &ctx) < 0 || ncd_rules_new(&rules) < 0 ||
        ncd_rules_load_builtin(ctx, rules) < 0 ||
        ncd_explain_new(ctx, rules, &ex) < 0 ||
        ncd_explain_begin(ex, "facts_inert") < 0) {
        fprintf(stderr, "set-up failed\n");
        return 1;
    }
    fixed_lines();
    unsigned long fixed = nlines;
    int dirs = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            walk(argv[i]);
            dirs++;
        } else if (stat(argv[i], &st) == 0) {
            check_file(argv[i]); /* a log (bench/explain's shapes) */
        } else {
            printf("# %s: not there, not read\n", argv[i]);
        }
    }
    printf("%lu lines (%lu fixed) from %d corpora and the files given: %lu "
           "inert (%lu with opCount), %d wrongly\n",
           nlines, fixed, dirs, ninert, nopcount, failures);
    ncd_explain_free(ex);
    ncd_rules_free(rules);
    ncd_ctx_free(ctx);
    if (failures)
        return 1;
    if (!dirs) {
        printf("SKIP: no corpus directory to read\n");
        return 77;
    }
    return 0;
}
