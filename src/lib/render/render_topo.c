/* SPDX-License-Identifier: MIT */
/* The GPU/NIC matrix as `nvidia-smi topo -m` prints it, and its JSON
 * (see ncd/node_report.h). */
#define _GNU_SOURCE
#include "ncd/node_report.h"
#include "render/render_internal.h"

#include <stdio.h>
#include <string.h>

void ncd_topo_matrix_text(const struct ncd_topo *t, struct ncd_strbuf *out)
{
    if (!t->n_gpu)
        ncd_sb_printf(out,
                      "No NVIDIA GPU found (source: %s): nothing for NCCL to "
                      "connect on this node.\n\n",
                      t->source);
    if (!t->n_dev) {
        ncd_sb_puts(out, "No NVIDIA GPU and no NIC found on the PCI bus");
        ncd_sb_printf(out, " (%s).\n", t->pci.present
                                           ? "/sys/bus/pci/devices read"
                                           : "/sys/bus/pci/devices missing");
        return;
    }
    ncd_sb_puts(out, "\t");
    for (size_t j = 0; j < t->n_dev; j++)
        ncd_sb_printf(out, "%s\t", t->dev[j].label);
    ncd_sb_puts(out, "CPU Affinity\tNUMA Affinity\n");
    for (size_t i = 0; i < t->n_dev; i++) {
        ncd_sb_printf(out, "%s\t", t->dev[i].label);
        for (size_t j = 0; j < t->n_dev; j++) {
            int nv;
            enum ncd_link l = ncd_topo_link(t, i, j, &nv);
            if (l == NCD_LINK_X)
                ncd_sb_puts(out, " X \t");
            else if (l == NCD_LINK_NV)
                ncd_sb_printf(out, "NV%d\t", nv);
            else
                ncd_sb_printf(out, "%s\t", ncd_link_name(l));
        }
        const struct ncd_topo_dev *d = &t->dev[i];
        if (d->kind == NCD_TOPO_GPU) {
            ncd_sb_printf(out, "%s\t", *d->cpulist ? d->cpulist : "N/A");
            if (d->numa_node >= 0)
                ncd_sb_printf(out, "%d", d->numa_node);
            else
                ncd_sb_puts(out, "N/A");
        }
        ncd_sb_putc(out, '\n');
    }
    ncd_sb_puts(
        out,
        "\nLegend:\n\n"
        "  X    = Self\n"
        "  SYS  = Connection traversing PCIe as well as the SMP interconnect "
        "between NUMA nodes (e.g., QPI/UPI)\n"
        "  NODE = Connection traversing PCIe as well as the interconnect "
        "between PCIe Host Bridges within a NUMA node\n"
        "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge "
        "(typically the CPU)\n"
        "  PXB  = Connection traversing multiple PCIe bridges (without "
        "traversing the PCIe Host Bridge)\n"
        "  PIX  = Connection traversing at most a single PCIe bridge\n"
        "  NV#  = Connection traversing a bonded set of # NVLinks\n");
    if (t->n_nic) {
        ncd_sb_puts(out, "\nNIC Legend:\n\n");
        for (size_t i = t->n_gpu; i < t->n_dev; i++) {
            const struct ncd_topo_dev *d = &t->dev[i];
            ncd_sb_printf(out, "  %s: %s", d->label, d->name);
            if (*d->netdev && strcmp(d->netdev, d->name) != 0)
                ncd_sb_printf(out, " (%s)", d->netdev);
            if (!d->rdma)
                ncd_sb_puts(out, " [no RDMA]");
            ncd_sb_putc(out, '\n');
        }
    }
    if (t->n_gpu) {
        ncd_sb_puts(out, "\nGPU Legend:\n\n");
        for (size_t i = 0; i < t->n_gpu; i++)
            ncd_sb_printf(out, "  %s: %s %s\n", t->dev[i].label,
                          t->dev[i].bdf, t->dev[i].name);
        ncd_sb_printf(out, "\nNVLink: %s\n",
                      t->nvlink_known ? t->nvlink_source
                                      : t->nvlink_source[0]
                                            ? t->nvlink_source
                                            : "unknown");
    }
}

json_t *ncd_topo_to_json(const struct ncd_topo *t)
{
    json_t *o = json_object();
    json_t *gpus = json_array(), *nics = json_array(), *mat = json_array();
    if (!o || !gpus || !nics || !mat) {
        json_decref(o);
        json_decref(gpus);
        json_decref(nics);
        json_decref(mat);
        return NULL;
    }
    json_object_set_new(o, "source", ncd__jstr(t->source));
    for (size_t i = 0; i < t->n_dev; i++) {
        const struct ncd_topo_dev *d = &t->dev[i];
        json_t *e = json_pack("{s:s,s:o,s:o,s:o,s:o}", "label", d->label,
                              "name", ncd__jstr(d->name), "bdf",
                              ncd__jstr(d->bdf), "numa_node",
                              d->numa_node >= 0 ? json_integer(d->numa_node)
                                                : json_null(),
                              "cpu_affinity",
                              *d->cpulist ? ncd__jstr(d->cpulist)
                                          : json_null());
        if (!e)
            continue;
        if (d->kind == NCD_TOPO_NIC) {
            json_object_set_new(e, "rdma", json_boolean(d->rdma));
            json_object_set_new(e, "netdev", *d->netdev
                                                 ? ncd__jstr(d->netdev)
                                                 : json_null());
        }
        json_array_append_new(d->kind == NCD_TOPO_GPU ? gpus : nics, e);
        json_t *row = json_array();
        for (size_t j = 0; row && j < t->n_dev; j++) {
            int nv;
            enum ncd_link l = ncd_topo_link(t, i, j, &nv);
            char s[16];
            if (l == NCD_LINK_NV)
                snprintf(s, sizeof s, "NV%d", nv);
            else
                snprintf(s, sizeof s, "%s", ncd_link_name(l));
            json_array_append_new(row, json_string(s));
        }
        json_array_append_new(mat, row);
    }
    json_object_set_new(o, "gpus", gpus);
    json_object_set_new(o, "nics", nics);
    json_object_set_new(o, "matrix", mat);
    json_object_set_new(o, "nvlink_source", ncd__jstr(t->nvlink_source));
    json_object_set_new(o, "driver_version", *t->driver_version
                                                 ? ncd__jstr(t->driver_version)
                                                 : json_null());
    return o;
}
