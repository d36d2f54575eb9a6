/* SPDX-License-Identifier: MIT */
/*
 * The socket backend: collectives on host buffers over TCP between ranks.
 *
 * A collective is a list of "ops" per rank: sends to and receives from
 * peers, each cut into chunks (64-512 KiB).  Chunk g of the stream to a
 * peer travels on socket g % S of that peer (S = NCCL_SOCKET_NTHREADS x
 * NCCL_NSOCKS_PERTHREAD sockets, 1 when NTHREADS is 0, as NCCL's socket
 * transport, src/transport/net_socket.cc), with a 16-byte frame header
 * (magic, collective sequence, chunk index, length) checked on receipt.
 * A send op may depend on a receive op: chunk j goes out only once chunk j
 * of that receive has arrived and been reduced, which pipelines ring steps.
 * Socket I/O is non-blocking; sockets are driven by the rank's thread plus
 * NTHREADS-1 helper threads (socket s belongs to thread s % NTHREADS).
 * Every wait has the progress timeout; a closed socket names the peer.
 * The collectives themselves are the rows' algorithms (coll/<name>.c),
 * built on the primitives exported in sock_coll.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ncd/error.h"
#include "ncd/perf.h"
#include "ncd/sock.h"
#include "perf/perf_int.h"
#include "perf/coll.h"
#include "perf/sock_coll.h"
#include "perf/sock_int.h"

#define XMAGIC 0x4e434458u /* "NCDX" */
#define CHUNK_MAX (512u << 10)
#define CHUNK_MIN (64u << 10)
#define NLOCKS 64
/*
 * How long a thread with nothing to do keeps polling without sleeping
 * (poll with timeout 0, yielding the CPU between tries) before it blocks
 * in poll: a small message's answer usually arrives within a few tens of
 * microseconds, and waking from a blocking poll costs about as much again
 * (NCCL's proxy thread spins the same way, src/proxy.cc).  Only when the
 * job's ranks x threads fit this process's CPUs.  Measured in
 * bench/perf-socket against Open MPI's MPI_Allreduce.
 */
#define SPIN_S 200e-6

enum { XA_COPY, XA_REDUCE, XA_ACC };

struct xhdr {
    uint32_t magic, seq, g, len;
};

struct xop {
    int peer, recv, action, scale_in, scale_src, finish, dep;
    char *buf;
    const char *src;
    size_t len, chunk, nchunks;
    atomic_uchar *done;
    int has_dependents;
};

struct sockst {
    int fd, peer, s, owner;
    int *slist, sn, sk;
    size_t sj, soff;
    uint32_t sg;
    struct xhdr sh;
    int *rlist, rn, rk;
    size_t rj, roff;
    uint32_t rg;
    struct xhdr rh;
    char *stage;
};

struct batch {
    struct xop *ops;
    int nops;
    struct sockst *socks;
    int nsocks;
    uint32_t seq;
};

struct ncd__sock_rank {
    struct ncd_peerset *ps;
    int rank, nranks, nthreads, S;
    int timeout_ms;
    int spin; /* spin before blocking in poll (SPIN_S) */
    atomic_int *abort_flag;
    uint32_t seq;
    enum ncd_perf_dtype dt;
    enum ncd_perf_op op;
    /* helpers */
    pthread_t *helpers;
    int *efd; /* eventfd per thread (nthreads > 1) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned gen, ndone;
    int quit;
    struct batch *cur;
    /* errors */
    atomic_int failed;
    int err_code;
    char err[512];
    char **stage; /* [peer * S + s] */
    pthread_mutex_t locks[NLOCKS];
    /* op list under construction */
    struct xop *ops;
    int nops, cap;
    char *scratch;
    size_t scratch_len, scratch_peak;
};

static void set_error(struct ncd__sock_rank *R, int code, const char *fmt,
                      ...) __attribute__((format(printf, 3, 4)));
static void set_error(struct ncd__sock_rank *R, int code, const char *fmt,
                      ...)
{
    pthread_mutex_lock(&R->mu);
    if (!R->err_code) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(R->err, sizeof R->err, fmt, ap);
        va_end(ap);
        R->err_code = code;
    }
    pthread_mutex_unlock(&R->mu);
    atomic_store(&R->failed, 1);
}

static inline size_t chunk_len(const struct xop *o, size_t j)
{
    size_t off = j * o->chunk;
    return o->len - off < o->chunk ? o->len - off : o->chunk;
}

static void advance(const struct xop *ops, const int *list, int n, int *k,
                    size_t *j, size_t step)
{
    *j += step;
    while (*k < n && *j >= ops[list[*k]].nchunks) {
        *j -= ops[list[*k]].nchunks;
        (*k)++;
    }
}

static void notify(struct ncd__sock_rank *R, int self)
{
    if (R->nthreads <= 1)
        return;
    uint64_t one = 1;
    for (int t = 0; t < R->nthreads; t++)
        if (t != self && write(R->efd[t], &one, sizeof one) < 0) {
            /* counter saturated: the reader wakes anyway */
        }
}

static const char *peer_desc(struct ncd__sock_rank *R, int peer)
{
    return ncd_peerset_describe(R->ps, peer);
}

/* Returns 1 progress, 0 would block, -1 error. */
static int do_recv(struct ncd__sock_rank *R, struct batch *b,
                   struct sockst *st, int self, size_t *left)
{
    int progress = 0;
    size_t es = ncd_perf_dtype_size(R->dt);
    while (st->rk < st->rn) {
        struct xop *o = &b->ops[st->rlist[st->rk]];
        size_t clen = chunk_len(o, st->rj);
        ssize_t n;
        if (st->roff < sizeof st->rh) {
            n = recv(st->fd, (char *)&st->rh + st->roff,
                     sizeof st->rh - st->roff, MSG_DONTWAIT);
        } else {
            char *dst = o->action == XA_COPY ? o->buf + st->rj * o->chunk
                                             : st->stage;
            size_t got = st->roff - sizeof st->rh;
            n = recv(st->fd, dst + got, clen - got, MSG_DONTWAIT);
        }
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
                       errno != EINTR)) {
            set_error(R, NCD_EPEER,
                      "%s closed the connection (socket %d) while rank %d "
                      "was receiving: %s",
                      peer_desc(R, st->peer), st->s, R->rank,
                      n == 0 ? "the peer process exited or was killed"
                             : strerror(errno));
            return -1;
        }
        if (n < 0)
            return progress;
        progress = 1;
        st->roff += (size_t)n;
        if (st->roff == sizeof st->rh) {
            const struct xhdr *h = &st->rh;
            if (h->magic != XMAGIC || h->seq != b->seq || h->g != st->rg ||
                h->len != clen) {
                set_error(R, NCD_EPROTO,
                          "%s sent an unexpected frame (magic %#x seq %u "
                          "chunk %u len %u; expected seq %u chunk %u len "
                          "%zu): ranks disagree on the collective, sizes or "
                          "options",
                          peer_desc(R, st->peer), h->magic, h->seq, h->g,
                          h->len, b->seq, st->rg, clen);
                return -1;
            }
            if (o->action != XA_COPY && !st->stage) {
                st->stage = R->stage[st->peer * R->S + st->s] =
                    malloc(CHUNK_MAX);
                if (!st->stage) {
                    set_error(R, NCD_ENOMEM, "out of memory");
                    return -1;
                }
            }
        }
        if (st->roff < sizeof st->rh + clen)
            continue;
        /* chunk complete */
        size_t off = st->rj * o->chunk, ne = clen / es;
        if (o->action == XA_REDUCE) {
            ncd_perf_reduce(R->dt, R->op, o->buf + off, st->stage,
                            o->src + off, ne, o->scale_in, o->scale_src);
            if (o->finish)
                ncd_perf_reduce_finish(R->dt, R->op, o->buf + off,
                                       o->buf + off, ne, R->nranks, 0);
        } else if (o->action == XA_ACC) {
            pthread_mutex_t *lk = &R->locks[st->rj % NLOCKS];
            if (R->nthreads > 1)
                pthread_mutex_lock(lk);
            ncd_perf_reduce(R->dt, R->op, o->buf + off, o->buf + off,
                            st->stage, ne, 0, o->scale_in);
            if (R->nthreads > 1)
                pthread_mutex_unlock(lk);
        }
        atomic_store_explicit(&o->done[st->rj], 1, memory_order_release);
        if (o->has_dependents)
            notify(R, self);
        st->roff = 0;
        st->rg += (uint32_t)R->S;
        advance(b->ops, st->rlist, st->rn, &st->rk, &st->rj, (size_t)R->S);
        (*left)--;
    }
    return progress;
}

static int dep_ready(const struct batch *b, const struct xop *o, size_t j)
{
    if (o->dep < 0)
        return 1;
    return atomic_load_explicit(&b->ops[o->dep].done[j],
                                memory_order_acquire) != 0;
}

/* Returns 1 progress, 0 would block / waiting on a dependency, -1 error. */
static int do_send(struct ncd__sock_rank *R, struct batch *b,
                   struct sockst *st, size_t *left)
{
    int progress = 0;
    while (st->sk < st->sn) {
        struct xop *o = &b->ops[st->slist[st->sk]];
        size_t clen = chunk_len(o, st->sj);
        if (st->soff == 0) {
            if (!dep_ready(b, o, st->sj))
                return progress;
            st->sh = (struct xhdr){XMAGIC, b->seq, st->sg, (uint32_t)clen};
        }
        struct iovec iov[2];
        int niov = 0;
        if (st->soff < sizeof st->sh) {
            iov[niov].iov_base = (char *)&st->sh + st->soff;
            iov[niov++].iov_len = sizeof st->sh - st->soff;
            iov[niov].iov_base = o->buf + st->sj * o->chunk;
            iov[niov++].iov_len = clen;
        } else {
            size_t sent = st->soff - sizeof st->sh;
            iov[niov].iov_base = o->buf + st->sj * o->chunk + sent;
            iov[niov++].iov_len = clen - sent;
        }
        struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)niov};
        ssize_t n = sendmsg(st->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
                return progress;
            set_error(R, NCD_EPEER,
                      "%s closed the connection (socket %d) while rank %d "
                      "was sending: %s",
                      peer_desc(R, st->peer), st->s, R->rank,
                      errno == EPIPE || errno == ECONNRESET
                          ? "the peer process exited or was killed"
                          : strerror(errno));
            return -1;
        }
        progress = 1;
        st->soff += (size_t)n;
        if (st->soff < sizeof st->sh + clen)
            continue;
        st->soff = 0;
        st->sg += (uint32_t)R->S;
        advance(b->ops, st->slist, st->sn, &st->sk, &st->sj, (size_t)R->S);
        (*left)--;
    }
    return progress;
}

static size_t chunks_of(const struct batch *b, const int *list, int n,
                        int s, int S)
{
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += b->ops[list[i]].nchunks;
    /* chunks g = s, s+S, ... < total */
    return total > (size_t)s ? (total - (size_t)s + (size_t)S - 1) / (size_t)S
                             : 0;
}

/*
 * Poll entries (POLLRDHUP only: no data is read) for every peer socket not
 * used by this batch; idx = -2 - (peer * S + s).  Returns how many.
 */
static int watch_idle(struct ncd__sock_rank *R, struct batch *b, int self,
                      struct pollfd *pf, int *idx)
{
    int n = 0;
    (void)self;
    for (int p = 0; p < R->nranks; p++) {
        if (p == R->rank)
            continue;
        for (int s = 0; s < R->S; s++) {
            int fd = ncd_peerset_fd(R->ps, p, s);
            if (fd < 0)
                continue;
            int used = 0;
            for (int i = 0; i < b->nsocks && !used; i++)
                used = b->socks[i].fd == fd;
            if (used)
                continue;
            pf[n] = (struct pollfd){.fd = fd, .events = POLLRDHUP};
            idx[n++] = -2 - (p * R->S + s);
        }
    }
    return n;
}

static void run_sockets(struct ncd__sock_rank *R, struct batch *b, int self)
{
    size_t left = 0;
    int mine = 0;
    for (int i = 0; i < b->nsocks; i++)
        if (b->socks[i].owner == self) {
            struct sockst *st = &b->socks[i];
            left += chunks_of(b, st->slist, st->sn, st->s, R->S);
            left += chunks_of(b, st->rlist, st->rn, st->s, R->S);
            mine++;
        }
    if (!left)
        return;
    size_t cap = (size_t)mine + 1 + (size_t)R->nranks * (size_t)R->S;
    struct pollfd *pf = malloc(sizeof *pf * cap);
    int *idx = malloc(sizeof *idx * cap);
    if (!pf || !idx) {
        free(pf);
        free(idx);
        set_error(R, NCD_ENOMEM, "out of memory");
        return;
    }
    double last = ncd_sock_now();
    while (left && !atomic_load(&R->failed) &&
           !(R->abort_flag && atomic_load(R->abort_flag))) {
        int np = 0;
        for (int i = 0; i < b->nsocks; i++) {
            struct sockst *st = &b->socks[i];
            if (st->owner != self)
                continue;
            short ev = 0;
            if (st->sk < st->sn &&
                (st->soff > 0 ||
                 dep_ready(b, &b->ops[st->slist[st->sk]], st->sj)))
                ev |= POLLOUT;
            if (st->rk < st->rn)
                ev |= POLLIN;
            if (!ev) {
                /* nothing to do on it now: only watch for a hang-up */
                pf[np] = (struct pollfd){.fd = st->fd, .events = POLLRDHUP};
                idx[np++] = -2 - (st->peer * R->S + st->s);
                continue;
            }
            if (!(ev & POLLIN))
                ev |= POLLRDHUP;
            pf[np] = (struct pollfd){.fd = st->fd, .events = ev};
            idx[np++] = i;
        }
        if (R->nthreads > 1) {
            pf[np] = (struct pollfd){.fd = R->efd[self], .events = POLLIN};
            idx[np++] = -1;
        }
        /* thread 0 also watches the sockets this batch does not use, so a
         * peer that dies is named by every rank connected to it, not only
         * by the ranks waiting on it (the others would otherwise blame the
         * first rank that stopped because of it) */
        int nw = 0;
        if (self == 0)
            nw = watch_idle(R, b, self, pf + np, idx + np);
        np += nw;
        /* spin briefly after the last progress, then block */
        int spin = R->spin && ncd_sock_now() - last < SPIN_S;
        int r = poll(pf, (nfds_t)np, spin ? 0 : 100);
        if (r == 0 && spin)
            sched_yield();
        if (r < 0 && errno != EINTR) {
            set_error(R, NCD_ESYS, "poll: %s", strerror(errno));
            break;
        }
        int moved = 0;
        for (int p = 0; p < np && r > 0; p++) {
            if (!pf[p].revents)
                continue;
            if (idx[p] <= -2) {
                int peer = (-idx[p] - 2) / R->S, so = (-idx[p] - 2) % R->S;
                set_error(R, NCD_EPEER,
                          "%s closed the connection (socket %d) while rank "
                          "%d was receiving: the peer process exited or was "
                          "killed",
                          peer_desc(R, peer), so, R->rank);
                r = 0;
                break;
            }
            if (idx[p] < 0) {
                uint64_t v;
                if (read(R->efd[self], &v, sizeof v) < 0) {
                    /* nothing pending */
                }
                continue;
            }
            struct sockst *st = &b->socks[idx[p]];
            int rr = 0, ss = 0;
            if ((pf[p].revents & POLLRDHUP) && !(pf[p].events & POLLIN)) {
                set_error(R, NCD_EPEER,
                          "%s closed the connection (socket %d) while rank "
                          "%d was sending: the peer process exited or was "
                          "killed",
                          peer_desc(R, st->peer), st->s, R->rank);
                break;
            }
            if (pf[p].revents & (POLLIN | POLLHUP | POLLERR)) {
                if (st->rk < st->rn)
                    rr = do_recv(R, b, st, self, &left);
            }
            if (rr >= 0 && (pf[p].revents & (POLLOUT | POLLHUP | POLLERR)))
                ss = do_send(R, b, st, &left);
            if (rr < 0 || ss < 0)
                break;
            moved |= rr | ss;
        }
        /* a reduction finished here may unblock sends on this thread */
        if (moved) {
            for (int i = 0; i < b->nsocks; i++) {
                struct sockst *st = &b->socks[i];
                if (st->owner == self && st->sk < st->sn && st->soff == 0 &&
                    dep_ready(b, &b->ops[st->slist[st->sk]], st->sj))
                    if (do_send(R, b, st, &left) < 0)
                        break;
            }
            last = ncd_sock_now();
        } else if (ncd_sock_now() - last > R->timeout_ms / 1000.0) {
            /* name the peer we wait for: data we expect from it first,
             * then a send the network does not take, then anything */
            int peer = -1;
            for (int pass = 0; pass < 3 && peer < 0; pass++)
                for (int i = 0; i < b->nsocks && peer < 0; i++) {
                    struct sockst *st = &b->socks[i];
                    if (st->owner != self)
                        continue;
                    if (pass == 0 && st->rk < st->rn)
                        peer = st->peer;
                    else if (pass == 1 && st->sk < st->sn &&
                             (st->soff > 0 ||
                              dep_ready(b, &b->ops[st->slist[st->sk]],
                                        st->sj)))
                        peer = st->peer;
                    else if (pass == 2 && st->sk < st->sn)
                        peer = st->peer;
                }
            set_error(R, NCD_ETIMEOUT,
                      "no progress for %d s on the connection to %s: the "
                      "peer hangs or the network path is blocked",
                      R->timeout_ms / 1000, peer_desc(R, peer));
            break;
        }
    }
    if (!atomic_load(&R->failed) && R->abort_flag &&
        atomic_load(R->abort_flag) && left)
        set_error(R, NCD_EPEER, "aborted: another rank of this process "
                                "failed");
    free(pf);
    free(idx);
}

static void *helper_main(void *arg)
{
    struct ncd__sock_rank *R = arg;
    pthread_mutex_lock(&R->mu);
    int self = -1;
    for (int t = 1; t < R->nthreads; t++)
        if (pthread_equal(R->helpers[t], pthread_self()))
            self = t;
    /* gen starts at 0: a helper that gets the lock late still sees the
     * first batch */
    unsigned seen = 0;
    for (;;) {
        while (!R->quit && R->gen == seen)
            pthread_cond_wait(&R->cv, &R->mu);
        if (R->quit)
            break;
        seen = R->gen;
        if (self < 0)
            for (int t = 1; t < R->nthreads; t++)
                if (pthread_equal(R->helpers[t], pthread_self()))
                    self = t;
        struct batch *b = R->cur;
        pthread_mutex_unlock(&R->mu);
        run_sockets(R, b, self);
        pthread_mutex_lock(&R->mu);
        R->ndone++;
        pthread_cond_broadcast(&R->cv);
    }
    pthread_mutex_unlock(&R->mu);
    return NULL;
}

/* Op list ---------------------------------------------------------------- */

static size_t pick_chunk(size_t len)
{
    if (len <= CHUNK_MIN)
        return len ? len : 1;
    size_t c = (len / 4 + 4095) & ~(size_t)4095;
    if (c < CHUNK_MIN)
        c = CHUNK_MIN;
    if (c > CHUNK_MAX)
        c = CHUNK_MAX;
    return c;
}

static int add_op(struct ncd__sock_rank *R, int peer, int recv, void *buf,
                  const void *src, size_t len, int action, int dep)
{
    if (R->nops == R->cap) {
        int nc = R->cap ? R->cap * 2 : 64;
        struct xop *n = realloc(R->ops, sizeof *n * (size_t)nc);
        if (!n)
            return NCD_ENOMEM;
        R->ops = n;
        R->cap = nc;
    }
    struct xop *o = &R->ops[R->nops];
    memset(o, 0, sizeof *o);
    o->peer = peer;
    o->recv = recv;
    o->buf = buf;
    o->src = src;
    o->len = len;
    o->action = action;
    o->dep = dep;
    o->chunk = pick_chunk(len);
    o->nchunks = len ? (len + o->chunk - 1) / o->chunk : 0;
    return R->nops++;
}

int ncd__sock_send(struct ncd__sock_rank *R, int peer, const void *buf,
                   size_t len, int dep)
{
    return add_op(R, peer, 0, (void *)buf, NULL, len, XA_COPY, dep);
}

int ncd__sock_recv(struct ncd__sock_rank *R, int peer, void *dst, size_t len)
{
    return add_op(R, peer, 1, dst, NULL, len, XA_COPY, -1);
}

int ncd__sock_reduce(struct ncd__sock_rank *R, int peer, void *dst,
                     const void *src, size_t len, int scale_in, int scale_src,
                     int finish)
{
    int i = add_op(R, peer, 1, dst, src, len, XA_REDUCE, -1);
    if (i >= 0) {
        R->ops[i].scale_in = scale_in;
        R->ops[i].scale_src = scale_src;
        R->ops[i].finish = finish;
    }
    return i;
}

int ncd__sock_acc(struct ncd__sock_rank *R, int peer, void *dst, size_t len,
                  int scale_in)
{
    int i = add_op(R, peer, 1, dst, NULL, len, XA_ACC, -1);
    if (i >= 0)
        R->ops[i].scale_in = scale_in;
    return i;
}

/* Runs the ops added since the last batch; all ranks call it in step. */
int ncd__sock_run(struct ncd__sock_rank *R)
{
    int rc = 0;
    R->seq++;
    int nops = R->nops;
    R->nops = 0;
    if (atomic_load(&R->failed))
        return R->err_code ? R->err_code : NCD_EPEER;
    struct batch b = {.ops = R->ops, .nops = nops, .seq = R->seq};
    int *cnt_s = calloc((size_t)R->nranks, sizeof(int));
    int *cnt_r = calloc((size_t)R->nranks, sizeof(int));
    int *lists = malloc(sizeof(int) * (size_t)(nops ? nops : 1));
    int *off_s = calloc((size_t)R->nranks + 1, sizeof(int));
    int *off_r = calloc((size_t)R->nranks + 1, sizeof(int));
    int *rlists = malloc(sizeof(int) * (size_t)(nops ? nops : 1));
    struct sockst *socks = NULL;
    if (!cnt_s || !cnt_r || !lists || !off_s || !off_r || !rlists) {
        rc = NCD_ENOMEM;
        goto out;
    }
    for (int i = 0; i < nops; i++) {
        struct xop *o = &R->ops[i];
        if (o->recv) {
            cnt_r[o->peer]++;
            o->done = o->nchunks ? calloc(o->nchunks, 1) : NULL;
            if (o->nchunks && !o->done) {
                rc = NCD_ENOMEM;
                goto out;
            }
        } else {
            cnt_s[o->peer]++;
            if (o->dep >= 0) {
                R->ops[o->dep].has_dependents = 1;
                if (R->ops[o->dep].nchunks != o->nchunks) {
                    rc = NCD_EINVAL; /* internal: mismatched pipeline */
                    goto out;
                }
            }
        }
    }
    int npeers = 0;
    for (int p = 0; p < R->nranks; p++) {
        off_s[p + 1] = off_s[p] + cnt_s[p];
        off_r[p + 1] = off_r[p] + cnt_r[p];
        if (cnt_s[p] || cnt_r[p])
            npeers++;
    }
    memset(cnt_s, 0, sizeof(int) * (size_t)R->nranks);
    memset(cnt_r, 0, sizeof(int) * (size_t)R->nranks);
    for (int i = 0; i < nops; i++) {
        struct xop *o = &R->ops[i];
        if (o->recv)
            rlists[off_r[o->peer] + cnt_r[o->peer]++] = i;
        else
            lists[off_s[o->peer] + cnt_s[o->peer]++] = i;
    }
    socks = calloc((size_t)(npeers * R->S) + 1, sizeof *socks);
    if (!socks) {
        rc = NCD_ENOMEM;
        goto out;
    }
    int ns = 0;
    for (int p = 0; p < R->nranks; p++) {
        if (!cnt_s[p] && !cnt_r[p])
            continue;
        for (int s = 0; s < R->S; s++) {
            struct sockst *st = &socks[ns++];
            st->fd = ncd_peerset_fd(R->ps, p, s);
            st->peer = p;
            st->s = s;
            st->owner = s % R->nthreads;
            st->slist = lists + off_s[p];
            st->sn = cnt_s[p];
            st->rlist = rlists + off_r[p];
            st->rn = cnt_r[p];
            st->sg = st->rg = (uint32_t)s;
            st->sk = st->rk = 0;
            st->sj = st->rj = 0;
            advance(R->ops, st->slist, st->sn, &st->sk, &st->sj, (size_t)s);
            advance(R->ops, st->rlist, st->rn, &st->rk, &st->rj, (size_t)s);
            st->stage = R->stage[p * R->S + s];
        }
    }
    b.socks = socks;
    b.nsocks = ns;
    if (R->nthreads > 1) {
        pthread_mutex_lock(&R->mu);
        R->cur = &b;
        R->ndone = 0;
        R->gen++;
        pthread_cond_broadcast(&R->cv);
        pthread_mutex_unlock(&R->mu);
    }
    run_sockets(R, &b, 0);
    if (R->nthreads > 1) {
        pthread_mutex_lock(&R->mu);
        while (R->ndone < (unsigned)(R->nthreads - 1))
            pthread_cond_wait(&R->cv, &R->mu);
        R->cur = NULL;
        pthread_mutex_unlock(&R->mu);
    }
    if (atomic_load(&R->failed))
        rc = R->err_code ? R->err_code : NCD_EPEER;
out:
    for (int i = 0; i < nops; i++) {
        free(R->ops[i].done);
        R->ops[i].done = NULL;
    }
    free(cnt_s);
    free(cnt_r);
    free(lists);
    free(rlists);
    free(off_s);
    free(off_r);
    free(socks);
    if (rc == NCD_ENOMEM)
        set_error(R, rc, "out of memory");
    if (rc == NCD_EINVAL)
        set_error(R, rc, "internal error: pipeline dependency mismatch");
    return rc;
}

/* Lifecycle ---------------------------------------------------------------- */

int ncd__sock_rank_new(struct ncd_peerset *ps, int rank, int nranks,
                       int nthreads, int timeout_ms, atomic_int *abort_flag,
                       struct ncd__sock_rank **out)
{
    struct ncd__sock_rank *R = calloc(1, sizeof *R);
    if (!R)
        return NCD_ENOMEM;
    R->ps = ps;
    R->rank = rank;
    R->nranks = nranks;
    R->nthreads = nthreads < 1 ? 1 : nthreads;
    R->S = ncd_peerset_nsocks(ps);
    R->timeout_ms = timeout_ms;
    R->abort_flag = abort_flag;
    /* spin only when every rank's threads can have a CPU of their own: with
     * more, a spinning rank takes the CPU the rank it waits for needs (MPI
     * implementations stop busy-waiting when oversubscribed for the same
     * reason) */
    cpu_set_t cs;
    int ncpu = sched_getaffinity(0, sizeof cs, &cs) == 0 ? CPU_COUNT(&cs) : 1;
    R->spin = (long)nranks * R->nthreads <= ncpu;
    pthread_mutex_init(&R->mu, NULL);
    pthread_cond_init(&R->cv, NULL);
    for (int i = 0; i < NLOCKS; i++)
        pthread_mutex_init(&R->locks[i], NULL);
    R->stage = calloc((size_t)nranks * (size_t)R->S, sizeof(char *));
    if (!R->stage) {
        ncd__sock_rank_free(R);
        return NCD_ENOMEM;
    }
    if (R->nthreads > 1) {
        R->efd = malloc(sizeof(int) * (size_t)R->nthreads);
        R->helpers = calloc((size_t)R->nthreads, sizeof(pthread_t));
        if (!R->efd || !R->helpers) {
            ncd__sock_rank_free(R);
            return NCD_ENOMEM;
        }
        for (int t = 0; t < R->nthreads; t++)
            R->efd[t] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        pthread_mutex_lock(&R->mu);
        for (int t = 1; t < R->nthreads; t++)
            if (pthread_create(&R->helpers[t], NULL, helper_main, R) != 0) {
                R->nthreads = t; /* run with what started */
                break;
            }
        pthread_mutex_unlock(&R->mu);
    }
    *out = R;
    return 0;
}

void ncd__sock_rank_free(struct ncd__sock_rank *R)
{
    if (!R)
        return;
    /* A rank that stops because a peer died (or hangs) keeps its sockets
     * open a moment, so the other ranks see the dead peer's hang-up (or
     * reach their own timeout on the hung peer) before this rank's
     * hang-up, and name the right one. */
    if (atomic_load(&R->failed) && R->err_code == NCD_EPEER)
        usleep(300000);
    else if (atomic_load(&R->failed) && R->err_code == NCD_ETIMEOUT)
        usleep(1000000);
    if (R->helpers) {
        pthread_mutex_lock(&R->mu);
        R->quit = 1;
        pthread_cond_broadcast(&R->cv);
        pthread_mutex_unlock(&R->mu);
        for (int t = 1; t < R->nthreads; t++)
            pthread_join(R->helpers[t], NULL);
    }
    if (R->efd)
        for (int t = 0; t < R->nthreads; t++)
            if (R->efd[t] >= 0)
                close(R->efd[t]);
    if (R->stage)
        for (int i = 0; i < R->nranks * R->S; i++)
            free(R->stage[i]);
    free(R->stage);
    free(R->efd);
    free(R->helpers);
    free(R->ops);
    free(R->scratch);
    pthread_mutex_destroy(&R->mu);
    pthread_cond_destroy(&R->cv);
    for (int i = 0; i < NLOCKS; i++)
        pthread_mutex_destroy(&R->locks[i]);
    free(R);
}

const char *ncd__sock_rank_error(const struct ncd__sock_rank *R)
{
    return R->err;
}

char *ncd__sock_scratch(struct ncd__sock_rank *R, size_t len)
{
    if (R->scratch_len < len || !R->scratch) {
        free(R->scratch);
        R->scratch = malloc(len ? len : 1);
        R->scratch_len = R->scratch ? len : 0;
        if (R->scratch_len > R->scratch_peak)
            R->scratch_peak = R->scratch_len;
        if (!R->scratch)
            ncd__sock_nomem(R);
    }
    return R->scratch;
}

uint64_t ncd__sock_mem(const struct ncd__sock_rank *R)
{
    uint64_t n = R->scratch_peak;
    for (int i = 0; i < R->nranks * R->S; i++)
        if (R->stage[i])
            n += CHUNK_MAX;
    return n;
}

void ncd__sock_release_scratch(struct ncd__sock_rank *R)
{
    free(R->scratch);
    R->scratch = NULL;
    R->scratch_len = 0;
}

int ncd__sock_nomem(struct ncd__sock_rank *R)
{
    set_error(R, NCD_ENOMEM, "out of memory");
    return NCD_ENOMEM;
}

/* Collectives: the row's algorithm ------------------------------------- */

int ncd__sock_coll(struct ncd__sock_rank *R, enum ncd_perf_coll coll,
                   enum ncd_perf_dtype dt, enum ncd_perf_op op, int root,
                   const void *send, void *recv,
                   const struct ncd_perf_counts *k, enum ncd_perf_algo algo)
{
    const struct ncd__coll *c = ncd__coll(coll);
    struct ncd__sock_args a = {.send = send,
                               .recv = recv,
                               .count = k->paramcount,
                               .es = ncd_perf_dtype_size(dt),
                               .root = root,
                               .rank = R->rank,
                               .nranks = R->nranks,
                               .dt = dt,
                               .op = op,
                               .k = k};
    R->dt = dt;
    R->op = op;
    R->nops = 0;
    if (atomic_load(&R->failed))
        return R->err_code ? R->err_code : NCD_EPEER;
    if (!c) {
        set_error(R, NCD_EINVAL, "unknown collective");
        return NCD_EINVAL;
    }
    if (R->nranks == 1) { /* nothing to exchange: the local result */
        if (c->reduces)
            ncd_perf_reduce_finish(dt, op, recv, send, a.count, 1, 1);
        else /* the whole result is this rank's own data */
            ncd__copy(recv, send, k->recvcount * a.es);
        return 0;
    }
    if (algo == NCD_PERF_ALGO_AUTO && c->sock_small &&
        a.count * a.es * (size_t)(R->nranks - 1) <= NCD__SOCK_SMALL_MAX)
        return c->sock_small(R, &a);
    int ring = algo == NCD_PERF_ALGO_AUTO ? c->ring_by_default
                                          : algo != NCD_PERF_ALGO_DIRECT;
    return ring || !c->sock_direct ? c->sock_ring(R, &a)
                                   : c->sock_direct(R, &a);
}
