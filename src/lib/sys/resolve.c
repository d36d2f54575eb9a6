/* SPDX-License-Identifier: MIT */
/* The resolve operation of the live and replay tables (sysops.h): host
 * names as NCCL resolves NCCL_COMM_ID's (see include/ncd/resolve.h): live
 * getaddrinfo(AF_UNSPEC) with a deadline, or the capture's numeric forms,
 * recorded answers (.ncd/resolve, records.c) and /etc/hosts. */
#define _GNU_SOURCE
#include "ncd/error.h"
#include "ncd/fs.h"
#include "ncd/resolve.h"
#include "ncd/sysops.h"
#include "sys/sys_internal.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

static void set_why(char *why, size_t n, const char *s)
{
    if (why && n)
        snprintf(why, n, "%s", s);
}

/* Fills `out` from a numeric address without scope, plus a scope id. */
static int from_text(struct ncd_if_addr *out, const char *text, int scope)
{
    struct ncd_if_addr a;
    if (ncd_if_addr_from_string(&a, text, 0) < 0)
        return NCD_EPARSE;
    a.prefix = a.family == AF_INET ? 32 : 128;
    a.scope_id = a.family == AF_INET6 ? scope : 0;
    *out = a;
    return 0;
}

/* ---- live: getaddrinfo in a worker thread with a deadline -------------- */

/*
 * A dead DNS server must not stall the caller.  A worker thread resolves
 * the names one after the other into a job it shares with the caller
 * (reference counted); at the deadline the caller takes what is done and
 * leaves; the last one out frees the job.  A worker that finished in time
 * is joined, so no thread of ours outlives the call in the common case (a
 * detached thread still running when the process exits made
 * LeakSanitizer's stop-the-world tracer crash, "Tracer caught signal 11",
 * in CI); only a worker stuck past the deadline is detached.
 */
struct lookup {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs, n, done;
    char **names;
    struct ncd_resolve_answer *ans;
};

static void lookup_free(struct lookup *l)
{
    if (l->names)
        for (int i = 0; i < l->n; i++)
            free(l->names[i]);
    free(l->names);
    free(l->ans);
    free(l);
}

static void lookup_put(struct lookup *l)
{
    pthread_mutex_lock(&l->mu);
    int last = --l->refs == 0;
    pthread_mutex_unlock(&l->mu);
    if (!last)
        return;
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->cv);
    lookup_free(l);
}

static void copy_addr(struct sockaddr_storage *to, const struct addrinfo *a)
{
    if (a->ai_addr && a->ai_addrlen <= sizeof *to)
        memcpy(to, a->ai_addr, a->ai_addrlen);
}

static void *lookup_main(void *arg)
{
    struct lookup *l = arg;
    for (int i = 0; i < l->n; i++) {
        struct ncd_resolve_answer r;
        memset(&r, 0, sizeof r);
        struct addrinfo hints, *ai = NULL;
        memset(&hints, 0, sizeof hints);
        hints.ai_family = AF_UNSPEC; /* as NCCL: no AI_ADDRCONFIG */
        hints.ai_socktype = SOCK_STREAM;
        r.gai = getaddrinfo(l->names[i], NULL, &hints, &ai);
        if (!r.gai && ai) {
            copy_addr(&r.first, ai);
            for (const struct addrinfo *a = ai; a; a = a->ai_next)
                if (a->ai_family == AF_INET) {
                    copy_addr(&r.first4, a);
                    break;
                }
        }
        if (ai)
            freeaddrinfo(ai);
        pthread_mutex_lock(&l->mu);
        l->ans[i] = r;
        l->done = i + 1;
        pthread_cond_broadcast(&l->cv);
        pthread_mutex_unlock(&l->mu);
    }
    lookup_put(l);
    return NULL;
}

int ncd_resolve_live_batch(const char *const *names, int n, int timeout_ms,
                           struct ncd_resolve_answer *answers)
{
    if (n <= 0)
        return 0;
    struct lookup *l = calloc(1, sizeof *l);
    if (!l)
        return NCD_ENOMEM;
    l->names = calloc((size_t)n, sizeof *l->names);
    l->ans = calloc((size_t)n, sizeof *l->ans);
    if (!l->names || !l->ans) {
        lookup_free(l);
        return NCD_ENOMEM;
    }
    for (; l->n < n; l->n++)
        if (!(l->names[l->n] = strdup(names[l->n]))) {
            lookup_free(l);
            return NCD_ENOMEM;
        }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, &ca);
    pthread_condattr_destroy(&ca);
    l->refs = 2;
    pthread_t t;
    if (pthread_create(&t, NULL, lookup_main, l) != 0) {
        l->refs = 1;
        lookup_put(l);
        return NCD_ESYS;
    }
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    dl.tv_sec += timeout_ms / 1000;
    dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (dl.tv_nsec >= 1000000000L) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&l->mu);
    while (l->done < l->n &&
           pthread_cond_timedwait(&l->cv, &l->mu, &dl) != ETIMEDOUT)
        ;
    int done = l->done;
    memcpy(answers, l->ans, (size_t)done * sizeof *answers);
    pthread_mutex_unlock(&l->mu);
    lookup_put(l);
    if (done == n)
        pthread_join(t, NULL); /* it only drops its reference and returns */
    else
        pthread_detach(t);
    return done;
}

int ncd__resolve_live(struct ncd_ctx *ctx, const char *name, int timeout_ms,
                      struct ncd_if_addr *out, char *why, size_t whylen)
{
    (void)ctx;
    struct ncd_resolve_answer a;
    int done = ncd_resolve_live_batch(&name, 1, timeout_ms, &a);
    if (done == NCD_ESYS) {
        set_why(why, whylen, "cannot start a resolver thread");
        return NCD_ENOMEM;
    }
    if (done < 0)
        return done;
    if (!done) {
        if (why && whylen)
            snprintf(why, whylen, "no answer within %d ms", timeout_ms);
        return NCD_ETIMEOUT;
    }
    if (a.gai) {
        set_why(why, whylen, gai_strerror(a.gai));
        return NCD_ENOENT;
    }
    const struct sockaddr_storage ss = a.first;
    char host[NI_MAXHOST];
    socklen_t sl = ss.ss_family == AF_INET ? sizeof(struct sockaddr_in)
                                           : sizeof(struct sockaddr_in6);
    if ((ss.ss_family != AF_INET && ss.ss_family != AF_INET6) ||
        getnameinfo((const struct sockaddr *)&ss, sl, host, sizeof host, NULL,
                    0, NI_NUMERICHOST) != 0) {
        set_why(why, whylen, "unsupported address family in the answer");
        return NCD_ENOENT; /* NCCL: "Net : unsupported IP family" */
    }
    char *pct = strchr(host, '%');
    if (pct)
        *pct = '\0';
    int scope = ss.ss_family == AF_INET6
                    ? (int)((const struct sockaddr_in6 *)&ss)->sin6_scope_id
                    : 0;
    return from_text(out, host, scope);
}

/* ---- capture ------------------------------------------------------------ */

/* glibc's numeric parse: inet_aton for IPv4 (shorthands included, no
 * trailing text), inet_pton for IPv6 with an optional "%scope" (a number
 * or an interface name of the capture). */
static int numeric(struct ncd_ctx *ctx, const char *name,
                   struct ncd_if_addr *out)
{
    struct in_addr in;
    for (const char *p = name; *p; p++)
        if (isspace((unsigned char)*p))
            return 0;
    if (inet_aton(name, &in)) {
        char t[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &in, t, sizeof t);
        return from_text(out, t, 0) == 0;
    }
    char t[INET6_ADDRSTRLEN + 1];
    const char *pct = strchr(name, '%');
    size_t n = pct ? (size_t)(pct - name) : strlen(name);
    unsigned char b[16];
    if (n >= sizeof t)
        return 0;
    memcpy(t, name, n);
    t[n] = '\0';
    if (inet_pton(AF_INET6, t, b) != 1)
        return 0;
    int scope = 0;
    if (pct && pct[1]) {
        char *end;
        long v = strtol(pct + 1, &end, 10);
        if (!*end && v >= 0) {
            scope = (int)v;
        } else if (!strchr(pct + 1, '/')) {
            char path[300], idx[32];
            snprintf(path, sizeof path, "/sys/class/net/%s/ifindex", pct + 1);
            if (ncd_fs_read_str(ctx, path, idx, sizeof idx) == 0)
                scope = atoi(idx);
            else
                ncd_ctx_clear_error(ctx);
        }
    }
    return from_text(out, t, scope) == 0;
}

/* Recorded answers (.ncd/resolve, records.c).
 * @return 1 found (out set), 0 not recorded, -1 recorded as failing. */
static int recorded(struct ncd_ctx *ctx, const char *name,
                    struct ncd_if_addr *out)
{
    char *buf, addr[80];
    size_t len;
    if (ncd_fs_read(ctx, "/.ncd/resolve", 1 << 20, &buf, &len) < 0) {
        ncd_ctx_clear_error(ctx);
        return 0;
    }
    int r = ncd__record_resolve_lookup(buf, len, name, addr, sizeof addr);
    free(buf);
    if (r > 0 && !numeric(ctx, addr, out))
        r = 0;
    return r;
}

/* <sysroot>/etc/hosts, first line listing the name. */
static int hosts_file(struct ncd_ctx *ctx, const char *name,
                      struct ncd_if_addr *out)
{
    char *buf;
    size_t len;
    if (ncd_fs_read(ctx, "/etc/hosts", 1 << 20, &buf, &len) < 0) {
        ncd_ctx_clear_error(ctx);
        return 0;
    }
    int found = ncd_hosts_lookup(buf, len, name, out);
    free(buf);
    return found;
}

int ncd__resolve_replay(struct ncd_ctx *ctx, const char *name, int timeout_ms,
                        struct ncd_if_addr *out, char *why, size_t whylen)
{
    (void)timeout_ms;
    if (numeric(ctx, name, out))
        return 0;
    int r = recorded(ctx, name, out);
    if (r > 0)
        return 0;
    if (r < 0) {
        set_why(why, whylen, "recorded as not resolving on that host");
        return NCD_ENOENT;
    }
    if (hosts_file(ctx, name, out))
        return 0;
    set_why(why, whylen,
            "not in the capture's /etc/hosts or recorded answers (a DNS "
            "answer cannot be replayed)");
    return NCD_ENOTLIVE;
}
