/* SPDX-License-Identifier: MIT */
/**
 * @file explain.h
 * @brief `explain`: name the root cause of a failed or slow NCCL job from its
 *        logs (NCCL_DEBUG output, PyTorch / Paddle tracebacks, nccl-tests).
 *
 * Pipeline (one pass over the input, bounded memory):
 *
 *   bytes --ncd_explain_feed()--> lines --ncd_log_parse()--> header + message
 *         --facts extractor--> per-process facts (version, ranks, interfaces,
 *                              network, transports, env echoed by NCCL)
 *         --literal prefilter + PCRE2 rules--> matches (bounded evidence)
 *   ncd_explain_finish() --reasoner--> ranked findings: root cause first,
 *                              then consequences, wrappers and context.
 *
 * Rules are data (rules/<family>.yaml, compiled into the binary; see
 * rules/README.md for the format).  Each rule has an id, a category from the
 * fixed list (finding.h), a severity, a role, patterns, cause, fix, env
 * suggestions, the NCCL versions it applies to, its source and examples that
 * must and must not match.  Rules whose `when:` names a condition are
 * "derived": the reasoner evaluates that condition over the facts and matches
 * of the whole input (for example docker0 chosen for the bootstrap plus a
 * connect time-out means the wrong interface).
 *
 * Line formats follow NCCL src/debug.cc (2.8 .. 2.30.7): see
 * shared/reference/nccl-tests-and-errors.md B8.
 *
 * Error reporting: functions return 0 (or a count) on success and a negative
 * NCD_E* code on failure with the detail in the context (ctx.h).  Nothing is
 * printed.
 */
#ifndef NCD_EXPLAIN_H
#define NCD_EXPLAIN_H

#include <jansson.h>
#include <stddef.h>

#include "ncd/ctx.h"
#include "ncd/finding.h"
#include "ncd/report.h"
#include "ncd/strbuf.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Line parser                                                              */
/* ------------------------------------------------------------------------ */

/** Longest line kept (bytes); the rest of a longer line is dropped. */
#define NCD_LOG_MAX_LINE 8192

/** NCCL debug level of a line (NCCL src/include/debug.h). */
enum ncd_log_level {
    NCD_LOG_NONE = 0, /**< not an NCCL debug line (traceback, launcher...) */
    NCD_LOG_VERSION,  /**< bare "NCCL version X" line (VERSION/WARN level) */
    NCD_LOG_INFO,
    NCD_LOG_WARN,
    NCD_LOG_TRACE,
    NCD_LOG_ABORT,
    NCD_LOG_CALL,
};

/** "none", "version", "info", "warn", "trace", "abort", "call"; static. */
const char *ncd_log_level_name(enum ncd_log_level lvl);

/**
 * One parsed line.  All pointers point into the scratch buffer given to
 * ncd_log_parse() and are valid until it is reused.  Lengths are in bytes.
 */
struct ncd_log_line {
    const char *text;  /**< normalised line: launcher prefixes, CR and ANSI
                            colour removed; NUL-terminated */
    size_t text_len;
    const char *msg;   /**< the NCCL message after "NCCL INFO " etc.; the
                            whole text for NCD_LOG_NONE; NUL-terminated */
    size_t msg_len;
    enum ncd_log_level level;
    const char *host;  /**< host from the NCCL header ("node1"), else from a
                            launcher prefix ("node1: "), else NULL */
    size_t host_len;
    long pid;          /**< -1 when unknown */
    long tid;          /**< -1 when unknown */
    int dev;           /**< "[n]" of the header: the logging thread's CUDA
                            device; -1 when unknown */
    const char *src;   /**< "transport/net_ib.cc" of a WARN; NULL if absent */
    size_t src_len;
    int src_line;      /**< its line number; 0 when absent */
    int rank;          /**< launcher rank ("[1,3]<stdout>:" gives 3,
                            "rank3: ", "[rank3]:", "[default3]:", srun "3: ");
                            -1 when absent */
    double ts;         /**< time stamp in seconds since 1970-01-01 UTC (the
                            zone is ignored); < 0 when the line has none */
};

/**
 * Normalises and parses one line (without its '\n').
 *
 * 1. A JSON object holding a log line (Docker json-file and Fluent Bit
 *    "log", journalctl -o json "MESSAGE", Google Cloud Logging
 *    "textPayload", ECS "message", "msg") is replaced by that line, its
 *    "time"/"timestamp"/"@timestamp" giving `ts`.
 * 2. CRs, NUL bytes and ANSI escape sequences are removed.
 * 3. Launcher and collector prefixes are removed, in a loop: Open MPI
 *    --tag-output ("[1,0]<stdout>:"), Horovod ("[0]<stdout>:"), torchrun
 *    ("[rank3]:", "[default0]:"), "[trainer3]:", "[trainer0|0]:",
 *    mpiexec -l ("[3] "), Determined ("[rank=3] "), kubectl logs --prefix
 *    ("[pod/P/C] "), Ray ("(RayWorkerWrapper pid=1, ip=A) ", "(pid=1) "),
 *    CRI log files ("<time> stdout F "), ISO 8601 time stamps
 *    ("2024-01-02T03:04:05.123Z", "[2024-01-02 03:04:05]"), syslog
 *    ("Jan  2 03:04:05 host proc[1]: "), "rankN: ", srun --label ("3: "),
 *    docker compose ("svc-1  | ") and a "host: " label in front of another
 *    prefix.  Prefixes carrying a rank set `rank`, time stamps `ts`.
 * 4. The NCCL header (NCCL src/include/debug.h, src/debug.cc): INFO, WARN
 *    with "file:line", "(func)" (2.30.7+) and "[time]" (2.26+), TRACE,
 *    ABORT, CALL, the bare "NCCL version" line; the 2.0 .. 2.2 form
 *    without "NCCL" ("host:pid:tid [d] INFO msg", "... [d] file:line WARN
 *    msg"); NCCL 1.x "WARN file:line msg".  It is read at the start of the
 *    normalised text, else searched anywhere (text an unknown wrapper put
 *    in front).  Without one, a message NCCL prints at INFO level whose
 *    header was cut ("Channel 00/0 : 0[0] -> 1[1] via P2P/IPC", "9[1a000]
 *    -> 2[6b000] [send] via NET/IB/0/GDRDMA", "NET/IB : Using ...", 1.x
 *    "INFO rank 0 using device 0 ...") is an INFO line without host.
 * Each shape and its source is a row of line.c's tables.
 *
 * Never fails on any byte sequence: binary input gives NCD_LOG_NONE.
 * @param line     the raw bytes; need not be NUL-terminated.
 * @param len      their count; bytes past NCD_LOG_MAX_LINE are ignored.
 * @param scratch  working buffer of at least len+1 bytes (NCD_LOG_MAX_LINE+1
 *                 is always enough); out's pointers point into it.
 * @param out      the result.
 * @return 0, or NCD_EINVAL when scratch is too small.
 */
int ncd_log_parse(const char *line, size_t len, char *scratch,
                  size_t scratch_sz, struct ncd_log_line *out);

/* ------------------------------------------------------------------------ */
/* Rules                                                                    */
/* ------------------------------------------------------------------------ */

struct ncd_rules;

/** Role of a rule's finding when several are found. */
enum ncd_rule_role {
    NCD_ROLE_ROOT = 0,    /**< a cause in itself */
    NCD_ROLE_CONSEQUENCE, /**< what other ranks see after a failure
                               ("Connection closed by remote peer") */
    NCD_ROLE_WRAPPER,     /**< a framework's summary of an NCCL error
                               ("NCCL error in: ... unhandled system error");
                               the diagnosis only when nothing deeper shows */
    NCD_ROLE_CONTEXT,     /**< worth knowing, not a failure by itself */
};

/** "root", "consequence", "wrapper", "context"; static. */
const char *ncd_rule_role_name(enum ncd_rule_role role);

/**
 * Empty rule set.  Caller frees with ncd_rules_free().  0 or NCD_ENOMEM.
 * Loading modifies the set; once loaded it is read-only and may be shared by
 * scans in several threads.
 */
int ncd_rules_new(struct ncd_rules **out);

/** Frees a rule set.  NULL is allowed. */
void ncd_rules_free(struct ncd_rules *rules);

/**
 * Loads the rules of one YAML document (a mapping with a `rules:` sequence;
 * format in rules/README.md) and compiles their patterns with PCRE2 (JIT
 * where available).
 * @param name  file name used in messages ("rules/ib.yaml").
 * @return the number of rules added, or NCD_EPARSE with a detail naming the
 *         file and line ("rules/ib.yaml:12:3: mapping values are not allowed
 *         here"), NCD_EINVAL for a semantic error (unknown category,
 *         duplicate id, pattern that does not compile, no usable literal),
 *         NCD_ENOMEM.  On error no rule of that document is kept.
 */
int ncd_rules_load_buf(struct ncd_ctx *ctx, struct ncd_rules *rules,
                       const char *name, const char *buf, size_t len);

/**
 * Loads every embedded rules/NAME.yaml file (compiled into the library).
 * @return the number of rules added, or an error as ncd_rules_load_buf().
 */
int ncd_rules_load_builtin(struct ncd_ctx *ctx, struct ncd_rules *rules);

/** Number of rules in the set. */
size_t ncd_rules_count(const struct ncd_rules *rules);

/** Read-only view of one rule (strings owned by the rule set). */
struct ncd_rule_info {
    const char *id;
    enum ncd_category category;
    enum ncd_severity severity;
    enum ncd_rule_role role;
    const char *title;
    const char *when;          /**< derived condition, or NULL */
    const char *file;          /**< where it was loaded from */
    int line;                  /**< line of its `id:` in that file */
    const char *nccl_versions; /**< "any" or ">=2.19 <2.20" */
    const char *source;
    size_t n_patterns;
    size_t n_files;            /**< `files:` globs (NCCL source files) */
    size_t n_match_examples;
    size_t n_nomatch_examples;
};

/** Fills `out` for rule i (0 <= i < ncd_rules_count()).  0 or NCD_EINVAL. */
int ncd_rules_info(const struct ncd_rules *rules, size_t i,
                   struct ncd_rule_info *out);

/** Pattern j of rule i (PCRE2 syntax, also valid POSIX ERE); NULL if none. */
const char *ncd_rules_pattern(const struct ncd_rules *rules, size_t i,
                              size_t j);

/**
 * Example line j of rule i; `match` 1 for the must-match list, 0 for the
 * must-not-match list.  NULL when out of range.
 */
const char *ncd_rules_example(const struct ncd_rules *rules, size_t i,
                              int match, size_t j);

/**
 * Which rule (if any) claims one raw log line: the line is parsed like any
 * input line, the literal prefilter and the patterns are applied (rules with
 * `files:` only to a WARN of those NCCL source files), subsystem rules
 * (`files:` without patterns) claim the WARNs of their files, and the
 * highest-priority rule wins (a pattern rule on a tie).  Derived rules
 * never match here.
 * @return the rule index, or -1 when none matches.
 */
long ncd_rules_classify(const struct ncd_rules *rules, const char *line,
                        size_t len);

/**
 * Self-test of a rule set, as the meta-test does: every must-match example
 * is claimed by its own rule, no must-not-match example is claimed by it,
 * and every pattern also compiles as POSIX ERE (so `grep -E` runs the same
 * patterns in bench/explain).  Failures are appended to `report`, one line
 * each.
 * @return the number of failures (0 = all good).
 */
size_t ncd_rules_selftest(const struct ncd_rules *rules,
                          struct ncd_strbuf *report);

/**
 * Appends every pattern, one per line, in POSIX ERE form (named and
 * non-capturing groups turned into plain groups), for `grep -E -f`.
 */
void ncd_rules_dump_ere(const struct ncd_rules *rules,
                        struct ncd_strbuf *out);

/* ------------------------------------------------------------------------ */
/* A scan                                                                   */
/* ------------------------------------------------------------------------ */

struct ncd_explain;

/**
 * Starts a scan.  `rules` must outlive the scan and is not modified.
 * Caller frees with ncd_explain_free().  0 or NCD_ENOMEM.
 */
int ncd_explain_new(struct ncd_ctx *ctx, const struct ncd_rules *rules,
                    struct ncd_explain **out);

/** Frees a scan.  NULL is allowed. */
void ncd_explain_free(struct ncd_explain *ex);

/** Most threads one scan uses. */
#define NCD_EXPLAIN_MAX_THREADS 64

/**
 * Threads used to read and scan a large regular file given to
 * ncd_explain_feed_path() (default 1).  The threads scan blocks of lines
 * (256 KiB each) concurrently and apply their results in input order, so the
 * findings, facts and evidence are exactly those of one thread.  Input
 * that is not a large regular file (stdin, gzip, small files) is read by
 * one thread.
 * @return 0, or NCD_EINVAL when n is not in 1..NCD_EXPLAIN_MAX_THREADS.
 */
int ncd_explain_set_threads(struct ncd_explain *ex, int n);

/**
 * Says whether the logs were written with NCCL_DEBUG=INFO set (`nccl-doctor
 * run` sets it unless the user set NCCL_DEBUG); default 0.  With it, a
 * report on logs without any NCCL line says that NCCL was never initialised
 * instead of asking to re-run with NCCL_DEBUG=INFO.
 */
void ncd_explain_set_debug_on(struct ncd_explain *ex, int on);

/** What ncd_explain_set_debug_on() set (0 by default). */
int ncd_explain_debug_on(const struct ncd_explain *ex);

/**
 * Starts a new input source (a file, one member of a directory, stdin).
 * Line numbers restart at 1; evidence is shown as "<name>:<line>".  Ends
 * the previous source if one is open.  0 or NCD_ENOMEM.
 */
int ncd_explain_begin(struct ncd_explain *ex, const char *name);

/**
 * Feeds bytes of the current source, in chunks of any size; lines may span
 * chunks.  Memory stays bounded: of a line longer than NCD_LOG_MAX_LINE
 * bytes, its first NCD_LOG_MAX_LINE bytes are read as the line, and one
 * piece of the rest under the same line number: the text after the rest's
 * last '\r' (progress bars redraw with '\r' and never end their line, so
 * the next message sticks to them), else the rest's last NCD_LOG_MAX_LINE
 * bytes from a word boundary; the bytes between are skipped and the line
 * is counted in ncd_explain_long_lines().  0 or NCD_EINVAL (no source
 * begun).
 */
int ncd_explain_feed(struct ncd_explain *ex, const void *buf, size_t len);

/** Ends the current source (a last line without '\n' is processed). */
void ncd_explain_end(struct ncd_explain *ex);

/** Bytes and lines scanned so far, and lines that had an NCCL header. */
void ncd_explain_stats(const struct ncd_explain *ex, unsigned long long *bytes,
                       unsigned long long *lines,
                       unsigned long long *nccl_lines);

/** Lines longer than NCD_LOG_MAX_LINE bytes seen so far (read in part, see
 * ncd_explain_feed()). */
unsigned long long ncd_explain_long_lines(const struct ncd_explain *ex);

/**
 * Runs the reasoner and appends the findings to `out`, ranked: root causes
 * of severity >= warning (worst first, then earliest: time stamps when both
 * have one, else the lower rank across different inputs, else input order),
 * then framework wrappers, then consequences (including matches a derived
 * finding explains), then context and info.  Finding ids are rule ids;
 * evidence lines read "<input>:<line>: <normalised line>" (at most 6 kept
 * per finding, plus a count).  No known failure adds no finding (0 is
 * returned; "nothing found" is not a category).  Call once, after the last
 * ncd_explain_end().
 * @return the number of findings added, NCD_ENOMEM, or NCD_EINVAL when
 *         called a second time.
 */
int ncd_explain_finish(struct ncd_explain *ex, struct ncd_findings *out);

/**
 * The role the reasoner gave finding `i` of the list filled by
 * ncd_explain_finish() (its position after ranking).
 */
enum ncd_rule_role ncd_explain_role(const struct ncd_explain *ex, size_t i);

/**
 * When finding `i` (as for ncd_explain_role()) was first seen.
 * @param ts    receives the earliest time stamp of its evidence in seconds
 *              since 1970 (UTC assumed), or -1 when its lines had none.
 * @param rank  receives the rank of its first evidence line (launcher
 *              prefix or the rank NCCL reported for that process), or -1.
 * @return 0, or NCD_EINVAL when i is out of range or finish was not run.
 */
int ncd_explain_first_seen(const struct ncd_explain *ex, size_t i, double *ts,
                           int *rank);

/* ------------------------------------------------------------------------ */
/* Inputs: files, directories, stdin, rules directories                     */
/* ------------------------------------------------------------------------ */

/**
 * Called once per input that could not be read, or not to its end; the
 * scan goes on with the next input.  `msg` names the input and says what
 * happened ("logs/r3.log.gz: unexpected end of file, truncated gzip file
 * (the lines before it were used)"); it is valid during the call only.
 */
typedef void (*ncd_explain_problem_fn)(void *arg, const char *msg);

/** What ncd_explain_feed_path() read, accumulated over calls. */
struct ncd_explain_inputs {
    int nread;   /**< files scanned (to their end or to a problem) */
    int nfailed; /**< inputs with a problem, each reported to `problem` */
    int nagain;  /**< files and directories skipped because the same one
                      (device and inode) was read already: given twice, or
                      reached again through a link or a symlink cycle */
    int nlinkdirs; /**< symbolic links to directories met inside a named
                        directory: not followed (as grep -r) */
    /** Bytes of decompressed gzip data read from one input before the
     *  rest is dropped with a problem report (a gzip bomb expands ~1000x);
     *  0 means NCD_EXPLAIN_MAX_INFLATED. */
    unsigned long long max_inflated;
    ncd_explain_problem_fn problem; /**< may be NULL */
    void *arg;                      /**< passed to `problem` */
};

/** Default cap of decompressed bytes per gzip input: 16 GiB, some 200x the
 *  largest per-rank NCCL_DEBUG=INFO log of a long job, and ~10 s of scan. */
#define NCD_EXPLAIN_MAX_INFLATED (16ull << 30)

/**
 * Feeds one command-line input to the scan, each file as its own source
 * (ncd_explain_begin) named by its path:
 *  - "-" is standard input, named "<stdin>";
 *  - a directory is walked in natural order ("rank2" before "rank10"),
 *    4 levels deep, skipping names that start with '.' and anything that is
 *    neither a regular file nor a directory (a FIFO would block);
 *  - a file is read as gzip when it starts with the gzip magic (1f 8b) or
 *    is not a regular file (zlib reads plain data through), else with
 *    read(2) (mmap(2) measured ~3x the CPU time of read(2) on a VM, where
 *    page faults are dear); regular files of 2 MiB and more with pread(2)
 *    by the threads of ncd_explain_set_threads().  A truncated or corrupt
 *    .gz keeps the lines before the damage; a .gz that inflates past
 *    in->max_inflated is cut there (reported as a problem);
 *  - a file or directory (device and inode) is read once per scan, however
 *    often it is named or linked: symlink cycles end (counted in
 *    in->nagain).
 * Reads in 256 KiB chunks (memory stays bounded, see ncd_explain_feed()).
 * @return 0 when everything under `path` was read, else the NCD_E* code of
 *         the last problem (already reported through in->problem), or
 *         NCD_ENOMEM when no read buffer could be had.
 */
int ncd_explain_feed_path(struct ncd_explain *ex, const char *path,
                          struct ncd_explain_inputs *in);

/**
 * Loads every DIR/NAME.yaml and DIR/NAME.yml (names starting with '.'
 * skipped) in natural order with ncd_rules_load_buf(), stopping at the
 * first file that fails; the rules of the files before it stay loaded.
 * Files must be regular and at most 16 MiB.
 * @return the number of rules added, or a negative NCD_E* code with the
 *         detail naming the directory or file ("DIR: No such file or
 *         directory", "DIR/site.yaml:4:1: ...").
 */
int ncd_rules_load_dir(struct ncd_ctx *ctx, struct ncd_rules *rules,
                       const char *dir);

/* ------------------------------------------------------------------------ */
/* Facts and reports                                                        */
/* ------------------------------------------------------------------------ */

/**
 * The facts as a JSON object:
 *  - "hosts": host names seen in NCCL headers; "nccl_versions": "2.19.3"...;
 *  - "env": NCCL_* variables as NCCL echoed them ("X set by environment
 *    to V");
 *  - "transports": connection counts over all processes (p2p, shm, net,
 *    net_gdr, collnet), from "Channel/Ring ... via ..." lines;
 *  - "gpus": nccl-tests device lines (host, rank, device, name);
 *  - "processes": per (host, pid): rank, nranks, nnodes, cuda_dev, bus_id,
 *    nccl_version, cuda_version, cuda_driver (12040 = 12.4), bootstrap and
 *    socket_ifaces ([{name, address}]), ib_devices ("mlx5_0:1/IB"),
 *    ib_oob, network ("IB", "Socket", plugin name), net_plugin,
 *    libibverbs_missing, gdr (true/false/null), transports, ring, trees,
 *    init_complete (count), init_seconds, last_phase, warnings;
 *  - "processes_truncated", "lines", "nccl_lines".
 * Strings are valid UTF-8 (other bytes are shown as '?').  New reference;
 * NULL on allocation failure.
 */
json_t *ncd_explain_facts_json(const struct ncd_explain *ex);

/** Appends the compact, human-readable facts summary (`explain --facts`). */
void ncd_explain_facts_text(const struct ncd_explain *ex,
                            struct ncd_strbuf *out);

/**
 * Appends explain's text report for the findings `fl` of ncd_explain_finish():
 *  - a summary line: inputs (`ninputs`), lines, lines from NCCL, hosts,
 *    NCCL versions;
 *  - the first finding under a heading for its role ("Root cause", "Most
 *    likely cause (...)", "Result"), other root causes of severity >=
 *    warning in full, consequences and framework summaries briefly (title
 *    and 3 evidence lines; in full with st->verbose), then context;
 *  - "Next steps": NCCL_DEBUG=INFO when no line came from NCCL (when it was on,
 *    ncd_explain_set_debug_on(): that NCCL never started), applying the
 *    fixes when a problem was found, and `nccl-doctor check`.
 * Each finding is drawn by ncd_render_finding_text_ex() (report.h), cause
 * and fix re-flowed at 100 columns, at most 6 evidence lines (all with
 * st->verbose).
 */
void ncd_explain_report_text(const struct ncd_explain *ex,
                             const struct ncd_findings *fl,
                             const struct ncd_text_style *st, int ninputs,
                             struct ncd_strbuf *out);

/**
 * explain's JSON report: the envelope of report.h (`host` may be NULL) with
 *  - "findings": each finding (ncd_finding_to_json) plus "role" and
 *    "first_seen": {"time": "YYYY-MM-DDTHH:MM:SS" (UTC) or null,
 *    "rank": N or null};
 *  - "recommended_env": the env suggestions of the first finding and of
 *    the root causes of severity >= warning, first one wins per variable
 *    (null: unset it);
 *  - "facts" (ncd_explain_facts_json), "input": {"inputs": `ninputs`,
 *    "bytes", "lines", "nccl_lines"}, "next_steps": ["nccl-doctor check"].
 * New reference (json_decref); NULL when out of memory.
 */
json_t *ncd_explain_report_json(const struct ncd_explain *ex,
                                const struct ncd_findings *fl, int ninputs,
                                const char *host);

#ifdef __cplusplus
}
#endif
#endif
