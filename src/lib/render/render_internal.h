/* SPDX-License-Identifier: MIT */
/* Helpers shared by the node renderers (src/lib/render).  Not public. */
#ifndef NCD_RENDER_INTERNAL_H
#define NCD_RENDER_INTERNAL_H

#include <jansson.h>
#include <stddef.h>

/* A JSON string from text read out of a capture (any bytes): invalid
 * UTF-8 becomes '?' instead of making jansson return NULL; control
 * characters are kept (json_dumps escapes them).  NULL gives JSON null. */
json_t *ncd__jstr(const char *s);

/* Copies text of unknown origin for a terminal: the same cleaning as
 * ncd_json_string() (invalid UTF-8 and control characters -> '?', tab and
 * newline -> ' ').  Returns buf. */
const char *ncd__text(const char *s, char *buf, size_t len);

#endif
