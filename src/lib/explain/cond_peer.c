/* SPDX-License-Identifier: MIT */
/*
 * Causes that come from a peer: what a process reports about an address it
 * got from another process (the unique id of rank 0, the bootstrap ring,
 * the peers' listening addresses) while its own side was fine.
 *
 * NCCL exchanges addresses before it compares versions: bootstrapInit
 * (src/bootstrap.cc) sends and gathers ncclSocketAddress structs and, only
 * afterwards, init.cc compares the peers' versions ("Mismatched NCCL
 * version").  Those exchanges changed in 2.12 (proxy addresses replace the
 * allocator's), 2.20.3 (an extra all-gather of UDS ids), 2.23.4 (struct
 * extInfo gains iroot/nroots and the ring connect info) and 2.24.3 (RAS
 * ranks join the ring all-gather), so processes of releases on either side
 * of those changes read each other's bytes as garbage addresses.
 */
#define _GNU_SOURCE
#include "explain/reason.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "ncd/error.h"

/* The IP of a peer as NCCL prints it ("10.0.0.2<4500>", "[fe80::1%ib0]:5",
 * "10.0.0.2:29500") into out; 0 when it is not an IP literal. */
static int peer_ip(const char *peer, char *out, size_t osz)
{
    if (!peer)
        return 0;
    const char *s = peer;
    size_t n = strcspn(s, "<");
    if (*s == '[') {
        s++;
        n = strcspn(s, "]");
    } else if (memchr(s, '.', n) && memchr(s, ':', n)) {
        n = strcspn(s, ":<"); /* IPv4 "a.b.c.d:port" */
    }
    if (n == 0 || n >= osz)
        return 0;
    memcpy(out, s, n);
    out[n] = '\0';
    char *pct = strchr(out, '%');
    char tmp[64];
    snprintf(tmp, sizeof tmp, "%.*s", pct ? (int)(pct - out) : (int)n, out);
    unsigned char b[16];
    return inet_pton(AF_INET, tmp, b) == 1 || inet_pton(AF_INET6, tmp, b) == 1;
}

/* 1 when ip is not a unicast address another host can connect to: "this
 * network" 0.0.0.0/8 (RFC 1122 3.2.1.3), multicast 224.0.0.0/4 (RFC 5771),
 * reserved 240.0.0.0/4 and broadcast, IPv6 :: and ff00::/8. */
static int ip_unusable(const char *ip)
{
    unsigned char b[16];
    if (inet_pton(AF_INET, ip, b) == 1)
        return b[0] == 0 || b[0] >= 224;
    char tmp[64];
    snprintf(tmp, sizeof tmp, "%.*s", (int)strcspn(ip, "%"), ip);
    if (inet_pton(AF_INET6, tmp, b) != 1)
        return 0;
    static const unsigned char zero[16];
    return memcmp(b, zero, 16) == 0 || b[0] == 0xff;
}

/* The process whose bootstrap, socket or IB OOB address is ip, or NULL. */
static const struct ncd__proc *owner_of(const struct ncd_explain *ex,
                                        const char *ip)
{
    for (size_t i = 0; i < ex->nprocs; i++) {
        const struct ncd__proc *p = &ex->procs[i];
        for (int k = 0; k < p->nboot; k++)
            if (strcmp(p->boot[k].addr, ip) == 0)
                return p;
        for (int k = 0; k < p->nsock; k++)
            if (strcmp(p->sock[k].addr, ip) == 0)
                return p;
    }
    return NULL;
}

/* The first absorbed match that names a peer (capture "peer"). */
static const struct ncd__rec *peer_rec(const struct ncd_explain *ex,
                                       size_t rule, char *ip, size_t ipsz)
{
    const struct ncd__rule *r = &ex->rules->v[rule];
    const struct ncd__rec *best = NULL;
    for (size_t a = 0; a < r->nabsorbs; a++) {
        const struct ncd__rec *rec = ncd__rec_of(ex, r->absorbs[a]);
        char tmp[64];
        if (!rec || !peer_ip(ncd__rec_cap(rec, "peer"), tmp, sizeof tmp))
            continue;
        if (!best || rec->first_seq < best->first_seq) {
            best = rec;
            snprintf(ip, ipsz, "%s", tmp);
        }
    }
    return best;
}

/* The job spans several nodes: NCCL said so, or the logs come from
 * several hosts. */
static int multi_node(const struct ncd_explain *ex)
{
    const char *h0 = NULL;
    for (size_t i = 0; i < ex->nprocs; i++) {
        const struct ncd__proc *p = &ex->procs[i];
        if (p->nnodes > 1)
            return 1;
        if (!p->host[0])
            continue;
        if (!h0)
            h0 = p->host;
        else if (strcmp(h0, p->host) != 0)
            return 1;
    }
    return 0;
}

static int has_version_mismatch(const struct ncd__reason *rs)
{
    for (size_t k = 0; k < rs->n; k++)
        if (rs->ex->rules->v[rs->v[k].rule].cond == NCD__COND_version_mismatch)
            return 1;
    return 0;
}

/* "2.19.3 (node1), 2.20.5 (node2)" or "" when no version was logged. */
static void versions_seen(const struct ncd_explain *ex, char *out, size_t osz)
{
    out[0] = '\0';
    for (size_t i = 0; i < ex->nprocs; i++) {
        const struct ncd__proc *p = &ex->procs[i];
        if (!p->vcode || strstr(out, p->version))
            continue;
        size_t l = strlen(out);
        snprintf(out + l, osz - l, "%s%s%s%s%s", l ? ", " : "", p->version,
                 p->host[0] ? " (" : "", p->host, p->host[0] ? ")" : "");
    }
}

/*
 * "ncclSocketInit: connecting to address <x> with family N is neither
 * AF_INET nor AF_INET6" while the same host (or log) shows NCCL found its
 * own interface: the address came from a peer whose NCCL lays out the
 * bootstrap messages differently.
 */
int ncd__cond_peer_garbage_address(struct ncd__reason *rs, size_t rule)
{
    const struct ncd_explain *ex = rs->ex;
    const struct ncd__rec *bad = NULL;
    if (has_version_mismatch(rs) || !ncd__rec_absorbed(ex, rule, &bad))
        return 0;
    const char *host = bad->ev[0].host;
    const struct ncd__proc *own = NULL;
    for (size_t i = 0; i < ex->nprocs && !own; i++) {
        const struct ncd__proc *p = &ex->procs[i];
        int same = host[0] ? strcmp(p->host, host) == 0
                           : p->src == bad->ev[0].src;
        if (same && (p->nboot || p->nsock))
            own = p;
    }
    if (!own)
        return 0; /* no interface found here: NCCL_SOCKET_IFNAME's case */
    const struct ncd__iface *f = own->nboot ? &own->boot[0] : &own->sock[0];
    struct ncd__hit *h = ncd__hit_new(rs, rule);
    if (!h)
        return NCD_ENOMEM;
    char where[96], vers[200];
    ncd__proc_where(own, where, sizeof where);
    versions_seen(ex, vers, sizeof vers);
    ncd__hit_var(h, "iface", f->name);
    ncd__hit_var(h, "addr", f->addr);
    ncd__hit_var(h, "where", where);
    ncd__hit_var(h, "versions", vers[0] ? vers : "not logged");
    ncd__hit_ev(h, "%s:%llu: %s: NCCL uses %s %s (its own address is fine)",
                ncd__src_name(ex, own->src),
                (unsigned long long)(own->nboot ? own->boot_line
                                                : own->sock_line),
                where, f->name, f->addr);
    ncd__hit_ev_rec(ex, h, bad);
    ncd__hit_from_rec(h, bad);
    return 1;
}

/* NCCL said the job has one node ("nNodes 1") and the logs show no
 * second host. */
static int single_node(const struct ncd_explain *ex)
{
    if (multi_node(ex))
        return 0;
    for (size_t i = 0; i < ex->nprocs; i++)
        if (ex->procs[i].nnodes == 1)
            return 1;
    return 0;
}

/* A known bug whose signature is the line `seq` only tells how NCCL
 * reported the failure there (2.18-2.24's 'Software caused connection
 * abort' after a refused connect): the address explains why it failed, so
 * the bug is shown after that cause (NVIDIA/nccl#1515: "most likely a
 * secondary effect here and not the true source"). */
static void demote_bugs_on(struct ncd__reason *rs, uint64_t seq)
{
    for (size_t k = 0; k < rs->n; k++)
        if (rs->ex->rules->v[rs->v[k].rule].cond == NCD__COND_known_bug &&
            rs->v[k].seq == seq && rs->v[k].sev > NCD_SEV_WARNING)
            rs->v[k].sev = NCD_SEV_WARNING;
}

/* A failed connection to a loopback address: the peer advertised its lo
 * address.  On one machine a connect to 127.0.0.1 reaches the listening
 * rank, so a refused or aborted one means a job of several nodes unless
 * NCCL said there is one node. */
int ncd__cond_peer_loopback(struct ncd__reason *rs, size_t rule)
{
    const struct ncd_explain *ex = rs->ex;
    char ip[64];
    const struct ncd__rec *rec = peer_rec(ex, rule, ip, sizeof ip);
    if (!rec || !ncd__addr_loopback("", ip) || single_node(ex))
        return 0;
    struct ncd__hit *h = ncd__hit_new(rs, rule);
    if (!h)
        return NCD_ENOMEM;
    const struct ncd__env *e = NULL;
    const char *ifn = ncd__env_get(ex, "NCCL_SOCKET_IFNAME", &e);
    char fix[128];
    if (rs->good_iface[0] != '<')
        snprintf(fix, sizeof fix, "%s", rs->good_iface);
    else if (ifn && ifn[0] == '^')
        snprintf(fix, sizeof fix, "%s,lo", ifn);
    else
        snprintf(fix, sizeof fix, "^lo,docker,virbr");
    ncd__hit_var(h, "addr", ip);
    ncd__hit_var(h, "ifname_fix", fix);
    if (ifn && ifn[0] == '^' && !strstr(ifn, "lo")) {
        /* an exclusion list that lets lo win: the user's setting */
        h->cat = NCD_CAT_NET_IFNAME;
        char why[300];
        snprintf(why, sizeof why,
                 "NCCL_SOCKET_IFNAME=%s is an exclusion list that does not "
                 "exclude lo; once the variable is set, lo and docker* lose "
                 "the low priority NCCL gives them (since 2.3.5), so a rank "
                 "can pick lo",
                 ifn);
        ncd__hit_var(h, "why", why);
        ncd__hit_ev(h, "%s:%llu: NCCL_SOCKET_IFNAME set by environment to %s",
                    ncd__src_name(ex, e->src), (unsigned long long)e->line,
                    ifn);
    } else {
        ncd__hit_var(h, "why",
                     "that rank's NCCL chose lo: lo was its only interface "
                     "with an address, or NCCL_SOCKET_IFNAME/NCCL_COMM_ID led "
                     "it there");
    }
    ncd__hit_ev_rec(ex, h, rec);
    ncd__hit_from_rec(h, rec);
    demote_bugs_on(rs, h->seq);
    return 1;
}

/* A connection to an address no host can be reached at (0.x.x.x,
 * multicast, broadcast). */
int ncd__cond_peer_unusable_address(struct ncd__reason *rs, size_t rule)
{
    const struct ncd_explain *ex = rs->ex;
    char ip[64];
    const struct ncd__rec *rec = peer_rec(ex, rule, ip, sizeof ip);
    if (!rec || !ip_unusable(ip))
        return 0;
    struct ncd__hit *h = ncd__hit_new(rs, rule);
    if (!h)
        return NCD_ENOMEM;
    ncd__hit_var(h, "addr", ip);
    ncd__hit_ev_rec(ex, h, rec);
    ncd__hit_from_rec(h, rec);
    return 1;
}

/* "Connection refused" from an address the logs show a process of this
 * job listening on (dead peer), or from an address no process of these
 * logs has while they cover every node (stale address). */
int ncd__cond_peer_refused(struct ncd__reason *rs, size_t rule)
{
    const struct ncd_explain *ex = rs->ex;
    char ip[64];
    const struct ncd__rec *rec = peer_rec(ex, rule, ip, sizeof ip);
    if (!rec || ncd__addr_loopback("", ip) || ip_unusable(ip) ||
        ncd__addr_linklocal(ip))
        return 0;
    const char *err = NULL;
    for (size_t c = 0; c < rec->ncaps && !err; c++)
        if (strcmp(rec->cap_name[c], "err") == 0)
            err = rec->cap_val[c];
    if (!err || !strstr(err, "refused"))
        return 0;
    const struct ncd__proc *p = owner_of(ex, ip);
    char where[96] = "";
    if (!p) {
        /* are every node's addresses in these logs? */
        const char *hosts[64];
        size_t nh = 0;
        int nnodes = 0;
        for (size_t i = 0; i < ex->nprocs; i++) {
            const struct ncd__proc *q = &ex->procs[i];
            if (q->nnodes > nnodes)
                nnodes = q->nnodes;
            if (!q->nboot || !q->host[0])
                continue;
            size_t k = 0;
            while (k < nh && strcmp(hosts[k], q->host) != 0)
                k++;
            if (k < nh)
                continue;
            if (nh == 64)
                return 0;
            hosts[nh++] = q->host;
        }
        if (nh < 2 || (nnodes && (int)nh < nnodes))
            return 0;
    }
    struct ncd__hit *h = ncd__hit_new(rs, rule);
    if (!h)
        return NCD_ENOMEM;
    ncd__hit_var(h, "addr", ip);
    if (p) {
        ncd__proc_where(p, where, sizeof where);
        char why[300];
        snprintf(why, sizeof why,
                 "%s is the address of %s in these logs: nothing listened "
                 "there any more, so that process had exited, crashed or "
                 "aborted after its own error (its log says which)",
                 ip, where);
        ncd__hit_var(h, "why", why);
        ncd__hit_ev(h, "%s:%llu: %s uses %s", ncd__src_name(ex, p->src),
                    (unsigned long long)p->boot_line, where, ip);
    } else {
        char why[300];
        snprintf(why, sizeof why,
                 "no process of these logs (every node's is here) has the "
                 "address %s: the address came from a stale unique id, an "
                 "old NCCL_COMM_ID or MASTER_ADDR, or a host name that "
                 "resolves to another machine",
                 ip);
        ncd__hit_var(h, "why", why);
    }
    ncd__hit_ev_rec(ex, h, rec);
    ncd__hit_from_rec(h, rec);
    return 1;
}
