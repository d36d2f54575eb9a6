/* SPDX-License-Identifier: MIT */
/* probe: every rank's host name as this rank resolves it, with a deadline. */
#define _GNU_SOURCE
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "ncd/error.h"
#include "ncd/probe.h"
#include "ncd/resolve.h"
#include "ncd/sock.h"
#include "probe/probe_int.h"

/* Every rank's host name, each distinct name once, through the live
 * resolver with a deadline (ncd_resolve_live_batch: a dead DNS server must
 * not stall the probe).  The address shown is the first IPv4 answer, else
 * the first (as most launchers' and NCCL's own lookups prefer). */
void ncd__probe_resolve_all(struct ncd_probe_result *r,
                            struct ncd_probe_cell *row, int timeout_ms)
{
    int n = r->nranks, nnames = 0;
    const char **names = calloc((size_t)n, sizeof *names);
    struct ncd_resolve_answer *ans = calloc((size_t)n, sizeof *ans);
    int *of = calloc((size_t)n, sizeof *of);
    int done = NCD_ENOMEM;
    if (names && ans && of) {
        for (int k = 0; k < n; k++) {
            int m;
            for (m = 0; m < nnames; m++)
                if (!strcmp(names[m], r->ranks[k].host))
                    break;
            if (m == nnames)
                names[nnames++] = r->ranks[k].host;
            of[k] = m;
        }
        done = ncd_resolve_live_batch(names, nnames, timeout_ms, ans);
    }
    for (int k = 0; k < n; k++) {
        struct ncd_probe_cell *c = &row[k];
        if (done < 0) {
            snprintf(c->resolve_err, sizeof c->resolve_err, "%s",
                     done == NCD_ESYS ? "cannot start the resolver"
                                      : "out of memory");
        } else if (of[k] >= done) {
            snprintf(c->resolve_err, sizeof c->resolve_err,
                     "no answer within %d ms", timeout_ms);
        } else {
            const struct ncd_resolve_answer *a = &ans[of[k]];
            const struct sockaddr_storage *ss =
                a->first4.ss_family ? &a->first4 : &a->first;
            c->resolved[0] = c->resolve_err[0] = '\0';
            if (a->gai)
                snprintf(c->resolve_err, sizeof c->resolve_err, "%s",
                         gai_strerror(a->gai));
            else if (ss->ss_family)
                ncd_sock_addr_str((const struct sockaddr *)ss, c->resolved,
                                  sizeof c->resolved, NULL);
        }
    }
    free(names);
    free(ans);
    free(of);
}
