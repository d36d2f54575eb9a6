/* SPDX-License-Identifier: MIT */
/**
 * @file ports.h
 * @brief TCP ports NCCL uses, and firewall rules that would drop them.
 *
 * NCCL has no port-range variable (NCCL facts §6, checked against the 2.30
 * source, docs and history).  Its bootstrap, socket transport and IB
 * out-of-band listeners bind port 0, so the kernel picks from
 * net.ipv4.ip_local_port_range (/proc/sys/net/ipv4/ip_local_port_range);
 * the only fixed ports are the NCCL_COMM_ID port and RAS (NCCL_RAS_ADDR,
 * default localhost:28028, 2.24+).  NCCL's own docs
 * (troubleshooting/networking_troubleshooting.rst) tell you to narrow that
 * sysctl (e.g. "50000 51000") and open it in the firewall.
 *
 * Firewall rules are read, never changed: ncd_sys_firewall() (sysops.h:
 * NETLINK_NETFILTER dumps on a live node, only as root, written in the
 * JSON schema of `nft -j list ruleset`; .ncd/nft.json on a recorded one,
 * which may also hold `nft -j` output itself).  iptables-legacy rules are not
 * read; /proc/net/ip_tables_names tells whether any tables are loaded.
 * Listening sockets and the bind test: ncd_sys_listen_ports() and
 * ncd_sys_bind_test() in sysops.h.
 */
#ifndef NCD_PORTS_H
#define NCD_PORTS_H

#include <stddef.h>

#include "ncd/ctx.h"
#include "ncd/sysops.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The RAS default port (NCCL src/ras, NCCL_RAS_ADDR "localhost:28028"). */
#define NCD_NCCL_RAS_PORT 28028

/** Parses "32768\t60999".  @return 0 or NCD_EPARSE.  Pure. */
int ncd_port_range_parse(const char *buf, int *lo, int *hi);

/** What the nftables rule set does to new TCP connections to a range. */
struct ncd_fw {
    int known;            /**< a rule set was read */
    char source[64];      /**< "netlink: nftables rule set", ".ncd/nft.json" */
    int input_chains;     /**< base chains on the input hook */
    int policy_drop;      /**< one of them has policy drop */
    int accept_covers;    /**< an accept rule whose tcp dport covers all of
                               the range (or accepts without a port match
                               other than established/loopback) */
    int drop_overlap;     /**< a drop/reject rule on tcp dport overlapping
                               the range */
    char evidence[8][200];
    int n_evidence;
};

/**
 * Analyses `nft -j list ruleset` output (or ncd_sys_firewall()'s answer,
 * same schema) for the TCP range [lo, hi]: tcp dport values, ranges,
 * anonymous sets and named sets ("@name", from the set objects) of the
 * rules in input-hook base chains.  Rules with conditions it cannot
 * evaluate (source addresses, interfaces) count as accepting, so the
 * verdict errs on "may be open"; rules matching only another protocol
 * (udp dport, meta l4proto udp) do not count.  Evidence lines show a rule
 * as `nft list ruleset` writes it ("inet t input: tcp dport { 3000,
 * 4000-4100 } drop").  Jumps into other chains are not followed.
 * @return 0, or NCD_EPARSE when the JSON is not an nftables rule set.
 */
int ncd_nft_analyze(struct ncd_ctx *ctx, const char *json, size_t len, int lo,
                    int hi, struct ncd_fw *out);

/**
 * Reads the rule set (ncd_sys_firewall(), 2 s timeout) and analyses it.
 * out->known = 0 when it cannot be seen (no nft, not root, nothing
 * recorded; the reason stays in the context's error detail).
 * @return 0 or NCD_ENOMEM.
 */
int ncd_fw_probe(struct ncd_ctx *ctx, int lo, int hi, struct ncd_fw *out);

#ifdef __cplusplus
}
#endif
#endif
