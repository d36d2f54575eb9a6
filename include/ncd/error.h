/* SPDX-License-Identifier: MIT */
/**
 * @file error.h
 * @brief Error codes of libncd.
 *
 * Error reporting: every libncd function that can fail returns 0 (or a
 * non-negative count) on success and a negative NCD_E* code on failure.
 * The code says what kind of failure it was; the detail (which file, which
 * value, which peer) is kept in the context's error buffer, see
 * ncd_ctx_errdetail().  The first failure recorded wins until the buffer is
 * cleared, as curl's error buffer does, so the root cause is not overwritten
 * by the errors it causes further up the stack.
 *
 * Numbers are stable: a code keeps its number for ever and a retired number
 * is never reused.  Add new codes at the end.
 */
#ifndef NCD_ERROR_H
#define NCD_ERROR_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* XX(number, NAME, message) */
#define NCD_ERRNO_MAP(XX)                                                     \
    XX(1, NOMEM, "out of memory")                                             \
    XX(2, INVAL, "invalid argument")                                          \
    XX(3, IO, "input/output error")                                           \
    XX(4, NOENT, "no such file, device or entry")                             \
    XX(5, PARSE, "malformed input")                                           \
    XX(6, NOTLIVE, "not available when reading a recorded sysroot")           \
    XX(7, UNSUPPORTED, "not supported here")                                  \
    XX(8, TIMEOUT, "timed out")                                               \
    XX(9, PEER, "peer failed or closed the connection")                       \
    XX(10, DLOPEN, "shared library could not be loaded")                      \
    XX(11, USAGE, "invalid usage")                                            \
    XX(12, RANGE, "value out of range")                                       \
    XX(13, PERM, "permission denied")                                         \
    XX(14, PROTO, "protocol violation")                                       \
    XX(15, NOSPC, "no space left on device")                                  \
    XX(16, CUDA, "CUDA runtime error")                                        \
    XX(17, NCCL, "NCCL error")                                                \
    XX(18, SYS, "system call failed")                                         \
    XX(19, CONNREFUSED, "connection refused")                                 \
    XX(20, UNREACH, "network or host unreachable")                            \
    XX(21, EXISTS, "already exists")                                          \
    XX(22, WRONG, "results are wrong")

/** Error codes.  NCD_OK is 0; every other code is negative. */
enum ncd_errno {
    NCD_OK = 0,
#define NCD__ERR_ENUM(num, name, msg) NCD_E##name = -(num),
    NCD_ERRNO_MAP(NCD__ERR_ENUM)
#undef NCD__ERR_ENUM
};

/**
 * Short message for an error code ("out of memory").  Never NULL; an unknown
 * code gives "unknown error".  The string is static.
 */
const char *ncd_strerror(int code);

/**
 * Symbolic name of an error code without the prefix ("NOMEM"); "OK" for 0,
 * "UNKNOWN" for a code not in the list.  The string is static.
 */
const char *ncd_err_name(int code);

/**
 * Maps an errno value to the closest NCD_E* code (ENOENT -> NCD_ENOENT,
 * ENOSPC -> NCD_ENOSPC, ECONNREFUSED -> NCD_ECONNREFUSED, ...); anything else
 * becomes NCD_ESYS.  0 gives NCD_OK.
 */
int ncd_err_from_errno(int err);

/**
 * Formats a message into a caller's buffer (`buf` may be NULL or `n` 0:
 * nothing is written) and returns `code`, for functions that report into
 * an error buffer instead of a context:
 *   return ncd_errbuf(err, errsz, NCD_EPARSE, "%s: bad entry", name);
 */
int ncd_errbuf(char *buf, size_t n, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#ifdef __cplusplus
}
#endif
#endif
