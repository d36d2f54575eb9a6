/* SPDX-License-Identifier: MIT */
/**
 * @file nccl.h
 * @brief NCCL's own interface selection predicted for a given version, and
 *        its NCCL_SOCKET_IFNAME / NCCL_IB_HCA list syntax.
 *
 * Version codes and their parser: version.h; the libnccl.so.2 this process
 * would load: ncd_sys_nccl_version() in sysops.h.
 */
#ifndef NCD_NCCL_H
#define NCD_NCCL_H

#include <stddef.h>

#include "ncd/ctx.h"
#include "ncd/netif.h"
#include "ncd/version.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- NCCL_SOCKET_IFNAME and NCCL_IB_HCA lists -------------------------- */

/** One token of a parsed list: "name[:port[:rail[:plane]]]". */
struct ncd_nccl_iflist_token {
    char name[64];
    int port; /**< -1 when absent */
};

/**
 * A parsed NCCL_SOCKET_IFNAME / NCCL_IB_HCA / NCCL_OOB_NET_IFNAME value,
 * following NCCL's parseStringList/matchIfList (src/misc/utils.cc) and
 * ncclOsFindInterfaces (src/os/linux.cc), 2.30.7.
 */
struct ncd_nccl_iflist {
    int set;          /**< 0 when unset OR ignored (length <= 1) */
    int ignored;      /**< 1 when set but ignored because length <= 1 */
    int exclude;      /**< leading '^' */
    int exact;        /**< '=' after the optional '^' */
    int eq_before_caret; /**< value starts "=^": '^' is then literal */
    int n;            /**< tokens kept */
    int dropped_empty;   /**< empty tokens dropped (",,", trailing ',') */
    int has_space;    /**< some token has leading/trailing white space */
    int truncated;    /**< more tokens than NCCL keeps (max_tokens) */
    struct ncd_nccl_iflist_token tok[32];
};

/**
 * Parses a list value.
 * @param value       the variable's value (NULL = unset).
 * @param max_tokens  16 for NCCL_SOCKET_IFNAME (MAX_IFS), 32 for
 *                    NCCL_IB_HCA (MAX_IB_DEVS).
 */
void ncd_nccl_iflist_parse(const char *value, int max_tokens,
                           struct ncd_nccl_iflist *out);

/**
 * Whether an interface / device name is selected by the list, as NCCL
 * matches it: prefix or exact per `exact`, inverted by `exclude`.
 * @param port  the device port for NCCL_IB_HCA matching, or -1 for
 *              sockets (NCCL ignores the token's port there).
 */
int ncd_nccl_iflist_match(const struct ncd_nccl_iflist *l, const char *name,
                          int port);

/* ---- Interface selection ------------------------------------------------ */

/** What NCCL would pick on this node. */
struct ncd_nccl_choice {
    int version;             /**< the behaviour predicted (our code) */
    int via_comm_id;         /**< bootstrap chosen by NCCL_COMM_ID subnet */
    int comm_id_invalid;     /**< NCCL_COMM_ID set but unparsable */
    char comm_id_error[128]; /**< why it is invalid */
    int comm_id_unresolved;  /**< a host name not found in /etc/hosts */
    char comm_id_host[128];  /**< the host part of NCCL_COMM_ID */
    char bootstrap[NCD_IFNAME_MAX + 8]; /**< "" when none found */
    char bootstrap_addr[64];
    int n_socket;            /**< Socket transport list (max 16) */
    char socket[16][NCD_IFNAME_MAX + 8];
    char socket_addr[16][64];
    int pass;                /**< pass that produced the auto choice:
                                  1 ib, 2 comm-id subnet, 3 others,
                                  4 docker, 5 lo, 6 virbr; 0 user list or
                                  nothing */
    const char *pass_name;   /**< that pass in words; static */
    struct ncd_nccl_iflist ifname; /**< NCCL_SOCKET_IFNAME as parsed */
    int family;              /**< AF_INET/AF_INET6 from NCCL_SOCKET_FAMILY,
                                  AF_UNSPEC when any */
    int family_ignored;      /**< NCCL_SOCKET_FAMILY set to another string */
};

/**
 * Predicts NCCL's interface selection (ncclFindInterfaces, src/misc/
 * socket.cc; bootstrapNetInit, src/bootstrap.cc) for `version` (0 =
 * newest) from the getifaddrs list and the context's NCCL_SOCKET_IFNAME,
 * NCCL_SOCKET_FAMILY and NCCL_COMM_ID:
 *  - passes: "ib" prefix; NCCL_COMM_ID subnet (only if set); everything
 *    but docker/lo/virbr (virbr only from 2.28); docker; lo; virbr (2.28+);
 *  - IFF_RUNNING required from 2.28 on;
 *  - ::1 skipped, fe80:: kept; first address per name wins; getifaddrs
 *    order;
 *  - a user list that matches nothing gives no interface (no fallback).
 * NCCL_COMM_ID host names are looked up in <sysroot>/etc/hosts only (no
 * DNS from a check; "localhost" is 127.0.0.1 when not listed); an IP
 * literal or a name found there is matched against local subnets.
 * @return 0 or NCD_EINVAL (version too old to predict: < 2.0).
 */
int ncd_nccl_select(struct ncd_ctx *ctx, const struct ncd_netif_list *nl,
                    int version, struct ncd_nccl_choice *out);

#ifdef __cplusplus
}
#endif
#endif
