/* SPDX-License-Identifier: MIT */
/* libFuzzer target: what a peer sends on the wire, decoded from a buffer as
 * the socket code feeds it.  Input: SELECTOR PARAM FRAME...; SELECTOR picks
 * the decoder, PARAM the receiver's state (job size, its rank, which
 * slots are taken, the round).
 *   0 pg hello (rendezvous root)    1 pg allgather header (root)
 *   2 pg answer (process)           3 perf mesh hello
 *   4 probe hello (server)          5 probe answer (client)
 *   6 probe request (server)        7 probe UDP echo
 * Properties, checked with abort(): nothing is read out of bounds (ASan;
 * the receiver's tables are allocated to their exact size); an accepted
 * frame names a slot that exists and is free, a job size, round, length
 * and token that are ours; decoding is a pure function (twice, same
 * answer); an accepted frame re-encodes to the bytes received. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncd/probe.h"
#include "perf/perf_int.h"
#include "pg/pg_int.h"
#include "probe/probe_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define TOKEN 0x1122334455667788ull

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_wire: property violated: %s\n", what);
        abort();
    }
}

/* slots taken by earlier connections: bit i of `mask` (cyclic) */
static int *slots(size_t n, unsigned mask)
{
    int *fds = malloc(n * sizeof *fds + 1);
    for (size_t i = 0; fds && i < n; i++)
        fds[i] = (mask >> (i % 8)) & 1 ? 7 : -1;
    return fds;
}

static void pg_hello(uint8_t par, const uint8_t *buf, size_t len)
{
    int nprocs = 1 + par % 8;
    int *fds = slots((size_t)nprocs, par >> 3);
    if (!fds)
        return;
    fds[0] = -1;
    struct pg_hello h, h2;
    int kind, kind2;
    const char *why = ncd__pg_hello_check(buf, len, nprocs, TOKEN, fds,
                                          &kind, &h);
    const char *why2 = ncd__pg_hello_check(buf, len, nprocs, TOKEN, fds,
                                           &kind2, &h2);
    check(why == why2 && kind == kind2, "pg hello: same answer twice");
    check(!why == (kind == PG_HELLO_JOIN), "pg hello: joins without reason");
    if (!why) {
        check(len >= sizeof h && !memcmp(&h, buf, sizeof h),
              "pg hello: the frame as received");
        check(h.proc >= 1 && h.proc < (uint32_t)nprocs && fds[h.proc] < 0,
              "pg hello: a free process slot");
        check(h.magic == PG_MAGIC && h.version == PG_PROTO_VERSION &&
                  h.nprocs == (uint32_t)nprocs &&
                  (h.token == 0 || h.token == TOKEN),
              "pg hello: our job");
    } else {
        check(kind == PG_HELLO_STRAY ||
                  (len >= sizeof h && h.magic == PG_MAGIC &&
                   h.version == PG_PROTO_VERSION &&
                   (h.token == 0 || h.token == TOKEN)),
              "pg hello: only this job's processes are fatal or refused");
        check(kind != PG_HELLO_TAKEN ||
                  (h.proc >= 1 && h.proc < (uint32_t)nprocs &&
                   fds[h.proc] >= 0),
              "pg hello: a taken slot exists and is held");
    }
    free(fds);
}

static void pg_hdr(uint8_t par, const uint8_t *buf, size_t len, int reply)
{
    uint32_t round = par;
    uint64_t want = (uint64_t)par * 24;
    struct pg_hdr h;
    memset(&h, 0, sizeof h);
    if (!reply) {
        int r = ncd__pg_hdr_check(buf, len, round, want, &h);
        check(r == ncd__pg_hdr_check(buf, len, round, want, &h),
              "pg header: same answer twice");
        if (!r)
            check(h.magic == PG_MAGIC && h.round == round && h.len == want &&
                      !memcmp(&h, buf, sizeof h),
                  "pg header: our round and length");
        return;
    }
    int r = ncd__pg_reply_check(buf, len, round, want, &h);
    check(r >= PG_REPLY_OK && r <= PG_REPLY_BAD, "pg answer: a known kind");
    if (r == PG_REPLY_ERROR)
        check(h.len <= PG_MAX_ERRTEXT, "pg answer: error text bounded");
    if (r == PG_REPLY_OK)
        check(h.magic == PG_MAGIC && h.status == 0 && h.round == round &&
                  h.len == want,
              "pg answer: our round and length");
}

static void mesh_hello(uint8_t par, const uint8_t *buf, size_t len)
{
    int rank = par % 4, nranks = rank + 1 + (par >> 2) % 4,
        nsocks = 1 + (par >> 4) % 4;
    size_t n = (size_t)nranks * (size_t)nsocks;
    int *fds = slots(n, par * 37u);
    if (!fds)
        return;
    int from = -1, sock = -1;
    const char *why = ncd__peer_hello_check(buf, len, TOKEN, rank, nranks,
                                            nsocks, fds, &from, &sock);
    if (!why) {
        check(from > rank && from < nranks && sock >= 0 && sock < nsocks,
              "mesh hello: a rank above ours and a socket index in range");
        check(fds[(size_t)from * (size_t)nsocks + (size_t)sock] < 0,
              "mesh hello: a free slot");
        struct ncd__peer_hello h;
        memcpy(&h, buf, sizeof h);
        check(h.token == TOKEN && h.to == (uint32_t)rank &&
                  h.nsocks == (uint32_t)nsocks,
              "mesh hello: our job and rank");
    }
    free(fds);
}

static void probe_frames(int sel, uint8_t par, const uint8_t *buf,
                         size_t len)
{
    int nranks = 1 + par % 16, self = (par >> 4) % nranks;
    if (sel == 4) {
        struct hello h, h2;
        int r = ncd__probe_hello_decode(buf, len, TOKEN, nranks, self, &h);
        check(r == ncd__probe_hello_decode(buf, len, TOKEN, nranks, self,
                                           &h2),
              "probe hello: same answer twice");
        if (!r)
            check(h.src >= 0 && h.src < nranks && h.dst == self &&
                      h.kind < PROBE_K_N && h.token == TOKEN &&
                      !memcmp(&h, buf, sizeof h),
                  "probe hello: a rank of this job, to us, a known kind");
    } else if (sel == 5) {
        char detail[96];
        memset(detail, 'x', sizeof detail);
        enum ncd_probe_status s = ncd__probe_answer_decode(
            buf, len, TOKEN, self, par & 3, detail, sizeof detail);
        check(s == NCD_PROBE_OK || s == NCD_PROBE_WRONG_PEER,
              "probe answer: ok or wrong peer");
        if (s == NCD_PROBE_WRONG_PEER)
            check(memchr(detail, 0, sizeof detail) && detail[0],
                  "probe answer: a reason, terminated");
    } else if (sel == 6) {
        uint64_t burst = 0;
        int op = ncd__probe_request_decode(buf, len, &burst);
        check(op == 0 || op == 'P' || op == 'B' || op == 'Q',
              "probe request: a known op or garbage");
        if (op)
            check(len >= ncd__probe_request_size(op),
                  "probe request: whole");
        if (op == 'B')
            check(burst <= NCD_PROBE_MAX_BURST, "probe request: burst bounded");
    } else {
        struct udp_hdr h;
        if (!ncd__probe_udp_decode(buf, len, TOKEN, &h))
            check(h.magic == PROBE_MAGIC && h.token == TOKEN,
                  "probe udp: our job");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    int sel = data[0] % 8;
    uint8_t par = data[1];
    /* a copy of exactly the frame's bytes: ASan sees any read past it */
    size_t len = size - 2;
    uint8_t *buf = malloc(len + 1);
    if (!buf)
        return 0;
    memcpy(buf, data + 2, len);
    switch (sel) {
    case 0: pg_hello(par, buf, len); break;
    case 1: pg_hdr(par, buf, len, 0); break;
    case 2: pg_hdr(par, buf, len, 1); break;
    case 3: mesh_hello(par, buf, len); break;
    default: probe_frames(sel, par, buf, len); break;
    }
    free(buf);
    return 0;
}
