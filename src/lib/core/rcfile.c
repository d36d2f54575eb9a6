/* SPDX-License-Identifier: MIT */
/* The managed block of a shell rc file, in memory: where it is (a line
 * scanner that knows enough shell to skip here-documents and quoted text),
 * and the spliced content.  The file side (locking, temporary files,
 * rename) is rcfile_io.c. */
#define _GNU_SOURCE
#include "ncd/rcfile.h"
#include "ncd/error.h"
#include "ncd/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char rc_note[] =
    "# Managed by 'nccl-doctor env --write': re-running replaces this "
    "block; 'nccl-doctor env --remove FILE' deletes it.\n";

/* ---- A line scanner for POSIX sh / bash rc files -------------------------
 *
 * It answers one question per line: does this line begin at the top level
 * of the script, where a marker comment is really a comment of its own?  Not
 * when it is part of a here-document body, of a quoted string or `...`
 * spanning lines, of an arithmetic ((...)) spanning lines, or the
 * continuation of a line ending in a backslash.  What it follows (bash(1)
 * "Here Documents", "QUOTING", "Comments"): << and <<- with a plain or
 * quoted delimiter word, several here-documents on one line (bodies in
 * order, starting after the next unquoted newline), <<< (a here-string, no
 * body), backslash-newline joining inside an unquoted here-document body,
 * ' " $' ` quoting, # comments at the start of a word, and (( )) (where <<
 * is a shift).  Not followed: $( ... ) spanning lines is read as if it were
 * top level.  State it cannot follow (a delimiter quote left open, too many
 * here-documents) makes it stop recognising markers, and it reports that, so
 * nothing is appended where it could not be found again. */

#define LEX_MAX_HEREDOC 16  /* pending on one line */
#define LEX_DELIM_BYTES 2048 /* all their delimiters together */

enum lex_quote { Q_NONE, Q_SINGLE, Q_DOUBLE, Q_ANSI, Q_BACKTICK };

struct lex_heredoc {
    size_t off, len; /* delimiter in lex.delims */
    int strip_tabs;  /* <<- */
    int quoted;      /* any quoting in the word: no expansion, no joins */
    int line;        /* where the << is */
};

struct lex {
    enum lex_quote quote;
    int quote_line;
    int arith; /* (( )) depth: parentheses still open */
    int arith_line;
    int cont; /* the previous line ended in an unquoted backslash */
    int cont_line;
    int cont_word_start; /* ... after a blank or operator */
    struct lex_heredoc hd[LEX_MAX_HEREDOC];
    int nhd, head; /* queued here-documents; hd[head] is read when body */
    int body;      /* reading here-document bodies */
    long match;    /* delimiter bytes matched by this logical body line */
    int confused, confused_line;
    char delims[LEX_DELIM_BYTES];
    size_t ndelims;
};

static int is_blank(char c)
{
    return c == ' ' || c == '\t';
}

static int is_meta(char c)
{
    return is_blank(c) || c == ';' || c == '&' || c == '|' || c == '<' ||
           c == '>' || c == '(' || c == ')';
}

/* A line starts a new top-level command: markers count here. */
static int lex_top(const struct lex *lx)
{
    return !lx->confused && !lx->body && lx->quote == Q_NONE &&
           lx->arith == 0 && !lx->cont;
}

static void lex_confuse(struct lex *lx, int line)
{
    if (!lx->confused) {
        lx->confused = 1;
        lx->confused_line = line;
    }
}

static void delim_put(struct lex *lx, char c)
{
    if (lx->ndelims < sizeof lx->delims)
        lx->delims[lx->ndelims] = c;
    lx->ndelims++; /* overflow noticed by the caller */
}

/* Parses the word after << or <<- at s[i] (i just after "<<"); returns
 * the index after it and queues the here-document. */
static size_t lex_heredoc_word(struct lex *lx, const char *s, size_t n,
                               size_t i, int line)
{
    struct lex_heredoc h = {.line = line};
    if (i < n && s[i] == '-') {
        h.strip_tabs = 1;
        i++;
    }
    while (i < n && is_blank(s[i]))
        i++;
    h.off = lx->ndelims;
    while (i < n && !is_meta(s[i])) {
        char c = s[i];
        if (c == '$' && i + 1 < n && (s[i + 1] == '\'' || s[i + 1] == '"')) {
            i++; /* $'...' and $"..." delimiters: the quoted text */
            continue;
        }
        if (c == '\'' || c == '"') {
            h.quoted = 1;
            size_t j = i + 1;
            while (j < n && s[j] != c) {
                if (c == '"' && s[j] == '\\' && j + 1 < n &&
                    strchr("$`\"\\", s[j + 1]))
                    j++;
                delim_put(lx, s[j++]);
            }
            if (j >= n) { /* the word goes on past the line: give up */
                lex_confuse(lx, line);
                return n;
            }
            i = j + 1;
        } else if (c == '\\') {
            h.quoted = 1;
            if (i + 1 < n)
                delim_put(lx, s[i + 1]);
            i += 2;
        } else {
            delim_put(lx, c);
            i++;
        }
    }
    h.len = lx->ndelims - h.off;
    if (lx->ndelims > sizeof lx->delims || lx->nhd == LEX_MAX_HEREDOC) {
        lex_confuse(lx, line);
        return n;
    }
    if (h.len == 0 && !h.quoted)
        return i; /* "<<" with no word: a syntax error for the shell */
    lx->hd[lx->nhd++] = h;
    return i;
}

/* One line of a here-document body (s, n: without the '\n'). */
static void lex_body_line(struct lex *lx, const char *s, size_t n, int has_nl)
{
    struct lex_heredoc *h = &lx->hd[lx->head];
    if (h->strip_tabs)
        while (n && *s == '\t')
            s++, n--;
    /* An unquoted body joins a line ending in an unescaped backslash with
     * the next one before looking for the delimiter. */
    int join = 0;
    if (!h->quoted && has_nl) {
        size_t k = 0;
        while (k < n && s[n - 1 - k] == '\\')
            k++;
        join = k % 2;
    }
    size_t m = n - (size_t)join;
    if (lx->match >= 0) {
        if ((size_t)lx->match + m <= h->len &&
            memcmp(lx->delims + h->off + lx->match, s, m) == 0)
            lx->match += (long)m;
        else
            lx->match = -1;
    }
    if (join)
        return;
    if (lx->match == (long)h->len && ++lx->head == lx->nhd) {
        lx->body = 0;
        lx->nhd = lx->head = 0;
        lx->ndelims = 0;
    }
    lx->match = 0;
}

/* Advances the scanner over one line (s, n: without the '\n'; has_nl: a
 * '\n' follows). */
static void lex_line(struct lex *lx, const char *s, size_t n, int has_nl,
                     int line)
{
    if (lx->confused)
        return;
    if (lx->body) {
        lex_body_line(lx, s, n, has_nl);
        return;
    }
    int word_start = lx->cont ? lx->cont_word_start : 1;
    lx->cont = 0;
    for (size_t i = 0; i < n;) {
        char c = s[i];
        switch (lx->quote) {
        case Q_SINGLE:
            if (c == '\'')
                lx->quote = Q_NONE;
            i++;
            word_start = 0;
            continue;
        case Q_ANSI:
        case Q_DOUBLE:
        case Q_BACKTICK: {
            char close = lx->quote == Q_ANSI     ? '\''
                         : lx->quote == Q_DOUBLE ? '"'
                                                 : '`';
            if (c == '\\')
                i++;
            else if (c == close)
                lx->quote = Q_NONE;
            i++;
            word_start = 0;
            continue;
        }
        case Q_NONE:
            break;
        }
        if (c == '#' && word_start && lx->arith == 0)
            break; /* a comment: the rest of the line */
        if (c == '\\') {
            if (i + 1 == n && has_nl) {
                lx->cont = 1;
                lx->cont_line = line;
                lx->cont_word_start = word_start;
            }
            i += 2;
            word_start = 0;
            continue;
        }
        if (c == '\'' || c == '"' || c == '`') {
            lx->quote = c == '\'' ? Q_SINGLE : c == '"' ? Q_DOUBLE : Q_BACKTICK;
            lx->quote_line = line;
        } else if (c == '$' && i + 1 < n && s[i + 1] == '\'') {
            lx->quote = Q_ANSI;
            lx->quote_line = line;
            i++;
        } else if (c == '(' && lx->arith == 0 && i + 1 < n &&
                   s[i + 1] == '(') {
            lx->arith = 2;
            lx->arith_line = line;
            i += 2;
            word_start = 1;
            continue;
        } else if (lx->arith > 0 && (c == '(' || c == ')')) {
            lx->arith += c == '(' ? 1 : -1;
        } else if (c == '<' && lx->arith == 0 && i + 1 < n &&
                   s[i + 1] == '<') {
            if (i + 2 < n && s[i + 2] == '<') {
                i += 3; /* <<< here-string */
            } else {
                i = lex_heredoc_word(lx, s, n, i + 2, line);
                if (lx->confused)
                    return;
            }
            word_start = 1;
            continue;
        }
        word_start = is_meta(c);
        i++;
    }
    /* An unquoted newline ends the command: here-document bodies follow. */
    if (has_nl && lx->nhd && lx->quote == Q_NONE && lx->arith == 0 &&
        !lx->cont) {
        lx->body = 1;
        lx->head = 0;
        lx->match = 0;
    }
}

/* What the scanner is inside of, for messages ("" at top level). */
static void lex_describe(const struct lex *lx, char *buf, size_t size)
{
    buf[0] = '\0';
    if (lx->confused) {
        snprintf(buf, size,
                 "here-documents it cannot follow (from line %d)",
                 lx->confused_line);
    } else if (lx->nhd) {
        const struct lex_heredoc *h = &lx->hd[lx->body ? lx->head : 0];
        snprintf(buf, size,
                 "a here-document that is never closed (<<%.*s on line %d)",
                 (int)(h->len > 40 ? 40 : h->len), lx->delims + h->off,
                 h->line);
    } else if (lx->quote != Q_NONE) {
        static const char *const q[] = {"", "'", "\"", "$'", "`"};
        snprintf(buf, size, "a %s quote opened on line %d and never closed",
                 q[lx->quote], lx->quote_line);
    } else if (lx->arith) {
        snprintf(buf, size, "an arithmetic (( on line %d never closed",
                 lx->arith_line);
    } else if (lx->cont) {
        snprintf(buf, size, "a line continued by a backslash (line %d)",
                 lx->cont_line);
    }
}

/* ---- Finding the block --------------------------------------------------- */

/* Line [s, e) equals `marker` (ignoring a trailing '\r'). */
static int line_is(const char *s, const char *e, const char *marker)
{
    size_t n = (size_t)(e - s);
    if (n && s[n - 1] == '\r')
        n--;
    return n == strlen(marker) && memcmp(s, marker, n) == 0;
}

/* Finds the block; with `end_state`, also describes what the scanner is
 * inside of at the end of the buffer. */
static int rc_locate(struct ncd_ctx *ctx, const char *buf, size_t len,
                     struct ncd_rc_block *blk, char *end_state,
                     size_t end_size)
{
    struct lex *lx = calloc(1, sizeof *lx);
    if (!lx)
        return NCD_ENOMEM;
    int found = 0, line = 0, rc = 0;
    const char *bstart = NULL;
    memset(blk, 0, sizeof *blk);
    for (const char *p = buf; p < buf + len;) {
        const char *nl = memchr(p, '\n', (size_t)(buf + len - p));
        const char *e = nl ? nl : buf + len;
        line++;
        if (lex_top(lx) && line_is(p, e, NCD_RC_BEGIN)) {
            if (bstart || found) {
                rc = ncd_fail(ctx, NCD_EPARSE,
                              "line %d: a second '%s' (first at line %d); "
                              "fix the file by hand",
                              line, NCD_RC_BEGIN, blk->begin_line);
                break;
            }
            bstart = p;
            blk->begin = (size_t)(p - buf);
            blk->begin_line = line;
        } else if (lex_top(lx) && line_is(p, e, NCD_RC_END)) {
            if (!bstart) {
                rc = ncd_fail(ctx, NCD_EPARSE,
                              "line %d: '%s' without a matching '%s' "
                              "before it; fix the file by hand",
                              line, NCD_RC_END, NCD_RC_BEGIN);
                break;
            }
            blk->end = (size_t)((nl ? nl + 1 : e) - buf);
            blk->end_line = line;
            bstart = NULL;
            found = 1;
        }
        lex_line(lx, p, (size_t)(e - p), nl != NULL, line);
        p = nl ? nl + 1 : e;
    }
    if (rc == 0 && bstart) {
        char why[160];
        lex_describe(lx, why, sizeof why);
        if (why[0])
            rc = ncd_fail(ctx, NCD_EPARSE,
                          "line %d: '%s' is never closed by '%s' (the file "
                          "ends inside %s); fix the file by hand",
                          blk->begin_line, NCD_RC_BEGIN, NCD_RC_END, why);
        else
            rc = ncd_fail(ctx, NCD_EPARSE,
                          "line %d: '%s' is never closed by '%s'; fix the "
                          "file by hand",
                          blk->begin_line, NCD_RC_BEGIN, NCD_RC_END);
    }
    if (end_state)
        lex_describe(lx, end_state, end_size);
    free(lx);
    return rc < 0 ? rc : found;
}

int ncd_rc_find(struct ncd_ctx *ctx, const char *buf, size_t len,
                struct ncd_rc_block *blk)
{
    struct ncd_rc_block tmp;
    return rc_locate(ctx, buf, len, blk ? blk : &tmp, NULL, 0);
}

/* The body must be whole lines, hold no marker line, and leave the scanner
 * at the top level, so that the end marker after it is found again. */
static int body_check(struct ncd_ctx *ctx, const char *body, size_t n)
{
    if (n && body[n - 1] != '\n')
        return ncd_fail(ctx, NCD_EINVAL,
                        "the block's text must end with a newline");
    if (memchr(body, '\0', n))
        return ncd_fail(ctx, NCD_EINVAL, "the block's text holds a NUL");
    struct lex *lx = calloc(1, sizeof *lx);
    if (!lx)
        return NCD_ENOMEM;
    int line = 0, rc = 0;
    for (const char *p = body; p < body + n;) {
        const char *nl = memchr(p, '\n', (size_t)(body + n - p));
        line++;
        if (line_is(p, nl, NCD_RC_BEGIN) || line_is(p, nl, NCD_RC_END)) {
            rc = ncd_fail(ctx, NCD_EINVAL,
                          "line %d of the block's text is a block marker",
                          line);
            break;
        }
        lex_line(lx, p, (size_t)(nl - p), 1, line);
        p = nl + 1;
    }
    if (rc == 0 && !lex_top(lx)) {
        char why[160];
        lex_describe(lx, why, sizeof why);
        rc = ncd_fail(ctx, NCD_EINVAL, "the block's text ends inside %s",
                      why);
    }
    free(lx);
    return rc;
}

static void put_block(struct ncd_strbuf *sb, const char *body)
{
    ncd_sb_printf(sb, "%s\n%s%s%s\n", NCD_RC_BEGIN, rc_note, body,
                  NCD_RC_END);
}

int ncd_rc_splice(struct ncd_ctx *ctx, const char *old, size_t oldlen,
                  const char *body, char **out, size_t *outlen)
{
    *out = NULL;
    *outlen = 0;
    struct ncd_rc_block blk;
    int found = rc_locate(ctx, old, oldlen, &blk, NULL, 0);
    if (found < 0)
        return found;
    if (body) {
        int rc = body_check(ctx, body, strlen(body));
        if (rc < 0)
            return rc;
    }
    struct ncd_strbuf sb = {0};
    size_t at = 0; /* where the new block starts in the output */
    if (found) {
        size_t keep = blk.begin;
        /* Removing the block at the very end also takes the one line break
         * that appending it added (see the header). */
        if (!body && blk.end == oldlen && keep > 0 && old[keep - 1] == '\n')
            keep--;
        ncd_sb_add(&sb, old, keep);
        at = sb.len;
        if (body) {
            put_block(&sb, body);
            /* No line break followed the end marker: none is added. */
            if (old[blk.end - 1] != '\n' && !sb.oom)
                sb.buf[--sb.len] = '\0';
        }
        ncd_sb_add(&sb, old + blk.end, oldlen - blk.end);
    } else {
        ncd_sb_add(&sb, old, oldlen);
        if (body) {
            /* One '\n': it ends an unterminated last line, or else leaves
             * a blank line before the block.  Removing takes it back. */
            if (oldlen)
                ncd_sb_putc(&sb, '\n');
            at = sb.len;
            put_block(&sb, body);
        }
    }
    if (sb.oom) {
        ncd_sb_release(&sb);
        return NCD_ENOMEM;
    }
    /* The result must hold the block exactly where it was put (or none). */
    struct ncd_rc_block again;
    char why[160] = "";
    int refound = rc_locate(NULL, sb.buf ? sb.buf : "", sb.len, &again,
                            NULL, 0);
    int ok = body ? refound == 1 && again.begin == at
                  : refound == 0;
    if (!ok) {
        if (refound != NCD_ENOMEM && body && !found)
            rc_locate(NULL, sb.buf, at, &again, why, sizeof why);
        ncd_sb_release(&sb);
        if (refound == NCD_ENOMEM)
            return NCD_ENOMEM;
        if (why[0])
            return ncd_fail(ctx, NCD_EPARSE,
                            "the file ends inside %s: a block appended "
                            "there would not be shell code of its own; fix "
                            "the file by hand",
                            why);
        return ncd_fail(ctx, NCD_EPARSE,
                        "the edited file would not hold the block where it "
                        "was put; nothing was changed");
    }
    *outlen = sb.len;
    *out = ncd_sb_detach(&sb);
    return *out ? 0 : NCD_ENOMEM;
}
