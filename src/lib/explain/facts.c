/* SPDX-License-Identifier: MIT */
/*
 * Facts from NCCL INFO lines (formats of reference B8 and nccl-facts.md,
 * NCCL 2.4 .. 2.30.7, plus the phrasings of 2.0 .. 2.3 and 1.x: see
 * old_line()), kept per process (host, pid).
 */
#define _GNU_SOURCE
#include "explain/session.h"
#include "ncd/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STARTS(m, ml, lit)                                                    \
    ((ml) >= sizeof(lit) - 1 && memcmp((m), (lit), sizeof(lit) - 1) == 0)

static void copyn(char *dst, size_t dsz, const char *s, size_t n)
{
    if (n > dsz - 1)
        n = dsz - 1;
    memcpy(dst, s, n);
    dst[n] = '\0';
    ncd__sanitize(dst, n); /* facts go to JSON: valid UTF-8 only */
}

uint32_t ncd__hash_proc(const char *h, size_t hl, long pid)
{
    uint32_t x = 2166136261u;
    for (size_t i = 0; i < hl; i++)
        x = (x ^ (unsigned char)h[i]) * 16777619u;
    x ^= (uint32_t)pid * 0x9E3779B1u;
    return x;
}

/* Doubles the process index and fills it again; 0 or NCD_ENOMEM. */
static int phash_grow(struct ncd_explain *ex)
{
    uint32_t mask = 2 * ex->phash_mask + 1;
    struct ncd__pslot *v = malloc(((size_t)mask + 1) * sizeof *v);
    if (!v)
        return NCD_ENOMEM;
    for (size_t i = 0; i <= mask; i++)
        v[i].idx = -1;
    for (size_t i = 0; i <= ex->phash_mask; i++) {
        if (ex->phash[i].idx < 0)
            continue;
        uint32_t k = ex->phash[i].hash & mask;
        while (v[k].idx >= 0)
            k = (k + 1) & mask;
        v[k] = ex->phash[i];
    }
    free(ex->phash);
    ex->phash = v;
    ex->phash_mask = mask;
    return 0;
}

struct ncd__proc *ncd__proc_get(struct ncd_explain *ex,
                                const struct ncd_log_line *ll)
{
    /* Lines without host:pid belong to a per-file pseudo process. */
    const char *h = ll->host ? ll->host : "";
    size_t hl = ll->host ? ll->host_len : 0;
    if (hl > 47)
        hl = 47;
    long pid = ll->pid >= 0 ? ll->pid : -1 - (long)(ex->nsrc - 1);
    if (ex->lastproc >= 0) {
        struct ncd__proc *p = &ex->procs[ex->lastproc];
        if (p->pid == pid && p->hostlen == hl && memcmp(p->host, h, hl) == 0)
            return p;
    }
    uint32_t hash = ncd__hash_proc(h, hl, pid), k = hash & ex->phash_mask;
    for (;;) {
        int32_t idx = ex->phash[k].idx;
        if (idx < 0)
            break;
        struct ncd__proc *p = &ex->procs[idx];
        if (ex->phash[k].hash == hash && p->pid == pid && p->hostlen == hl &&
            memcmp(p->host, h, hl) == 0) {
            ex->lastproc = idx;
            return p;
        }
        k = (k + 1) & ex->phash_mask;
    }
    if (ex->nprocs >= NCD__MAX_PROCS) {
        ex->procs_dropped = 1;
        return NULL;
    }
    if (2 * (ex->nprocs + 1) > (size_t)ex->phash_mask + 1) {
        /* the index grows with the table (a fixed 32768 slots for 16384
         * processes put each line's lookup on a cold cache line) */
        if (phash_grow(ex) < 0)
            return NULL;
        k = hash & ex->phash_mask;
        while (ex->phash[k].idx >= 0)
            k = (k + 1) & ex->phash_mask;
    }
    if (ex->nprocs == ex->capprocs) {
        /* grows; callers never keep a proc pointer across lines */
        size_t nc = ex->capprocs ? ex->capprocs * 2 : 64;
        struct ncd__proc *nv = realloc(ex->procs, nc * sizeof *nv);
        if (!nv)
            return NULL;
        ex->procs = nv;
        ex->capprocs = nc;
    }
    struct ncd__proc *p = &ex->procs[ex->nprocs];
    memset(p, 0, sizeof *p);
    copyn(p->host, sizeof p->host, h, hl);
    p->hostlen = hl;
    p->pid = pid;
    p->src = ex->nsrc - 1;
    p->rank = p->nranks = p->nnodes = p->local_ranks = p->cuda_dev = -1;
    p->nvls = -1;
    ex->phash[k].idx = (int32_t)ex->nprocs;
    ex->phash[k].hash = hash;
    ex->lastproc = (long)ex->nprocs;
    ex->nprocs++;
    return p;
}

/* Integer after the word `key ` inside m; -1 when absent. */
static long num_after(const char *m, size_t ml, const char *key)
{
    size_t kl = strlen(key);
    const char *p = m, *end = m + ml;
    while (p < end) {
        const char *h = ncd__find(p, (size_t)(end - p), key, kl);
        if (!h)
            return -1;
        const char *q = h + kl;
        if ((h == m || h[-1] == ' ') && q < end && *q == ' ') {
            while (q < end && *q == ' ')
                q++;
            long v = 0;
            int any = 0;
            while (q < end && *q >= '0' && *q <= '9' && v < 100000000) {
                v = v * 10 + (*q++ - '0');
                any = 1;
            }
            if (any)
                return v;
        }
        p = h + kl;
    }
    return -1;
}

/* The word after `key ` (up to a blank). */
static int word_after(const char *m, size_t ml, const char *key, char *out,
                      size_t osz)
{
    size_t kl = strlen(key);
    const char *h = ncd__find(m, ml, key, kl);
    if (!h)
        return -1;
    const char *q = h + kl, *end = m + ml;
    while (q < end && *q == ' ')
        q++;
    const char *s = q;
    while (q < end && *q != ' ')
        q++;
    copyn(out, osz, s, (size_t)(q - s));
    return 0;
}

/*
 * "[0]eth0:10.0.0.1<0> [1]ib0:..." or "eth0:10.0.0.1<0>" -> ifaces.
 * Addresses may be IPv6 ("fe80::1%eth0<0>"), so the name ends at the first
 * ':' and the address at '<' or a blank.
 */
static uint8_t parse_ifaces(const char *s, const char *end,
                            struct ncd__iface *out, uint8_t max)
{
    uint8_t n = 0;
    const char *p = s;
    while (p < end && n < max) {
        while (p < end && *p == ' ')
            p++;
        if (p >= end || *p == ';')
            break;
        if (*p == '[') {
            const char *rb = memchr(p, ']', (size_t)(end - p));
            if (!rb)
                break;
            p = rb + 1;
        }
        const char *ns = p;
        while (p < end && *p != ':' && *p != ' ' && *p != '<' && *p != ';')
            p++;
        size_t nl = (size_t)(p - ns);
        while (nl > 0 && ns[nl - 1] == '.')
            nl--;
        if (!nl)
            break;
        copyn(out[n].name, sizeof out[n].name, ns, nl);
        out[n].addr[0] = '\0';
        if (p < end && *p == ':') {
            const char *as = ++p;
            while (p < end && *p != '<' && *p != ' ' && *p != ';')
                p++;
            copyn(out[n].addr, sizeof out[n].addr, as, (size_t)(p - as));
            if (p < end && *p == '<') {
                const char *gt = memchr(p, '>', (size_t)(end - p));
                p = gt ? gt + 1 : end;
            }
        }
        n++;
        while (p < end && *p != ' ' && *p != ';')
            p++;
    }
    return n;
}

static void add_env(struct ncd_explain *ex, const struct ncd_log_line *ll,
                    const char *name, size_t nl, const char *val, size_t vl)
{
    char n[48], v[128];
    copyn(n, sizeof n, name, nl);
    copyn(v, sizeof v, val, vl);
    for (size_t i = 0; i < ex->nenv; i++)
        if (strcmp(ex->env[i].name, n) == 0 && strcmp(ex->env[i].value, v) == 0)
            return;
    if (ex->nenv >= NCD__MAX_ENV)
        return;
    struct ncd__env *e = &ex->env[ex->nenv++];
    memcpy(e->name, n, sizeof n);
    memcpy(e->value, v, sizeof v);
    copyn(e->host, sizeof e->host, ll->host ? ll->host : "",
          ll->host ? ll->host_len : 0);
    e->src = ex->nsrc - 1;
    e->line = ex->lineno;
    e->seq = ex->seq;
}

/* Per-host table of dev index -> rank for P2P/SHM peers. */
static struct ncd__host *host_get(struct ncd_explain *ex, const char *name)
{
    uint32_t k = ncd__hash_proc(name, strlen(name), 0) & (NCD__HOST_HASH - 1);
    for (;;) {
        int32_t idx = ex->hhash[k];
        if (idx < 0)
            break;
        if (strcmp(ex->hosts[idx].name, name) == 0)
            return &ex->hosts[idx];
        k = (k + 1) & (NCD__HOST_HASH - 1);
    }
    if (ex->nhosts >= NCD__MAX_HOSTS)
        return NULL;
    if (ex->nhosts == ex->caphosts) {
        size_t nc = ex->caphosts ? ex->caphosts * 2 : 16;
        struct ncd__host *nv = realloc(ex->hosts, nc * sizeof *nv);
        if (!nv)
            return NULL;
        ex->hosts = nv;
        ex->caphosts = nc;
    }
    struct ncd__host *h = &ex->hosts[ex->nhosts];
    memset(h, 0, sizeof *h);
    copyn(h->name, sizeof h->name, name, strlen(name));
    for (int i = 0; i < 64; i++)
        h->devrank[i] = -1;
    ex->hhash[k] = (int32_t)ex->nhosts++;
    return h;
}

/* "a[b] -> c[d] via P2P/IPC" : both ranks are local to this process's host. */
static void local_edge(struct ncd_explain *ex, struct ncd__proc *pr,
                       const char *m, size_t ml)
{
    struct ncd__host *hs = host_get(ex, pr->host);
    if (!hs)
        return;
    const char *arrow = ncd__find(m, ml, " -> ", 4);
    if (!arrow)
        return;
    int r[2], d[2];
    const char *ends[2] = {arrow, m + ml};
    const char *starts[2] = {m, arrow + 4};
    for (int k = 0; k < 2; k++) {
        /* find "<int>[<int>]" : last such before arrow / first after */
        const char *p = k == 0 ? arrow : starts[1];
        if (k == 0) {
            while (p > m && p[-1] != ' ')
                p--;
        }
        const char *q = p;
        long rv = 0, dv = 0;
        int any = 0;
        while (q < ends[k] && *q >= '0' && *q <= '9' && rv < 100000000) {
            rv = rv * 10 + (*q++ - '0');
            any = 1;
        }
        if (!any || q >= ends[k] || *q != '[')
            return;
        q++;
        any = 0;
        while (q < ends[k] && *q >= '0' && *q <= '9' && dv < 100000) {
            dv = dv * 10 + (*q++ - '0');
            any = 1;
        }
        if (!any || q >= ends[k] || *q != ']')
            return; /* hex busId (old format): not a dev index */
        r[k] = (int)rv;
        d[k] = (int)dv;
    }
    for (int k = 0; k < 2; k++) {
        if (d[k] < 0 || d[k] >= 64 || r[k] > 32000)
            continue;
        if (hs->devrank[d[k]] < 0) {
            hs->devrank[d[k]] = (int16_t)r[k];
            hs->ndevs_seen++;
        } else if (hs->devrank[d[k]] != r[k] && !hs->dev_conflict) {
            hs->dev_conflict = 1;
            hs->conflict_dev = d[k];
            hs->conflict_r1 = hs->devrank[d[k]];
            hs->conflict_r2 = r[k];
            hs->conflict_src = ex->nsrc - 1;
            hs->conflict_line = ex->lineno;
        }
    }
}

/* Moves the process to a later init phase, remembering the line that
 * started it (shown when init stops there). */
static void raise_phase(struct ncd_explain *ex, struct ncd__proc *pr, int ph,
                        const char *m, size_t ml)
{
    /* lines without host:pid:tid (a cut header) may be any process's: the
     * init phase of that pseudo process means nothing */
    if (pr->phase >= ph || pr->pid < 0)
        return;
    pr->phase = (uint8_t)ph;
    pr->phase_line = ex->lineno;
    copyn(pr->phase_text, sizeof pr->phase_text, m, ml);
}

/* Leading decimal of [s, e): its value, or -1. */
static long lead_int(const char *s, const char *e)
{
    long v = 0;
    int any = 0;
    while (s < e && *s >= '0' && *s <= '9' && v < 100000000) {
        v = v * 10 + (*s++ - '0');
        any = 1;
    }
    return any ? v : -1;
}

/* "a[x] -> b[y] [send] via NET/..." (or "a -> b [receive] via ..."): the
 * rank that printed it and whether it uses GPU Direct RDMA. */
static void rank_net(struct ncd_explain *ex, struct ncd__proc *pr,
                     const char *m, const char *via, int gdr)
{
    const char *arrow = ncd__find(m, (size_t)(via - m), " -> ", 4);
    int send = ncd__find(m, (size_t)(via - m), "[send]", 6) != NULL;
    if (!arrow || (!send && !ncd__find(m, (size_t)(via - m), "[receive]", 9)))
        return;
    const char *a = arrow;
    while (a > m && a[-1] != ' ')
        a--;
    long rank = send ? lead_int(a, arrow) : lead_int(arrow + 4, via);
    if (rank < 0 || rank > 0x7fffffff)
        return;
    if (!ex->rnet) {
        ex->rnet = malloc(NCD__RNET_SLOTS * sizeof *ex->rnet);
        if (!ex->rnet)
            return;
        for (size_t i = 0; i < NCD__RNET_SLOTS; i++)
            ex->rnet[i].rank = -1;
    }
    uint32_t k = ((uint32_t)rank * 0x9E3779B1u) & (NCD__RNET_SLOTS - 1);
    while (ex->rnet[k].rank >= 0 && ex->rnet[k].rank != rank)
        k = (k + 1) & (NCD__RNET_SLOTS - 1);
    struct ncd__rnet *r = &ex->rnet[k];
    if (r->rank < 0) {
        if (ex->nrnet >= NCD__RNET_SLOTS / 2)
            return; /* keep probing short */
        memset(r, 0, sizeof *r);
        r->rank = (int32_t)rank;
        r->proc = (uint32_t)(pr - ex->procs);
        r->src = ex->nsrc - 1;
        ex->nrnet++;
    }
    if (!r->net || (gdr && !r->gdr))
        r->line = ex->lineno;
    r->net++;
    r->gdr += gdr;
}

/* A connection line, " via " at `via`: "Channel 00/0 : 0[0] -> 1[1] via
 * P2P/IPC", "Ring 00 : 3 -> 4 via NET/IB/0" (2.3 .. 2.6), or its bare
 * "0[0] -> 1[1] [send] via NET/IB/0/GDRDMA" tail. */
static void transport(struct ncd_explain *ex, struct ncd__proc *pr,
                      const char *m, size_t ml, const char *via)
{
    const char *t = via + 5;
    size_t tl = (size_t)(m + ml - t);
    raise_phase(ex, pr, PH_CONNECT, m, ml);
    if (STARTS(t, tl, "P2P")) {
        pr->t_p2p++;
        local_edge(ex, pr, m, (size_t)(via - m));
    } else if (STARTS(t, tl, "SHM") || STARTS(t, tl, "direct shared memory")) {
        pr->t_shm++;
        local_edge(ex, pr, m, (size_t)(via - m));
    } else if (STARTS(t, tl, "NET")) {
        int gdr = ncd__find(t, tl, "GDRDMA", 6) != NULL;
        pr->t_net++;
        pr->t_netgdr += gdr;
        rank_net(ex, pr, m, via, gdr);
    } else if (STARTS(t, tl, "COLLNET") || STARTS(t, tl, "CollNet")) {
        pr->t_collnet++;
    }
}

/* An interface of a 2.3 "NET : Using interface" line into the process's
 * socket list (once), the first one also as its bootstrap interface. */
static void old_iface(struct ncd_explain *ex, struct ncd__proc *pr,
                      const char *s, const char *end)
{
    struct ncd__iface i;
    if (!parse_ifaces(s, end, &i, 1))
        return;
    if (!pr->nboot) {
        pr->boot[0] = i;
        pr->nboot = 1;
        pr->boot_line = ex->lineno;
        pr->boot_seq = ex->seq;
    }
    for (uint8_t k = 0; k < pr->nsock; k++)
        if (strcmp(pr->sock[k].name, i.name) == 0)
            return;
    if (pr->nsock < 8) {
        if (!pr->nsock) {
            pr->sock_line = ex->lineno;
            pr->sock_seq = ex->seq;
        }
        pr->sock[pr->nsock++] = i;
    }
}

static void add_ib(struct ncd__proc *pr, const char *s, size_t n)
{
    if (pr->nib >= 4 || !n)
        return;
    copyn(pr->ib[pr->nib++], sizeof pr->ib[0], s, n);
    if (NCD__FIND(s, n, "/RoCE"))
        pr->ib_roce++;
    else if (NCD__FIND(s, n, "/IB"))
        pr->ib_ib++;
}

/*
 * The same facts in the phrasing of NCCL 2.0 .. 2.3 (src/include/socket.h,
 * transport/net_ib.cu, init.cu of v2.3.5/v2.3.7) and 1.x (src/core.cu of
 * v1.3.4).  Returns 1 when the line was one of them.
 */
static int old_line(struct ncd_explain *ex, struct ncd__proc *pr,
                    const char *m, size_t ml)
{
    const char *end = m + ml;
    /* "NET : Using interface eno2:10.0.0.2<0>": each interface NCCL took;
     * the first one of a process is the bootstrap's (bootstrapInit runs
     * first, with one interface) */
    if (STARTS(m, ml, "NET : Using interface ")) {
        raise_phase(ex, pr, PH_BOOTSTRAP, m, ml);
        old_iface(ex, pr, m + 22, end);
        return 1;
    }
    /* "NET/IB : Using interface ib0 for sideband communication" (OOB) */
    if (STARTS(m, ml, "NET/IB : Using interface ")) {
        raise_phase(ex, pr, PH_BOOTSTRAP, m, ml);
        const char *s = m + 25, *e = s;
        while (e < end && *e != ' ')
            e++;
        copyn(pr->oob, sizeof pr->oob, s, (size_t)(e - s));
        return 1;
    }
    /* "NET/IB: [0] mlx5_0:1/IB " : one line per HCA port */
    if (STARTS(m, ml, "NET/IB: [")) {
        const char *rb = memchr(m, ']', ml);
        if (rb) {
            const char *s = rb + 1, *e;
            while (s < end && *s == ' ')
                s++;
            e = s;
            while (e < end && *e != ' ')
                e++;
            add_ib(pr, s, (size_t)(e - s));
            if (!pr->ib_line) {
                pr->ib_line = ex->lineno;
                pr->ib_seq = ex->seq;
            }
        }
        return 1;
    }
    /* "Using internal Network IB" / "Using external Network <plugin>" */
    if (STARTS(m, ml, "Using internal Network ") ||
        STARTS(m, ml, "Using external Network ")) {
        copyn(pr->net, sizeof pr->net, m + 23, ml - 23);
        pr->net_line = ex->lineno;
        if (m[6] == 'e') {
            pr->plugin = 2;
            pr->plugin_line = ex->lineno;
            if (!pr->plugin_name[0])
                memcpy(pr->plugin_name, pr->net, sizeof pr->net);
        } else if (pr->plugin == 0) {
            pr->plugin = 1;
            pr->plugin_line = ex->lineno;
        }
        return 1;
    }
    /* 2.3: "rank 0 nranks 8"; 1.x: "rank 0 using device 0 (0000:04:00.0)" */
    if (STARTS(m, ml, "rank ") && ml > 5 && m[5] >= '0' && m[5] <= '9') {
        long v;
        if ((v = num_after(m, ml, "rank")) >= 0 && pr->rank < 0)
            pr->rank = (int)v;
        if ((v = num_after(m, ml, "nranks")) >= 0 && pr->nranks < 0)
            pr->nranks = (int)v;
        if ((v = num_after(m, ml, "device")) >= 0 && pr->cuda_dev < 0 &&
            NCD__FIND(m, ml, " using device "))
            pr->cuda_dev = (int)v;
        return 1;
    }
    /* 1.x: "rank access 0 -> 1 via P2P device mem" (or IPC device mem,
     * common device, zero-copy host mem) */
    if (STARTS(m, ml, "rank access ")) {
        const char *via = NCD__FIND(m, ml, " via ");
        if (via) {
            raise_phase(ex, pr, PH_CONNECT, m, ml);
            if (NCD__FIND(via, (size_t)(end - via), "host mem"))
                pr->t_shm++;
            else
                pr->t_p2p++;
        }
        return 1;
    }
    return 0;
}

static void set_version(struct ncd__proc *pr, const char *v, size_t vl)
{
    /* "2.19.3+cuda12.3" */
    const char *plus = memchr(v, '+', vl);
    size_t nl = plus ? (size_t)(plus - v) : vl;
    const char *sp = memchr(v, ' ', nl);
    if (sp)
        nl = (size_t)(sp - v);
    copyn(pr->version, sizeof pr->version, v, nl);
    pr->vcode = ncd__version_code(pr->version);
    if (plus && (size_t)(v + vl - plus) > 5 && memcmp(plus, "+cuda", 5) == 0) {
        const char *c = plus + 5, *e = c;
        while (e < v + vl && *e != ' ')
            e++;
        copyn(pr->cuda, sizeof pr->cuda, c, (size_t)(e - c));
    }
}

/* nccl-tests lines: "# nccl-tests version ... nccl-library=21903" and
 * "#  Rank  0 Group  0 Pid 1234 on node1 device  0 [0000:1b:00] NAME". */
static void tests_line(struct ncd_explain *ex, const struct ncd_log_line *ll)
{
    const char *m = ll->text, *end = m + ll->text_len;
    size_t ml = ll->text_len;
    const char *lib = ncd__find(m, ml, "nccl-library=", 13);
    if (lib && STARTS(m, ml, "# nccl-tests version")) {
        long code = atol(lib + 13);
        const char *hdr = ncd__find(m, ml, "nccl-headers=", 13);
        ex->tests_lib_code = code;
        ex->tests_hdr_code = hdr ? atol(hdr + 13) : 0;
        ex->tests_line = ex->lineno;
        ex->tests_src = ex->nsrc - 1;
        if (code >= 10000)
            snprintf(ex->tests_version, sizeof ex->tests_version, "%ld.%ld.%ld",
                     code / 10000, code / 100 % 100, code % 100);
        else if (code > 0)
            snprintf(ex->tests_version, sizeof ex->tests_version, "%ld.%ld.%ld",
                     code / 1000, code / 100 % 10, code % 100);
        return;
    }
    const char *oob = ncd__find(m, ml, "Out of bounds values : ", 23);
    if (oob && ncd__find(m, ml, "FAILED", 6)) {
        ex->oob_failed += (uint64_t)atol(oob + 23);
        return;
    }
    if (oob && ncd__find(m, ml, " OK", 3)) {
        ex->tests_ok++;
        return;
    }
    if (!STARTS(m, ml, "#  Rank") && !STARTS(m, ml, "# Rank"))
        return;
    long rank = num_after(m, ml, "Rank");
    long pid = num_after(m, ml, "Pid");
    long dev = num_after(m, ml, "device");
    char host[48];
    if (rank < 0 || word_after(m, ml, " on ", host, sizeof host) < 0)
        return;
    const char *rb = ncd__find(m, ml, "] ", 2);
    if (!rb || ex->ngpus >= NCD__MAX_GPUS)
        return;
    if (!ex->gpus && !(ex->gpus = calloc(NCD__MAX_GPUS, sizeof *ex->gpus)))
        return;
    struct ncd__gpu *g = &ex->gpus[ex->ngpus++];
    memcpy(g->host, host, sizeof host);
    g->rank = (int)rank;
    g->dev = (int)dev;
    g->pid = pid;
    copyn(g->name, sizeof g->name, rb + 2, (size_t)(end - rb - 2));
    g->src = ex->nsrc - 1;
    g->line = ex->lineno;
}

/* "NCCL_X=value" or "export NCCL_X=value": a setting shown by `env`, a
 * launcher or a job script; kept like NCCL's own echo. */
static void env_dump_line(struct ncd_explain *ex, const struct ncd_log_line *ll)
{
    const char *m = ll->text;
    size_t ml = ll->text_len;
    if (STARTS(m, ml, "export ")) {
        m += 7;
        ml -= 7;
    }
    if (!STARTS(m, ml, "NCCL_"))
        return;
    size_t n = 5;
    while (n < ml && ((m[n] >= 'A' && m[n] <= 'Z') ||
                      (m[n] >= '0' && m[n] <= '9') || m[n] == '_'))
        n++;
    if (n == 5 || n >= ml || m[n] != '=' || memchr(m + n, ' ', ml - n))
        return;
    const char *v = m + n + 1;
    size_t vl = ml - n - 1;
    if (vl >= 2 && (v[0] == '"' || v[0] == '\'') && v[vl - 1] == v[0]) {
        v++;
        vl -= 2;
    }
    add_env(ex, ll, m, n, v, vl);
}

/* The error trail's cheap test, "<word ending in a digit> [(func)] -> ":
 * the ' ' before "->", else NULL; *sp: the first ' ' (this runs on every
 * line no other fact claims). */
static const char *trail_arrow(const char *m, size_t ml, const char **sp)
{
    const char *end = m + ml, *arrow = NULL;
    *sp = memchr(m, ' ', ml < 96 ? ml : 96);
    if (*sp && *sp > m && (*sp)[-1] >= '0' && (*sp)[-1] <= '9') {
        const char *q = *sp + 1;
        if (q < end && *q == '(') {
            const char *rp = memchr(q, ')', (size_t)(end - q));
            q = rp ? rp + 2 : end;
        }
        if (q + 3 < end && q[0] == '-' && q[1] == '>' && q[2] == ' ')
            arrow = q - 1;
    }
    return arrow;
}

int ncd__facts_inert(const struct ncd_log_line *ll)
{
    if (ll->level == NCD_LOG_NONE || ll->level == NCD_LOG_WARN)
        return 0;
    const char *m = ll->msg;
    size_t ml = ll->msg_len;
    if (ml < 4)
        return NCD__INERT;
    /* the branches of ncd__facts_line() that return before the trail */
    switch (m[0]) {
    case 'N':
        if (STARTS(m, ml, "NCCL_") || STARTS(m, ml, "NCCL "))
            return STARTS(m, ml, "NCCL version ") ||
                           ncd__find(m, ml, " set by environment to ", 23)
                       ? 0
                       : NCD__INERT;
        if (STARTS(m, ml, "NET") || STARTS(m, ml, "NVLS"))
            return 0;
        break;
    case 'B':
        if (STARTS(m, ml, "Bootstrap"))
            return 0;
        break;
    case 'U':
        if (STARTS(m, ml, "Using "))
            return 0;
        break;
    case 'r':
        if (STARTS(m, ml, "rank "))
            return 0;
        break;
    case '0': case '1': case '2': case '3': case '4':
    case '5': case '6': case '7': case '8': case '9':
        if (NCD__FIND(m, ml, " via "))
            return 0;
        break;
    case 'P':
        if (STARTS(m, ml, "Plugin Path : "))
            return 0;
        break;
    case 'F':
    case 'C':
        if (ncd__find(m, ml, "libibverbs", 10) ||
            STARTS(m, ml, "Connected all"))
            return 0;
        if (STARTS(m, ml, "Channel "))
            return NCD__FIND(m, ml, " via ") || memchr(m, '/', ml)
                       ? 0
                       : NCD__INERT;
        break;
    case 'R':
        if (STARTS(m, ml, "Ring "))
            return NCD__FIND(m, ml, " via ") ? 0 : NCD__INERT;
        break;
    case 'T':
        if (STARTS(m, ml, "Trees "))
            return 0;
        break;
    case 'G':
        if (STARTS(m, ml, "GPU Direct RDMA "))
            return 0;
        break;
    case 'I':
        if (STARTS(m, ml, "Init timings"))
            return 0;
        break;
    case 'c':
        if (STARTS(m, ml, "cudaDriverVersion ") || STARTS(m, ml, "comm 0x"))
            return 0;
        break;
    default:
        break;
    }
    const char *sp;
    if (ml > 6 && trail_arrow(m, ml, &sp))
        return 0;
    if (ml > 9 && memcmp(m + ml - 8, "COMPLETE", 8) == 0)
        return 0;
    if (ll->level == NCD_LOG_INFO && ncd__find(m, ml, "opCount", 7))
        return NCD__INERT_OPCOUNT;
    return NCD__INERT;
}

/* The process's last NCCL line is the current one (every NCCL line). */
static void note_last(const struct ncd_explain *ex, struct ncd__proc *pr)
{
    pr->last_src = ex->nsrc - 1;
    pr->last_line = ex->lineno;
    pr->last_seq = ex->seq;
}

void ncd__facts_inert_lines(struct ncd_explain *ex, struct ncd__proc *pr,
                            int opcount)
{
    note_last(ex, pr);
    if (opcount && pr->phase == PH_COMPLETE)
        pr->phase = PH_RUNNING;
}

void ncd__facts_line(struct ncd_explain *ex, const struct ncd_log_line *ll,
                     struct ncd__proc *pr)
{
    if (ll->level == NCD_LOG_NONE) {
        if (ll->text[0] == '#')
            tests_line(ex, ll);
        else
            env_dump_line(ex, ll);
        return;
    }
    if (!pr)
        return;
    const char *m = ll->msg;
    size_t ml = ll->msg_len;
    note_last(ex, pr);
    if (ll->level == NCD_LOG_WARN) {
        pr->nwarn++;
        return;
    }
    if (ml < 4)
        return;
    switch (m[0]) {
    case 'N':
        if (STARTS(m, ml, "NCCL version ")) {
            set_version(pr, m + 13, ml - 13);
            pr->ver_line = ex->lineno;
            return;
        }
        if (STARTS(m, ml, "NCCL_") || STARTS(m, ml, "NCCL ")) {
            const char *se = ncd__find(m, ml, " set by environment to ", 23);
            if (se) {
                const char *v = se + 23;
                size_t vl = (size_t)(m + ml - v);
                /* integer params end with '.' */
                if (vl > 1 && v[vl - 1] == '.' && v[vl - 2] >= '0' &&
                    v[vl - 2] <= '9')
                    vl--;
                add_env(ex, ll, m, (size_t)(se - m), v, vl);
            }
            return;
        }
        if (STARTS(m, ml, "NET") && old_line(ex, pr, m, ml))
            return;
        if (STARTS(m, ml, "NET/IB")) {
            raise_phase(ex, pr, PH_BOOTSTRAP, m, ml);
            const char *u = ncd__find(m, ml, ": Using ", 8);
            if (u) {
                const char *p = u + 8, *end = m + ml;
                const char *semi = memchr(p, ';', (size_t)(end - p));
                const char *le = semi ? semi : end;
                while (p < le && pr->nib < 4) {
                    while (p < le && *p == ' ')
                        p++;
                    if (p >= le || *p != '[')
                        break;
                    const char *rb = memchr(p, ']', (size_t)(le - p));
                    if (!rb)
                        break;
                    const char *s = rb + 1, *e = s;
                    while (e < le && *e != ' ')
                        e++;
                    if (e == s) { /* "[RO]" flag */
                        p = e;
                        continue;
                    }
                    add_ib(pr, s, (size_t)(e - s));
                    p = e;
                }
                const char *oob = semi ? ncd__find(semi, (size_t)(end - semi),
                                                "OOB ", 4)
                                       : NULL;
                if (oob) {
                    struct ncd__iface i;
                    if (parse_ifaces(oob + 4, end, &i, 1))
                        copyn(pr->oob, sizeof pr->oob, i.name, strlen(i.name));
                }
            } else if (ncd__find(m, ml, "No device found", 15)) {
                pr->ib_nodev = 1;
                pr->ib_line = ex->lineno;
                pr->ib_seq = ex->seq;
            }
            if (ncd__find(m, ml, "GPU Direct RDMA Enabled", 23))
                pr->gdr_on++;
            else if (ncd__find(m, ml, "GPU Direct RDMA Disabled", 24))
                pr->gdr_off++;
            return;
        }
        if (STARTS(m, ml, "NET/Socket")) {
            raise_phase(ex, pr, PH_BOOTSTRAP, m, ml);
            const char *u = ncd__find(m, ml, ": Using ", 8);
            if (u && !pr->nsock) {
                pr->nsock = parse_ifaces(u + 8, m + ml, pr->sock, 8);
                pr->sock_line = ex->lineno;
                pr->sock_seq = ex->seq;
            }
            if (ncd__find(m, ml, "GPU Direct RDMA Enabled", 23))
                pr->gdr_on++;
            else if (ncd__find(m, ml, "GPU Direct RDMA Disabled", 24))
                pr->gdr_off++;
            return;
        }
        if (STARTS(m, ml, "NET/Plugin") || STARTS(m, ml, "NET/")) {
            if (ncd__find(m, ml, "No plugin found", 15) ||
                ncd__find(m, ml, "Could not find", 14) ||
                ncd__find(m, ml, "using internal", 14) ||
                ncd__find(m, ml, "Using internal", 14)) {
                if (pr->plugin == 0) {
                    pr->plugin = 1;
                    pr->plugin_line = ex->lineno;
                }
            } else if (ncd__find(m, ml, "Loaded", 6)) {
                pr->plugin = 2;
                pr->plugin_line = ex->lineno;
                const char *l = ncd__find(m, ml, "plugin ", 7);
                if (l)
                    copyn(pr->plugin_name, sizeof pr->plugin_name, l + 7,
                          (size_t)(m + ml - l - 7));
            }
            return;
        }
        if (STARTS(m, ml, "NVLS")) {
            raise_phase(ex, pr, PH_NVLS, m, ml);
            if (ncd__find(m, ml, "support is not available", 24))
                pr->nvls = 0;
            else if (ncd__find(m, ml, "support is available", 20))
                pr->nvls = 1;
            pr->nvls_line = ex->lineno;
            return;
        }
        break;
    case 'B':
        if (STARTS(m, ml, "Bootstrap")) {
            raise_phase(ex, pr, PH_BOOTSTRAP, m, ml);
            const char *u = ncd__find(m, ml, ": Using ", 8);
            if (u && !pr->nboot) {
                pr->nboot = parse_ifaces(u + 8, m + ml, pr->boot, 4);
                pr->boot_line = ex->lineno;
                pr->boot_seq = ex->seq;
            }
            return;
        }
        break;
    case 'U':
        if (STARTS(m, ml, "Using network ")) {
            copyn(pr->net, sizeof pr->net, m + 14, ml - 14);
            pr->net_line = ex->lineno;
            if (strcmp(pr->net, "IB") && strcmp(pr->net, "Socket")) {
                pr->plugin = 2;
                if (!pr->plugin_name[0])
                    memcpy(pr->plugin_name, pr->net, sizeof pr->net);
            }
            return;
        }
        if (old_line(ex, pr, m, ml))
            return;
        break;
    case 'r':
        if (old_line(ex, pr, m, ml))
            return;
        break;
    case '0': case '1': case '2': case '3': case '4':
    case '5': case '6': case '7': case '8': case '9': {
        /* a connection line whose "Channel NN :" was cut */
        const char *via = NCD__FIND(m, ml, " via ");
        if (via && NCD__FIND(m, (size_t)(via - m), " -> ")) {
            transport(ex, pr, m, ml, via);
            return;
        }
        break;
    }
    case 'P':
        if (STARTS(m, ml, "Plugin Path : ")) {
            pr->plugin = 2;
            pr->plugin_line = ex->lineno;
            copyn(pr->plugin_name, sizeof pr->plugin_name, m + 14, ml - 14);
            return;
        }
        break;
    case 'F':
    case 'C':
        if (ncd__find(m, ml, "libibverbs", 10) &&
            (STARTS(m, ml, "Failed to open") || STARTS(m, ml, "Count not open") ||
             STARTS(m, ml, "Could not open"))) {
            pr->ibverbs_missing = 1;
            pr->ib_line = ex->lineno;
            pr->ib_seq = ex->seq;
            return;
        }
        if (STARTS(m, ml, "Channel ")) {
            const char *via = NCD__FIND(m, ml, " via ");
            if (via)
                transport(ex, pr, m, ml, via);
            else if (!pr->ring[0] && memchr(m, '/', ml)) {
                const char *c = ncd__find(m, ml, " : ", 3);
                if (c)
                    copyn(pr->ring, sizeof pr->ring, c + 3,
                          (size_t)(m + ml - c - 3));
                raise_phase(ex, pr, PH_TOPO, m, ml);
            }
            return;
        }
        if (STARTS(m, ml, "Connected all")) {
            raise_phase(ex, pr, PH_CONNECT, m, ml);
            return;
        }
        break;
    case 'R':
        if (STARTS(m, ml, "Ring ")) {
            const char *via = NCD__FIND(m, ml, " via ");
            if (via)
                transport(ex, pr, m, ml, via);
            return;
        }
        break;
    case 'T':
        if (STARTS(m, ml, "Trees ")) {
            if (!pr->trees[0])
                copyn(pr->trees, sizeof pr->trees, m + 6, ml - 6);
            raise_phase(ex, pr, PH_TOPO, m, ml);
            return;
        }
        break;
    case 'G':
        if (STARTS(m, ml, "GPU Direct RDMA Enabled"))
            pr->gdr_on++;
        else if (STARTS(m, ml, "GPU Direct RDMA Disabled"))
            pr->gdr_off++;
        break;
    case 'I':
        if (STARTS(m, ml, "Init timings")) {
            const char *t = ncd__find(m, ml, " total ", 7);
            if (t)
                pr->init_total = atof(t + 7);
            return;
        }
        break;
    case 'c':
        if (STARTS(m, ml, "cudaDriverVersion ")) {
            pr->driver = atoi(m + 18);
            return;
        }
        if (STARTS(m, ml, "comm 0x") && ncd__find(m, ml, "nNodes", 6)) {
            long v;
            if ((v = num_after(m, ml, "rank")) >= 0)
                pr->rank = (int)v;
            if ((v = num_after(m, ml, "nRanks")) >= 0)
                pr->nranks = (int)v;
            if ((v = num_after(m, ml, "nNodes")) >= 0)
                pr->nnodes = (int)v;
            if ((v = num_after(m, ml, "localRanks")) >= 0)
                pr->local_ranks = (int)v;
            return;
        }
        /* 2.3: "comm 0x7f13 rank 1 nranks 8" (its "- COMPLETE" line below) */
        if (STARTS(m, ml, "comm 0x") && memcmp(m + ml - 4, "LETE", 4) != 0) {
            long v;
            if ((v = num_after(m, ml, "rank")) >= 0 && pr->rank < 0)
                pr->rank = (int)v;
            if ((v = num_after(m, ml, "nranks")) >= 0 && pr->nranks < 0)
                pr->nranks = (int)v;
            return;
        }
        break;
    default:
        break;
    }
    /* error trail: "<file>:<line> [(func)] -> <code>[ [Async thread]]" */
    if (!ex->trail_file[0] && ml > 6) {
        const char *sp, *arrow = trail_arrow(m, ml, &sp);
        const char *colon = arrow ? memchr(m, ':', (size_t)(sp - m)) : NULL;
        if (arrow && colon && arrow[4] >= '0' && arrow[4] <= '9' &&
            memchr(m, ' ', (size_t)(colon - m)) == NULL && colon[1] >= '0' &&
            colon[1] <= '9') {
            copyn(ex->trail_file, sizeof ex->trail_file, m, (size_t)(colon - m));
            ex->trail_code = atoi(arrow + 4);
            ex->trail_src = ex->nsrc - 1;
            ex->trail_line = ex->lineno;
            ex->trail_seq = ex->seq;
            copyn(ex->trail_text, sizeof ex->trail_text, ll->text, ll->text_len);
            return;
        }
    }
    /* "... Init COMPLETE", "... Abort COMPLETE", "... Destroy COMPLETE" */
    if (ml > 9 && memcmp(m + ml - 8, "COMPLETE", 8) == 0) {
        /* "Init COMPLETE"; 2.3 printed "comm %p rank %d nranks %d - COMPLETE" */
        if (NCD__FIND(m, ml, "Init COMPLETE") ||
            (ml > 11 && memcmp(m + ml - 11, " - COMPLETE", 11) == 0)) {
            long v;
            pr->ncomplete++;
            pr->phase = PH_COMPLETE;
            if ((v = num_after(m, ml, "rank")) >= 0 && pr->rank < 0)
                pr->rank = (int)v;
            if ((v = num_after(m, ml, "nranks")) >= 0 && pr->nranks < 0)
                pr->nranks = (int)v;
            if ((v = num_after(m, ml, "cudaDev")) >= 0 && pr->cuda_dev < 0)
                pr->cuda_dev = (int)v;
            if (!pr->busid[0])
                word_after(m, ml, "busId", pr->busid, sizeof pr->busid);
        } else if (ncd__find(m, ml, "Abort COMPLETE", 14)) {
            pr->nabort++;
            pr->phase = PH_DESTROYED;
        } else {
            pr->phase = PH_DESTROYED;
        }
        return;
    }
    if (ll->level == NCD_LOG_INFO && pr->phase == PH_COMPLETE &&
        ncd__find(m, ml, "opCount", 7))
        pr->phase = PH_RUNNING;
}

/* "[Rank 3] Watchdog caught collective operation timeout:
 * WorkNCCL(SeqNum=808, OpType=ALLREDUCE, ...)" (PyTorch ProcessGroupNCCL) */
/*
 * PyTorch's C10D_NCCL_CHECK message (data/framework-messages.tsv):
 * "NCCL error in: <file>:<line>, <reason>, NCCL version <x.y.z>", where the
 * version is ncclGetVersion() of the library the process loaded.  Kept as
 * the job's version for logs that lack NCCL's own "NCCL version" line.
 */
void ncd__facts_fw_version(struct ncd_explain *ex, const struct ncd_log_line *ll)
{
    const char *m = ll->text;
    size_t ml = ll->text_len;
    const char *e = ncd__find(m, ml, "NCCL error in: ", 15);
    if (!e || ex->fw_vcode < 0)
        return;
    const char *v = ncd__find(e, (size_t)(m + ml - e), ", NCCL version ", 15);
    if (!v)
        return;
    v += 15;
    char buf[24];
    size_t n = 0;
    while (v + n < m + ml && n + 1 < sizeof buf &&
           ((v[n] >= '0' && v[n] <= '9') || v[n] == '.'))
        n++;
    memcpy(buf, v, n);
    buf[n] = 0;
    int code = ncd__version_code(buf);
    if (code <= 0)
        return;
    if (ex->fw_vcode && ex->fw_vcode != code)
        ex->fw_vcode = -1;
    else
        ex->fw_vcode = code;
}

void ncd__facts_watchdog(struct ncd_explain *ex, const struct ncd_log_line *ll)
{
    const char *m = ll->text;
    size_t ml = ll->text_len;
    const char *w = ncd__find(m, ml, "Watchdog caught", 15);
    const char *sq = ncd__find(m, ml, "SeqNum=", 7);
    const char *op = ncd__find(m, ml, "OpType=", 7);
    if (!w || !sq || ex->nwd >= NCD__MAX_WD)
        return;
    /* the rank: "[Rank N]" / "[PG 1 Rank N]" just before, else the
     * launcher's */
    long rank = -1;
    for (const char *r = w; r > m + 5; r--)
        if (memcmp(r - 5, "Rank ", 5) == 0) {
            rank = atol(r);
            break;
        }
    if (rank < 0)
        rank = ll->rank;
    if (rank < 0)
        return;
    for (size_t i = 0; i < ex->nwd; i++)
        if (ex->wd[i].rank == rank && ex->wd[i].seq == atol(sq + 7))
            return; /* repeated report */
    if (!ex->wd && !(ex->wd = calloc(NCD__MAX_WD, sizeof *ex->wd)))
        return;
    struct ncd__wd *d = &ex->wd[ex->nwd++];
    d->rank = (int)rank;
    d->seq = atol(sq + 7);
    d->op[0] = '\0';
    if (op) {
        const char *e = op + 7;
        while (e < m + ml && *e != ',' && *e != ')' && *e != ' ')
            e++;
        copyn(d->op, sizeof d->op, op + 7, (size_t)(e - op - 7));
    }
    d->src = ex->nsrc - 1;
    d->line = ex->lineno;
}
