/* SPDX-License-Identifier: MIT */
/* PCI addresses and sysfs device paths (see ncd/pciaddr.h).  Pure. */
#include "ncd/pciaddr.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

int ncd_pci_is_bdf(const char *s, size_t n)
{
    /* dddd:bb:dd.f */
    if (n != 12)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (i == 4 || i == 7) {
            if (c != ':')
                return 0;
        } else if (i == 10) {
            if (c != '.')
                return 0;
        } else if (!isxdigit((unsigned char)c)) {
            return 0;
        }
    }
    return 1;
}

int ncd_pci_path_split(const char *path, char *root, char (*chain)[16],
                       int max)
{
    int n = 0;
    root[0] = '\0';
    const char *p = path;
    while (*p) {
        while (*p == '/')
            p++;
        const char *e = strchr(p, '/');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == 0)
            break;
        if (ncd_pci_is_bdf(p, len)) {
            if (n < max) {
                for (size_t i = 0; i < len; i++)
                    chain[n][i] = (char)tolower((unsigned char)p[i]);
                chain[n][len] = '\0';
            }
            n++;
        } else if (len > 3 && strncmp(p, "pci", 3) == 0 && len < 32) {
            /* A new host bridge component restarts the chain. */
            memcpy(root, p, len);
            root[len] = '\0';
            n = 0;
        } else if (n > 0) {
            /* Past the PCI functions (e.g. ".../net/eth0"): stop. */
            break;
        }
        p += len;
    }
    return n < max ? n : max;
}

void ncd_pci_bdf_of_path(const char *path, char *out, size_t outsz)
{
    out[0] = '\0';
    const char *p = path;
    while (*p) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        if (ncd_pci_is_bdf(p, n))
            snprintf(out, outsz, "%.*s", (int)n, p);
        p += n;
        while (*p == '/')
            p++;
    }
}
