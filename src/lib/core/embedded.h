/* SPDX-License-Identifier: MIT */
/* Data files compiled into the library (cmake/embed.cmake). */
#ifndef NCD_CORE_EMBEDDED_H
#define NCD_CORE_EMBEDDED_H

#include <stddef.h>

struct ncd_embedded_file {
    const char *name;          /* "<dir>/<file>", e.g. "data/nccl-vars.yaml" */
    const unsigned char *data; /* NUL-terminated */
    size_t size;               /* bytes, without the NUL */
};

/* Terminated by an entry whose name is NULL. */
extern const struct ncd_embedded_file ncd_embedded_files[];

/* The embedded file with that name, or NULL. */
const struct ncd_embedded_file *ncd_embedded_find(const char *name);

#endif
