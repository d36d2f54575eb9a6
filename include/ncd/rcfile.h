/* SPDX-License-Identifier: MIT */
/**
 * @file rcfile.h
 * @brief A managed block in a shell rc file (~/.bashrc, /etc/profile.d/...).
 *
 * The block is
 *     # >>> nccl-doctor >>>
 *     # managed by 'nccl-doctor env --write' ... (one comment line)
 *     <body lines>
 *     # <<< nccl-doctor <<<
 * Re-running replaces it in place; nothing else in the file changes, byte
 * for byte.  The file is replaced atomically: a temporary file in the same
 * directory gets the original's mode (and owner, when run as root), is
 * written and fsync'ed, then renamed over the target (symlinks are
 * resolved first, so a symlinked dotfile stays a symlink); the directory is
 * fsync'ed.  The previous content is kept in <file>.nccl-doctor.bak.  On any
 * failure (full disk, permissions) the original file is left untouched and
 * the temporary file removed.  Conventions: conda init's marked block,
 * shared/reference/ecosystem.md §5.
 */
#ifndef NCD_RCFILE_H
#define NCD_RCFILE_H

#include <stddef.h>
#include <sys/types.h>

#include "ncd/ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NCD_RC_BEGIN "# >>> nccl-doctor >>>"
#define NCD_RC_END "# <<< nccl-doctor <<<"

/**
 * Computes the new content of a file: `old` with the block replaced by
 * `body` (or the block removed when body is NULL, or appended when the file
 * has none).
 * @param body   lines to put in the block, each ending in '\n'; NULL removes.
 * @param out    receives a malloc'ed NUL-terminated copy; caller frees.
 * @return 0; NCD_EPARSE when the markers are unbalanced, duplicated or out
 *         of order (detail names the line); NCD_ENOMEM.
 */
int ncd_rc_splice(struct ncd_ctx *ctx, const char *old, size_t oldlen,
                  const char *body, char **out, size_t *outlen);

/** What ncd_rc_update() did. */
enum ncd_rc_action {
    NCD_RC_UNCHANGED = 0, /**< the file already had exactly this block */
    NCD_RC_CREATED,       /**< the file did not exist */
    NCD_RC_UPDATED,       /**< the block was added or replaced */
    NCD_RC_REMOVED,       /**< the block was taken out */
};

/** Test hook: replaces write(2) for the temporary file. */
typedef ssize_t (*ncd_write_fn)(int fd, const void *buf, size_t n);

/**
 * Updates (body != NULL) or removes (body == NULL) the block in `path`.
 * Not through the sysroot: this writes the user's real file.
 * @param dry_run  compute only; *new_content receives what would be
 *                 written (caller frees), nothing is touched.
 * @param new_content  may be NULL.
 * @param wfn      NULL for write(2).
 * @return 0 with *action set; NCD_EPARSE (unbalanced markers), NCD_EPERM,
 *         NCD_ENOSPC, NCD_EIO, NCD_ENOMEM; the detail names the file.
 */
int ncd_rc_update(struct ncd_ctx *ctx, const char *path, const char *body,
                  int dry_run, enum ncd_rc_action *action,
                  char **new_content, ncd_write_fn wfn);

#ifdef __cplusplus
}
#endif
#endif
