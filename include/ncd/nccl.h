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
 * Parses an NCCL_IB_HCA value as NCCL's IB plugin does (src/transport/
 * net_ib.cc ncclIbInit, 2.30.7): like ncd_nccl_iflist_parse() with 32
 * tokens (MAX_IB_DEVS), but without NCCL_SOCKET_IFNAME's one-character
 * rule: "x" is a list that matches no device, and "^" alone (an
 * excluding empty list) selects none.
 * @param value  the variable's value (NULL = unset: every device).
 */
void ncd_nccl_hca_parse(const char *value, struct ncd_nccl_iflist *out);

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
    int via_comm_id;         /**< NCCL_COMM_ID is set (even empty): the
                                  bootstrap takes only its subnet match */
    int comm_id_set;         /**< NCCL_COMM_ID present in the environment */
    int comm_id_invalid;     /**< set but fails ncclSocketGetAddrFromString:
                                  'Invalid NCCL_COMM_ID' */
    char comm_id_error[192]; /**< why it is invalid / unresolved, in words
                                  with NCCL's own WARN detail */
    int comm_id_unresolved;  /**< a host name whose answer is unknown here
                                  (capture without it, or a live lookup past
                                  its deadline): nothing predicted */
    int comm_id_unchecked;   /**< "[x]:port" where x is no IPv6 address:
                                  NCCL compares an uninitialised address */
    char comm_id_host[128];  /**< the host part of NCCL_COMM_ID */
    char comm_id_addr[64];   /**< the address it resolved to, "" if none */
    int comm_id_port;        /**< the port NCCL uses: no port = 65535
                                  (htons(-1)), else atoi() cut to 16 bits */
    int comm_id_port_note;   /**< 0 a port 1-65535; 1 no port (65535);
                                  2 port 0 or not a number; 3 beyond 65535
                                  (wraps); 4 nothing after ']' (NCCL reads
                                  past the end of the value) */
    char bootstrap[NCD_IFNAME_MAX + 8]; /**< "" when none found */
    char bootstrap_addr[64]; /**< numeric, without "%scope" */
    char bootstrap_scope[NCD_IFNAME_MAX + 8]; /**< interface name NCCL
                                  prints after '%' for an IPv6 link-local
                                  address ("fe80::1%eth0"), else "" */
    const char *bootstrap_error; /**< NCCL's WARN when the bootstrap finds
                                  no interface ("Bootstrap : no socket
                                  interface found", "NET/Socket : No usable
                                  listening interface found", "Invalid
                                  NCCL_COMM_ID, ..."), NULL when it finds
                                  one or cannot be predicted; static */
    const char *socket_error; /**< the WARN that leaves the Socket
                                  transport with no interface: "NET/Socket :
                                  no interface found", or from 2.27 the
                                  NCCL_COMM_ID parse WARN ("Net : No valid
                                  [IPv6]:port pair found"...); NULL when it
                                  finds one; static */
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
 *  - passes: "ib" prefix; NCCL_COMM_ID subnet (only if longer than one
 *    character); everything but docker/lo/virbr (virbr only from 2.28);
 *    docker; lo; virbr (2.28+);
 *  - IFF_RUNNING required from 2.28 on;
 *  - ::1 skipped, fe80:: kept; first address per name wins; getifaddrs
 *    order;
 *  - a user list that matches nothing gives no interface (no fallback);
 *  - NCCL_COMM_ID set, even empty: the bootstrap uses only the first
 *    getifaddrs entry on its subnet (IPv6: equal scope id too; no "%if"
 *    means scope 0, which never matches a link-local entry), ignoring the
 *    list, the family and IFF_RUNNING; a value ncclSocketGetAddrFromString
 *    rejects (fewer than two characters, no host, a name that does not
 *    resolve, '[' without ']') fails 'Invalid NCCL_COMM_ID', and from 2.27
 *    leaves the Socket transport with no interface.  The port is never
 *    checked (comm_id_port_note).
 * The host part of NCCL_COMM_ID resolves through ncd_resolve_first()
 * (resolve.h): live getaddrinfo(AF_UNSPEC), first answer, as NCCL; on a
 * capture from its recorded answers and /etc/hosts.
 * @return 0, NCD_EINVAL (version too old to predict: < 2.0), NCD_ENOMEM.
 */
int ncd_nccl_select(struct ncd_ctx *ctx, const struct ncd_netif_list *nl,
                    int version, struct ncd_nccl_choice *out);

#ifdef __cplusplus
}
#endif
#endif
