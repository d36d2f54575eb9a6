/* SPDX-License-Identifier: MIT */
/**
 * @file check.h
 * @brief The node checks run by `nccl-doctor check`: pure functions of the
 *        node snapshot (node.h) that add findings.
 *
 * Flow: probe components -> struct ncd_node -> checks -> findings ->
 * renderers.  A check reads only the node (no file, no system call, no
 * getenv: ncd_node_getenv() gives the snapshot's environment), so the same
 * node always gives the same findings.  What a check saw is rendered from
 * the node by ncd_node_facts_json() (node_report.h), not by the check.
 *
 * The list of checks is src/lib/check/checks.def, an X-macro:
 *   NCD_CHECK(name, function, parts)
 * where `parts` is the NCD_PART_BIT() mask of node parts it reads.
 * Adding a check = one function (check_ports.c is a small one to copy) +
 * one line there; scripts/check-layers.sh fails when a check reads the
 * system.
 */
#ifndef NCD_CHECK_H
#define NCD_CHECK_H

#include <jansson.h>

#include "ncd/ctx.h"
#include "ncd/finding.h"
#include "ncd/node.h"
#include "ncd/strbuf.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Which checks to run. */
struct ncd_check_opts {
    /** Comma-separated check names ("netif,rdma"); NULL or "" runs all. */
    const char *only;
};

/**
 * A check.  Adds findings to `out`.  Returns 0, or a negative NCD_E* code
 * when it could not run at all (the runner then adds a warning finding
 * saying so and goes on with the next check).  Not being able to see
 * something (no GPU, a file missing from a capture) is a finding, not an
 * error.
 */
typedef int (*ncd_check_fn)(const struct ncd_node *n,
                            const struct ncd_check_opts *opts,
                            struct ncd_findings *out);

struct ncd_check {
    const char *name; /**< short name, e.g. "netif" */
    ncd_check_fn fn;
    unsigned parts;   /**< node parts it reads (NCD_PART_BIT mask) */
};

/** The registered checks, terminated by {NULL, NULL, 0}. */
extern const struct ncd_check ncd_checks[];

/**
 * The node parts the selected checks read, to pass to ncd_node_probe().
 * @return the mask, or 0 when `only` names an unknown check.
 */
unsigned ncd_checks_parts(const struct ncd_check_opts *opts);

/**
 * Runs the selected checks in order; one failing does not stop the others.
 * A check whose node part could not be probed (status[].rc < 0) becomes a
 * "tool.check-failed" warning naming the part's error.  Findings are
 * sorted worst first afterwards.
 * @return 0, NCD_EINVAL (unknown check name), or NCD_ENOMEM.
 */
int ncd_run_checks(const struct ncd_node *n, const struct ncd_check_opts *opts,
                   struct ncd_findings *out);

/**
 * The environment recommended after a check run: the interface
 * recommendation (ncd_recommend_env()) first, then the env suggestions of
 * warning and error findings for variables not yet set (a JSON null value
 * means "unset it"); a suggestion to disable IB is dropped while an RDMA
 * port is ACTIVE.  New reference; NULL when out of memory.
 */
json_t *ncd_recommended_env(const struct ncd_node *n,
                            const struct ncd_findings *l);

/** Presets for `env --profile`. */
enum ncd_env_profile {
    NCD_PROFILE_NONE = 0,
    NCD_PROFILE_ETHERNET,   /**< TCP only: IB off, more sockets per peer */
    NCD_PROFILE_INFINIBAND, /**< IB on, NCCL_IB_HCA = the active ports */
    NCD_PROFILE_DOCKER,     /**< + the docker run flags NCCL needs */
    NCD_PROFILE_KUBERNETES, /**< + the pod spec settings NCCL needs */
};

/** Parses a profile name; -1 when unknown. */
int ncd_env_profile_parse(const char *s);

/**
 * Adjusts `env` (a JSON object NAME -> value|null) for a profile and
 * appends human notes (one per line, no '#') to `notes`: container flags,
 * pod spec lines, caveats.  The infiniband profile lists the node's ACTIVE
 * RDMA ports (n->rdma.hca_list).
 * @return 0 or NCD_ENOMEM.
 */
int ncd_env_profile_apply(const struct ncd_node *n, enum ncd_env_profile p,
                          json_t *env, struct ncd_strbuf *notes);

#ifdef __cplusplus
}
#endif
#endif
