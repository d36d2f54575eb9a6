/* SPDX-License-Identifier: MIT */
/*
 * The reasoner's internals, for the condition functions (cond_<family>.c)
 * and reason.c, which dispatches to them (explain/cond.h lists them).
 *
 * A condition looks at the facts and matches of the whole input (struct
 * ncd_explain, session.h) and adds hits: one hit becomes one finding of
 * its rule, with the hit's variables filling the rule's {name} templates
 * (before the first match's named captures) and the hit's evidence lines
 * shown before the matched lines of `rec`.
 */
#ifndef NCD_EXPLAIN_REASON_H
#define NCD_EXPLAIN_REASON_H

#include "explain/cond.h"
#include "explain/session.h"
#include "ncd/ncclvars.h"

#define NCD__HIT_VARS 10

struct ncd__hit {
    size_t rule;
    const struct ncd__rec *rec; /* matched lines shown as evidence, or NULL */
    enum ncd_category cat;      /* the rule's unless a condition says */
    enum ncd_severity sev;
    enum ncd_rule_role role;
    double ts;                  /* first time stamp, < 0 none */
    uint64_t seq;               /* input order of the first line */
    char *vn[NCD__HIT_VARS], *vv[NCD__HIT_VARS];
    size_t nv;
    char *ev[NCD__MAX_EVID];
    size_t nev;
    int no_absorb; /* this hit does not explain the rule's `absorbs` */
};

struct ncd__reason {
    struct ncd_explain *ex;
    struct ncd__hit *v; /* hits so far */
    size_t n, cap;
    /* the interface to suggest for NCCL_SOCKET_IFNAME (from the facts) */
    char good_iface[96];
    /* data/nccl-vars.yaml, loaded on first use by ncd__reason_vars() */
    struct ncd_var_catalog vars;
    int vars_state; /* 0 not loaded, 1 loaded, < 0 the load's error */
};

/* One condition: adds hits for `rule`; returns their count or NCD_E*. */
typedef int (*ncd__cond_fn)(struct ncd__reason *rs, size_t rule);

#define NCD__COND_DECL(fn, name, phase)                                       \
    int ncd__cond_##fn(struct ncd__reason *rs, size_t rule);
NCD__CONDITIONS(NCD__COND_DECL)
#undef NCD__COND_DECL

/* ---- hits (reason.c) ---- */

/* A new hit of `rule` with the rule's category, severity and role, no time
 * stamp and the last input position; NULL when out of memory. */
struct ncd__hit *ncd__hit_new(struct ncd__reason *rs, size_t rule);

/* Sets template variable {n} (a copy of v; NULL gives ""); the first
 * setting of a name wins.  Dropped silently beyond NCD__HIT_VARS. */
void ncd__hit_var(struct ncd__hit *h, const char *n, const char *v);

/* Appends one evidence line (sanitised); dropped beyond NCD__MAX_EVID. */
void ncd__hit_ev(struct ncd__hit *h, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Appends the kept lines of `rec` as "<input>:<line>: <text>". */
void ncd__hit_ev_rec(const struct ncd_explain *ex, struct ncd__hit *h,
                     const struct ncd__rec *rec);

/* The hit is as old as the first line of `rec` (NULL: unchanged). */
void ncd__hit_from_rec(struct ncd__hit *h, const struct ncd__rec *rec);

/* ---- facts and matches (reason.c) ---- */

/* The value NCCL echoed for `name` ("X set by environment to V"), or NULL;
 * `which` (may be NULL) receives the echo. */
const char *ncd__env_get(const struct ncd_explain *ex, const char *name,
                         const struct ncd__env **which);

/* The matches of pattern rule `id`, or NULL when it has none. */
const struct ncd__rec *ncd__rec_of(const struct ncd_explain *ex,
                                   const char *id);

/* Named capture `name` of a rule's first match, or NULL. */
const char *ncd__rec_cap(const struct ncd__rec *rec, const char *name);

/* The earliest match of the rules `rule` absorbs, root causes before
 * framework summaries (in *first, may be NULL).  0 when none matched. */
int ncd__rec_absorbed(const struct ncd_explain *ex, size_t rule,
                      const struct ncd__rec **first);

/* "node1 pid 10 (rank 3)", "node1 pid 10", "node1" or "this log". */
void ncd__proc_where(const struct ncd__proc *p, char *out, size_t osz);

/* The variable catalog (data/nccl-vars.yaml), loaded once per finish;
 * NULL with the error in *rc when it cannot be loaded. */
const struct ncd_var_catalog *ncd__reason_vars(struct ncd__reason *rs,
                                               int *rc);

/* ---- addresses and interface names (reason.c) ---- */

int ncd__addr_linklocal(const char *addr);
int ncd__addr_loopback(const char *ifname, const char *addr);

/*
 * 1 for an interface that is almost never the way to other hosts (bridges,
 * veth, overlay and VPN tunnels: docker0, cni0, flannel.1, tailscale0...).
 * The one place explain classifies interface names.
 */
int ncd__ifname_virtual(const char *ifname);

/* The interface the logs suggest for NCCL_SOCKET_IFNAME (routable address,
 * physical-looking name), or a placeholder in angle brackets. */
void ncd__good_iface(const struct ncd_explain *ex, char *out, size_t osz);

#endif
