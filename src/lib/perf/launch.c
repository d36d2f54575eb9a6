/* SPDX-License-Identifier: MIT */
/*
 * Launcher detection (../shared/reference/ecosystem.md section 2) and the
 * choice of the data interface of the socket backend (NCCL's rules:
 * ../shared/reference/nccl-facts.md sections 1 and 2).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncd/ctx.h"
#include "ncd/error.h"
#include "ncd/nccl.h"
#include "ncd/netif.h"
#include "ncd/perf.h"
#include "ncd/recommend.h"
#include "perf/net_int.h"

static int env_int(struct ncd_ctx *ctx, const char *name, int *out)
{
    const char *v = ncd_getenv(ctx, name);
    if (!v)
        return 0;
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (end == v || *end || errno || x < 0 || x > 1000000000)
        return ncd_fail(ctx, NCD_EPARSE, "%s='%s' is not a number", name, v);
    *out = (int)x;
    return 1;
}

struct layout {
    const char *name, *rank, *size, *lrank, *lsize;
    int mpi;
};

static const struct layout layouts[] = {
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", 0},
    {"paddle", "PADDLE_TRAINER_ID", "PADDLE_TRAINERS_NUM",
     "PADDLE_RANK_IN_NODE", "PADDLE_LOCAL_SIZE", 0},
    {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
     "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", 1},
    {"MPICH", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", 1},
    {"MVAPICH2", "MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE",
     "MV2_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_SIZE", 1},
    {"Slurm srun", "SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_LOCALID",
     "SLURM_STEP_TASKS_PER_NODE", 0},
    {"Slurm srun", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", NULL, 0},
};

static void set_master(struct ncd_launch *l, const char *hp)
{
    char host[256];
    int port;
    if (hp && ncd__split_hostport(hp, host, sizeof host, &port) == 0) {
        snprintf(l->master_addr, sizeof l->master_addr, "%s", host);
        l->master_port = port;
    }
}

/*
 * First host of a Slurm host list ("gpu[07-10,12],login1" -> "gpu07"):
 * the prefix plus the first number of the first bracket, zero padding
 * kept.  Returns 0, or -1 when the list is empty or malformed.
 */
int ncd__slurm_first_host(const char *list, char *out, size_t len)
{
    if (!list || !*list || len < 2)
        return -1;
    size_t n = 0;
    const char *p = list;
    while (*p && *p != ',' && *p != '[' && n + 1 < len)
        out[n++] = *p++;
    if (*p == '[') {
        p++;
        while (*p >= '0' && *p <= '9' && n + 1 < len)
            out[n++] = *p++;
        if (*p != '-' && *p != ',' && *p != ']')
            return -1;
    }
    out[n] = '\0';
    return n ? 0 : -1;
}

int ncd_perf_detect_launcher(struct ncd_ctx *ctx, struct ncd_launch *out)
{
    memset(out, 0, sizeof *out);
    out->local_rank = out->local_size = -1;
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++) {
        const struct layout *L = &layouts[i];
        int rank = 0, size = 0;
        int a = env_int(ctx, L->rank, &rank);
        if (a < 0)
            return a;
        int b = env_int(ctx, L->size, &size);
        if (b < 0) {
            /* SLURM_STEP_TASKS_PER_NODE style values are not numbers */
            if (strncmp(L->size, "SLURM", 5) == 0) {
                ncd_ctx_clear_error(ctx);
                continue;
            }
            return b;
        }
        if (!a || !b)
            continue;
        if (size < 1 || rank >= size)
            return ncd_fail(ctx, NCD_EPARSE,
                            "%s=%d is out of range for %s=%d", L->rank, rank,
                            L->size, size);
        out->launcher = L->name;
        out->rank = rank;
        out->size = size;
        out->is_mpi = L->mpi;
        int lr = -1, ls = -1;
        if (L->lrank && env_int(ctx, L->lrank, &lr) == 1)
            out->local_rank = lr;
        else if (i == 1 && env_int(ctx, "PADDLE_LOCAL_RANK", &lr) == 1)
            out->local_rank = lr;
        if (L->lsize) {
            int r = env_int(ctx, L->lsize, &ls);
            if (r == 1)
                out->local_size = ls;
            else
                ncd_ctx_clear_error(ctx);
        }
        if (i == 1) {
            const char *m = ncd_getenv(ctx, "PADDLE_MASTER");
            if (m && *m) {
                set_master(out, m);
            } else {
                const char *eps = ncd_getenv(ctx, "PADDLE_TRAINER_ENDPOINTS");
                if (eps && *eps) {
                    char first[300];
                    snprintf(first, sizeof first, "%s", eps);
                    char *comma = strchr(first, ',');
                    if (comma)
                        *comma = '\0';
                    set_master(out, first);
                }
            }
        }
        if (strncmp(L->name, "Slurm", 5) == 0) {
            /* rank 0 runs on the first node of the step; the port is
             * derived from the job and step ids so every rank agrees */
            const char *nl = ncd_getenv(ctx, "SLURM_STEP_NODELIST");
            if (!nl || !*nl)
                nl = ncd_getenv(ctx, "SLURM_JOB_NODELIST");
            int job = 0, step = 0;
            if (ncd__slurm_first_host(nl, out->master_addr,
                                      sizeof out->master_addr) == 0 &&
                env_int(ctx, "SLURM_JOB_ID", &job) == 1) {
                env_int(ctx, "SLURM_STEP_ID", &step);
                out->master_port = 20000 + (job * 7 + step) % 10000;
            } else {
                out->master_addr[0] = '\0';
            }
            ncd_ctx_clear_error(ctx);
        }
        const char *ma = ncd_getenv(ctx, "MASTER_ADDR");
        int mp = 0;
        if (ma && *ma && env_int(ctx, "MASTER_PORT", &mp) == 1) {
            snprintf(out->master_addr, sizeof out->master_addr, "%s", ma);
            out->master_port = mp;
        }
        ncd_ctx_clear_error(ctx);
        return size > 1 || out->master_port ? 1 : 0;
    }
    return 0;
}

static int addr_of(const struct ifaddrs *ifa, char *addr, size_t len)
{
    if (!ifa->ifa_addr)
        return 0;
    int fam = ifa->ifa_addr->sa_family;
    if (fam != AF_INET && fam != AF_INET6)
        return 0;
    if (fam == AF_INET6) {
        const struct sockaddr_in6 *s6 = (const void *)ifa->ifa_addr;
        if (IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr))
            return 0;
    }
    ncd__addr_str(ifa->ifa_addr, addr, len, NULL);
    return 1;
}

/* First address of the first interface accepted by `pred` in getifaddrs
 * order; IPv4 preferred within an interface. */
static int first_match(struct ifaddrs *list, int (*pred)(const char *, void *),
                       void *arg, int need_running, char *ifname,
                       size_t iflen, char *addr, size_t addrlen)
{
    for (int pass = 0; pass < 2; pass++) {
        for (struct ifaddrs *i = list; i; i = i->ifa_next) {
            if (!i->ifa_addr || !i->ifa_name)
                continue;
            if (need_running && !(i->ifa_flags & IFF_RUNNING))
                continue;
            int fam = i->ifa_addr->sa_family;
            if ((pass == 0 && fam != AF_INET) ||
                (pass == 1 && fam != AF_INET6))
                continue;
            if (!pred(i->ifa_name, arg))
                continue;
            if (addr_of(i, addr, addrlen)) {
                snprintf(ifname, iflen, "%s", i->ifa_name);
                return 1;
            }
        }
    }
    return 0;
}

static int pred_name(const char *name, void *arg)
{
    return strcmp(name, arg) == 0;
}

int ncd_perf_pick_iface(struct ncd_ctx *ctx, const char *iface,
                        const char *local_addr, int local_only, char *ifname,
                        size_t iflen, char *addr, size_t addrlen, char *why,
                        size_t whylen)
{
    /* 1. --iface */
    if (iface && *iface) {
        struct ifaddrs *list = NULL;
        if (getifaddrs(&list) < 0) {
            snprintf(why, whylen, "getifaddrs: %s", strerror(errno));
            return NCD_ENOENT;
        }
        int ok = first_match(list, pred_name, (void *)iface, 0, ifname, iflen,
                             addr, addrlen);
        freeifaddrs(list);
        if (!ok) {
            snprintf(why, whylen, "interface '%s' has no IPv4/IPv6 address "
                                  "(or does not exist)",
                     iface);
            return NCD_ENOENT;
        }
        return 0;
    }
    struct ncd_netif_list nl;
    memset(&nl, 0, sizeof nl);
    int rc = ncd_netif_probe(ctx, &nl);
    if (rc < 0) {
        ncd_ctx_clear_error(ctx);
        memset(&nl, 0, sizeof nl);
    }
    /* 2. NCCL_SOCKET_IFNAME, exactly as NCCL would pick (ncd_nccl_select) */
    const char *spec = ncd_getenv(ctx, "NCCL_SOCKET_IFNAME");
    if (spec && strlen(spec) > 1) {
        struct ncd_nccl_choice ch;
        int ok = rc >= 0 && ncd_nccl_select(ctx, &nl, 0, &ch) == 0 &&
                 ch.n_socket > 0;
        if (ok) {
            snprintf(ifname, iflen, "%s", ch.socket[0]);
            snprintf(addr, addrlen, "%s", ch.socket_addr[0]);
        } else {
            snprintf(why, whylen,
                     "NCCL_SOCKET_IFNAME=%s matches no running interface "
                     "with an address (NCCL fails the same way: \"Bootstrap "
                     ": no socket interface found\")",
                     spec);
        }
        ncd_netif_list_release(&nl);
        return ok ? 0 : NCD_ENOENT;
    }
    /* 3. one host (-np, a single process): loopback */
    if (local_only) {
        ncd_netif_list_release(&nl);
        snprintf(ifname, iflen, "lo");
        snprintf(addr, addrlen, "127.0.0.1");
        return 0;
    }
    /* 4. the interface nccl-doctor recommends for NCCL */
    int ok = 0;
    struct ncd_recommendation rec;
    memset(&rec, 0, sizeof rec);
    if (rc >= 0 && ncd_recommend(ctx, &nl, &rec) == 0 && rec.best &&
        rec.best->addr) {
        snprintf(ifname, iflen, "%s", rec.best->ni->name);
        snprintf(addr, addrlen, "%s", rec.best->addr->addr);
        ok = 1;
    }
    ncd_recommendation_release(&rec);
    ncd_netif_list_release(&nl);
    ncd_ctx_clear_error(ctx);
    if (ok)
        return 0;
    /* 5. nothing recommended: the address that reached the rendezvous */
    if (local_addr && *local_addr) {
        snprintf(ifname, iflen, "?");
        snprintf(addr, addrlen, "%s", local_addr);
        return 0;
    }
    snprintf(why, whylen, "no usable interface (UP, RUNNING, with a "
                          "routable address): see `nccl-doctor ifaces`");
    return NCD_ENOENT;
}
