/* SPDX-License-Identifier: MIT */
/*
 * The conditions a derived rule's `when:` may name, declared once.
 *
 * NCD__CONDITIONS(X) lists X(fn, "name", phase) per condition.  It expands
 * into enum ncd__cond (here), into the table the rules loader validates
 * `when:` against and the reasoner dispatches through (reason.c), and its
 * functions
 *     int ncd__cond_<fn>(struct ncd__reason *rs, size_t rule);
 * live in cond_<family>.c (see reason.h).  A condition adds zero or more
 * findings (hits) for rule `rule` and returns how many, or a negative
 * NCD_E* code.
 *
 * Phases, in the order the reasoner runs them (rules in load order within
 * a phase):
 *   WARNS     right after the pattern rules' matches (WARN lines no rule
 *             claims);
 *   MAIN      facts across the whole input;
 *   FALLBACK  only when nothing before found a problem (severity >=
 *             warning): where a silent job stopped.
 * No known failure is no finding (explain's report says so); it is not a
 * condition and has no category.
 *
 * Adding a condition: a line here, its function in the family's file, a
 * row in rules/README.md's table and a rule with `when:` in rules/NAME.yaml
 * (test_explain_rules checks the three agree).
 */
#ifndef NCD_EXPLAIN_COND_H
#define NCD_EXPLAIN_COND_H

#define NCD__CONDITIONS(X)                                                    \
    /* cond_fallback.c: the failure trail when no rule names the cause */    \
    X(unmatched_warn, "unmatched-warn", WARNS)                                \
    X(error_trail, "error-trail", FALLBACK)                                   \
    X(init_hang_nvls, "init-hang-nvls", FALLBACK)                             \
    X(init_hang_bootstrap, "init-hang-bootstrap", FALLBACK)                   \
    X(init_hang_connect, "init-hang-connect", FALLBACK)                       \
    /* cond_iface.c: which interface NCCL bootstraps and connects on */      \
    X(iface_linklocal, "iface-linklocal", MAIN)                               \
    X(iface_virtual, "iface-virtual", MAIN)                                   \
    X(iface_wrong_connect, "iface-wrong-connect", MAIN)                       \
    X(container_bridge, "container-bridge", MAIN)                             \
    X(ifname_no_match, "ifname-no-match", MAIN)                               \
    X(ifname_blank, "ifname-blank", MAIN)                                     \
    /* cond_net.c: which network transport NCCL ended up with */             \
    X(ib_fallback, "ib-fallback", MAIN)                                       \
    X(gdr_off, "gdr-off", MAIN)                                               \
    X(socket_multinode, "socket-multinode", MAIN)                             \
    X(ib_verb_errno, "ib-verb-errno", MAIN)                                   \
    /* cond_version.c: processes or builds that disagree */                  \
    X(version_mismatch, "version-mismatch", MAIN)                             \
    X(plugin_mismatch, "plugin-mismatch", MAIN)                               \
    X(tests_header_mismatch, "tests-header-mismatch", MAIN)                   \
    X(known_bug, "known-bug", MAIN)                                           \
    X(nccl_wheels_mixed, "nccl-wheels-mixed", MAIN)                           \
    /* cond_peer.c: addresses that came from a peer */                     \
    X(peer_garbage_address, "peer-garbage-address", MAIN)                     \
    X(peer_loopback, "peer-loopback", MAIN)                                   \
    X(peer_unusable_address, "peer-unusable-address", MAIN)                   \
    X(peer_refused, "peer-refused", MAIN)                                     \
    /* cond_hosts.c: the odd host out */                                   \
    X(peer_gdr_missing, "peer-gdr-missing", MAIN)                             \
    X(host_nvls_missing, "host-nvls-missing", MAIN)                           \
    X(host_iface_differs, "host-iface-differs", MAIN)                         \
    /* cond_gpu.c: GPUs and hosts as NCCL saw them */                        \
    X(hosts_merged, "hosts-merged", MAIN)                                     \
    X(consumer_gpu_p2p, "consumer-gpu-p2p", MAIN)                             \
    /* cond_env.c: NCCL_* values NCCL echoed (data/nccl-vars.yaml) */        \
    X(env_level_value, "env-level-value", MAIN)                               \
    X(env_ifname_ignored, "env-ifname-ignored", MAIN)                         \
    X(env_slow_settings, "env-slow-settings", MAIN)                           \
    X(env_ib_range, "env-ib-range", MAIN)                                     \
    X(env_differs, "env-differs", MAIN)                                       \
    X(override_failed, "override-failed", MAIN)                               \
    /* cond_framework.c: PyTorch / Paddle reports across ranks */            \
    X(watchdog_desync, "watchdog-desync", MAIN)                               \
    X(watchdog_missing, "watchdog-missing", MAIN)

enum ncd__cond {
#define NCD__COND_ENUM(fn, name, phase) NCD__COND_##fn,
    NCD__CONDITIONS(NCD__COND_ENUM)
#undef NCD__COND_ENUM
    NCD__COND__COUNT
};

enum ncd__cond_phase {
    NCD__PH_WARNS,
    NCD__PH_MAIN,
    NCD__PH_FALLBACK,
    NCD__PH__COUNT
};

/* The condition called `name` ("iface-virtual"), or -1. */
int ncd__cond_find(const char *name);

/* The name of condition c; NULL when out of range. */
const char *ncd__cond_name(int c);

#endif
