#!/bin/sh
# nccl-doctor explain: inputs (files, stdin, .gz, directories, CRLF,
# launcher prefixes, garbage), exit statuses, JSON, --facts, --rules errors.
set -u
BIN=${NCD_BIN:?}
T=$(mktemp -d "${TMPDIR:-/tmp}/t0300.XXXXXX")
trap 'rm -rf "$T"' EXIT
fails=0
n=0
ok()   { n=$((n + 1)); echo "ok $n - $1"; }
bad()  { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; }
check() { desc=$1; shift; if "$@"; then ok "$desc"; else bad "$desc"; fi; }
run()  { "$BIN" explain "$@" >"$T/out" 2>"$T/err"; echo $? >"$T/rc"; }
rc()   { [ "$(cat "$T/rc")" = "$1" ]; }
has()  { grep -q -- "$1" "$T/out"; }
has_err() { grep -q -- "$1" "$T/err"; }

cat >"$T/shm.log" <<'L'
node1:10:10 [0] NCCL INFO NCCL version 2.19.3+cuda12.3
node1:10:10 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>

node1:10:12 [0] misc/shmutils.cc:60 NCCL WARN Error: failed to extend /dev/shm/nccl-0Yq6zM to 9637892 bytes, error: No space left on device (28)
node1:10:12 [0] NCCL INFO transport/shm.cc:100 -> 2
L
run "$T/shm.log"
check "shm log: exit 2" rc 2
check "shm log: root cause heading" has "Root cause"
check "shm log: category and file:line evidence" has "sys.shm"
check "shm log: evidence names file:line" has "shm.log:4:"
check "shm log: fix mentions --shm-size" has "shm-size"
check "points to nccl-doctor check" has "nccl-doctor check"

# stdin, CRLF and Open MPI prefixes
sed 's/^/[1,0]<stdout>:/; s/$/\r/' "$T/shm.log" | "$BIN" explain >"$T/out" 2>"$T/err"
echo $? >"$T/rc"
check "stdin with CRLF and [1,0]<stdout>: prefixes: exit 2" rc 2
check "stdin: same root cause" has "/dev/shm"
printf 'x' | "$BIN" explain - >/dev/null 2>&1
check "explain - reads stdin" [ $? -eq 0 ]

# gzip and directories of per-rank logs
if command -v gzip >/dev/null 2>&1; then
    gzip -c "$T/shm.log" >"$T/shm.log.gz"
    run "$T/shm.log.gz"
    check ".gz input: exit 2" rc 2
    check ".gz input: root cause" has "sys.shm"
    printf 'garbage that claims to be gzip' | gzip -c | head -c 20 >"$T/trunc.gz"
    run "$T/trunc.gz"
    check "truncated .gz: error message, no crash" has_err "trunc.gz"
fi
mkdir -p "$T/ranks"
cat >"$T/ranks/rank10.log" <<'L'
[2026-01-01 10:00:30] node2:20:21 [0] misc/socket.cc:538 NCCL WARN socketProgress: Connection closed by remote peer node1<55426>
L
cat >"$T/ranks/rank2.log" <<'L'
[2026-01-01 10:00:05] node1:10:11 [0] misc/ibvwrap.cc:300 NCCL WARN Call to ibv_modify_qp failed with error Connection timed out
L
run "$T/ranks"
check "directory: exit 2" rc 2
first=$(grep -m1 -n "\[net\." "$T/out" | cut -d: -f1)
second=$(grep -n "Connection closed" "$T/out" | head -1 | cut -d: -f1)
check "directory: earliest WARN (rank2) is the root cause" has "ibv_modify_qp"
check "directory: connection closed shown after it" [ -n "$first" ] && [ -n "$second" ] && [ "$first" -lt "$second" ]

# healthy log: exit 0
cat >"$T/ok.log" <<'L'
node1:10:10 [0] NCCL INFO NCCL version 2.21.5+cuda12.4
node1:10:10 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>
node1:10:11 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC
node1:10:11 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1b000 commId 0x2 - Init COMPLETE
L
run "$T/ok.log"
check "healthy log: exit 0" rc 0
run --facts "$T/ok.log"
check "--facts shows the version" has "2.21.5"
check "--facts shows the bootstrap interface" has "eth0"

# JSON
run --json "$T/shm.log"
check "--json: exit 2" rc 2
if command -v python3 >/dev/null 2>&1; then
    check "--json: envelope, findings, recommended_env, facts" python3 -c '
import json,sys
d=json.load(open(sys.argv[1]))
assert d["tool"]=="nccl-doctor" and d["schema_version"]==1
assert d["findings"][0]["category"]=="sys.shm" and d["findings"][0]["role"]=="root"
assert "recommended_env" in d and "facts" in d
assert d["facts"]["nccl_versions"]==["2.19.3"]
' "$T/out"
fi

# garbage never crashes
head -c 300000 /dev/urandom >"$T/garbage.bin" 2>/dev/null || dd if=/dev/urandom of="$T/garbage.bin" bs=1000 count=300 2>/dev/null
run "$T/garbage.bin"
check "binary garbage: no crash (exit 0 or 2)" sh -c "[ $(cat "$T/rc") -eq 0 ] || [ $(cat "$T/rc") -eq 2 ]"

# tool failures: exit 3
run "$T/does-not-exist.log"
check "missing file: exit 3" rc 3
check "missing file: named on stderr" has_err "does-not-exist.log"
run --no-such-option
check "bad option: exit 3" rc 3
mkdir -p "$T/rules"
printf 'rules:\n  - id: x\n    title: [oops\n' >"$T/rules/broken.yaml"
run --rules "$T/rules" "$T/ok.log"
check "malformed --rules YAML: exit 3" rc 3
check "malformed --rules YAML: names file and line" has_err "broken.yaml:4:"
cat >"$T/rules/site.yaml" <<'L'
rules:
  - id: site.frobnicator
    category: net.ib
    severity: error
    title: "Our frobnicator broke"
    patterns: ['frobnicator (?<unit>[0-9]+) is down']
    cause: "Unit {unit} is down."
    fix: "Call the fabric team."
    nccl_versions: any
    source: "site runbook"
    examples: {match: ['frobnicator 3 is down'], no_match: ['frobnicator ok']}
L
rm "$T/rules/broken.yaml"
echo "frobnicator 7 is down" >"$T/site.log"
run --rules "$T/rules" "$T/site.log"
check "--rules: user rule found" has "Unit 7 is down"
run --rules "$T/rules" --check-rules
check "--check-rules with user rules: exit 0" rc 0

# a case whose log alone cannot tell: general diagnosis + check
echo "fail to new train...e= NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:272, unhanled system error" >"$T/general.log"
run "$T/general.log"
check "general diagnosis: only the framework summary" has "Most likely cause"
check "general diagnosis: says to re-run with NCCL_DEBUG=INFO" has "NCCL_DEBUG=INFO"
check "general diagnosis: points to nccl-doctor check" has "nccl-doctor check"

echo "1..$n"
[ $fails -eq 0 ]
