/* SPDX-License-Identifier: MIT */
/* Helpers shared by the check implementations (not public). */
#ifndef NCD_CHECK_INTERNAL_H
#define NCD_CHECK_INTERNAL_H

#include "ncd/error.h"
#include "ncd/finding.h"

/* Adds a finding to `out` and points `f` at it; on allocation failure sets
 * `rc` to NCD_ENOMEM and jumps to the function's `done:` cleanup label. */
#define ADD(id, cat, sev, ...)                                                \
    do {                                                                      \
        if (!(f = ncd_findings_add(out, id, cat, sev, __VA_ARGS__))) {        \
            rc = NCD_ENOMEM;                                                  \
            goto done;                                                        \
        }                                                                     \
    } while (0)

#endif
