/* SPDX-License-Identifier: MIT */
/**
 * @file finding.h
 * @brief The finding model shared by every check (check, explain, probe...).
 *
 * A finding is data: a stable id ("net.ifname.no-match"), one category from
 * the fixed list in shared/reference/categories.md, a severity, a one-line
 * title, evidence lines (what was seen, with where it was seen), the cause,
 * the fix, and environment settings that implement the fix.
 *
 * Findings never print; renderers (report.h) turn a list into text or JSON.
 */
#ifndef NCD_FINDING_H
#define NCD_FINDING_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The categories, fixed (shared/reference/categories.md).  Scripts filter on
 * the strings; add one only when that list gains it.
 * XX(ENUM, "string")
 */
#define NCD_CATEGORY_MAP(XX)                                                  \
    XX(NET_IFNAME, "net.ifname")                                              \
    XX(NET_IFACE_CHOICE, "net.iface-choice")                                  \
    XX(NET_UNREACHABLE, "net.unreachable")                                    \
    XX(NET_HOSTNAME, "net.hostname")                                          \
    XX(NET_IB, "net.ib")                                                      \
    XX(SYS_SHM, "sys.shm")                                                    \
    XX(SYS_MEMLOCK, "sys.memlock")                                            \
    XX(SYS_PCI, "sys.pci")                                                    \
    XX(SYS_VIRT, "sys.virt")                                                  \
    XX(GPU_P2P, "gpu.p2p")                                                    \
    XX(GPU_CUDA, "gpu.cuda")                                                  \
    XX(GPU_DRIVER, "gpu.driver")                                              \
    XX(GPU_FABRIC, "gpu.fabric")                                              \
    XX(LIB_NCCL, "lib.nccl")                                                  \
    XX(USAGE_DUPLICATE_GPU, "usage.duplicate-gpu")                            \
    XX(USAGE_MISMATCH, "usage.mismatch")                                      \
    XX(VERSION_MISMATCH, "version.mismatch")                                  \
    XX(VERSION_KNOWN_BUG, "version.known-bug")                                \
    XX(TIMEOUT, "timeout")                                                    \
    XX(ENV_INVALID, "env.invalid")                                            \
    XX(PERF_CONFIG, "perf.config")

enum ncd_category {
#define NCD__CAT_ENUM(e, s) NCD_CAT_##e,
    NCD_CATEGORY_MAP(NCD__CAT_ENUM)
#undef NCD__CAT_ENUM
        NCD_CAT__COUNT
};

/** The category's string ("net.ifname"); static. */
const char *ncd_category_name(enum ncd_category cat);

/**
 * Parses a category string.
 * @return the category, or -1 when the string is not in the fixed list.
 */
int ncd_category_parse(const char *s);

/** Severities, ordered: a larger value is worse. */
enum ncd_severity {
    NCD_SEV_OK = 0,      /**< checked and fine */
    NCD_SEV_INFO = 1,    /**< worth knowing, or could not be checked */
    NCD_SEV_WARNING = 2, /**< works but is slow, fragile or misleading */
    NCD_SEV_ERROR = 3,   /**< NCCL will fail or hang */
};

/** "ok", "info", "warning", "error"; static. */
const char *ncd_severity_name(enum ncd_severity sev);
/** Parses those names; -1 when unknown. */
int ncd_severity_parse(const char *s);

/** One suggested environment setting. */
struct ncd_env_kv {
    char *name;  /**< owned */
    char *value; /**< owned; NULL means "unset this variable" */
};

struct ncd_finding {
    char *id;                  /**< stable, dotted; owned */
    enum ncd_category category;
    enum ncd_severity severity;
    char *title;               /**< one line; owned */
    char **evidence;           /**< owned array of owned lines */
    size_t n_evidence;
    char *cause;               /**< owned, may be NULL */
    char *fix;                 /**< owned, may be NULL */
    struct ncd_env_kv *env;    /**< owned array */
    size_t n_env;
    int order;                 /**< insertion order, for stable sorting */
    const char *check;         /**< name of the node check that added it
                                    (ncd_checks[], static); NULL for
                                    findings outside `check` */
};

/** A growable list of findings.  Zero-initialised is empty and valid. */
struct ncd_findings {
    struct ncd_finding *v;
    size_t n, cap;
};

/**
 * Appends a finding with a printf-formatted title.
 * @return the new finding (owned by the list, valid until the next add or
 *         ncd_findings_release()), or NULL when out of memory.
 */
struct ncd_finding *ncd_findings_add(struct ncd_findings *list,
                                     const char *id, enum ncd_category cat,
                                     enum ncd_severity sev, const char *fmt,
                                     ...)
    __attribute__((format(printf, 5, 6)));

/**
 * Findings' text (title, evidence, cause, fix) is capped where it echoes a
 * value: a run of non-blank bytes whose value (after NAME= and a quote) is
 * over NCD_FINDING_CLIP bytes keeps its first NCD_FINDING_CLIP bytes and
 * then says "...(N bytes)" (a 100 KB NCCL_SOCKET_IFNAME is not repeated).
 */
#define NCD_FINDING_CLIP 200

/** Appends one evidence line (printf format).  0 or NCD_ENOMEM. */
int ncd_finding_evidence(struct ncd_finding *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/** Sets (replaces) the cause text.  0 or NCD_ENOMEM. */
int ncd_finding_cause(struct ncd_finding *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/** Sets (replaces) the fix text.  0 or NCD_ENOMEM. */
int ncd_finding_fix(struct ncd_finding *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/**
 * Adds or replaces one env suggestion; value NULL means "unset it".
 * 0 or NCD_ENOMEM.
 */
int ncd_finding_env(struct ncd_finding *f, const char *name,
                    const char *value);

/** Highest severity in the list (NCD_SEV_OK when empty). */
enum ncd_severity ncd_findings_worst(const struct ncd_findings *list);

/** Count of findings at exactly `sev`. */
size_t ncd_findings_count(const struct ncd_findings *list,
                          enum ncd_severity sev);

/** Finds a finding by id; NULL when absent. */
struct ncd_finding *ncd_findings_find(const struct ncd_findings *list,
                                      const char *id);

/**
 * Sorts worst first; equal severities keep insertion order.  `explain`
 * relies on that to keep the root cause ahead of its consequences.
 */
void ncd_findings_sort(struct ncd_findings *list);

/** Frees every finding; the list is empty and reusable. */
void ncd_findings_release(struct ncd_findings *list);

#ifdef __cplusplus
}
#endif
#endif
