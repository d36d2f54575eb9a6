/* SPDX-License-Identifier: MIT */
/**
 * @file rcfile.h
 * @brief A managed block in a shell rc file (~/.bashrc, /etc/profile.d/...).
 *
 * The block is
 *     # >>> nccl-doctor >>>
 *     # Managed by 'nccl-doctor env --write' ... (one comment line)
 *     <body lines>
 *     # <<< nccl-doctor <<<
 * Conventions: conda init's marked block, shared/reference/ecosystem.md §5.
 *
 * Finding it.  A marker counts only as a whole line (a trailing '\r'
 * allowed) that starts a top-level command: not inside a here-document
 * (`cat <<EOF ... EOF`, <<-, quoted delimiters, several per line), a quoted
 * string or `...` spanning lines, an arithmetic ((...)) spanning lines, or
 * after a line ending in a backslash; not indented.  A command substitution
 * $( ... ) spanning lines is not followed (read as top level).
 *
 * Editing it loses nothing.  Re-writing replaces the block in place and
 * leaves every other byte alone.  Appending adds exactly one '\n' before
 * the block (it ends an unterminated last line, or else leaves one blank
 * line), and removing a block that ends the file takes that '\n' back, so
 * write-then-remove gives back the original bytes exactly: no final newline
 * stays without one, CRLF lines and trailing blank lines stay as they were.
 * The block itself always has '\n' line ends.
 */
#ifndef NCD_RCFILE_H
#define NCD_RCFILE_H

#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

#include "ncd/ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NCD_RC_BEGIN "# >>> nccl-doctor >>>"
#define NCD_RC_END "# <<< nccl-doctor <<<"

/** Where the block is in a buffer. */
struct ncd_rc_block {
    size_t begin;   /**< offset of the begin marker line */
    size_t end;     /**< offset just past the end marker line (and its '\n'
                         when it has one) */
    int begin_line; /**< 1-based line numbers of the markers */
    int end_line;
};

/**
 * Finds the block in `buf` (see the file comment for what counts).
 * @param blk  receives its place when found; may be NULL.
 * @return 1 found, 0 none; NCD_EPARSE when the markers are unbalanced,
 *         duplicated or out of order (the detail names the line);
 *         NCD_ENOMEM.
 */
int ncd_rc_find(struct ncd_ctx *ctx, const char *buf, size_t len,
                struct ncd_rc_block *blk);

/**
 * Computes the new content of a file: `old` with the block replaced by
 * `body`, appended when it has none, or removed when body is NULL (a file
 * without a block comes back unchanged).  Pure: no I/O.
 * @param body   the block's lines, each ending in '\n' ("" allowed); it may
 *               not hold a marker line, nor leave a quote, here-document or
 *               continuation open (the end marker would not be found).
 *               NULL removes.
 * @param out    receives a malloc'ed NUL-terminated copy (*outlen bytes,
 *               which may include NULs from `old`); caller frees.  NULL on
 *               error.
 * @return 0; NCD_EPARSE when the markers are unbalanced, duplicated or out of
 *         order, or when the file ends inside a here-document, quote or
 *         continuation so that an appended block would not be found again
 *         (detail says which, with its line); NCD_EINVAL for a bad body;
 *         NCD_ENOMEM.
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

/**
 * The temporary file an update has in flight, for a signal handler to
 * remove.  The caller owns it (typically a static object its handler can
 * reach); ncd_rc_update() fills `path` and sets `armed` while a temporary
 * file may exist, and clears `armed` once it is renamed or removed.  The
 * library installs no signal handler: the caller decides which signals to
 * catch and what to do after cleaning up (re-raise, exit...).
 */
struct ncd_rc_guard {
    volatile sig_atomic_t armed;
    char path[PATH_MAX + 64];
};

/**
 * Removes the temporary file recorded in `g`, if any.  Async-signal-safe
 * (only unlink(2)); for a SIGINT/SIGTERM/SIGHUP handler.  If the update was
 * past its rename, the recorded name no longer exists and nothing happens:
 * the edited file itself is never removed.  Preserves errno.
 */
void ncd_rc_guard_cleanup(struct ncd_rc_guard *g);

/** Test hook: replaces write(2) for the temporary files. */
typedef ssize_t (*ncd_write_fn)(int fd, const void *buf, size_t n);

/** Options of ncd_rc_update(); a zeroed struct (or NULL) gives defaults. */
struct ncd_rc_opts {
    /** Compute only: nothing is locked, written or swept. */
    int dry_run;
    /** How long to wait for another process's lock on the file; 0 means
     *  30000 ms. */
    unsigned lock_timeout_ms;
    /** Where to record the temporary file in flight; NULL for none. */
    struct ncd_rc_guard *guard;
    /** Test hook: replaces write(2); NULL for write(2). */
    ncd_write_fn write_fn;
    /** Test hook: called with the complete, fsync'ed temporary file just
     *  before the last check and the rename; a non-zero return abandons
     *  the update (NCD_EIO, temporary file removed).  NULL for none. */
    int (*before_commit)(void *arg, const char *tmp_path);
    void *hook_arg;
};

/**
 * Updates (body != NULL) or removes (body == NULL) the block in `path`.
 * Not through the sysroot: this writes the user's real file.
 *
 * - Symbolic links are followed to the end of the chain (up to 40 links,
 *   as Linux's MAXSYMLINKS) and the file at the end is edited, so every
 *   link stays a link; a dangling chain creates the file it ends at.  A
 *   loop or a longer chain is an error naming the path.
 * - The file is replaced atomically: a temporary file in its directory
 *   (.<name>.ncd-tmp.<pid>.XXXXXX) gets the original's mode (and owner,
 *   when run as root), is written and fsync'ed, then renamed over it; the
 *   directory is fsync'ed.  A new file is created with the umask's mode
 *   and without replacing one that appeared meanwhile (the update then
 *   starts over with that file, up to 4 times).  The previous content
 *   is kept in <file>.nccl-doctor.bak.  On any failure (full disk,
 *   permissions) the original is left untouched and the temporary file
 *   removed.
 * - Refused (NCD_EPERM), when a change is needed: a file with more than one
 *   hard link (a rename would give this name a new inode and leave the other
 *   names with the old content; editing in place could leave a torn file on
 *   a crash or a full disk), and a read-only file, judged by its mode bits
 *   even for root, who could otherwise replace it.  --dry-run output can be
 *   applied by hand.
 * - Concurrent edits: the file is locked with flock(2) (LOCK_EX) while it
 *   is read, written and renamed, waiting up to lock_timeout_ms for another
 *   holder (e.g. the same command on every node of a cluster sharing an NFS
 *   home: Linux's NFS client maps flock to whole-file byte-range locks, so
 *   it holds across hosts, and it is the lock `flock(1) FILE cmd` takes).
 *   flock rather than fcntl(F_SETLK): a POSIX record lock is dropped when
 *   the process closes any descriptor of the file, which a library cannot
 *   rule out; flock belongs to the open file description.  Editors do not
 *   lock, so just before the rename the file is compared with what was
 *   read (inode, size, mtime, ctime, mode, owner, link count, then the
 *   bytes); any difference refuses the update with nothing written and the
 *   other program's content kept.  A file where flock is not supported is
 *   edited with the comparison alone.
 * - Temporary files of this file left by a process that died (SIGKILL, a
 *   crash: its pid is gone, or the file is over a day old) are removed
 *   while the lock is held; when the file does not exist (nothing to lock)
 *   only those over a minute old.
 * @param body         the block's lines (see ncd_rc_splice()); NULL removes.
 * @param opts         NULL for defaults.
 * @param action       receives what was done (or would be, with dry_run).
 * @param new_content  may be NULL; receives the file's content after the
 *                     update (caller frees); NULL on error and when there
 *                     is no file and nothing to remove.
 * @return 0; NCD_EPARSE (markers), NCD_EINVAL (bad body, not a regular
 *         file, too large, symlink loop), NCD_EPERM (read-only, hard-linked,
 *         permissions), NCD_ETIMEOUT (locked by another process), NCD_EIO
 *         (changed by another program meanwhile, I/O error), NCD_EEXISTS
 *         (created by others at every try), NCD_ENOSPC, NCD_ENOMEM.
 *         The detail names the file and says that it was left unchanged.
 */
int ncd_rc_update(struct ncd_ctx *ctx, const char *path, const char *body,
                  const struct ncd_rc_opts *opts, enum ncd_rc_action *action,
                  char **new_content);

#ifdef __cplusplus
}
#endif
#endif
