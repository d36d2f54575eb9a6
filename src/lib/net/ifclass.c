/* SPDX-License-Identifier: MIT */
/* The interface-name classifier (see ncd/ifclass.h, table ifnames.def). */
#include "ncd/ifclass.h"

#include <stddef.h>
#include <string.h>

static const struct rule {
    const char *prefix;
    enum ncd_ifname_class cls;
    const char *why;
} rules[] = {
#define NCD_IFNAME(prefix, cls, why) {prefix, NCD_IFN_##cls, why},
#include "net/ifnames.def"
#undef NCD_IFNAME
};

static const struct rule *match(const char *name)
{
    for (size_t i = 0; i < sizeof rules / sizeof *rules; i++)
        if (strncmp(name, rules[i].prefix, strlen(rules[i].prefix)) == 0)
            return &rules[i];
    return NULL;
}

enum ncd_ifname_class ncd_ifname_classify(const char *name)
{
    if (strcmp(name, "lo") == 0)
        return NCD_IFN_LOOPBACK;
    const struct rule *r = match(name);
    return r ? r->cls : NCD_IFN_OTHER;
}

int ncd_ifname_is_plumbing(const char *name)
{
    enum ncd_ifname_class c = ncd_ifname_classify(name);
    return c != NCD_IFN_OTHER && c != NCD_IFN_LOOPBACK;
}

const char *ncd_ifname_why(const char *name)
{
    const struct rule *r = match(name);
    return r ? r->why : NULL;
}
