/* SPDX-License-Identifier: MIT */
/*
 * Writes a realistic NCCL_DEBUG=INFO log of about SIZE bytes to stdout, in
 * one of two shapes (Open MPI/torchrun prefixes on part of the lines):
 *  coll  a job of NODES x 8 ranks initialises (version, env echo,
 *        bootstrap, NET/IB, rings, trees, per-peer P2P/NET connections, Init
 *        COMPLETE, timings), then NCCL_DEBUG_SUBSYS=COLL lines (~200 B)
 *        fill the log;
 *  init  only initialisation output (~90 B a line): the ranks create
 *        communicator after communicator (data/tensor/pipeline-parallel
 *        groups), each with the topology dump, graph search results, ring
 *        and tree lines and one line per channel and peer, as NCCL 2.21
 *        prints them with NCCL_DEBUG_SUBSYS=INIT,GRAPH,NET,ENV.
 * At 99 % one rank prints an IB completion error (the root cause) and later
 * other ranks print the consequences.
 * Usage: gen_log SIZE_BYTES [NODES [coll|init]]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long long rng = 88172645463325252ull;
static unsigned long long next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static const char *prefix(int rank, char *buf, size_t n)
{
    switch (rank % 4) {
    case 0:
        snprintf(buf, n, "[1,%d]<stdout>:", rank);
        break;
    case 1:
        snprintf(buf, n, "[rank%d]:", rank);
        break;
    default:
        buf[0] = '\0';
    }
    return buf;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: gen_log SIZE_BYTES [NODES [coll|init]]\n");
        return 2;
    }
    unsigned long long size = strtoull(argv[1], NULL, 0);
    int nodes = argc > 2 ? atoi(argv[2]) : 64;
    int init_shape = argc > 3 && strcmp(argv[3], "init") == 0;
    if (nodes < 1 || (argc > 3 && !init_shape && strcmp(argv[3], "coll") != 0)) {
        fprintf(stderr, "gen_log: NODES >= 1, shape coll or init\n");
        return 2;
    }
    int nranks = nodes * 8;
    static char out[1 << 20];
    setvbuf(stdout, out, _IOFBF, sizeof out);
    unsigned long long written = 0;
    char pre[32];
#define P(r, ...)                                                                  \
    do {                                                                           \
        int _n = printf("%snode%d:%d:%d [%d] ", prefix(r, pre, sizeof pre),        \
                        (r) / 8 + 1, 100000 + (r), 100100 + (r), (r) % 8);         \
        _n += printf(__VA_ARGS__);                                                 \
        written += (unsigned long long)_n;                                         \
    } while (0)
    if (init_shape) {
        unsigned long long warn_at = size / 100 * 99;
        int warned = 0, consequences = 0;
        unsigned char *seen = calloc((size_t)nranks, 1);
        if (!seen)
            return 1;
        for (unsigned comm = 0; written < size; comm++) {
            /* groups of 2, 4 or 8 ranks (TP/PP) or the whole job (DP) */
            int gsize = comm % 4 == 3 ? nranks : 2 << (comm % 3);
            if (gsize > nranks)
                gsize = nranks;
            int base = (int)(comm * 8 % (unsigned)nranks) / gsize * gsize;
            for (int g = 0; g < gsize && written < size; g++) {
                int r = base + g, node = r / 8 + 1, dev = r % 8;
                int next_r = base + (g + 1) % gsize, prev_r = base + (g + gsize - 1) % gsize;
                unsigned long long id = 0x55d0c0000000ull + comm * 0x10000ull + (unsigned)r;
                if (!seen[r]) {
                    seen[r] = 1;
                    P(r, "NCCL INFO NCCL version 2.21.5+cuda12.4\n");
                    P(r, "NCCL INFO cudaDriverVersion 12040\n");
                    P(r, "NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0\n");
                    P(r, "NCCL INFO Bootstrap : Using eth0:10.0.%d.%d<0>\n", node / 256, node % 256);
                    P(r, "NCCL INFO NET/Plugin: No plugin found (libnccl-net.so)\n");
                    P(r, "NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [RO]; OOB eth0:10.0.%d.%d<0>\n",
                      node / 256, node % 256);
                    P(r, "NCCL INFO Using network IB\n");
                }
                P(r, "NCCL INFO comm 0x%llx rank %d nRanks %d nNodes %d localRanks %d localRank %d MNNVL 0\n",
                  id, g, gsize, (gsize + 7) / 8, gsize < 8 ? gsize : 8, dev);
                P(r, "NCCL INFO Setting affinity for GPU %d to ffff,ffffffff\n", dev);
                P(r, "NCCL INFO NVLS multicast support is not available on dev %d\n", dev);
                P(r, "NCCL INFO === System : maxBw 24.0 totalBw 264.0 ===\n");
                P(r, "NCCL INFO CPU/%d (1/1/2)\n", dev / 4);
                for (int k = 0; k < 4; k++) {
                    P(r, "NCCL INFO + PCI[24.0] - PCI/%x000 (1000c01010000000)\n", 0x10 + k * 0x20);
                    P(r, "NCCL INFO               + PCI[24.0] - GPU/%x000 (%d)\n", 0x18 + k * 0x20, k);
                    P(r, "NCCL INFO                             + NVL[264.0] - NVS/0\n");
                }
                P(r, "NCCL INFO ==========================================\n");
                P(r, "NCCL INFO Pattern 4, crossNic 0, nChannels 8, bw 40.000000/40.000000, type NVL/PIX, "
                     "sameChannels 1\n");
                for (int c = 0; c < 8; c++)
                    P(r, "NCCL INFO  %d : NET/0 GPU/%d GPU/%d NET/0\n", c, r, next_r);
                P(r, "NCCL INFO Trees [0] %d/-1/-1->%d->%d [1] %d/-1/-1->%d->%d\n", next_r, r, prev_r, next_r,
                  r, prev_r);
                P(r, "NCCL INFO P2P Chunksize set to 524288\n");
                for (int c = 0; c < 8; c++) {
                    P(r, "NCCL INFO Ring %02d : %d -> %d -> %d\n", c, prev_r, r, next_r);
                    if (next_r / 8 == r / 8)
                        P(r, "NCCL INFO Channel %02d/0 : %d[%d] -> %d[%d] via P2P/IPC/read\n", c, r, dev,
                          next_r, next_r % 8);
                    else
                        P(r, "NCCL INFO Channel %02d/0 : %d[%d] -> %d[%d] [send] via NET/IB/%d/GDRDMA\n", c,
                          r, dev, next_r, next_r % 8, c % 2);
                }
                P(r, "NCCL INFO Connected all rings\n");
                P(r, "NCCL INFO Connected all trees\n");
                P(r, "NCCL INFO threadThresholds 8/8/64 | 64/8/64 | 512 | 512\n");
                P(r, "NCCL INFO 8 coll channels, 8 collnet channels, 0 nvls channels, 8 p2p channels, "
                     "2 p2p channels per peer\n");
                P(r, "NCCL INFO CC Off, Multi-GPU CE disabled, workFifoBytes 1048576\n");
                P(r, "NCCL INFO ncclCommInitRank comm 0x%llx rank %d nranks %d cudaDev %d nvmlDev %d "
                     "busId %x000 commId 0x%llx - Init COMPLETE\n", id, g, gsize, dev, dev,
                  0x18 + dev * 0x10, id * 31);
                if (!warned && written >= warn_at) {
                    printf("\n");
                    P(r, "transport/net_ib.cc:1900 NCCL WARN NET/IB: Got completion from peer "
                         "10.0.9.9<38461> with status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_SEND(0) "
                         "vendor_err=129 localGid ::ffff:10.0.0.3 remoteGid ::ffff:10.0.0.9 hca mlx5_1\n");
                    warned = 1;
                } else if (warned && consequences < 50 && next() % 10 == 0) {
                    printf("\n");
                    P(r, "misc/socket.cc:538 NCCL WARN socketProgress: Connection closed by remote peer "
                         "node%d<55426>\n", nranks / 3 / 8 + 1);
                    consequences++;
                }
            }
        }
        free(seen);
        fflush(stdout);
        return 0;
    }
    for (int r = 0; r < nranks; r++) {
        int node = r / 8 + 1, dev = r % 8;
        P(r, "NCCL INFO NCCL version 2.21.5+cuda12.4\n");
        P(r, "NCCL INFO cudaDriverVersion 12040\n");
        P(r, "NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0\n");
        P(r, "NCCL INFO NCCL_IB_HCA set by environment to mlx5_0,mlx5_1,mlx5_2,mlx5_3\n");
        P(r, "NCCL INFO Bootstrap : Using eth0:10.0.%d.%d<0>\n", node / 256, node % 256);
        P(r, "NCCL INFO NET/Plugin: No plugin found (libnccl-net.so)\n");
        P(r, "NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB "
             "[3]mlx5_3:1/IB [RO]; OOB eth0:10.0.%d.%d<0>\n", node / 256, node % 256);
        P(r, "NCCL INFO Using network IB\n");
        P(r, "NCCL INFO DMA-BUF is available on GPU device %d\n", dev);
        P(r, "NCCL INFO comm 0x55d0c0%04x rank %d nRanks %d nNodes %d localRanks 8 "
             "localRank %d MNNVL 0\n", r, r, nranks, nodes, dev);
        P(r, "NCCL INFO Setting affinity for GPU %d to ffff,ffffffff\n", dev);
        if (r == 0)
            for (int c = 0; c < 16; c++)
                P(r, "NCCL INFO Channel %02d/16 : 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17\n", c);
        P(r, "NCCL INFO Trees [0] %d/-1/-1->%d->%d [1] %d/-1/-1->%d->%d\n", (r + 1) % nranks, r,
          (r + nranks - 1) % nranks, (r + 1) % nranks, r, (r + nranks - 1) % nranks);
        for (int c = 0; c < 16; c++) {
            int peer = (r + 1) % nranks;
            if (peer / 8 == r / 8)
                P(r, "NCCL INFO Channel %02d/0 : %d[%d] -> %d[%d] via P2P/IPC/read\n", c, r,
                  dev, peer, peer % 8);
            else
                P(r, "NCCL INFO Channel %02d/0 : %d[%d] -> %d[%d] [send] via NET/IB/%d/GDRDMA\n",
                  c, r, dev, peer, peer % 8, c % 4);
        }
        P(r, "NCCL INFO Connected all rings\n");
        P(r, "NCCL INFO Connected all trees\n");
        P(r, "NCCL INFO threadThresholds 8/8/64 | 4096/8/64 | 512 | 512\n");
        P(r, "NCCL INFO 16 coll channels, 16 collnet channels, 0 nvls channels, 16 p2p "
             "channels, 2 p2p channels per peer\n");
        P(r, "NCCL INFO ncclCommInitRank comm 0x55d0c0%04x rank %d nranks %d cudaDev %d "
             "nvmlDev %d busId %x000 commId 0x5bd1e2f0a1b2c3d4 - Init COMPLETE\n", r, r,
          nranks, dev, dev, 0x18 + dev * 0x10);
        P(r, "NCCL INFO Init timings - ncclCommInitRank: rank %d nranks %d total 1.42 "
             "(kernels 0.21, alloc 0.05, bootstrap 0.33, allgathers 0.02, topo 0.30, "
             "graphs 0.03, connections 0.41, rest 0.07)\n", r, nranks);
    }
    static const char *const colls[] = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast"};
    unsigned long long op = 0, warn_at = size / 100 * 99;
    int warned = 0, consequences = 0;
    while (written < size) {
        int r = (int)(next() % (unsigned)nranks);
        const char *c = colls[next() % 4];
        P(r, "NCCL INFO %s: opCount %llx sendbuff 0x7f3a%08llx recvbuff 0x7f3b%08llx "
             "count %llu datatype %d op %d root 0 comm 0x55d0c0%04x [nranks=%d] stream "
             "0x55d0d1%04x\n",
          c, op++, next() & 0xffffffff, next() & 0xffffffff, (next() % 67108864) + 1,
          (int)(next() % 10), (int)(next() % 4), r, nranks, r);
        if (!warned && written >= warn_at) {
            int v = nranks / 3;
            printf("\n");
            P(v, "transport/net_ib/net_ib.cc:1900 NCCL WARN NET/IB: Got completion from "
                 "peer 10.0.9.9<38461> with status=IBV_WC_RETRY_EXC_ERR(12) "
                 "opcode=IBV_WC_SEND(0) vendor_err=129 localGid ::ffff:10.0.0.3 "
                 "remoteGid ::ffff:10.0.0.9 hca mlx5_2\n");
            warned = 1;
        }
        if (warned && consequences < 50 && next() % 1000 == 0) {
            int v = (int)(next() % (unsigned)nranks);
            printf("\n");
            P(v, "misc/socket.cc:538 NCCL WARN socketProgress: Connection closed by "
                 "remote peer node%d<55426>\n", nranks / 3 / 8 + 1);
            consequences++;
        }
    }
    fflush(stdout);
    return 0;
}
