/* SPDX-License-Identifier: MIT */
/* NCCL's socket interface selection, predicted per version.
 * Facts: shared/reference/nccl-facts.md §1-3 (NCCL src/misc/socket.cc,
 * src/os/linux.cc, src/misc/utils.cc, src/bootstrap.cc; 2.30.7 and the
 * versions where behaviour changed). */
#define _GNU_SOURCE
#include "ncd/error.h"
#include "ncd/fs.h"
#include "ncd/nccl.h"
#include "ncd/resolve.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* First NCCL versions with a behaviour change, each with the NCCL source
 * line that shows it (facts for releases that cannot be run here):
 *  - 2.28: v2.28.3-1 src/misc/socket.cc:153 "if (!(interface->ifa_flags &
 *    IFF_RUNNING)) continue;" and :384 findInterfaces("^docker,lo,virbr"),
 *    then virbr after lo (:387); v2.27.7-1 has neither.
 *  - 2.27: v2.27.3-1 src/misc/socket.cc:376 "NCCLCHECK(
 *    ncclSocketGetAddrFromString(&idAddr, commId));" (a value that does not
 *    parse fails ncclFindInterfaces, so the Socket transport and the IB
 *    OOB find nothing) and :377 a single subnet match; v2.26.6-1 :370
 *    ignores the parse result and :257 keeps up to maxIfs matches. */
#define V_RUNNING_AND_VIRBR 22800
#define V_COMMID_CHECKED 22700

/* NCCL's WARN texts (src/bootstrap.cc, src/transport/net_socket.cc). */
static const char W_NO_IF[] = "Bootstrap : no socket interface found";
static const char W_NO_LISTEN[] =
    "NET/Socket : No usable listening interface found";
static const char W_INVALID[] =
    "Invalid NCCL_COMM_ID, please use format: <ipv4>:<port> or "
    "[<ipv6>]:<port> or <hostname>:<port>";
static const char W_SOCK_NONE[] = "NET/Socket : no interface found";

static void parse_list(const char *value, int max_tokens, int short_ignored,
                       struct ncd_nccl_iflist *out);

void ncd_nccl_iflist_parse(const char *value, int max_tokens,
                           struct ncd_nccl_iflist *out)
{
    parse_list(value, max_tokens, 1, out);
}

void ncd_nccl_hca_parse(const char *value, struct ncd_nccl_iflist *out)
{
    parse_list(value, 32, 0, out);
}

static void parse_list(const char *value, int max_tokens, int short_ignored,
                       struct ncd_nccl_iflist *out)
{
    memset(out, 0, sizeof *out);
    if (max_tokens > 32)
        max_tokens = 32;
    if (!value)
        return;
    /* NCCL_SOCKET_IFNAME: "if (env && strlen(env) > 1)" -- one character
     * is ignored.  NCCL_IB_HCA has no such test (net_ib.cc). */
    if (short_ignored && strlen(value) <= 1) {
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

static void put_socket(struct ncd_nccl_choice *out,
                       const struct ncd_ifaddr_entry *e)
{
    int n = out->n_socket;
    snprintf(out->socket[n], sizeof out->socket[n], "%s", e->name);
    snprintf(out->socket_addr[n], sizeof out->socket_addr[n], "%s",
             e->a.addr);
    out->n_socket++;
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
        out->n_socket = n;
        put_socket(out, e);
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

/* NCCL_COMM_ID as ncclSocketGetAddrFromString (NCCL src/misc/socket.cc;
 * the same from 2.7 to 2.30.7) parses it:
 *  - fewer than two characters: WARN "Net : string is null", invalid;
 *  - "[addr]" or "[addr%if]" then any one character, then the port: the
 *    address goes through inet_pton(AF_INET6) *unchecked* (a bad one
 *    leaves the address uninitialised), the scope is if_nametoindex(if),
 *    0 without '%' (socket.cc: "sin6_scope_id = global_scope ? 0 :
 *    if_nametoindex(if_name)"); no ']' is invalid;
 *  - otherwise parseStringList(value, &ni, 1) (src/misc/utils.cc): the
 *    first token that does not start with ':' ends at ':' or ','; its port
 *    is atoi() of what follows ':', -1 without one; no token is invalid.
 *    The host goes through getaddrinfo(AF_UNSPEC, SOCK_STREAM) and the
 *    first answer wins; an IPv6 answer gets scope 0.  A failing lookup is
 *    invalid.
 *  - The port is never range-checked: -1 becomes htons(-1) = 65535, 0
 *    stays 0, bigger values wrap to 16 bits.
 * Returns 0 with `remote` set, 2 when invalid (comm_id_error says why,
 * *warn is NCCL's own WARN text, NULL where NCCL has none),
 * 1 when the answer is unknown here (capture without it, timeout), or
 * NCD_ENOMEM. */
static int parse_comm_id(struct ncd_ctx *ctx, const struct ncd_netif_list *nl,
                         const char *v, struct ncd_nccl_choice *out,
                         struct ncd_if_addr *remote, const char **warn)
{
    memset(remote, 0, sizeof *remote);
    size_t len = strlen(v);
    long port = -1;
    if (len <= 1) {
        snprintf(out->comm_id_error, sizeof out->comm_id_error,
                 "%s: NCCL needs at least two characters ('Net : string is "
                 "null')",
                 len ? "one character" : "empty");
        *warn = "Net : string is null";
        return 2;
    }
    if (v[0] == '[') {
        size_t i, j = 0;
        for (i = 1; i < len && v[i] != ']'; i++)
            if (v[i] == '%')
                j = i;
        if (i == len) {
            snprintf(out->comm_id_error, sizeof out->comm_id_error,
                     "'[' without ']' ('Net : No valid [IPv6]:port pair "
                     "found')");
            *warn = "Net : No valid [IPv6]:port pair found";
            return 2;
        }
        char ip[NI_MAXHOST] = "", ifn[IFNAMSIZ] = "";
        size_t iplen = (j ? j : i) - 1;
        if (iplen >= sizeof ip)
            iplen = sizeof ip - 1;
        memcpy(ip, v + 1, iplen);
        if (j) {
            size_t il = i - j - 1;
            if (il >= sizeof ifn)
                il = sizeof ifn - 1;
            memcpy(ifn, v + j + 1, il);
        }
        /* NCCL copies from v + i + 2: past the end when nothing follows
         * ']' (marked -2 here: the port NCCL uses is undefined). */
        port = i + 1 < len ? atoi(v + i + 2) : -2;
        snprintf(out->comm_id_host, sizeof out->comm_id_host, "%s", ip);
        unsigned char b[16];
        if (inet_pton(AF_INET6, ip, b) != 1) {
            out->comm_id_unchecked = 1;
            snprintf(out->comm_id_error, sizeof out->comm_id_error,
                     "'%s' is not an IPv6 address; NCCL does not check and "
                     "compares an uninitialised address",
                     ip);
        } else {
            ncd_if_addr_from_string(remote, ip, 128);
            /* if_nametoindex in rank 0's namespace: 0 for an unknown
             * name (or a number: NCCL does not take "%2"). */
            const struct ncd_netif *ni =
                ifn[0] ? ncd_netif_find(nl, ifn) : NULL;
            remote->scope_id = ni ? ni->index : 0;
        }
    } else {
        /* parseStringList(v, &ni, 1) */
        const char *p = v;
        while (*p == ':' || *p == ',') {
            if (*p == ':')
                p += strcspn(p, ",");
            if (*p == ',')
                p++;
        }
        size_t hl = strcspn(p, ":,");
        if (!hl) {
            snprintf(out->comm_id_error, sizeof out->comm_id_error,
                     "no host ('Net : No valid <IPv4_or_hostname>:<port> "
                     "pair found')");
            *warn = "Net : No valid <IPv4_or_hostname>:<port> pair found";
            return 2;
        }
        if (hl >= 64) {
            /* struct netIf's prefix[64] (src/include/utils.h) overflows */
            snprintf(out->comm_id_error, sizeof out->comm_id_error,
                     "a host part of %zu characters overflows NCCL's "
                     "64-byte buffer",
                     hl);
            *warn = NULL;
            return 2;
        }
        snprintf(out->comm_id_host, sizeof out->comm_id_host, "%.*s",
                 (int)hl, p);
        if (p[hl] == ':')
            port = atoi(p + hl + 1);
        char why[160];
        int rc = ncd_resolve_first(ctx, out->comm_id_host, 0, remote, why,
                                   sizeof why);
        if (rc == NCD_ENOMEM)
            return rc;
        if (rc == NCD_ENOENT) {
            snprintf(out->comm_id_error, sizeof out->comm_id_error,
                     "host '%s' does not resolve: %s",
                     out->comm_id_host, why);
            *warn = "Net : error encountered when getting address info";
            return 2;
        }
        if (rc < 0) {
            out->comm_id_unresolved = 1;
            snprintf(out->comm_id_error, sizeof out->comm_id_error, "%s",
                     why);
            return 1;
        }
        remote->scope_id = 0; /* "should be global scope, set to 0" */
    }
    out->comm_id_port = port == -2 ? 0 : (int)(port & 0xffff);
    out->comm_id_port_note = port == -1                 ? 1
                             : port == -2               ? 4
                             : port == 0                ? 2
                             : port > 65535 || port < 0 ? 3
                                                        : 0;
    if (!out->comm_id_unchecked)
        snprintf(out->comm_id_addr, sizeof out->comm_id_addr, "%s",
                 remote->addr);
    return 0;
}

/* The scope getifaddrs gives an entry: the interface's index for IPv6
 * link-local addresses, 0 for every other (glibc getifaddrs). */
static int entry_scope(struct ncd_ctx *ctx, const struct ncd_netif_list *nl,
                       const struct ncd_ifaddr_entry *e)
{
    (void)ctx;
    if (e->a.family != AF_INET6 || !e->a.link_local)
        return 0;
    /* live, the kernel's scope of a link-local address is its interface's
     * index; a capture's recorded scope is from another boot or machine */
    const struct ncd_netif *ni = ncd_netif_find(nl, e->name);
    return ni && ni->index ? ni->index : e->a.scope_id;
}

/* matchSubnet (socket.cc; src/os/linux.cc 2.29+): same family, equal
 * under the entry's mask, and for IPv6 an equal scope id: an address
 * without "%if" (scope 0) never matches a link-local entry. */
static int subnet_match(struct ncd_ctx *ctx, const struct ncd_netif_list *nl,
                        const struct ncd_ifaddr_entry *e,
                        const struct ncd_if_addr *remote)
{
    if (e->a.family != remote->family)
        return 0;
    if (e->a.family == AF_INET6 &&
        entry_scope(ctx, nl, e) != remote->scope_id)
        return 0;
    return mask_eq(e->a.bytes, remote->bytes, e->a.prefix);
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

    /* NCCL_COMM_ID: the bootstrap takes it whenever it is set ("if
     * (env)", src/bootstrap.cc), the socket list only when it is longer
     * than one character ("commId && strlen(commId) > 1", socket.cc). */
    const char *cid = ncd_getenv(ctx, "NCCL_COMM_ID");
    struct ncd_if_addr remote;
    int cid_rc = 1;
    const char *cid_warn = NULL;
    if (cid) {
        out->comm_id_set = 1;
        cid_rc = parse_comm_id(ctx, nl, cid, out, &remote, &cid_warn);
        if (cid_rc == NCD_ENOMEM)
            return ncd_fail(ctx, NCD_ENOMEM, "resolving NCCL_COMM_ID");
        out->comm_id_invalid = cid_rc == 2;
    }
    int cid_known = cid_rc == 0 && !out->comm_id_unchecked;
    int list_cid = cid && strlen(cid) > 1;

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
        if (!out->n_socket && list_cid && version >= V_COMMID_CHECKED &&
            out->comm_id_invalid) {
            /* NCCLCHECK fails ncclFindInterfaces before the Socket
             * transport's own WARN: nothing at all. */
            out->socket_error = cid_warn ? cid_warn : W_SOCK_NONE;
            out->pass = 0;
            out->pass_name = "nothing: NCCL_COMM_ID does not parse";
            goto bootstrap;
        }
        if (!out->n_socket && list_cid && cid_known) {
            /* ncclFindInterfaceMatchSubnet: getifaddrs order, any flags
             * and family; one match from 2.27, up to 16 before. */
            int max = version >= V_COMMID_CHECKED ? 1 : 16;
            for (size_t i = 0; i < nl->n_ifa && out->n_socket < max; i++)
                if (subnet_match(ctx, nl, &nl->ifa[i], &remote))
                    put_socket(out, &nl->ifa[i]);
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
    if (!out->n_socket)
        out->socket_error = W_SOCK_NONE;

bootstrap:
    if (cid) {
        /* bootstrapNetInit with NCCL_COMM_ID: only the first subnet match,
         * which ignores NCCL_SOCKET_IFNAME, NCCL_SOCKET_FAMILY and
         * IFF_RUNNING. */
        out->via_comm_id = 1;
        if (out->comm_id_invalid) {
            out->bootstrap_error = W_INVALID;
        } else if (cid_known) {
            for (size_t i = 0; i < nl->n_ifa && !out->bootstrap[0]; i++) {
                const struct ncd_ifaddr_entry *e = &nl->ifa[i];
                if (!subnet_match(ctx, nl, e, &remote))
                    continue;
                snprintf(out->bootstrap, sizeof out->bootstrap, "%s",
                         e->name);
                snprintf(out->bootstrap_addr, sizeof out->bootstrap_addr,
                         "%s", e->a.addr);
                if (entry_scope(ctx, nl, e))
                    snprintf(out->bootstrap_scope,
                             sizeof out->bootstrap_scope, "%s", e->name);
            }
            if (!out->bootstrap[0])
                out->bootstrap_error = W_NO_LISTEN;
        } else if (out->comm_id_unchecked) {
            out->bootstrap_error = W_NO_LISTEN;
        }
        /* unresolved here: no prediction, no error */
    } else if (out->n_socket) {
        snprintf(out->bootstrap, sizeof out->bootstrap, "%s", out->socket[0]);
        snprintf(out->bootstrap_addr, sizeof out->bootstrap_addr, "%s",
                 out->socket_addr[0]);
        for (size_t i = 0; i < nl->n_ifa; i++)
            if (strcmp(nl->ifa[i].name, out->socket[0]) == 0 &&
                strcmp(nl->ifa[i].a.addr, out->socket_addr[0]) == 0 &&
                entry_scope(ctx, nl, &nl->ifa[i])) {
                snprintf(out->bootstrap_scope, sizeof out->bootstrap_scope,
                         "%s", out->socket[0]);
                break;
            }
    } else {
        out->bootstrap_error = W_NO_IF;
    }
    return 0;
}
