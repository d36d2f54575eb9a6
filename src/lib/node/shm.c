/* SPDX-License-Identifier: MIT */
/* /dev/shm, logind RemoveIPC, limits and capabilities (see ncd/shm.h). */
#define _GNU_SOURCE
#include "ncd/shm.h"
#include "ncd/error.h"
#include "ncd/strbuf.h"
#include "ncd/fs.h"
#include "ncd/sysops.h"
#include "node_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static void unescape_field(const char *s, size_t n, char *out, size_t outsz)
{
    size_t o = 0;
    for (size_t i = 0; i < n && o + 1 < outsz; i++) {
        if (s[i] == '\\' && i + 3 < n + 0 && isdigit((unsigned char)s[i + 1]) &&
            isdigit((unsigned char)s[i + 2]) && isdigit((unsigned char)s[i + 3])) {
            out[o++] = (char)((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 +
                              (s[i + 3] - '0'));
            i += 3;
        } else {
            out[o++] = s[i];
        }
    }
    out[o] = '\0';
}

int ncd_mounts_find(const char *buf, size_t len, const char *dir,
                    struct ncd_mount *out)
{
    size_t pos = 0, l;
    const char *s;
    int found = 0;
    while (ncd_next_line(buf, len, &pos, &s, &l)) {
        const char *f[4];
        size_t fl[4];
        int nf = 0;
        size_t i = 0;
        while (nf < 4 && i < l) {
            while (i < l && s[i] == ' ')
                i++;
            if (i >= l)
                break;
            f[nf] = s + i;
            while (i < l && s[i] != ' ')
                i++;
            fl[nf] = (size_t)(s + i - f[nf]);
            nf++;
        }
        if (nf < 4)
            continue;
        char d[256];
        unescape_field(f[1], fl[1], d, sizeof d);
        if (strcmp(d, dir) != 0)
            continue;
        found = 1;
        unescape_field(f[0], fl[0], out->dev, sizeof out->dev);
        ncd__scpy(out->dir, sizeof out->dir, d);
        unescape_field(f[2], fl[2], out->type, sizeof out->type);
        unescape_field(f[3], fl[3], out->opts, sizeof out->opts);
    }
    return found;
}

static const char *find_opt(const char *opts, const char *name)
{
    size_t nl = strlen(name);
    for (const char *p = opts; p && *p;) {
        if (strncmp(p, name, nl) == 0 && (p[nl] == ',' || p[nl] == '\0' ||
                                          p[nl] == '='))
            return p + nl;
        p = strchr(p, ',');
        if (p)
            p++;
    }
    return NULL;
}

int ncd_mount_is_ro(const char *opts)
{
    const char *o = find_opt(opts, "ro");
    return o && *o != '=';
}

long long ncd_tmpfs_size(const char *opts, long long memtotal)
{
    const char *o = find_opt(opts, "size");
    if (!o || *o != '=')
        return memtotal > 0 ? memtotal / 2 : -1;
    char *end;
    double v = strtod(o + 1, &end);
    if (end == o + 1 || v < 0)
        return -1;
    switch (*end) {
    case 'k': case 'K': v *= 1024; break;
    case 'm': case 'M': v *= 1024.0 * 1024; break;
    case 'g': case 'G': v *= 1024.0 * 1024 * 1024; break;
    case 't': case 'T': v *= 1024.0 * 1024 * 1024 * 1024; break;
    case '%': return memtotal > 0 ? (long long)(memtotal * v / 100) : -1;
    default: break;
    }
    return (long long)v;
}

long long ncd_meminfo_field(const char *buf, size_t len, const char *name)
{
    size_t pos = 0, l, nl = strlen(name);
    const char *s;
    while (ncd_next_line(buf, len, &pos, &s, &l))
        if (l > nl && s[nl] == ':' && strncmp(s, name, nl) == 0) {
            char num[32];
            size_t k = l - nl - 1 < sizeof num - 1 ? l - nl - 1
                                                   : sizeof num - 1;
            memcpy(num, s + nl + 1, k); /* the line is not terminated */
            num[k] = '\0';
            return atoll(num) * 1024; /* kB */
        }
    return -1;
}

long long ncd_meminfo_total(const char *buf, size_t len)
{
    return ncd_meminfo_field(buf, len, "MemTotal");
}

int ncd_shm_probe(struct ncd_ctx *ctx, struct ncd_shm *out)
{
    memset(out, 0, sizeof *out);
    out->size = out->free = -1;
    out->size_source = "unknown";
    out->exists = ncd_fs_exists(ctx, "/dev/shm");
    char *buf;
    size_t len;
    int rc = ncd_fs_read(ctx, "/proc/mounts", 1 << 22, &buf, &len);
    if (rc < 0)
        rc = ncd_fs_read(ctx, "/proc/self/mounts", 1 << 22, &buf, &len);
    if (rc == 0) {
        out->mounted = ncd_mounts_find(buf, len, "/dev/shm", &out->m);
        free(buf);
    }
    ncd_ctx_clear_error(ctx);
    if (out->mounted)
        out->readonly = ncd_mount_is_ro(out->m.opts);
    struct ncd_sys_space sp;
    ncd_sys_statvfs(ctx, "/dev/shm", &sp);
    if (sp.known) {
        out->size = sp.size_bytes;
        out->free = sp.avail_bytes;
        out->size_source = sp.source;
        return 0;
    }
    if (out->mounted && strcmp(out->m.type, "tmpfs") == 0) {
        long long mt = -1;
        if (ncd_fs_read(ctx, "/proc/meminfo", 1 << 20, &buf, &len) == 0) {
            mt = ncd_meminfo_total(buf, len);
            free(buf);
        }
        ncd_ctx_clear_error(ctx);
        out->size = ncd_tmpfs_size(out->m.opts, mt);
        out->size_source = find_opt(out->m.opts, "size")
                               ? "size= mount option"
                               : "tmpfs default (RAM/2)";
    }
    return 0;
}

long long ncd_shm_need_bytes(int nlocal, long long simple_bytes)
{
    if (nlocal < 2)
        return 0;
    if (simple_bytes <= 0)
        simple_bytes = NCD_NCCL_SIMPLE_BUFFSIZE;
    long long per = simple_bytes + NCD_NCCL_LL128_BUFFSIZE + NCD_NCCL_LL_BUFFSIZE;
    return (long long)nlocal * (nlocal - 1) * NCD_SHM_CHANNELS * per;
}

int ncd_logind_removeipc(const char *buf, size_t len)
{
    size_t pos = 0, l;
    const char *s;
    int in_login = 0, val = -1;
    while (ncd_next_line(buf, len, &pos, &s, &l)) {
        while (l && isspace((unsigned char)*s))
            s++, l--;
        while (l && isspace((unsigned char)s[l - 1]))
            l--;
        if (!l || *s == '#' || *s == ';')
            continue;
        if (*s == '[') {
            in_login = l == 7 && strncmp(s, "[Login]", 7) == 0;
            continue;
        }
        if (!in_login || l < 10 || strncmp(s, "RemoveIPC", 9) != 0)
            continue;
        const char *v = s + 9;
        size_t vl = l - 9;
        while (vl && (*v == ' ' || *v == '\t'))
            v++, vl--;
        if (!vl || *v != '=')
            continue;
        v++, vl--;
        while (vl && (*v == ' ' || *v == '\t'))
            v++, vl--;
        char word[16];
        size_t c = vl < sizeof word - 1 ? vl : sizeof word - 1;
        memcpy(word, v, c);
        word[c] = '\0';
        if (!strcasecmp(word, "no") || !strcasecmp(word, "false") ||
            !strcmp(word, "0") || !strcasecmp(word, "off"))
            val = 0;
        else if (!strcasecmp(word, "yes") || !strcasecmp(word, "true") ||
                 !strcmp(word, "1") || !strcasecmp(word, "on"))
            val = 1;
    }
    return val;
}

static long long limit_val(const char *s)
{
    return strncmp(s, "unlimited", 9) == 0 ? -1 : atoll(s);
}

int ncd_limits_parse(const char *buf, size_t len, const char *name,
                     struct ncd_limit *out)
{
    size_t pos = 0, l, nl = strlen(name);
    const char *s;
    memset(out, 0, sizeof *out);
    while (ncd_next_line(buf, len, &pos, &s, &l)) {
        if (l <= nl || strncmp(s, name, nl) != 0 || s[nl] != ' ')
            continue;
        char line[256], a[32], b[32];
        size_t c = l < sizeof line - 1 ? l : sizeof line - 1;
        memcpy(line, s, c);
        line[c] = '\0';
        if (sscanf(line + nl, " %31s %31s", a, b) != 2)
            return 0;
        out->soft = limit_val(a);
        out->hard = limit_val(b);
        out->known = 1;
        return 1;
    }
    return 0;
}

int ncd_status_capeff(const char *buf, size_t len, unsigned long long *cap)
{
    size_t pos = 0, l;
    const char *s;
    while (ncd_next_line(buf, len, &pos, &s, &l))
        if (l > 7 && strncmp(s, "CapEff:", 7) == 0) {
            char tmp[40];
            size_t c = l - 7 < sizeof tmp - 1 ? l - 7 : sizeof tmp - 1;
            memcpy(tmp, s + 7, c);
            tmp[c] = '\0';
            *cap = strtoull(tmp, NULL, 16);
            return 1;
        }
    return 0;
}
