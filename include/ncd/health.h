/* SPDX-License-Identifier: MIT */
/**
 * @file health.h
 * @brief Health-check renderers of a `check` run: the Prometheus textfile
 *        of node_exporter, the drain reason of a Slurm HealthCheckProgram
 *        (LBNL NHC's convention), and a Kubernetes node-problem-detector
 *        custom plugin's answer.
 *
 * They read only the findings and what the caller says about the run
 * (struct ncd_health_run), write into a caller's buffer and never print:
 * the command line decides where the text goes (stdout, or `--output FILE`
 * through ncd_write_file_atomic(), readall.h).
 *
 * What counts as a problem: an error finding; with `strict` also a
 * warning.  Info and ok findings never are.
 */
#ifndef NCD_HEALTH_H
#define NCD_HEALTH_H

#include "ncd/finding.h"
#include "ncd/strbuf.h"

#ifdef __cplusplus
extern "C" {
#endif

/** One check run, as the health renderers see it. */
struct ncd_health_run {
    /** The findings (each with its `check`, see ncd_run_checks()); may be
     *  NULL when the run failed. */
    const struct ncd_findings *findings;
    /** Names of the checks that ran (NULL-terminated; the names of
     *  ncd_checks[]); one gauge each.  May be NULL. */
    const char *const *checks;
    /** NCCL version whose behaviour was predicted (NCCL_VERSION_CODE,
     *  22803 for 2.28.3), 0 when unknown, and where it came from. */
    int nccl_version;
    const char *nccl_version_source;
    /** When the run ended, Unix time in seconds (the caller's clock). */
    double time_s;
    /** 1: warnings are problems too (`--strict`). */
    int strict;
    /** The run itself failed (no findings to trust): this text says why
     *  (NULL or "" when it did not fail). */
    const char *error;
};

/** Exit statuses of the Slurm format: LBNL NHC's (0 healthy; 1 a check
 *  failed and the printed line is the reason to drain with). */
enum { NCD_HEALTH_SLURM_OK = 0, NCD_HEALTH_SLURM_DRAIN = 1 };

/** Exit statuses of a node-problem-detector custom plugin
 *  (kubernetes/node-problem-detector, pkg/custompluginmonitor/types: OK 0,
 *  NonOK 1, Unknown otherwise). */
enum { NCD_HEALTH_NPD_OK = 0, NCD_HEALTH_NPD_PROBLEM = 1,
       NCD_HEALTH_NPD_UNKNOWN = 2 };

/** Longest Slurm drain reason written, bytes (the limit; Slurm
 *  shows the reason in one column of `sinfo -R`). */
#define NCD_HEALTH_SLURM_MAX 100
/** Longest node-problem-detector message written, bytes: the default
 *  max_output_length of a custom plugin (NPD cuts longer output). */
#define NCD_HEALTH_NPD_MAX 80

/**
 * Appends the Prometheus text exposition format (version 0.0.4) for
 * node_exporter's textfile collector; every family has # HELP and # TYPE,
 * no sample carries a timestamp (the collector refuses them):
 *   nccl_doctor_up                         1 when the checks ran
 *   nccl_doctor_info{version,nccl_version,nccl_version_source}  1
 *   nccl_doctor_last_run_timestamp_seconds r->time_s
 *   nccl_doctor_worst_severity             0 ok .. 3 error
 *   nccl_doctor_findings{category,severity} count, for every category of
 *                                          finding.h and info/warning/error
 *                                          (zeros kept: a series that
 *                                          vanishes cannot be alerted on)
 *   nccl_doctor_check_up{check}            1 ran, 0 could not run
 *   nccl_doctor_check_severity{check}      worst severity of its findings
 * After a failed run (r->error) only up (0), info and the timestamp.
 * Label values are escaped (\\, \", \n) and made valid UTF-8.
 */
void ncd_health_prometheus(const struct ncd_health_run *r,
                           struct ncd_strbuf *out);

/**
 * The Slurm HealthCheckProgram answer in NHC's convention: when the node
 * has a problem (or the run failed) appends one line, at most
 * NCD_HEALTH_SLURM_MAX bytes plus the newline, "nccl-doctor: TITLE
 * [CATEGORY]" of the worst finding with " (+N more)" when there are
 * others (the title cut with "..." on a UTF-8 boundary to fit; control
 * characters become blanks), for `scontrol update ... state=drain
 * reason=...`; appends nothing for a healthy node.
 * @return NCD_HEALTH_SLURM_OK or NCD_HEALTH_SLURM_DRAIN.
 */
int ncd_health_slurm(const struct ncd_health_run *r, struct ncd_strbuf *out);

/**
 * A node-problem-detector custom plugin's answer: one line of at most
 * NCD_HEALTH_NPD_MAX bytes plus the newline (the problem as in
 * ncd_health_slurm() without the tool's name, or a short "ok" summary),
 * @return NCD_HEALTH_NPD_OK, NCD_HEALTH_NPD_PROBLEM, or
 *         NCD_HEALTH_NPD_UNKNOWN when the run failed.
 */
int ncd_health_npd(const struct ncd_health_run *r, struct ncd_strbuf *out);

#ifdef __cplusplus
}
#endif
#endif
