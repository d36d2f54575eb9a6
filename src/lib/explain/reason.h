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
    const struct ncd__rec *from; /* the lines it dates from (ranking), or NULL */
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
    int derived;   /* from a condition (ranks first at the same moment) */
    uint64_t explains_seq; /* first line of the failure it explains, or 0 */
};

/* One entry of data/ib-verbs-errors.yaml (iberrno.c). */
struct ncd__iberr {
    char **verbs; /* "ibv_modify_qp", or "*" */
    size_t nverbs;
    int errnum;
    char *name, *text, *meaning, *fix, *source;
    enum ncd_category cat;
    char **env_names, **env_vals; /* value NULL: unset */
    size_t nenv;
    int vmin, vmax; /* `nccl_versions` as codes; 0 open */
    char **hcas; /* `hcas`: HCA name prefixes the entry is limited to */
    size_t nhcas; /* 0: any HCA */
};

struct ncd__iberr_table {
    struct ncd__iberr *v;
    size_t n;
};

/* Loads the table from YAML text; 0, NCD_EPARSE (detail "file:line:col:
 * ...") or NCD_ENOMEM.  `out` is empty after an error. */
int ncd__iberr_load(struct ncd_ctx *ctx, const char *name, const char *buf,
                    size_t len, struct ncd__iberr_table *out);
/* The table compiled into the library. */
int ncd__iberr_builtin(struct ncd_ctx *ctx, struct ncd__iberr_table *out);
void ncd__iberr_release(struct ncd__iberr_table *t);
/* The entry for `verb` and errno `errnum` (> 0), else for its strerror
 * text, whose versions hold `version` (0 unknown: any) and whose `hcas`
 * (if any) has a prefix of `dev` (the HCA name, "" or NULL unknown: such
 * entries are skipped); the first in file order, "*" entries last by
 * convention. */
const struct ncd__iberr *ncd__iberr_find(const struct ncd__iberr_table *t,
                                         const char *verb, int errnum,
                                         const char *text, int version,
                                         const char *dev);

struct ncd__reason {
    struct ncd_explain *ex;
    struct ncd__hit *v; /* hits so far */
    size_t n, cap;
    /* the interface to suggest for NCCL_SOCKET_IFNAME (from the facts) */
    char good_iface[96];
    /* data/nccl-vars.yaml, loaded on first use by ncd__reason_vars() */
    struct ncd_var_catalog vars;
    int vars_state; /* 0 not loaded, 1 loaded, < 0 the load's error */
    /* data/ib-verbs-errors.yaml, loaded on first use */
    struct ncd__iberr_table iberr;
    int iberr_state;
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

/* ncd__hit_new() about process `p`: {host} is its host, and where[0, wsz)
 * receives ncd__proc_where(p); NULL when out of memory. */
struct ncd__hit *ncd__hit_proc(struct ncd__reason *rs, size_t rule,
                               const struct ncd__proc *p, char *where,
                               size_t wsz);

/* Sets template variable {n} (a copy of v; NULL gives ""); the first
 * setting of a name wins.  Dropped silently beyond NCD__HIT_VARS. */
void ncd__hit_var(struct ncd__hit *h, const char *n, const char *v);

/* Appends one evidence line (sanitised); dropped beyond NCD__MAX_EVID. */
void ncd__hit_ev(struct ncd__hit *h, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Appends the kept lines of `rec` as "<input>:<line>: <text>". */
void ncd__hit_ev_rec(const struct ncd_explain *ex, struct ncd__hit *h,
                     const struct ncd__rec *rec);

/* The hit is as old as the first line of `rec`, and ranks by its rank
 * (NULL: unchanged). */
void ncd__hit_from_rec(struct ncd__hit *h, const struct ncd__rec *rec);

/* ---- facts and matches (reason.c) ---- */

/* The value NCCL echoed for `name` ("X set by environment to V"), or NULL;
 * `which` (may be NULL) receives the echo. */
const char *ncd__env_get(const struct ncd_explain *ex, const char *name,
                         const struct ncd__env **which);

/* The matches of pattern rule `id`, or NULL when it has none. */
const struct ncd__rec *ncd__rec_of(const struct ncd_explain *ex,
                                   const char *id);

/* The NCCL version (code) of the process of rec's first line: its own,
 * else one logged on its host or in its input, else the job's when every
 * process logged the same; 0 when unknown (rec may be NULL). */
int ncd__rec_version(const struct ncd_explain *ex, const struct ncd__rec *rec);

/* Named capture `name` of a rule's first match, or NULL. */
const char *ncd__rec_cap(const struct ncd__rec *rec, const char *name);

/* The earliest match of the rules `rule` absorbs, root causes before
 * framework summaries (in *first, may be NULL).  0 when none matched. */
int ncd__rec_absorbed(const struct ncd_explain *ex, size_t rule,
                      const struct ncd__rec **first);

/* 1 when one of derived rule `rule`'s patterns matches the fact string s
 * (a variable "NAME=VALUE", a GPU name); 0 when none does or it has none;
 * NCD_ENOMEM. */
int ncd__rule_fact_match(const struct ncd_explain *ex, size_t rule,
                         const char *s);

/* The WARN lines of the first NCCL source file (in input order) that the
 * rule's `files:` name, or NULL. */
const struct ncd__rec *ncd__rule_warns(const struct ncd_explain *ex,
                                       size_t rule);

/* "node1 pid 10 (rank 3)", "node1 pid 10", "node1" or "this log". */
void ncd__proc_where(const struct ncd__proc *p, char *out, size_t osz);

/* The variable catalog (data/nccl-vars.yaml), loaded once per finish;
 * NULL with the error in *rc when it cannot be loaded. */
const struct ncd_var_catalog *ncd__reason_vars(struct ncd__reason *rs,
                                               int *rc);

/* 0 when the variable catalog says NCCL release `version` (a code) does
 * not read `name` (its "since" is later, or it was removed); 1 otherwise,
 * also when the version or the variable is unknown. */
int ncd__var_in_release(struct ncd__reason *rs, const char *name,
                        int version);

/* The IB verbs errno table, loaded once per finish; NULL with the error
 * in *rc when it cannot be loaded. */
const struct ncd__iberr_table *ncd__reason_iberr(struct ncd__reason *rs,
                                                 int *rc);

/* Template `tpl` with the hit's variables filled ({name|default} as in
 * rules); malloc'ed, NULL when out of memory. */
char *ncd__hit_expand(const struct ncd__hit *h, const char *tpl);

/* ---- addresses and interface names (reason.c) ---- */

int ncd__addr_linklocal(const char *addr);
int ncd__addr_loopback(const char *ifname, const char *addr);

/*
 * 1 for an interface that is almost never the way to other hosts (bridges,
 * veth, overlay and VPN tunnels: docker0, cni0, flannel.1, tailscale0...):
 * ncd_ifname_is_plumbing() of the one interface-name classifier (ifclass.h).
 */
int ncd__ifname_virtual(const char *ifname);

/* The interface the logs suggest for NCCL_SOCKET_IFNAME (routable address,
 * physical-looking name), or a placeholder in angle brackets. */
void ncd__good_iface(const struct ncd_explain *ex, char *out, size_t osz);

#endif
