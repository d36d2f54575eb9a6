/* SPDX-License-Identifier: MIT */
/* probe: every rank's host name as this rank resolves it, with a deadline. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ncd/error.h"
#include "ncd/probe.h"
#include "ncd/sock.h"
#include "probe/probe_int.h"

/* First address of a getaddrinfo() answer, IPv4 first (as most launchers'
 * and NCCL's own lookups prefer). */
static void first_addr(const struct addrinfo *ai, char *out, size_t outlen)
{
    out[0] = 0;
    for (int pass = 0; pass < 2 && !out[0]; pass++)
        for (const struct addrinfo *a = ai; a; a = a->ai_next)
            if ((pass == 0) == (a->ai_family == AF_INET)) {
                ncd_sock_addr_str(a->ai_addr, out, outlen, NULL);
                break;
            }
}

/*
 * Name resolution with a deadline: a dead DNS server must not stall the
 * probe.  A worker thread resolves the distinct names one after the other
 * into a job it shares with the caller (reference counted); at the deadline
 * the caller takes what is done and leaves; the last one out frees the job.
 */
struct rjob {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs, n, done;
    char (*names)[64];
    char (*addr)[48];
    char (*err)[48];
};

static void rjob_put(struct rjob *j)
{
    pthread_mutex_lock(&j->mu);
    int last = --j->refs == 0;
    pthread_mutex_unlock(&j->mu);
    if (!last)
        return;
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    free(j->names);
    free(j->addr);
    free(j->err);
    free(j);
}

static void *resolver_main(void *arg)
{
    struct rjob *j = arg;
    for (int i = 0; i < j->n; i++) {
        char a[48] = "", e[48] = "";
        struct addrinfo hints = {.ai_family = AF_UNSPEC,
                                 .ai_socktype = SOCK_STREAM};
        struct addrinfo *ai = NULL;
        int g = getaddrinfo(j->names[i], NULL, &hints, &ai);
        if (g)
            snprintf(e, sizeof e, "%s", gai_strerror(g));
        else
            first_addr(ai, a, sizeof a);
        if (ai)
            freeaddrinfo(ai);
        pthread_mutex_lock(&j->mu);
        memcpy(j->addr[i], a, sizeof a);
        memcpy(j->err[i], e, sizeof e);
        j->done = i + 1;
        pthread_cond_broadcast(&j->cv);
        pthread_mutex_unlock(&j->mu);
    }
    rjob_put(j);
    return NULL;
}

void ncd__probe_resolve_all(struct ncd_probe_result *r,
                            struct ncd_probe_cell *row, int timeout_ms)
{
    int n = r->nranks;
    struct rjob *j = calloc(1, sizeof *j);
    int *of = calloc((size_t)n, sizeof *of);
    if (j) {
        j->names = calloc((size_t)n, sizeof *j->names);
        j->addr = calloc((size_t)n, sizeof *j->addr);
        j->err = calloc((size_t)n, sizeof *j->err);
    }
    if (!j || !of || !j->names || !j->addr || !j->err) {
        if (j) {
            free(j->names);
            free(j->addr);
            free(j->err);
        }
        free(j);
        free(of);
        for (int k = 0; k < n; k++)
            snprintf(row[k].resolve_err, sizeof row[k].resolve_err,
                     "out of memory");
        return;
    }
    for (int k = 0; k < n; k++) {
        int m;
        for (m = 0; m < j->n; m++)
            if (!strcmp(j->names[m], r->ranks[k].host))
                break;
        if (m == j->n)
            snprintf(j->names[j->n++], sizeof j->names[0], "%s",
                     r->ranks[k].host);
        of[k] = m;
    }
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    j->refs = 2;
    pthread_t t;
    if (pthread_create(&t, NULL, resolver_main, j) != 0) {
        j->refs = 1;
        rjob_put(j);
        free(of);
        for (int k = 0; k < n; k++)
            snprintf(row[k].resolve_err, sizeof row[k].resolve_err,
                     "cannot start the resolver");
        return;
    }
    pthread_detach(t);
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += timeout_ms / 1000;
    dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (dl.tv_nsec >= 1000000000L) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&j->mu);
    while (j->done < j->n)
        if (pthread_cond_timedwait(&j->cv, &j->mu, &dl) != 0)
            break;
    for (int k = 0; k < n; k++) {
        int m = of[k];
        if (m < j->done) {
            memcpy(row[k].resolved, j->addr[m], sizeof row[k].resolved);
            memcpy(row[k].resolve_err, j->err[m], sizeof row[k].resolve_err);
        } else {
            snprintf(row[k].resolve_err, sizeof row[k].resolve_err,
                     "no answer within %d ms", timeout_ms);
        }
    }
    pthread_mutex_unlock(&j->mu);
    rjob_put(j);
    free(of);
}

