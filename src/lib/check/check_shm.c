/* SPDX-License-Identifier: MIT */
/* Checks: /dev/shm and RemoveIPC (shm), container runtime (container),
 * locked-memory limit (memlock).  NCCL facts: nccl-facts.md §6; the /dev/shm
 * formula and its source are in include/ncd/shm.h. */
#define _GNU_SOURCE
#include "ncd/check.h"
#include "check/check_internal.h"
#include "ncd/container.h"
#include "ncd/error.h"
#include "node/node_internal.h"
#include "ncd/fs.h"
#include "ncd/pci.h"
#include "ncd/recommend.h"
#include "ncd/shm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int ncd_check_shm(struct ncd_ctx *ctx, const struct ncd_check_opts *opts,
                  struct ncd_findings *out, json_t *facts);
int ncd_check_container(struct ncd_ctx *ctx, const struct ncd_check_opts *opts,
                        struct ncd_findings *out, json_t *facts);
int ncd_check_memlock(struct ncd_ctx *ctx, const struct ncd_check_opts *opts,
                      struct ncd_findings *out, json_t *facts);


static const char *human(long long b, char *buf, size_t n)
{
    if (b < 0)
        snprintf(buf, n, "unknown");
    else if (b >= (1LL << 30))
        snprintf(buf, n, "%.1f GiB", (double)b / (1LL << 30));
    else if (b >= (1LL << 20))
        snprintf(buf, n, "%.1f MiB", (double)b / (1LL << 20));
    else if (b >= 1024)
        snprintf(buf, n, "%.0f KiB", (double)b / 1024);
    else
        snprintf(buf, n, "%lld B", b);
    return buf;
}

/* Local GPUs NCCL would use: the PCI count, narrowed by
 * CUDA_VISIBLE_DEVICES when it is a plain list. */
static int local_gpus(struct ncd_ctx *ctx, int *on_pci)
{
    int g = ncd_pci_count_nvidia_gpus(ctx);
    *on_pci = g;
    g = ncd_container_gpu_count(ctx, g);
    const char *v = ncd_getenv(ctx, "CUDA_VISIBLE_DEVICES");
    if (v && *v) {
        int cnt = 1;
        for (const char *p = v; *p; p++)
            cnt += *p == ',';
        if (cnt < g)
            g = cnt;
    }
    return g;
}

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
    int n = ncd_fs_list(ctx, "/etc/systemd/logind.conf.d", &names);
    for (int i = 0; i < n; i++) {
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
    if (n >= 0)
        ncd_fs_list_free(names, n);
    ncd_ctx_clear_error(ctx);
}

/* The uid the job runs as: live getuid(); recorded /.ncd/self "uid N". */
static long self_uid(struct ncd_ctx *ctx)
{
    if (ncd_ctx_is_live(ctx))
        return (long)getuid();
    char s[128];
    long uid = -1;
    if (ncd_fs_read_str(ctx, "/.ncd/self", s, sizeof s) == 0) {
        const char *u = strstr(s, "uid ");
        if (u)
            uid = strtol(u + 4, NULL, 10);
    }
    ncd_ctx_clear_error(ctx);
    return uid;
}

int ncd_check_shm(struct ncd_ctx *ctx, const struct ncd_check_opts *opts,
                  struct ncd_findings *out, json_t *facts)
{
    (void)opts;
    struct ncd_shm s;
    struct ncd_container c;
    struct ncd_finding *f;
    int rc = 0, on_pci;
    ncd_shm_probe(ctx, &s);
    ncd_container_probe(ctx, &c);
    int ng = local_gpus(ctx, &on_pci);
    const char *bs = ncd_getenv(ctx, "NCCL_BUFFSIZE");
    long long simple = bs && *bs ? strtoll(bs, NULL, 0) : 0;
    long long need = ncd_shm_need_bytes(ng, simple);
    const char *dis = ncd_getenv(ctx, "NCCL_SHM_DISABLE");
    int shm_disabled = dis && strtol(dis, NULL, 0) == 1;
    char a[32], b[32], n[32];
    json_t *j = json_pack("{s:b,s:o,s:o,s:I,s:I,s:s,s:i,s:I}", "mounted",
                          s.mounted, "type", ncd__jstr(s.m.type), "options",
                          ncd__jstr(s.m.opts),
                          "size_bytes", (json_int_t)s.size, "free_bytes",
                          (json_int_t)s.free, "size_source", s.size_source,
                          "local_gpus", ng, "need_bytes", (json_int_t)need);
    if (j)
        json_object_set_new(facts, "shm", j);
    if (!s.exists && !s.mounted && !ncd_ctx_is_live(ctx) &&
        !ncd_fs_exists(ctx, "/.ncd") && !ncd_fs_exists(ctx, "/proc/mounts")) {
        ADD("sys.shm.not-visible", NCD_CAT_SYS_SHM, NCD_SEV_INFO,
            "/dev/shm is not visible in this capture");
        goto ipc;
    }
    if (!s.exists && !s.mounted) {
        ADD("sys.shm.missing", NCD_CAT_SYS_SHM,
            ng >= 2 ? NCD_SEV_ERROR : NCD_SEV_WARNING,
            "/dev/shm does not exist");
        ncd_finding_cause(f, "NCCL creates its shared-memory segments there: "
                             "'failed to create shared memory file'.");
        ncd_finding_fix(f, "%s", ncd_container_shm_fix(&c));
        goto ipc;
    }
    if (s.readonly) {
        ADD("sys.shm.readonly", NCD_CAT_SYS_SHM, NCD_SEV_ERROR,
            "/dev/shm is mounted read-only");
        ncd_finding_evidence(f, "/proc/mounts: %s %s %s %s", s.m.dev, s.m.dir,
                             s.m.type, s.m.opts);
        ncd_finding_cause(f, "NCCL cannot create its segments: 'failed to "
                             "create shared memory file ... Read-only file "
                             "system'.");
        ncd_finding_fix(f, "%s", ncd_container_shm_fix(&c));
    }
    if (ng < 2) {
        ADD("sys.shm.ok", NCD_CAT_SYS_SHM, NCD_SEV_OK,
            "/dev/shm: %s (%s); %d local GPU(s), so NCCL's shared-memory "
            "transport is not used",
            human(s.size, a, sizeof a), s.size_source, ng);
        goto ipc;
    }
    if (shm_disabled) {
        ADD("sys.shm.disabled", NCD_CAT_PERF_CONFIG, NCD_SEV_INFO,
            "NCCL_SHM_DISABLE=1: NCCL's shared-memory transport is off "
            "(/dev/shm %s)",
            human(s.size, a, sizeof a));
        ncd_finding_cause(f, "Pairs of local GPUs that cannot use P2P then "
                             "go through the network transport, which is "
                             "slower; NCCL still needs some /dev/shm for "
                             "its proxy.");
        ncd_finding_env(f, "NCCL_SHM_DISABLE", NULL);
    } else if (s.size >= 0 && s.size < need) {
        ADD("sys.shm.too-small", NCD_CAT_SYS_SHM, NCD_SEV_ERROR,
            "/dev/shm is %s; NCCL may need %s for %d local GPUs",
            human(s.size, a, sizeof a), human(need, n, sizeof n), ng);
        ncd_finding_evidence(f, "/dev/shm: %s %s %s (size from %s)", s.m.dev,
                             s.m.type, s.m.opts, s.size_source);
        ncd_finding_evidence(
            f, "need = %d x %d pairs x %d channels x (Simple %s + LL128 4.7 "
               "MiB + LL 0.5 MiB) per NCCL src/transport/shm.cc",
            ng, ng - 1, NCD_SHM_CHANNELS,
            human(simple > 0 ? simple : NCD_NCCL_SIMPLE_BUFFSIZE, b, sizeof b));
        if (c.runtime != NCD_RT_NONE || c.kubernetes)
            ncd_finding_evidence(f, "running in %s%s",
                                 c.kubernetes ? "a Kubernetes pod / "
                                              : "",
                                 ncd_runtime_name(c.runtime));
        ncd_finding_cause(f, "NCCL fails with 'failed to extend /dev/shm/"
                             "nccl-XXXX to N bytes' / 'Error while creating "
                             "shared memory segment' (No space left on "
                             "device) once its segments outgrow the tmpfs; "
                             "Docker's default is 64 MB.");
        ncd_finding_fix(f, "%s", ncd_container_shm_fix(&c));
    } else if (s.free >= 0 && s.free < need) {
        ADD("sys.shm.low-free", NCD_CAT_SYS_SHM, NCD_SEV_WARNING,
            "/dev/shm has only %s free of %s; NCCL may need %s",
            human(s.free, a, sizeof a), human(s.size, b, sizeof b),
            human(need, n, sizeof n));
        ncd_finding_cause(f, "Leftover segments (crashed jobs leave "
                             "/dev/shm/nccl-*) or other programs fill it.");
        ncd_finding_fix(f, "Remove stale /dev/shm/nccl-* files when no job "
                           "runs, or grow /dev/shm.");
    } else if (s.size < 0) {
        ADD("sys.shm.size-unknown", NCD_CAT_SYS_SHM, NCD_SEV_INFO,
            "/dev/shm size is not visible%s",
            ncd_ctx_is_live(ctx) ? "" : " in this capture");
    } else {
        ADD("sys.shm.ok", NCD_CAT_SYS_SHM, NCD_SEV_OK,
            "/dev/shm: %s, %s free (%s); enough for %d local GPUs (%s)",
            human(s.size, a, sizeof a), human(s.free, b, sizeof b),
            s.size_source, ng, human(need, n, sizeof n));
    }
ipc:;
    int rip;
    char src[300];
    removeipc(ctx, &rip, src, sizeof src);
    int systemd = ncd_fs_exists(ctx, "/etc/systemd/logind.conf") ||
                  ncd_fs_exists(ctx, "/run/systemd/system");
    long uid = self_uid(ctx);
    if (systemd && rip != 0 && c.runtime == NCD_RT_NONE && !c.kubernetes) {
        int user = uid >= 1000;
        ADD("sys.shm.removeipc", NCD_CAT_SYS_SHM,
            user ? NCD_SEV_WARNING : NCD_SEV_INFO,
            "systemd-logind RemoveIPC=yes (%s)%s",
            *src ? src : "the default: not set in logind.conf",
            user ? "" : "; it spares system users such as this one");
        if (uid >= 0)
            ncd_finding_evidence(f, "running as uid %ld", uid);
        ncd_finding_cause(f, "When the user's last login session ends, "
                             "logind deletes their /dev/shm files and IPC "
                             "objects, also those of a running job: NCCL "
                             "then fails with 'unlink shared memory ... "
                             "failed' or crashes.");
        ncd_finding_fix(f, "Set RemoveIPC=no in /etc/systemd/logind.conf "
                           "and `systemctl restart systemd-logind`.");
    }
done:
    return rc;
}

int ncd_check_container(struct ncd_ctx *ctx, const struct ncd_check_opts *opts,
                        struct ncd_findings *out, json_t *facts)
{
    (void)opts;
    struct ncd_container c;
    struct ncd_finding *f;
    int rc = 0;
    ncd_container_probe(ctx, &c);
    json_t *ev = json_array();
    for (int i = 0; ev && i < c.n_evidence; i++)
        json_array_append_new(ev, ncd__jstr(c.evidence[i]));
    json_t *j = json_pack("{s:s,s:b,s:b,s:o,s:b,s:o}", "runtime",
                          ncd_runtime_name(c.runtime), "kubernetes",
                          c.kubernetes, "slurm", c.slurm, "slurm_job",
                          ncd__jstr(c.slurm_job), "wsl", c.wsl,
                          "evidence", ev ? ev : json_null());
    if (j)
        json_object_set_new(facts, "container", j);
    if (c.runtime != NCD_RT_NONE || c.kubernetes) {
        ADD(c.kubernetes ? "sys.virt.kubernetes" : "sys.virt.container",
            NCD_CAT_SYS_VIRT, NCD_SEV_INFO, "Running in %s%s%s",
            c.kubernetes ? "a Kubernetes pod" : "a container",
            c.runtime != NCD_RT_OTHER ? " (" : "",
            c.runtime != NCD_RT_OTHER
                ? (c.runtime == NCD_RT_DOCKER       ? "docker)"
                   : c.runtime == NCD_RT_PODMAN     ? "podman)"
                   : c.runtime == NCD_RT_CONTAINERD ? "containerd/CRI)"
                   : c.runtime == NCD_RT_LXC        ? "lxc)"
                                                    : "?)")
                : "");
        for (int i = 0; i < c.n_evidence; i++)
            ncd_finding_evidence(f, "%s", c.evidence[i]);
        ncd_finding_cause(f, "Containers get a private /dev/shm (64 MB in "
                             "Docker), the runtime's memlock limit, and only "
                             "the GPU/RDMA devices passed in; the checks "
                             "above give container-specific fixes.");
    }
    if (c.slurm) {
        ADD("sys.virt.slurm", NCD_CAT_SYS_VIRT, NCD_SEV_INFO,
            "Inside Slurm job %s", c.slurm_job);
        const char *v = ncd_getenv(ctx, "SLURM_STEP_GPUS");
        if (!v)
            v = ncd_getenv(ctx, "SLURM_JOB_GPUS");
        if (v)
            ncd_finding_evidence(f, "GPUs of the job: %s", v);
        ncd_finding_cause(f, "Slurm limits the GPUs (cgroup + "
                             "CUDA_VISIBLE_DEVICES) and propagates the "
                             "submitting shell's ulimits.");
    }
done:
    return rc;
}

static void limits_conf_evidence(struct ncd_ctx *ctx, struct ncd_finding *f)
{
    const char *files[40];
    char paths[32][300];
    int nf = 0;
    files[nf++] = "/etc/security/limits.conf";
    char **names;
    int n = ncd_fs_list(ctx, "/etc/security/limits.d", &names);
    for (int i = 0; i < n && nf < 33; i++) {
        snprintf(paths[nf - 1], sizeof paths[0], "/etc/security/limits.d/%s",
                 names[i]);
        files[nf] = paths[nf - 1];
        nf++;
    }
    for (int i = 0; i < nf; i++) {
        char *buf;
        size_t len;
        if (ncd_fs_read(ctx, files[i], 1 << 20, &buf, &len) < 0)
            continue;
        for (char *save = NULL, *l = strtok_r(buf, "\n", &save); l;
             l = strtok_r(NULL, "\n", &save)) {
            while (*l == ' ' || *l == '\t')
                l++;
            if (*l != '#' && strstr(l, "memlock"))
                ncd_finding_evidence(f, "%s: %.150s", files[i], l);
        }
        free(buf);
    }
    if (n >= 0)
        ncd_fs_list_free(names, n);
    ncd_ctx_clear_error(ctx);
}

int ncd_check_memlock(struct ncd_ctx *ctx, const struct ncd_check_opts *opts,
                      struct ncd_findings *out, json_t *facts)
{
    (void)opts;
    struct ncd_finding *f;
    struct ncd_container c;
    int rc = 0;
    char *buf;
    size_t len;
    struct ncd_limit ml = {0};
    if (ncd_fs_read(ctx, "/proc/self/limits", 1 << 16, &buf, &len) == 0) {
        ncd_limits_parse(buf, len, "Max locked memory", &ml);
        free(buf);
    }
    unsigned long long cap = 0;
    int cap_known = 0;
    if (ncd_fs_read(ctx, "/proc/self/status", 1 << 16, &buf, &len) == 0) {
        cap_known = ncd_status_capeff(buf, len, &cap);
        free(buf);
    }
    ncd_ctx_clear_error(ctx);
    ncd_container_probe(ctx, &c);
    int rdma_active = ncd_rdma_active_ports(ctx, NULL, NULL, 0);
    ncd_ctx_clear_error(ctx);
    json_t *j = json_pack("{s:o,s:o,s:b}", "soft_bytes",
                          ml.known ? json_integer(ml.soft) : json_null(),
                          "hard_bytes",
                          ml.known ? json_integer(ml.hard) : json_null(),
                          "cap_ipc_lock",
                          cap_known && (cap >> NCD_CAP_IPC_LOCK) & 1);
    if (j)
        json_object_set_new(facts, "memlock", j);
    char a[32], b[32];
    if (!ml.known) {
        ADD("sys.memlock.unknown", NCD_CAT_SYS_MEMLOCK, NCD_SEV_INFO,
            "The locked-memory limit is not visible%s",
            ncd_ctx_is_live(ctx) ? "" : " in this capture (no /proc/self/limits)");
        goto done;
    }
    if (ml.soft == -1) {
        ADD("sys.memlock.ok", NCD_CAT_SYS_MEMLOCK, NCD_SEV_OK,
            "Locked memory: unlimited");
        goto done;
    }
    int exempt = cap_known && ((cap >> NCD_CAP_IPC_LOCK) & 1);
    /* NCCL registers its buffers (4 MiB Simple per channel and peer, more
     * for LL128/LL) with ibv_reg_mr; 64 MiB is exhausted by a handful of
     * connections. */
    enum ncd_severity sev;
    if (!rdma_active || exempt)
        sev = NCD_SEV_INFO;
    else if (ml.soft < (64LL << 20))
        sev = NCD_SEV_ERROR;
    else
        sev = NCD_SEV_WARNING;
    ADD("sys.memlock.too-low", NCD_CAT_SYS_MEMLOCK, sev,
        "Locked-memory limit (ulimit -l) is %s (hard %s)%s",
        human(ml.soft, a, sizeof a),
        ml.hard == -1 ? "unlimited" : human(ml.hard, b, sizeof b),
        exempt ? ", but CAP_IPC_LOCK exempts this process"
        : !rdma_active ? "; no active RDMA port, so it does not matter now"
                       : "");
    ncd_finding_evidence(f, "/proc/self/limits: Max locked memory %lld %lld",
                         ml.soft, ml.hard);
    if (cap_known)
        ncd_finding_evidence(f, "/proc/self/status: CapEff %016llx (%s "
                                "CAP_IPC_LOCK)",
                             cap, exempt ? "has" : "no");
    if (rdma_active)
        ncd_finding_evidence(f, "%d active RDMA port(s)", rdma_active);
    limits_conf_evidence(ctx, f);
    ncd_finding_cause(f, "RDMA pins NCCL's buffers with ibv_reg_mr, which "
                         "counts against this limit: 'Call to ibv_reg_mr "
                         "failed ... Cannot allocate memory' or "
                         "ibv_create_qp/cq failures.");
    ncd_finding_fix(f, "%s", ncd_container_memlock_fix(&c));
done:
    return rc;
}
