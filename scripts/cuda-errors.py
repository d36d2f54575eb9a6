#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The CUDA error catalogue: every cudaError_t and CUresult of a CUDA
toolkit, with its message and class, and the explain rules that claim them.

Usage:
    scripts/cuda-errors.py [--cuda /usr/local/cuda] [--classes data/cuda-error-classes.yaml]
        [--tsv data/cuda-errors.tsv] [--rules rules/cuda-errors.yaml] [--check]

Reads
  * include/driver_types.h, enum cudaError: runtime error names and numbers;
  * include/cuda.h, enum cudaError_enum (CUresult): driver error names and
    numbers, and CUDA_VERSION;
  * libcudart (lib64/libcudart.so*, dlopen'ed; no GPU needed):
    cudaGetErrorString / cudaGetErrorName for each runtime number (the text
    PyTorch, Paddle, NCCL's CUDACHECK and nccl-tests print);
  * data/cuda-error-classes.yaml: the class of every runtime error (hand
    written, by meaning; see its header).
Writes
  * data/cuda-errors.tsv: api, number, name, message, class, category, rule;
  * rules/cuda-errors.yaml: one rule per class (cuda.error.<class>) whose
    patterns hold every message of the class in each form a log shows it
    (NCCL "Cuda failure [N] 'msg'", nccl-tests "Test CUDA failure f:N 'msg'",
    PyTorch "CUDA error: msg" / "CUDA driver error: msg", old THC
    "cuda runtime error (N) : msg", Paddle "CUDA error(N), msg", and the
    error names as cupy/JAX print them), plus cuda.error.other for a form
    whose message is not catalogued (a newer CUDA).  Priorities sit below
    the hand rules of rules/cuda-shm-p2p.yaml and above cuda.other.
Examples of each rule are picked among the generated lines so that no hand
rule of higher priority claims them (checked here with Python's re over the
other rules/*.yaml; test_explain_rules checks them with the real matcher).
--check compares the outputs with the files instead of writing them
(exit 1 when they differ).  Exit 1 as well when a runtime error has no
class, a class names an unknown error, or one message maps to two classes.
"""
import argparse
import ctypes
import glob
import os
import re
import sys

import yaml

CLASS_PRIORITY = 22
UNQUOTED_END = "($|[^ a-z]| [^a-z]| at )"
OTHER_PRIORITY = 19

# (form name, pattern prefix, pattern suffix, example line with {n} {m} {name}, source)
FORMS = [
    ("nccl", "Cuda failure( [0-9]+)? '", "'",
     "node1:1:1 [0] NCCL WARN Cuda failure {n} '{m}'",
     "NCCL src/include/checks.h CUDACHECK, cudawrap.h CUCHECK (data/nccl-messages.tsv)"),
    ("nccl-nvls", "CUDA error [0-9]+ '", "'",
     "CUDA error {n} '{m}'.",
     "NCCL src/transport/nvls.cc \"CUDA error %d '%s'\" (data/nccl-messages.tsv), when a log splits the line"),
    ("nccl-tests", "CUDA failure [^ ]+ '", "'",
     "node1: Test CUDA failure common.cu:900 '{m}'",
     "nccl-tests src/common.h CUDACHECK (data/nccl-messages.tsv)"),
    ("pytorch", "CUDA (driver )?error: ", "",
     "RuntimeError: CUDA error: {m}",
     "pytorch c10/cuda/CUDAException.cpp c10_cuda_check_implementation @0e4c6cd66277; "
     "'CUDA driver error: ' + cuGetErrorString is the same idiom for the driver API"),
    ("thc", "cuda runtime error \\([0-9]+\\) : ", "",
     "RuntimeError: cuda runtime error ({n}) : {m} at /pytorch/aten/src/THC/THCGeneral.cpp:50",
     "pytorch aten/src/THC/THCGeneral.cpp __THCudaCheck _THError (PyTorch 1.x)"),
    ("thc-fail", "THCudaCheck FAIL file=[^ ]+ line=[0-9]+ error=[0-9]+ : ", "",
     "THCudaCheck FAIL file=/pytorch/aten/src/THC/THCGeneral.cpp line=50 error={n} : {m}",
     "pytorch aten/src/THC/THCGeneral.cpp __THCudaCheck fprintf (PyTorch 1.x)"),
    ("paddle", "CUDA error\\([0-9]+\\), ", "",
     "ExternalError: CUDA error({n}), {m}. ",
     "Paddle paddle/phi/core/enforce.h build_nvidia_error_msg(cudaError_t) (develop 2025)"),
]
# error names: cupy CUDARuntimeError '%s: %s' % (cudaGetErrorName, cudaGetErrorString)
# (cupy_backends/cuda/api/runtime.pyx @008224f79b85); CUresult names as JAX/XLA and
# cupy.cuda.driver print them
NAME_SOURCE = "cupy cupy_backends/cuda/api/runtime.pyx CUDARuntimeError @008224f79b85"



def die(msg):
    sys.stderr.write("cuda-errors.py: %s\n" % msg)
    sys.exit(1)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def runtime_enum(text):
    m = re.search(r"enum\s+__device_builtin__\s+cudaError\s*\{(.*?)\};", text, re.S)
    if not m:
        die("driver_types.h: enum cudaError not found")
    return [(n, int(v)) for n, v in re.findall(r"\b(cudaError\w+)\s*=\s*(\d+)", m.group(1))]


def driver_enum(text):
    m = re.search(r"typedef\s+enum\s+cudaError_enum\s*\{(.*?)\}\s*CUresult;", text, re.S)
    if not m:
        die("cuda.h: enum cudaError_enum not found")
    return [(n, int(v)) for n, v in re.findall(r"\b(CUDA_ERROR_\w+)\s*=\s*(\d+)", m.group(1))]


def cudart_strings(cuda, numbers):
    libs = sorted(glob.glob(os.path.join(cuda, "lib64", "libcudart.so.*")))
    if not libs:
        die("no libcudart.so.* under %s/lib64" % cuda)
    lib = ctypes.CDLL(libs[0])
    lib.cudaGetErrorString.restype = ctypes.c_char_p
    lib.cudaGetErrorString.argtypes = [ctypes.c_int]
    lib.cudaGetErrorName.restype = ctypes.c_char_p
    lib.cudaGetErrorName.argtypes = [ctypes.c_int]
    ver = ctypes.c_int(0)
    lib.cudaRuntimeGetVersion(ctypes.byref(ver))
    out = {}
    for n in numbers:
        out[n] = (lib.cudaGetErrorName(n).decode(), lib.cudaGetErrorString(n).decode())
    return os.path.basename(os.path.realpath(libs[0])), ver.value, out


def ere_escape(s):
    return "".join("\\" + c if c in "\\^$.|?*+()[]{}" else c for c in s)


def yq(s):
    """YAML single-quoted scalar"""
    return "'" + s.replace("'", "''") + "'"


def pcre_to_py(p):
    return p.replace("(?<", "(?P<").replace("(?P<=", "(?<=").replace("(?P<!", "(?<!")


def hand_rules(rules_dir, skip):
    """(priority, id, [compiled]) of the pattern rules of the other files"""
    out = []
    for path in sorted(glob.glob(os.path.join(rules_dir, "*.yaml"))):
        if os.path.basename(path) == skip:
            continue
        doc = yaml.safe_load(read(path)) or {}
        for r in doc.get("rules", []) or []:
            if r.get("when") or r.get("files") or not r.get("patterns"):
                continue
            pats = []
            for p in r["patterns"]:
                try:
                    pats.append(re.compile(pcre_to_py(p)))
                except re.error:
                    pass
            out.append((int(r.get("priority", 50)), r["id"], pats))
    return out


def claimed_by_hand(line, hands, prio):
    for p, rid, pats in hands:
        if p > prio and any(x.search(line) for x in pats):
            return rid
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuda", default="/usr/local/cuda")
    ap.add_argument("--classes", default="data/cuda-error-classes.yaml")
    ap.add_argument("--tsv", default="data/cuda-errors.tsv")
    ap.add_argument("--rules", default="rules/cuda-errors.yaml")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()

    dt = read(os.path.join(a.cuda, "include", "driver_types.h"))
    ch = read(os.path.join(a.cuda, "include", "cuda.h"))
    vm = re.search(r"#define\s+CUDA_VERSION\s+(\d+)", ch)
    if not vm:
        die("cuda.h: CUDA_VERSION not found")
    cv = int(vm.group(1))
    cuda_ver = "%d.%d" % (cv // 1000, (cv % 1000) // 10)
    rt = runtime_enum(dt)
    drv = driver_enum(ch)
    libname, rtver, strings = cudart_strings(a.cuda, [v for _, v in rt])
    rt_src = "CUDA %s include/driver_types.h enum cudaError; messages: %s cudaGetErrorString (runtime %d)" % (
        cuda_ver, libname, rtver)
    drv_src = "CUDA %s include/cuda.h enum cudaError_enum" % cuda_ver

    classes = yaml.safe_load(read(a.classes))["classes"]
    cls_of = {}
    drv_cls = {}
    for c in classes:
        for m in c.get("members", []):
            if m in cls_of:
                die("%s is in classes %s and %s" % (m, cls_of[m]["id"], c["id"]))
            cls_of[m] = c
        for m in c.get("driver", []) or []:
            drv_cls[m] = c
    names = {n for n, _ in rt}
    for m in cls_of:
        if m not in names:
            die("class %s names %s, not in driver_types.h" % (cls_of[m]["id"], m))
    missing = [n for n in names if n not in cls_of]
    if missing:
        die("runtime errors with no class in %s: %s" % (a.classes, ", ".join(sorted(missing))))
    for n, v in rt:
        if strings[v][0] != n:
            die("libcudart names %d %s, the header %s" % (v, strings[v][0], n))

    rows = []  # api, num, name, msg, class
    by_num = {}
    for n, v in rt:
        c = cls_of[n]
        rows.append(("runtime", v, n, strings[v][1], c))
        by_num[v] = c
    for n, v in drv:
        c = drv_cls.get(n) or by_num.get(v)
        if c is None:
            die("driver error %s = %d: no runtime error with its number and no `driver:` class" % (n, v))
        rows.append(("driver", v, n, "", c))

    msg_cls = {}
    for api, v, n, msg, c in rows:
        if msg and msg_cls.setdefault(msg, c["id"]) != c["id"]:
            die("message '%s' is in classes %s and %s" % (msg, msg_cls[msg], c["id"]))

    # ---- TSV
    t = []
    t.append("# CUDA errors: every cudaError_t (runtime) and CUresult (driver) with its message")
    t.append("# and the class / explain rule that claims it.  Generated by scripts/cuda-errors.py")
    t.append("# from the CUDA headers, libcudart and data/cuda-error-classes.yaml: do not edit.")
    t.append("# source: " + rt_src)
    t.append("# source: " + drv_src + " (driver messages need libcuda's")
    t.append("#   cuGetErrorString: '-'; a driver error takes the class of the runtime error with")
    t.append("#   its number unless the classes file names it)")
    t.append("# Columns: api number name message class category rule refined_by")
    t.append("#   (refined_by: hand rules that may claim it instead, ',' separated, or '-')")
    for api, v, n, msg, c in rows:
        t.append("\t".join([api, str(v), n, msg or "-", c["id"], c["category"],
                            "cuda.error." + c["id"], ",".join(c.get("refined_by") or []) or "-"]))
    tsv = "\n".join(t) + "\n"

    # ---- rules
    hands = hand_rules(os.path.dirname(a.rules) or ".", os.path.basename(a.rules))
    y = []
    y.append("# CUDA errors by class: GENERATED by scripts/cuda-errors.py from the CUDA headers,")
    y.append("# libcudart and data/cuda-error-classes.yaml; do not edit (edit the classes and")
    y.append("# rerun).  The complete fallback for CUDA errors below the hand rules of")
    y.append("# cuda-shm-p2p.yaml (priority %d; cuda.error.other %d)." % (CLASS_PRIORITY, OTHER_PRIORITY))
    y.append("# source: " + rt_src)
    y.append("# source: " + drv_src)
    for f in FORMS:
        y.append("# form %s: %s" % (f[0], f[4]))
    y.append("# names: " + NAME_SOURCE)
    y.append("rules:")
    ids = [c["id"] for c in classes]
    for c in classes:
        mem = [r for r in rows if r[4] is c]
        msgs = []
        for r in mem:
            if r[3] and r[3] not in msgs:
                msgs.append(r[3])
        alt = "|".join(ere_escape(m) for m in msgs)
        # an unquoted message ends the line or is followed by punctuation or
        # " at file": "operation not permitted" must not claim "operation not
        # permitted when stream is capturing" (another class)
        pats = ["%s(?<err>%s)%s" % (pre, alt, post or UNQUOTED_END) for _, pre, post, _, _ in FORMS]
        name_alt = []
        for r in mem:
            tail = "([^A-Za-z]|$)" if r[0] == "runtime" else "([^A-Z_]|$)"
            name_alt.append(r[2] + tail)
        # one pattern per 12 names keeps each regex short
        for i in range(0, len(name_alt), 12):
            pats.append("|".join(name_alt[i:i + 12]))
        # examples: lines no higher-priority hand rule claims
        cands = []
        for r in mem:
            if r[0] != "runtime":
                continue
            for fname, _, _, ex, _ in FORMS:
                cands.append(ex.format(n=r[1], m=r[3], name=r[2]))
            cands.append("cupy_backends.cuda.api.runtime.CUDARuntimeError: %s: %s" % (r[2], r[3]))
        for r in mem:
            if r[0] == "runtime":
                cands.append("cudaMemcpyAsync returned %s" % r[2])
        for r in mem:
            if r[0] == "driver":
                cands.append("jaxlib.xla_extension.XlaRuntimeError: INTERNAL: %s" % r[2])
        match = [x for x in cands if not claimed_by_hand(x, hands, CLASS_PRIORITY)][:4]
        if not match:
            die("class %s: every example line is claimed by a hand rule" % c["id"])
        other = next(k for k in classes if k is not c)
        orow = next(r for r in rows if r[4] is other and r[0] == "runtime")
        nomatch = ["RuntimeError: CUDA error: %s" % orow[3],
                   "note: %s" % (mem[0][3] or mem[0][2].lower())]
        y.append("")
        y.append("  - id: cuda.error.%s" % c["id"])
        y.append("    category: %s" % c["category"])
        y.append("    severity: error")
        y.append("    priority: %d" % CLASS_PRIORITY)
        y.append("    title: %s" % yq(c["title"].replace("{err}", "{err|see the line}")))
        y.append("    patterns:")
        for p in pats:
            y.append("      - " + yq(p))
        y.append("    cause: >")
        y.extend("      " + l for l in wrap(c["cause"]))
        y.append("    fix: >")
        y.extend("      " + l for l in wrap(c["fix"]))
        if c.get("env"):
            y.append("    env:")
            for k, v in c["env"].items():
                y.append("      %s: %s" % (k, yq(str(v))))
        y.append('    nccl_versions: "any"')
        y.append("    source: %s" % yq("%s; %s; class: data/cuda-error-classes.yaml (%s)" % (
            rt_src, drv_src, ", ".join(r[2] for r in mem))))
        y.append("    examples:")
        y.append("      match:")
        y.extend("        - " + yq(x) for x in match)
        y.append("      no_match:")
        y.extend("        - " + yq(x) for x in nomatch)
    # fallback for a message this CUDA does not have
    y.append("")
    y.append("  - id: cuda.error.other")
    y.append("    category: gpu.cuda")
    y.append("    severity: error")
    y.append("    priority: %d" % OTHER_PRIORITY)
    y.append("    title: 'A CUDA call failed: {err|see the line}'")
    y.append("    patterns:")
    y.append("      - " + yq("CUDA (driver )?error: (?<err>[^ ].*)"))
    y.append("      - " + yq("CUDA error\\([0-9]+\\), (?<err>[^ ].*)"))
    y.append("      - " + yq("cuda runtime error \\([0-9]+\\) : (?<err>[^ ].*)"))
    y.append("      - " + yq("THCudaCheck FAIL file=[^ ]+ line=[0-9]+ error=[0-9]+ : (?<err>[^ ].*)"))
    y.append("      - " + yq("cudaError[A-Z][A-Za-z]+|CUDA_ERROR_[A-Z][A-Z_]+"))
    y.append("    cause: >")
    y.append("      A CUDA call failed with an error this catalogue (CUDA %s) does not list, probably from" % cuda_ver)
    y.append("      a newer CUDA; the message names it.")
    y.append("    fix: >")
    y.append("      Look the error up in the CUDA runtime API documentation of the CUDA version in use.")
    y.append('    nccl_versions: "any"')
    y.append("    source: %s" % yq(rt_src))
    y.append("    examples:")
    y.append("      match:")
    y.append("        - " + yq("RuntimeError: CUDA error: a new error text of a future CUDA"))
    y.append("        - " + yq("ExternalError: CUDA error(9999), a new error text of a future CUDA. "))
    y.append("      no_match:")
    y.append("        - " + yq("RuntimeError: CUDA error: out of memory"))
    rules_text = "\n".join(y) + "\n"
    assert len(ids) == len(set(ids))

    outs = [(a.tsv, tsv), (a.rules, rules_text)]
    st = 0
    for path, text in outs:
        if a.check:
            old = read(path) if os.path.exists(path) else ""
            if old != text:
                sys.stderr.write("%s is not up to date: run scripts/cuda-errors.py\n" % path)
                st = 1
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
    nrt = sum(1 for r in rows if r[0] == "runtime")
    print("CUDA %s: %d runtime errors (%d messages), %d driver errors, %d classes" % (
        cuda_ver, nrt, len(msg_cls), len(rows) - nrt, len(classes)))
    return st


def wrap(text, width=92):
    words = " ".join(text.split()).split(" ")
    lines, cur = [], ""
    for w in words:
        if cur and len(cur) + 1 + len(w) > width:
            lines.append(cur)
            cur = w
        else:
            cur = (cur + " " + w) if cur else w
    if cur:
        lines.append(cur)
    return lines


if __name__ == "__main__":
    sys.exit(main())
