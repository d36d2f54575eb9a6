/* SPDX-License-Identifier: MIT */
/* Loads libarchive on first use (see ncd/archive.h for why). */
#define _GNU_SOURCE
#include "archive/libarchive.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

static struct ncd__archive_api api;
static char load_error[256];
static int loaded;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void)
{
    /* The soname of libarchive 3.x since 2011; the dev symlink as a last
     * resort for builds elsewhere. */
    static const char *const names[] = {"libarchive.so.13", "libarchive.so"};
    void *h = NULL;
    for (size_t i = 0; i < sizeof names / sizeof *names && !h; i++)
        h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(load_error, sizeof load_error,
                 "libarchive cannot be loaded (%s): install libarchive13",
                 e ? e : "not found");
        return;
    }
#define NCD__ARCHIVE_LOAD(field, sym)                                         \
    api.field = (__typeof__(api.field))(uintptr_t)dlsym(h, #sym);             \
    if (!api.field) {                                                         \
        snprintf(load_error, sizeof load_error,                               \
                 "libarchive has no %s: too old", #sym);                      \
        return;                                                               \
    }
    NCD__ARCHIVE_FUNCS(NCD__ARCHIVE_LOAD)
#undef NCD__ARCHIVE_LOAD
    /* never dlclose'd: the table points into it for the process' life */
    loaded = 1;
}

const struct ncd__archive_api *ncd__archive(char *err, size_t errsz)
{
    pthread_once(&once, load);
    if (loaded)
        return &api;
    if (err && errsz)
        snprintf(err, errsz, "%s", load_error);
    return NULL;
}
