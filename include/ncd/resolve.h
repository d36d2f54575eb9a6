/* SPDX-License-Identifier: MIT */
/**
 * @file resolve.h
 * @brief Host name resolution the way NCCL resolves the host part of
 *        NCCL_COMM_ID: getaddrinfo(name, NULL, hints) with ai_family
 *        AF_UNSPEC, ai_socktype SOCK_STREAM, no flags, and the FIRST answer
 *        wins (NCCL ncclSocketGetAddrFromString, src/misc/socket.cc, the
 *        same from 2.7 to 2.30.7).
 *
 * A name's address is a system answer, so this is an operation of the
 * system-operations layer (sysops.h; implemented in src/lib/sys/resolve.c,
 * recorded by `gather` as .ncd/resolve).  On a live context it is asked of
 * the system (glibc getaddrinfo: numeric forms, then NSS: /etc/hosts, DNS,
 * ..., answers sorted by RFC 3484/6724 rules).  On a recorded sysroot it is
 * taken from the capture, in this order:
 *   1. numeric forms, as glibc's getaddrinfo parses them: IPv4 through
 *      inet_aton ("10.1" is 10.0.0.1, "0x0a000001" too), IPv6 through
 *      inet_pton with an optional "%scope";
 *   2. <sysroot>/.ncd/resolve, answers recorded on the host: one line per
 *      name, "<name> <address> [<address>...]" in getaddrinfo's order, or
 *      "<name> -" for a name that did not resolve; '#' starts a comment;
 *   3. <sysroot>/etc/hosts in file order: the first line listing the name
 *      (case-insensitive).  glibc sorts several answers (IPv6 before IPv4
 *      when the host has IPv6 source addresses), which a capture cannot
 *      replay without step 2.
 * Anything else is unknown on a capture (DNS cannot be replayed).
 */
#ifndef NCD_RESOLVE_H
#define NCD_RESOLVE_H

#include <stddef.h>
#include <sys/socket.h>

#include "ncd/ctx.h"
#include "ncd/netif.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Longest a live lookup may take before it counts as unknown (ms). */
#define NCD_RESOLVE_TIMEOUT_MS 3000

/**
 * Resolves `name` and returns its first answer.
 * @param timeout_ms  deadline of a live lookup (milliseconds; <= 0 means
 *                    NCD_RESOLVE_TIMEOUT_MS).  A lookup still running at
 *                    the deadline is left to finish in a detached thread.
 * @param out         the address (prefix 128 or 32, scope_id from a
 *                    numeric "%scope" or the answer's sin6_scope_id).
 * @param why         receives, on failure, the reason in words: the
 *                    gai_strerror() text for NCD_ENOENT; may be NULL.
 * @return 0; NCD_ENOENT when the name does not resolve (getaddrinfo
 *         failed, or the capture recorded that); NCD_ENOTLIVE when a
 *         capture holds no answer; NCD_ETIMEOUT when a live lookup passed
 *         the deadline; NCD_ENOMEM.
 */
int ncd_resolve_first(struct ncd_ctx *ctx, const char *name, int timeout_ms,
                      struct ncd_if_addr *out, char *why, size_t whylen);

/** One name's live answer (ncd_resolve_live_batch). */
struct ncd_resolve_answer {
    int gai; /**< getaddrinfo()'s return: 0 answered, else an EAI_* code
                  (gai_strerror() words it) */
    struct sockaddr_storage first;  /**< first answer (NCCL's pick);
                                         ss_family 0 when there is none */
    struct sockaddr_storage first4; /**< first IPv4 answer; ss_family 0
                                         when there is none */
};

/**
 * Asks this machine (always live: for callers that resolve on the host
 * they run on, as probe's ranks do) for `n` names with NCCL's hints (see
 * ncd_resolve_first), one after the other in one worker thread, waiting at
 * most `timeout_ms` milliseconds for all of them together.  Lookups still
 * running at the deadline finish in the detached thread, which frees what
 * it holds; the names are copied, so the caller's may go at return.
 * @param names    n host names (not modified, owned by the caller).
 * @param answers  room for n answers; the first (return value) are filled,
 *                 the rest are untouched.
 * @return how many names, from the first, were answered in time (0..n);
 *         NCD_ENOMEM; NCD_ESYS when no thread could be started.
 */
int ncd_resolve_live_batch(const char *const *names, int n, int timeout_ms,
                           struct ncd_resolve_answer *answers);

#ifdef __cplusplus
}
#endif
#endif
