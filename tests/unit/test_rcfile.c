/* SPDX-License-Identifier: MIT */
/* The managed rc-file block: splice cases (here-documents, quotes, exact
 * removal), and on disk: symlink chains, hard links, read-only files, a
 * lock held elsewhere, edits made meanwhile, the signal guard, stale
 * temporary files, a disk that fills up. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ncd/ctx.h"
#include "ncd/error.h"
#include "ncd/rcfile.h"

#define B NCD_RC_BEGIN "\n"
#define E NCD_RC_END "\n"
#define NOTE "# Managed by 'nccl-doctor env --write': re-running replaces this block; 'nccl-doctor env --remove FILE' deletes it.\n"
#define BLK(body) B NOTE body E

/* ---- splice: in memory ---------------------------------------------------- */

static const struct {
    const char *old;
    const char *body; /* NULL = remove */
    const char *want;
} cases[] = {
    {"", "export A=1\n", BLK("export A=1\n")},
    {"x\n", "export A=1\n", "x\n\n" BLK("export A=1\n")},
    /* no final newline: one '\n' ends the line, removal takes it back */
    {"x", "export A=1\n", "x\n" BLK("export A=1\n")},
    {"a\n" B "old\n" E "b\n", "export A=2\n", "a\n" BLK("export A=2\n") "b\n"},
    {"a\n" B "old\n" NCD_RC_END, "new\n", "a\n" B NOTE "new\n" NCD_RC_END},
    {"a\n" B "old\n" E "b\n", NULL, "a\nb\n"},
    /* a block ending the file: the '\n' appending adds is taken back */
    {"x\n\n" BLK("export A=1\n"), NULL, "x\n"},
    {"x\n" BLK("export A=1\n"), NULL, "x"},
    {BLK("a\n") "rest\n", NULL, "rest\n"},
    {BLK("a\n"), NULL, ""},
    {"a\r\n" B "old\r\n" NCD_RC_END "\r\nb\r\n", "n\n",
     "a\r\n" BLK("n\n") "b\r\n"},
    {"no block\n", NULL, "no block\n"},
    {"no block", NULL, "no block"},
    /* markers inside a here-document are text, not the block */
    {"cat >>x <<EOF\n" B "a\n" E "EOF\n", "n\n",
     "cat >>x <<EOF\n" B "a\n" E "EOF\n\n" BLK("n\n")},
    {"cat >>x <<EOF\n" B "a\n" E "EOF\n", NULL,
     "cat >>x <<EOF\n" B "a\n" E "EOF\n"},
    {"cat <<'EOF' >x\n" B "EOF\n" BLK("old\n"), "n\n",
     "cat <<'EOF' >x\n" B "EOF\n" BLK("n\n")},
    {"cat <<\"E F\"\n" E "E F\n" BLK("old\n") "z\n", NULL,
     "cat <<\"E F\"\n" E "E F\nz\n"},
    /* <<- strips tabs before the delimiter; \EOF is quoted */
    {"\tcat <<-EOF\n\t" B "\tEOF\n", "n\n",
     "\tcat <<-EOF\n\t" B "\tEOF\n\n" BLK("n\n")},
    {"cat <<-\\EOF\n" B "\t\tEOF\n" BLK("o\n"), NULL,
     "cat <<-\\EOF\n" B "\t\tEOF"},
    /* two here-documents on one line: bodies in order */
    {"cat <<A <<B\n" B "A\n" E "B\n", "n\n",
     "cat <<A <<B\n" B "A\n" E "B\n\n" BLK("n\n")},
    /* an unquoted body joins a line ending in a backslash */
    {"cat <<EOF\nx\\\nEOF\n" B "EOF\n", "n\n",
     "cat <<EOF\nx\\\nEOF\n" B "EOF\n\n" BLK("n\n")},
    /* <<< is a here-string, (( << )) a shift: no body follows */
    {"cat <<< EOF\n" BLK("o\n"), NULL, "cat <<< EOF"},
    {"echo $((1<<2)) ((x<<=1))\n" BLK("o\n"), NULL,
     "echo $((1<<2)) ((x<<=1))"},
    /* a '<<' or a quote in a comment is nothing */
    {"# cat <<EOF, don't\n" BLK("o\n"), NULL, "# cat <<EOF, don't"},
    /* markers inside quotes spanning lines, after a backslash-newline, or
     * indented are text */
    {"echo '\n" B "'\n", "n\n", "echo '\n" B "'\n\n" BLK("n\n")},
    {"x=\"a\n" E "\\\"" B "\"\n", "n\n",
     "x=\"a\n" E "\\\"" B "\"\n\n" BLK("n\n")},
    {"x=$'it\\'s\n" B "'\n", NULL, "x=$'it\\'s\n" B "'\n"},
    {"x=`echo\n" B "`\n", NULL, "x=`echo\n" B "`\n"},
    {"echo a \\\n" B, NULL, "echo a \\\n" B},
    {"  " NCD_RC_BEGIN "\n", NULL, "  " NCD_RC_BEGIN "\n"},
    {"echo " NCD_RC_BEGIN "\n", "n\n",
     "echo " NCD_RC_BEGIN "\n\n" BLK("n\n")},
    /* a here-document inside an existing block is its own business */
    {"a\n" B "cat <<X\n" E "X\n" E, "n\n", "a\n" BLK("n\n")},
};

static void test_splice(void **state)
{
    (void)state;
    struct ncd_ctx *ctx;
    assert_int_equal(ncd_ctx_new("/", NULL, &ctx), 0);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t oldlen = strlen(cases[i].old), wantlen = strlen(cases[i].want);
        char *out;
        size_t len;
        ncd_ctx_clear_error(ctx);
        int rc = ncd_rc_splice(ctx, cases[i].old, oldlen, cases[i].body, &out,
                               &len);
        if (rc != 0)
            fail_msg("case %zu: %s: %s", i, ncd_strerror(rc),
                     ncd_ctx_errdetail(ctx));
        if (len != wantlen || memcmp(out, cases[i].want, len) != 0)
            fail_msg("case %zu:\n--- got\n%s--- want\n%s", i, out,
                     cases[i].want);
        free(out);
    }
    ncd_ctx_free(ctx);
}

/* Refusals: unbalanced markers, a file ending where an appended block
 * would not be found again, a bad body.  `why` must be in the detail. */
static const struct {
    const char *old, *body, *why;
    int code;
} refused[] = {
    {"a\n" B "x\n", "x\n", "never closed", NCD_EPARSE},
    {"a\n" E, "x\n", "line 2", NCD_EPARSE},
    {B B E, "x\n", "a second", NCD_EPARSE},
    {B E E, "x\n", "line 3", NCD_EPARSE},
    {B E E, NULL, "line 3", NCD_EPARSE},
    {B "cat <<EOF\n" E "x\n", "x\n", "here-document", NCD_EPARSE},
    {"cat <<EOF\nx\n", "x\n", "here-document that is never closed (<<EOF on line 1)", NCD_EPARSE},
    {"cat <<EOF", "x\n", "here-document", NCD_EPARSE},
    {"echo 'abc\n", "x\n", "' quote opened on line 1", NCD_EPARSE},
    {"echo \"a\nb\n", "x\n", "\" quote opened on line 1", NCD_EPARSE},
    {"x \\", "x\n", "backslash", NCD_EPARSE},
    {"((a\n", "x\n", "(( on line 1", NCD_EPARSE},
    {"cat <<'EOF\n", "x\n", "cannot follow", NCD_EPARSE},
    {"", "cat <<EOF\n", "block's text ends inside", NCD_EINVAL},
    {"", "x", "newline", NCD_EINVAL},
    {"", "a\n" E, "marker", NCD_EINVAL},
    {"", "echo 'a\n", "quote", NCD_EINVAL},
};

static void test_refused(void **state)
{
    (void)state;
    struct ncd_ctx *ctx;
    assert_int_equal(ncd_ctx_new("/", NULL, &ctx), 0);
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        char *out = (char *)1;
        size_t len;
        ncd_ctx_clear_error(ctx);
        int rc = ncd_rc_splice(ctx, refused[i].old, strlen(refused[i].old),
                               refused[i].body, &out, &len);
        if (rc != refused[i].code || out != NULL)
            fail_msg("case %zu: got %d, want %d", i, rc, refused[i].code);
        if (!strstr(ncd_ctx_errdetail(ctx), refused[i].why))
            fail_msg("case %zu: detail '%s' lacks '%s'", i,
                     ncd_ctx_errdetail(ctx), refused[i].why);
    }
    ncd_ctx_free(ctx);
}

/* write-then-remove gives back every original byte; writing twice is
 * writing once. */
static void test_roundtrip(void **state)
{
    (void)state;
    static const char *const originals[] = {
        "", "x", "x\n", "x\n\n", "x\n\n\n", "\n", "\n\n", "a\r\nb\r\n",
        "a\r\nb", "a\r", "a\r\n\r\n", "# only a comment", "  \t",
        "cat <<EOF\n" B E "EOF\n", "cat <<EOF\n" B E "EOF",
        "echo '\n" B "'", "x=$((1<<3))",
    };
    struct ncd_ctx *ctx;
    assert_int_equal(ncd_ctx_new("/", NULL, &ctx), 0);
    for (size_t i = 0; i < sizeof originals / sizeof originals[0]; i++) {
        const char *o = originals[i];
        char *w1, *w2, *r;
        size_t l1, l2, lr;
        assert_int_equal(ncd_rc_splice(ctx, o, strlen(o), "export A=1\n",
                                       &w1, &l1),
                         0);
        assert_int_equal(ncd_rc_find(ctx, w1, l1, NULL), 1);
        assert_int_equal(ncd_rc_splice(ctx, w1, l1, "export A=1\n", &w2,
                                       &l2),
                         0);
        if (l1 != l2 || memcmp(w1, w2, l1) != 0)
            fail_msg("original %zu: the second write changed the file", i);
        assert_int_equal(ncd_rc_splice(ctx, w1, l1, NULL, &r, &lr), 0);
        if (lr != strlen(o) || memcmp(r, o, lr) != 0)
            fail_msg("original %zu: remove gave\n%s\ninstead of\n%s", i, r,
                     o);
        free(w1);
        free(w2);
        free(r);
    }
    /* NUL bytes are kept */
    char *w, *r;
    size_t lw, lr;
    assert_int_equal(ncd_rc_splice(ctx, "a\0b", 3, "x\n", &w, &lw), 0);
    assert_int_equal(lw, 4 + strlen(BLK("x\n")));
    assert_memory_equal(w, "a\0b\n" BLK("x\n"), lw);
    assert_int_equal(ncd_rc_splice(ctx, w, lw, NULL, &r, &lr), 0);
    assert_int_equal(lr, 3);
    assert_memory_equal(r, "a\0b", 3);
    free(w);
    free(r);
    ncd_ctx_free(ctx);
}

/* ---- on disk ------------------------------------------------------------ */

static char dir[64];

static int setup_dir(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/ncd-rc-%d-XXXXXX", (int)getpid());
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown_dir(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static char *in_dir(const char *name)
{
    static char bufs[8][512];
    static int next;
    char *p = bufs[next++ % 8];
    snprintf(p, 512, "%s/%s", dir, name);
    return p;
}

static void put(const char *path, const char *s)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(s, f);
    assert_int_equal(fclose(f), 0);
}

static char *slurp(const char *p)
{
    FILE *f = fopen(p, "rb");
    if (!f)
        return NULL;
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return strdup(buf);
}

static void assert_content(const char *path, const char *want)
{
    char *got = slurp(path);
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

/* Number of temporary files (.*.ncd-tmp.*) in the test directory. */
static int count_tmp(void)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        n += strstr(de->d_name, ".ncd-tmp.") != NULL;
    closedir(d);
    return n;
}

static struct ncd_ctx *new_ctx(void)
{
    struct ncd_ctx *ctx;
    assert_int_equal(ncd_ctx_new("/", NULL, &ctx), 0);
    return ctx;
}

static int update(struct ncd_ctx *ctx, const char *path, const char *body,
                  const struct ncd_rc_opts *o, enum ncd_rc_action *act)
{
    ncd_ctx_clear_error(ctx);
    return ncd_rc_update(ctx, path, body, o, act, NULL);
}

static size_t budget;
static ssize_t failing_write(int fd, const void *b, size_t n)
{
    if (budget == 0) {
        errno = ENOSPC;
        return -1;
    }
    if (n > budget)
        n = budget;
    budget -= n;
    return write(fd, b, n);
}

static void test_update_file(void **state)
{
    (void)state;
    char *path = in_dir("bashrc"), *lnk = in_dir(".bashrc");
    char bak[600];
    snprintf(bak, sizeof bak, "%s.nccl-doctor.bak", path);
    put(path, "# user stuff\nalias ll='ls -l'\n");
    chmod(path, 0600);
    assert_int_equal(symlink("bashrc", lnk), 0);
    struct ncd_ctx *ctx = new_ctx();
    enum ncd_rc_action act;
    assert_int_equal(update(ctx, lnk, "export A=1\n", NULL, &act), 0);
    assert_int_equal(act, NCD_RC_UPDATED);
    char *first = slurp(path);
    /* idempotent: same content, no write */
    assert_int_equal(update(ctx, lnk, "export A=1\n", NULL, &act), 0);
    assert_int_equal(act, NCD_RC_UNCHANGED);
    assert_content(path, first);
    /* symlink kept, mode kept, backup holds the previous content */
    struct stat st;
    assert_int_equal(lstat(lnk, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_content(bak, "# user stuff\nalias ll='ls -l'\n");
    /* A write failing half-way (disk full), in the backup or in the file
     * itself, leaves the file intact, the backup whole, no temporary file
     * behind. */
    static const size_t budgets[] = {20, 0, 100};
    for (size_t i = 0; i < 3; i++) {
        budget = budgets[i] == 100 ? strlen(first) + 10 : budgets[i];
        struct ncd_rc_opts o = {.write_fn = failing_write};
        int rc = update(ctx, lnk, "export A=2\nexport B=3\n", &o, &act);
        assert_int_equal(rc, NCD_ENOSPC);
        assert_int_equal(act, NCD_RC_UNCHANGED);
        assert_non_null(strstr(ncd_ctx_errdetail(ctx), "unchanged"));
        assert_content(path, first);
        char *b = slurp(bak);
        assert_true(strcmp(b, first) == 0 ||
                    strcmp(b, "# user stuff\nalias ll='ls -l'\n") == 0);
        free(b);
        assert_int_equal(count_tmp(), 0);
    }
    /* remove restores the user's bytes */
    assert_int_equal(update(ctx, lnk, NULL, NULL, &act), 0);
    assert_int_equal(act, NCD_RC_REMOVED);
    assert_content(path, "# user stuff\nalias ll='ls -l'\n");
    /* a new file is created with the umask's mode */
    mode_t um = umask(027);
    assert_int_equal(update(ctx, in_dir("profile.sh"), "export A=1\n", NULL,
                            &act),
                     0);
    umask(um);
    assert_int_equal(act, NCD_RC_CREATED);
    assert_int_equal(stat(in_dir("profile.sh"), &st), 0);
    assert_int_equal(st.st_mode & 0777, 0640);
    /* removing from a file that does not exist does nothing */
    assert_int_equal(update(ctx, in_dir("nothing"), NULL, NULL, &act), 0);
    assert_int_equal(act, NCD_RC_UNCHANGED);
    assert_int_equal(access(in_dir("nothing"), F_OK), -1);
    free(first);
    ncd_ctx_free(ctx);
}

/* Byte-exact write/remove through the file path, odd endings included. */
static void test_file_roundtrip(void **state)
{
    (void)state;
    static const char *const originals[] = {"tail", "a\r\nb\r\n", "x\n\n\n",
                                            ""};
    struct ncd_ctx *ctx = new_ctx();
    for (size_t i = 0; i < 4; i++) {
        char *p = in_dir("rt");
        put(p, originals[i]);
        enum ncd_rc_action act;
        assert_int_equal(update(ctx, p, "export A=1\n", NULL, &act), 0);
        assert_int_equal(act, NCD_RC_UPDATED);
        assert_int_equal(update(ctx, p, NULL, NULL, &act), 0);
        assert_int_equal(act, NCD_RC_REMOVED);
        assert_content(p, originals[i]);
    }
    ncd_ctx_free(ctx);
}

static void test_symlink_chain(void **state)
{
    (void)state;
    struct ncd_ctx *ctx = new_ctx();
    enum ncd_rc_action act;
    /* l1 -> sub/l2 -> /abs/l3 -> real: the file at the end is edited */
    assert_int_equal(mkdir(in_dir("sub"), 0755), 0);
    put(in_dir("real"), "keep\n");
    assert_int_equal(symlink(in_dir("real"), in_dir("l3")), 0);
    assert_int_equal(symlink(in_dir("l3"), in_dir("sub/l2")), 0);
    assert_int_equal(symlink("sub/l2", in_dir("l1")), 0);
    assert_int_equal(update(ctx, in_dir("l1"), "export A=1\n", NULL, &act),
                     0);
    assert_content(in_dir("real"), "keep\n\n" BLK("export A=1\n"));
    struct stat st;
    const char *links[] = {"l1", "sub/l2", "l3"};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(lstat(in_dir(links[i]), &st), 0);
        assert_true(S_ISLNK(st.st_mode));
    }
    /* dangling: d1 -> d2 -> missing: "missing" is created, links kept */
    assert_int_equal(symlink("missing", in_dir("d2")), 0);
    assert_int_equal(symlink("d2", in_dir("d1")), 0);
    assert_int_equal(update(ctx, in_dir("d1"), "export A=1\n", NULL, &act),
                     0);
    assert_int_equal(act, NCD_RC_CREATED);
    assert_int_equal(lstat(in_dir("d2"), &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_int_equal(lstat(in_dir("missing"), &st), 0);
    assert_true(S_ISREG(st.st_mode));
    /* a loop, a self-loop, 41 links: refused, nothing created */
    assert_int_equal(symlink("loopb", in_dir("loopa")), 0);
    assert_int_equal(symlink("loopa", in_dir("loopb")), 0);
    assert_int_equal(symlink("self", in_dir("self")), 0);
    assert_int_equal(update(ctx, in_dir("loopa"), "x\n", NULL, &act),
                     NCD_EINVAL);
    assert_non_null(strstr(ncd_ctx_errdetail(ctx), "loop"));
    assert_int_equal(update(ctx, in_dir("self"), NULL, NULL, &act),
                     NCD_EINVAL);
    assert_non_null(strstr(ncd_ctx_errdetail(ctx), "loop"));
    char name[32], to[32];
    for (int i = 0; i < 41; i++) {
        snprintf(name, sizeof name, "c%d", i);
        snprintf(to, sizeof to, "c%d", i + 1);
        assert_int_equal(symlink(to, in_dir(name)), 0);
    }
    put(in_dir("c41"), "end\n");
    assert_int_equal(update(ctx, in_dir("c0"), "x\n", NULL, &act),
                     NCD_EINVAL);
    assert_non_null(strstr(ncd_ctx_errdetail(ctx), "more than 40"));
    assert_content(in_dir("c41"), "end\n");
    /* 40 links are followed */
    assert_int_equal(update(ctx, in_dir("c1"), "x\n", NULL, &act), 0);
    assert_content(in_dir("c41"), "end\n\n" BLK("x\n"));
    ncd_ctx_free(ctx);
}

static void test_hard_link(void **state)
{
    (void)state;
    struct ncd_ctx *ctx = new_ctx();
    enum ncd_rc_action act;
    char *a = in_dir("hl-a"), *b = in_dir("hl-b");
    put(a, "mine\n");
    assert_int_equal(link(a, b), 0);
    struct stat s0, s1;
    assert_int_equal(stat(a, &s0), 0);
    assert_int_equal(update(ctx, a, "export A=1\n", NULL, &act), NCD_EPERM);
    assert_non_null(strstr(ncd_ctx_errdetail(ctx), "2 hard links"));
    assert_int_equal(act, NCD_RC_UNCHANGED);
    assert_int_equal(stat(a, &s1), 0);
    assert_int_equal(s0.st_ino, s1.st_ino);
    assert_int_equal(s1.st_nlink, 2);
    assert_content(a, "mine\n");
    assert_int_equal(count_tmp(), 0);
    /* --dry-run still shows the new content, to apply by hand */
    char *preview = NULL;
    struct ncd_rc_opts dry = {.dry_run = 1};
    assert_int_equal(ncd_rc_update(ctx, a, "export A=1\n", &dry, &act,
                                   &preview),
                     0);
    assert_int_equal(act, NCD_RC_UPDATED);
    assert_string_equal(preview, "mine\n\n" BLK("export A=1\n"));
    /* applied by hand (in place): nothing left to do, no refusal */
    FILE *f = fopen(a, "w");
    fputs(preview, f);
    fclose(f);
    free(preview);
    assert_int_equal(update(ctx, b, "export A=1\n", NULL, &act), 0);
    assert_int_equal(act, NCD_RC_UNCHANGED);
    ncd_ctx_free(ctx);
}

static void test_read_only(void **state)
{
    (void)state;
    struct ncd_ctx *ctx = new_ctx();
    enum ncd_rc_action act;
    char *p = in_dir("ro");
    put(p, "keep\n");
    chmod(p, 0444);
    /* refused for everyone, root included (root passes access(2)) */
    assert_int_equal(update(ctx, p, "export A=1\n", NULL, &act), NCD_EPERM);
    assert_non_null(strstr(ncd_ctx_errdetail(ctx), "not writable"));
    assert_content(p, "keep\n");
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0444);
    assert_int_equal(update(ctx, p, NULL, NULL, &act), 0); /* no block */
    assert_int_equal(act, NCD_RC_UNCHANGED);
    ncd_ctx_free(ctx);
}

/* ---- edits made meanwhile: a before_commit hook plays the other program */

enum meddle { M_APPEND, M_RENAME, M_CHMOD, M_REMOVE, M_LINK, M_SAMESIZE,
              M_CREATE };
struct meddler {
    enum meddle how;
    const char *path;
    int calls;
};

static int meddle(void *arg, const char *tmp)
{
    struct meddler *m = arg;
    assert_int_equal(access(tmp, F_OK), 0);
    if (m->calls++)
        return 0; /* once */
    char other[600];
    snprintf(other, sizeof other, "%s.other", m->path);
    switch (m->how) {
    case M_APPEND: {
        FILE *f = fopen(m->path, "a");
        fputs("echo theirs\n", f);
        fclose(f);
        break;
    }
    case M_RENAME: /* how editors save: a new file renamed over */
        put(other, "theirs\n");
        rename(other, m->path);
        break;
    case M_CHMOD:
        chmod(m->path, 0640);
        break;
    case M_REMOVE:
        unlink(m->path);
        break;
    case M_LINK:
        link(m->path, other);
        break;
    case M_SAMESIZE: { /* same size, mtime put back */
        struct stat st;
        stat(m->path, &st);
        int fd = open(m->path, O_WRONLY);
        assert_int_equal(pwrite(fd, "K", 1, 0), 1);
        close(fd);
        struct timespec ts[2] = {st.st_atim, st.st_mtim};
        utimensat(AT_FDCWD, m->path, ts, 0);
        break;
    }
    case M_CREATE:
        put(m->path, "theirs\n");
        break;
    }
    return 0;
}

static void test_changed_meanwhile(void **state)
{
    (void)state;
    static const struct {
        enum meddle how;
        const char *why;
        const char *after; /* the other program's content, kept */
        int code;
    } t[] = {
        {M_APPEND, "written to", "keep\necho theirs\n", NCD_EIO},
        {M_RENAME, "replaced by a new file", "theirs\n", NCD_EIO},
        {M_CHMOD, "mode, owner or link", "keep\n", NCD_EIO},
        {M_REMOVE, "removed", NULL, NCD_EIO},
        {M_LINK, "mode, owner or link", "keep\n", NCD_EIO},
        {M_SAMESIZE, "by another program", "Keep\n", NCD_EIO},
        /* no conflict: the update starts over with the new file */
        {M_CREATE, NULL, "theirs\n\n" BLK("export A=1\n"), 0},
    };
    struct ncd_ctx *ctx = new_ctx();
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "cm%zu", i);
        char *p = in_dir(name);
        if (t[i].how != M_CREATE)
            put(p, "keep\n");
        struct meddler m = {t[i].how, p, 0};
        struct ncd_rc_opts o = {.before_commit = meddle, .hook_arg = &m};
        enum ncd_rc_action act;
        int rc = update(ctx, p, "export A=1\n", &o, &act);
        if (rc != t[i].code ||
            (t[i].why && !strstr(ncd_ctx_errdetail(ctx), t[i].why)))
            fail_msg("case %zu: %d '%s'", i, rc, ncd_ctx_errdetail(ctx));
        if (t[i].why) {
            assert_non_null(strstr(ncd_ctx_errdetail(ctx), "re-run"));
            assert_int_equal(act, NCD_RC_UNCHANGED);
        } else {
            assert_int_equal(act, NCD_RC_UPDATED);
        }
        if (t[i].after)
            assert_content(p, t[i].after);
        else
            assert_int_equal(access(p, F_OK), -1);
        assert_int_equal(count_tmp(), 0);
    }
    ncd_ctx_free(ctx);
}

static void test_lock(void **state)
{
    (void)state;
    struct ncd_ctx *ctx = new_ctx();
    enum ncd_rc_action act;
    char *p = in_dir("locked");
    put(p, "keep\n");
    /* held through another open file description: flock conflicts even in
     * the same process */
    int fd = open(p, O_RDONLY);
    assert_int_equal(flock(fd, LOCK_EX), 0);
    struct ncd_rc_opts o = {.lock_timeout_ms = 200};
    assert_int_equal(update(ctx, p, "export A=1\n", &o, &act), NCD_ETIMEOUT);
    assert_non_null(strstr(ncd_ctx_errdetail(ctx), "locked by another"));
    assert_content(p, "keep\n");
    close(fd);
    /* a holder that lets go in time: the update waits, then goes on */
    fd = open(p, O_RDONLY);
    assert_int_equal(flock(fd, LOCK_EX), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct timespec nap = {0, 300 * 1000 * 1000};
        nanosleep(&nap, NULL);
        _exit(0); /* the lock goes with the last descriptor */
    }
    close(fd);
    o.lock_timeout_ms = 10000;
    assert_int_equal(update(ctx, p, "export A=1\n", &o, &act), 0);
    assert_int_equal(act, NCD_RC_UPDATED);
    int ws;
    waitpid(pid, &ws, 0);
    ncd_ctx_free(ctx);
}

/* ---- the signal guard: what a handler would do, done from the hook */

struct guarded {
    struct ncd_rc_guard *g;
    int saw;
};

static int clean_like_a_handler(void *arg, const char *tmp)
{
    struct guarded *gd = arg;
    gd->saw = gd->g->armed && strcmp(gd->g->path, tmp) == 0;
    ncd_rc_guard_cleanup(gd->g);
    gd->saw += access(tmp, F_OK) != 0;
    return 1; /* the signal would end the process here */
}

static void test_guard(void **state)
{
    (void)state;
    struct ncd_ctx *ctx = new_ctx();
    enum ncd_rc_action act;
    char *p = in_dir("guarded");
    put(p, "keep\n");
    static struct ncd_rc_guard g;
    struct guarded gd = {&g, 0};
    struct ncd_rc_opts o = {.guard = &g,
                            .before_commit = clean_like_a_handler,
                            .hook_arg = &gd};
    assert_int_equal(update(ctx, p, "export A=1\n", &o, &act), NCD_EIO);
    assert_int_equal(gd.saw, 2);
    assert_int_equal(g.armed, 0);
    assert_content(p, "keep\n");
    assert_int_equal(count_tmp(), 0);
    /* after a successful update nothing is armed: a late signal removes
     * nothing */
    o.before_commit = NULL;
    assert_int_equal(update(ctx, p, "export A=1\n", &o, &act), 0);
    assert_int_equal(g.armed, 0);
    ncd_rc_guard_cleanup(&g);
    assert_int_equal(access(p, F_OK), 0);
    ncd_ctx_free(ctx);
}

/* ---- stale temporary files of a process that died */

static void touch_tmp(const char *name, time_t age)
{
    char *p = in_dir(name);
    put(p, "partial");
    struct timespec ts[2] = {{time(NULL) - age, 0}, {time(NULL) - age, 0}};
    assert_int_equal(utimensat(AT_FDCWD, p, ts, 0), 0);
}

static void test_sweep(void **state)
{
    (void)state;
    pid_t dead = fork();
    assert_true(dead >= 0);
    if (dead == 0)
        _exit(0);
    int ws;
    waitpid(dead, &ws, 0);
    long alive = (long)getppid();
    char n[8][96];
    snprintf(n[0], 96, ".sw.ncd-tmp.%ld.abcdef", (long)dead);   /* swept */
    snprintf(n[1], 96, ".sw.ncd-tmp.%ld.abcdef", alive);        /* kept */
    snprintf(n[2], 96, ".sw.ncd-tmp.%ld.ghijkl", alive);        /* old */
    snprintf(n[3], 96, ".other.ncd-tmp.%ld.abcdef", (long)dead); /* kept */
    snprintf(n[4], 96, ".sw.ncd-tmp.0.abcdef");                 /* kept */
    snprintf(n[5], 96, ".sw.ncd-tmp.%ld.abc", (long)dead);      /* kept */
    snprintf(n[6], 96, ".sw.ncd-tmp.-%ld.abcdef", (long)dead);  /* kept */
    for (int i = 0; i < 7; i++)
        touch_tmp(n[i], i == 2 ? 2 * 24 * 3600 : 0);
    put(in_dir("sw"), "keep\n\n" BLK("export A=1\n"));
    struct ncd_ctx *ctx = new_ctx();
    enum ncd_rc_action act;
    /* even when the content is already right */
    assert_int_equal(update(ctx, in_dir("sw"), "export A=1\n", NULL, &act),
                     0);
    assert_int_equal(act, NCD_RC_UNCHANGED);
    static const int gone[] = {1, 0, 1, 0, 0, 0, 0};
    for (int i = 0; i < 7; i++)
        if ((access(in_dir(n[i]), F_OK) != 0) != gone[i])
            fail_msg("%s: %s", n[i], gone[i] ? "kept" : "removed");
    /* a file that does not exist yet (no lock): only files over a minute
     * old go */
    char m[2][96];
    snprintf(m[0], 96, ".new.ncd-tmp.%ld.abcdef", (long)dead);
    snprintf(m[1], 96, ".new.ncd-tmp.%ld.ghijkl", (long)dead);
    touch_tmp(m[0], 0);
    touch_tmp(m[1], 120);
    assert_int_equal(update(ctx, in_dir("new"), "export A=1\n", NULL, &act),
                     0);
    assert_int_equal(act, NCD_RC_CREATED);
    assert_int_equal(access(in_dir(m[0]), F_OK), 0);
    assert_int_equal(access(in_dir(m[1]), F_OK), -1);
    /* not with --dry-run */
    touch_tmp(n[0], 0);
    struct ncd_rc_opts dry = {.dry_run = 1};
    assert_int_equal(update(ctx, in_dir("sw"), "x\n", &dry, &act), 0);
    assert_int_equal(access(in_dir(n[0]), F_OK), 0);
    ncd_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_splice),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test_setup_teardown(test_update_file, setup_dir,
                                        teardown_dir),
        cmocka_unit_test_setup_teardown(test_file_roundtrip, setup_dir,
                                        teardown_dir),
        cmocka_unit_test_setup_teardown(test_symlink_chain, setup_dir,
                                        teardown_dir),
        cmocka_unit_test_setup_teardown(test_hard_link, setup_dir,
                                        teardown_dir),
        cmocka_unit_test_setup_teardown(test_read_only, setup_dir,
                                        teardown_dir),
        cmocka_unit_test_setup_teardown(test_changed_meanwhile, setup_dir,
                                        teardown_dir),
        cmocka_unit_test_setup_teardown(test_lock, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_guard, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_sweep, setup_dir, teardown_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
