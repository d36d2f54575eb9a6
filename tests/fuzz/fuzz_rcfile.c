/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the rc-file block editor (ncd_rc_find/ncd_rc_splice).
 * Input: BODY '\0' FILE, or just FILE (then a fixed body).  A body that
 * does not end in '\n' gets one.  Properties, checked with abort():
 *  - removing from a file without a block gives the same bytes;
 *  - removing a block leaves a file without one;
 *  - a write that is accepted holds the body in exactly one block, writing
 *    it again gives the same bytes (idempotent), and removing it gives the
 *    file back byte for byte (or, when the file had a block, the same as
 *    removing that block);
 *  - a refused write has a reason: broken markers, a body that is not
 *    whole shell lines, or a file ending inside a here-document/quote that
 *    would swallow an appended block. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncd/ctx.h"
#include "ncd/error.h"
#include "ncd/rcfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_rcfile: property violated: %s\n", what);
        abort();
    }
}

static int same(const char *a, size_t al, const char *b, size_t bl)
{
    return al == bl && memcmp(a, b, al) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data;
    const char *nul = memchr(in, '\0', size);
    char *body;
    const char *old;
    size_t oldlen;
    if (nul) {
        size_t bl = (size_t)(nul - in);
        body = malloc(bl + 2);
        if (!body)
            return 0;
        memcpy(body, in, bl);
        if (bl && body[bl - 1] != '\n')
            body[bl++] = '\n';
        body[bl] = '\0';
        old = nul + 1;
        oldlen = size - (size_t)(nul - in) - 1;
    } else {
        body = strdup("export NCCL_SOCKET_IFNAME=eth0\n");
        if (!body)
            return 0;
        old = in;
        oldlen = size;
    }
    struct ncd_ctx *ctx;
    if (ncd_ctx_new("/", NULL, &ctx) < 0) {
        free(body);
        return 0;
    }
    struct ncd_rc_block b0, b1;
    int f0 = ncd_rc_find(ctx, old, oldlen, &b0);

    /* remove */
    char *r0 = NULL, *w1 = NULL, *w2 = NULL, *r1 = NULL;
    size_t lr0 = 0, l1 = 0, l2 = 0, lr1 = 0;
    int rr = ncd_rc_splice(ctx, old, oldlen, NULL, &r0, &lr0);
    if (f0 == NCD_ENOMEM || rr == NCD_ENOMEM)
        goto out;
    check(rr == (f0 < 0 ? f0 : 0), "remove fails exactly when find does");
    if (f0 == 0)
        check(same(r0, lr0, old, oldlen), "remove without a block is a no-op");
    if (f0 == 1) {
        check(ncd_rc_find(ctx, r0, lr0, NULL) == 0,
              "no block is left after remove");
        check(lr0 < oldlen && memcmp(r0, old, b0.begin - (b0.begin > 0)) == 0,
              "remove keeps what is before the block");
    }

    /* write */
    int rw = ncd_rc_splice(ctx, old, oldlen, body, &w1, &l1);
    if (rw == NCD_ENOMEM)
        goto out;
    if (rw < 0) {
        check(f0 < 0 || rw == NCD_EINVAL || (f0 == 0 && rw == NCD_EPARSE),
              "a write is refused only for markers, the body, or an append "
              "the file would swallow");
        goto out;
    }
    check(f0 >= 0, "write accepted broken markers");
    check(ncd_rc_find(ctx, w1, l1, &b1) == 1, "the written block is found");
    size_t bl = strlen(body), el = strlen(NCD_RC_END);
    size_t tail = w1[b1.end - 1] == '\n';
    check(b1.end - b1.begin >= strlen(NCD_RC_BEGIN) + 1 + bl + el + tail &&
              memcmp(w1 + b1.begin, NCD_RC_BEGIN "\n",
                     strlen(NCD_RC_BEGIN) + 1) == 0 &&
              memcmp(w1 + b1.end - tail - el, NCD_RC_END, el) == 0 &&
              memcmp(w1 + b1.end - tail - el - bl, body, bl) == 0,
          "the block holds the body between the markers");
    if (f0 == 1)
        check(b1.begin == b0.begin &&
                  same(w1 + b1.end, l1 - b1.end, old + b0.end,
                       oldlen - b0.end) &&
                  memcmp(w1, old, b0.begin) == 0,
              "a re-write changes nothing outside the block");
    int rw2 = ncd_rc_splice(ctx, w1, l1, body, &w2, &l2);
    if (rw2 == NCD_ENOMEM)
        goto out;
    check(rw2 == 0 && same(w1, l1, w2, l2), "write is idempotent");
    int rr1 = ncd_rc_splice(ctx, w1, l1, NULL, &r1, &lr1);
    if (rr1 == NCD_ENOMEM)
        goto out;
    check(rr1 == 0, "a written file can be cleaned");
    if (f0 == 0)
        check(same(r1, lr1, old, oldlen),
              "write-then-remove gives back the original bytes");
    else
        check(same(r1, lr1, r0, lr0),
              "write-then-remove equals remove for a file with a block");
out:
    free(r0);
    free(w1);
    free(w2);
    free(r1);
    free(body);
    ncd_ctx_free(ctx);
    return 0;
}
