/* SPDX-License-Identifier: MIT */
/* Checks: /dev/shm and RemoveIPC (shm), container runtime (container),
 * locked-memory limit (memlock).  NCCL facts: nccl-facts.md §6; the /dev/shm
 * formula and its source are in include/ncd/shm.h. */
#define _GNU_SOURCE
#include "ncd/check.h"
#include "check/check_internal.h"
#include "ncd/container.h"
#include "ncd/error.h"
#include "ncd/pci.h"
#include "ncd/recommend.h"
#include "ncd/node.h"
#include "ncd/shm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int ncd_check_shm(const struct ncd_node *n, const struct ncd_check_opts *opts,
                  struct ncd_findings *out);
int ncd_check_container(const struct ncd_node *n,
                        const struct ncd_check_opts *opts,
                        struct ncd_findings *out);
int ncd_check_memlock(const struct ncd_node *n,
                      const struct ncd_check_opts *opts,
                      struct ncd_findings *out);


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

int ncd_check_shm(const struct ncd_node *n, const struct ncd_check_opts *opts,
                  struct ncd_findings *out)
{
    (void)opts;
    const struct ncd_shm *sp = &n->shm.shm;
    const struct ncd_container *c = &n->container;
    struct ncd_finding *f;
    int rc = 0;
    int ng = ncd_node_local_gpus(n);
    const char *bs = ncd_node_getenv(n, "NCCL_BUFFSIZE");
    long long simple = bs && *bs ? strtoll(bs, NULL, 0) : 0;
    long long need = ncd_node_shm_need(n);
    const char *dis = ncd_node_getenv(n, "NCCL_SHM_DISABLE");
    int shm_disabled = dis && strtol(dis, NULL, 0) == 1;
    char a[32], b[32], nb[32];
    if (!sp->exists && !sp->mounted && !n->sys.answers_visible &&
        !n->shm.proc_mounts) {
        ADD("sys.shm.not-visible", NCD_CAT_SYS_SHM, NCD_SEV_INFO,
            "/dev/shm is not visible in this capture");
        goto ipc;
    }
    if (!sp->exists && !sp->mounted) {
        ADD("sys.shm.missing", NCD_CAT_SYS_SHM,
            ng >= 2 ? NCD_SEV_ERROR : NCD_SEV_WARNING,
            "/dev/shm does not exist");
        ncd_finding_cause(f, "NCCL creates its shared-memory segments there: "
                             "'failed to create shared memory file'.");
        ncd_finding_fix(f, "%s", ncd_container_shm_fix(c));
        goto ipc;
    }
    if (sp->readonly) {
        ADD("sys.shm.readonly", NCD_CAT_SYS_SHM, NCD_SEV_ERROR,
            "/dev/shm is mounted read-only");
        ncd_finding_evidence(f, "/proc/mounts: %s %s %s %s", sp->m.dev, sp->m.dir,
                             sp->m.type, sp->m.opts);
        ncd_finding_cause(f, "NCCL cannot create its segments: 'failed to "
                             "create shared memory file ... Read-only file "
                             "system'.");
        ncd_finding_fix(f, "%s", ncd_container_shm_fix(c));
    }
    if (ng < 2) {
        ADD("sys.shm.ok", NCD_CAT_SYS_SHM, NCD_SEV_OK,
            "/dev/shm: %s (%s); %d local GPU(s), so NCCL's shared-memory "
            "transport is not used",
            human(sp->size, a, sizeof a), sp->size_source, ng);
        goto ipc;
    }
    if (shm_disabled) {
        ADD("sys.shm.disabled", NCD_CAT_PERF_CONFIG, NCD_SEV_INFO,
            "NCCL_SHM_DISABLE=1: NCCL's shared-memory transport is off "
            "(/dev/shm %s)",
            human(sp->size, a, sizeof a));
        ncd_finding_cause(f, "Pairs of local GPUs that cannot use P2P then "
                             "go through the network transport, which is "
                             "slower; NCCL still needs some /dev/shm for "
                             "its proxy.");
        ncd_finding_env(f, "NCCL_SHM_DISABLE", NULL);
    } else if (sp->size >= 0 && sp->size < need) {
        ADD("sys.shm.too-small", NCD_CAT_SYS_SHM, NCD_SEV_ERROR,
            "/dev/shm is %s; NCCL may need %s for %d local GPUs",
            human(sp->size, a, sizeof a), human(need, nb, sizeof nb), ng);
        ncd_finding_evidence(f, "/dev/shm: %s %s %s (size from %s)", sp->m.dev,
                             sp->m.type, sp->m.opts, sp->size_source);
        ncd_finding_evidence(
            f, "need = %d x %d pairs x %d channels x (Simple %s + LL128 4.7 "
               "MiB + LL 0.5 MiB) per NCCL src/transport/shm.cc",
            ng, ng - 1, NCD_SHM_CHANNELS,
            human(simple > 0 ? simple : NCD_NCCL_SIMPLE_BUFFSIZE, b, sizeof b));
        if (c->runtime != NCD_RT_NONE || c->kubernetes)
            ncd_finding_evidence(f, "running in %s%s",
                                 c->kubernetes ? "a Kubernetes pod / "
                                               : "",
                                 ncd_runtime_name(c->runtime));
        ncd_finding_cause(f, "NCCL fails with 'failed to extend /dev/shm/"
                             "nccl-XXXX to N bytes' / 'Error while creating "
                             "shared memory segment' (No space left on "
                             "device) once its segments outgrow the tmpfs; "
                             "Docker's default is 64 MB.");
        ncd_finding_fix(f, "%s", ncd_container_shm_fix(c));
    } else if (sp->free >= 0 && sp->free < need) {
        ADD("sys.shm.low-free", NCD_CAT_SYS_SHM, NCD_SEV_WARNING,
            "/dev/shm has only %s free of %s; NCCL may need %s",
            human(sp->free, a, sizeof a), human(sp->size, b, sizeof b),
            human(need, nb, sizeof nb));
        ncd_finding_cause(f, "Leftover segments (crashed jobs leave "
                             "/dev/shm/nccl-*) or other programs fill it.");
        ncd_finding_fix(f, "Remove stale /dev/shm/nccl-* files when no job "
                           "runs, or grow /dev/shm.");
    } else if (sp->size < 0) {
        ADD("sys.shm.size-unknown", NCD_CAT_SYS_SHM, NCD_SEV_INFO,
            "/dev/shm size is not visible%s", n->sys.where);
    } else {
        ADD("sys.shm.ok", NCD_CAT_SYS_SHM, NCD_SEV_OK,
            "/dev/shm: %s, %s free (%s); enough for %d local GPUs (%s)",
            human(sp->size, a, sizeof a), human(sp->free, b, sizeof b),
            sp->size_source, ng, human(need, nb, sizeof nb));
    }
ipc:;
    int rip = n->shm.removeipc;
    const char *src = n->shm.removeipc_src;
    int systemd = n->shm.systemd;
    long uid = n->sys.id.uid;
    if (systemd && rip != 0 && c->runtime == NCD_RT_NONE && !c->kubernetes) {
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

int ncd_check_container(const struct ncd_node *n,
                        const struct ncd_check_opts *opts,
                        struct ncd_findings *out)
{
    (void)opts;
    const struct ncd_container *c = &n->container;
    struct ncd_finding *f;
    int rc = 0;
    if (c->runtime != NCD_RT_NONE || c->kubernetes) {
        ADD(c->kubernetes ? "sys.virt.kubernetes" : "sys.virt.container",
            NCD_CAT_SYS_VIRT, NCD_SEV_INFO, "Running in %s%s%s",
            c->kubernetes ? "a Kubernetes pod" : "a container",
            c->runtime != NCD_RT_OTHER ? " (" : "",
            c->runtime != NCD_RT_OTHER
                ? (c->runtime == NCD_RT_DOCKER       ? "docker)"
                   : c->runtime == NCD_RT_PODMAN     ? "podman)"
                   : c->runtime == NCD_RT_CONTAINERD ? "containerd/CRI)"
                   : c->runtime == NCD_RT_LXC        ? "lxc)"
                                                    : "?)")
                : "");
        for (int i = 0; i < c->n_evidence; i++)
            ncd_finding_evidence(f, "%s", c->evidence[i]);
        ncd_finding_cause(f, "Containers get a private /dev/shm (64 MB in "
                             "Docker), the runtime's memlock limit, and only "
                             "the GPU/RDMA devices passed in; the checks "
                             "above give container-specific fixes.");
    }
    if (c->slurm) {
        ADD("sys.virt.slurm", NCD_CAT_SYS_VIRT, NCD_SEV_INFO,
            "Inside Slurm job %s", c->slurm_job);
        const char *v = ncd_node_getenv(n, "SLURM_STEP_GPUS");
        if (!v)
            v = ncd_node_getenv(n, "SLURM_JOB_GPUS");
        if (v)
            ncd_finding_evidence(f, "GPUs of the job: %s", v);
        ncd_finding_cause(f, "Slurm limits the GPUs (cgroup + "
                             "CUDA_VISIBLE_DEVICES) and propagates the "
                             "submitting shell's ulimits.");
    }
done:
    return rc;
}

int ncd_check_memlock(const struct ncd_node *n,
                      const struct ncd_check_opts *opts,
                      struct ncd_findings *out)
{
    (void)opts;
    struct ncd_finding *f;
    int rc = 0;
    const struct ncd_limit ml = n->shm.memlock;
    unsigned long long cap = n->shm.capeff;
    int cap_known = n->shm.cap_known;
    int rdma_active = n->rdma.active_ports;
    char a[32], b[32];
    if (!ml.known) {
        ADD("sys.memlock.unknown", NCD_CAT_SYS_MEMLOCK, NCD_SEV_INFO,
            "The locked-memory limit is not visible%s%s", n->sys.where,
            *n->sys.where ? " (no /proc/self/limits)" : "");
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
    for (size_t i = 0; i < n->shm.n_limits_lines; i++)
        ncd_finding_evidence(f, "%s", n->shm.limits_lines[i]);
    ncd_finding_cause(f, "RDMA pins NCCL's buffers with ibv_reg_mr, which "
                         "counts against this limit: 'Call to ibv_reg_mr "
                         "failed ... Cannot allocate memory' or "
                         "ibv_create_qp/cq failures.");
    ncd_finding_fix(f, "%s", ncd_container_memlock_fix(&n->container));
done:
    return rc;
}
