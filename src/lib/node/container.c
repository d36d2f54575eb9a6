/* SPDX-License-Identifier: MIT */
/* Container / job runtime detection and runtime-specific fixes. */
#define _GNU_SOURCE
#include "ncd/container.h"
#include "ncd/error.h"
#include "ncd/fs.h"
#include "ncd/strbuf.h"
#include "node_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *ncd_runtime_name(enum ncd_runtime rt)
{
    switch (rt) {
    case NCD_RT_NONE: return "none";
    case NCD_RT_DOCKER: return "docker";
    case NCD_RT_PODMAN: return "podman";
    case NCD_RT_CONTAINERD: return "containerd";
    case NCD_RT_LXC: return "lxc";
    case NCD_RT_OTHER: return "container";
    }
    return "container";
}

int ncd_cgroup_classify(const char *buf, size_t len, enum ncd_runtime *rt,
                        int *k8s)
{
    int hit = 0;
    if (memmem(buf, len, "kubepods", 8)) {
        *k8s = 1;
        hit = 1;
    }
    if (memmem(buf, len, "/docker/", 8) || memmem(buf, len, "docker-", 7)) {
        *rt = NCD_RT_DOCKER;
        hit = 1;
    } else if (memmem(buf, len, "libpod", 6)) {
        *rt = NCD_RT_PODMAN;
        hit = 1;
    } else if (memmem(buf, len, "cri-containerd", 14) ||
               memmem(buf, len, "crio-", 5) ||
               memmem(buf, len, "containerd", 10)) {
        *rt = NCD_RT_CONTAINERD;
        hit = 1;
    } else if (memmem(buf, len, "/lxc/", 5) || memmem(buf, len, "lxc.payload", 11)) {
        *rt = NCD_RT_LXC;
        hit = 1;
    } else if (*k8s && *rt == NCD_RT_NONE) {
        *rt = NCD_RT_CONTAINERD;
    }
    return hit;
}

/* Adds "<a><b>" as an evidence line. */
static void ev(struct ncd_container *c, const char *a, const char *b)
{
    if (c->n_evidence < 4)
        snprintf(c->evidence[c->n_evidence++], sizeof c->evidence[0], "%s%s",
                 a, b);
}

int ncd_container_probe(struct ncd_ctx *ctx, const struct ncd_virt *virt,
                        struct ncd_container *out)
{
    memset(out, 0, sizeof *out);
    if (ncd_fs_exists(ctx, "/.dockerenv")) {
        out->runtime = NCD_RT_DOCKER;
        ev(out, "/.dockerenv", " exists");
    }
    if (ncd_fs_exists(ctx, "/run/.containerenv")) {
        out->runtime = NCD_RT_PODMAN;
        ev(out, "/run/.containerenv", " exists");
    }
    const char *cg[] = {"/proc/1/cgroup", "/proc/self/cgroup"};
    for (int i = 0; i < 2; i++) {
        char *buf;
        size_t len;
        if (ncd_fs_read(ctx, cg[i], 1 << 20, &buf, &len) < 0)
            continue;
        enum ncd_runtime rt = out->runtime;
        int k8s = out->kubernetes;
        if (ncd_cgroup_classify(buf, len, &rt, &k8s)) {
            if (out->runtime == NCD_RT_NONE || rt != NCD_RT_CONTAINERD)
                out->runtime = rt;
            out->kubernetes = k8s;
            ev(out, cg[i], " names a container cgroup");
        }
        free(buf);
        break;
    }
    char *mi;
    size_t len;
    if (ncd_fs_read(ctx, "/proc/self/mountinfo", 1 << 22, &mi, &len) == 0) {
        if (memmem(mi, len, "/kubelet/pods/", 14)) {
            out->kubernetes = 1;
            ev(out, "/proc/self/mountinfo", " has kubelet pod volumes");
        }
        if (memmem(mi, len, "/docker/containers/", 19) &&
            out->runtime == NCD_RT_NONE) {
            out->runtime = NCD_RT_DOCKER;
            ev(out, "/proc/self/mountinfo", " has Docker container files");
        }
        free(mi);
    }
    if (ncd_fs_exists(ctx, "/var/run/secrets/kubernetes.io/serviceaccount") ||
        ncd_fs_exists(ctx, "/run/secrets/kubernetes.io/serviceaccount")) {
        out->kubernetes = 1;
        ev(out, "/var/run/secrets/kubernetes.io/serviceaccount", " exists");
    }
    const char *v = ncd_getenv(ctx, "KUBERNETES_SERVICE_HOST");
    if (v && *v) {
        out->kubernetes = 1;
        ev(out, "KUBERNETES_SERVICE_HOST=", v);
    }
    if (out->kubernetes && out->runtime == NCD_RT_NONE)
        out->runtime = NCD_RT_CONTAINERD;
    v = ncd_getenv(ctx, "container");
    if (v && *v && out->runtime == NCD_RT_NONE) {
        out->runtime = strcmp(v, "podman") == 0 ? NCD_RT_PODMAN
                       : strcmp(v, "docker") == 0 ? NCD_RT_DOCKER
                       : strcmp(v, "lxc") == 0    ? NCD_RT_LXC
                                                  : NCD_RT_OTHER;
        ev(out, "container=", v);
    }
    v = ncd_getenv(ctx, "SLURM_JOB_ID");
    if (v && *v) {
        out->slurm = 1;
        ncd__scpy(out->slurm_job, sizeof out->slurm_job, v);
    }
    out->wsl = virt && virt->wsl;
    /* GPU device nodes the runtime passed in (/dev/nvidia<N>). */
    char **names;
    int n = ncd_fs_list(ctx, "/dev", &names);
    for (int i = 0; i < n; i++)
        if (strncmp(names[i], "nvidia", 6) == 0 && names[i][6] &&
            strspn(names[i] + 6, "0123456789") == strlen(names[i] + 6))
            out->dev_nvidia_nodes++;
    if (n >= 0)
        ncd_fs_list_free(names, n);
    v = ncd_getenv(ctx, "NVIDIA_VISIBLE_DEVICES");
    ncd__scpy(out->nvidia_visible, sizeof out->nvidia_visible, v ? v : "");
    ncd_ctx_clear_error(ctx);
    return 0;
}

const char *ncd_container_shm_fix(const struct ncd_container *c)
{
    if (c->kubernetes)
        return "Mount a memory-backed emptyDir on /dev/shm in the pod spec:\n"
               "  volumes:\n"
               "  - name: dshm\n"
               "    emptyDir:\n"
               "      medium: Memory\n"
               "      sizeLimit: 1Gi\n"
               "and in the container:\n"
               "  volumeMounts:\n"
               "  - name: dshm\n"
               "    mountPath: /dev/shm\n"
               "(or hostIPC: true).  Last resort: NCCL_SHM_DISABLE=1.";
    switch (c->runtime) {
    case NCD_RT_DOCKER:
        return "Restart the container with `docker run --shm-size=1g` (more "
               "for more GPUs) or `--ipc=host`; with Compose, `shm_size: "
               "1gb` or `ipc: host`.  Last resort: NCCL_SHM_DISABLE=1.";
    case NCD_RT_PODMAN:
        return "Restart the container with `podman run --shm-size=1g` or "
               "`--ipc=host`.  Last resort: NCCL_SHM_DISABLE=1.";
    case NCD_RT_NONE:
        return "Grow the tmpfs: `mount -o remount,size=<N>G /dev/shm` (make "
               "it permanent in /etc/fstab).  Last resort: "
               "NCCL_SHM_DISABLE=1.";
    default:
        return "Give the container a larger /dev/shm (a tmpfs of at least "
               "the size shown) or share the host IPC namespace.  Last "
               "resort: NCCL_SHM_DISABLE=1.";
    }
}

const char *ncd_container_memlock_fix(const struct ncd_container *c)
{
    if (c->kubernetes)
        return "Pods inherit the container runtime's default: raise it for "
               "the runtime (containerd: LimitMEMLOCK=infinity in its "
               "systemd unit; Docker: \"default-ulimits\": {\"memlock\": "
               "{\"Name\": \"memlock\", \"Soft\": -1, \"Hard\": -1}} in "
               "daemon.json), or give the container CAP_IPC_LOCK "
               "(securityContext.capabilities.add: [\"IPC_LOCK\"]).";
    switch (c->runtime) {
    case NCD_RT_DOCKER:
        return "Restart the container with `docker run --ulimit memlock=-1` "
               "(Compose: `ulimits: {memlock: -1}`), or --cap-add IPC_LOCK.";
    case NCD_RT_PODMAN:
        return "Restart the container with `podman run --ulimit "
               "memlock=-1:-1`.";
    default:
        break;
    }
    if (c->slurm)
        return "Slurm propagates the submitting shell's limits "
               "(PropagateResourceLimits): raise memlock where jobs are "
               "submitted, or set PropagateResourceLimitsExcept=MEMLOCK in "
               "slurm.conf and `LimitMEMLOCK=infinity` for slurmd.";
    return "Set `* soft memlock unlimited` and `* hard memlock unlimited` in "
           "/etc/security/limits.conf (log in again), or LimitMEMLOCK="
           "infinity in the systemd unit that starts the job; check with "
           "`ulimit -l`.";
}

int ncd_container_visible_gpus(const struct ncd_container *c, int pci_gpus)
{
    int g = pci_gpus;
    if (c->dev_nvidia_nodes > 0 && c->dev_nvidia_nodes < g)
        g = c->dev_nvidia_nodes;
    const char *v = c->nvidia_visible;
    if (*v && strcmp(v, "all") && strcmp(v, "none") && strcmp(v, "void") &&
        ncd_list_count(v) < g)
        g = ncd_list_count(v);
    return g;
}
