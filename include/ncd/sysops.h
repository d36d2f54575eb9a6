/* SPDX-License-Identifier: MIT */
/**
 * @file sysops.h
 * @brief Recorded answers as one layer: every system answer a probe needs
 *        that is not a file (getifaddrs, statvfs, dlopen, uid, NVML,
 *        firewall rules, host name, listening sockets, name resolution...)
 *        goes through one table of operations in the context.
 *
 * Files are read through the sysroot (fs.h); everything else through the
 * functions below, which dispatch to the context's operations table:
 *  - live:   this machine (getifaddrs(3), statvfs(2), dlopen(3), NVML,
 *            getaddrinfo(3)...);
 *  - replay: a recorded tree: the answers `gather` wrote under
 *            <sysroot>/.ncd/ (formats: the "Records" section below, all
 *            implemented in src/lib/sys/records.c);
 *  - record: live (or replay) plus a copy of every answer given, which
 *            `gather` writes into the capture.  So gather is the same
 *            probe run with the record table (ncd_sys_record_begin()).
 * The default table is chosen from the sysroot: "/" is live, anything else
 * replay (ncd_ctx_is_live()).  This is the only place that branches on
 * live versus capture; probes and checks never do.
 *
 * Error reporting: operations return 0 or a negative NCD_E* code with the
 * detail in the context (error.h).  "Not recorded in this capture" is not
 * an error: the answer's `known` field is 0 and `why` says so.
 * Sources of the facts encoded are given per operation.
 */
#ifndef NCD_SYSOPS_H
#define NCD_SYSOPS_H

#include <stddef.h>

#include "ncd/ctx.h"
#include "ncd/netaddr.h"
#include "ncd/strbuf.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- answers ------------------------------------------------------------- */

/** Link-layer flags of one interface (getifaddrs' AF_PACKET entry). */
struct ncd_sys_linkflags {
    char name[NCD_IFNAME_MAX + 8];
    unsigned flags; /**< IFF_*, including RUNNING and LOWER_UP */
};

/** The getifaddrs() answer. */
struct ncd_sys_ifaddrs {
    int known;                      /**< 0: not recorded (replay) */
    struct ncd_ifaddr_entry *v;     /**< AF_INET/AF_INET6 entries, in
                                         getifaddrs order; owned */
    size_t n;
    int link_known;                 /**< the link flags below are real
                                         (live); a recording has none */
    struct ncd_sys_linkflags *link; /**< AF_PACKET entries; owned */
    size_t n_link;
};

/** Frees an ifaddrs answer's arrays; it is empty afterwards. */
void ncd_sys_ifaddrs_release(struct ncd_sys_ifaddrs *a);

/** Size of a file system (statvfs(2): f_blocks / f_bavail x f_frsize). */
struct ncd_sys_space {
    int known;            /**< 0: not answerable (missing, not recorded) */
    const char *source;   /**< "statvfs" or ".ncd/statvfs"; static */
    long long size_bytes;
    long long avail_bytes;
};

/** Result of trying to load a shared library (live or recorded). */
struct ncd_dl_probe {
    int known;          /**< 0: not visible (recorded tree lacks it) */
    int ok;             /**< loadable */
    char detail[320];   /**< resolved path, or the dlerror text */
};

/** The libnccl.so.2 this process would load and its version, read from
 *  the file without loading it. */
struct ncd_nccl_lib {
    int found;         /**< 1 when the file was found and its version read */
    int loaded;        /**< 1 for a live answer (the file the dynamic
                            loader would pick); 0 for a recorded version */
    int version;       /**< version code (version.h), 0 when unknown */
    char path[512];    /**< file the dynamic loader would load, if known */
    char cuda[16];     /**< CUDA it was built for ("12.9"), "" unknown */
    char error[256];   /**< why not found, "" when found */
};

/** One libnccl file found by the library scan (libs.h). */
struct ncd_nccl_file {
    char path[512];    /**< as found ("/usr/lib/x86_64-linux-gnu/libnccl.so.2") */
    char real[512];    /**< symlinks resolved */
    char origin[40];   /**< "LD_LIBRARY_PATH", "ld.so.cache", "system",
                            "CUDA", "conda", "site-packages",
                            "FLAGS_nccl_dir", "dlopen" */
    int version;       /**< version code (version.h), 0 unknown */
    char cuda[16];     /**< CUDA it was built for ("12.4"), "" unknown */
};

/** Every libnccl a process could load, and the loader's pick. */
struct ncd_nccl_scan {
    struct ncd_nccl_file *v; /**< owned; one entry per real file */
    size_t n;
    int winner;        /**< index of dlopen("libnccl.so.2")'s pick, -1 */
    char winner_why[96]; /**< "first in LD_LIBRARY_PATH", "ld.so.cache"... */
    int recorded;      /**< came from .ncd/nccl-libs */
    int visible;       /**< 0: recorded tree without .ncd/nccl-libs */
};

/** Frees a scan's contents. */
void ncd_nccl_scan_release(struct ncd_nccl_scan *s);

/**
 * The scanner a probe hands to ncd_sys_nccl_libs() (libs.c): fills `out`
 * from the files under the sysroot.  @return 0 or NCD_ENOMEM.
 */
typedef int (*ncd_sys_scan_fn)(struct ncd_ctx *ctx, struct ncd_nccl_scan *out);

/** One NVLink answer: `count` active links from GPU `bdf` to `peer`. */
struct ncd_nvml_link {
    char bdf[16];
    char peer[16]; /**< a GPU's PCI address, or "" for an NVSwitch (or any
                        peer that is not a GPU NVML enumerates) */
    int count;
};

/** What NVML says (nvmlInit_v2 ... nvmlDeviceGetNvLinkRemotePciInfo_v2). */
struct ncd_nvml_answer {
    int known;              /**< 1: NVML (live or recorded) answered */
    char source[32];        /**< "NVML" or ".ncd/nvml" */
    char error[128];        /**< why not ("libnvidia-ml.so.1 not loadable:
                                 ...", "not visible in this capture ...") */
    char driver[32];        /**< nvmlSystemGetDriverVersion, "" unknown */
    int cuda;               /**< nvmlSystemGetCudaDriverVersion_v2, 0 */
    size_t n_gpu;
    struct {
        char bdf[16];       /**< lower case, 4-digit domain */
        char name[96];      /**< nvmlDeviceGetName, "" unknown */
    } *gpu;                 /**< owned */
    size_t n_link;
    struct ncd_nvml_link *link; /**< owned */
};

/** Frees an NVML answer's arrays. */
void ncd_nvml_answer_release(struct ncd_nvml_answer *a);

/** Who the probing process is. */
struct ncd_sys_identity {
    int known;
    long uid;  /**< real uid (getuid(2)), -1 unknown */
};

/* ---- operations ------------------------------------------------------------ */

/**
 * getifaddrs(3): the AF_INET/AF_INET6 entries in the order glibc returns
 * them (the order NCCL walks) and the AF_PACKET link flags.  Replay: the
 * .ncd/ifaddrs record.  Release with ncd_sys_ifaddrs_release().
 * @return 0, NCD_ESYS (getifaddrs failed; detail), NCD_EPARSE (a bad
 *         record line; detail), NCD_ENOMEM.
 */
int ncd_sys_getifaddrs(struct ncd_ctx *ctx, struct ncd_sys_ifaddrs *out);

/** statvfs(2) of `dir` ("/dev/shm").  Replay: .ncd/statvfs.  Always 0
 *  (out->known says whether it answered). */
int ncd_sys_statvfs(struct ncd_ctx *ctx, const char *dir,
                    struct ncd_sys_space *out);

/**
 * Whether `soname` can be dlopen'ed: dlopen(RTLD_LAZY|RTLD_LOCAL) then
 * dlclose, with the path from dlinfo.  Replay: the .ncd/dlopen line.
 * @return 0 or NCD_ENOMEM.
 */
int ncd_sys_dlopen(struct ncd_ctx *ctx, const char *soname,
                   struct ncd_dl_probe *out);

/**
 * The file dlopen(soname) would load in a program without RPATH/RUNPATH,
 * in ld.so(8)'s order: the first LD_LIBRARY_PATH directory holding it,
 * its /etc/ld.so.cache entry (when the file exists), the default
 * directories (glibc's multiarch ones first).  Reads through the context
 * (the sysroot on replay).  `why` receives a static text naming the rule
 * that picked it.  dlopen() of the path found loads what dlopen(soname)
 * would, without ld.so opening /etc/ld.so.cache again or walking its ~40
 * directories when the library is not there (live.c's dlopen answers).
 * @return 1 found (path filled), 0 none, NCD_ENOMEM.
 */
int ncd_sys_loader_pick(struct ncd_ctx *ctx, const char *soname, char *path,
                        size_t len, const char **why);

/**
 * The libnccl.so.2 an application's dlopen("libnccl.so.2") would load and
 * its version, without dlopen (the file is 200+ MB): live, the dynamic
 * loader's order for a program without RPATH (ld.so(8): LD_LIBRARY_PATH,
 * /etc/ld.so.cache, the default directories) and the version string NCCL
 * compiles into .rodata (VERSION_STRING, NCCL src/init.cc, the number
 * ncclGetVersion() returns).  Replay: .ncd/nccl-version ("2.21.5").
 * Answered once per context and operations table (later calls copy the
 * first answer).  @return 0 (see out->found) or NCD_ENOMEM.
 */
int ncd_sys_nccl_version(struct ncd_ctx *ctx, struct ncd_nccl_lib *out);

/**
 * The libnccl scan: `scan` run on the files (live, or a replayed tree that
 * has no .ncd/nccl-libs), else the .ncd/nccl-libs record.
 * @return what `scan` returns, or NCD_ENOMEM.
 */
int ncd_sys_nccl_libs(struct ncd_ctx *ctx, ncd_sys_scan_fn scan,
                      struct ncd_nccl_scan *out);

/**
 * CUDA driver API version (cuDriverGetVersion style, 12040) from
 * libcuda.so.1; replay: the "cuda" line of .ncd/nvml.
 * @param src  receives where it came from ("cuDriverGetVersion()",
 *             ".ncd/nvml", "libcuda.so.1 not loadable", "not visible in
 *             this capture").
 * @return the version, 0 when unknown.
 */
int ncd_sys_cuda_driver(struct ncd_ctx *ctx, char *src, size_t srcsz);

/**
 * NVML's GPUs and NVLinks (libnvidia-ml.so.1 via dlopen; nvmlInit costs
 * 0.1 s to seconds on a GPU node without the persistence daemon).  Replay:
 * .ncd/nvml.  Release with ncd_nvml_answer_release().
 * @return 0 or NCD_ENOMEM (NVML failures end in out->error).
 */
int ncd_sys_nvml(struct ncd_ctx *ctx, struct ncd_nvml_answer *out);

/** 1 when ncd_sys_nvml() is slow here (live NVML), 0 when it is a file
 *  read (replay). */
int ncd_sys_nvml_costly(struct ncd_ctx *ctx);

/**
 * The nftables rule set in the JSON schema of `nft -j list ruleset` (live:
 * NFT_MSG_GETTABLE/GETCHAIN/GETSET/GETSETELEM/GETRULE netlink dumps
 * decoded with libnftnl, root only; the expressions the firewall analysis
 * reads come back as nft's matches, others as {"name": null}).  Replay:
 * .ncd/nft.json (gather records this answer; `nft -j` output reads the
 * same).  timeout_ms is unused live (the kernel answers, no peer).
 * @param buf   receives a malloc'ed NUL-terminated copy; caller frees.
 * @param src   receives the source ("netlink: nftables rule set",
 *              ".ncd/nft.json").
 * @return 0, NCD_ENOENT (no nft / not recorded: detail "no nftables rule
 *         set in this capture"), NCD_EPERM (not root), NCD_ETIMEOUT,
 *         NCD_ESYS, NCD_ENOMEM.
 */
int ncd_sys_firewall(struct ncd_ctx *ctx, int timeout_ms, char **buf,
                     size_t *len, char *src, size_t srcsz);

/** The host name: gethostname(2); replay: /proc/sys/kernel/hostname, else
 *  /etc/hostname, else "unknown".  Sanitised to UTF-8.  Always 0. */
int ncd_sys_hostname(struct ncd_ctx *ctx, char *buf, size_t len);

/** This machine's host name whatever the context (for ranks, which always
 *  run here): gethostname(2), "unknown" when it fails; NUL-terminated. */
void ncd_sys_live_hostname(char *buf, size_t len);

/** The probing process: getuid(2); replay: .ncd/self ("uid N").  Always 0. */
int ncd_sys_identity(struct ncd_ctx *ctx, struct ncd_sys_identity *out);

/**
 * TCP ports in state LISTEN on this node, sorted, with duplicates.  Live:
 * sock_diag netlink (SOCK_DIAG_BY_FAMILY, inet_diag_req_v2 for AF_INET and
 * AF_INET6 with the LISTEN state bit; linux/inet_diag.h), which walks only
 * the listening hash where reading /proc/net/tcp walks every connection
 * (9 ms on a busy host); the files where netlink cannot answer.  Replay:
 * /proc/net/tcp and /proc/net/tcp6 (state 0A) through the sysroot, which
 * gather copies keeping only their LISTEN lines.
 * @param ports  receives a malloc'ed array (NULL when none); caller frees.
 * @return the count, or NCD_ENOMEM.
 */
int ncd_sys_listen_ports(struct ncd_ctx *ctx, int **ports);

/**
 * Tries to listen on `addr` port 0, as NCCL's bootstrap does.  Live only:
 * replay gives NCD_ENOTLIVE.
 * @param port  receives the port the kernel gave.
 * @return 0, or a negative NCD_E* with the detail in the context.
 */
int ncd_sys_bind_test(struct ncd_ctx *ctx, int family, const char *addr,
                      int scope_id, int *port);

/* Name resolution: ncd_resolve_first() in resolve.h (live getaddrinfo with
 * a deadline; replay: numeric forms, .ncd/resolve, /etc/hosts). */

/**
 * Whether recorded answers can be expected: 1 live (the system answers),
 * 1 for a capture with a .ncd/ directory, 0 for a foreign tree (an
 * hwloc-gather-topology capture, a hand-made fixture), where a missing
 * file proves nothing.
 */
int ncd_sys_answers_visible(struct ncd_ctx *ctx);

/** Text for messages about unknowns: "" live, " in this capture" replay. */
const char *ncd_sys_where(struct ncd_ctx *ctx);

/**
 * For work that acts on this machine (opening sockets to other ranks,
 * starting processes): 0 live; on a capture NCD_ENOTLIVE with the detail
 * "<what>: it cannot run on a recorded sysroot".
 */
int ncd_sys_require_live(struct ncd_ctx *ctx, const char *what);

/* ---- recording ------------------------------------------------------------- */

/**
 * Switches the context to the record table on top of its current one:
 * every later answer is also kept.  Recorded now: the environment
 * (NCCL_*, CUDA_*, launcher variables; secrets redacted) as .ncd/env, and
 * `tool` (e.g. "nccl-doctor 0.1.0") with the time as .ncd/gather-info
 * ("tool <tool>" and "time <UTC ISO 8601>" lines).
 * @return 0, NCD_EEXISTS (already recording), NCD_ENOMEM.
 */
int ncd_sys_record_begin(struct ncd_ctx *ctx, const char *tool);

/**
 * Calls `fn` for every record kept (name without ".ncd/", content), in a
 * stable order.  @return 0, NCD_ENOMEM, or what `fn` returned (< 0 stops).
 */
int ncd_sys_record_each(struct ncd_ctx *ctx,
                        int (*fn)(void *arg, const char *name,
                                  const char *data, size_t len),
                        void *arg);

/* ---- the table ------------------------------------------------------------- */

/** The operations behind the functions above.  Tests may install their own
 *  with ncd_ctx_set_sysops() (unset members fall back to the default). */
struct ncd_sysops {
    const char *name; /**< "live", "replay", "record" */
    int (*getifaddrs)(struct ncd_ctx *, struct ncd_sys_ifaddrs *);
    int (*statvfs)(struct ncd_ctx *, const char *, struct ncd_sys_space *);
    int (*dlopen)(struct ncd_ctx *, const char *, struct ncd_dl_probe *);
    int (*nccl_version)(struct ncd_ctx *, struct ncd_nccl_lib *);
    int (*nccl_libs)(struct ncd_ctx *, ncd_sys_scan_fn, struct ncd_nccl_scan *);
    int (*cuda_driver)(struct ncd_ctx *, char *, size_t);
    int (*nvml)(struct ncd_ctx *, struct ncd_nvml_answer *);
    int (*firewall)(struct ncd_ctx *, int, char **, size_t *, char *, size_t);
    int (*hostname)(struct ncd_ctx *, char *, size_t);
    int (*identity)(struct ncd_ctx *, struct ncd_sys_identity *);
    int (*listen_ports)(struct ncd_ctx *, int **);
    int (*bind_test)(struct ncd_ctx *, int, const char *, int, int *);
    int (*resolve)(struct ncd_ctx *, const char *, int, struct ncd_if_addr *,
                   char *, size_t);
    int nvml_costly;      /**< see ncd_sys_nvml_costly() */
    int answers_visible;  /**< -1: ask the sysroot for .ncd/ (replay) */
    const char *where;    /**< see ncd_sys_where() */
};

/** The table in use for this context (the default when none was set). */
const struct ncd_sysops *ncd_sys(struct ncd_ctx *ctx);

/* ---- records (.ncd/ formats, all in src/lib/sys/records.c) ----------------- */

/**
 * .ncd/env: "NAME=value" lines (also NUL-separated; blank lines and '#'
 * lines skipped; the first definition of a name wins).  Replaces the whole
 * environment copy of the context.
 * @return the number of variables loaded, or NCD_ENOMEM / NCD_EPARSE (a
 *         line without '='; the detail names the line).  On error the
 *         previous environment is kept.
 */
int ncd_ctx_load_env(struct ncd_ctx *ctx, const char *buf, size_t len);

/** Whether a variable belongs in .ncd/env (NCCL_*, CUDA_*, LD_LIBRARY_PATH,
 *  LD_PRELOAD, launcher and framework variables).  Pure. */
int ncd_gather_env_wanted(const char *name);

/** Whether a variable's value is recorded as "<redacted>": names containing
 *  TOKEN, SECRET, PASSWORD, PASSWD, KEY or CREDENTIAL (case-insensitive),
 *  where the KEY of an InfiniBand partition key "IB_PKEY" (NCCL_IB_PKEY,
 *  UCX_IB_PKEY, OMPI_MCA_btl_openib_pkey) does not count.  Pure. */
int ncd_env_is_secret(const char *name);

struct ncd_strbuf;

/**
 * Appends `value` of variable `name` as nccl-doctor writes any value down
 * (.ncd/env, perf's -J "env"): "<redacted>" when ncd_env_is_secret(name);
 * else the value with the user information of every URL or host spec
 * that carries credentials replaced by "<redacted>":
 * "https://user:pass@host/x" -> "https://<redacted>@host/x",
 * "s3://TOKEN@bucket" -> "s3://<redacted>@bucket", "user:pw@host:29500"
 * -> "<redacted>@host:29500".  An '@' inside a path or a plain
 * "user@host" is kept.  `name` may be NULL (value only).  Pure.
 */
void ncd_env_redact(const char *name, const char *value,
                    struct ncd_strbuf *out);

/**
 * .ncd/ifaddrs: one getifaddrs() entry per line, in getifaddrs order,
 * AF_INET/AF_INET6 only:
 *     <ifa_name> <inet|inet6> <address> <prefixlen> <ifa_flags in hex>
 * e.g. "eth0 inet 10.0.0.5 24 0x11043".  '#' starts a comment line.  IPv6
 * link-local addresses may carry "%<scope>" as getnameinfo prints them.
 * @param entries  receives a malloc'ed array; caller frees with free().
 * @return the number of entries, or NCD_EPARSE (detail names the line) /
 *         NCD_ENOMEM.
 */
int ncd_ifaddrs_parse(struct ncd_ctx *ctx, const char *buf, size_t len,
                      struct ncd_ifaddr_entry **entries);

/** Appends entries in the .ncd/ifaddrs format. */
void ncd_ifaddrs_format(struct ncd_strbuf *out,
                        const struct ncd_ifaddr_entry *e, size_t n);

/**
 * .ncd/dlopen: one line per library, "<name> ok <resolved path>" or
 * "<name> missing <dlerror text>"; looks up `soname`.  Pure.
 * @return 1 found (out filled), 0 not listed.
 */
int ncd_dl_record_lookup(const char *buf, size_t len, const char *soname,
                         struct ncd_dl_probe *out);

/**
 * .ncd/nccl-libs: "lib <version|?> <cuda|?> <origin> <path>" per file and
 * "winner <path>".  Parses into `s` (appending).  @return 0 or NCD_ENOMEM.
 */
int ncd_nccl_scan_parse(const char *buf, size_t len, struct ncd_nccl_scan *s);

/** Writes a scan in the .ncd/nccl-libs format. */
void ncd_nccl_scan_format(const struct ncd_nccl_scan *s,
                          struct ncd_strbuf *out);

/**
 * .ncd/nvml, one record a line:
 *   driver <version>              e.g. "driver 535.104.05"
 *   cuda <driver API version>     e.g. "cuda 12020" (cuDriverGetVersion)
 *   gpu <bdf> <name...>
 *   nvlink <bdf> <peer bdf | nvswitch> <active links>
 *   error <text>                  NVML could not be used while gathering
 * NVML bus ids ("00000000:07:00.0") are normalised to 4-digit domains.
 * @return 0, NCD_EPARSE (a bad gpu/nvlink line; detail), NCD_ENOMEM.
 */
int ncd_nvml_parse(struct ncd_ctx *ctx, const char *buf, size_t len,
                   struct ncd_nvml_answer *out);

/** Writes an NVML answer in the .ncd/nvml format. */
void ncd_nvml_format(const struct ncd_nvml_answer *a, struct ncd_strbuf *out);

/**
 * Counts LISTEN sockets (state 0A) on local TCP `port` in a /proc/net/tcp
 * or /proc/net/tcp6 buffer (port -1: every LISTEN line).  Pure.
 */
int ncd_proc_net_tcp_listeners(const char *buf, size_t len, int port);

#ifdef __cplusplus
}
#endif
#endif
