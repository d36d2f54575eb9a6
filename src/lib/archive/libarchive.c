/* SPDX-License-Identifier: MIT */
/* Loads libarchive on first use (see ncd/archive.h for why). */
#define _GNU_SOURCE
#include "core/dl.h"
#include "archive/libarchive.h"

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
    static const char *const syms[] = {NCD__ARCHIVE_FUNCS(NCD__DL_NAME)};
    void *fn[sizeof syms / sizeof *syms];
    if (ncd__dl_load("libarchive", "libarchive13", names,
                     sizeof names / sizeof *names, syms, fn,
                     sizeof fn / sizeof *fn, load_error, sizeof load_error) < 0)
        return;
    size_t i = 0;
#define NCD__ARCHIVE_SET(field, sym)                                         \
    api.field = (__typeof__(api.field))(uintptr_t)fn[i++];
    NCD__ARCHIVE_FUNCS(NCD__ARCHIVE_SET)
#undef NCD__ARCHIVE_SET
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
