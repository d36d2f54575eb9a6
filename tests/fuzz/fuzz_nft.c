/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the firewall analysis of an nftables rule set
 * (ncd_nft_analyze: src/lib/node/jflat.c's JSON reader, then ports.c) on
 * any bytes, as a capture's .ncd/nft.json may hold anything.  Properties,
 * checked with abort():
 *  - the answer is 0, NCD_EPARSE or NCD_ENOMEM;
 *  - on 0 the rule set is known, at most 8 evidence lines, each
 *    NUL-terminated inside its slot; flags are 0 or 1;
 *  - the same input gives the same answer twice (no state kept);
 *  - a range of one port is covered whenever a wider range that holds it
 *    is (coverage is monotone), for the same input. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncd/ctx.h"
#include "ncd/error.h"
#include "ncd/ports.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_nft: property violated: %s\n", what);
        abort();
    }
}

static struct ncd_ctx *ctx_once(void)
{
    static struct ncd_ctx *ctx;
    if (!ctx && ncd_ctx_new("/", NULL, &ctx) != 0)
        abort();
    return ctx;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ncd_ctx *ctx = ctx_once();
    const char *js = (const char *)data;
    struct ncd_fw a, b, one;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    memset(&one, 0, sizeof one);
    int ra = ncd_nft_analyze(ctx, js, size, 40000, 40100, &a);
    check(ra == 0 || ra == NCD_EPARSE || ra == NCD_ENOMEM, "answer");
    int rb = ncd_nft_analyze(ctx, js, size, 40000, 40100, &b);
    check(ra == rb, "same answer twice");
    ncd_ctx_clear_error(ctx);
    if (ra != 0)
        return 0;
    check(a.known == 1, "known");
    check(a.n_evidence >= 0 && a.n_evidence <= 8, "evidence count");
    for (int i = 0; i < a.n_evidence; i++)
        check(memchr(a.evidence[i], 0, sizeof a.evidence[i]) != NULL,
              "evidence NUL-terminated");
    check((a.policy_drop | a.accept_covers | a.drop_overlap) <= 1, "flags");
    check(a.policy_drop == b.policy_drop && a.accept_covers == b.accept_covers &&
              a.drop_overlap == b.drop_overlap && a.n_evidence == b.n_evidence &&
              a.input_chains == b.input_chains,
          "deterministic");
    for (int i = 0; i < a.n_evidence; i++)
        check(strcmp(a.evidence[i], b.evidence[i]) == 0, "same evidence");
    check(ncd_nft_analyze(ctx, js, size, 40050, 40050, &one) == 0, "one port");
    check(!a.accept_covers || one.accept_covers, "coverage monotone");
    return 0;
}
