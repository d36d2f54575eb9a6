/* SPDX-License-Identifier: MIT */
/**
 * @file container.h
 * @brief Which runtime the process lives in (Docker, Podman, containerd,
 *        Kubernetes, LXC, a Slurm job, WSL) and the exact option that
 *        fixes a resource problem there.
 *
 * Evidence read (through the sysroot and the context's environment):
 * /.dockerenv, /run/.containerenv, /proc/1/cgroup, /proc/self/cgroup,
 * /proc/self/mountinfo (kubelet and Docker container paths),
 * /var/run/secrets/kubernetes.io/serviceaccount, the variables
 * KUBERNETES_SERVICE_HOST, container, SLURM_JOB_ID, SLURM_STEP_ID,
 * NVIDIA_VISIBLE_DEVICES, the /dev/nvidia<N> device nodes, and WSL as the
 * virtualisation probe found it (pci.h).  A privileged container can hide most of these;
 * nothing is guessed beyond what a file says.
 */
#ifndef NCD_CONTAINER_H
#define NCD_CONTAINER_H

#include "ncd/ctx.h"
#include "ncd/pci.h"

#ifdef __cplusplus
extern "C" {
#endif

enum ncd_runtime {
    NCD_RT_NONE = 0,
    NCD_RT_DOCKER,
    NCD_RT_PODMAN,
    NCD_RT_CONTAINERD, /**< containerd / CRI-O without Kubernetes evidence */
    NCD_RT_LXC,
    NCD_RT_OTHER,      /**< a container, runtime unknown */
};

struct ncd_container {
    enum ncd_runtime runtime;
    int kubernetes;        /**< a Kubernetes pod */
    int slurm;             /**< inside a Slurm job (SLURM_JOB_ID) */
    char slurm_job[32];
    int wsl;               /**< Windows Subsystem for Linux */
    char evidence[4][192]; /**< what said so, one line each */
    int n_evidence;
    int dev_nvidia_nodes;  /**< /dev/nvidia<N> entries (0: /dev not
                                visible or none) */
    char nvidia_visible[256]; /**< NVIDIA_VISIBLE_DEVICES, "" unset */
};

/** "none", "docker", "podman", "containerd", "lxc", "container"; static. */
const char *ncd_runtime_name(enum ncd_runtime rt);

/**
 * Classifies a /proc/<pid>/cgroup buffer: kubepods, docker, libpod,
 * containerd/cri-o, lxc.  Sets rt (unchanged when nothing matches) and k8s.
 * Pure.  @return 1 when something matched.
 */
int ncd_cgroup_classify(const char *buf, size_t len, enum ncd_runtime *rt,
                        int *k8s);

/**
 * GPUs the runtime gives this process, before CUDA_VISIBLE_DEVICES: a
 * container sees every GPU of the host in sysfs, but only the device nodes
 * it was given (c->dev_nvidia_nodes, when /dev is visible) and the list in
 * NVIDIA_VISIBLE_DEVICES (unless "all").  `pci_gpus` is the sysfs count;
 * the result is never larger.  Pure.
 */
int ncd_container_visible_gpus(const struct ncd_container *c, int pci_gpus);

/** Detects the runtime; `virt` (may be NULL) gives WSL.  Always 0. */
int ncd_container_probe(struct ncd_ctx *ctx, const struct ncd_virt *virt,
                        struct ncd_container *out);

/**
 * The fix for a too-small /dev/shm in this runtime, one paragraph (static
 * text): `docker run --shm-size=1g` or `--ipc=host`, Podman the same, a
 * Kubernetes emptyDir with medium: Memory mounted on /dev/shm, ...
 */
const char *ncd_container_shm_fix(const struct ncd_container *c);

/** The fix for a low memlock limit in this runtime (static text). */
const char *ncd_container_memlock_fix(const struct ncd_container *c);

#ifdef __cplusplus
}
#endif
#endif
