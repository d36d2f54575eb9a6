/* SPDX-License-Identifier: MIT */
/**
 * @file shm.h
 * @brief /dev/shm, systemd RemoveIPC, process limits (memlock) and
 *        capabilities, as NCCL's shared-memory and RDMA paths need them.
 *
 * Sources (through the sysroot): /proc/mounts (or /proc/self/mounts),
 * /proc/meminfo, /etc/systemd/logind.conf and logind.conf.d/<x>.conf,
 * /proc/self/limits, /proc/self/status (CapEff), /etc/security/limits.conf
 * and limits.d/<x>.conf.  The size and free space of /dev/shm come from
 * statvfs(2) on a live node and from <sysroot>/.ncd/statvfs on a recorded
 * one (one line per mount point: "<dir> <size bytes> <free bytes>"); when
 * neither is there, the tmpfs "size=" mount option is used (free space is
 * then unknown).
 *
 * How much /dev/shm NCCL needs (ncd_shm_need_bytes): NCCL's SHM transport
 * maps, for every connection between two local ranks that it carries, one
 * segment in /dev/shm holding the receive buffers of the three protocols
 * (NCCL src/transport/shm.cc, shmRecvSetup; sizes from
 * src/include/device.h and src/init.cc, 2.30):
 *     Simple  NCCL_BUFFSIZE            4 MiB  (4194304 B)
 *     LL128   NCCL_LL128_BUFFSIZE      4.6875 MiB (4915200 B)
 *     LL      NCCL_LL_BUFFSIZE         512 KiB (524288 B)
 * We assume the worst case NCCL can reach on one node, SHM between every
 * ordered pair of local GPUs on 2 channels:
 *     need = nlocal * (nlocal - 1) * 2 * (Simple + LL128 + LL)
 * 8 GPUs: 56 * 2 * 9.19 MiB = 1.0 GiB, which is the `--shm-size=1g` that
 * NCCL's troubleshooting guide (runtime_and_mpi_issues.rst) recommends for
 * Docker; 2 GPUs: 37 MiB.  An estimate of the peak, not an exact figure:
 * when P2P or NVLink carries a pair, NCCL maps less.
 */
#ifndef NCD_SHM_H
#define NCD_SHM_H

#include <stddef.h>

#include "ncd/ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Per-protocol SHM receive buffer defaults (bytes), NCCL 2.30. */
#define NCD_NCCL_SIMPLE_BUFFSIZE 4194304LL
#define NCD_NCCL_LL128_BUFFSIZE 4915200LL
#define NCD_NCCL_LL_BUFFSIZE 524288LL
/** Channels assumed per local pair in the /dev/shm estimate. */
#define NCD_SHM_CHANNELS 2

/** One /proc/mounts line. */
struct ncd_mount {
    char dev[64];
    char dir[256];
    char type[32];
    char opts[512];
};

/**
 * Finds the mount of `dir` in a /proc/mounts buffer; the last line wins
 * (a later mount hides an earlier one).  Octal escapes (\040) are decoded.
 * @return 1 found, 0 not mounted.  Pure.
 */
int ncd_mounts_find(const char *buf, size_t len, const char *dir,
                    struct ncd_mount *out);

/**
 * The tmpfs size from mount options: "size=65536k" -> 67108864, "size=50%"
 * of `memtotal` bytes.  A tmpfs without size= gets the kernel default, half
 * of RAM.  @return bytes, or -1 when unknown (memtotal 0 and no size=).
 */
long long ncd_tmpfs_size(const char *opts, long long memtotal);

/** Whether a mount option list has "ro" as an option. */
int ncd_mount_is_ro(const char *opts);

/** MemTotal from /proc/meminfo, bytes; -1 when absent.  Pure. */
long long ncd_meminfo_total(const char *buf, size_t len);

/** The /proc/meminfo field `name` (without the colon, e.g. "MemAvailable"),
 *  a kB figure, in bytes; -1 when absent.  Pure. */
long long ncd_meminfo_field(const char *buf, size_t len, const char *name);

/** The /dev/shm state. */
struct ncd_shm {
    int mounted;          /**< /dev/shm is a mount point */
    int exists;           /**< /dev/shm exists at all */
    struct ncd_mount m;
    long long size;       /**< bytes, -1 unknown */
    long long free;       /**< bytes, -1 unknown */
    const char *size_source; /**< "statvfs", ".ncd/statvfs", "size= mount
                                  option", "tmpfs default (RAM/2)" or
                                  "unknown"; static */
    int readonly;
};

/** Probes /dev/shm.  @return 0 (unknowns are left at -1). */
int ncd_shm_probe(struct ncd_ctx *ctx, struct ncd_shm *out);

/**
 * The /dev/shm bytes NCCL may need for `nlocal` local GPUs (formula in the
 * file comment).  `simple_bytes` is NCCL_BUFFSIZE (<= 0: the default).
 */
long long ncd_shm_need_bytes(int nlocal, long long simple_bytes);

/**
 * Effective RemoveIPC= of systemd-logind from the configuration files'
 * contents in order (logind.conf, then logind.conf.d drop-ins sorted):
 * the last assignment in a [Login] section wins.
 * @return 1 yes, 0 no, -1 not set in the buffer.  Pure.
 */
int ncd_logind_removeipc(const char *buf, size_t len);

/** A resource limit; -1 means unlimited. */
struct ncd_limit {
    long long soft, hard;
    int known;
};

/**
 * Parses one limit of a /proc/<pid>/limits buffer, e.g. name
 * "Max locked memory" (values in bytes there).  @return 1 found, 0 not.
 * Pure.
 */
int ncd_limits_parse(const char *buf, size_t len, const char *name,
                     struct ncd_limit *out);

/**
 * Parses "CapEff:" from a /proc/<pid>/status buffer.
 * @return 1 found (mask in *cap), 0 not.  Pure.
 */
int ncd_status_capeff(const char *buf, size_t len, unsigned long long *cap);

/** CAP_IPC_LOCK: exempts a process from the memlock limit. */
#define NCD_CAP_IPC_LOCK 14

#ifdef __cplusplus
}
#endif
#endif
