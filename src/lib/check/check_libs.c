/* SPDX-License-Identifier: MIT */
/* Check: every libnccl on the node, the one the loader picks, mixed
 * versions, and the CUDA driver against the CUDA each NCCL was built for.
 * Where to look: include/ncd/libs.h; Paddle's FLAGS_nccl_dir and the pip
 * wheel layout: shared/reference/ecosystem.md. */
#define _GNU_SOURCE
#include "ncd/check.h"
#include "check/check_internal.h"
#include "ncd/error.h"
#include "ncd/libs.h"
#include "ncd/node.h"
#include "ncd/version.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ncd_check_libs(const struct ncd_node *n, const struct ncd_check_opts *opts,
                   struct ncd_findings *out);


int ncd_check_libs(const struct ncd_node *n, const struct ncd_check_opts *opts,
                   struct ncd_findings *out)
{
    (void)opts;
    const struct ncd_nccl_scan *sc = &n->libs.scan;
    struct ncd_finding *f;
    int rc = 0;
    char vb[24], vb2[24];
    const char *fdir = ncd_node_getenv(n, "FLAGS_nccl_dir");
    if (fdir && *fdir && !n->libs.flags_dir_ok) {
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
    if (!sc->n) {
        if (!sc->visible) {
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
    for (size_t i = 0; i < sc->n; i++) {
        int v = sc->v[i].version, dup = 0;
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
        for (size_t i = 0; i < sc->n; i++)
            ncd_finding_evidence(
                f, "%s: %s%s%s (%s)%s", sc->v[i].path,
                sc->v[i].version ? ncd_nccl_version_str(sc->v[i].version, vb,
                                                      sizeof vb)
                               : "version ?",
                *sc->v[i].cuda ? "+cuda" : "", sc->v[i].cuda, sc->v[i].origin,
                (int)i == sc->winner ? "  <- dlopen(\"libnccl.so.2\") picks this"
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
    if (sc->winner >= 0) {
        const struct ncd_nccl_file *w = &sc->v[sc->winner];
        ADD("lib.nccl.found", NCD_CAT_LIB_NCCL, NCD_SEV_OK,
            "libnccl.so.2 resolves to %s (NCCL %s%s%s)", w->path,
            w->version ? ncd_nccl_version_str(w->version, vb, sizeof vb) : "?",
            *w->cuda ? ", built for CUDA " : "", w->cuda);
        ncd_finding_evidence(f, "how: %s", sc->winner_why);
        for (size_t i = 0; i < sc->n; i++)
            if ((int)i != sc->winner)
                ncd_finding_evidence(
                    f, "also: %s (%s, %s)", sc->v[i].path,
                    sc->v[i].version ? ncd_nccl_version_str(sc->v[i].version, vb2,
                                                          sizeof vb2)
                                   : "?",
                    sc->v[i].origin);
    } else {
        ADD("lib.nccl.not-on-loader-path", NCD_CAT_LIB_NCCL, NCD_SEV_INFO,
            "%zu libnccl file(s) found, but none on the default loader path",
            sc->n);
        for (size_t i = 0; i < sc->n; i++)
            ncd_finding_evidence(f, "%s (%s)", sc->v[i].path, sc->v[i].origin);
        ncd_finding_cause(f, "Programs that dlopen(\"libnccl.so.2\") without "
                             "an RPATH (nccl-tests, Paddle without "
                             "FLAGS_nccl_dir) will not find it.");
        ncd_finding_fix(f, "Add its directory to LD_LIBRARY_PATH (or "
                           "/etc/ld.so.conf.d + ldconfig).");
    }
cuda:;
    const char *src = n->libs.cuda_src;
    int drv = n->libs.cuda_driver;
    /* One finding for all copies built for a newer CUDA than the driver:
     * error when a major version is newer, else warning. */
    int dmaj = drv / 1000, dmin = (drv % 1000) / 10, worst = 0, n_old = 0;
    for (size_t i = 0; drv > 0 && i < sc->n; i++) {
        int maj = 0, min = 0;
        if (!*sc->v[i].cuda || sscanf(sc->v[i].cuda, "%d.%d", &maj, &min) < 1)
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
        for (size_t i = 0; i < sc->n; i++) {
            int maj = 0, min = 0;
            if (!*sc->v[i].cuda || sscanf(sc->v[i].cuda, "%d.%d", &maj, &min) < 1)
                continue;
            if (dmaj < maj || (dmaj == maj && dmin < min))
                ncd_finding_evidence(f, "%s: built for CUDA %s%s", sc->v[i].path,
                                     sc->v[i].cuda,
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
    return rc;
}
