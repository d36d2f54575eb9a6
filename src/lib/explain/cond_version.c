/* SPDX-License-Identifier: MIT */
/*
 * Conditions on processes or builds that disagree: NCCL versions, net
 * plugins, nccl-tests' headers against the library it runs with.
 */
#define _GNU_SOURCE
#include "explain/reason.h"

#include <stdio.h>
#include <string.h>

#include "ncd/error.h"

/* Processes report different NCCL versions. */
int ncd__cond_version_mismatch(struct ncd__reason *rs, size_t rule)
{
    const struct ncd_explain *ex = rs->ex;
    size_t a = SIZE_MAX;
    for (size_t i = 0; i < ex->nprocs; i++) {
        if (!ex->procs[i].vcode)
            continue;
        if (a == SIZE_MAX) {
            a = i;
            continue;
        }
        if (ex->procs[i].vcode == ex->procs[a].vcode)
            continue;
        const struct ncd__proc *p = &ex->procs[a], *q = &ex->procs[i];
        struct ncd__hit *h = ncd__hit_new(rs, rule);
        if (!h)
            return NCD_ENOMEM;
        char buf[256];
        snprintf(buf, sizeof buf, "%s on %s, %s on %s", p->version,
                 p->host[0] ? p->host : "?", q->version,
                 q->host[0] ? q->host : "?");
        ncd__hit_var(h, "versions", buf);
        ncd__hit_ev(h, "%s:%llu: %s (pid %ld): NCCL version %s",
                    ncd__src_name(ex, p->src), (unsigned long long)p->ver_line,
                    p->host, p->pid, p->version);
        ncd__hit_ev(h, "%s:%llu: %s (pid %ld): NCCL version %s",
                    ncd__src_name(ex, q->src), (unsigned long long)q->ver_line,
                    q->host, q->pid, q->version);
        h->seq = 0;
        return 1;
    }
    return 0;
}

static int builtin_net(const char *net)
{
    return strcmp(net, "IB") == 0 || strcmp(net, "Socket") == 0;
}

/* Some processes load a net plugin and others do not, or they use
 * different plugins (IB against Socket is ib-fallback's case). */
int ncd__cond_plugin_mismatch(struct ncd__reason *rs, size_t rule)
{
    const struct ncd_explain *ex = rs->ex;
    const struct ncd__proc *with = NULL, *without = NULL, *n1 = NULL,
                           *n2 = NULL;
    for (size_t i = 0; i < ex->nprocs; i++) {
        const struct ncd__proc *p = &ex->procs[i];
        if (p->plugin == 2 && !with)
            with = p;
        if (p->plugin == 1 && !without)
            without = p;
        if (!p->net[0])
            continue;
        if (!n1)
            n1 = p;
        else if (!n2 && strcmp(n1->net, p->net) != 0 &&
                 !(builtin_net(p->net) && builtin_net(n1->net)))
            n2 = p;
    }
    if (!(with && without) && !n2)
        return 0;
    struct ncd__hit *h = ncd__hit_new(rs, rule);
    if (!h)
        return NCD_ENOMEM;
    char buf[256];
    if (with && without) {
        snprintf(buf, sizeof buf, "%s loads the net plugin %s, %s finds none",
                 with->host[0] ? with->host : "one process",
                 with->plugin_name[0] ? with->plugin_name : "",
                 without->host[0] ? without->host : "another");
        ncd__hit_ev(h, "%s:%llu: %s (pid %ld): net plugin %s",
                    ncd__src_name(ex, with->src),
                    (unsigned long long)with->plugin_line, with->host,
                    with->pid,
                    with->plugin_name[0] ? with->plugin_name : "loaded");
        ncd__hit_ev(h, "%s:%llu: %s (pid %ld): no net plugin, internal network used",
                    ncd__src_name(ex, without->src),
                    (unsigned long long)without->plugin_line, without->host,
                    without->pid);
    } else {
        snprintf(buf, sizeof buf, "%s uses network %s, %s uses %s", n1->host,
                 n1->net, n2->host, n2->net);
        ncd__hit_ev(h, "%s:%llu: %s (pid %ld): Using network %s",
                    ncd__src_name(ex, n1->src),
                    (unsigned long long)n1->net_line, n1->host, n1->pid,
                    n1->net);
        ncd__hit_ev(h, "%s:%llu: %s (pid %ld): Using network %s",
                    ncd__src_name(ex, n2->src),
                    (unsigned long long)n2->net_line, n2->host, n2->pid,
                    n2->net);
    }
    ncd__hit_var(h, "detail", buf);
    h->seq = 0;
    return 1;
}

/* "X.Y.Z" from an NCCL_VERSION_CODE: M*10000+m*100+p (2.9+) or
 * M*1000+m*100+p (older). */
static void code_version(long c, char *out, size_t osz)
{
    snprintf(out, osz, "%ld.%ld.%ld", c >= 10000 ? c / 10000 : c / 1000,
             c >= 10000 ? c / 100 % 100 : c / 100 % 10, c % 100);
}

/* nccl-tests' nccl-headers= and nccl-library= differ in major.minor. */
int ncd__cond_tests_header_mismatch(struct ncd__reason *rs, size_t rule)
{
    const struct ncd_explain *ex = rs->ex;
    long a = ex->tests_hdr_code, b = ex->tests_lib_code;
    if (!a || !b || a / 100 == b / 100)
        return 0;
    struct ncd__hit *h = ncd__hit_new(rs, rule);
    if (!h)
        return NCD_ENOMEM;
    char hv[24], lv[24];
    code_version(a, hv, sizeof hv);
    code_version(b, lv, sizeof lv);
    ncd__hit_var(h, "headers", hv);
    ncd__hit_var(h, "library", lv);
    ncd__hit_ev(h, "%s:%llu: nccl-tests built with NCCL %s headers, running with libnccl %s",
                ncd__src_name(ex, ex->tests_src),
                (unsigned long long)ex->tests_line, hv, lv);
    h->seq = 0;
    return 1;
}

/* The first line of `obs` (a signature's matches) whose process also
 * matched every other signature of the bug: same process, or for lines
 * without one, the same host and input. */
static const struct ncd__evid *same_process(const struct ncd_explain *ex,
                                            const struct ncd__rec *const *sig,
                                            size_t nsig)
{
    for (size_t a = 0; a < sig[0]->nev; a++) {
        const struct ncd__evid *e0 = &sig[0]->ev[a];
        size_t ok = 1;
        for (size_t k = 1; k < nsig; k++) {
            int found = 0;
            for (size_t b = 0; b < sig[k]->nev && !found; b++) {
                const struct ncd__evid *e = &sig[k]->ev[b];
                found = e0->proc >= 0 ? e->proc == e0->proc
                                      : e->src == e0->src &&
                                            strcmp(e->host, e0->host) == 0;
            }
            ok += found;
        }
        if (ok == nsig)
            return e0;
    }
    (void)ex;
    return NULL;
}

/*
 * A known bug's signature (data/nccl-known-bugs.yaml, observer patterns of
 * this rule) in the log of a process whose logged NCCL version the bug
 * affects.  Without a logged version nothing is claimed: the point is to
 * tie the signature to the release.
 */
int ncd__cond_known_bug(struct ncd__reason *rs, size_t rule)
{
    const struct ncd_explain *ex = rs->ex;
    const struct ncd_rules *R = ex->rules;
    const struct ncd__rule *r = &R->v[rule];
    int found = 0;
    for (size_t b = 0; b < R->bugs.n; b++) {
        const struct ncd_known_bug *bug = &R->bugs.v[b];
        const struct ncd__rec *sig[8];
        size_t nsig = 0, want = 0;
        for (size_t p = r->pat0; p < r->pat0 + r->npats; p++) {
            if (R->pats[p].bug != (int)b)
                continue;
            want++;
            const struct ncd__rec *rec = &ex->obsrecs[R->pats[p].obs_slot];
            if (rec->count && nsig < 8)
                sig[nsig++] = rec;
        }
        if (!want || nsig != want)
            continue;
        const struct ncd__evid *e = same_process(ex, sig, nsig);
        if (!e)
            continue;
        /* the version of that process (its own, its host's, its input's,
         * or the job's single one) */
        struct ncd__rec one = {.nev = 1};
        one.ev[0] = *e;
        int version = ncd__rec_version(ex, &one);
        if (!ncd_known_bug_affects(bug, version))
            continue;
        struct ncd__hit *h = ncd__hit_new(rs, rule);
        if (!h)
            return NCD_ENOMEM;
        char vs[24];
        snprintf(vs, sizeof vs, "%d.%d.%d", version / 10000,
                 version / 100 % 100, version % 100);
        if (!strcmp(bug->kind, "performance"))
            h->sev = NCD_SEV_WARNING;
        ncd__hit_var(h, "version", vs);
        ncd__hit_var(h, "fixed", bug->fixed);
        ncd__hit_var(h, "summary", bug->summary);
        ncd__hit_var(h, "bug", bug->id);
        ncd__hit_var(h, "affected", bug->affected);
        ncd__hit_var(h, "bug_source", bug->source[0]);
        ncd__hit_var(h, "workaround", bug->workaround ? bug->workaround : "");
        for (size_t k = 0; k < nsig; k++)
            ncd__hit_ev_rec(ex, h, sig[k]);
        ncd__hit_from_rec(h, sig[0]);
        found++;
    }
    return found;
}

/* One nvidia-nccl-cu<N> wheel named in an environment report line. */
struct wheel {
    int cuda;
    char ver[16];
};

/* The wheel named in `text` ("[pip3] nvidia-nccl-cu12==2.27.3", "[conda]
 * nvidia-nccl-cu12  2.21.5  pypi_0  pypi", "nvidia-nccl-cu11 2.14.3");
 * 0 when none. */
static int parse_wheel(const char *text, struct wheel *w)
{
    static const char key[] = "nvidia-nccl-cu";
    const char *p = text ? strstr(text, key) : NULL;
    if (!p)
        return 0;
    p += sizeof key - 1;
    if (*p < '0' || *p > '9')
        return 0;
    w->cuda = 0;
    while (*p >= '0' && *p <= '9' && w->cuda < 1000)
        w->cuda = w->cuda * 10 + (*p++ - '0');
    while (*p == '=' || *p == ' ' || *p == '\t')
        p++;
    size_t n = 0;
    while (((*p >= '0' && *p <= '9') || *p == '.') && n + 1 < sizeof w->ver)
        w->ver[n++] = *p++;
    w->ver[n] = '\0';
    return 1;
}

/*
 * The environment report lists nvidia-nccl-cu* wheels for two or more CUDA
 * majors.  An error (the cause of that symptom) when a wrong-libnccl
 * symptom among the rule's `absorbs` matched; a warning otherwise.
 */
int ncd__cond_nccl_wheels_mixed(struct ncd__reason *rs, size_t rule)
{
    const struct ncd_explain *ex = rs->ex;
    const struct ncd__rec *rec = ncd__rec_of(ex, "pip.nccl-wheel");
    if (!rec)
        return 0;
    struct wheel seen[4];
    size_t n = 0;
    for (size_t i = 0; i < rec->nev; i++) {
        struct wheel w;
        if (!parse_wheel(rec->ev[i].text, &w))
            continue;
        size_t k = 0;
        while (k < n && seen[k].cuda != w.cuda)
            k++;
        if (k == n && n < sizeof seen / sizeof *seen)
            seen[n++] = w;
    }
    if (n < 2)
        return 0;
    struct ncd__hit *h = ncd__hit_new(rs, rule);
    if (!h)
        return NCD_ENOMEM;
    char buf[160];
    size_t len = 0;
    for (size_t k = 0; k < n && len < sizeof buf; k++)
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%snvidia-nccl-cu%d %s",
                                k ? (k + 1 == n ? " and " : ", ") : "",
                                seen[k].cuda, seen[k].ver);
    ncd__hit_var(h, "wheels", buf);
    /* a symptom of the wrong copy: the earliest absorbed match that is
     * not the wheel listing itself */
    const struct ncd__rec *sym = NULL;
    const struct ncd__rule *r = &ex->rules->v[rule];
    for (size_t a = 0; a < r->nabsorbs; a++) {
        long k = ncd__rules_find(ex->rules, r->absorbs[a]);
        if (k < 0 || !ex->recs[k].count || &ex->recs[k] == rec)
            continue;
        if (!sym || ex->recs[k].first_seq < sym->first_seq)
            sym = &ex->recs[k];
    }
    ncd__hit_ev_rec(ex, h, rec);
    if (sym) {
        h->sev = NCD_SEV_ERROR;
        ncd__hit_var(h, "symptom",
                     "Here the failure below is that symptom.");
        ncd__hit_from_rec(h, sym);
    } else {
        ncd__hit_from_rec(h, rec);
    }
    return 1;
}
