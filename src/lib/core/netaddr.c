/* SPDX-License-Identifier: MIT */
/* Interface addresses from text (see ncd/netaddr.h).  Pure. */
#define _GNU_SOURCE
#include "ncd/netaddr.h"
#include "ncd/error.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ncd/strbuf.h"

int ncd_if_addr_from_string(struct ncd_if_addr *a, const char *s, int prefix)
{
    memset(a, 0, sizeof *a);
    char tmp[80];
    if (snprintf(tmp, sizeof tmp, "%s", s) >= (int)sizeof tmp)
        return NCD_EPARSE;
    char *pct = strchr(tmp, '%');
    if (pct)
        *pct = '\0';
    if (inet_pton(AF_INET, tmp, a->bytes) == 1) {
        a->family = AF_INET;
        if (prefix < 0 || prefix > 32)
            return NCD_EPARSE;
        a->loopback = a->bytes[0] == 127;
        a->link_local = a->bytes[0] == 169 && a->bytes[1] == 254;
    } else if (inet_pton(AF_INET6, tmp, a->bytes) == 1) {
        a->family = AF_INET6;
        if (prefix < 0 || prefix > 128)
            return NCD_EPARSE;
        static const unsigned char one[16] = {[15] = 1};
        a->loopback = memcmp(a->bytes, one, 16) == 0;
        a->link_local = a->bytes[0] == 0xfe && (a->bytes[1] & 0xc0) == 0x80;
        if (pct && pct[1]) {
            unsigned idx = if_nametoindex(pct + 1);
            a->scope_id = idx ? (int)idx : atoi(pct + 1);
        }
    } else {
        return NCD_EPARSE;
    }
    snprintf(a->addr, sizeof a->addr, "%s", tmp);
    a->prefix = prefix;
    a->scope = a->loopback     ? "host"
               : a->link_local ? "link"
               : (a->family == AF_INET6 && a->bytes[0] == 0xfe &&
                  (a->bytes[1] & 0xc0) == 0xc0)
                   ? "site"
                   : "global";
    return 0;
}

int ncd_hosts_lookup(const char *buf, size_t len, const char *name,
                     struct ncd_if_addr *out)
{
    size_t pos = 0, l;
    const char *s;
    while (ncd_next_line(buf, len, &pos, &s, &l)) {
        char line[1024];
        snprintf(line, sizeof line, "%.*s", (int)(l < sizeof line ? l : sizeof line - 1), s);
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *save = NULL, *addr = strtok_r(line, " \t\r", &save);
        for (char *n = addr ? strtok_r(NULL, " \t\r", &save) : NULL; n;
             n = strtok_r(NULL, " \t\r", &save))
            if (strcasecmp(n, name) == 0 &&
                ncd_if_addr_from_string(out, addr,
                                        strchr(addr, ':') ? 128 : 32) == 0)
                return 1;
    }
    return 0;
}
