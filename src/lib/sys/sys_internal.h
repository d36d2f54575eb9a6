/* SPDX-License-Identifier: MIT */
/* Internals of the system-operations layer (src/lib/sys).  Not public. */
#ifndef NCD_SYS_INTERNAL_H
#define NCD_SYS_INTERNAL_H

#include <time.h>

#include "ncd/sysops.h"

/* The tables (live.c, replay.c). */
extern const struct ncd_sysops ncd__sys_live;
extern const struct ncd_sysops ncd__sys_replay;

/* Record formats (records.c) beyond the public ones. */
void ncd__record_env_format(struct ncd_ctx *ctx, struct ncd_strbuf *out);
int ncd__record_statvfs_lookup(const char *buf, size_t len, const char *dir,
                               struct ncd_sys_space *out);
void ncd__record_statvfs_format(struct ncd_strbuf *out, const char *dir,
                                const struct ncd_sys_space *sp);
void ncd__record_dlopen_format(struct ncd_strbuf *out, const char *soname,
                               const struct ncd_dl_probe *p);
int ncd__record_nccl_version_parse(const char *buf, int *code);
void ncd__record_nccl_version_format(struct ncd_strbuf *out, int code);
int ncd__record_self_parse(const char *buf, struct ncd_sys_identity *out);
void ncd__record_self_format(struct ncd_strbuf *out,
                             const struct ncd_sys_identity *id);
/* 1 found (first address in addr), -1 recorded as unresolvable, 0 not
 * recorded. */
int ncd__record_resolve_lookup(const char *buf, size_t len, const char *name,
                               char *addr, size_t addrsz);
void ncd__record_resolve_format(struct ncd_strbuf *out, const char *host,
                                const struct ncd_if_addr *a);
void ncd__record_gather_info_format(struct ncd_strbuf *out, const char *tool,
                                    time_t when);
int ncd__listen_ports_parse(const char *buf, size_t len, int **ports,
                            size_t *n);


/* The resolve operation (resolve.c), as ncd_resolve_first() documents. */
int ncd__resolve_live(struct ncd_ctx *ctx, const char *name, int timeout_ms,
                      struct ncd_if_addr *out, char *why, size_t whylen);
int ncd__resolve_replay(struct ncd_ctx *ctx, const char *name, int timeout_ms,
                        struct ncd_if_addr *out, char *why, size_t whylen);

/* The nftables rule set through NETLINK_NETFILTER dumps (live_nft.c),
 * written as `nft -j list ruleset` JSON (the subset ports.c reads; other
 * expressions as {"name": null}).  *buf is malloc'ed, NUL-terminated.
 * @return 0, NCD_EPERM, NCD_ENOENT, NCD_ESYS, NCD_ERANGE (over 16 MiB),
 * NCD_ENOMEM. */
int ncd__nft_dump_json(struct ncd_ctx *ctx, char **buf, size_t *len);

/* NVML answers. */
void ncd__bdf_norm(const char *in, char *out);
int ncd__nvml_add_gpu(struct ncd_nvml_answer *a, const char *bdf,
                      const char *name);
int ncd__nvml_add_link(struct ncd_nvml_answer *a, const char *bdf,
                       const char *peer, int count);

/* The NVML entry points used, with NVML's C signatures (return value
 * nvmlReturn_t, 0 = success; handles are opaque pointers; the PCI info is
 * nvmlPciInfo_t, v3 layout), so tests can stand in for the library (the
 * live table comes from dlsym on libnvidia-ml.so.1). */
struct ncd__nvml_api {
    int (*init)(void);                            /* nvmlInit_v2 */
    int (*shutdown)(void);                        /* nvmlShutdown */
    int (*count)(unsigned *);                     /* nvmlDeviceGetCount_v2 */
    int (*handle)(unsigned, void **);             /* ..GetHandleByIndex_v2 */
    int (*name)(void *, char *, unsigned);        /* nvmlDeviceGetName */
    int (*pci)(void *, void *);                   /* ..GetPciInfo_v3 */
    int (*link_state)(void *, unsigned, int *);   /* ..GetNvLinkState */
    int (*link_remote)(void *, unsigned, void *); /* ..RemotePciInfo_v2 */
    int (*driver_version)(char *, unsigned);      /* ..GetDriverVersion */
    int (*cuda_version)(int *);                   /* ..CudaDriverVersion_v2 */
};

/* Asks NVML through `api` for its GPUs, their NVLinks (a peer that is not
 * one of NVML's GPUs counts as an NVSwitch) and the versions.  Returns 0 or
 * NCD_ENOMEM; NVML errors end in out->error with out->known = 0. */
int ncd__nvml_query(const struct ncd__nvml_api *api,
                    struct ncd_nvml_answer *out);

#endif
