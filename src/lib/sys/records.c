/* SPDX-License-Identifier: MIT */
/* Every .ncd/ record format, parsed and written (see ncd/sysops.h):
 * env, ifaddrs, statvfs, dlopen, nccl-libs, nccl-version, nvml, self,
 * resolve; plus /proc/net/tcp, which gather trims to LISTEN lines. */
#define _GNU_SOURCE
#include "ncd/error.h"
#include "ncd/strbuf.h"
#include "ncd/sysops.h"
#include "ncd/version.h"
#include "sys/sys_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

/* Copies a line into a bounded buffer (truncating). */
static void line_copy(char *dst, size_t n, const char *s, size_t l)
{
    size_t c = l < n - 1 ? l : n - 1;
    memcpy(dst, s, c);
    dst[c] = '\0';
}

/* ---- .ncd/env --------------------------------------------------------------- */

int ncd_ctx_load_env(struct ncd_ctx *ctx, const char *buf, size_t len)
{
    /* NAME=value entries copied out, then handed to the context at once so
     * that a bad line keeps the previous environment. */
    char **v = NULL;
    size_t n = 0, cap = 0;
    int rc = 0, lineno = 0;
    const char *p = buf, *end = buf + len;
    while (p < end && rc == 0) {
        const char *e = p;
        while (e < end && *e != '\n' && *e != '\0')
            e++;
        lineno++;
        size_t ll = (size_t)(e - p);
        if (ll && p[ll - 1] == '\r')
            ll--;
        if (ll && *p != '#') {
            const char *eq = memchr(p, '=', ll);
            if (!eq || eq == p) {
                rc = ncd_fail(ctx, NCD_EPARSE,
                              "environment line %d is not NAME=value", lineno);
                break;
            }
            if (n + 2 > cap) {
                size_t nc = cap ? cap * 2 : 32;
                char **nv = realloc(v, nc * sizeof *nv);
                if (!nv) {
                    rc = NCD_ENOMEM;
                    break;
                }
                v = nv;
                cap = nc;
            }
            if (!(v[n] = strndup(p, ll))) {
                rc = NCD_ENOMEM;
                break;
            }
            v[++n] = NULL;
        }
        p = e + 1;
    }
    if (rc == 0) {
        char *none[] = {NULL};
        rc = ncd_ctx_replace_env(ctx, v ? v : none);
    }
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
    return rc;
}

int ncd_env_is_secret(const char *name)
{
    static const char *const bad[] = {"TOKEN",  "SECRET", "PASSWORD",
                                      "PASSWD", "KEY",    "CREDENTIAL"};
    char up[256];
    size_t i = 0;
    for (; name[i] && i < sizeof up - 1; i++)
        up[i] = (char)toupper((unsigned char)name[i]);
    up[i] = '\0';
    /* an InfiniBand partition key (NCCL_IB_PKEY, UCX_IB_PKEY, Open MPI's
     * btl_openib_pkey) is a fabric setting, not a secret: masking it made
     * a replayed capture report "'<redacted>' is not a number" */
    for (char *pk = strstr(up, "IB_PKEY"); pk; pk = strstr(pk, "IB_PKEY"))
        memcpy(pk, "IB_P_EY", 7);
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++)
        if (strstr(up, bad[k]))
            return 1;
    return 0;
}

int ncd_gather_env_wanted(const char *name)
{
    static const char *const prefixes[] = {
        "NCCL_", "CUDA_", "NVIDIA_", "OMPI_", "PMI_", "PMIX_", "SLURM_",
        "TORCH", "PADDLE_", "FLAGS_", "GLOO_", "UCX_", "HOROVOD_", "MPI_",
        "KUBERNETES_", "MELLANOX_", "NV_", "LD_LIBRARY_PATH", "LD_PRELOAD",
        "MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK",
        "LOCAL_WORLD_SIZE", "GROUP_RANK", "NODE_RANK", "HOME", "CONDA_PREFIX",
        "VIRTUAL_ENV", "HOSTNAME", "PATH"};
    if (strcmp(name, "container") == 0)
        return 1;
    for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++) {
        size_t l = strlen(prefixes[i]);
        if (strncmp(name, prefixes[i], l) == 0 &&
            (prefixes[i][l - 1] == '_' || name[l] == '\0' ||
             strcmp(prefixes[i], "TORCH") == 0))
            return 1;
    }
    return 0;
}

void ncd__record_env_format(struct ncd_ctx *ctx, struct ncd_strbuf *out)
{
    for (size_t i = 0; i < ncd_env_count(ctx); i++) {
        const char *n, *v;
        ncd_env_at(ctx, i, &n, &v);
        if (ncd_gather_env_wanted(n)) {
            ncd_sb_printf(out, "%s=", n);
            ncd_env_redact(n, v, out);
            ncd_sb_putc(out, '\n');
        }
    }
}

/* ---- .ncd/ifaddrs ----------------------------------------------------------- */

int ncd_ifaddrs_parse(struct ncd_ctx *ctx, const char *buf, size_t len,
                      struct ncd_ifaddr_entry **entries)
{
    *entries = NULL;
    size_t cap = 0, n = 0, pos = 0, ll;
    struct ncd_ifaddr_entry *v = NULL;
    const char *p;
    int lineno = 0;
    while (ncd_next_line(buf, len, &pos, &p, &ll)) {
        lineno++;
        char line[512];
        if (ll >= sizeof line) {
            free(v);
            return ncd_fail(ctx, NCD_EPARSE, "ifaddrs line %d: too long",
                            lineno);
        }
        line_copy(line, sizeof line, p, ll);
        char *s = line;
        while (isspace((unsigned char)*s))
            s++;
        if (!*s || *s == '#')
            continue;
        char name[64], fam[16], addr[80], flags[32];
        int prefix;
        if (sscanf(s, "%63s %15s %79s %d %31s", name, fam, addr, &prefix,
                   flags) != 5 ||
            strlen(name) > NCD_IFNAME_MAX + 4) {
            free(v);
            return ncd_fail(ctx, NCD_EPARSE,
                            "ifaddrs line %d: expected '<name> inet|inet6 "
                            "<addr> <prefix> <flags>': %s",
                            lineno, s);
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            struct ncd_ifaddr_entry *nv = realloc(v, cap * sizeof *nv);
            if (!nv) {
                free(v);
                return NCD_ENOMEM;
            }
            v = nv;
        }
        struct ncd_ifaddr_entry *e = &v[n];
        memset(e, 0, sizeof *e);
        snprintf(e->name, sizeof e->name, "%s", name);
        char *fend;
        e->flags = (unsigned)strtoul(flags, &fend, 16);
        int want = strcmp(fam, "inet") == 0    ? AF_INET
                   : strcmp(fam, "inet6") == 0 ? AF_INET6
                                               : -1;
        if (*fend || want < 0 || ncd_if_addr_from_string(&e->a, addr, prefix) ||
            e->a.family != want) {
            free(v);
            return ncd_fail(ctx, NCD_EPARSE, "ifaddrs line %d: bad entry: %s",
                            lineno, s);
        }
        n++;
    }
    *entries = v;
    return (int)n;
}

void ncd_ifaddrs_format(struct ncd_strbuf *out,
                        const struct ncd_ifaddr_entry *e, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ncd_sb_printf(out, "%s %s %s %d 0x%x\n", e[i].name,
                      e[i].a.family == AF_INET ? "inet" : "inet6",
                      e[i].a.addr, e[i].a.prefix, e[i].flags);
}

/* ---- .ncd/statvfs ----------------------------------------------------------- */

int ncd__record_statvfs_lookup(const char *buf, size_t len, const char *dir,
                               struct ncd_sys_space *out)
{
    size_t pos = 0, l;
    const char *s;
    int found = 0;
    while (ncd_next_line(buf, len, &pos, &s, &l)) {
        char d[256], line[400];
        long long a, b;
        line_copy(line, sizeof line, s, l);
        if (sscanf(line, "%255s %lld %lld", d, &a, &b) == 3 &&
            strcmp(d, dir) == 0) {
            out->known = 1;
            out->source = ".ncd/statvfs";
            out->size_bytes = a;
            out->avail_bytes = b;
            found = 1;
        }
    }
    return found;
}

void ncd__record_statvfs_format(struct ncd_strbuf *out, const char *dir,
                                const struct ncd_sys_space *sp)
{
    ncd_sb_printf(out, "%s %lld %lld\n", dir, sp->size_bytes, sp->avail_bytes);
}

/* ---- .ncd/dlopen ------------------------------------------------------------ */

int ncd_dl_record_lookup(const char *buf, size_t len, const char *soname,
                         struct ncd_dl_probe *out)
{
    size_t sl = strlen(soname), pos = 0, ll;
    const char *l;
    while (ncd_next_line(buf, len, &pos, &l, &ll)) {
        if (ll > sl + 1 && memcmp(l, soname, sl) == 0 && l[sl] == ' ') {
            const char *r = l + sl + 1;
            size_t rl = ll - sl - 1;
            memset(out, 0, sizeof *out);
            out->known = 1;
            if (rl >= 2 && memcmp(r, "ok", 2) == 0) {
                out->ok = 1;
                r += 2, rl -= 2;
            } else if (rl >= 7 && memcmp(r, "missing", 7) == 0) {
                r += 7, rl -= 7;
            } else {
                out->known = 0;
                continue;
            }
            while (rl && *r == ' ')
                r++, rl--;
            line_copy(out->detail, sizeof out->detail, r, rl);
            return 1;
        }
    }
    return 0;
}

void ncd__record_dlopen_format(struct ncd_strbuf *out, const char *soname,
                               const struct ncd_dl_probe *p)
{
    ncd_sb_printf(out, "%s %s %s\n", soname, p->ok ? "ok" : "missing",
                  p->detail);
}

/* ---- .ncd/nccl-libs, .ncd/nccl-version -------------------------------------- */

int ncd_nccl_scan_parse(const char *buf, size_t len, struct ncd_nccl_scan *s)
{
    size_t pos = 0, ll;
    const char *p;
    char winner[512] = "";
    while (ncd_next_line(buf, len, &pos, &p, &ll)) {
        char line[800], ver[32], cuda[16], origin[40];
        line_copy(line, sizeof line, p, ll);
        int off = 0;
        if (sscanf(line, "lib %31s %15s %39s %n", ver, cuda, origin, &off) ==
                3 &&
            off > 0 && line[off]) {
            struct ncd_nccl_file *nv = realloc(s->v, (s->n + 1) * sizeof *nv);
            if (!nv)
                return NCD_ENOMEM;
            s->v = nv;
            struct ncd_nccl_file *f = &nv[s->n++];
            memset(f, 0, sizeof *f);
            snprintf(f->path, sizeof f->path, "%s", line + off);
            snprintf(f->real, sizeof f->real, "%s", line + off);
            snprintf(f->origin, sizeof f->origin, "%s", origin);
            if (strcmp(ver, "?") == 0 ||
                ncd_nccl_version_parse(ver, &f->version) < 0)
                f->version = 0;
            if (strcmp(cuda, "?") != 0)
                snprintf(f->cuda, sizeof f->cuda, "%s", cuda);
        } else if (strncmp(line, "winner ", 7) == 0) {
            snprintf(winner, sizeof winner, "%s", line + 7);
        }
    }
    for (size_t k = 0; k < s->n && *winner; k++)
        if (strcmp(s->v[k].path, winner) == 0) {
            s->winner = (int)k;
            snprintf(s->winner_why, sizeof s->winner_why,
                     "recorded by gather");
        }
    return 0;
}

void ncd_nccl_scan_format(const struct ncd_nccl_scan *s,
                          struct ncd_strbuf *out)
{
    ncd_sb_puts(out, "# lib <version> <cuda> <origin> <path>\n");
    for (size_t i = 0; i < s->n; i++) {
        char vb[24];
        const struct ncd_nccl_file *f = &s->v[i];
        ncd_sb_printf(out, "lib %s %s %s %s\n",
                      f->version ? ncd_nccl_version_str(f->version, vb, sizeof vb)
                                 : "?",
                      *f->cuda ? f->cuda : "?", f->origin, f->path);
    }
    if (s->winner >= 0)
        ncd_sb_printf(out, "winner %s\n", s->v[s->winner].path);
}

int ncd__record_nccl_version_parse(const char *buf, int *code)
{
    char v[64];
    snprintf(v, sizeof v, "%s", buf);
    size_t l = strlen(v);
    while (l && isspace((unsigned char)v[l - 1]))
        v[--l] = '\0';
    return ncd_nccl_version_parse(v, code);
}

void ncd__record_nccl_version_format(struct ncd_strbuf *out, int code)
{
    char vb[24];
    ncd_sb_printf(out, "%s\n", ncd_nccl_version_str(code, vb, sizeof vb));
}

/* ---- .ncd/nvml -------------------------------------------------------------- */

void ncd__bdf_norm(const char *in, char *out)
{
    /* NVML bus ids are "00000000:07:00.0" (8-digit domain). */
    const char *c = strchr(in, ':');
    if (c && c - in > 4)
        in = c - 4;
    size_t k = 0;
    for (; in[k] && k < 15; k++)
        out[k] = (char)tolower((unsigned char)in[k]);
    out[k] = '\0';
}

int ncd__nvml_add_gpu(struct ncd_nvml_answer *a, const char *bdf,
                      const char *name)
{
    __typeof__(a->gpu) nv = realloc(a->gpu, (a->n_gpu + 1) * sizeof *nv);
    if (!nv)
        return NCD_ENOMEM;
    a->gpu = nv;
    ncd__bdf_norm(bdf, nv[a->n_gpu].bdf);
    snprintf(nv[a->n_gpu].name, sizeof nv[0].name, "%s", name);
    a->n_gpu++;
    return 0;
}

int ncd__nvml_add_link(struct ncd_nvml_answer *a, const char *bdf,
                       const char *peer, int count)
{
    char nb[16], np[16] = "";
    ncd__bdf_norm(bdf, nb);
    if (peer && *peer)
        ncd__bdf_norm(peer, np);
    for (size_t i = 0; i < a->n_link; i++)
        if (strcmp(a->link[i].bdf, nb) == 0 && strcmp(a->link[i].peer, np) == 0) {
            a->link[i].count += count;
            return 0;
        }
    struct ncd_nvml_link *nv = realloc(a->link, (a->n_link + 1) * sizeof *nv);
    if (!nv)
        return NCD_ENOMEM;
    a->link = nv;
    struct ncd_nvml_link *l = &nv[a->n_link++];
    memcpy(l->bdf, nb, sizeof l->bdf);
    memcpy(l->peer, np, sizeof l->peer);
    l->count = count;
    return 0;
}

void ncd_nvml_answer_release(struct ncd_nvml_answer *a)
{
    free(a->gpu);
    free(a->link);
    memset(a, 0, sizeof *a);
}

int ncd_nvml_parse(struct ncd_ctx *ctx, const char *buf, size_t len,
                   struct ncd_nvml_answer *out)
{
    size_t pos = 0, ll;
    const char *p;
    int lineno = 0, rc = 0, error = 0;
    while (rc == 0 && ncd_next_line(buf, len, &pos, &p, &ll)) {
        char line[512];
        line_copy(line, sizeof line, p, ll);
        lineno++;
        if (!*line || *line == '#')
            continue;
        char key[16], a[64], b[64];
        int cnt, off = 0;
        if (sscanf(line, "%15s %n", key, &off) != 1)
            continue;
        const char *rest = line + off;
        if (strcmp(key, "driver") == 0) {
            snprintf(out->driver, sizeof out->driver, "%s", rest);
        } else if (strcmp(key, "cuda") == 0) {
            out->cuda = atoi(rest);
        } else if (strcmp(key, "gpu") == 0) {
            int o2 = 0;
            if (sscanf(rest, "%63s %n", a, &o2) < 1)
                rc = ncd_fail(ctx, NCD_EPARSE, ".ncd/nvml line %d: %s",
                              lineno, line);
            else
                rc = ncd__nvml_add_gpu(out, a, rest + o2);
        } else if (strcmp(key, "nvlink") == 0) {
            if (sscanf(rest, "%63s %63s %d", a, b, &cnt) != 3 || cnt < 0)
                rc = ncd_fail(ctx, NCD_EPARSE, ".ncd/nvml line %d: %s",
                              lineno, line);
            else
                rc = ncd__nvml_add_link(out, a,
                                        strcmp(b, "nvswitch") == 0 ? "" : b,
                                        cnt);
        } else if (strcmp(key, "error") == 0) {
            error = 1;
            snprintf(out->error, sizeof out->error,
                     "recorded NVML error: %.100s", rest);
        }
    }
    out->known = rc == 0 && !error;
    return rc;
}

void ncd_nvml_format(const struct ncd_nvml_answer *a, struct ncd_strbuf *out)
{
    if (*a->driver)
        ncd_sb_printf(out, "driver %s\n", a->driver);
    if (a->cuda)
        ncd_sb_printf(out, "cuda %d\n", a->cuda);
    for (size_t i = 0; i < a->n_gpu; i++)
        ncd_sb_printf(out, "gpu %s %s\n", a->gpu[i].bdf, a->gpu[i].name);
    for (size_t i = 0; i < a->n_link; i++)
        ncd_sb_printf(out, "nvlink %s %s %d\n", a->link[i].bdf,
                      *a->link[i].peer ? a->link[i].peer : "nvswitch",
                      a->link[i].count);
    if (!a->known && *a->error)
        ncd_sb_printf(out, "error %s\n", a->error);
}

/* ---- .ncd/self, .ncd/resolve ------------------------------------------------ */

int ncd__record_self_parse(const char *buf, struct ncd_sys_identity *out)
{
    const char *u = strstr(buf, "uid ");
    if (!u)
        return 0;
    out->uid = strtol(u + 4, NULL, 10);
    out->known = 1;
    return 1;
}

void ncd__record_self_format(struct ncd_strbuf *out,
                             const struct ncd_sys_identity *id)
{
    ncd_sb_printf(out, "uid %ld\n", id->uid);
}

/* .ncd/resolve: "<name> <address> [<address>...]" per line in
 * getaddrinfo's order, "<name> -" for a name that did not resolve; '#'
 * starts a comment.  The first address is copied to `addr`. */
int ncd__record_resolve_lookup(const char *buf, size_t len, const char *name,
                               char *addr, size_t addrsz)
{
    size_t pos = 0, ll;
    const char *p;
    while (ncd_next_line(buf, len, &pos, &p, &ll)) {
        char line[512];
        line_copy(line, sizeof line, p, ll);
        char *save = NULL, *n = strtok_r(line, " \t\r", &save);
        if (!n || *n == '#' || strcmp(n, name) != 0)
            continue;
        char *a = strtok_r(NULL, " \t\r", &save);
        if (!a || strcmp(a, "-") == 0)
            return -1;
        snprintf(addr, addrsz, "%s", a);
        return 1;
    }
    return 0;
}

void ncd__record_resolve_format(struct ncd_strbuf *out, const char *host,
                                const struct ncd_if_addr *a)
{
    ncd_sb_printf(out, "%s %s\n", host, a ? a->addr : "-");
}

/* ---- .ncd/gather-info ------------------------------------------------------- */

void ncd__record_gather_info_format(struct ncd_strbuf *out, const char *tool,
                                    time_t when)
{
    struct tm tm;
    char ts[64];
    gmtime_r(&when, &tm);
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
    ncd_sb_printf(out, "tool %s\ntime %s\n", tool ? tool : "?", ts);
}

/* ---- /proc/net/tcp ---------------------------------------------------------- */

/* Calls fn for the local port of every LISTEN (0A) line. */
static int each_listener(const char *buf, size_t len,
                         int (*fn)(void *, int), void *arg)
{
    size_t pos = 0, l;
    const char *s;
    while (ncd_next_line(buf, len, &pos, &s, &l)) {
        char line[512], local[80], remote[80], st[8];
        line_copy(line, sizeof line, s, l);
        /* "  0: 0100007F:6D9C 00000000:0000 0A ..." */
        if (sscanf(line, " %*[0-9]: %79s %79s %7s", local, remote, st) != 3)
            continue;
        const char *c = strrchr(local, ':');
        if (!c || strcmp(st, "0A") != 0)
            continue;
        int rc = fn(arg, (int)strtol(c + 1, NULL, 16));
        if (rc < 0)
            return rc;
    }
    return 0;
}

struct count_arg {
    int port, n;
};

static int count_cb(void *arg, int port)
{
    struct count_arg *c = arg;
    c->n += c->port < 0 || port == c->port;
    return 0;
}

int ncd_proc_net_tcp_listeners(const char *buf, size_t len, int port)
{
    struct count_arg c = {port, 0};
    each_listener(buf, len, count_cb, &c);
    return c.n;
}

struct list_arg {
    int *v;
    size_t n, cap;
};

static int list_cb(void *arg, int port)
{
    struct list_arg *l = arg;
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 64;
        int *nv = realloc(l->v, nc * sizeof *nv);
        if (!nv)
            return NCD_ENOMEM;
        l->v = nv;
        l->cap = nc;
    }
    l->v[l->n++] = port;
    return 0;
}

int ncd__listen_ports_parse(const char *buf, size_t len, int **ports,
                            size_t *n)
{
    struct list_arg l = {*ports, *n, *n};
    int rc = each_listener(buf, len, list_cb, &l);
    *ports = l.v;
    *n = l.n;
    return rc;
}
