/* SPDX-License-Identifier: MIT */
/**
 * @file pciaddr.h
 * @brief PCI addresses ("dddd:bb:dd.f") and sysfs device paths: pure text
 *        helpers shared by the interface, PCI and RDMA probes.
 *
 * A sysfs device path names the host bridge ("pci0000:16") and then every
 * PCI function from the root port down to the device, as NCCL walks it to
 * compute PCI distances (NCCL src/graph/xml.cc, src/os/linux.cc, 2.30).
 */
#ifndef NCD_PCIADDR_H
#define NCD_PCIADDR_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** 1 when the n bytes at s are a PCI address "dddd:bb:dd.f" (hex). */
int ncd_pci_is_bdf(const char *s, size_t n);

/**
 * Parses a sysfs device path ("/sys/devices/pci0000:00/0000:00:01.0/
 * 0000:17:00.0") into its host bridge component and the BDF chain.
 * @param root    receives "pci0000:00" ("" when none), >= 32 bytes.
 * @param chain   receives up to `max` BDFs, top first, lower case, 16 bytes
 *                each.
 * @return the number of BDFs in the chain (the last is the device).
 */
int ncd_pci_path_split(const char *path, char *root, char (*chain)[16],
                       int max);

/**
 * The last PCI address in a device path ("" when none): the function a
 * netdev or RDMA device sits on.  `out` >= 16 bytes.
 */
void ncd_pci_bdf_of_path(const char *path, char *out, size_t outsz);

#ifdef __cplusplus
}
#endif
#endif
