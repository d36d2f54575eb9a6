/* SPDX-License-Identifier: MIT */
/**
 * @file readall.h
 * @brief One grow-buffer reader: whole files, whole pipes, or a pipe read
 *        a piece at a time inside a poll() loop, with a size cap; and its
 *        counterpart, the atomic whole-file writer.
 *
 * The buffer doubles as it fills (starting at 4 KiB) up to `max` bytes;
 * what arrives beyond `max` is read and dropped (so a writer never blocks
 * on a full pipe) and `truncated` is set.  `data` is NUL-terminated
 * whenever it is not NULL, so text can be used as a C string.
 */
#ifndef NCD_READALL_H
#define NCD_READALL_H

#include <stddef.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A growing read buffer.  Zero-initialise, set `max` (0 = 64 MiB). */
struct ncd_rdbuf {
    char *data;    /**< NULL until something was read; NUL-terminated */
    size_t len;    /**< bytes kept */
    size_t cap;    /**< bytes allocated (excluding the NUL) */
    size_t max;    /**< most bytes kept; 0 means 64 MiB */
    int truncated; /**< 1 when bytes beyond max were dropped */
};

/**
 * One read() from `fd` into the buffer (a non-blocking fd after poll(),
 * or a blocking one).
 * @return bytes read (> 0, counting dropped ones), 0 at end of file, or -1
 *         with errno (EAGAIN, EINTR, ENOMEM...).
 */
ssize_t ncd_rdbuf_fill(struct ncd_rdbuf *b, int fd);

/**
 * Reads `fd` to end of file into `out` (zero-initialised by the caller,
 * max set or 0).  @return 0, or -1 with errno (EINTR is retried).
 */
int ncd_read_fd(int fd, struct ncd_rdbuf *out);

/**
 * Reads a whole file (opened with O_CLOEXEC, outside any sysroot: for
 * files the user names on the command line).
 * @return 0, or -1 with errno (ENOENT, EACCES, ...).
 */
int ncd_read_file(const char *path, struct ncd_rdbuf *out);

/** Frees the data and zeroes the buffer (max is kept).  NULL-safe. */
void ncd_rdbuf_release(struct ncd_rdbuf *b);

/**
 * Writes `len` bytes to `path` atomically: a temporary file in the same
 * directory (".<name>.tmp.XXXXXX", a name readers such as node_exporter's
 * textfile collector skip: it reads only *.prom), written, flushed with
 * fsync, given `mode` (e.g. 0644: mkstemp's 0600 would hide a textfile
 * from a collector running as another user), then rename()d over `path`.
 * Readers see the old file or the whole new one, never a part; on any
 * failure the temporary file is removed and `path` is untouched.  Outside
 * any sysroot (a file the user named).
 * @return 0, or -1 with errno (ENOENT for a missing directory, EACCES,
 *         ENOSPC, EISDIR...).
 */
int ncd_write_file_atomic(const char *path, const void *data, size_t len,
                          unsigned mode);

/**
 * Checks, before a long run, that ncd_write_file_atomic(path, ...) could
 * create its temporary file: refuses a `path` that is a directory or ends
 * in '/', then creates ".<name>.tmp.XXXXXX" in the target's directory and
 * removes it at once (nothing is left behind, on any path, so no signal
 * handler has to clean up).  The target itself is not touched.  The
 * directory may still change before the real write, which reports its own
 * error then.  Outside any sysroot (a file the user named).
 * @return 0, or -1 with errno (ENOENT for a missing directory, EACCES,
 *         EROFS, ENOSPC, EISDIR, ENOTDIR...).
 */
int ncd_file_writable(const char *path);

#ifdef __cplusplus
}
#endif
#endif
