/* SPDX-License-Identifier: MIT */
/**
 * @file check.h
 * @brief The node checks run by `nccl-doctor check`.
 *
 * Flow: probe -> facts -> checks -> findings -> renderers.  Each check reads
 * the system only through the context (sysroot files, ncd_getenv()), adds
 * findings, and may record what it saw as JSON under its own key of
 * `facts` (`check --json` prints that object as "facts").
 *
 * The list of checks is src/lib/check/checks.def, an X-macro:
 *   NCD_CHECK(name, function)
 * Adding a check = one function + one line there.
 */
#ifndef NCD_CHECK_H
#define NCD_CHECK_H

#include <jansson.h>

#include "ncd/ctx.h"
#include "ncd/finding.h"
#include "ncd/strbuf.h"

#ifdef __cplusplus
extern "C" {
#endif

/** What a check run may assume. */
struct ncd_check_opts {
    /**
     * NCCL version whose behaviour to predict, as NCCL's version code
     * (2.28.3 -> 22803; NCCL_VERSION_CODE since 2.9).  0 means "newest
     * known".  See ncd_nccl_version_parse() in nccl.h.
     */
    int nccl_version;
    /** Where the version came from: "libnccl.so.2", "--nccl-version", ... */
    const char *nccl_version_source;
};

/**
 * A check.  Adds findings to `out`; may set keys of `facts` (a JSON
 * object owned by the caller).  Returns 0, or a negative NCD_E* code when
 * it could not run at all (the runner then adds an info finding saying
 * so and goes on with the next check).  Not being able to see something
 * (no GPU, a file missing from a capture) is a finding, not an error.
 */
typedef int (*ncd_check_fn)(struct ncd_ctx *ctx,
                            const struct ncd_check_opts *opts,
                            struct ncd_findings *out, json_t *facts);

struct ncd_check {
    const char *name; /**< short name, e.g. "netif" */
    ncd_check_fn fn;
};

/** The registered checks, terminated by {NULL, NULL}. */
extern const struct ncd_check ncd_checks[];

/**
 * Runs every registered check in order; failures of one check do not stop
 * the others.  Findings are sorted worst first afterwards.
 * @return 0, or NCD_ENOMEM.
 */
int ncd_run_checks(struct ncd_ctx *ctx, const struct ncd_check_opts *opts,
                   struct ncd_findings *out, json_t *facts);

/**
 * The environment recommended after a check run: the interface
 * recommendation (facts.network.recommended_env) first, then the env
 * suggestions of warning and error findings for variables not yet set
 * (a JSON null value means "unset it").  New reference.
 */
json_t *ncd_recommended_env(json_t *facts, const struct ncd_findings *l);

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
 * pod spec lines, caveats.  Reads /sys/class/infiniband through the
 * sysroot for the infiniband profile.
 * @return 0 or NCD_ENOMEM.
 */
int ncd_env_profile_apply(struct ncd_ctx *ctx, enum ncd_env_profile p,
                          json_t *env, struct ncd_strbuf *notes);

/**
 * `env --debug`: adds NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=INIT,BOOTSTRAP,
 * ENV,NET (NCCL's default subsystems INIT,BOOTSTRAP,ENV plus NET for the
 * transport and interface lines `explain` reads; NCCL src/debug.cc) to
 * `env`, keeping values the user already chose there, and a note on the
 * cost.  With debug 0 and the kubernetes profile (whose usual recipes set
 * NCCL_DEBUG=INFO) it only adds a note saying why it is left out.
 * @return 0 or NCD_ENOMEM.
 */
int ncd_env_debug_apply(enum ncd_env_profile p, int debug, json_t *env,
                        struct ncd_strbuf *notes);

#ifdef __cplusplus
}
#endif
#endif
