/* SPDX-License-Identifier: MIT */
/**
 * @file node_report.h
 * @brief Renderers of the node snapshot (node.h): text and JSON are two
 *        views of the same struct; nothing is parsed back.
 *
 * Implemented in src/lib/render/render_{node,net,topo,env}.c.  The finding
 * renderers are in report.h.
 */
#ifndef NCD_NODE_REPORT_H
#define NCD_NODE_REPORT_H

#include <jansson.h>

#include "ncd/node.h"
#include "ncd/report.h"
#include "ncd/strbuf.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * What the node looks like, as `check --json` prints it under "facts":
 * {"nccl_env", "network", "topo", "pci", "rdma", "memlock", "shm",
 *  "container", "nccl_libs", "cuda_driver_version", "ports"}; a key is left
 * out when its part was not probed or failed.  New reference, NULL when
 * out of memory.
 */
json_t *ncd_node_facts_json(const struct ncd_node *n);

/**
 * The `check` report as text: header (host, capture, NCCL version
 * predicted), the interfaces, the findings (report.h), then the
 * recommended environment `env` (ncd_recommended_env(); may be NULL).
 */
void ncd_node_check_text(struct ncd_strbuf *out, const struct ncd_node *n,
                         const struct ncd_findings *l, json_t *env,
                         const struct ncd_text_style *st);

/**
 * The interface report (`ifaces --json` body, "network" of the facts):
 * {"interfaces":[{"index","name","kind","kind_evidence","flags":[...],
 *   "operstate","carrier","mtu","mac","arptype","addresses":[{"family",
 *   "address","prefix","scope","link_local"}],"speed_mbps"(null when
 *   unknown),"rx_bytes","tx_bytes","rx_packets","tx_packets","pci",
 *   "numa_node","driver","master","rank"(null when unusable),"usable",
 *   "reasons":[...]}],
 *  "recommended":NAME|null,"recommended_env":{...},"rdma_active_ports":N,
 *  "nccl":{"version","version_source","bootstrap":NAME|null,
 *          "bootstrap_address" (as NCCL prints it: "fe80::1%eth0"),
 *          "bootstrap_error": NCCL's WARN when it finds none, else null,
 *          "socket":[NAMES],"socket_error":WARN|null,"pass"}}
 * Needs the NET part.  New reference; NULL on allocation failure.
 */
json_t *ncd_node_ifaces_json(const struct ncd_node *n);

/**
 * The interface table as text (`ifaces`): one line per interface (rank,
 * name, kind, state, speed, traffic, addresses) with the reasons under
 * each, NCCL's predicted choice, then the recommended settings.
 */
void ncd_node_ifaces_text(struct ncd_strbuf *out, const struct ncd_node *n,
                          const struct ncd_text_style *st);

/**
 * The topology as `nvidia-smi topo -m` prints it (header row, one row per
 * GPU with CPU / NUMA affinity, one per NIC, the legend, the NIC and GPU
 * legends), preceded by a line when no GPU was found.
 */
void ncd_topo_matrix_text(const struct ncd_topo *t, struct ncd_strbuf *out);

/** The topology as JSON: {"source", "gpus":[...], "nics":[...],
 *  "matrix":[[...]], "nvlink_source", "driver_version"}.  New reference. */
json_t *ncd_topo_to_json(const struct ncd_topo *t);

/**
 * Appends the topology as a standalone SVG 1.1 picture, the way lstopo
 * draws a machine: nested boxes for the machine, NUMA nodes (with their
 * CPUs), PCIe host bridges and PCIe switches, holding the GPUs (name, PCI
 * address, link speed and width), NICs (RDMA device and interface) and
 * NVSwitches; below them the GPU/NIC path-type matrix of
 * ncd_topo_matrix_text() with one colour per type (NV#, PIX, PXB, PHB,
 * NODE, SYS) and its legend (left out past 40 devices).  `host` is the
 * title (may be NULL).  Plain text written by nccl-doctor, no library
 * (README "Pictures").
 */
void ncd_topo_svg(const struct ncd_topo *t, const char *host,
                  struct ncd_strbuf *out);

/** Output formats of `env`. */
enum ncd_env_format {
    NCD_ENV_SH = 0,  /**< export NAME='value' / unset NAME */
    NCD_ENV_FILE,    /**< NAME=value (docker --env-file, systemd); a
                          value with a line break is left out, with a
                          comment saying so */
    NCD_ENV_DOCKER,  /**< -e NAME='value' \ */
    NCD_ENV_K8S,     /**< a pod spec env: list (YAML double-quoted
                          values, control characters escaped) */
    NCD_ENV_SLURM,   /**< #SBATCH --export=ALL,NAME=value; values that
                          --export cannot carry (',', white space,
                          quotes, backslash) and unsets follow as
                          export / unset lines for the job script */
};

/** Parses "sh"/"export", "env", "docker", "k8s"/"kubernetes", "slurm";
 *  -1 when unknown. */
int ncd_env_format_parse(const char *s);

/**
 * Appends a recommended environment (a JSON object NAME -> value | null =
 * unset) in a format, after `notes` (lines, each prefixed "# ").
 */
void ncd_env_render(struct ncd_strbuf *out, json_t *env,
                    enum ncd_env_format f, const char *notes);

#ifdef __cplusplus
}
#endif
#endif
