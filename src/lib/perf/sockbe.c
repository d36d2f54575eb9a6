/* SPDX-License-Identifier: MIT */
/* The `socket` backend's entry in the backend table (see backend.h). */
#define _GNU_SOURCE
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ncd/ctx.h"
#include "ncd/error.h"
#include "ncd/perf.h"
#include "perf/backend.h"
#include "perf/sock_int.h"

struct sock_rank {
    struct ncd_peerset *ps;
    struct ncd__sock_rank *eng;
    struct ncd_rank_info info;
};

static int nsockets(const struct ncd_perf_job *j)
{
    /* NCCL: NTHREADS 0 means no helper threads and one socket per peer;
     * otherwise NTHREADS x NSOCKS_PERTHREAD, at most 64. */
    if (j->sock_nthreads <= 0)
        return 1;
    int n = j->sock_nthreads * (j->sock_nsocks > 0 ? j->sock_nsocks : 1);
    return n > 64 ? 64 : n;
}

static int sock_open(struct ncd__rt *rt)
{
    const struct ncd_perf_job *j = rt->job;
    const char *algo = j->algo == NCD_PERF_ALGO_RING     ? "ring"
                       : j->algo == NCD_PERF_ALGO_DIRECT ? "direct"
                                                         : "auto";
    snprintf(rt->desc, sizeof rt->desc,
             "socket (--backend socket: TCP between the ranks, not NCCL, no "
             "GPU; over %s %s, %s; %d socket%s per peer, %d helper "
             "thread%s, %s algorithm, host buffers)",
             j->ifname[0] ? j->ifname : "?",
             j->bind_addr[0] ? j->bind_addr : "*",
             j->iface_origin[0] ? j->iface_origin : "?", nsockets(j),
             nsockets(j) == 1 ? "" : "s", j->sock_nthreads,
             j->sock_nthreads == 1 ? "" : "s", algo);
    rt->nccl_version = 0;
    return 0;
}

static void sock_close(struct ncd__rt *rt)
{
    (void)rt;
}

static int status_of(int code)
{
    return code == NCD_ETIMEOUT ? NCD_PT_TIMEOUT
           : code == NCD_ENOMEM ? NCD_PT_INTERNAL
                                : NCD_PT_NCCL;
}

static void sock_rank_fini(struct ncd__rank *rk);

/* On failure the rank's state is freed here: rank_fini runs only after a
 * successful init. */
static int sock_rank_init(struct ncd__rank *rk)
{
    struct ncd__rt *rt = rk->rt;
    const struct ncd_perf_job *j = rt->job;
    struct sock_rank *s = calloc(1, sizeof *s);
    if (!s) {
        ncd__rt_fail(rt, NCD_PT_INTERNAL, "out of memory");
        return -1;
    }
    rk->be = s;
    int lfd = ncd_peer_listen(rk->ctx, j->bind_addr, j->ifname, rk->rank,
                              &s->info);
    if (lfd < 0) {
        ncd__rt_fail(rt, NCD_PT_NCCL, "%s", ncd_ctx_errdetail(rk->ctx));
        goto fail;
    }
    struct ncd_rank_info *all = calloc((size_t)rt->nranks, sizeof *all);
    if (!all) {
        close(lfd);
        ncd__rt_fail(rt, NCD_PT_INTERNAL, "out of memory");
        goto fail;
    }
    if (ncd__rt_allgather(rk, &s->info, sizeof s->info, all)) {
        close(lfd);
        free(all);
        goto fail;
    }
    int rc = ncd_peerset_connect(rk->ctx, lfd, rk->rank, rt->nranks, all,
                                 nsockets(j), ncd_pg_token(j->pg),
                                 j->peer_timeout_ms, &s->ps);
    free(all);
    if (rc) {
        ncd__rt_fail(rt, status_of(rc), "%s", ncd_ctx_errdetail(rk->ctx));
        goto fail;
    }
    rc = ncd__sock_rank_new(s->ps, rk->rank, rt->nranks,
                            j->sock_nthreads > 0 ? j->sock_nthreads : 1,
                            j->peer_timeout_ms, &rt->abort, &s->eng);
    if (rc) {
        ncd__rt_fail(rt, NCD_PT_INTERNAL, "out of memory");
        goto fail;
    }
    return 0;
fail:
    sock_rank_fini(rk);
    return -1;
}

static void sock_rank_fini(struct ncd__rank *rk)
{
    struct sock_rank *s = rk->be;
    if (!s)
        return;
    ncd__sock_rank_free(s->eng);
    ncd_peerset_free(s->ps);
    free(s);
    rk->be = NULL;
}

/* PCI address of an interface ("0000:1b:00") from sysfs, if it has one. */
static void iface_busid(const char *ifname, char *out, size_t len)
{
    snprintf(out, len, "0000:00:00");
    if (!ifname || !*ifname || strchr(ifname, '/'))
        return;
    char path[PATH_MAX], real[PATH_MAX];
    snprintf(path, sizeof path, "/sys/class/net/%s/device", ifname);
    if (!realpath(path, real))
        return;
    const char *b = strrchr(real, '/');
    b = b ? b + 1 : real;
    unsigned dom, bus, dev, fn;
    if (sscanf(b, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) == 4)
        snprintf(out, len, "%04x:%02x:%02x", dom, bus, dev);
}

static void sock_describe(struct ncd__rank *rk, struct ncd_perf_device *d)
{
    struct sock_rank *s = rk->be;
    d->rank = rk->rank;
    d->group = 0;
    d->pid = (int)getpid();
    snprintf(d->host, sizeof d->host, "%s", s->info.host);
    d->device = rk->rt->job->local_proc * rk->rt->nlocal + rk->local;
    iface_busid(s->info.ifname, d->busid, sizeof d->busid);
    int v6 = strchr(s->info.addr, ':') != NULL;
    snprintf(d->name, sizeof d->name, "socket %s %s%s%s:%d",
             *s->info.ifname ? s->info.ifname : "-", v6 ? "[" : "",
             s->info.addr, v6 ? "]" : "", s->info.port);
}

static int sock_alloc(struct ncd__rank *rk, size_t bytes)
{
    rk->send = malloc(bytes);
    rk->recv = malloc(bytes);
    if (!rk->send || !rk->recv) {
        free(rk->send);
        free(rk->recv);
        rk->send = rk->recv = NULL;
        ncd__rt_fail(rk->rt, NCD_PT_INTERNAL,
                     "rank %d: cannot allocate 2 x %zu bytes of host memory",
                     rk->rank, bytes);
        return -1;
    }
    /* fault the pages in now, not during the first timed operation */
    memset(rk->send, 0, bytes);
    memset(rk->recv, 0, bytes);
    rk->buflen = bytes;
    return 0;
}

static void sock_free(struct ncd__rank *rk)
{
    free(rk->send);
    free(rk->recv);
    rk->send = rk->recv = NULL;
    struct sock_rank *s = rk->be;
    if (s)
        ncd__sock_release_scratch(s->eng);
}

static int sock_run(struct ncd__rank *rk, enum ncd_perf_coll c,
                    enum ncd_perf_dtype t, enum ncd_perf_op op, int root,
                    const void *send, void *recv,
                    const struct ncd_perf_counts *k)
{
    struct sock_rank *s = rk->be;
    int rc = ncd__sock_coll(s->eng, c, t, op, root, send, recv, k,
                            rk->rt->job->algo);
    if (rc) {
        /* a failure caused by another local rank's abort is not the cause */
        const char *e = ncd__sock_rank_error(s->eng);
        ncd__rt_fail(rk->rt, status_of(rc), "rank %d: %s", rk->rank, e);
        return -1;
    }
    return 0;
}

static void sock_mem(struct ncd__rank *rk, uint64_t mem[3])
{
    struct sock_rank *s = rk->be;
    mem[0] = 0;
    mem[1] = 2 * (uint64_t)rk->buflen;
    mem[2] = s && s->eng ? ncd__sock_mem(s->eng) : 0;
}

static int sock_sync(struct ncd__rank *rk)
{
    return atomic_load(&rk->rt->abort) ? -1 : 0;
}

static int sock_copy(struct ncd__rank *rk, void *dst, const void *src,
                     size_t n)
{
    (void)rk;
    memmove(dst, src, n);
    return 0;
}

const struct ncd__backend ncd__backend_socket = {
    .name = "socket",
    .open = sock_open,
    .close = sock_close,
    .rank_init = sock_rank_init,
    .rank_fini = sock_rank_fini,
    .describe = sock_describe,
    .alloc = sock_alloc,
    .free = sock_free,
    .run_coll = sock_run,
    .sync = sock_sync,
    .to_dev = sock_copy,
    .to_host = sock_copy,
    .mem_usage = sock_mem,
};
