/* SPDX-License-Identifier: MIT */
#include "ncd/error.h"

#include <stdarg.h>
#include <stdio.h>

#include <errno.h>

const char *ncd_strerror(int code)
{
    switch (code) {
    case NCD_OK:
        return "success";
#define NCD__ERR_MSG(num, name, msg)                                          \
    case NCD_E##name:                                                         \
        return msg;
        NCD_ERRNO_MAP(NCD__ERR_MSG)
#undef NCD__ERR_MSG
    }
    return "unknown error";
}

const char *ncd_err_name(int code)
{
    switch (code) {
    case NCD_OK:
        return "OK";
#define NCD__ERR_NAME(num, name, msg)                                         \
    case NCD_E##name:                                                         \
        return #name;
        NCD_ERRNO_MAP(NCD__ERR_NAME)
#undef NCD__ERR_NAME
    }
    return "UNKNOWN";
}

int ncd_err_from_errno(int err)
{
    switch (err) {
    case 0:
        return NCD_OK;
    case ENOMEM:
        return NCD_ENOMEM;
    case EINVAL:
        return NCD_EINVAL;
    case EIO:
        return NCD_EIO;
    case ENOENT:
    case ENOTDIR:
    case ENODEV:
    case ENXIO:
        return NCD_ENOENT;
    case EACCES:
    case EPERM:
    case EROFS:
        return NCD_EPERM;
    case ENOSPC:
    case EDQUOT:
        return NCD_ENOSPC;
    case ETIMEDOUT:
    case EAGAIN:
        return NCD_ETIMEOUT;
    case ECONNREFUSED:
        return NCD_ECONNREFUSED;
    case ENETUNREACH:
    case EHOSTUNREACH:
        return NCD_EUNREACH;
    case ECONNRESET:
    case EPIPE:
        return NCD_EPEER;
    case EEXIST:
        return NCD_EEXISTS;
    case ERANGE:
    case EOVERFLOW:
        return NCD_ERANGE;
    case EPROTO:
        return NCD_EPROTO;
    }
    return NCD_ESYS;
}

int ncd_errbuf(char *buf, size_t n, int code, const char *fmt, ...)
{
    if (buf && n) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, n, fmt, ap);
        va_end(ap);
    }
    return code;
}
