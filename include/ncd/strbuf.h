/* SPDX-License-Identifier: MIT */
/**
 * @file strbuf.h
 * @brief Growable NUL-terminated byte buffer used by renderers and parsers.
 *
 * A zero-initialised struct ncd_strbuf is a valid empty buffer.  After an
 * allocation failure the buffer keeps its old content and `oom` is set; all
 * later appends are no-ops, so callers check once at the end.
 */
#ifndef NCD_STRBUF_H
#define NCD_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ncd_strbuf {
    char *buf;  /**< NUL-terminated content, NULL while empty; owned */
    size_t len; /**< bytes used, not counting the NUL */
    size_t cap; /**< bytes allocated */
    int oom;    /**< set when an allocation failed */
};

/** Appends `n` bytes. */
void ncd_sb_add(struct ncd_strbuf *sb, const void *data, size_t n);
/** Appends a NUL-terminated string (NULL appends nothing). */
void ncd_sb_puts(struct ncd_strbuf *sb, const char *s);
/** Appends one character. */
void ncd_sb_putc(struct ncd_strbuf *sb, char c);
/** Appends printf-formatted text. */
void ncd_sb_printf(struct ncd_strbuf *sb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/** Appends vprintf-formatted text. */
void ncd_sb_vprintf(struct ncd_strbuf *sb, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
/** Content as a string; "" while empty.  Owned by sb. */
const char *ncd_sb_str(const struct ncd_strbuf *sb);
/** Empties the buffer but keeps its memory. */
void ncd_sb_reset(struct ncd_strbuf *sb);
/**
 * Takes the content out: caller frees with free().  Returns a malloc'ed ""
 * when empty (NULL only on allocation failure).  The buffer is left empty.
 */
char *ncd_sb_detach(struct ncd_strbuf *sb);
/** Frees the memory; the buffer is empty and reusable afterwards. */
void ncd_sb_release(struct ncd_strbuf *sb);

/**
 * Replaces, in place, every byte that is not part of a valid UTF-8
 * sequence (overlong forms and surrogates included), and every control
 * character but tab and newline, with '?'.  Files read from a capture can
 * hold anything; JSON needs valid UTF-8 and a terminal must not receive
 * escape sequences from data.
 */
void ncd_utf8_sanitize(char *s);

/**
 * Steps through the lines of a buffer: sets [*s, *s + *l) to the next line
 * (without its '\n') and advances *pos (start at 0).  Pure.
 * @return 1, or 0 at the end of the buffer.
 */
int ncd_next_line(const char *buf, size_t len, size_t *pos, const char **s,
                  size_t *l);

/** Entries of a comma-separated list ("0,1,3" -> 3; "" -> 0).  Pure. */
int ncd_list_count(const char *s);

/**
 * printf into a new string.  Caller frees with free(); NULL on allocation
 * failure.
 */
char *ncd_strdup_printf(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

#ifdef __cplusplus
}
#endif
#endif
