#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Regenerates data/nccl-messages.tsv: the failure messages NCCL (and the
programs around it) can print, with where they come from and which releases
have them.

Maintainer tool, not run by CI.  Python 3 standard library and git only.

    scripts/nccl-messages.py --nccl /path/to/nccl.git \
        [--nccl-tests /path/to/nccl-tests.git] \
        [--frameworks data/framework-messages.tsv] \
        [--map data/nccl-message-map.tsv] [-o data/nccl-messages.tsv] \
        [--rules rules/subsystems.yaml] [--scan-cache /tmp/scan.pkl]

--nccl is a clone (bare or not) of github.com/NVIDIA/nccl with its tags.
Every release tag vX.Y.Z-N from 2.4 on is read (for a version with several
-N tags the highest one).  In each, every .cc/.cu/.c/.h file under src/ is
tokenised (comments dropped, string literals joined, PRIu64 & co. and
object-like string macros resolved) and every WARN(...) and INFO(...) call is
taken:

  * WARN: always (a WARN is NCCL's failure report).
  * INFO: only when its format reports an error, a failure or a fallback: it
    matches INFO_KEEP (below) and none of INFO_DROP (normal teardown,
    "set by environment" echoes, HINT lines that only follow a WARN).

A call inside a macro definition (CUDACHECK, SYSCHECK, the ibverbs wrappers)
is expanded at each place the macro is used, because NCCL's WARN prints
__FILE__ and __func__ of that place and the macro's arguments can be part of
the format ("Call to " name " failed: %s").  Files under src/os/windows* are
skipped (not built on Linux).

--nccl-tests adds the failure messages of nccl-tests (every tag v2.*: printf
and fprintf formats in src/ that report a failure).  --frameworks merges a
hand-kept table of framework messages (PyTorch, Gloo, Horovod, vLLM,
Ray/cupy, Paddle: those repositories are too big to tokenise here; the
table names the file and commit of each).

Each row gets the expected nccl-doctor mapping from --map (first matching
row wins; see the header of data/nccl-message-map.tsv): `expect` for the
full line, `expect_msg` for the message without its header.  A format no
map row covers gets "?" and the tool exits 1, so the catalogue never ships a
format without a mapping.

--rules rewrites the blocks between "# generated: ID" and "# end generated"
of rules/subsystems.yaml: the patterns that claim each format mapped to a
generated nccl.<subsystem>.error/.info rule (WARN formats as one
alternation after "NCCL WARN ", INFO formats grouped under a head whose
prefilter windows are rare in healthy output) and examples taken from the
catalogue.  --scan-cache keeps the scan (about a minute) to iterate on the
map.

Output: a header comment, then one row per (level, format, file the log line
names, function), tab-separated, with the releases that print it as ranges
of consecutive catalogued releases ("2.4.2-2.12.12,2.18.1-2.30.7").
"""

import argparse
import collections
import os
import pickle
import re
import subprocess
import sys

# ---------------------------------------------------------------- filters

INFO_KEEP = re.compile(
    r"fail|error|unable|could not|couldn't|cannot|can't|invalid|unsupported"
    r"|not supported|fall(ing)? ?back|fallback|mismatch|timeout|timed out"
    r"|abort|not found|no device|retrying|ignor|disabl|not available|unknown"
    r"|exceed|truncat|refused|unreachable|not working|missing|denied"
    r"|not permitted|overflow|discrepancy|unexpected|incompatible|no .*found"
    r"|too (many|few|small|large)|insufficient|stuck|dead|lost",
    re.I)
INFO_DROP = re.compile(
    r" - (Abort|Destroy) (START|COMPLETE)|set by environment to|^HINT: "
    r"|%s for HCA|No plugin found|Could not find:|using internal"
    r"|^RAS (handling|sending|my |deadPeersHash|finished|link %d: (opening"
    r"|calculated|adding|former|moving|dropping|no more))"
    r"|Resiliency is (being enabled|disabled)|Port recovery is disabled"
    r"|OOO RQ is enabled",
    re.I)

PRI = {"PRIu64": "lu", "PRId64": "ld", "PRIx64": "lx", "PRIi64": "li",
       "PRIX64": "lX", "PRIu32": "u", "PRId32": "d", "PRIx32": "x",
       "PRIi32": "i", "PRIuPTR": "lu", "PRIxPTR": "lx", "PRIdPTR": "ld",
       "PRIu16": "hu", "PRIu8": "hhu", "PRIx8": "hhx", "PRIx16": "hx"}

SRC_EXT = (".cc", ".cu", ".c", ".h", ".cpp", ".hpp", ".cuh")

# ---------------------------------------------------------------- git


class Git:
    def __init__(self, gitdir):
        self.gitdir = gitdir
        self.cat = None

    def run(self, *args):
        return subprocess.run(["git", "--git-dir", self.gitdir] + list(args),
                              check=True, stdout=subprocess.PIPE).stdout

    def tags(self):
        out = self.run("tag", "--list").decode()
        return [t for t in out.split() if t]

    def tree(self, tag, prefix):
        out = self.run("ls-tree", "-r", "-z", tag, "--", prefix)
        res = []
        for ent in out.split(b"\0"):
            if not ent:
                continue
            meta, path = ent.split(b"\t", 1)
            mode, kind, sha = meta.split()
            if kind == b"blob":
                res.append((path.decode(), sha.decode()))
        return res

    def blob(self, sha):
        if self.cat is None:
            self.cat = subprocess.Popen(
                ["git", "--git-dir", self.gitdir, "cat-file", "--batch"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.cat.stdin.write(sha.encode() + b"\n")
        self.cat.stdin.flush()
        hdr = self.cat.stdout.readline().split()
        size = int(hdr[2])
        data = self.cat.stdout.read(size)
        self.cat.stdout.read(1)
        return data.decode("utf-8", "replace")

    def commit_of(self, tag):
        return self.run("rev-list", "-n", "1", tag).decode().strip()


def release_tags(git, pattern, minimum):
    """{version tuple: tag}, the highest -N per version, >= minimum."""
    best = {}
    for t in git.tags():
        m = re.fullmatch(pattern, t)
        if not m:
            continue
        ver = tuple(int(x) for x in m.group(1, 2, 3))
        rel = int(m.group(4)) if m.lastindex >= 4 and m.group(4) else 0
        if ver < minimum:
            continue
        if ver not in best or rel > best[ver][0]:
            best[ver] = (rel, t)
    return [(v, best[v][1]) for v in sorted(best)]


# ---------------------------------------------------------------- lexer

TOK = re.compile(r"""
    (?P<nl>\n)
  | (?P<ws>[ \t\r\f\v]+|\\\n)
  | (?P<lc>//[^\n]*)
  | (?P<bc>/\*.*?\*/)
  | (?P<str>(?:u8|u|U|L)?"(?:[^"\\\n]|\\.)*")
  | (?P<chr>(?:u8|u|U|L)?'(?:[^'\\\n]|\\.)*')
  | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<num>\.?[0-9](?:[eEpP][+-]|[A-Za-z0-9_.'])*)
  | (?P<op>::|->|\#\#|<<=|>>=|[-+*/%&|^!=<>]=|&&|\|\||\+\+|--|<<|>>|.)
""", re.X | re.S)


class Tok:
    __slots__ = ("kind", "text", "line", "pp")

    def __init__(self, kind, text, line, pp):
        self.kind, self.text, self.line, self.pp = kind, text, line, pp


def tokenize(src):
    """Tokens with their line and the index of the preprocessor directive
    they belong to (-1 outside directives)."""
    toks = []
    line = 1
    pos = 0
    n = len(src)
    bol = True       # at the beginning of a logical line
    pp = -1          # current directive number
    npp = 0
    while pos < n:
        m = TOK.match(src, pos)
        if not m:
            pos += 1
            continue
        kind = m.lastgroup
        text = m.group(kind)
        pos = m.end()
        if kind == "nl":
            line += 1
            bol = True
            pp = -1
            continue
        if kind in ("ws", "lc", "bc"):
            line += text.count("\n")
            continue
        if bol and kind == "op" and text == "#":
            pp = npp
            npp += 1
        bol = False
        toks.append(Tok(kind, text, line, pp))
    return toks


ESC = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'",
       "a": "\a", "b": "\b", "f": "\f", "v": "\v", "?": "?", "0": "\0"}


def unquote(lit):
    body = lit[lit.index('"') + 1:-1]
    out = []
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            d = body[i + 1]
            if d == "x":
                m = re.match(r"[0-9a-fA-F]+", body[i + 2:])
                out.append(chr(int(m.group(0), 16)) if m else "x")
                i += 2 + (len(m.group(0)) if m else 0)
                continue
            out.append(ESC.get(d, d))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


# ---------------------------------------------------------------- parse

KEYWORDS_NOT_FN = {"if", "for", "while", "switch", "return", "sizeof",
                   "__attribute__", "alignas", "decltype", "catch", "defined",
                   "static_assert", "__declspec", "noexcept", "throw"}


def split_args(toks, i):
    """toks[i] is '(' : returns (list of arg token lists, index after ')')."""
    depth = 0
    args, cur = [], []
    j = i
    while j < len(toks):
        t = toks[j]
        if t.kind == "op" and t.text in "([{":
            depth += 1
            if depth > 1:
                cur.append(t)
        elif t.kind == "op" and t.text in ")]}":
            depth -= 1
            if depth == 0:
                args.append(cur)
                return args, j + 1
            cur.append(t)
        elif t.kind == "op" and t.text == "," and depth == 1:
            args.append(cur)
            cur = []
        else:
            cur.append(t)
        j += 1
    return args, j


def fmt_parts(arg):
    """A format argument as a list of parts: ('s', text) for literal text,
    ('p', name) for a macro parameter used as a string, ('#', name) for a
    stringified parameter, ('m', name) for another identifier (a string
    macro, resolved later).  None when the format is not built from string
    literals (a variable, a function call)."""
    parts = []
    k = 0
    while k < len(arg):
        t = arg[k]
        if t.kind == "str":
            parts.append(("s", unquote(t.text)))
        elif t.kind == "id" and t.text in PRI:
            parts.append(("s", PRI[t.text]))
        elif t.kind == "op" and t.text == "#" and k + 1 < len(arg) and \
                arg[k + 1].kind == "id":
            parts.append(("#", arg[k + 1].text))
            k += 1
        elif t.kind == "id":
            parts.append(("m", t.text))
        elif t.kind == "op" and t.text in "()" and len(arg) > 2:
            pass  # ("a" "b")
        else:
            return None
        k += 1
    return parts if parts else None


class FileScan:
    """Calls, macro definitions and macro uses of one source file."""

    def __init__(self, path, text):
        self.path = path
        self.calls = []      # (level, parts, line, func, macro-or-None)
        self.macros = {}     # name -> (params or None, body tokens)
        self.strmacros = {}  # name -> string
        self.uses = []       # (macro name, args, line, func, enclosing macro)
        self.scan(tokenize(text))

    def scan(self, toks):
        # 1. preprocessor directives: #define, #if 0 ... #endif
        keep = []
        i = 0
        skipping = 0
        while i < len(toks):
            t = toks[i]
            if t.pp >= 0 and t.text == "#" and (i == 0 or toks[i - 1].pp != t.pp):
                j = i
                while j < len(toks) and toks[j].pp == t.pp:
                    j += 1
                d = toks[i + 1:j]
                word = d[0].text if d else ""
                if skipping:
                    if word in ("if", "ifdef", "ifndef"):
                        skipping += 1
                    elif word == "endif" or (word in ("else", "elif") and skipping == 1):
                        skipping -= 1
                elif word == "if" and len(d) == 2 and d[1].text == "0":
                    skipping = 1
                elif word == "define" and len(d) >= 2:
                    self.define(d[1:])
                i = j
                continue
            if not skipping:
                keep.append(t)
            i += 1
        self.walk(keep, None)

    def define(self, d):
        name = d[0].text
        params = None
        body = d[1:]
        # function-like only when '(' follows the name without a blank:
        # the lexer drops blanks, so compare columns through the text;
        # NCCL never defines object-like macros starting with '('
        if body and body[0].text == "(":
            args, k = split_args(body, 0)
            params = [a[0].text if a else "" for a in args]
            params = ["__VA_ARGS__" if p == "..." else p for p in params]
            body = body[k:]
        self.macros[name] = (params, body)
        if params is None and body and all(b.kind == "str" for b in body):
            self.strmacros[name] = "".join(unquote(b.text) for b in body)
        self.walk(body, name)

    def walk(self, toks, macro):
        """Finds WARN/INFO calls and macro uses, tracking the enclosing
        function (outside macros)."""
        scopes = []   # stack of ("fn", name) / ("ns", None) / ("blk", None)
        window = []   # tokens of the current top-level declaration
        func = macro
        i = 0
        n = len(toks)
        while i < n:
            t = toks[i]
            if t.kind == "id" and t.text in ("WARN", "INFO") and \
                    i + 1 < n and toks[i + 1].text == "(" and \
                    not (i > 0 and toks[i - 1].text in (".", "->", "define")):
                args, k = split_args(toks, i + 1)
                farg = args[0] if t.text == "WARN" else (args[1] if len(args) > 1 else None)
                parts = fmt_parts(farg) if farg else None
                self.calls.append((t.text, parts, t.line, self.cur_func(scopes, macro), macro))
                i = k
                continue
            if t.kind == "id" and i + 1 < n and toks[i + 1].text == "(" and \
                    t.text.isupper() and len(t.text) > 3:
                args, _ = split_args(toks, i + 1)
                self.uses.append((t.text, args, t.line, self.cur_func(scopes, macro), macro))
            if macro is None:
                if t.text == "{" and t.kind == "op":
                    kind, name = self.classify(window, scopes)
                    scopes.append((kind, name))
                    window = []
                elif t.text == "}" and t.kind == "op":
                    if scopes:
                        scopes.pop()
                    window = []
                elif t.text == ";" and t.kind == "op":
                    window = []
                else:
                    window.append(t)
            i += 1

    @staticmethod
    def cur_func(scopes, macro):
        if macro is not None:
            return macro
        for kind, name in reversed(scopes):
            if kind == "fn":
                return name
        return ""

    @staticmethod
    def classify(window, scopes):
        if any(k == "fn" for k, _ in scopes):
            return ("blk", None)
        words = [w.text for w in window]
        if not words:
            return ("blk", None)
        if words[-1] == "=" or "=" in words and ")" not in words:
            return ("ns", None)
        if words[0] in ("namespace", "extern") or \
                (words[0] in ("struct", "class", "union", "enum") and "(" not in words):
            return ("ns", None)
        if "(" not in words:
            return ("ns", None)
        # the first identifier followed by '(' that is not a keyword
        for k in range(len(window) - 1):
            a, b = window[k], window[k + 1]
            if a.kind == "id" and b.text == "(" and a.text not in KEYWORDS_NOT_FN:
                name = a.text
                if k >= 2 and window[k - 1].text == "::" and window[k - 2].kind == "id":
                    name = window[k - 2].text + "::" + name
                if k >= 1 and window[k - 1].text == "~":
                    name = "~" + name
                return ("fn", name)
        return ("blk", None)


# ---------------------------------------------------------------- NCCL


class TreeScan:
    """All calls of one release, macros expanded at their use sites."""

    def __init__(self, files):
        self.files = files  # path -> FileScan
        self.macros = {}    # name -> (path, params, calls inside)
        self.strmacros = {}
        for path, fs in files.items():
            self.strmacros.update(fs.strmacros)
        for path, fs in files.items():
            for name, (params, body) in fs.macros.items():
                calls = [c for c in fs.calls if c[4] == name]
                if calls:
                    self.macros[name] = (path, params, calls)
        self.uses = collections.defaultdict(list)
        for path, fs in files.items():
            for name, args, line, func, inmacro in fs.uses:
                if name in self.macros:
                    self.uses[name].append((path, args, line, func, inmacro))

    def resolve(self, parts, bind):
        """Format text from parts; bind maps macro parameters to argument
        token lists.  Returns (text, ok)."""
        out = []
        ok = True
        for kind, v in parts:
            if kind == "s":
                out.append(v)
            elif kind == "#":
                if v in bind:
                    out.append(" ".join(t.text for t in bind[v]))
                else:
                    out.append("%s")
                    ok = False
            elif v in bind:
                sub = fmt_parts(bind[v]) if bind[v] else None
                if sub is None:
                    out.append("%s")
                    ok = False
                else:
                    txt, ok2 = self.resolve(sub, {})
                    out.append(txt)
                    ok = ok and ok2
            elif v in self.strmacros:
                out.append(self.strmacros[v])
            else:
                out.append("%s")
                ok = False
        return "".join(out), ok

    def expand(self, name, bind_outer, depth, seen):
        """Yields (path, line, func, bind) for every use of macro `name`
        that ends in a real function (uses inside other macros followed)."""
        if depth > 4 or name in seen:
            return
        path_def, params, _ = self.macros[name]
        for path, args, line, func, inmacro in self.uses.get(name, []):
            bind = {}
            for k, p in enumerate(params or []):
                if p == "__VA_ARGS__":
                    break
                if k < len(args):
                    bind[p] = args[k]
            if inmacro is not None and inmacro in self.macros and inmacro != name:
                for up in self.expand(inmacro, None, depth + 1, seen | {name}):
                    upath, uline, ufunc, ubind = up
                    # arguments that are the outer macro's parameters
                    nb = {}
                    for p, a in bind.items():
                        if len(a) == 1 and a[0].kind == "id" and a[0].text in ubind:
                            nb[p] = ubind[a[0].text]
                        else:
                            nb[p] = a
                    yield (upath, uline, ufunc, nb)
            elif inmacro is None:
                yield (path, line, func, bind)

    def messages(self):
        """Yields (level, fmt, logfile, func, via, line, resolved)."""
        for path, fs in self.files.items():
            for level, parts, line, func, macro in fs.calls:
                if parts is None:
                    continue
                if macro is None:
                    fmt, ok = self.resolve(parts, {})
                    yield (level, fmt, path, func, "", line, ok)
                    continue
                if macro not in self.macros:
                    continue
                uses = list(self.expand(macro, None, 0, frozenset()))
                for upath, uline, ufunc, bind in uses:
                    fmt, ok = self.resolve(parts, bind)
                    yield (level, fmt, upath, ufunc,
                           "%s (%s)" % (macro, path), uline, ok)


def scan_release(git, tag, cache):
    files = {}
    for path, sha in git.tree(tag, "src"):
        if not path.endswith(SRC_EXT) or "/os/windows" in path:
            continue
        rel = path[len("src/"):]
        key = (sha, rel)
        if key not in cache:
            cache[key] = FileScan(rel, git.blob(sha))
        files[rel] = cache[key]
    return TreeScan(files)


def is_failure(level, fmt):
    if level == "WARN":
        return True
    return bool(INFO_KEEP.search(fmt)) and not INFO_DROP.search(fmt)


# ---------------------------------------------------------------- ranges


def ranges(idx, names):
    """Sorted release indexes -> "a-b,c" with consecutive runs joined."""
    runs = []
    for i in sorted(idx):
        if runs and runs[-1][1] == i - 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ",".join(names[a] if a == b else "%s-%s" % (names[a], names[b])
                    for a, b in runs)


# ---------------------------------------------------------------- nccl-tests

TESTS_CALL = re.compile(r"\b(?:f?printf|PRINT|snprintf)\s*\(")


def scan_tests(git):
    """nccl-tests: failure formats printed by src/*.cu, *.h (printf family),
    per release tag v2.*."""
    rels = release_tags(git, r"v(\d+)\.(\d+)\.(\d+)(?:-(\d+))?", (2, 0, 0))
    names = ["%d.%d.%d" % v for v, _ in rels]
    seen = collections.OrderedDict()
    cache = {}
    for ri, (ver, tag) in enumerate(rels):
        for path, sha in git.tree(tag, "src"):
            if not path.endswith(SRC_EXT):
                continue
            if sha not in cache:
                cache[sha] = tests_formats(path, git.blob(sha))
            for fmt, func, line in cache[sha]:
                key = (fmt, path, func)
                ent = seen.setdefault(key, [set(), line])
                ent[0].add(ri)
                ent[1] = line
    return names, seen


TESTS_KEEP = re.compile(r"fail|error|invalid|timeout|mismatch|wrong|not "
                        r"supported|unable|cannot|could not|exceed", re.I)


def tests_formats(path, text):
    toks = tokenize(text)
    out = []
    # reuse the function tracker: walk and record printf-like calls
    scopes, window = [], []
    macro_of_pp = {}
    i = 0
    n = len(toks)
    while i < n:
        t = toks[i]
        if t.pp >= 0:
            if t.text == "define" and i > 0 and toks[i - 1].text == "#" and \
                    i + 1 < n and toks[i + 1].pp == t.pp:
                macro_of_pp[t.pp] = toks[i + 1].text
        if t.kind == "id" and t.text in ("printf", "fprintf", "PRINT", "snprintf", "sprintf") \
                and i + 1 < n and toks[i + 1].text == "(":
            args, k = split_args(toks, i + 1)
            fi = {"printf": 0, "PRINT": 0, "fprintf": 1, "sprintf": 1, "snprintf": 2}[t.text]
            if len(args) > fi:
                parts = fmt_parts(args[fi])
                if parts and all(p[0] == "s" or p[1] in PRI for p in parts):
                    fmt = "".join(p[1] for p in parts)
                    if TESTS_KEEP.search(fmt):
                        f = macro_of_pp.get(t.pp) if t.pp >= 0 else \
                            FileScan.cur_func(scopes, None)
                        out.append((fmt, f or "", t.line))
            i = k
            continue
        if t.pp < 0:
            if t.text == "{" and t.kind == "op":
                scopes.append(FileScan.classify(window, scopes))
                window = []
            elif t.text == "}" and t.kind == "op":
                if scopes:
                    scopes.pop()
                window = []
            elif t.text == ";" and t.kind == "op":
                window = []
            else:
                window.append(t)
        i += 1
    return out


# ---------------------------------------------------------------- mapping


def load_map(path):
    """data/nccl-message-map.tsv: project, file regex ("*" = any file, also
    none), format regex, expected rule id, why.  First matching row wins."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            cols = line.split("\t")
            if len(cols) < 4:
                sys.exit("%s:%d: expected 4 or 5 tab-separated columns" % (path, n))
            proj, fre, mre, expect = cols[:4]
            try:
                rows.append((proj, None if fre == "*" else re.compile(fre),
                             re.compile(mre), expect, n))
            except re.error as e:
                sys.exit("%s:%d: %s" % (path, n, e))
    return rows


def map_one(rows, project, path, fmt):
    """Expected rule for a format printed from `path` (None: file unknown,
    only "*" rows apply).  Returns (rule id, map line) or ("?", 0)."""
    for proj, fre, mre, expect, n in rows:
        if proj != "*" and proj != project:
            continue
        if fre is not None and (path is None or not fre.search(path)):
            continue
        if mre.search(fmt):
            return expect, n
    return "?", 0


def esc(s):
    return s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


# ---------------------------------------------------------------- fill
# The same plausible values as tests/explain/catalog.c, so the examples the
# generator writes into the rules are lines the catalogue test also builds.

CONV = re.compile(r"%[-+ #0']*(?:\*|[0-9]+)?(?:\.(?:\*|[0-9]+))?"
                  r"(hh|h|ll|l|L|q|j|z|t)?([diouxXeEfFgGaAcspnm%])")


def str_value(pre, post):
    low = pre.lower()

    def ends(words):
        return any(low.endswith(w.lower()) for w in words)
    if post.startswith(":%d") and (not pre or ends(["failure ", " at "])):
        return "common.cu"
    if ends(["real path of "]):
        return "mlx5_0" if post.startswith(" (") else "/sys/class/pci_bus/0000:1b/../../0000:1b:00.0"
    if ends(["real path of %s ("]):
        return "/sys/class/infiniband/mlx5_0/device"
    if post.startswith(", using default") or post.startswith("="):
        return "NCCL_IB_TIMEOUT"
    if post.startswith(" shared memory"):
        return "creating"
    if ends(["Call to "]):
        return "recv from" if post.startswith(" %s") else "socket"
    if ends(["operation "]):
        return "Connect"
    if (not pre or pre.endswith(" .. ")) and post.startswith((": Test", " pid ")):
        return "node1"
    if not pre:
        return "ncclProxyConnect"
    if ends(["failure '", "error '", "CUDA error "]):
        return "invalid argument"
    if ends(["failed : ", "failed: ", "error: ", "error : ", "error ", "returned ",
             "errno: ", "failed with ", "err ", "reason: "]):
        return "Input/output error"
    if ends(["device ", "HCA ", "dev ", "devName ", "NIC ", "HCA '", "port "]):
        return "mlx5_0"
    if ends(["interface ", "IFNAME ", "ifname ", "Using "]):
        return "eth0"
    if ends(["file ", "path ", "segment ", "extend ", "open ", "create ", "map ",
             "shmPath "]):
        return "/dev/shm/nccl-Xq3z9L"
    if ends(["address ", "addr ", "peer ", "connect to ", "from ", " to ", "remote ",
             "host ", "root ", "with ", "listen ", "socket "]):
        return "10.0.0.2<43215>"
    if ends(["NCCL_", "variable ", "env "]):
        return "IB_HCA"
    return "mlx5_0"


def fill(fmt):
    fmt = fmt.split("\n")[0]
    out = []
    pos = 0
    for m in CONV.finditer(fmt):
        out.append(fmt[pos:m.start()])
        length, conv = m.group(1), m.group(2)
        if conv == "%":
            out.append("%")
        elif conv in "diu":
            out.append("4194304" if length else "3")
        elif conv in "xX":
            out.append("1b000" if length else "1b")
        elif conv == "o":
            out.append("7")
        elif conv == "p":
            out.append("0x7f5a2c000000")
        elif conv in "eEfFgGaA":
            out.append("2.50")
        elif conv == "c":
            out.append("x")
        elif conv == "s":
            out.append(str_value(fmt[:m.start()], fmt[m.end():]))
        elif conv == "m":
            out.append("Input/output error")
        else:
            out.append("?")
        pos = m.end()
    out.append(fmt[pos:])
    return "".join(out).rstrip(" \n")


# ---------------------------------------------------------------- patterns

META = set("\\.^$|?*+()[]{}")


def rx_escape(text):
    """Escapes for PCRE2 and POSIX ERE alike (no \\< \\> \\w...)."""
    return "".join("\\" + c if c in META else c for c in text)


def fmt_pieces(fmt):
    """A format as pieces: ('lit', text), ('any',) for %s, ('tok',) for a
    number/pointer, ('one',) for %c.  First line only, no trailing blanks."""
    fmt = fmt.split("\n")[0].rstrip(" ")
    pieces = []
    pos = 0
    for m in CONV.finditer(fmt):
        if m.start() > pos:
            pieces.append(("lit", fmt[pos:m.start()]))
        conv = m.group(2)
        if conv == "%":
            pieces.append(("lit", "%"))
        elif conv in "sm":
            pieces.append(("any",))
        elif conv == "c":
            pieces.append(("one",))
        else:
            pieces.append(("tok",))
        pos = m.end()
    if pos < len(fmt):
        pieces.append(("lit", fmt[pos:]))
    merged = []
    for p in pieces:
        if merged and p[0] == "lit" and merged[-1][0] == "lit":
            merged[-1] = ("lit", merged[-1][1] + p[1])
        else:
            merged.append(p)
    return merged


def fmt_regex(fmt, max_lit=40, max_wild=3):
    """(leading literal, regex of the rest) for a format, or None when the
    format has no literal of 4+ characters (it can only be told by its
    file).  Leading conversions are dropped (the pattern is unanchored),
    the tail is cut after max_lit literal characters or max_wild
    conversions so collectors' truncation and long formats stay cheap."""
    pieces = fmt_pieces(fmt)
    while pieces and pieces[0][0] != "lit":
        pieces.pop(0)
    if not pieces or len(pieces[0][1].strip()) < 4:
        # a later literal may still do: start there
        while pieces and not (pieces[0][0] == "lit" and len(pieces[0][1].strip()) >= 4):
            pieces.pop(0)
        if not pieces:
            return None
    lead = pieces[0][1]
    rest = []
    nlit = len(lead)
    nwild = 0
    for p in pieces[1:]:
        if p[0] == "lit":
            if nlit >= max_lit:
                break
            rest.append(rx_escape(p[1][:max(8, max_lit - nlit)]))
            nlit += len(p[1])
        else:
            if nwild >= max_wild or nlit >= max_lit:
                break
            nwild += 1
            rest.append({"any": ".*", "tok": "[^ ]*", "one": "."}[p[0]])
    while rest and rest[-1] in (".*", "[^ ]*", "."):
        rest.pop()
    return lead, "".join(rest)


# Words frequent in healthy NCCL INFO output: a group key starting with
# one of them would make its pattern a candidate on ordinary lines.
COMMON_KEYS = ("rank ", "comm ", "Channel ", "Ring ", "Trees", "NCCL ", "Using ",
               "Connected", "Init ", "cudaDev", "busId", "nranks", "Setting ")


def group_key(lead):
    """The shared head of formats that go into one alternation: the text up
    to the first ': ' / ' : ' within 28 characters, else the first two
    words when they make 6+ characters.  None: no grouping."""
    m = re.match(r"(.{3,26}?(?: ?: ))", lead)
    key = m.group(1) if m else None
    if key is None:
        m = re.match(r"([^ ]+ [^ ]+ )", lead)
        key = m.group(1) if m and len(m.group(1)) >= 7 else None
    # the prefilter scans every 4th byte only while every literal has 7+
    # bytes (src/lib/explain/rules.c build_prefilter)
    if key is None or key.startswith(COMMON_KEYS) or len(key) < 7:
        return None
    return key


def top_literal(rx):
    """Longest literal outside groups of a pattern made by fmt_regex (what
    the rules loader gives the prefilter)."""
    best, cur, depth, i = "", "", 0, 0
    while i < len(rx):
        c = rx[i]
        if c == "\\" and i + 1 < len(rx):
            if depth == 0:
                cur += rx[i + 1]
            i += 2
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif depth == 0 and c in ".[*+?{^$|":
            if c in "*?{" and cur:
                cur = cur[:-1]
            best, cur = max(best, cur, key=len), ""
            if c == "[":
                i = rx.index("]", i + 1)
        elif depth == 0:
            cur += c
        if c in "()":
            best, cur = max(best, cur, key=len), ""
        i += 1
    return max(best, cur, key=len)


def redundant(a, others):
    """True when another unanchored regex of `others` is a prefix of a (so
    every line a matches, that one matches too)."""
    return any(b != a and a.startswith(b) and not b.endswith("\\") for b in others)


# ---------------------------------------------------------------- prefilter
# explain's prefilter (src/lib/explain/rules.c build_prefilter) hashes, for
# the longest literal of each pattern, the run of 4 consecutive 4-byte
# windows least frequent in its `background` text (the earliest of equal
# runs), and scans every 4th byte of each line for them.  A window that is
# frequent in healthy NCCL output (the "AllGather: opCount" lines of
# NCCL_DEBUG_SUBSYS=COLL, channel lines, hex pointers) makes the pattern's
# literal be compared on most lines: the generator moves such literals.

HEALTHY = """\
node12:100183:100283 [7] NCCL INFO ReduceScatter: opCount 1 sendbuff 0x7f3a82caf2bb recvbuff 0x7f3bde4f1c43 count 1133525 datatype 9 op 1 root 0 comm 0x55d0c000b7 [nranks=512] stream 0x55d0d100b7
[1,432]<stdout>:node55:100432:100532 [0] NCCL INFO Broadcast: opCount 0 sendbuff 0x7f3a4b21c371 recvbuff 0x7f3b1875063d count 51808179 datatype 3 op 0 root 0 comm 0x55d0c001b0 [nranks=512] stream 0x55d0d101b0
[rank341]:node43:100341:100441 [5] NCCL INFO AllGather: opCount 5 sendbuff 0x7f3af2440efe recvbuff 0x7f3b022b9b89 count 62374978 datatype 3 op 0 root 0 comm 0x55d0c00155 [nranks=512] stream 0x55d0d10155
node2:1:2 [1] NCCL INFO AllReduce: opCount 3e sendbuff 0x7f3a3cf0b9b8 recvbuff 0x7f3b19e46a6c count 38105802 datatype 5 op 0 root 0 comm 0x55d0c001ba [nranks=16] stream 0x55d0d101ba
node2:1:2 [1] NCCL INFO Reduce: opCount 4 sendbuff 0x7f00 recvbuff 0x7f00 count 8 datatype 7 op 0 root 3 comm 0x55 [nranks=16] stream 0x55
node2:1:2 [1] NCCL INFO Send: opCount 4 sendbuff 0x7f00 recvbuff (nil) count 8 datatype 7 op 0 root 3 comm 0x55 [nranks=16] stream 0x55
node2:1:2 [1] NCCL INFO Recv: opCount 4 sendbuff (nil) recvbuff 0x7f00 count 8 datatype 7 op 0 root 3 comm 0x55 [nranks=16] stream 0x55
node1:100000:100100 [0] NCCL INFO Channel 07/0 : 3[3] -> 4[4] via P2P/IPC/read
node1:100000:100100 [0] NCCL INFO Channel 15/0 : 7[7] -> 8[0] [send] via NET/IB/0/GDRDMA
node1:100000:100100 [0] NCCL INFO Channel 15/0 : 7[7] -> 8[0] [receive] via NET/IB/3/GDRDMA(PCI)/Shared
node1:100000:100100 [0] NCCL INFO Channel 02/0 : 1[1] -> 2[2] via SHM/direct/direct
node1:100000:100100 [0] NCCL INFO Channel 03/1 : 1[1] -> 2[2] via P2P/CUMEM/read
node1:100000:100100 [0] NCCL INFO Ring 03 : 2 -> 3 -> 4
node1:100000:100100 [0] NCCL INFO Trees [0] 1/-1/-1->0->-1 [1] 1/-1/-1->0->-1
node1:100000:100100 [0] NCCL INFO Channel 00/16 : 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15
node1:100000:100100 [0] NCCL INFO threadThresholds 8/8/64 | 128/8/64 | 512 | 512
node1:100000:100100 [0] NCCL INFO 32 coll channels, 32 collnet channels, 0 nvls channels, 32 p2p channels, 32 p2p channels per peer
node1:100000:100100 [0] NCCL INFO Connected all rings, use ring PXN 0 GDR 1
node1:100000:100100 [0] NCCL INFO Connected all trees
node1:100000:100100 [0] NCCL INFO NVLS multicast support is not available on dev 0
node1:100000:100100 [0] NCCL INFO Setting affinity for GPU 3 to ffff,ffffffff
node1:100000:100100 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0
node1:100000:100100 [0] NCCL INFO NCCL_IB_HCA set by environment to mlx5_0,mlx5_1,mlx5_2,mlx5_3
node1:100000:100100 [0] NCCL INFO Bootstrap: Using eth0:10.0.0.1<0>
node1:100000:100100 [0] NCCL INFO NET/Plugin: No plugin found (libnccl-net.so)
node1:100000:100100 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB eth0:10.0.0.1<0>
node1:100000:100100 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0> [1]eth1:10.1.0.1<0>
node1:100000:100100 [0] NCCL INFO Using network IB
node1:100000:100100 [0] NCCL INFO DMA-BUF is available on GPU device 0
node1:100000:100100 [0] NCCL INFO GPU Direct RDMA Enabled for HCA 0 'mlx5_0'
node1:100000:100100 [0] NCCL INFO comm 0x55d0c00000 rank 0 nRanks 512 nNodes 64 localRanks 8 localRank 0 MNNVL 0
node1:100000:100100 [0] NCCL INFO ncclCommInitRank comm 0x55d0c00000 rank 0 nranks 512 cudaDev 0 nvmlDev 0 busId 1b000 commId 0x9b7a5c - Init COMPLETE
node1:100000:100100 [0] NCCL INFO Init timings - ncclCommInitRank: rank 0 nranks 512 total 1.52 (kernels 0.11, alloc 0.05, bootstrap 0.40, allgathers 0.02, topo 0.10, graphs 0.01, connections 0.75, rest 0.08)
node1:100000:100100 [0] NCCL INFO comm 0x55d0c00000 rank 0 nranks 512 cudaDev 0 busId 1b000 - Destroy COMPLETE
node1:100000:100100 [0] NCCL INFO NCCL version 2.21.5+cuda12.4
node1:100000:100100 [0] NCCL INFO cudaDriverVersion 12040
[default0]:node1:100000:100100 [0] NCCL INFO P2P Chunksize set to 131072
"""


def c_background():
    """The prefilter's background text, read from the C source of
    src/lib/explain (the `background[]` array).  Exits when it is not found:
    the generated literals would not be checked against it."""
    here = os.path.dirname(os.path.abspath(__file__))
    d = os.path.join(here, "..", "src", "lib", "explain")
    for name in sorted(os.listdir(d)):
        if not name.endswith(".c"):
            continue
        with open(os.path.join(d, name), encoding="utf-8") as f:
            src = f.read()
        m = re.search(r"static const char background\[\] =(.*?);\n", src, re.S)
        if m:
            return "".join(unquote('"%s"' % x)
                           for x in re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(1)))
    sys.exit("no background[] text in src/lib/explain/*.c: the prefilter check "
             "needs it (see prefilter_windows())")


BG = None
HOT = None


def _canon(w):
    return re.sub(r"[0-9]", "#", w)


def prefilter_windows(lit, stride=4):
    """The windows rules.c would hash for literal `lit`."""
    global BG, HOT
    if BG is None:
        bg = c_background()
        BG = collections.Counter(bg[i:i + 4] for i in range(len(bg) - 3))
        text = HEALTHY + bg
        HOT = set(_canon(text[i:i + 4]) for i in range(len(text) - 3))
    best, bestc = 0, None
    for o in range(0, len(lit) - 3 - stride + 1):
        c = sum(BG[lit[o + w:o + w + 4]] for w in range(stride))
        if bestc is None or c < bestc:
            best, bestc = o, c
    return [lit[best + w:best + w + 4] for w in range(stride)]


def is_hot(rx):
    """True when the prefilter windows of pattern rx occur in healthy
    NCCL output (a digit taken as any digit)."""
    lit = top_literal(rx)
    return len(lit) < 7 or any(_canon(w) in HOT for w in prefilter_windows(lit))


def cool(rx):
    """rx, or a suffix of it (the pattern is unanchored) whose longest
    literal the prefilter can tell from healthy output; None if none."""
    cur = rx
    for _ in range(200):
        if not is_hot(cur):
            return cur
        lit = top_literal(cur)
        i = cur.find(rx_escape(lit))
        if i < 0:
            return None
        # drop everything before that literal and its first character
        j = i + len(rx_escape(lit[0]))
        cur = cur[j:]
        if len(top_literal(cur)) < 10:
            return None
    return None


def fmt_alt(fmt):
    """The regex of a format as it follows "NCCL WARN " / "NCCL INFO "."""
    r = fmt_regex(fmt)
    if r is None:
        return None
    lead, rest = r
    start = "" if fmt.split("\n")[0].startswith(lead) else ".*"
    return start + rx_escape(lead) + rest


def alternation(prefix, alts, max_alt=40, max_len=3000):
    """prefix(?:a|b|...) patterns, chunked; alternatives that another one
    (a prefix of it) already covers are dropped."""
    alts = sorted(set(alts))
    alts = [a for a in alts if not redundant(a, alts)]
    pats, chunk = [], []
    for a in alts + [None]:
        if a is None or len(chunk) >= max_alt or \
                sum(len(c) + 1 for c in chunk) + len(a) > max_len:
            if len(chunk) == 1:
                pats.append(prefix + chunk[0])
            elif chunk:
                pats.append(prefix + "(?:" + "|".join(chunk) + ")")
            chunk = []
        if a is not None:
            chunk.append(a)
    return pats


def build_patterns(fmts, levels):
    """Patterns (strings) that match every format of `fmts` as NCCL prints
    it: after "NCCL WARN " for a format printed as a WARN (one alternation
    per rule: the literal "NCCL WARN " costs nothing on INFO lines), after
    "NCCL INFO " for one printed as an INFO (grouped by a shared head whose
    prefilter windows are rare in healthy output, else alone with its own
    literal).  levels: format -> set of "WARN"/"INFO".
    Returns (patterns, formats left out)."""
    left = []
    warn, info = [], collections.OrderedDict()
    for fmt in sorted(set(fmts)):
        alt = fmt_alt(fmt)
        if alt is None:
            left.append(fmt)
            continue
        if "WARN" in levels.get(fmt, ("WARN",)):
            warn.append(alt)
        if "INFO" in levels.get(fmt, ()):
            lead = fmt_regex(fmt)[0]
            key = group_key(lead) if not alt.startswith(".*") else None
            if key is not None and is_hot("NCCL INFO " + rx_escape(key) + "x"):
                key = None
            if key is None:
                info.setdefault(None, []).append(alt)
            else:
                info.setdefault(key, []).append(rx_escape(lead[len(key):]) +
                                                alt[len(rx_escape(lead)):])
    pats = alternation("NCCL WARN ", warn)
    for key, alts in info.items():
        if key is not None:
            pats += alternation("NCCL INFO " + rx_escape(key), alts)
            continue
        for alt in sorted(set(alts)):
            # no literal of it is rare in healthy output: keep it as it is
            # (an INFO line has no file to tell it by)
            pats.append(cool("NCCL INFO " + alt) or "NCCL INFO " + alt)
    return pats, left


def yq(s):
    return "'" + s.replace("'", "''") + "'"


def write_rules(path, per_rule, examples):
    """Rewrites the blocks between '# generated: ID' and '# end generated'
    of the rules file with the patterns and examples of each rule."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    out = []
    pos = 0
    seen = set()
    for m in re.finditer(r"^( *)# generated: (\S+)\n.*?^ *# end generated\n", text,
                         re.M | re.S):
        ind, rid = m.group(1), m.group(2)
        seen.add(rid)
        SUBSYS_RULES.append(rid)
        out.append(text[pos:m.start()])
        pats = per_rule.get(rid, [])
        ex = examples.get(rid, {"match": [], "no_match": []})
        block = ["%s# generated: %s" % (ind, rid),
                 "%s# (scripts/nccl-messages.py from data/nccl-messages.tsv: %d patterns)"
                 % (ind, len(pats)),
                 "%spatterns:" % ind]
        block += ["%s  - %s" % (ind, yq(p)) for p in pats]
        block.append("%sexamples:" % ind)
        for k in ("match", "no_match"):
            block.append("%s  %s:" % (ind, k))
            block += ["%s    - %s" % (ind, yq(e)) for e in ex[k]]
        block.append("%s# end generated" % ind)
        out.append("\n".join(block) + "\n")
        pos = m.end()
    out.append(text[pos:])
    for rid in seen - set(r for r in per_rule if per_rule[r]):
        print("%s: rule %s has a generated block but no format maps to it"
              % (path, rid), file=sys.stderr)
    missing = set(per_rule) - seen
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("".join(out))
    os.replace(tmp, path)
    return missing


# ---------------------------------------------------------------- main


def log_line(level, path, line, fmt):
    msg = fill(fmt)
    if level == "WARN":
        return "node1:2345:2399 [3] %s:%s NCCL WARN %s" % (path, line, msg)
    return "node1:2345:2399 [3] NCCL INFO %s" % msg


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nccl", help="NVIDIA/nccl git dir (required unless --scan-cache "
                    "or --from-catalogue)")
    ap.add_argument("--nccl-tests", help="NVIDIA/nccl-tests git dir")
    ap.add_argument("--frameworks", help="hand-kept framework table (data/framework-messages.tsv)")
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--map", default=os.path.join(here, "..", "data", "nccl-message-map.tsv"))
    ap.add_argument("--rules", help="rules file whose generated blocks to rewrite "
                    "(rules/subsystems.yaml)")
    ap.add_argument("-o", "--output", default=os.path.join(here, "..", "data", "nccl-messages.tsv"))
    ap.add_argument("--scan-cache", help="pickle of the scanned rows: reused when "
                    "present (to iterate on the map), written otherwise")
    ap.add_argument("--from-catalogue", metavar="TSV",
                    help="take the NCCL and nccl-tests rows from this catalogue "
                    "(data/nccl-messages.tsv) instead of scanning the repositories: "
                    "to re-map them or merge a changed --frameworks table")
    a = ap.parse_args()
    if a.from_catalogue:
        return finish(a, *rows_from_catalogue(a.from_catalogue))
    if not a.nccl:
        ap.error("--nccl is required without --scan-cache or --from-catalogue")
    if a.scan_cache and os.path.exists(a.scan_cache):
        with open(a.scan_cache, "rb") as f:
            out_rows, rels, names, commit, tests_src = pickle.load(f)
        return finish(a, out_rows, rels, names, commit, tests_src)

    git = Git(a.nccl)
    rels = release_tags(git, r"v(\d+)\.(\d+)\.(\d+)-(\d+)", (2, 4, 0))
    names = ["%d.%d.%d" % v for v, _ in rels]
    rows = collections.OrderedDict()
    cache = {}
    for ri, (ver, tag) in enumerate(rels):
        ts = scan_release(git, tag, cache)
        for level, fmt, path, func, via, line, ok in ts.messages():
            if not is_failure(level, fmt):
                continue
            key = ("nccl", level, fmt, path, func, via)
            ent = rows.setdefault(key, [set(), line, ok])
            ent[0].add(ri)
            ent[1] = line
        print("%s: %d rows so far" % (tag, len(rows)), file=sys.stderr)
    newest = rels[-1][1]
    commit = git.commit_of(newest)

    out_rows = []
    for key, (idx, line, ok) in rows.items():
        proj, level, fmt, path, func, via = key
        note = [] if ok else ["partial"]
        out_rows.append([proj, level, fmt, path, func, via or "-",
                         ranges(idx, names), names[min(idx)], names[max(idx)],
                         str(line), note])

    tests_src = ""
    if a.nccl_tests:
        tg = Git(a.nccl_tests)
        tnames, tseen = scan_tests(tg)
        for (fmt, path, func), (idx, line) in tseen.items():
            out_rows.append(["nccl-tests", "printf", fmt, path, func, "-",
                             ranges(idx, tnames), tnames[min(idx)],
                             tnames[max(idx)], str(line), []])
        tests_src = "; github.com/NVIDIA/nccl-tests tags v%s..v%s (%s)" % (
            tnames[0], tnames[-1], tg.commit_of("HEAD")[:12])

    if a.scan_cache:
        with open(a.scan_cache, "wb") as f:
            pickle.dump((out_rows, rels, names, commit, tests_src), f)
    return finish(a, out_rows, rels, names, commit, tests_src)


def finish(a, out_rows, rels, names, commit, tests_src):
    newest = rels[-1][1]
    fw_src = ""
    if a.frameworks:
        with open(a.frameworks, encoding="utf-8") as f:
            for line in f:
                if line.startswith("# source:"):
                    fw_src += "; " + line[len("# source:"):].strip()
                if line.startswith("#") or not line.strip():
                    continue
                c = line.rstrip("\n").split("\t")
                if len(c) < 6:
                    sys.exit("%s: expected 6 columns: %s" % (a.frameworks, line))
                # project level format file function version
                out_rows.append([c[0], c[1], c[2].replace("\\n", "\n"), c[3], c[4], "-",
                                 c[5], c[5], c[5], "0", []])

    # Expected rules.  The message alone (no header, no file) can only be
    # told by the format: "*" rows of the map, else the one rule all rows of
    # the format agree on.  A WARN line names its file, so file rows apply
    # too; an INFO line does not.  A full line whose rule differs from the
    # message's must be claimed by a hand-written rule keyed on the file.
    maprows = load_map(a.map)
    by_fmt = collections.defaultdict(list)
    for r in out_rows:
        by_fmt[(r[0], r[2])].append(r)
    msg_expect = {}
    for (proj, fmt), rs in by_fmt.items():
        exp, n = map_one(maprows, proj, None, fmt)
        if exp == "?":
            exps = set(map_one(maprows, proj, r[3], fmt)[0] for r in rs)
            exp = exps.pop() if len(exps) == 1 else "?"
        # an INFO-only format of a subsystem: its context rule
        if all(r[1] == "INFO" for r in rs) and exp in SUBSYS_INFO_OF:
            exp = SUBSYS_INFO_OF[exp]
        msg_expect[(proj, fmt)] = exp
    missing = 0
    bad = []
    for r in out_rows:
        mexp = msg_expect[(r[0], r[2])]
        if r[1] == "WARN" or r[0] != "nccl":
            exp = map_one(maprows, r[0], r[3], r[2])[0]
            if exp in SUBSYS_INFO_OF and all(x[1] == "INFO" for x in by_fmt[(r[0], r[2])]):
                exp = SUBSYS_INFO_OF[exp]
        else:
            exp = mexp
        if exp != mexp and exp.startswith("nccl.") and \
                (exp.endswith(".error") or exp.endswith(".info")):
            bad.append(r)
        r.append(exp)
        r.append(mexp)
        if fmt_regex(r[2]) is None:
            r[10].append("dynamic")
        elif mexp == "-":
            r[10].append("generic")
        missing += exp == "?" or mexp == "?"
    for r in bad:
        print("%s %s: file row maps to generated rule %s but the message to %s; "
              "use a '*' row or a file-keyed rule: %s" % (r[0], r[3], r[11], r[12], r[2]),
              file=sys.stderr)
    missing += len(bad)

    write_catalogue(a.output, out_rows, rels, names, commit, tests_src, fw_src)
    print("%d rows, %d without a mapping" % (len(out_rows), missing), file=sys.stderr)

    if a.rules:
        per_rule = collections.defaultdict(list)
        for (proj, fmt), exp in msg_expect.items():
            if exp.startswith("nccl.") and (exp.endswith(".error") or exp.endswith(".info")):
                per_rule[exp].append(fmt)
        pats = {}
        examples = {}
        rid_list = sorted(per_rule)
        levels = collections.defaultdict(set)
        for r in out_rows:
            if r[0] == "nccl":
                levels[r[2]].add(r[1])
        for rid in rid_list:
            pats[rid], _ = build_patterns(per_rule[rid], levels)
        # An INFO-only format sent to a subsystem's context rule whose text
        # the subsystem's WARN patterns also match (the same message at both
        # levels) stays with the WARN rule: rules of equal standing must not
        # both claim a line.
        moved = set()
        for rid in rid_list:
            if not rid.endswith(".info"):
                continue
            err = rid[:-5] + ".error"
            rx = [re.compile(p) for p in pats.get(err, [])]
            for fmt in list(per_rule[rid]):
                if any(x.search("NCCL INFO " + fill(fmt)) for x in rx):
                    per_rule[rid].remove(fmt)
                    per_rule[err].append(fmt)
                    moved.add(fmt)
                    msg_expect[("nccl", fmt)] = err
        # formats no pattern of their rule matches any more (their only
        # literals are frequent in healthy output, see cool()) are told by
        # their file only
        for rid in rid_list:
            rx = [re.compile(p) for p in pats[rid]]
            for fmt in list(per_rule[rid]):
                if fmt_regex(fmt) is not None and not all(
                        any(x.search("NCCL %s %s" % (lv, fill(fmt))) for x in rx)
                        for lv in levels[fmt]):
                    print("%s: no cheap literal, file only: %r" % (rid, fmt), file=sys.stderr)
                    per_rule[rid].remove(fmt)
                    moved.add(fmt)
                    msg_expect[("nccl", fmt)] = "-"
        if moved:
            for rid in rid_list:
                pats[rid], _ = build_patterns(per_rule[rid], levels)
            for r in out_rows:
                if r[0] == "nccl" and r[2] in moved:
                    r[12] = msg_expect[("nccl", r[2])]
                    if r[12] == "-":
                        if "generic" not in r[10]:
                            r[10].append("generic")
                    elif r[1] == "INFO" or r[11] not in ("nccl.lib.ibverbs", "nccl.lib.driver"):
                        r[11] = r[12]
            write_catalogue(a.output, out_rows, rels, names, commit, tests_src, fw_src)
        # a format whose text the patterns of another generated rule match
        # would be claimed by whichever comes first: report it
        comp = {rid: [re.compile(p) for p in pats[rid]] for rid in rid_list}
        for rid in rid_list:
            for fmt in per_rule[rid]:
                for other in rid_list:
                    if other != rid and any(x.search("NCCL %s %s" % (lv, fill(fmt)))
                                            for x in comp[other] for lv in levels[fmt]):
                        print("overlap: %r (%s) is matched by %s too" % (fmt, rid, other),
                              file=sys.stderr)
                        missing += 1
        for k, rid in enumerate(rid_list):
            # examples: newest formats first; WARN full lines and a bare one
            rs = [r for r in out_rows if r[12] == rid and r[11] == rid and
                  fmt_regex(r[2]) is not None]
            rs.sort(key=lambda r: (tuple(int(x) for x in r[8].split(".")), r[2]), reverse=True)
            match = []
            for r in rs:
                if len(match) >= 3:
                    break
                line = log_line(r[1], r[3], r[9], r[2])
                if line not in match and fill(r[2]) not in "".join(match):
                    match.append(line)
            if rs:
                match.append("NCCL %s %s" % (rs[-1][1], fill(rs[-1][2])))
            other = rid_list[(k + 1) % len(rid_list)]
            ors = [r for r in out_rows if r[12] == other and r[11] == other and
                   fmt_regex(r[2]) is not None]
            no_match = [log_line(r[1], r[3], r[9], r[2]) for r in ors[:1]]
            no_match.append("node1:2345:2399 [3] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC")
            examples[rid] = {"match": match, "no_match": no_match}
        left = write_rules(a.rules, pats, examples)
        empty = [rid for rid in SUBSYS_RULES if not pats.get(rid)]
        missing += len(empty)
        for rid in sorted(left):
            print("no '# generated: %s' block in %s" % (rid, a.rules), file=sys.stderr)
            missing += 1
        print("%s: %d patterns in %d rules" % (a.rules, sum(len(p) for p in pats.values()),
                                               len(pats)), file=sys.stderr)
    if missing:
        for r in out_rows:
            if r[11] == "?" or r[12] == "?":
                print("unmapped: %s %s %s: %s" % (r[0], r[3], r[1], r[2]), file=sys.stderr)
        return 1
    return 0


def rows_from_catalogue(path):
    """The scanned rows (nccl, nccl-tests) of a catalogue written by
    write_catalogue, as main() builds them, and its source header."""
    def unesc(x):
        return re.sub(r"\\(.)", lambda m: {"t": "\t", "n": "\n"}.get(m.group(1), m.group(1)), x)
    rows, names, head = [], [], None
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("# source:"):
                head = re.match(r"# source: github\.com/NVIDIA/nccl release tags (\S+)\.\.(\S+) "
                                r"\(\S+ ([0-9a-f]+)\)((?:; github\.com/NVIDIA/nccl-tests [^;]*)?)",
                                line)
            elif line.startswith("# releases:"):
                names = line.split()[2:]
            if line.startswith("#") or line.startswith("project\t") or not line.strip():
                continue
            c = [unesc(x) for x in line.rstrip("\n").split("\t")]
            if c[0] not in ("nccl", "nccl-tests"):
                continue
            note = [n for n in c[10].split(",") if n not in ("-", "dynamic", "generic")]
            rows.append(c[:10] + [note])
    if head is None or not names:
        sys.exit("%s: no '# source:' / '# releases:' header of scripts/nccl-messages.py" % path)
    rels = [(None, head.group(1)), (None, head.group(2))]
    return rows, rels, names, head.group(3), head.group(4)


def write_catalogue(output, out_rows, rels, names, commit, tests_src, fw_src):
    newest = rels[-1][1]
    out_rows.sort(key=lambda r: (r[0], r[3], r[1], r[2], r[4], r[5]))
    tmp = output + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("# NCCL failure-message catalogue, generated by scripts/nccl-messages.py; do not edit.\n")
        f.write("# source: github.com/NVIDIA/nccl release tags %s..%s (%s %s)%s%s\n" %
                (rels[0][1], newest, newest, commit[:12], tests_src, fw_src))
        f.write("# releases: %s\n" % " ".join(names))
        f.write("# WARN: every call; INFO: failure/fallback formats only (INFO_KEEP/INFO_DROP in the script).\n")
        f.write("# file: the file the log line names (macros: the file that uses the macro, see via).\n")
        f.write("# note: partial = part of the format is built at run time (shown as %s);\n")
        f.write("#       dynamic = no literal of 4+ characters: only the file:line of a full line tells it;\n")
        f.write("#       generic = the text alone says too little (expect_msg -): also told by its file only.\n")
        f.write("# expect: rule that must claim the full line; expect_msg: rule that must claim the message\n")
        f.write("#         without header and file (NCCL WARN msg, msg); data/nccl-message-map.tsv.\n")
        f.write("project\tlevel\tformat\tfile\tfunction\tvia\treleases\tfirst\tlast\tline\tnote\texpect\texpect_msg\n")
        for r in out_rows:
            cols = r[:10] + [",".join(r[10]) or "-"] + r[11:13]
            f.write("\t".join(esc(x) for x in cols) + "\n")
    os.replace(tmp, output)


SUBSYS_RULES = []  # filled by write_rules from the rules file's blocks
SUBSYS_INFO_OF = {"nccl.%s.error" % s: "nccl.%s.info" % s for s in (
    "ib", "socket", "shm", "p2p", "fabric", "topology", "plugin", "ras", "proxy",
    "host")}


if __name__ == "__main__":
    sys.exit(main())
