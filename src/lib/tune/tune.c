/* SPDX-License-Identifier: MIT */
/* tune: candidate environments, statistics, findings (see tune.h). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncd/error.h"
#include "ncd/nccl.h"
#include "ncd/perf.h"
#include "ncd/plot.h"
#include "ncd/report.h"
#include "ncd/tune.h"

int ncd_tune_families_parse(const char *s)
{
    int mask = 0;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", s ? s : "");
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (!strcmp(t, "ifname"))
            mask |= NCD_TUNE_IFNAME;
        else if (!strcmp(t, "ib"))
            mask |= NCD_TUNE_IB;
        else if (!strcmp(t, "shm"))
            mask |= NCD_TUNE_SHM;
        else if (!strcmp(t, "sockets"))
            mask |= NCD_TUNE_SOCKETS;
        else if (!strcmp(t, "all"))
            mask |= NCD_TUNE_ALL;
        else
            return NCD_EPARSE;
    }
    return mask ? mask : NCD_EPARSE;
}

static struct ncd_tune_cand *add_cand(struct ncd_tune_set *s)
{
    if (s->n >= NCD_TUNE_MAX_CANDS)
        return NULL;
    struct ncd_tune_cand *c = &s->c[s->n++];
    memset(c, 0, sizeof *c);
    return c;
}

static int add_var(struct ncd_tune_cand *c, const char *name,
                   const char *value)
{
    if (c->nvars >= NCD_TUNE_MAX_VARS)
        return NCD_ERANGE;
    struct ncd_tune_var *v = &c->vars[c->nvars++];
    snprintf(v->name, sizeof v->name, "%s", name);
    if (value)
        snprintf(v->value, sizeof v->value, "%s", value);
    else
        v->unset = 1;
    return 0;
}

void ncd_tune_cand_str(const struct ncd_tune_cand *c, struct ncd_strbuf *out)
{
    if (c->baseline || c->nvars == 0) {
        ncd_sb_puts(out, "(current)");
        return;
    }
    for (int i = 0; i < c->nvars; i++) {
        if (i)
            ncd_sb_putc(out, ' ');
        if (c->vars[i].unset)
            ncd_sb_printf(out, "-%s", c->vars[i].name);
        else
            ncd_sb_printf(out, "%s=%s", c->vars[i].name, c->vars[i].value);
    }
}

static void set_label(struct ncd_tune_cand *c)
{
    struct ncd_strbuf sb = {0};
    ncd_tune_cand_str(c, &sb);
    snprintf(c->label, sizeof c->label, "%s", ncd_sb_str(&sb));
    ncd_sb_release(&sb);
}

static int same_as_env(struct ncd_ctx *ctx, const char *name,
                       const char *value)
{
    const char *cur = ncd_getenv(ctx, name);
    return cur && value && !strcmp(cur, value);
}

static int in_common(const char *common, const char *name)
{
    if (!common)
        return 1;
    for (const char *p = common; *p; p += strlen(p) + 1)
        if (!strcmp(p, name))
            return 1;
    return 0;
}

int ncd_tune_default_set(struct ncd_ctx *ctx, const struct ncd_netif_list *nl,
                         const struct ncd_recommendation *rec, int families,
                         int local_only, const char *common,
                         struct ncd_tune_set *out)
{
    (void)nl;
    memset(out, 0, sizeof *out);
    struct ncd_tune_cand *c = add_cand(out);
    c->baseline = 1;
    snprintf(c->label, sizeof c->label, "(current)");
    int full = 0;
    if (families & NCD_TUNE_IFNAME) {
        /* best first, as ranked by nccl-doctor; container/VM plumbing
         * (docker0, virbr0, veth...) only when nothing else is usable */
        int real = 0;
        for (size_t i = 0; rec && i < rec->n; i++)
            if (rec->ranks[i].usable &&
                !ncd_ifname_is_plumbing(rec->ranks[i].ni->name) &&
                in_common(common, rec->ranks[i].ni->name))
                real = 1;
        for (size_t i = 0; rec && i < rec->n; i++) {
            const struct ncd_if_rank *r = &rec->ranks[i];
            const char *name = r->ni->name;
            int lo = r->ni->kind == NCD_IFK_LOOPBACK;
            if (lo ? !local_only
                   : (!r->usable || (real && ncd_ifname_is_plumbing(name))))
                continue;
            if (!in_common(common, name))
                continue;
            char val[NCD_IFNAME_MAX + 8];
            snprintf(val, sizeof val, "=%s", name);
            if (same_as_env(ctx, "NCCL_SOCKET_IFNAME", val) ||
                same_as_env(ctx, "NCCL_SOCKET_IFNAME", name))
                continue;
            if (!(c = add_cand(out))) {
                full = 1;
                break;
            }
            add_var(c, "NCCL_SOCKET_IFNAME", val);
            set_label(c);
        }
    }
    if ((families & NCD_TUNE_IB) && rec && rec->rdma_devices > 0) {
        static const char *v[] = {"0", "1"};
        for (int i = 0; i < 2; i++) {
            if (same_as_env(ctx, "NCCL_IB_DISABLE", v[i]) ||
                (i == 0 && !ncd_getenv(ctx, "NCCL_IB_DISABLE")))
                continue;
            if (!(c = add_cand(out))) {
                full = 1;
                break;
            }
            add_var(c, "NCCL_IB_DISABLE", v[i]);
            set_label(c);
        }
    }
    if ((families & NCD_TUNE_SHM) && local_only &&
        !same_as_env(ctx, "NCCL_SHM_DISABLE", "1")) {
        if ((c = add_cand(out))) {
            add_var(c, "NCCL_SHM_DISABLE", "1");
            set_label(c);
        } else {
            full = 1;
        }
    }
    if (families & NCD_TUNE_SOCKETS) {
        static const char *tn[] = {"2", "4"}, *ns[] = {"2", "4"};
        for (int i = 0; i < 2; i++) {
            if (same_as_env(ctx, "NCCL_SOCKET_NTHREADS", tn[i]) &&
                same_as_env(ctx, "NCCL_NSOCKS_PERTHREAD", ns[i]))
                continue;
            if (!(c = add_cand(out))) {
                full = 1;
                break;
            }
            add_var(c, "NCCL_SOCKET_NTHREADS", tn[i]);
            add_var(c, "NCCL_NSOCKS_PERTHREAD", ns[i]);
            set_label(c);
        }
    }
    return full ? NCD_ERANGE : 0;
}

/* Next token of a candidates line: NAME=VALUE (VALUE may be quoted) or
 * -NAME.  Returns 1 with the token, 0 at the end, <0 on a bad token. */
static int next_token(const char **pp, char *name, size_t nlen, char *value,
                      size_t vlen, int *unset)
{
    const char *p = *pp;
    while (*p == ' ' || *p == '\t')
        p++;
    if (!*p || *p == '#')
        return 0;
    *unset = 0;
    if (*p == '-') {
        *unset = 1;
        p++;
    }
    size_t n = 0;
    while (*p && (isalnum((unsigned char)*p) || *p == '_')) {
        if (n + 1 >= nlen)
            return -2; /* too long: refused, not cut */
        name[n++] = *p;
        p++;
    }
    name[n] = 0;
    if (!n)
        return -1;
    value[0] = 0;
    if (*unset) {
        if (*p && *p != ' ' && *p != '\t')
            return -1;
        *pp = p;
        return 1;
    }
    if (*p != '=')
        return -1;
    p++;
    size_t v = 0;
    if (*p == '\'' || *p == '"') {
        char q = *p++;
        while (*p && *p != q) {
            if (v + 1 >= vlen)
                return -2;
            value[v++] = *p;
            p++;
        }
        if (*p != q)
            return -1;
        p++;
    } else {
        while (*p && *p != ' ' && *p != '\t') {
            if (v + 1 >= vlen)
                return -2;
            value[v++] = *p;
            p++;
        }
    }
    value[v] = 0;
    *pp = p;
    return 1;
}

int ncd_tune_parse_file(struct ncd_ctx *ctx, const char *buf, size_t len,
                        struct ncd_tune_set *out)
{
    memset(out, 0, sizeof *out);
    struct ncd_tune_cand *base = add_cand(out);
    base->baseline = 1;
    snprintf(base->label, sizeof base->label, "(current)");
    if (memchr(buf, '\0', len)) {
        int l = 1;
        for (const char *q = buf; *q; q++)
            l += *q == '\n';
        return ncd_fail(ctx, NCD_EPARSE, "line %d: NUL byte", l);
    }
    char *line = malloc(len + 1);
    if (!line)
        return ncd_fail(ctx, NCD_ENOMEM, "out of memory");
    size_t i = 0;
    int lineno = 0, rc = 0;
    while (i < len && !rc) {
        size_t e = i;
        while (e < len && buf[e] != '\n')
            e++;
        lineno++;
        size_t l = e - i;
        memcpy(line, buf + i, l);
        line[l] = 0;
        if (l && line[l - 1] == '\r')
            line[l - 1] = 0;
        i = e + 1;
        const char *p = line;
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p || *p == '#')
            continue;
        const char *label = NULL;
        size_t ll = 0;
        const char *colon = strchr(p, ':');
        const char *eq = strchr(p, '=');
        if (colon && (!eq || colon < eq)) {
            ll = (size_t)(colon - p);
            while (ll && (p[ll - 1] == ' ' || p[ll - 1] == '\t'))
                ll--;
            if (ll > NCD_TUNE_LABEL_MAX) {
                rc = ncd_fail(ctx, NCD_ERANGE,
                              "line %d: a label of %zu characters (at most "
                              "%d)",
                              lineno, ll, NCD_TUNE_LABEL_MAX);
                break;
            }
            label = p;
            p = colon + 1;
        }
        struct ncd_tune_cand *c = add_cand(out);
        if (!c) {
            rc = ncd_fail(ctx, NCD_ERANGE, "line %d: more than %d candidates",
                          lineno, NCD_TUNE_MAX_CANDS - 1);
            break;
        }
        char name[NCD_TUNE_NAME_MAX + 1], value[NCD_TUNE_VALUE_MAX + 1];
        int unset, r;
        while ((r = next_token(&p, name, sizeof name, value, sizeof value,
                               &unset)) > 0)
            if (add_var(c, name, unset ? NULL : value)) {
                rc = ncd_fail(ctx, NCD_ERANGE,
                              "line %d: more than %d variables", lineno,
                              NCD_TUNE_MAX_VARS);
                break;
            }
        if (rc)
            break;
        if (r == -2)
            rc = ncd_fail(ctx, NCD_ERANGE,
                          "line %d: a name longer than %d or a value longer "
                          "than %d characters near '%.40s'",
                          lineno, NCD_TUNE_NAME_MAX, NCD_TUNE_VALUE_MAX, p);
        else if (r < 0)
            rc = ncd_fail(ctx, NCD_EPARSE,
                          "line %d: expected NAME=VALUE or -NAME near "
                          "'%.40s'",
                          lineno, p);
        else if (!c->nvars)
            rc = ncd_fail(ctx, NCD_EPARSE,
                          "line %d: a candidate needs at least one "
                          "NAME=VALUE",
                          lineno);
        else if (label && ll) {
            memcpy(c->label, label, ll);
            c->label[ll] = 0;
        } else {
            set_label(c);
        }
    }
    free(line);
    if (!rc && out->n < 2)
        rc = ncd_fail(ctx, NCD_EPARSE, "no candidate in the file");
    return rc;
}

/* ---- what the runs measure, and what cannot matter -------------------- */

void ncd_tune_scope_text(const struct ncd_tune_scope *sc,
                         struct ncd_strbuf *out)
{
    if (sc->backend == NCD_PERF_BACKEND_SOCKET && sc->one_host)
        ncd_sb_puts(out,
                    "Measured: TCP between the ranks on this host (perf "
                    "--backend socket, host buffers, over loopback). It "
                    "compares the socket-transport settings NCCL shares with "
                    "it on this machine, not NCCL's GPU path (NVLink/P2P, "
                    "SHM, InfiniBand between GPUs).");
    else if (sc->backend == NCD_PERF_BACKEND_SOCKET)
        ncd_sb_puts(out,
                    "Measured: TCP between the hosts (perf --backend socket, "
                    "host buffers). It compares the socket-transport "
                    "settings NCCL shares with it (interfaces, threads, "
                    "sockets), not NCCL's GPU path (NVLink/P2P, SHM, "
                    "InfiniBand, GPUDirect RDMA).");
    else if (sc->one_host)
        ncd_sb_puts(out,
                    "Measured: NCCL on the GPUs of this host (perf --backend "
                    "nccl). NCCL joins them by P2P/SHM, so network settings "
                    "cannot change the result here.");
    else
        ncd_sb_puts(out, "Measured: NCCL between the GPUs of every host "
                         "(perf --backend nccl).");
}

static int prefixed(const char *name, const char *prefix)
{
    return !strncmp(name, prefix, strlen(prefix));
}

/* Whether a value of NCCL_SOCKET_IFNAME selects one of `names`. */
static int selects_some(const char *value, const char *names)
{
    struct ncd_nccl_iflist l;
    ncd_nccl_iflist_parse(value, 16, &l);
    for (const char *p = names; *p; p += strlen(p) + 1)
        if (!l.set || ncd_nccl_iflist_match(&l, p, -1))
            return 1;
    return 0;
}

/* "1" as NCCL reads a boolean parameter (non-zero integer). */
static int truthy(const char *v)
{
    return v && atoi(v) != 0;
}

/* The value a candidate gives `name`, else the environment's. */
static const char *value_in(struct ncd_ctx *ctx, const struct ncd_tune_cand *c,
                            const char *name)
{
    for (int i = 0; i < c->nvars; i++)
        if (!strcmp(c->vars[i].name, name))
            return c->vars[i].unset ? NULL : c->vars[i].value;
    return ncd_getenv(ctx, name);
}

/* Why setting v cannot change the measurement, or NULL when it can. */
static const char *cannot_matter(struct ncd_ctx *ctx,
                                 const struct ncd_tune_cand *c,
                                 const struct ncd_tune_var *v,
                                 const struct ncd_tune_scope *sc,
                                 const char *names)
{
    const char *n = v->name;
    if (sc->one_host && !strcmp(n, "NCCL_SOCKET_IFNAME") && names &&
        (v->unset || selects_some(v->value, names)))
        return "on one host every rank is local: connections to any "
               "interface's address are routed through loopback, so "
               "NCCL_SOCKET_IFNAME cannot change the result (compare "
               "interfaces with tune across hosts)";
    if (sc->backend == NCD_PERF_BACKEND_SOCKET) {
        static const char *const reads[] = {
            "NCCL_SOCKET_IFNAME", "NCCL_SOCKET_FAMILY", "NCCL_COMM_ID",
            "NCCL_SOCKET_NTHREADS", "NCCL_NSOCKS_PERTHREAD"};
        if (!prefixed(n, "NCCL_") || prefixed(n, "NCCL_TESTS_"))
            return NULL;
        for (size_t i = 0; i < sizeof reads / sizeof reads[0]; i++)
            if (!strcmp(n, reads[i]))
                return NULL;
        if (prefixed(n, "NCCL_SHM_"))
            return "the socket backend does not use NCCL's shared-memory "
                   "transport (NCCL_SHM_*)";
        if (prefixed(n, "NCCL_IB_") || prefixed(n, "NCCL_NET_GDR"))
            return "the socket backend does not use InfiniBand/RoCE "
                   "(NCCL_IB_*, NCCL_NET_GDR_*)";
        return "the socket backend reads only NCCL_SOCKET_IFNAME, "
               "NCCL_SOCKET_FAMILY, NCCL_COMM_ID, NCCL_SOCKET_NTHREADS and "
               "NCCL_NSOCKS_PERTHREAD; other NCCL_* settings act inside "
               "NCCL";
    }
    if (sc->backend == NCD_PERF_BACKEND_NCCL && sc->one_host &&
        (prefixed(n, "NCCL_IB_") || prefixed(n, "NCCL_NET_") ||
         !strcmp(n, "NCCL_SOCKET_NTHREADS") ||
         !strcmp(n, "NCCL_NSOCKS_PERTHREAD")) &&
        !(truthy(value_in(ctx, c, "NCCL_P2P_DISABLE")) &&
          truthy(value_in(ctx, c, "NCCL_SHM_DISABLE"))))
        return "on one host NCCL joins the GPUs by P2P/SHM, not the "
               "network, so network settings cannot change the result";
    return NULL;
}

int ncd_tune_mark_skips(struct ncd_ctx *ctx, struct ncd_tune_set *set,
                        const struct ncd_tune_scope *sc, const char *names)
{
    int n = 0;
    for (int i = 0; i < set->n; i++) {
        struct ncd_tune_cand *c = &set->c[i];
        c->skip[0] = '\0';
        if (c->baseline || c->nvars == 0)
            continue;
        const char *why = NULL;
        for (int k = 0; k < c->nvars; k++) {
            const char *w = cannot_matter(ctx, c, &c->vars[k], sc, names);
            if (!w) {
                why = NULL;
                break;
            }
            if (!why)
                why = w;
        }
        if (why) {
            snprintf(c->skip, sizeof c->skip, "%s", why);
            n++;
        }
    }
    return n;
}

void ncd_tune_keep_command(const struct ncd_tune_cand *c,
                           struct ncd_strbuf *out)
{
    ncd_sb_puts(out, "nccl-doctor env --write ~/.bashrc");
    for (int i = 0; i < c->nvars; i++) {
        const struct ncd_tune_var *v = &c->vars[i];
        if (v->unset) {
            ncd_sb_printf(out, " --unset %s", v->name);
            continue;
        }
        struct ncd_strbuf kv = {0};
        ncd_sb_printf(&kv, "%s=%s", v->name, v->value);
        ncd_sb_puts(out, " --set ");
        ncd_sb_shell_quote(out, ncd_sb_str(&kv));
        ncd_sb_release(&kv);
    }
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void stat_of(const struct ncd_tune_runs *r, struct ncd_tune_stat *s)
{
    memset(s, 0, sizeof *s);
    if (r->n <= 0)
        return;
    double v[NCD_TUNE_MAX_RUNS];
    int n = r->n < NCD_TUNE_MAX_RUNS ? r->n : NCD_TUNE_MAX_RUNS;
    memcpy(v, r->busbw, sizeof(double) * (size_t)n);
    qsort(v, (size_t)n, sizeof v[0], cmp_d);
    s->ok = 1;
    s->min = v[0];
    s->max = v[n - 1];
    s->median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    s->spread = n > 1 && s->median > 0 ? (s->max - s->min) / s->median : 0;
}

/* Median of the values >= 0 among v[0..n); -1 when none. */
static double median_of(double *v, int n)
{
    int m = 0;
    for (int i = 0; i < n; i++)
        if (v[i] >= 0)
            v[m++] = v[i];
    if (!m)
        return -1;
    qsort(v, (size_t)m, sizeof v[0], cmp_d);
    return m % 2 ? v[m / 2] : (v[m / 2 - 1] + v[m / 2]) / 2;
}

int ncd_tune_plot(const struct ncd_tune_set *set,
                  const struct ncd_tune_runs *runs, int winner,
                  struct ncd_plot *p)
{
    snprintf(p->title, sizeof p->title,
             "tune: busbw against size, median of each candidate's runs");
    for (int i = 0; i < set->n; i++) {
        const struct ncd_tune_runs *r = &runs[i];
        if (!r->n || !r->npts)
            continue;
        /* a legend entry holds less than a label (NCD_TUNE_LABEL_MAX): a
         * longer one is shortened and numbered, so that series stay apart */
        char label[sizeof p->s[0].label];
        char tail[64];
        snprintf(tail, sizeof tail, "%s (%d run%s)",
                 i == winner ? " (winner)" : "", r->n, r->n == 1 ? "" : "s");
        size_t ll = strlen(set->c[i].label);
        if (ll + strlen(tail) < sizeof label)
            snprintf(label, sizeof label, "%s%s", set->c[i].label, tail);
        else
            snprintf(label, sizeof label, "%.*s... [candidate %d]%s",
                     (int)(sizeof label - strlen(tail) - 40), set->c[i].label,
                     i + 1, tail);
        int color = ncd_plot_next_color(p);
        int k = ncd_plot_add(p, label, color, 0, 0, -1); /* even if empty */
        if (k < 0)
            return k;
        for (int pt = 0; pt < r->npts; pt++) {
            double v[NCD_TUNE_MAX_RUNS];
            int n = r->n < NCD_TUNE_MAX_RUNS ? r->n : NCD_TUNE_MAX_RUNS;
            for (int run = 0; run < n; run++)
                v[run] = r->curve[run][pt];
            double med = median_of(v, n);
            if (med >= 0 &&
                (k = ncd_plot_add(p, label, color, 0, r->size[pt], med)) < 0)
                return k;
        }
    }
    return 0;
}

int ncd_tune_summarize(const struct ncd_tune_set *set,
                       const struct ncd_tune_runs *runs, int interrupted,
                       struct ncd_tune_stat *stats, struct ncd_findings *out)
{
    int base = 0;
    for (int i = 0; i < set->n; i++)
        if (set->c[i].baseline)
            base = i;
    for (int i = 0; i < set->n; i++)
        stat_of(&runs[i], &stats[i]);
    const struct ncd_tune_stat *b = &stats[base];
    for (int i = 0; i < set->n; i++) {
        struct ncd_tune_stat *s = &stats[i];
        if (!s->ok || !b->ok || b->median <= 0)
            continue;
        s->ratio = s->median / b->median;
        s->within_noise = !(s->min > b->max || s->max < b->min);
    }
    int win = -1;
    for (int i = 0; i < set->n; i++) {
        const struct ncd_tune_stat *s = &stats[i];
        if (interrupted || i == base || set->c[i].skip[0] || !s->ok ||
            !b->ok ||
            s->within_noise ||
            s->min <= b->max)
            continue;
        if (win < 0 || s->median > stats[win].median)
            win = i;
    }
    for (int i = 0; i < set->n; i++) {
        if (runs[i].failed == 0)
            continue;
        struct ncd_finding *f = ncd_findings_add(
            out, "perf.config.candidate-failed", NCD_CAT_PERF_CONFIG,
            i == base ? NCD_SEV_ERROR : NCD_SEV_WARNING,
            "%s: %d of %d runs failed", set->c[i].label, runs[i].failed,
            runs[i].failed + runs[i].n);
        if (!f)
            return win;
        ncd_finding_evidence(f, "%s", runs[i].error);
        ncd_finding_cause(f, i == base
                                 ? "The benchmark fails with the current "
                                   "settings: fix that first (nccl-doctor "
                                   "check / probe)."
                                 : "These settings make the benchmark fail "
                                   "(an interface that does not reach the "
                                   "other hosts, a value NCCL rejects).");
    }
    if (interrupted) {
        int done = 0;
        for (int i = 0; i < set->n; i++)
            done += runs[i].n + runs[i].failed;
        struct ncd_finding *f = ncd_findings_add(
            out, "perf.config.tune-interrupted", NCD_CAT_PERF_CONFIG,
            NCD_SEV_INFO, "Interrupted after %d run%s: no settings chosen",
            done, done == 1 ? "" : "s");
        if (f)
            ncd_finding_cause(f, "tune was stopped by a signal; the run it "
                                 "stopped counts against no candidate.");
    } else if (win >= 0) {
        const struct ncd_tune_stat *s = &stats[win];
        struct ncd_finding *f = ncd_findings_add(
            out, "perf.config.tuned", NCD_CAT_PERF_CONFIG, NCD_SEV_WARNING,
            "%s is %.2fx faster than the current settings",
            set->c[win].label, s->ratio);
        if (!f)
            return win;
        ncd_finding_evidence(f, "%s: median %.4g GB/s (%.4g-%.4g, %d run%s)",
                             set->c[win].label, s->median, s->min, s->max,
                             runs[win].n, runs[win].n == 1 ? "" : "s");
        ncd_finding_evidence(f, "current: median %.4g GB/s (%.4g-%.4g, %d "
                                "run%s)",
                             b->median, b->min, b->max, runs[base].n,
                             runs[base].n == 1 ? "" : "s");
        ncd_finding_cause(f, "Measured, not predicted: every run with "
                             "these settings was faster than every run "
                             "with the current ones.");
        ncd_finding_fix(f, "Use these settings for the job (nccl-doctor env "
                           "--write, the launcher's environment).");
        for (int i = 0; i < set->c[win].nvars; i++) {
            const struct ncd_tune_var *v = &set->c[win].vars[i];
            ncd_finding_env(f, v->name, v->unset ? NULL : v->value);
        }
    } else if (b->ok) {
        struct ncd_finding *f = ncd_findings_add(
            out, "perf.config.tuned", NCD_CAT_PERF_CONFIG, NCD_SEV_OK,
            "No candidate beats the current settings beyond the noise");
        if (f)
            ncd_finding_evidence(f, "current: median %.4g GB/s (%.4g-%.4g)",
                                 b->median, b->min, b->max);
    }
    ncd_findings_sort(out);
    return win;
}

json_t *ncd_tune_json(const struct ncd_tune_set *set,
                      const struct ncd_tune_runs *runs,
                      const struct ncd_tune_stat *stats, int winner)
{
    json_t *o = json_object(), *a = json_array();
    if (!o || !a) {
        json_decref(o);
        json_decref(a);
        return NULL;
    }
    for (int i = 0; i < set->n; i++) {
        const struct ncd_tune_cand *c = &set->c[i];
        const struct ncd_tune_stat *s = &stats[i];
        json_t *x = json_object(), *env = json_object(), *rr = json_array();
        for (int k = 0; k < c->nvars; k++)
            json_object_set_new(env, c->vars[k].name,
                                c->vars[k].unset
                                    ? json_null()
                                    : json_string(c->vars[k].value));
        for (int k = 0; k < runs[i].n; k++)
            json_array_append_new(rr, json_real(runs[i].busbw[k]));
        json_object_set_new(x, "label", json_string(c->label));
        json_object_set_new(x, "baseline", json_boolean(c->baseline));
        json_object_set_new(x, "env", env);
        json_object_set_new(x, "runs", rr);
        json_object_set_new(x, "failed", json_integer(runs[i].failed));
        json_object_set_new(x, "error", runs[i].error[0]
                                            ? json_string(runs[i].error)
                                            : json_null());
        json_object_set_new(x, "skipped", c->skip[0] ? json_string(c->skip)
                                                     : json_null());
        if (!c->baseline) {
            struct ncd_strbuf kc = {0};
            ncd_tune_keep_command(c, &kc);
            json_object_set_new(x, "keep_command",
                                json_string(ncd_sb_str(&kc)));
            ncd_sb_release(&kc);
        }
        if (s->ok) {
            json_object_set_new(x, "median", json_real(s->median));
            json_object_set_new(x, "min", json_real(s->min));
            json_object_set_new(x, "max", json_real(s->max));
            json_object_set_new(x, "spread", json_real(s->spread));
            json_object_set_new(x, "ratio", s->ratio > 0
                                                ? json_real(s->ratio)
                                                : json_null());
            json_object_set_new(x, "within_noise",
                                json_boolean(s->within_noise));
        }
        json_array_append_new(a, x);
    }
    json_object_set_new(o, "candidates", a);
    json_object_set_new(o, "winner", winner >= 0
                                         ? json_string(set->c[winner].label)
                                         : json_null());
    json_t *keep = json_null();
    if (winner >= 0) {
        struct ncd_strbuf sb = {0};
        ncd_tune_keep_command(&set->c[winner], &sb);
        keep = json_string(ncd_sb_str(&sb));
        ncd_sb_release(&sb);
    }
    json_object_set_new(o, "keep_command", keep);
    return o;
}

/* Label column: as wide as the longest label, at most this. */
#define LABEL_COL_MAX 60

void ncd_tune_render_text(struct ncd_strbuf *out,
                          const struct ncd_tune_set *set,
                          const struct ncd_tune_runs *runs,
                          const struct ncd_tune_stat *stats, int winner,
                          const char *metric)
{
    int w = 9; /* "candidate" */
    for (int i = 0; i < set->n; i++) {
        int l = (int)strlen(set->c[i].label);
        if (l > w)
            w = l < LABEL_COL_MAX ? l : LABEL_COL_MAX;
    }
    /* distinct skip reasons, numbered in order of appearance */
    const char *notes[NCD_TUNE_MAX_CANDS];
    int nnotes = 0;
    ncd_sb_printf(out, "  %-*s %12s %9s %9s  %s\n", w, "candidate",
                  "median GB/s", "spread", "vs cur.", "");
    for (int i = 0; i < set->n; i++) {
        const struct ncd_tune_cand *c = &set->c[i];
        const struct ncd_tune_stat *s = &stats[i];
        const char *lab = c->label;
        if ((int)strlen(lab) > w) { /* whole, on its own line */
            ncd_sb_printf(out, "  %s\n", lab);
            lab = "";
        }
        if (c->skip[0]) {
            int k = 0;
            while (k < nnotes && strcmp(notes[k], c->skip))
                k++;
            if (k == nnotes)
                notes[nnotes++] = c->skip;
            ncd_sb_printf(out, "  %-*s %12s %9s %9s  skipped [%d]\n", w,
                          lab, "-", "-", "-", k + 1);
            continue;
        }
        if (!s->ok && !runs[i].failed) { /* the measuring was stopped */
            ncd_sb_printf(out, "  %-*s %12s %9s %9s  not run\n", w, lab, "-",
                          "-", "-");
            continue;
        }
        if (!s->ok) {
            ncd_sb_printf(out, "  %-*s %12s %9s %9s  %s%d run%s failed\n",
                          w, lab, "-", "-", "-",
                          runs[i].failed == 1 ? "" : "all ", runs[i].failed,
                          runs[i].failed == 1 ? "" : "s");
            continue;
        }
        const char *note = i == winner         ? "<- best"
                           : c->baseline       ? "(baseline)"
                           : s->within_noise   ? "within noise"
                           : s->ratio < 1      ? "slower"
                                               : "faster, not the best";
        ncd_sb_printf(out, "  %-*s %12.4g %8.1f%% %8.2fx  %s", w, lab,
                      s->median, s->spread * 100, s->ratio, note);
        if (runs[i].failed)
            ncd_sb_printf(out, " (%d failed)", runs[i].failed);
        ncd_sb_putc(out, '\n');
    }
    ncd_sb_printf(out, "\n  busbw = %s; spread = (max - min) / median over "
                       "the runs; \"within noise\": its range overlaps the "
                       "current settings' range.\n",
                  metric);
    for (int k = 0; k < nnotes; k++)
        ncd_sb_printf(out, "  [%d] not run: %s.\n", k + 1, notes[k]);
}
