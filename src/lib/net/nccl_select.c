/* SPDX-License-Identifier: MIT */
/* NCCL's socket interface selection, predicted per version.
 * Facts: shared/reference/nccl-facts.md §1-3 (NCCL src/misc/socket.cc,
 * src/os/linux.cc, src/misc/utils.cc, src/bootstrap.cc; 2.30.7 and the
 * versions where behaviour changed). */
#define _GNU_SOURCE
#include "ncd/error.h"
#include "ncd/fs.h"
#include "ncd/nccl.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* First NCCL versions with a behaviour change. */
#define V_RUNNING_AND_VIRBR 22800 /* IFF_RUNNING filter; virbr demoted */

void ncd_nccl_iflist_parse(const char *value, int max_tokens,
                           struct ncd_nccl_iflist *out)
{
    memset(out, 0, sizeof *out);
    if (max_tokens > 32)
        max_tokens = 32;
    if (!value)
        return;
    /* NCCL: "if (env && strlen(env) > 1)" -- one character is ignored. */
    if (strlen(value) <= 1) {
        out->ignored = 1;
        return;
    }
    out->set = 1;
    const char *p = value;
    if (*p == '^') {
        out->exclude = 1;
        p++;
    }
    if (*p == '=') {
        out->exact = 1;
        p++;
        if (!out->exclude && *p == '^')
            out->eq_before_caret = 1;
    }
    /* parseStringList: split on ',', "name:port", empty tokens dropped,
     * no trimming. */
    for (;;) {
        size_t len = strcspn(p, ",");
        if (len == 0) {
            if (*p == ',')
                out->dropped_empty++;
        } else if (out->n >= max_tokens) {
            out->truncated = 1;
        } else {
            struct ncd_nccl_iflist_token *t = &out->tok[out->n++];
            size_t nl = strcspn(p, ":");
            if (nl > len)
                nl = len;
            if (nl >= sizeof t->name)
                nl = sizeof t->name - 1;
            memcpy(t->name, p, nl);
            t->name[nl] = '\0';
            t->port = nl < len ? atoi(p + nl + 1) : -1;
            if (nl && (isspace((unsigned char)t->name[0]) ||
                       isspace((unsigned char)t->name[nl - 1])))
                out->has_space = 1;
        }
        p += len;
        if (*p != ',')
            break;
        p++;
        if (!*p)
            out->dropped_empty++; /* trailing comma */
    }
}

int ncd_nccl_iflist_match(const struct ncd_nccl_iflist *l, const char *name,
                          int port)
{
    /* matchIfList: an empty list matches everything (then '^' inverts). */
    int m = l->n == 0;
    for (int i = 0; i < l->n && !m; i++) {
        const struct ncd_nccl_iflist_token *t = &l->tok[i];
        int nm = l->exact ? strcmp(name, t->name) == 0
                          : strncmp(name, t->name, strlen(t->name)) == 0;
        int pm = port == -1 || t->port == -1 || port == t->port;
        m = nm && pm;
    }
    return l->exclude ? !m : m;
}

struct filter {
    const struct ncd_nccl_iflist *list;
    int family;       /* AF_UNSPEC = any */
    int need_running;
};

static int addr_ok(const struct ncd_ifaddr_entry *e, const struct filter *f)
{
    if (e->a.family != AF_INET && e->a.family != AF_INET6)
        return 0;
    if (f->family != AF_UNSPEC && e->a.family != f->family)
        return 0;
    if (f->need_running && !(e->flags & IFF_RUNNING))
        return 0;
    if (e->a.family == AF_INET6 && e->a.loopback)
        return 0; /* ::1 skipped; fe80:: kept */
    return ncd_nccl_iflist_match(f->list, e->name, -1);
}

/* findInterfaces(): walk getifaddrs order, first address per name. */
static int find_ifs(const struct ncd_netif_list *nl, const struct filter *f,
                    int max, struct ncd_nccl_choice *out)
{
    int n = 0;
    for (size_t i = 0; i < nl->n_ifa && n < max; i++) {
        const struct ncd_ifaddr_entry *e = &nl->ifa[i];
        if (!addr_ok(e, f))
            continue;
        int dup = 0;
        for (int j = 0; j < n && !dup; j++)
            dup = strcmp(out->socket[j], e->name) == 0;
        if (dup)
            continue;
        snprintf(out->socket[n], sizeof out->socket[n], "%s", e->name);
        snprintf(out->socket_addr[n], sizeof out->socket_addr[n], "%s",
                 e->a.addr);
        n++;
    }
    return n;
}

static int mask_eq(const unsigned char *a, const unsigned char *b, int bits)
{
    for (int i = 0; bits > 0; i++, bits -= 8) {
        unsigned char m = bits >= 8 ? 0xff : (unsigned char)(0xff << (8 - bits));
        if ((a[i] & m) != (b[i] & m))
            return 0;
    }
    return 1;
}

/* Looks a name up in <sysroot>/etc/hosts (first address wins, as
 * getaddrinfo's files backend does). */
static int hosts_lookup(struct ncd_ctx *ctx, const char *name,
                        struct ncd_if_addr *a)
{
    char *buf;
    int found = 0;
    if (ncd_fs_read(ctx, "/etc/hosts", 1 << 20, &buf, NULL) == 0) {
        char *save = NULL;
        for (char *line = strtok_r(buf, "\n", &save); line && !found;
             line = strtok_r(NULL, "\n", &save)) {
            char *hash = strchr(line, '#');
            if (hash)
                *hash = '\0';
            char *s2 = NULL, *addr = strtok_r(line, " \t", &s2);
            for (char *n = addr ? strtok_r(NULL, " \t", &s2) : NULL; n && !found;
                 n = strtok_r(NULL, " \t", &s2))
                if (strcasecmp(n, name) == 0 &&
                    ncd_if_addr_from_string(a, addr, 128) == 0)
                    found = 1;
        }
        free(buf);
    }
    ncd_ctx_clear_error(ctx);
    if (!found && strcasecmp(name, "localhost") == 0)
        found = ncd_if_addr_from_string(a, "127.0.0.1", 32) == 0;
    return found;
}

/* NCCL_COMM_ID forms: ip:port, [ipv6]:port, [ipv6%if]:port, host:port
 * (ncclSocketGetAddrFromString, NCCL src/misc/socket.cc). */
static int parse_comm_id(struct ncd_ctx *ctx, const char *v,
                         struct ncd_nccl_choice *out,
                         struct ncd_if_addr *a)
{
    char host[128];
    const char *port;
    if (v[0] == '[') {
        const char *rb = strchr(v, ']');
        if (!rb || rb[1] != ':' || (size_t)(rb - v - 1) >= sizeof host) {
            snprintf(out->comm_id_error, sizeof out->comm_id_error,
                     "'[' without ']:<port>'");
            return -1;
        }
        snprintf(host, sizeof host, "%.*s", (int)(rb - v - 1), v + 1);
        port = rb + 2;
        if (ncd_if_addr_from_string(a, host, 128) < 0 ||
            a->family != AF_INET6) {
            snprintf(out->comm_id_error, sizeof out->comm_id_error,
                     "'%s' is not an IPv6 address", host);
            return -1;
        }
    } else {
        const char *colon = strrchr(v, ':');
        if (!colon || colon == v || (size_t)(colon - v) >= sizeof host) {
            snprintf(out->comm_id_error, sizeof out->comm_id_error,
                     "no ':<port>'");
            return -1;
        }
        snprintf(host, sizeof host, "%.*s", (int)(colon - v), v);
        port = colon + 1;
        if (strchr(host, ':')) {
            snprintf(out->comm_id_error, sizeof out->comm_id_error,
                     "an IPv6 address needs brackets: [%s]:%s", host, port);
            return -1;
        }
    }
    char *end;
    long pn = strtol(port, &end, 10);
    if (!*port || *end || pn < 1 || pn > 65535) {
        snprintf(out->comm_id_error, sizeof out->comm_id_error,
                 "port '%s' is not 1-65535", port);
        return -1;
    }
    snprintf(out->comm_id_host, sizeof out->comm_id_host, "%s", host);
    if (v[0] == '[')
        return 0;
    if (ncd_if_addr_from_string(a, host, 32) == 0 && a->family == AF_INET)
        return 0;
    int dotted = strspn(host, "0123456789.") == strlen(host);
    if (dotted) {
        snprintf(out->comm_id_error, sizeof out->comm_id_error,
                 "'%s' is not a valid IPv4 address", host);
        return -1;
    }
    if (hosts_lookup(ctx, host, a))
        return 0;
    out->comm_id_unresolved = 1;
    return 0;
}

static const char *const pass_names[] = {
    "NCCL_SOCKET_IFNAME",
    "interfaces named ib*",
    "the interface on NCCL_COMM_ID's subnet",
    "any interface except docker*, lo* and virbr*",
    "docker* (nothing else was usable)",
    "lo* (nothing else was usable)",
    "virbr* (nothing else was usable)",
};

int ncd_nccl_select(struct ncd_ctx *ctx, const struct ncd_netif_list *nl,
                    int version, struct ncd_nccl_choice *out)
{
    memset(out, 0, sizeof *out);
    if (!version)
        version = NCD_NCCL_NEWEST;
    if (version < 20000)
        return ncd_fail(ctx, NCD_EINVAL, "NCCL %d is too old to predict",
                        version);
    out->version = version;
    int newer = version >= V_RUNNING_AND_VIRBR;

    const char *fam = ncd_getenv(ctx, "NCCL_SOCKET_FAMILY");
    out->family = AF_UNSPEC;
    if (fam && strcmp(fam, "AF_INET") == 0)
        out->family = AF_INET;
    else if (fam && strcmp(fam, "AF_INET6") == 0)
        out->family = AF_INET6;
    else if (fam && *fam)
        out->family_ignored = 1;

    ncd_nccl_iflist_parse(ncd_getenv(ctx, "NCCL_SOCKET_IFNAME"), 16,
                          &out->ifname);

    /* NCCL_COMM_ID: parsed for the bootstrap and for pass 2. */
    const char *cid = ncd_getenv(ctx, "NCCL_COMM_ID");
    struct ncd_if_addr remote;
    int cid_ok = 0;
    /* NCCL: "if (env && strlen(env) > 1)" for NCCL_COMM_ID too. */
    if (cid && strlen(cid) > 1) {
        cid_ok = parse_comm_id(ctx, cid, out, &remote) == 0;
        out->comm_id_invalid = !cid_ok;
    }
    int subnet_idx = -1;
    if (cid_ok && !out->comm_id_unresolved) {
        for (size_t i = 0; i < nl->n_ifa && subnet_idx < 0; i++) {
            const struct ncd_ifaddr_entry *e = &nl->ifa[i];
            if (e->a.family != remote.family)
                continue;
            if (remote.family == AF_INET6 && remote.scope_id &&
                e->a.scope_id != remote.scope_id)
                continue;
            if (mask_eq(e->a.bytes, remote.bytes, e->a.prefix))
                subnet_idx = (int)i;
        }
    }

    struct filter f = {.family = out->family, .need_running = newer};
    if (out->ifname.set) {
        f.list = &out->ifname;
        out->n_socket = find_ifs(nl, &f, 16, out);
        out->pass = 0;
    } else {
        static const char *const passes_new[] = {"^docker,lo,virbr", "docker",
                                                 "lo", "virbr"};
        static const char *const passes_old[] = {"^docker,lo", "docker",
                                                 "lo"};
        struct ncd_nccl_iflist l;
        ncd_nccl_iflist_parse("ib", 16, &l);
        f.list = &l;
        out->n_socket = find_ifs(nl, &f, 16, out);
        out->pass = 1;
        if (!out->n_socket && subnet_idx >= 0) {
            const struct ncd_ifaddr_entry *e = &nl->ifa[subnet_idx];
            snprintf(out->socket[0], sizeof out->socket[0], "%s", e->name);
            snprintf(out->socket_addr[0], sizeof out->socket_addr[0], "%s",
                     e->a.addr);
            out->n_socket = 1;
            out->pass = 2;
        }
        const char *const *passes = newer ? passes_new : passes_old;
        int np = newer ? 4 : 3;
        for (int p = 0; p < np && !out->n_socket; p++) {
            ncd_nccl_iflist_parse(passes[p], 16, &l);
            out->n_socket = find_ifs(nl, &f, 16, out);
            out->pass = 3 + p;
        }
        if (!out->n_socket)
            out->pass = 0;
    }
    out->pass_name = pass_names[out->pass];

    if (cid && strlen(cid) > 1) {
        /* bootstrapNetInit with NCCL_COMM_ID: only the subnet match, which
         * ignores NCCL_SOCKET_IFNAME, NCCL_SOCKET_FAMILY and IFF_RUNNING. */
        out->via_comm_id = 1;
        if (subnet_idx >= 0) {
            snprintf(out->bootstrap, sizeof out->bootstrap, "%s",
                     nl->ifa[subnet_idx].name);
            snprintf(out->bootstrap_addr, sizeof out->bootstrap_addr, "%s",
                     nl->ifa[subnet_idx].a.addr);
        }
    } else if (out->n_socket) {
        snprintf(out->bootstrap, sizeof out->bootstrap, "%s", out->socket[0]);
        snprintf(out->bootstrap_addr, sizeof out->bootstrap_addr, "%s",
                 out->socket_addr[0]);
    }
    return 0;
}
