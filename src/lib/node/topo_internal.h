/* SPDX-License-Identifier: MIT */
/* NVML through a function table, so tests can stand in for the library
 * (the live table comes from dlsym on libnvidia-ml.so.1).  Not public. */
#ifndef NCD_TOPO_INTERNAL_H
#define NCD_TOPO_INTERNAL_H

#include "ncd/topo.h"

/* The NVML entry points used, with NVML's C signatures (return value
 * nvmlReturn_t, 0 = success; handles are opaque pointers; the PCI info
 * is nvmlPciInfo_t, v3 layout). */
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

/* Fills GPU names, NVLink counts and versions of `t` from NVML.  Links to
 * something that is not a GPU of `t` count as NVSwitch links.
 * Returns 0 or NCD_ENOMEM; NVML errors end in t->nvlink_source. */
int ncd__topo_nvml_fill(struct ncd_topo *t, const struct ncd__nvml_api *api);

#endif
