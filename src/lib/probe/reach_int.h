/* SPDX-License-Identifier: MIT */
/* probe's reachability analysis (probe_reach.c, probe_reach_fw.c): the host
 * matrix shared by the finding builders.  Not public. */
#ifndef NCD_PROBE_REACH_INT_H
#define NCD_PROBE_REACH_INT_H

#include "ncd/finding.h"
#include "ncd/probe.h"
#include "ncd/strbuf.h"

#define CELL(r, i, j) (&(r)->cells[(size_t)(i) * (size_t)(r)->nranks + (j)])

/* Evidence lines per finding before "... and N more". */
#define EV_MAX 8
/* Host names listed in a title before "and N more". */
#define NAMES_MAX 6
/* Pair findings before the rest are summed up in one. */
#define PAIRS_MAX 16

enum kind { K_NONE, K_OK, K_PEER, K_PORT, K_RETURN, K_PATH, K_NOADDR };

struct an {
    const struct ncd_probe_result *r;
    struct ncd_findings *out;
    int use_rec;
    int nh;
    enum kind *hk;       /* [a*nh+b] dominant kind of host a -> host b */
    int *rep;            /* [a*nh+b] a rank pair (i*n+j) of that kind */
    unsigned char *expl; /* [a*nh+b] explained by a finding already */
    unsigned char *set;  /* scratch host sets */
};

#define HK(A, a, b) ((A)->hk[(size_t)(a) * (size_t)(A)->nh + (size_t)(b)])
#define REP(A, a, b) ((A)->rep[(size_t)(a) * (size_t)(A)->nh + (size_t)(b)])
#define EXPL(A, a, b) ((A)->expl[(size_t)(a) * (size_t)(A)->nh + (size_t)(b)])

/* Whether a connection kind was tested (not K_NONE / K_NOADDR). */
int ncd__reach_tested(enum kind k);
/* The first rank of host h. */
const struct ncd_probe_rank *ncd__reach_host_rank(const struct an *A, int h);
/* The interface rank k's connections used. */
const char *ncd__reach_path_if(const struct an *A,
                               const struct ncd_probe_rank *k);
/* "node3", "node3 and node7", "6 hosts (node1, node2, ... and 2 more)"
 * of the hosts set in `in`. */
void ncd__reach_names(struct ncd_strbuf *sb, const struct an *A,
                      const unsigned char *in);
/* Hosts set in in[0, nh). */
int ncd__reach_count(const unsigned char *in, int nh);
/* Most common failing status among the given host pairs'
 * representatives. */
enum ncd_probe_status ncd__reach_common_status(const struct an *A,
                                               const unsigned char *src,
                                               const unsigned char *dst,
                                               enum kind k);
/* Evidence for every host pair src x dst of kind k (at most EV_MAX lines),
 * marking them explained. */
void ncd__reach_evidence_block(struct ncd_finding *f, struct an *A,
                               const unsigned char *src,
                               const unsigned char *dst, enum kind k);
/* Cause 2: firewalls on the ephemeral range (probe_reach_fw.c). */
void ncd__reach_firewall_findings(struct an *A);

#endif
