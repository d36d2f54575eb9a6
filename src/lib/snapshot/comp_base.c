/* SPDX-License-Identifier: MIT */
/* Components: environment, system identity, platform, shared memory and
 * limits, container, libraries (see ncd/node.h). */
#define _GNU_SOURCE
#include "ncd/error.h"
#include "ncd/knownbugs.h"
#include "ncd/fs.h"
#include "ncd/node.h"
#include "snapshot/snapshot_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* NCCL reads its config files at init, under the environment (NCCL
 * src/misc/param.cc): applied to the context's copy, then copied. */
int ncd__comp_env(struct ncd_ctx *ctx, const struct ncd_node_opts *o,
                  struct ncd_node *n)
{
    (void)o;
    int rc = ncd_nccl_conf_apply(ctx, &n->env.conf);
    if (rc < 0)
        return rc;
    size_t cnt = ncd_env_count(ctx);
    n->env.v = calloc(cnt + 1, sizeof *n->env.v);
    if (!n->env.v)
        return NCD_ENOMEM;
    for (size_t i = 0; i < cnt; i++) {
        const char *name, *value;
        ncd_env_at(ctx, i, &name, &value);
        n->env.v[i].name = strdup(name);
        n->env.v[i].value = strdup(value);
        n->env.n++;
        if (!n->env.v[i].name || !n->env.v[i].value)
            return NCD_ENOMEM;
    }
    return 0;
}

int ncd__comp_catalog(struct ncd_ctx *ctx, const struct ncd_node_opts *o,
                      struct ncd_node *n)
{
    (void)o;
    int rc = ncd_var_catalog_builtin(ctx, &n->catalog);
    if (rc < 0)
        return rc;
    rc = ncd_known_bugs_builtin(ctx, &n->known_bugs);
    return rc == NCD_ENOENT ? 0 : rc;
}

int ncd__comp_system(struct ncd_ctx *ctx, const struct ncd_node_opts *o,
                     struct ncd_node *n)
{
    ncd_sys_hostname(ctx, n->sys.host, sizeof n->sys.host);
    n->sys.live = ncd_ctx_is_live(ctx);
    snprintf(n->sys.sysroot, sizeof n->sys.sysroot, "%s", ncd_ctx_sysroot(ctx));
    n->sys.where = ncd_sys_where(ctx);
    n->sys.answers_visible = ncd_sys_answers_visible(ctx);
    ncd_sys_identity(ctx, &n->sys.id);
    return ncd_nccl_target(ctx, o->nccl_version, &n->sys.nccl_version,
                           n->sys.nccl_version_source,
                           sizeof n->sys.nccl_version_source);
}

int ncd__comp_platform(struct ncd_ctx *ctx, const struct ncd_node_opts *o,
                       struct ncd_node *n)
{
    (void)o;
    ncd_virt_probe(ctx, &n->platform.virt);
    return ncd_iommu_probe(ctx, &n->platform.iommu);
}

/* ---- shared memory, IPC, limits ------------------------------------------- */

/* systemd-logind's RemoveIPC: logind.conf, then the drop-ins in order;
 * the last assignment wins. */
static void removeipc(struct ncd_ctx *ctx, int *val, char *src, size_t srcsz)
{
    *val = -1;
    src[0] = '\0';
    char *buf;
    size_t len;
    if (ncd_fs_read(ctx, "/etc/systemd/logind.conf", 1 << 20, &buf, &len) == 0) {
        int v = ncd_logind_removeipc(buf, len);
        if (v >= 0) {
            *val = v;
            snprintf(src, srcsz, "/etc/systemd/logind.conf");
        }
        free(buf);
    }
    char **names;
    int cnt = ncd_fs_list(ctx, "/etc/systemd/logind.conf.d", &names);
    for (int i = 0; i < cnt; i++) {
        char p[300];
        snprintf(p, sizeof p, "/etc/systemd/logind.conf.d/%s", names[i]);
        if (ncd_fs_read(ctx, p, 1 << 20, &buf, &len) == 0) {
            int v = ncd_logind_removeipc(buf, len);
            if (v >= 0) {
                *val = v;
                snprintf(src, srcsz, "%s", p);
            }
            free(buf);
        }
    }
    if (cnt >= 0)
        ncd_fs_list_free(names, cnt);
    ncd_ctx_clear_error(ctx);
}

/* The memlock lines of limits.conf and limits.d (evidence for a finding). */
static int limits_conf(struct ncd_ctx *ctx, struct ncd_node *n)
{
    const char *files[40];
    char paths[32][300];
    int nf = 0, rc = 0;
    files[nf++] = "/etc/security/limits.conf";
    char **names;
    int cnt = ncd_fs_list(ctx, "/etc/security/limits.d", &names);
    for (int i = 0; i < cnt && nf < 33; i++) {
        snprintf(paths[nf - 1], sizeof paths[0], "/etc/security/limits.d/%s",
                 names[i]);
        files[nf] = paths[nf - 1];
        nf++;
    }
    for (int i = 0; i < nf && rc == 0; i++) {
        char *buf;
        size_t len;
        if (ncd_fs_read(ctx, files[i], 1 << 20, &buf, &len) < 0)
            continue;
        for (char *save = NULL, *l = strtok_r(buf, "\n", &save); l && !rc;
             l = strtok_r(NULL, "\n", &save)) {
            while (*l == ' ' || *l == '\t')
                l++;
            if (*l != '#' && strstr(l, "memlock")) {
                char line[500];
                snprintf(line, sizeof line, "%s: %.150s", files[i], l);
                rc = ncd__strlist_add(&n->shm.limits_lines,
                                      &n->shm.n_limits_lines, line);
            }
        }
        free(buf);
    }
    if (cnt >= 0)
        ncd_fs_list_free(names, cnt);
    ncd_ctx_clear_error(ctx);
    return rc;
}

int ncd__comp_shm(struct ncd_ctx *ctx, const struct ncd_node_opts *o,
                  struct ncd_node *n)
{
    (void)o;
    ncd_shm_probe(ctx, &n->shm.shm);
    n->shm.proc_mounts = ncd_fs_exists(ctx, "/proc/mounts");
    removeipc(ctx, &n->shm.removeipc, n->shm.removeipc_src,
              sizeof n->shm.removeipc_src);
    n->shm.systemd = ncd_fs_exists(ctx, "/etc/systemd/logind.conf") ||
                     ncd_fs_exists(ctx, "/run/systemd/system");
    char *buf;
    size_t len;
    if (ncd_fs_read(ctx, "/proc/self/limits", 1 << 16, &buf, &len) == 0) {
        ncd_limits_parse(buf, len, "Max locked memory", &n->shm.memlock);
        free(buf);
    }
    if (ncd_fs_read(ctx, "/proc/self/status", 1 << 16, &buf, &len) == 0) {
        n->shm.cap_known = ncd_status_capeff(buf, len, &n->shm.capeff);
        free(buf);
    }
    ncd_ctx_clear_error(ctx);
    return limits_conf(ctx, n);
}

int ncd__comp_container(struct ncd_ctx *ctx, const struct ncd_node_opts *o,
                        struct ncd_node *n)
{
    (void)o;
    return ncd_container_probe(ctx, &n->platform.virt, &n->container);
}

/* ---- libraries ------------------------------------------------------------- */

int ncd__comp_libs(struct ncd_ctx *ctx, const struct ncd_node_opts *o,
                   struct ncd_node *n)
{
    (void)o;
    int rc = ncd_nccl_scan(ctx, &n->libs.scan);
    if (rc < 0)
        return rc;
    /* Paddle dlopens <FLAGS_nccl_dir>/libnccl.so. */
    const char *fdir = ncd_getenv(ctx, "FLAGS_nccl_dir");
    n->libs.flags_dir_ok = -1;
    if (fdir && *fdir) {
        char p[600];
        snprintf(p, sizeof p, "%s/libnccl.so", fdir);
        n->libs.flags_dir_ok = ncd_fs_exists(ctx, p);
    }
    n->libs.cuda_driver = ncd_sys_cuda_driver(ctx, n->libs.cuda_src,
                                              sizeof n->libs.cuda_src);
    ncd_ctx_clear_error(ctx);
    return 0;
}
