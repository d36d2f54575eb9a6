/* SPDX-License-Identifier: MIT */
/*
 * The facts of a scan as JSON (explain --json "facts") and as the compact
 * text of explain --facts.
 */
#define _GNU_SOURCE
#include "explain/session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *ifaces_json(const struct ncd__iface *v, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_pack("{s:s, s:s}", "name", v[i].name,
                                           "address", v[i].addr));
    return a;
}

static const char *phase_name(int ph)
{
    static const char *const n[] = {"none",    "bootstrap", "topology",
                                    "connect", "nvls",      "complete",
                                    "running", "destroyed"};
    return ph >= 0 && ph <= PH_DESTROYED ? n[ph] : "?";
}

static json_t *maybe_int(long v) { return v >= 0 ? json_integer(v) : json_null(); }
static json_t *maybe_str(const char *s) { return s[0] ? json_string(s) : json_null(); }

json_t *ncd_explain_facts_json(const struct ncd_explain *ex)
{
    json_t *o = json_object();
    json_t *procs = json_array();
    json_t *hosts = json_array();
    json_t *vers = json_array();
    json_t *env = json_object();
    json_t *gpus = json_array();
    json_t *tr = json_object();
    if (!o || !procs || !hosts || !vers || !env || !gpus || !tr)
        goto fail;
    unsigned long long p2p = 0, shm = 0, net = 0, netgdr = 0, coll = 0;
    for (size_t i = 0; i < ex->nprocs; i++) {
        const struct ncd__proc *p = &ex->procs[i];
        json_t *ib = json_array();
        for (int k = 0; k < p->nib; k++)
            json_array_append_new(ib, json_string(p->ib[k]));
        json_t *jp = json_object();
        json_object_set_new(jp, "host", maybe_str(p->host));
        json_object_set_new(jp, "pid", maybe_int(p->pid));
        json_object_set_new(jp, "source", json_string(ncd__src_name(ex, p->src)));
        json_object_set_new(jp, "rank", maybe_int(p->rank));
        json_object_set_new(jp, "nranks", maybe_int(p->nranks));
        json_object_set_new(jp, "nnodes", maybe_int(p->nnodes));
        json_object_set_new(jp, "cuda_dev", maybe_int(p->cuda_dev));
        json_object_set_new(jp, "bus_id", maybe_str(p->busid));
        json_object_set_new(jp, "nccl_version", maybe_str(p->version));
        json_object_set_new(jp, "cuda_version", maybe_str(p->cuda));
        json_object_set_new(jp, "cuda_driver", p->driver ? json_integer(p->driver) : json_null());
        json_object_set_new(jp, "bootstrap", ifaces_json(p->boot, p->nboot));
        json_object_set_new(jp, "socket_ifaces", ifaces_json(p->sock, p->nsock));
        json_object_set_new(jp, "ib_devices", ib);
        json_object_set_new(jp, "ib_oob", maybe_str(p->oob));
        json_object_set_new(jp, "network", maybe_str(p->net));
        json_object_set_new(jp, "net_plugin",
                            p->plugin == 2 ? json_string(p->plugin_name[0] ? p->plugin_name : "loaded")
                            : p->plugin == 1 ? json_string("none") : json_null());
        json_object_set_new(jp, "libibverbs_missing", json_boolean(p->ibverbs_missing));
        json_object_set_new(jp, "gdr", p->gdr_on ? json_true() : p->gdr_off ? json_false() : json_null());
        json_object_set_new(jp, "transports",
                            json_pack("{s:i, s:i, s:i, s:i, s:i}", "p2p", (json_int_t)p->t_p2p,
                                      "shm", (json_int_t)p->t_shm, "net", (json_int_t)p->t_net,
                                      "net_gdr", (json_int_t)p->t_netgdr, "collnet",
                                      (json_int_t)p->t_collnet));
        json_object_set_new(jp, "ring", maybe_str(p->ring));
        json_object_set_new(jp, "trees", maybe_str(p->trees));
        json_object_set_new(jp, "init_complete", json_integer(p->ncomplete));
        json_object_set_new(jp, "init_seconds", p->init_total > 0 ? json_real(p->init_total) : json_null());
        json_object_set_new(jp, "last_phase", json_string(phase_name(p->phase)));
        json_object_set_new(jp, "warnings", json_integer(p->nwarn));
        json_array_append_new(procs, jp);
        p2p += p->t_p2p;
        shm += p->t_shm;
        net += p->t_net;
        netgdr += p->t_netgdr;
        coll += p->t_collnet;
        int seen = 0;
        for (size_t k = 0; k < json_array_size(hosts) && p->host[0]; k++)
            seen |= strcmp(json_string_value(json_array_get(hosts, k)), p->host) == 0;
        if (!seen && p->host[0])
            json_array_append_new(hosts, json_string(p->host));
        seen = 0;
        for (size_t k = 0; k < json_array_size(vers) && p->version[0]; k++)
            seen |= strcmp(json_string_value(json_array_get(vers, k)), p->version) == 0;
        if (!seen && p->version[0])
            json_array_append_new(vers, json_string(p->version));
    }
    if (ex->tests_version[0]) {
        int seen = 0;
        for (size_t k = 0; k < json_array_size(vers); k++)
            seen |= strcmp(json_string_value(json_array_get(vers, k)), ex->tests_version) == 0;
        if (!seen)
            json_array_append_new(vers, json_string(ex->tests_version));
    }
    for (size_t i = 0; i < ex->nenv; i++)
        if (!json_object_get(env, ex->env[i].name))
            json_object_set_new(env, ex->env[i].name, json_string(ex->env[i].value));
    for (size_t i = 0; i < ex->ngpus; i++)
        json_array_append_new(gpus, json_pack("{s:s, s:i, s:i, s:s}", "host", ex->gpus[i].host,
                                              "rank", ex->gpus[i].rank, "device", ex->gpus[i].dev,
                                              "name", ex->gpus[i].name));
    json_object_set_new(tr, "p2p", json_integer((json_int_t)p2p));
    json_object_set_new(tr, "shm", json_integer((json_int_t)shm));
    json_object_set_new(tr, "net", json_integer((json_int_t)net));
    json_object_set_new(tr, "net_gdr", json_integer((json_int_t)netgdr));
    json_object_set_new(tr, "collnet", json_integer((json_int_t)coll));
    json_object_set_new(o, "hosts", hosts);
    json_object_set_new(o, "nccl_versions", vers);
    json_object_set_new(o, "env", env);
    json_object_set_new(o, "transports", tr);
    json_object_set_new(o, "gpus", gpus);
    json_object_set_new(o, "processes", procs);
    json_object_set_new(o, "processes_truncated", json_boolean(ex->procs_dropped));
    json_object_set_new(o, "lines", json_integer((json_int_t)ex->lines));
    json_object_set_new(o, "nccl_lines", json_integer((json_int_t)ex->nccl_lines));
    return o;
fail:
    json_decref(o);
    json_decref(procs);
    json_decref(hosts);
    json_decref(vers);
    json_decref(env);
    json_decref(gpus);
    json_decref(tr);
    return NULL;
}

/* Per-host aggregate for the text summary. */
struct hostsum {
    const struct ncd__proc *first;
    size_t nprocs, ncomplete;
    int rmin, rmax, nranks;
    unsigned long long p2p, shm, net, netgdr;
    unsigned gdr_on, gdr_off;
    double slowest;
    char phase; /* last phase of a process that did not complete */
};

/* One block per host (processes aggregated) so 512 ranks print as a few
 * lines. */
void ncd_explain_facts_text(const struct ncd_explain *ex,
                            struct ncd_strbuf *out)
{
    ncd_sb_printf(out,
                  "Facts from %llu line%s (%llu NCCL line%s, %zu process%s%s):\n",
                  ex->lines, ex->lines == 1 ? "" : "s", ex->nccl_lines,
                  ex->nccl_lines == 1 ? "" : "s", ex->nprocs,
                  ex->nprocs == 1 ? "" : "es",
                  ex->procs_dropped ? ", more not tracked" : "");
    /* versions */
    struct ncd_strbuf vers = {0};
    size_t nv = 0;
    for (size_t i = 0; i < ex->nprocs; i++) {
        const struct ncd__proc *p = &ex->procs[i];
        int seen = 0;
        for (size_t k = 0; k < i && !seen; k++)
            seen = ex->procs[k].vcode == p->vcode;
        if (!seen && p->version[0] && nv < 8) {
            ncd_sb_printf(&vers, "%s%s%s%s", nv ? ", " : "", p->version,
                          p->cuda[0] ? "+cuda" : "", p->cuda);
            nv++;
        }
    }
    if (ex->tests_version[0])
        ncd_sb_printf(&vers, "%s%s (nccl-tests)", nv++ ? ", " : "", ex->tests_version);
    ncd_sb_printf(out, "  NCCL:    %s\n", nv ? ncd_sb_str(&vers) : "version not in the log");
    ncd_sb_release(&vers);

    /* hosts: small open-addressing table of aggregates */
    size_t cap = 64;
    while (cap < ex->nprocs * 2)
        cap *= 2;
    struct hostsum *hs = calloc(cap, sizeof *hs);
    size_t *order = malloc(cap * sizeof *order);
    size_t nh = 0;
    if (!hs || !order) {
        free(hs);
        free(order);
        return;
    }
    for (size_t i = 0; i < ex->nprocs; i++) {
        const struct ncd__proc *p = &ex->procs[i];
        size_t k = ncd__hash_proc(p->host, p->hostlen, 0) & (cap - 1);
        while (hs[k].first && strcmp(hs[k].first->host, p->host) != 0)
            k = (k + 1) & (cap - 1);
        struct hostsum *h = &hs[k];
        if (!h->first) {
            h->first = p;
            h->rmin = h->rmax = -1;
            order[nh++] = k;
        }
        h->nprocs++;
        h->ncomplete += p->ncomplete > 0;
        if (p->rank >= 0) {
            if (h->rmin < 0 || p->rank < h->rmin)
                h->rmin = p->rank;
            if (p->rank > h->rmax)
                h->rmax = p->rank;
        }
        if (p->nranks > h->nranks)
            h->nranks = p->nranks;
        h->p2p += p->t_p2p;
        h->shm += p->t_shm;
        h->net += p->t_net;
        h->netgdr += p->t_netgdr;
        h->gdr_on += p->gdr_on;
        h->gdr_off += p->gdr_off;
        if (p->init_total > h->slowest)
            h->slowest = p->init_total;
        if (!p->ncomplete && p->phase > h->phase)
            h->phase = (char)p->phase;
    }
    /* hosts as the header and the JSON count them: named ones only */
    size_t unnamed = 0;
    for (size_t o = 0; o < nh; o++)
        unnamed += !hs[order[o]].first->host[0];
    ncd_sb_printf(out, "  hosts:   %zu%s\n", nh - unnamed,
                  unnamed ? " (and processes whose lines name no host)" : "");
    for (size_t o = 0; o < nh && o < 16; o++) {
        const struct hostsum *h = &hs[order[o]];
        const struct ncd__proc *p = h->first;
        ncd_sb_printf(out, "  %s: %zu process%s", p->host[0] ? p->host : "(no host name)",
                      h->nprocs, h->nprocs == 1 ? "" : "es");
        if (h->rmin >= 0)
            ncd_sb_printf(out, ", rank%s %d%s%.0d of %d", h->rmin == h->rmax ? "" : "s",
                          h->rmin, h->rmin == h->rmax ? "" : "-",
                          h->rmin == h->rmax ? 0 : h->rmax, h->nranks);
        if (p->version[0])
            ncd_sb_printf(out, ", NCCL %s", p->version);
        if (p->driver)
            ncd_sb_printf(out, ", CUDA driver %d.%d", p->driver / 1000, p->driver % 1000 / 10);
        ncd_sb_putc(out, '\n');
        if (p->nboot) {
            ncd_sb_puts(out, "      bootstrap:  ");
            for (int k = 0; k < p->nboot; k++)
                ncd_sb_printf(out, "%s%s %s", k ? ", " : "", p->boot[k].name, p->boot[k].addr);
            ncd_sb_putc(out, '\n');
        }
        if (p->net[0] || p->nsock || p->nib) {
            ncd_sb_printf(out, "      network:    %s", p->net[0] ? p->net : "?");
            for (int k = 0; k < p->nib; k++)
                ncd_sb_printf(out, " %s", p->ib[k]);
            for (int k = 0; k < p->nsock; k++)
                ncd_sb_printf(out, " %s(%s)", p->sock[k].name, p->sock[k].addr);
            if (p->plugin == 2)
                ncd_sb_printf(out, ", plugin %s", p->plugin_name);
            if (h->gdr_on || h->gdr_off)
                ncd_sb_printf(out, ", GPUDirect RDMA %s", h->gdr_on ? "on" : "off");
            ncd_sb_putc(out, '\n');
        }
        if (h->p2p || h->shm || h->net)
            ncd_sb_printf(out, "      transports: P2P %llu, SHM %llu, NET %llu (GDR %llu) connections\n",
                          h->p2p, h->shm, h->net, h->netgdr);
        if (h->ncomplete || h->phase) {
            ncd_sb_printf(out, "      init:       %zu/%zu complete", h->ncomplete, h->nprocs);
            if (h->slowest > 0)
                ncd_sb_printf(out, ", slowest %.2f s", h->slowest);
            if (h->ncomplete < h->nprocs && h->phase)
                ncd_sb_printf(out, "; the others stopped in phase %s", phase_name(h->phase));
            ncd_sb_putc(out, '\n');
        }
        if (p->ring[0])
            ncd_sb_printf(out, "      ring:       %s\n", p->ring);
    }
    if (nh > 16)
        ncd_sb_printf(out, "  ... %zu more hosts (see --json)\n", nh - 16);
    free(hs);
    free(order);
    for (size_t i = 0; i < ex->ngpus && i < 16; i++)
        ncd_sb_printf(out, "  GPU: rank %d on %s device %d: %s\n", ex->gpus[i].rank,
                      ex->gpus[i].host, ex->gpus[i].dev, ex->gpus[i].name);
    if (ex->nenv) {
        ncd_sb_puts(out, "  env (echoed by NCCL):\n");
        for (size_t i = 0; i < ex->nenv && i < 32; i++)
            ncd_sb_printf(out, "      %s=%s%s%s\n", ex->env[i].name, ex->env[i].value,
                          ex->env[i].host[0] ? "  on " : "", ex->env[i].host);
    }
}
