/* SPDX-License-Identifier: MIT */
/* Which libnccl.so.2 the dynamic loader would pick and its version, read
 * from the file without loading it (see ncd/libs.h and ncd/sysops.h). */
#define _GNU_SOURCE
#include "ncd/error.h"
#include "ncd/fs.h"
#include "ncd/libs.h"
#include "ncd/sysops.h"
#include "ncd/version.h"
#include "sys/sys_internal.h"

#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ncd_nccl_version_in_buf() over a file's .rodata [off, off + size), read
 * in windows from the start: the string sits in the first tens of KB of
 * the libnccl builds seen (2.18..2.28), so reading the whole section (a
 * few hundred KB to MB, copied and faulted in) is what the answer cost.
 * Each hit of the tag is judged on the same bytes the whole-buffer search
 * would read (the tag and at most 64 more), so the answer is the same;
 * hits too close to a window's end wait for the next window, which
 * overlaps.  Returns 1 found, 0 not (or a short read, or no memory). */
static int rodata_version(int fd, off_t off, size_t size, int *code,
                          char *cuda, size_t cudasz)
{
    static const char tag[] = "NCCL version ";
    const size_t tl = sizeof tag - 1, ov = tl + 64, win = 32u << 10;
    char *buf = malloc(win);
    if (!buf)
        return 0;
    int found = 0;
    size_t at = 0;
    while (at < size && !found) {
        size_t n = size - at < win ? size - at : win;
        if (pread(fd, buf, n, off + (off_t)at) != (ssize_t)n)
            break;
        int last = at + n == size;
        /* hits starting at or before `lim` have all their bytes here */
        size_t lim = last ? n : n - ov;
        const char *p = buf, *end = buf + n;
        while (!found && p < end) {
            const char *h = memmem(p, (size_t)(end - p), tag, tl);
            if (!h || (size_t)(h - buf) > lim)
                break;
            /* this hit alone: up to the next tag's "NCCL" (its space ends
             * the token as in the whole buffer), at most ov bytes */
            size_t len = (size_t)(end - h) < ov ? (size_t)(end - h) : ov;
            const char *h2 = memmem(h + 1, len - 1, tag, tl);
            if (h2)
                len = (size_t)(h2 - h) + 4;
            found = ncd_nccl_version_in_buf(h, len, code, cuda, cudasz);
            p = h + tl;
        }
        if (last)
            break;
        at += lim + 1;
    }
    free(buf);
    return found;
}

int ncd_nccl_file_version(struct ncd_ctx *ctx, const char *path, int *code,
                          char *cuda, size_t cudasz)
{
    int fd = ncd_fs_open(ctx, path, O_RDONLY);
    if (fd < 0)
        return fd;
    int found = 0;
    Elf64_Ehdr eh;
    if (pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh ||
        memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
        eh.e_ident[EI_CLASS] != ELFCLASS64 ||
        eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 ||
        eh.e_shnum > 4096 || eh.e_shstrndx >= eh.e_shnum) {
        close(fd);
        return 0;
    }
    size_t shsz = (size_t)eh.e_shnum * sizeof(Elf64_Shdr);
    Elf64_Shdr *sh = malloc(shsz);
    if (!sh) {
        close(fd);
        return NCD_ENOMEM;
    }
    if (pread(fd, sh, shsz, (off_t)eh.e_shoff) != (ssize_t)shsz)
        goto out;
    Elf64_Shdr *ss = &sh[eh.e_shstrndx];
    if (ss->sh_size == 0 || ss->sh_size > (1u << 20))
        goto out;
    char *names = malloc(ss->sh_size + 1);
    if (!names)
        goto out;
    if (pread(fd, names, ss->sh_size, (off_t)ss->sh_offset) !=
        (ssize_t)ss->sh_size) {
        free(names);
        goto out;
    }
    names[ss->sh_size] = '\0';
    for (unsigned i = 0; i < eh.e_shnum && !found; i++) {
        if (sh[i].sh_name >= ss->sh_size ||
            strcmp(names + sh[i].sh_name, ".rodata") != 0)
            continue;
        /* .rodata of libnccl is a few MB; refuse absurd sizes. */
        if (sh[i].sh_size == 0 || sh[i].sh_size > (256u << 20))
            break;
        found = rodata_version(fd, (off_t)sh[i].sh_offset, sh[i].sh_size,
                               code, cuda, cudasz);
    }
    free(names);
out:
    free(sh);
    close(fd);
    return found;
}

int ncd_ldcache_parse(const unsigned char *buf, size_t len,
                      const char *prefix,
                      void (*fn)(const char *name, const char *path,
                                 void *arg),
                      void *arg)
{
    static const char magic[] = "glibc-ld.so.cache1.1";
    const size_t ml = sizeof magic - 1;
    const unsigned char *h = memmem(buf, len, magic, ml);
    if (!h)
        return NCD_EPARSE;
    size_t base = (size_t)(h - buf);
    if (base + 48 > len)
        return NCD_EPARSE;
    uint32_t nlibs;
    memcpy(&nlibs, buf + base + 20, 4);
    if ((size_t)nlibs > (len - base - 48) / 24)
        return NCD_EPARSE;
    size_t pl = strlen(prefix);
    int count = 0;
    for (uint32_t i = 0; i < nlibs; i++) {
        const unsigned char *e = buf + base + 48 + (size_t)i * 24;
        uint32_t key, value;
        memcpy(&key, e + 4, 4);
        memcpy(&value, e + 8, 4);
        if ((size_t)key + base >= len || (size_t)value + base >= len)
            return NCD_EPARSE;
        const char *k = (const char *)buf + base + key;
        const char *v = (const char *)buf + base + value;
        if (!memchr(k, 0, len - base - key) || !memchr(v, 0, len - base - value))
            return NCD_EPARSE;
        if (strncmp(k, prefix, pl) == 0) {
            count++;
            if (fn)
                fn(k, v, arg);
        }
    }
    return count;
}


/* ---- the loader's pick -------------------------------------------------------- */

struct first_arg {
    const char *soname;
    char out[512];
};

static void ldcache_first(const char *name, const char *path, void *arg)
{
    struct first_arg *f = arg;
    if (!f->out[0] && strcmp(name, f->soname) == 0)
        snprintf(f->out, sizeof f->out, "%s", path);
}

int ncd_sys_loader_pick(struct ncd_ctx *ctx, const char *soname, char *path,
                        size_t len, const char **why)
{
    /* ld.so(8) for a program without DT_RPATH/DT_RUNPATH (nccl-doctor has
     * none): LD_LIBRARY_PATH, then /etc/ld.so.cache, then the default
     * directories (glibc's multiarch SYSTEM_DIRS first, as Debian builds
     * it; lib64 for the RPM distributions). */
    int nccl = strcmp(soname, "libnccl.so.2") == 0;
    const char *v = ncd_getenv(ctx, "LD_LIBRARY_PATH");
    char p[600];
    if (v && *v) {
        char *dup = strdup(v), *save = NULL;
        if (!dup)
            return NCD_ENOMEM;
        for (char *d = strtok_r(dup, ":;", &save); d;
             d = strtok_r(NULL, ":;", &save)) {
            snprintf(p, sizeof p, "%s/%s", d, soname);
            if (ncd_fs_exists(ctx, p)) {
                snprintf(path, len, "%s", p);
                free(dup);
                *why = nccl ? "first LD_LIBRARY_PATH directory holding libnccl.so.2"
                            : "first LD_LIBRARY_PATH directory holding it";
                return 1;
            }
        }
        free(dup);
    }
    char *cache;
    size_t clen;
    struct first_arg first = {.soname = soname, .out = ""};
    /* read once per context (fs.c's cache), however many libraries */
    if (ncd_fs_read(ctx, "/etc/ld.so.cache", 64u << 20, &cache, &clen) == 0) {
        ncd_ldcache_parse((unsigned char *)cache, clen, soname, ldcache_first,
                          &first);
        free(cache);
    }
    ncd_ctx_clear_error(ctx);
    if (first.out[0] && ncd_fs_exists(ctx, first.out)) {
        snprintf(path, len, "%s", first.out);
        *why = nccl ? "/etc/ld.so.cache entry for libnccl.so.2"
                    : "its /etc/ld.so.cache entry";
        return 1;
    }
    static const char *const dirs[] = {
        "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
        "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
        "/lib64", "/usr/lib64", "/lib", "/usr/lib"};
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
        snprintf(p, sizeof p, "%s/%s", dirs[i], soname);
        if (ncd_fs_exists(ctx, p)) {
            snprintf(path, len, "%s", p);
            *why = "default library directory";
            return 1;
        }
    }
    return 0;
}

