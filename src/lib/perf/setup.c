/* SPDX-License-Identifier: MIT */
/*
 * Setting up a perf run (include/ncd/perf.h section 6): backend and
 * algorithm names, whether the collective fits the
 * job, the socket transport's thread and socket counts as NCCL reads them,
 * and nccl-tests' own environment variables.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncd/error.h"
#include "ncd/fs.h"
#include "ncd/ncclvars.h"
#include "ncd/perf.h"
#include "ncd/shm.h"
#include "perf/coll.h"

int ncd_perf_backend_from_name(const char *s)
{
    if (!s || !strcmp(s, "nccl"))
        return NCD_PERF_BACKEND_NCCL;
    if (!strcmp(s, "socket"))
        return NCD_PERF_BACKEND_SOCKET;
    return -1;
}

const char *ncd_perf_backend_name(enum ncd_perf_backend_kind b)
{
    return b == NCD_PERF_BACKEND_SOCKET ? "socket" : "nccl";
}

int ncd_perf_algo_from_name(const char *s)
{
    if (!s || !strcmp(s, "auto"))
        return NCD_PERF_ALGO_AUTO;
    if (!strcmp(s, "ring"))
        return NCD_PERF_ALGO_RING;
    if (!strcmp(s, "direct"))
        return NCD_PERF_ALGO_DIRECT;
    return -1;
}

int ncd_perf_validate(const struct ncd_perf_opts *o, int nranks,
                      enum ncd_perf_backend_kind be, char *why,
                      size_t whylen)
{
    const struct ncd__coll *row = ncd__coll(o->coll);
    int st = row && row->validate ? row->validate(o, nranks, why, whylen) : 0;
    if (st)
        return st;
    if (ncd_perf_coll_needs_pow2(o->coll) && (nranks & (nranks - 1))) {
        snprintf(why, whylen,
                 "%s needs a power-of-two number of ranks, not %d",
                 ncd_perf_coll_name(o->coll), nranks);
        return 6;
    }
    if (ncd_perf_coll_has_root(o->coll) && o->root >= nranks) {
        /* NCCL rejects it (ncclInvalidArgument); nccl-tests then fails
         * with "Test NCCL failure ... invalid argument", status 3. */
        snprintf(why, whylen,
                 "Test NCCL failure: invalid argument: root %d is not a rank "
                 "(nranks %d; ranks are 0-%d, -1 runs every root)",
                 o->root, nranks, nranks - 1);
        return 3;
    }
    if (be == NCD_PERF_BACKEND_SOCKET &&
        (o->dtype == NCD_DT_F8E4M3 || o->dtype == NCD_DT_F8E5M2)) {
        snprintf(why, whylen,
                 "the socket backend does not reduce fp8 types (%s)",
                 ncd_perf_dtype_name(o->dtype));
        return 5;
    }
    return 0;
}

size_t ncd_perf_buffer_bytes(const struct ncd_perf_opts *o, int nranks)
{
    size_t need = 0;
    for (int t = 0; t < NCD_DT__COUNT; t++) {
        if (o->dtype >= 0 && t != o->dtype)
            continue;
        size_t es = ncd_perf_dtype_size((enum ncd_perf_dtype)t);
        /* alltoallv's traffic differs per rank: the largest of any rank */
        int nr = o->traffic && nranks > 0 ? nranks : 1;
        for (int r = 0; r < nr; r++) {
            struct ncd_perf_counts k;
            ncd_perf_counts_traffic(o->coll, o->maxbytes, es, nranks, r,
                                    o->traffic, &k);
            size_t b =
                (k.sendcount > k.recvcount ? k.sendcount : k.recvcount) * es;
            if (b > need)
                need = b;
        }
    }
    return need + (size_t)o->unalign * 8;
}

uint64_t ncd_perf_rank_host_bytes(const struct ncd_perf_opts *o, int nranks,
                                  enum ncd_perf_backend_kind be, int *nbufs)
{
    const struct ncd__coll *c = ncd__coll(o->coll);
    *nbufs = be == NCD_PERF_BACKEND_NCCL ? 0 : 2 + (c && c->sock_scratch);
    return (uint64_t)*nbufs * ncd_perf_buffer_bytes(o, nranks);
}

static void human(char *out, size_t len, double b)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (b >= 1024 && u < 4)
        b /= 1024, u++;
    snprintf(out, len, u ? "%.1f %s" : "%.0f %s", b, unit[u]);
}

int ncd_perf_mem_fit(struct ncd_ctx *ctx, const struct ncd_perf_opts *o,
                     int nranks, int local_ranks,
                     enum ncd_perf_backend_kind be, char *why, size_t whylen)
{
    int nbufs;
    uint64_t per = ncd_perf_rank_host_bytes(o, nranks, be, &nbufs);
    if (whylen)
        why[0] = '\0';
    if (!per || local_ranks < 1)
        return 0;
    char *buf;
    size_t len;
    if (ncd_fs_read(ctx, "/proc/meminfo", 1 << 20, &buf, &len) < 0) {
        ncd_ctx_clear_error(ctx);
        return 0;
    }
    long long avail = ncd_meminfo_field(buf, len, "MemAvailable");
    free(buf);
    double need = (double)per * local_ranks;
    if (avail < 0 || need <= (double)avail)
        return 0;
    /* the largest power-of-two -e that fits, with nccl-tests' suffixes */
    double fit = (double)o->maxbytes * (double)avail / need;
    size_t e = 1;
    while ((double)e * 2 <= fit)
        e *= 2;
    char es[32];
    snprintf(es, sizeof es, "%zu%s",
             e >= (1u << 30) ? e >> 30 : e >= (1u << 20) ? e >> 20
                                     : e >= 1024      ? e >> 10
                                                      : e,
             e >= (1u << 30) ? "G" : e >= (1u << 20) ? "M"
                                   : e >= 1024       ? "K"
                                                     : "");
    char n[32], a[32], b[32];
    human(n, sizeof n, need);
    human(a, sizeof a, (double)avail);
    human(b, sizeof b, (double)per / nbufs);
    snprintf(why, whylen,
             "the sweep needs %s of host memory on this host (%d local "
             "rank%s x %d buffers x %s for -e %zu) but MemAvailable is %s: "
             "lower -e (-e %s fits) or run fewer ranks here",
             n, local_ranks, local_ranks == 1 ? "" : "s", nbufs, b,
             o->maxbytes, a, es);
    return 6;
}

/* The catalog's bound of `name`, or `dflt` when it has none. */
static long long cat_max(const struct ncd_var_catalog *cat, const char *name,
                         long long dflt)
{
    const struct ncd_var_def *d = ncd_var_find(cat, name);
    return d && d->has_max ? d->max : dflt;
}

/* An integer as NCCL_PARAM reads it; `dflt` when unset, empty or out of
 * range (NCCL then keeps its default). */
static long long nccl_int(struct ncd_ctx *ctx, const char *name,
                          long long dflt)
{
    const char *v = ncd_getenv(ctx, name);
    long long x;
    int junk;
    if (!v || !*v || ncd_nccl_int_parse(v, &x, &junk))
        return dflt;
    return x;
}

/* The catalog's NCCL_SOCKET_NTHREADS and NCCL_NSOCKS_PERTHREAD maxima
 * (NCCL's MAX_THREADS 16 and MAX_SOCKETS 64). */
static int socket_limits(struct ncd_ctx *ctx, long long *tmax, long long *smax)
{
    struct ncd_var_catalog cat;
    memset(&cat, 0, sizeof cat);
    int rc = ncd_var_catalog_builtin(ctx, &cat);
    if (rc) {
        ncd_var_catalog_release(&cat);
        return rc;
    }
    *tmax = cat_max(&cat, "NCCL_SOCKET_NTHREADS", -1);
    *smax = cat_max(&cat, "NCCL_NSOCKS_PERTHREAD", -1);
    ncd_var_catalog_release(&cat);
    if (*tmax < 1 || *smax < 1)
        return ncd_fail(ctx, NCD_EPARSE,
                        "the variable catalog has no maximum for "
                        "NCCL_SOCKET_NTHREADS or NCCL_NSOCKS_PERTHREAD");
    return 0;
}

/* NCCL src/transport/net_socket.cc ncclNetSocketGetNsockNthread: threads
 * beyond MAX_THREADS are clamped first; once both are known, a product
 * beyond MAX_SOCKETS makes NSOCKS_PERTHREAD MAX_SOCKETS / NTHREADS. */
static void socket_clamp(long long tmax, long long smax, long long *nt,
                         long long *ns)
{
    if (*nt != NCD_PERF_SOCK_AUTO && *nt < 0)
        *nt = 0; /* no helper threads: the rank's own thread */
    if (*nt > tmax)
        *nt = tmax;
    if (*ns != NCD_PERF_SOCK_AUTO && *ns < 1)
        *ns = 1;
    if (*nt == NCD_PERF_SOCK_AUTO || *ns == NCD_PERF_SOCK_AUTO)
        return;
    if (*nt * *ns > smax)
        *ns = smax / (*nt ? *nt : 1);
    if (*ns < 1)
        *ns = 1;
}

int ncd_perf_socket_settings(struct ncd_ctx *ctx, int *nthreads, int *nsocks)
{
    long long tmax, smax;
    int rc = socket_limits(ctx, &tmax, &smax);
    if (rc)
        return rc;
    /* NCCL's default for both is -2: detected per interface */
    long long nt = nccl_int(ctx, "NCCL_SOCKET_NTHREADS", NCD_PERF_SOCK_AUTO);
    long long ns = nccl_int(ctx, "NCCL_NSOCKS_PERTHREAD", NCD_PERF_SOCK_AUTO);
    socket_clamp(tmax, smax, &nt, &ns);
    *nthreads = (int)nt;
    *nsocks = (int)ns;
    return 0;
}

int ncd_perf_socket_auto(struct ncd_ctx *ctx, const char *ifname,
                         int *nthreads, int *nsocks)
{
    if (*nthreads != NCD_PERF_SOCK_AUTO && *nsocks != NCD_PERF_SOCK_AUTO)
        return 0;
    /* NCCL src/transport/net_socket.cc (2.12+): the interface's PCI vendor
     * picks the counts; anything else uses the rank's thread, 1 socket */
    int at = 0, as = 1;
    char path[160], vendor[32] = "";
    snprintf(path, sizeof path, "/sys/class/net/%s/device/vendor", ifname);
    if (ncd_fs_read_str(ctx, path, vendor, sizeof vendor) == 0) {
        if (strncmp(vendor, "0x1d0f", 6) == 0) { /* AWS ENA */
            at = 2;
            as = 8;
        } else if (strncmp(vendor, "0x1ae0", 6) == 0) { /* GCP gVNIC */
            at = 4;
            as = 1;
        }
    }
    ncd_ctx_clear_error(ctx);
    long long nt = *nthreads == NCD_PERF_SOCK_AUTO ? at : *nthreads;
    long long ns = *nsocks == NCD_PERF_SOCK_AUTO ? as : *nsocks;
    long long tmax, smax;
    int rc = socket_limits(ctx, &tmax, &smax);
    if (rc)
        return rc;
    socket_clamp(tmax, smax, &nt, &ns);
    *nthreads = (int)nt;
    *nsocks = (int)ns;
    return 0;
}

void ncd_perf_env(struct ncd_ctx *ctx, struct ncd_perf_opts *o, int *device0)
{
    const char *mbw = ncd_getenv(ctx, "NCCL_TESTS_MIN_BW");
    if (mbw && *mbw)
        o->min_bw = strtod(mbw, NULL);
    const char *d0 = ncd_getenv(ctx, "NCCL_TESTS_DEVICE");
    *device0 = d0 && *d0 ? atoi(d0) : -1;
}

int ncd_perf_prepare_socket(struct ncd_ctx *ctx, const char *iface,
                            int nccl_version, struct ncd_perf_job *pj)
{
    if (pj->backend != NCD_PERF_BACKEND_SOCKET)
        return 0;
    char why[400] = "";
    struct ncd_perf_iface pi;
    if (ncd_perf_pick_iface(ctx, iface, nccl_version, &pi, why, sizeof why)) {
        ncd_fail(ctx, NCD_ENOENT, "no interface for the socket backend: %s",
                 why);
        return 3;
    }
    snprintf(pj->ifname, sizeof pj->ifname, "%s", pi.ifname);
    if (ncd_perf_socket_auto(ctx, pi.ifname, &pj->sock_nthreads,
                             &pj->sock_nsocks))
        return 1;
    snprintf(pj->bind_addr, sizeof pj->bind_addr, "%s", pi.addr);
    if (pi.boot_ifname[0] && strcmp(pi.boot_addr, pi.addr))
        snprintf(pj->iface_origin, sizeof pj->iface_origin,
                 "%s; NCCL's bootstrap: %s %s", pi.origin, pi.boot_ifname,
                 pi.boot_addr);
    else
        snprintf(pj->iface_origin, sizeof pj->iface_origin, "%s", pi.origin);
    return 0;
}
