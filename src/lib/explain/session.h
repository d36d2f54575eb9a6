/* SPDX-License-Identifier: MIT */
/* The state of one explain scan: facts, matches, evidence (all bounded). */
#ifndef NCD_EXPLAIN_SESSION_H
#define NCD_EXPLAIN_SESSION_H

#include "explain/internal.h"

#define NCD__MAX_EVID 6      /* evidence lines kept per finding */
#define NCD__MAX_PROCS 16384 /* processes tracked (host, pid) */
#define NCD__PROC_HASH0 1024 /* first size of the process table's index */
#define NCD__MAX_ENV 256
#define NCD__MAX_HOSTS 4096
#define NCD__HOST_HASH 8192
#define NCD__MAX_GPUS 1024
#define NCD__MAX_SOURCES 65536
#define NCD__MAX_CAPS 6
#define NCD__EV_TEXT 400 /* bytes of a line kept as evidence */
#define NCD__BLOCK (1u << 18) /* bytes per block of the threaded reader */

struct ncd__evid {
    int32_t proc; /* index in procs of the line's process, -1 none */
    uint32_t src;
    uint64_t line;
    uint64_t seq;
    double ts;
    int rank;
    char host[48];
    char *text;
};

struct ncd__rec {
    uint64_t count;
    size_t nev;
    struct ncd__evid ev[NCD__MAX_EVID];
    uint64_t first_seq;
    double first_ts; /* earliest time stamp seen, < 0 none */
    char *cap_name[NCD__MAX_CAPS];
    char *cap_val[NCD__MAX_CAPS];
    size_t ncaps;
    char hosts[4][48];
    size_t nhosts, caphosts; /* distinct hosts, saturates at 5 (= "more") */
};

struct ncd__iface {
    char name[24];
    char addr[48];
};

enum ncd__phase {
    PH_NONE = 0,
    PH_BOOTSTRAP,
    PH_TOPO,
    PH_CONNECT, /* P2P / SHM / NET connections */
    PH_NVLS,
    PH_COMPLETE,
    PH_RUNNING,
    PH_DESTROYED,
};

struct ncd__proc {
    char host[48];
    size_t hostlen;
    long pid;
    uint32_t src;
    char version[24];
    int vcode;
    char cuda[12];
    int driver;
    int rank, nranks, nnodes, local_ranks, cuda_dev;
    char busid[20];
    int ncomplete, nabort;
    double init_total;
    struct ncd__iface boot[4];
    uint8_t nboot;
    struct ncd__iface sock[8];
    uint8_t nsock;
    char ib[4][24];
    uint8_t nib, ib_roce, ib_ib;
    char oob[24];
    char net[32];
    int8_t plugin; /* 0 unknown, 1 none found, 2 loaded */
    char plugin_name[64];
    uint8_t ibverbs_missing, ib_nodev;
    uint16_t gdr_on, gdr_off;
    uint32_t t_p2p, t_shm, t_net, t_netgdr, t_collnet;
    int8_t nvls; /* -1 unknown, 0 unavailable, 1 available */
    uint64_t nvls_line;
    uint8_t phase;
    uint32_t last_src;
    uint64_t last_line, last_seq;
    uint32_t nwarn;
    char ring[80];
    char trees[80];
    /* line numbers (in source `src`) of the facts, for evidence */
    uint64_t ver_line, boot_line, sock_line, ib_line, net_line, plugin_line;
    uint64_t boot_seq, sock_seq, ib_seq; /* input order of those lines */
    uint64_t phase_line;   /* line that started the current init phase */
    char phase_text[160];  /* its message */
};

/* Per host: local (P2P/SHM) peers, dev index -> rank, to spot hosts that
 * NCCL merged into one. */
struct ncd__host {
    char name[48];
    int16_t devrank[64];
    int dev_conflict; /* 1: two ranks with one dev index are "local" */
    int conflict_dev, conflict_r1, conflict_r2;
    uint32_t conflict_src;
    uint64_t conflict_line;
    uint8_t ndevs_seen;
};

struct ncd__env {
    char name[48];
    char value[128];
    char host[48];
    uint32_t src;
    uint64_t line, seq;
};

struct ncd__gpu {
    char host[48];
    int rank, dev;
    long pid;
    char name[64];
    uint32_t src;
    uint64_t line;
};

/* The WARN lines of one NCCL source file ("graph/search.cc"), whichever
 * rule claimed them: conditions ask "did this subsystem fail". */
struct ncd__wfile {
    char name[64];
    struct ncd__rec rec;
};
#define NCD__MAX_WFILES 32

/* Per rank, from its NET connection lines ("a[..] -> b[..] [send] via
 * NET/IB/0/GDRDMA" is printed by rank a, "[receive]" by rank b, NCCL
 * src/transport/net.cc): how many used GPU Direct RDMA.  Rank-keyed, so
 * lines whose header was stripped still count. */
struct ncd__rnet {
    int32_t rank; /* -1 free slot */
    uint32_t proc; /* process that printed the first line */
    uint32_t net, gdr;
    uint32_t src;
    uint64_t line; /* first line with GDR (gdr) or without (no GDR) */
};
#define NCD__RNET_SLOTS 4096

/* One PyTorch watchdog time-out: which rank, which collective. */
struct ncd__wd {
    int rank;
    long seq;
    char op[32];
    uint32_t src;
    uint64_t line;
};
#define NCD__MAX_WD 1024

/* A file or directory already read in this scan (ncd_explain_feed_path). */
struct ncd__fileid {
    unsigned long long dev, ino; /* ino 0: an empty slot */
};

struct ncd_explain {
    struct ncd_ctx *ctx;
    const struct ncd_rules *rules;
    struct ncd__matcher m;
    /* input */
    struct ncd__fileid *seen; /* open-addressing set, power-of-two size */
    size_t nseen, capseen;
    char **srcnames;
    uint32_t nsrc;
    int open;
    char *part; /* partial line across chunks */
    size_t partlen;
    int skipping; /* inside an over-long line */
    /* an over-long line's last NCD_LOG_MAX_LINE bytes past its first
     * NCD_LOG_MAX_LINE (tail_add()); tailcut: bytes before them dropped */
    char *tail;
    size_t taillen;
    int tailcut;
    unsigned long long long_lines; /* lines longer than NCD_LOG_MAX_LINE */
    int threads;  /* scan threads for large regular files (1: serial) */
    int debug_on; /* logs written with NCCL_DEBUG=INFO (run) */
    size_t block; /* bytes per block of the threaded reader (tests vary it) */
    uint64_t lineno, seq;
    unsigned long long bytes, lines, nccl_lines, info_lines;
    char *scratch;
    /* matches */
    struct ncd__rec *recs;    /* per rule */
    struct ncd__rec *obsrecs; /* per observer pattern (known-bug signature) */
    struct ncd__rec unmatched[NCD_CAT__COUNT];
    /* what the first unmatched WARN of each category showed: the NCCL
     * source file or the subsystem words (ncd__unmatched_add()) */
    char unmatched_basis[NCD_CAT__COUNT][96];
    /* unmatched WARNs that show neither: their category comes from the
     * error code NCCL returned after them (ncd__cond_unmatched_warn()) */
    struct ncd__rec unmatched_bare;
    struct ncd__wfile wfiles[NCD__MAX_WFILES];
    size_t nwfiles;
    struct ncd__rnet *rnet; /* NCD__RNET_SLOTS, allocated on first use */
    size_t nrnet;
    /* facts */
    struct ncd__proc *procs;
    size_t nprocs, capprocs;
    /* open addressing, phash_mask + 1 slots, <= half full: a process's
     * index in procs (-1: a free slot) and its ncd__hash_proc(), so that
     * a probe that misses reads no process */
    struct ncd__pslot {
        int32_t idx;
        uint32_t hash;
    } *phash;
    uint32_t phash_mask;
    long lastproc;
    long curproc; /* process of the line being scanned, -1 none */
    int procs_dropped;
    struct ncd__host *hosts;
    size_t nhosts, caphosts;
    int32_t hhash[NCD__HOST_HASH];
    struct ncd__env env[NCD__MAX_ENV];
    size_t nenv;
    struct ncd__gpu *gpus;
    size_t ngpus;
    char tests_version[24];
    /* the NCCL version a framework reported in its NCCL error ("NCCL error
     * in: <file>:<line>, <reason>, NCCL version 2.18.1": PyTorch's
     * C10D_NCCL_CHECK, the version of the libnccl it loaded), for logs
     * without NCCL's own "NCCL version" line; -1: two different ones */
    int fw_vcode;
    uint64_t oob_failed; /* nccl-tests "Out of bounds values : N FAILED" */
    uint64_t tests_ok;   /* nccl-tests "Out of bounds values : 0 OK" */
    long tests_lib_code, tests_hdr_code; /* nccl-library= / nccl-headers= */
    uint32_t tests_src;
    uint64_t tests_line;
    /* first NCCL error trail line "<file>:<line> -> <code>" (B7 end) */
    char trail_file[64];
    int trail_code;
    uint32_t trail_src;
    uint64_t trail_line, trail_seq;
    char trail_text[200];
    /* PyTorch watchdog time-outs (from pytorch.watchdog-timeout lines) */
    long wd_rule;
    struct ncd__wd *wd;
    size_t nwd;
    /* results */
    enum ncd_rule_role *roles;
    double *first_ts; /* per finding: earliest time stamp, < 0 none */
    int *first_rank;  /* per finding: rank of the first evidence, -1 */
    size_t nroles;
    int finished;
};

/* facts.c */
/* FNV-1a of a host name, mixed with a pid (0 for the host alone). */
uint32_t ncd__hash_proc(const char *host, size_t hostlen, long pid);
struct ncd__proc *ncd__proc_get(struct ncd_explain *ex,
                                const struct ncd_log_line *ll);
void ncd__facts_line(struct ncd_explain *ex, const struct ncd_log_line *ll,
                     struct ncd__proc *pr);
/* NCD__INERT when ncd__facts_line() would only note the line as its
 * process's last (pr->last_src/last_line/last_seq) whatever the state: an
 * NCCL line (not WARN) no fact is taken from; NCD__INERT_OPCOUNT when it
 * would also move a process whose init completed to "running" (an INFO
 * line with "opCount": NCCL_DEBUG_SUBSYS=COLL); else 0.  Stateless
 * (scanning threads call it); conservative (0 when in doubt).
 * explain.facts_inert checks it against ncd__facts_line() on every line of
 * the corpora. */
enum { NCD__INERT = 1, NCD__INERT_OPCOUNT = 2 };
int ncd__facts_inert(const struct ncd_log_line *ll);
/* What ncd__facts_line() does to pr for lines of pr that
 * ncd__facts_inert() calls inert, the last of them ex->lineno / ex->seq;
 * opcount: one of them was NCD__INERT_OPCOUNT. */
void ncd__facts_inert_lines(struct ncd_explain *ex, struct ncd__proc *pr,
                            int opcount);
void ncd__facts_watchdog(struct ncd_explain *ex, const struct ncd_log_line *ll);
/* A framework's NCCL error line that names the NCCL version: ex->fw_vcode. */
void ncd__facts_fw_version(struct ncd_explain *ex, const struct ncd_log_line *ll);

/* explain.c */
/* The category of the subsystem rule whose `files:` name src (the source
 * file of a WARN or of an error trail), net.unreachable when none does. */
enum ncd_category ncd__category_for_src(const struct ncd_rules *r,
                                        const char *src, size_t len);

/*
 * Files a WARN line no rule claims (cond_fallback.c): under the category of
 * the NCCL source file it names (rules/source-files.yaml), else of the
 * subsystem its message starts with ("NET/IB :", "Bootstrap :", ...), else
 * in ex->unmatched_bare, whose category the reasoning step takes from the
 * NCCL error code of the trail that follows.
 */
void ncd__unmatched_add(struct ncd_explain *ex, const struct ncd_log_line *ll);

/*
 * One line after its stateless part: parsed, and its best pattern rule over
 * all NCCL versions.  Depends on the line and the rules only, so any thread
 * may compute it; ncd__line_apply() then updates the scan's state, in input
 * order (see explain.c).
 */
struct ncd__lscan {
    struct ncd_log_line ll;
    long rule;     /* rule index or -1 */
    size_t pat;    /* its pattern (SIZE_MAX: a subsystem rule of files:) */
    uint32_t line; /* index of the line in its block */
    /* known bugs' signatures that matched, over all versions (the apply
     * step keeps those affecting the process's version) */
    uint32_t nobs;
    uint32_t obs[NCD__MAX_OBS_PER_LINE];
};

/*
 * Reads `size` bytes of the regular file `fd` as the current source with
 * ex->threads threads, each reading (pread) and scanning blocks of lines
 * while the blocks' results are applied in input order: facts, matches and
 * evidence come out exactly as from ncd_explain_feed() over the same bytes.
 * Returns 0, or a negative errno when a read failed (the lines before the
 * failing block were used).
 */
int ncd__explain_feed_fd(struct ncd_explain *ex, int fd, size_t size);
void ncd__rec_add(struct ncd_explain *ex, struct ncd__rec *rec,
                  const struct ncd_log_line *ll, uint32_t src,
                  uint64_t line);
void ncd__rec_release(struct ncd__rec *rec);
const char *ncd__src_name(const struct ncd_explain *ex, uint32_t src);

#endif
