/* SPDX-License-Identifier: MIT */
#include "core/embedded.h"

#include <string.h>

const struct ncd_embedded_file *ncd_embedded_find(const char *name)
{
    for (const struct ncd_embedded_file *f = ncd_embedded_files; f->name; f++)
        if (strcmp(f->name, name) == 0)
            return f;
    return NULL;
}
