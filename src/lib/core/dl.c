/* SPDX-License-Identifier: MIT */
/* Libraries loaded on first use (core/dl.h). */
#include "core/dl.h"

#include <dlfcn.h>
#include <stdio.h>

int ncd__dl_load(const char *lib, const char *pkg, const char *const *names,
                 size_t nnames, const char *const *syms, void **fn,
                 size_t nsyms, char *err, size_t errsz)
{
    void *h = NULL;
    for (size_t i = 0; i < nnames && !h; i++)
        h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(err, errsz, "%s cannot be loaded (%s): install %s", lib,
                 e ? e : "not found", pkg);
        return -1;
    }
    for (size_t i = 0; i < nsyms; i++)
        if (!(fn[i] = dlsym(h, syms[i]))) {
            snprintf(err, errsz, "%s has no %s: too old", lib, syms[i]);
            return -1;
        }
    return 0;
}
