/* SPDX-License-Identifier: MIT */
/* Check: every libnccl on the node, the one the loader picks, mixed
 * versions, and the CUDA driver against the CUDA each NCCL was built for.
 * Where to look: include/ncd/libs.h; Paddle's FLAGS_nccl_dir and the pip
 * wheel layout: shared/reference/ecosystem.md. */
#define _GNU_SOURCE
#include "ncd/check.h"
#include "check/check_internal.h"
#include "ncd/error.h"
#include "node/node_internal.h"
#include "ncd/fs.h"
#include "ncd/libs.h"
#include "ncd/nccl.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ncd_check_libs(struct ncd_ctx *ctx, const struct ncd_check_opts *opts,
                   struct ncd_findings *out, json_t *facts);


/* CUDA driver API version (cuDriverGetVersion style, 12040) and where it
 * came from; 0 when unknown. */
static int cuda_driver_version(struct ncd_ctx *ctx, char *src, size_t srcsz)
{
    if (ncd_ctx_is_live(ctx)) {
        void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
        if (!h) {
            snprintf(src, srcsz, "libcuda.so.1 not loadable");
            return 0;
        }
        int (*get)(int *) =
            (int (*)(int *))(uintptr_t)dlsym(h, "cuDriverGetVersion");
        int v = 0;
        if (!get || get(&v) != 0)
            v = 0;
        dlclose(h);
        snprintf(src, srcsz, "cuDriverGetVersion()");
        return v;
    }
    char *buf;
    size_t len;
    int v = 0;
    if (ncd_fs_read(ctx, "/.ncd/nvml", 1 << 20, &buf, &len) == 0) {
        const char *p = strstr(buf, "\ncuda ");
        if (!p && strncmp(buf, "cuda ", 5) == 0)
            p = buf - 1;
        if (p)
            v = atoi(p + 6);
        free(buf);
        snprintf(src, srcsz, ".ncd/nvml");
    } else {
        snprintf(src, srcsz, "not visible in this capture");
    }
    ncd_ctx_clear_error(ctx);
    return v;
}

int ncd_check_libs(struct ncd_ctx *ctx, const struct ncd_check_opts *opts,
                   struct ncd_findings *out, json_t *facts)
{
    (void)opts;
    struct ncd_nccl_scan s;
    struct ncd_finding *f;
    int rc = ncd_nccl_scan(ctx, &s);
    if (rc < 0) {
        ncd_nccl_scan_release(&s);
        return rc;
    }
    char vb[24], vb2[24];
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < s.n; i++) {
        const struct ncd_nccl_file *x = &s.v[i];
        json_array_append_new(
            arr, json_pack("{s:o,s:o,s:o,s:o,s:s,s:b}", "path",
                           ncd__jstr(x->path), "real", ncd__jstr(x->real),
                           "version",
                           x->version ? json_string(ncd_nccl_version_str(
                                            x->version, vb, sizeof vb))
                                      : json_null(),
                           "cuda", *x->cuda ? ncd__jstr(x->cuda) : json_null(),
                           "origin", x->origin, "loader_pick",
                           (int)i == s.winner));
    }
    if (arr)
        json_object_set_new(facts, "nccl_libs", arr);
    const char *fdir = ncd_getenv(ctx, "FLAGS_nccl_dir");
    if (fdir && *fdir) {
        char p[600];
        snprintf(p, sizeof p, "%s/libnccl.so", fdir);
        if (!ncd_fs_exists(ctx, p)) {
            ADD("lib.nccl.flags-dir", NCD_CAT_LIB_NCCL, NCD_SEV_ERROR,
                "FLAGS_nccl_dir=%s has no libnccl.so: Paddle cannot load NCCL",
                fdir);
            ncd_finding_cause(f, "Paddle dlopens <FLAGS_nccl_dir>/libnccl.so "
                                 "(the unversioned name, which the pip wheel "
                                 "nvidia-nccl-cu12 does not ship).");
            ncd_finding_fix(f, "Point FLAGS_nccl_dir at a directory with "
                               "libnccl.so (or create the symlink "
                               "libnccl.so -> libnccl.so.2 there).");
        }
        ncd_ctx_clear_error(ctx);
    }
    if (!s.n) {
        if (!ncd_ctx_is_live(ctx) && !s.recorded) {
            ADD("lib.nccl.not-visible", NCD_CAT_LIB_NCCL, NCD_SEV_INFO,
                "Which libnccl files exist is not visible in this capture");
            ncd_finding_evidence(f, "no /.ncd/nccl-libs");
        } else {
            ADD("lib.nccl.none", NCD_CAT_LIB_NCCL, NCD_SEV_INFO,
                "No libnccl.so* found in the loader's paths, CUDA, conda or "
                "Python site-packages");
            ncd_finding_cause(f, "Applications that bundle NCCL statically or "
                                 "in a private directory still work; others "
                                 "fail to load it.");
            ncd_finding_fix(f, "pip install nvidia-nccl-cu12 (or -cu13), or "
                               "the libnccl2 package from NVIDIA's "
                               "repository.");
        }
        goto cuda;
    }
    /* Distinct versions. */
    int distinct[16], nd = 0;
    for (size_t i = 0; i < s.n; i++) {
        int v = s.v[i].version, dup = 0;
        if (!v)
            continue;
        for (int k = 0; k < nd; k++)
            dup |= distinct[k] == v;
        if (!dup && nd < 16)
            distinct[nd++] = v;
    }
    if (nd > 1) {
        ADD("lib.nccl.mixed-versions", NCD_CAT_VERSION_MISMATCH,
            NCD_SEV_WARNING, "%d different NCCL versions are installed", nd);
        for (size_t i = 0; i < s.n; i++)
            ncd_finding_evidence(
                f, "%s: %s%s%s (%s)%s", s.v[i].path,
                s.v[i].version ? ncd_nccl_version_str(s.v[i].version, vb,
                                                      sizeof vb)
                               : "version ?",
                *s.v[i].cuda ? "+cuda" : "", s.v[i].cuda, s.v[i].origin,
                (int)i == s.winner ? "  <- dlopen(\"libnccl.so.2\") picks this"
                                   : "");
        ncd_finding_cause(
            f, "Which copy a process loads depends on its RPATH (PyTorch "
               "wheels load site-packages/nvidia/nccl/lib), LD_LIBRARY_PATH, "
               "LD_PRELOAD and the ld cache, so two programs on this node, "
               "or ranks on two nodes, can run different NCCLs: 'Mismatched "
               "NCCL version detected' or subtle hangs.");
        ncd_finding_fix(f, "Keep one NCCL per environment, or pin it with "
                           "LD_PRELOAD=<path>/libnccl.so.2 for every rank; "
                           "confirm with NCCL_DEBUG=VERSION on each node.");
    }
    if (s.winner >= 0) {
        const struct ncd_nccl_file *w = &s.v[s.winner];
        ADD("lib.nccl.found", NCD_CAT_LIB_NCCL, NCD_SEV_OK,
            "libnccl.so.2 resolves to %s (NCCL %s%s%s)", w->path,
            w->version ? ncd_nccl_version_str(w->version, vb, sizeof vb) : "?",
            *w->cuda ? ", built for CUDA " : "", w->cuda);
        ncd_finding_evidence(f, "how: %s", s.winner_why);
        for (size_t i = 0; i < s.n; i++)
            if ((int)i != s.winner)
                ncd_finding_evidence(
                    f, "also: %s (%s, %s)", s.v[i].path,
                    s.v[i].version ? ncd_nccl_version_str(s.v[i].version, vb2,
                                                          sizeof vb2)
                                   : "?",
                    s.v[i].origin);
    } else {
        ADD("lib.nccl.not-on-loader-path", NCD_CAT_LIB_NCCL, NCD_SEV_INFO,
            "%zu libnccl file(s) found, but none on the default loader path",
            s.n);
        for (size_t i = 0; i < s.n; i++)
            ncd_finding_evidence(f, "%s (%s)", s.v[i].path, s.v[i].origin);
        ncd_finding_cause(f, "Programs that dlopen(\"libnccl.so.2\") without "
                             "an RPATH (nccl-tests, Paddle without "
                             "FLAGS_nccl_dir) will not find it.");
        ncd_finding_fix(f, "Add its directory to LD_LIBRARY_PATH (or "
                           "/etc/ld.so.conf.d + ldconfig).");
    }
cuda:;
    char src[64];
    int drv = cuda_driver_version(ctx, src, sizeof src);
    if (drv > 0)
        json_object_set_new(facts, "cuda_driver_version", json_integer(drv));
    /* One finding for all copies built for a newer CUDA than the driver:
     * error when a major version is newer, else warning. */
    int dmaj = drv / 1000, dmin = (drv % 1000) / 10, worst = 0, n_old = 0;
    for (size_t i = 0; drv > 0 && i < s.n; i++) {
        int maj = 0, min = 0;
        if (!*s.v[i].cuda || sscanf(s.v[i].cuda, "%d.%d", &maj, &min) < 1)
            continue;
        if (dmaj < maj)
            worst = 2;
        else if (dmaj == maj && dmin < min && worst < 1)
            worst = 1;
        n_old += dmaj < maj || (dmaj == maj && dmin < min);
    }
    if (worst) {
        ADD(worst == 2 ? "gpu.driver.too-old" : "gpu.driver.minor-older",
            NCD_CAT_GPU_DRIVER, worst == 2 ? NCD_SEV_ERROR : NCD_SEV_WARNING,
            "The CUDA driver supports CUDA %d.%d, older than %d NCCL build(s) "
            "here need",
            dmaj, dmin, n_old);
        ncd_finding_evidence(f, "driver CUDA version %d (%s)", drv, src);
        for (size_t i = 0; i < s.n; i++) {
            int maj = 0, min = 0;
            if (!*s.v[i].cuda || sscanf(s.v[i].cuda, "%d.%d", &maj, &min) < 1)
                continue;
            if (dmaj < maj || (dmaj == maj && dmin < min))
                ncd_finding_evidence(f, "%s: built for CUDA %s%s", s.v[i].path,
                                     s.v[i].cuda,
                                     dmaj < maj ? " (newer major: fails)" : "");
        }
        ncd_finding_cause(f, "%s", worst == 2
                                       ? "A CUDA major version newer than the "
                                         "driver fails to initialise: 'CUDA "
                                         "driver version is insufficient for "
                                         "CUDA runtime version'."
                                       : "Minor-version compatibility lets it "
                                         "run, but features of the newer CUDA "
                                         "(cuMem, NVLS) may be unavailable.");
        ncd_finding_fix(f, "Upgrade the NVIDIA driver, or use NCCL builds for "
                           "CUDA %d.%d or older.",
                        dmaj, dmin);
    }
done:
    ncd_nccl_scan_release(&s);
    return rc;
}
