/* SPDX-License-Identifier: MIT */
/* Every libnccl on the node, its version, the loader's pick (ncd/libs.h). */
#define _GNU_SOURCE
#include "ncd/libs.h"
#include "ncd/error.h"
#include "ncd/fs.h"
#include "ncd/sysops.h"
#include "ncd/version.h"
#include "node_internal.h"

#include <ctype.h>
#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- scan ------------------------------------------------------------------- */

struct scan_state {
    struct ncd_ctx *ctx;
    struct ncd_nccl_scan *s;
    int oom;
    const char *origin;
    struct ncd_nccl_lib live; /* the loader's pick, answered live */
    char live_real[512];      /* its real path, "" when none */
};

static void add_file(struct scan_state *st, const char *path)
{
    struct ncd_nccl_scan *s = st->s;
    char real[512];
    if (ncd_fs_realpath(st->ctx, path, real, sizeof real) < 0 ||
        !ncd_fs_exists(st->ctx, real)) {
        ncd_ctx_clear_error(st->ctx);
        return;
    }
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->v[i].real, real) == 0)
            return;
    struct ncd_nccl_file *nv = realloc(s->v, (s->n + 1) * sizeof *nv);
    if (!nv) {
        st->oom = 1;
        return;
    }
    s->v = nv;
    struct ncd_nccl_file *f = &nv[s->n++];
    memset(f, 0, sizeof *f);
    ncd__scpy(f->path, sizeof f->path, path);
    ncd__scpy(f->real, sizeof f->real, real);
    ncd__scpy(f->origin, sizeof f->origin, st->origin);
    int r;
    if (st->live_real[0] && strcmp(st->live_real, real) == 0) {
        /* read already by the live answer: each file is read once */
        f->version = st->live.version;
        ncd__scpy(f->cuda, sizeof f->cuda, st->live.cuda);
        r = 1;
    } else {
        r = ncd_nccl_file_version(st->ctx, real, &f->version, f->cuda,
                                  sizeof f->cuda);
    }
    if (r == NCD_ENOMEM)
        st->oom = 1;
    if (r <= 0)
        f->version = 0;
    ncd_ctx_clear_error(st->ctx);
}

/* Adds every libnccl.so* of a directory; the versioned soname first so
 * the entry kept for a real file is the name the loader asks for. */
static void scan_dir(struct scan_state *st, const char *dir)
{
    char **names;
    int n = ncd_fs_list_prefix(st->ctx, dir, "libnccl.so", &names);
    if (n < 0) {
        if (n == NCD_ENOMEM)
            st->oom = 1;
        ncd_ctx_clear_error(st->ctx);
        return;
    }
    char p[600];
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < n; i++) {
            if (strncmp(names[i], "libnccl.so", 10) != 0)
                continue;
            int is_so2 = strcmp(names[i], "libnccl.so.2") == 0;
            if ((pass == 0) != is_so2)
                continue;
            snprintf(p, sizeof p, "%s/%s", dir, names[i]);
            add_file(st, p);
        }
    ncd_fs_list_free(names, n);
}

/* Calls scan_dir on <base>/<entries starting with pfx>/<suffix> for each
 * suffix of the NULL-terminated list, in that order; `base` is listed once. */
static void scan_glob(struct scan_state *st, const char *base, const char *pfx,
                      const char *const *suffixes)
{
    char **names;
    int n = ncd_fs_list_prefix(st->ctx, base, pfx, &names);
    if (n < 0) {
        ncd_ctx_clear_error(st->ctx);
        return;
    }
    char p[600];
    for (const char *const *sfx = suffixes; *sfx; sfx++)
        for (int i = 0; i < n; i++) {
            if (strncmp(names[i], pfx, strlen(pfx)) != 0)
                continue;
            snprintf(p, sizeof p, "%s/%s%s", base, names[i], *sfx);
            scan_dir(st, p);
        }
    ncd_fs_list_free(names, n);
}

/* A system directory: only the names a loader asks for there, the soname
 * libnccl.so.2 (dlopen, programs linked with -lnccl) and the link-time name
 * libnccl.so, each followed to its file.  These directories are the
 * largest on the node (listing /usr/lib/x86_64-linux-gnu costs more than
 * the rest of the scan), the ld cache names what ldconfig put in them, and
 * a versioned file that neither name reaches (libnccl.so.2.18.1 left by an
 * upgrade) is a file no dlopen("libnccl.so.2") loads. */
static void scan_sonames(struct scan_state *st, const char *dir)
{
    char p[600];
    snprintf(p, sizeof p, "%s/libnccl.so.2", dir);
    add_file(st, p);
    snprintf(p, sizeof p, "%s/libnccl.so", dir);
    add_file(st, p);
}

static const char *const lib_only[] = {"/lib", NULL};

/* <prefix>/lib/python3.N/{site,dist}-packages/nvidia/nccl/lib */
static void scan_python(struct scan_state *st, const char *prefix)
{
    static const char *const pkgs[] = {"/site-packages/nvidia/nccl/lib",
                                       "/dist-packages/nvidia/nccl/lib", NULL};
    char lib[512];
    snprintf(lib, sizeof lib, "%s/lib", prefix);
    scan_glob(st, lib, "python3", pkgs);
}

static void ldcache_cb(const char *name, const char *path, void *arg)
{
    (void)name;
    add_file(arg, path);
}

static int find_real(const struct ncd_nccl_scan *s, struct ncd_ctx *ctx,
                     const char *path)
{
    char real[512];
    if (ncd_fs_realpath(ctx, path, real, sizeof real) < 0) {
        ncd_ctx_clear_error(ctx);
        return -1;
    }
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->v[i].real, real) == 0 || strcmp(s->v[i].path, path) == 0)
            return (int)i;
    return -1;
}

/* The scan itself, on the files below the sysroot (run by the system
 * operation, which may answer from a recording instead). */
static int scan_files(struct ncd_ctx *ctx, struct ncd_nccl_scan *out)
{
    struct scan_state st = {.ctx = ctx, .s = out};
    if (ncd_sys_nccl_version(ctx, &st.live) == 0 && st.live.loaded &&
        st.live.found &&
        ncd_fs_realpath(ctx, st.live.path, st.live_real,
                        sizeof st.live_real) < 0)
        st.live_real[0] = '\0';
    ncd_ctx_clear_error(ctx);
    const char *v = ncd_getenv(ctx, "FLAGS_nccl_dir");
    if (v && *v) {
        st.origin = "FLAGS_nccl_dir";
        scan_dir(&st, v);
    }
    v = ncd_getenv(ctx, "LD_LIBRARY_PATH");
    st.origin = "LD_LIBRARY_PATH";
    if (v && *v) {
        char *dup = strdup(v), *save = NULL;
        if (!dup)
            return NCD_ENOMEM;
        for (char *d = strtok_r(dup, ":;", &save); d;
             d = strtok_r(NULL, ":;", &save))
            scan_dir(&st, d);
        free(dup);
    }
    char *cache;
    size_t clen;
    st.origin = "ld.so.cache";
    if (ncd_fs_read(ctx, "/etc/ld.so.cache", 64u << 20, &cache, &clen) == 0) {
        ncd_ldcache_parse((unsigned char *)cache, clen, "libnccl.so",
                          ldcache_cb, &st);
        free(cache);
    }
    ncd_ctx_clear_error(ctx);
    static const char *sysdirs[] = {
        "/lib", "/usr/lib", "/lib64", "/usr/lib64",
        "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
        "/usr/lib/powerpc64le-linux-gnu", "/usr/local/lib"};
    st.origin = "system";
    for (size_t i = 0; i < sizeof sysdirs / sizeof *sysdirs; i++)
        scan_sonames(&st, sysdirs[i]);
    st.origin = "CUDA";
    static const char *const cuda_libs[] = {
        "/lib64", "/lib", "/targets/x86_64-linux/lib",
        "/targets/sbsa-linux/lib", NULL};
    scan_glob(&st, "/usr/local", "cuda", cuda_libs);
    const char *home = ncd_getenv(ctx, "HOME");
    const char *conda = ncd_getenv(ctx, "CONDA_PREFIX");
    const char *venv = ncd_getenv(ctx, "VIRTUAL_ENV");
    static const char *conda_names[] = {"miniconda3", "anaconda3",
                                        "miniforge3", "mambaforge"};
    char p[600];
    st.origin = "conda";
    if (conda && *conda) {
        snprintf(p, sizeof p, "%s/lib", conda);
        scan_dir(&st, p);
    }
    scan_dir(&st, "/opt/conda/lib");
    scan_glob(&st, "/opt/conda/envs", "", lib_only);
    for (size_t i = 0; home && *home && i < 4; i++) {
        snprintf(p, sizeof p, "%s/%s/lib", home, conda_names[i]);
        scan_dir(&st, p);
        snprintf(p, sizeof p, "%s/%s/envs", home, conda_names[i]);
        scan_glob(&st, p, "", lib_only);
    }
    st.origin = "site-packages";
    scan_python(&st, "/usr");
    scan_python(&st, "/usr/local");
    scan_python(&st, "/opt/conda");
    if (venv && *venv)
        scan_python(&st, venv);
    if (conda && *conda)
        scan_python(&st, conda);
    if (home && *home) {
        snprintf(p, sizeof p, "%s/.local", home);
        scan_python(&st, p);
    }
    if (st.oom)
        return NCD_ENOMEM;
    /* The loader's pick for dlopen("libnccl.so.2") without RPATH: the
     * sys layer's, the one the version answer uses too. */
    char pick[512];
    const char *why = NULL;
    int r = ncd_sys_loader_pick(ctx, "libnccl.so.2", pick, sizeof pick, &why);
    if (r < 0)
        return r;
    if (r == 1) {
        out->winner = find_real(out, ctx, pick);
        ncd__scpy(out->winner_why, sizeof out->winner_why, why);
    }
    /* The live answer (the loader's order, version from the file) names
     * the pick even where the scan does not look. */
    const struct ncd_nccl_lib lib = st.live;
    if (lib.loaded) {
        if (lib.found && *lib.path) {
            int w = find_real(out, ctx, lib.path);
            if (w < 0) {
                /* loaded from a place the scan does not cover */
                st.origin = "dlopen";
                add_file(&st, lib.path);
                w = find_real(out, ctx, lib.path);
            }
            if (w >= 0) {
                out->winner = w;
                ncd__scpy(out->winner_why, sizeof out->winner_why,
                          "the dynamic loader's search order (live)");
                out->v[w].version = lib.version;
            }
        }
        ncd_ctx_clear_error(ctx);
    }
    return 0;
}

int ncd_nccl_scan(struct ncd_ctx *ctx, struct ncd_nccl_scan *out)
{
    return ncd_sys_nccl_libs(ctx, scan_files, out);
}
