/* SPDX-License-Identifier: MIT */
/*
 * Libraries loaded on first use (libarchive, libyaml, zlib, hwloc): each is
 * needed by a few commands only, and linked it would be mapped and
 * relocated at every start of every command (`check` among them).
 */
#ifndef NCD_CORE_DL_H
#define NCD_CORE_DL_H

#include <stddef.h>

/*
 * dlopen()s the first of names[0..nnames) that loads (RTLD_NOW |
 * RTLD_LOCAL) and resolves syms[0..nsyms) into fn[0..nsyms), in order.
 * `lib` names the library and `pkg` the Debian package that provides it,
 * for the message.  Returns 0, or -1 with a one-line message in err
 * ("LIB cannot be loaded (dlerror): install PKG", "LIB has no SYM: too
 * old").  The handle is never closed: the pointers stay valid for the
 * life of the process.  Call it once (pthread_once); not thread-safe
 * itself (dlerror).
 */
int ncd__dl_load(const char *lib, const char *pkg, const char *const *names,
                 size_t nnames, const char *const *syms, void **fn,
                 size_t nsyms, char *err, size_t errsz);

/* For an X-macro list X(field, symbol): the symbol's name, as an element
 * of the `syms` array. */
#define NCD__DL_NAME(field, sym) #sym,

#endif
