/* SPDX-License-Identifier: MIT */
/*
 * Conditions on the network transport NCCL ended up with: IB expected but
 * Socket used, GPU Direct RDMA off, several nodes over TCP; what the errno
 * of a failed IB verbs call means (data/ib-verbs-errors.yaml).
 */
#define _GNU_SOURCE
#include "explain/reason.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncd/error.h"

/* A process could not load libibverbs or found no IB device, uses Socket,
 * and the job has RDMA hints. */
int ncd__cond_ib_fallback(struct ncd__reason *rs, size_t rule)
{
    const struct ncd_explain *ex = rs->ex;
    const char *dis = ncd__env_get(ex, "NCCL_IB_DISABLE", NULL);
    if (dis && strcmp(dis, "0") != 0)
        return 0;
    int any_ib = 0;
    for (size_t i = 0; i < ex->nprocs; i++)
        any_ib |= ex->procs[i].nib > 0;
    for (size_t i = 0; i < ex->nprocs; i++) {
        const struct ncd__proc *p = &ex->procs[i];
        if (!(p->ibverbs_missing || p->ib_nodev) || p->nib)
            continue;
        int socket = strcmp(p->net, "Socket") == 0 || p->nsock > 0;
        const char *ipoib = NULL;
        for (int k = 0; k < p->nsock; k++)
            if (strncmp(p->sock[k].name, "ib", 2) == 0)
                ipoib = p->sock[k].name;
        /* RDMA is expected when: an IPoIB interface exists, other
         * processes use IB, NCCL_IB_HCA is set, or an RDMA net plugin
         * loaded and still fell back to Socket */
        int hint = ipoib || any_ib || ncd__env_get(ex, "NCCL_IB_HCA", NULL) ||
                   p->plugin == 2;
        if (!socket || !hint)
            continue;
        char where[96];
        struct ncd__hit *h = ncd__hit_proc(rs, rule, p, where, sizeof where);
        if (!h)
            return NCD_ENOMEM;
        ncd__hit_var(h, "reason", p->ibverbs_missing
                                      ? "libibverbs could not be loaded"
                                      : "no active InfiniBand/RoCE port passed "
                                        "NCCL_IB_HCA (NET/IB : No device found)");
        ncd__hit_ev(h, "%s:%llu: %s: %s", ncd__src_name(ex, p->src),
                    (unsigned long long)p->ib_line, where,
                    p->ibverbs_missing ? "Failed to open libibverbs.so[.1]"
                                       : "NET/IB : No device found.");
        if (ipoib)
            ncd__hit_ev(h, "%s:%llu: %s: data goes over NET/Socket on %s (IPoIB)",
                        ncd__src_name(ex, p->src),
                        (unsigned long long)p->sock_line, where, ipoib);
        else
            ncd__hit_ev(h, "%s:%llu: %s: Using network Socket%s",
                        ncd__src_name(ex, p->src),
                        (unsigned long long)(p->net_line ? p->net_line
                                                         : p->sock_line),
                        where,
                        any_ib            ? " while other processes use IB"
                        : p->plugin == 2 ? " although an RDMA net plugin was loaded"
                                         : "");
        h->seq = p->ib_seq;
        return 1;
    }
    return 0;
}

/* IB in use with GPU Direct RDMA disabled for every HCA. */
int ncd__cond_gdr_off(struct ncd__reason *rs, size_t rule)
{
    const struct ncd_explain *ex = rs->ex;
    for (size_t i = 0; i < ex->nprocs; i++) {
        const struct ncd__proc *p = &ex->procs[i];
        if (!p->gdr_off || p->gdr_on || !p->nib)
            continue;
        char where[96];
        struct ncd__hit *h = ncd__hit_proc(rs, rule, p, where, sizeof where);
        if (!h)
            return NCD_ENOMEM;
        ncd__hit_ev(h, "%s: GPU Direct RDMA Disabled for every HCA (%s)", where,
                    p->ib[0]);
        h->seq = p->last_seq;
        return 1;
    }
    return 0;
}

/* Several nodes talking over TCP: fine on Ethernet-only clusters, slow
 * where RDMA exists (ib-fallback covers the evident cases). */
int ncd__cond_socket_multinode(struct ncd__reason *rs, size_t rule)
{
    const struct ncd_explain *ex = rs->ex;
    for (size_t k = 0; k < rs->n; k++)
        if (ex->rules->v[rs->v[k].rule].cond == NCD__COND_ib_fallback)
            return 0;
    for (size_t i = 0; i < ex->nprocs; i++) {
        const struct ncd__proc *p = &ex->procs[i];
        if (strcmp(p->net, "Socket") != 0 || p->nnodes < 2)
            continue;
        struct ncd__hit *h = ncd__hit_new(rs, rule);
        if (!h)
            return NCD_ENOMEM;
        char nn[16], where[96];
        snprintf(nn, sizeof nn, "%d", p->nnodes);
        ncd__hit_var(h, "nnodes", nn);
        ncd__proc_where(p, where, sizeof where);
        ncd__hit_ev(h, "%s:%llu: %s: Using network Socket with %d nodes",
                    ncd__src_name(ex, p->src), (unsigned long long)p->net_line,
                    where, p->nnodes);
        h->seq = p->net_line;
        return 1;
    }
    return 0;
}

/* A verbs failure as NCCL's wrapper prints it (src/misc/ibvwrap.cc):
 * "Call to <verb> failed with error <text>[ errno <n>]", "Call to
 * ibv_modify_qp failed with <n> <text>, on dev <hca>:<port>, ...",
 * "<verb>() failed with error <text>". */
struct verb_err {
    char verb[48];
    int errnum; /* 0 when only the text is known */
    char text[64];
    char dev[32]; /* "" when the line does not name it */
    int since;    /* first release printing this format, 0 unknown */
};

static int parse_verb_err(const char *line, struct verb_err *v)
{
    memset(v, 0, sizeof *v);
    const char *p = strstr(line, "Call to ibv_");
    p = p ? p + 8 : strstr(line, "ibv_");
    if (!p)
        return 0;
    size_t n = 0;
    while (n < sizeof v->verb - 1 &&
           ((p[n] >= 'a' && p[n] <= 'z') || (p[n] >= '0' && p[n] <= '9') ||
            p[n] == '_'))
        n++;
    memcpy(v->verb, p, n);
    v->verb[n] = '\0';
    const char *q = strstr(p + n, " failed with ");
    if (!q)
        return 0;
    q += 13;
    if (*q >= '0' && *q <= '9') {
        v->errnum = atoi(q);
        while (*q >= '0' && *q <= '9')
            q++;
        q += *q == ' ';
    } else if (strncmp(q, "error ", 6) == 0) {
        q += 6;
        const char *en = strstr(q, " errno ");
        if (en)
            v->errnum = atoi(en + 7);
    } else {
        return 0;
    }
    size_t tl = strcspn(q, ",");
    const char *en = strstr(q, " errno ");
    if (en && (size_t)(en - q) < tl)
        tl = (size_t)(en - q);
    snprintf(v->text, sizeof v->text, "%.*s", (int)tl, q);
    const char *d = strstr(q, "on dev ");
    if (d)
        snprintf(v->dev, sizeof v->dev, "%.*s", (int)strcspn(d + 7, ":, "),
                 d + 7);
    /* the QP state message (ibvModifyQpLog) exists from 2.24.3 */
    if (d && strstr(d, ", curr state "))
        v->since = 22403;
    return v->errnum > 0 || v->text[0];
}

/* The only HCA the processes of `host` (of input `src` when no host)
 * listed in "NET/IB : Using", or "". */
static void only_hca(const struct ncd_explain *ex, const char *host,
                     uint32_t src, char *out, size_t osz)
{
    out[0] = '\0';
    for (size_t i = 0; i < ex->nprocs; i++) {
        const struct ncd__proc *p = &ex->procs[i];
        if (host[0] ? strcmp(p->host, host) != 0 : p->src != src)
            continue;
        for (int k = 0; k < p->nib; k++) {
            char name[32];
            snprintf(name, sizeof name, "%.*s", (int)strcspn(p->ib[k], ":/"),
                     p->ib[k]);
            if (!out[0])
                snprintf(out, osz, "%s", name);
            else if (strcmp(out, name) != 0) {
                out[0] = '\0'; /* several: the line must say which */
                return;
            }
        }
    }
}

/* The hit of one verbs failure, its texts and env from the table entry. */
static int verb_hit(struct ncd__reason *rs, size_t rule,
                    const struct ncd__rec *rec, const struct verb_err *v,
                    const struct ncd__iberr *e)
{
    struct ncd__hit *h = ncd__hit_new(rs, rule);
    if (!h)
        return NCD_ENOMEM;
    char num[16];
    snprintf(num, sizeof num, "%d", e->errnum);
    h->cat = e->cat;
    ncd__hit_var(h, "verb", v->verb);
    ncd__hit_var(h, "errname", e->name);
    ncd__hit_var(h, "errtext", e->text);
    ncd__hit_var(h, "errno", num);
    if (v->dev[0]) {
        char on[48];
        snprintf(on, sizeof on, " on %s", v->dev);
        ncd__hit_var(h, "dev", v->dev);
        ncd__hit_var(h, "on_dev", on);
    }
    const char *const texts[2][2] = {{"meaning", e->meaning},
                                     {"fix", e->fix}};
    for (int t = 0; t < 2; t++) {
        char *x = ncd__hit_expand(h, texts[t][1]);
        if (!x)
            return NCD_ENOMEM;
        ncd__hit_var(h, texts[t][0], x);
        free(x);
    }
    int nset = 0, nunset = 0;
    for (size_t i = 0; i < e->nenv; i++) {
        char key[16];
        if (!e->env_vals[i]) {
            snprintf(key, sizeof key, "unset%d", ++nunset);
            ncd__hit_var(h, key, e->env_names[i]);
            continue;
        }
        char *x = ncd__hit_expand(h, e->env_vals[i]);
        if (!x)
            return NCD_ENOMEM;
        if (!strchr(x, '{')) { /* a value that needs an unknown HCA: none */
            snprintf(key, sizeof key, "env%d", ++nset);
            ncd__hit_var(h, key, e->env_names[i]);
            snprintf(key, sizeof key, "val%d", nset);
            ncd__hit_var(h, key, x);
        }
        free(x);
    }
    ncd__hit_ev_rec(rs->ex, h, rec);
    ncd__hit_from_rec(h, rec);
    return 1;
}

/* Verbs failures claimed by the rule's `absorbs`: their errno looked up
 * per verb in data/ib-verbs-errors.yaml; one finding per verb and errno. */
int ncd__cond_ib_verb_errno(struct ncd__reason *rs, size_t rule)
{
    const struct ncd_explain *ex = rs->ex;
    const struct ncd__rule *r = &ex->rules->v[rule];
    int found = 0;
    char seen[8][64];
    int nseen = 0;
    for (size_t a = 0; a < r->nabsorbs; a++) {
        const struct ncd__rec *rec = ncd__rec_of(ex, r->absorbs[a]);
        struct verb_err v;
        if (!rec || !parse_verb_err(rec->ev[0].text, &v))
            continue;
        int rc;
        const struct ncd__iberr_table *t = ncd__reason_iberr(rs, &rc);
        if (!t)
            return rc;
        int version = ncd__rec_version(ex, rec);
        if (!v.dev[0])
            only_hca(ex, rec->ev[0].host, rec->ev[0].src, v.dev, sizeof v.dev);
        const struct ncd__iberr *e = ncd__iberr_find(
            t, v.verb, v.errnum, v.text, version ? version : v.since, v.dev);
        if (!e)
            continue;
        char key[64];
        snprintf(key, sizeof key, "%s/%d", v.verb, e->errnum);
        int dup = 0;
        for (int k = 0; k < nseen && !dup; k++)
            dup = strcmp(seen[k], key) == 0;
        if (dup || nseen == 8)
            continue;
        snprintf(seen[nseen++], sizeof seen[0], "%s", key);
        if ((rc = verb_hit(rs, rule, rec, &v, e)) < 0)
            return rc;
        found++;
    }
    return found;
}
