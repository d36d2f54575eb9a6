/* SPDX-License-Identifier: MIT */
/* libarchive through a table filled by dlsym (see ncd/archive.h).  The
 * member types come from <archive.h>, so a changed prototype fails to
 * compile instead of misbehaving.  Not public. */
#ifndef NCD_LIBARCHIVE_H
#define NCD_LIBARCHIVE_H

#include <archive.h>
#include <archive_entry.h>
#include <stddef.h>

#define NCD__ARCHIVE_FUNCS(X)                                                 \
    X(read_new, archive_read_new)                                             \
    X(read_support_filter_all, archive_read_support_filter_all)               \
    X(read_support_format_tar, archive_read_support_format_tar)               \
    X(read_support_format_gnutar, archive_read_support_format_gnutar)         \
    X(read_open_filename, archive_read_open_filename)                         \
    X(read_open_memory, archive_read_open_memory)                             \
    X(read_next_header, archive_read_next_header)                             \
    X(read_data, archive_read_data)                                           \
    X(read_free, archive_read_free)                                           \
    X(error_string, archive_error_string)                                     \
    X(err_no, archive_errno)                                                  \
    X(entry_pathname, archive_entry_pathname)                                 \
    X(entry_hardlink, archive_entry_hardlink)                                 \
    X(entry_filetype, archive_entry_filetype)                                 \
    X(entry_symlink, archive_entry_symlink)                                   \
    X(entry_size, archive_entry_size)                                         \
    X(write_new, archive_write_new)                                           \
    X(write_add_filter_gzip, archive_write_add_filter_gzip)                   \
    X(write_set_format_pax_restricted, archive_write_set_format_pax_restricted) \
    X(write_open_fd, archive_write_open_fd)                                   \
    X(write_header, archive_write_header)                                     \
    X(write_data, archive_write_data)                                         \
    X(write_close, archive_write_close)                                       \
    X(write_free, archive_write_free)                                         \
    X(entry_new, archive_entry_new)                                           \
    X(entry_clear, archive_entry_clear)                                       \
    X(entry_set_pathname, archive_entry_set_pathname)                         \
    X(entry_set_mtime, archive_entry_set_mtime)                               \
    X(entry_set_filetype, archive_entry_set_filetype)                         \
    X(entry_set_perm, archive_entry_set_perm)                                 \
    X(entry_set_symlink, archive_entry_set_symlink)                           \
    X(entry_set_size, archive_entry_set_size)                                 \
    X(entry_free, archive_entry_free)

struct ncd__archive_api {
#define NCD__ARCHIVE_MEMBER(field, sym) __typeof__(sym) *field;
    NCD__ARCHIVE_FUNCS(NCD__ARCHIVE_MEMBER)
#undef NCD__ARCHIVE_MEMBER
};

/* The loaded table, or NULL with a message in err (library or symbol
 * missing).  Loaded once per process; thread-safe. */
const struct ncd__archive_api *ncd__archive(char *err, size_t errsz);

/*
 * ncd_sysroot_unpack() (ncd/archive.h) of a tarball held in memory (len
 * bytes at buf, not copied, read only during the call); `label` names it
 * in messages.  Same limits, results and cleanup; tests/fuzz/fuzz_archive.c
 * drives it.
 */
int ncd__sysroot_unpack_mem(const void *buf, size_t len, const char *label,
                            char *dir, size_t dirsz, char *top, size_t topsz,
                            char *err, size_t errsz);

#endif
