/* SPDX-License-Identifier: MIT */
/* The replay system operations: a recorded tree answers from the records
 * `gather` wrote under <sysroot>/.ncd/ (formats: records.c). */
#define _GNU_SOURCE
#include "ncd/error.h"
#include "ncd/fs.h"
#include "ncd/sysops.h"
#include "ncd/version.h"
#include "sys/sys_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Reads a record; NULL (and the error cleared) when it is not there. */
static char *record(struct ncd_ctx *ctx, const char *name, size_t max,
                    size_t *len, int *rc)
{
    char path[64], *buf;
    snprintf(path, sizeof path, "/.ncd/%s", name);
    *rc = ncd_fs_read(ctx, path, max, &buf, len);
    if (*rc == NCD_ENOMEM)
        return NULL;
    if (*rc < 0) {
        ncd_ctx_clear_error(ctx);
        return NULL;
    }
    return buf;
}

static int replay_getifaddrs(struct ncd_ctx *ctx, struct ncd_sys_ifaddrs *out)
{
    char *buf;
    size_t len;
    int rc = ncd_fs_read(ctx, "/.ncd/ifaddrs", 1 << 20, &buf, &len);
    if (rc == NCD_ENOENT) {
        ncd_ctx_clear_error(ctx);
        return 0; /* not captured: addresses unknown */
    }
    if (rc < 0)
        return rc;
    rc = ncd_ifaddrs_parse(ctx, buf, len, &out->v);
    free(buf);
    if (rc < 0)
        return rc;
    out->n = (size_t)rc;
    out->known = 1;
    return 0;
}

static int replay_statvfs(struct ncd_ctx *ctx, const char *dir,
                          struct ncd_sys_space *out)
{
    size_t len;
    int rc;
    char *buf = record(ctx, "statvfs", 1 << 16, &len, &rc);
    if (buf)
        ncd__record_statvfs_lookup(buf, len, dir, out);
    free(buf);
    return rc == NCD_ENOMEM ? rc : 0;
}

static int replay_dlopen(struct ncd_ctx *ctx, const char *soname,
                         struct ncd_dl_probe *out)
{
    size_t len;
    int rc;
    char *buf = record(ctx, "dlopen", 1 << 20, &len, &rc);
    if (buf)
        ncd_dl_record_lookup(buf, len, soname, out);
    free(buf);
    return rc == NCD_ENOMEM ? rc : 0;
}

static int replay_nccl_version(struct ncd_ctx *ctx, struct ncd_nccl_lib *out)
{
    size_t len;
    int rc;
    char *buf = record(ctx, "nccl-version", 1 << 16, &len, &rc);
    if (buf && ncd__record_nccl_version_parse(buf, &out->version) == 0) {
        out->found = 1;
        snprintf(out->path, sizeof out->path,
                 "recorded in the capture: /.ncd/nccl-version");
    } else {
        snprintf(out->error, sizeof out->error,
                 "no /.ncd/nccl-version in this capture");
    }
    free(buf);
    return rc == NCD_ENOMEM ? rc : 0;
}

static int replay_nccl_libs(struct ncd_ctx *ctx, ncd_sys_scan_fn scan,
                            struct ncd_nccl_scan *out)
{
    size_t len;
    int rc;
    char *buf = record(ctx, "nccl-libs", 1 << 20, &len, &rc);
    if (!buf) {
        /* a hand-made tree may still hold library files: scan it; a capture
         * without the record does not show what the node had */
        if (rc == NCD_ENOMEM || (rc = scan(ctx, out)) < 0)
            return rc;
        out->visible = 0;
        return 0;
    }
    out->recorded = out->visible = 1;
    rc = ncd_nccl_scan_parse(buf, len, out);
    free(buf);
    return rc;
}

static int replay_cuda_driver(struct ncd_ctx *ctx, char *src, size_t srcsz)
{
    size_t len;
    int rc, v = 0;
    char *buf = record(ctx, "nvml", 1 << 20, &len, &rc);
    if (!buf) {
        snprintf(src, srcsz, "not visible in this capture");
        return 0;
    }
    const char *p = strstr(buf, "\ncuda ");
    if (!p && strncmp(buf, "cuda ", 5) == 0)
        p = buf - 1;
    if (p)
        v = atoi(p + 6);
    free(buf);
    snprintf(src, srcsz, ".ncd/nvml");
    return v;
}

static int replay_nvml(struct ncd_ctx *ctx, struct ncd_nvml_answer *out)
{
    size_t len;
    int rc;
    snprintf(out->source, sizeof out->source, ".ncd/nvml");
    char *buf = record(ctx, "nvml", 1 << 20, &len, &rc);
    if (!buf) {
        snprintf(out->error, sizeof out->error,
                 "not visible in this capture (no .ncd/nvml)");
        return rc == NCD_ENOMEM ? rc : 0;
    }
    rc = ncd_nvml_parse(ctx, buf, len, out);
    free(buf);
    if (rc == NCD_ENOMEM)
        return rc;
    if (rc < 0) {
        snprintf(out->error, sizeof out->error, "%.120s",
                 ncd_ctx_errdetail(ctx));
        out->known = 0;
        ncd_ctx_clear_error(ctx);
    }
    return 0;
}

static int replay_firewall(struct ncd_ctx *ctx, int timeout_ms, char **buf,
                           size_t *len, char *src, size_t srcsz)
{
    (void)timeout_ms;
    snprintf(src, srcsz, ".ncd/nft.json");
    int rc = ncd_fs_read(ctx, "/.ncd/nft.json", 16u << 20, buf, len);
    if (rc == NCD_ENOMEM)
        return rc;
    if (rc < 0) {
        ncd_ctx_clear_error(ctx);
        return ncd_fail(ctx, NCD_ENOENT, "no nftables rule set in this capture");
    }
    return 0;
}

static int replay_hostname(struct ncd_ctx *ctx, char *buf, size_t len)
{
    if (ncd_fs_read_str(ctx, "/proc/sys/kernel/hostname", buf, len) < 0 &&
        ncd_fs_read_str(ctx, "/etc/hostname", buf, len) < 0)
        snprintf(buf, len, "unknown");
    ncd_ctx_clear_error(ctx);
    return 0;
}

static int replay_identity(struct ncd_ctx *ctx, struct ncd_sys_identity *out)
{
    char s[128];
    if (ncd_fs_read_str(ctx, "/.ncd/self", s, sizeof s) == 0)
        ncd__record_self_parse(s, out);
    ncd_ctx_clear_error(ctx);
    return 0;
}

int ncd__sys_listen_ports_files(struct ncd_ctx *ctx, int **ports);

static int replay_bind_test(struct ncd_ctx *ctx, int family, const char *addr,
                            int scope_id, int *port)
{
    (void)family, (void)addr, (void)scope_id, (void)port;
    return ncd_fail(ctx, NCD_ENOTLIVE, "bind test needs the live node");
}

const struct ncd_sysops ncd__sys_replay = {
    .name = "replay",
    .getifaddrs = replay_getifaddrs,
    .statvfs = replay_statvfs,
    .dlopen = replay_dlopen,
    .nccl_version = replay_nccl_version,
    .nccl_libs = replay_nccl_libs,
    .cuda_driver = replay_cuda_driver,
    .nvml = replay_nvml,
    .firewall = replay_firewall,
    .hostname = replay_hostname,
    .identity = replay_identity,
    .listen_ports = ncd__sys_listen_ports_files,
    .bind_test = replay_bind_test,
    .resolve = ncd__resolve_replay,
    .nvml_costly = 0,
    .answers_visible = -1,
    .where = " in this capture",
};
