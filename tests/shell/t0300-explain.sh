#!/bin/sh
# nccl-doctor explain: inputs (files, stdin, .gz, directories, CRLF,
# launcher prefixes, garbage), ranking across ranks, exit statuses, JSON,
# --facts, --rules (user rules, malformed YAML), general diagnoses.
. "$(dirname "$0")/lib.sh"
command -v jq >/dev/null || skip_all "jq not installed"
X="$NCD_BIN explain"

cat >"$TEST_TMP/shm.log" <<'L'
node1:10:10 [0] NCCL INFO NCCL version 2.19.3+cuda12.3
node1:10:10 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>

node1:10:12 [0] misc/shmutils.cc:60 NCCL WARN Error: failed to extend /dev/shm/nccl-0Yq6zM to 9637892 bytes, error: No space left on device (28)
node1:10:12 [0] NCCL INFO transport/shm.cc:100 -> 2
L
cat >"$TEST_TMP/ok.log" <<'L'
node1:10:10 [0] NCCL INFO NCCL version 2.21.5+cuda12.4
node1:10:10 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>
node1:10:11 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC
node1:10:11 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1b000 commId 0x2 - Init COMPLETE
L

test_expect_success 'a WARN: root cause, file:line evidence, fix, exit 2' "
    st=0; $X shm.log >out || st=\$?; test \$st -eq 2 &&
    grep -q '^Root cause' out && grep -q 'sys.shm' out &&
    grep -q 'shm.log:4: ' out && grep -q 'shm-size' out &&
    grep -q 'nccl-doctor check' out
"
test_expect_success 'stdin, CRLF, Open MPI and torchrun prefixes, ANSI colour' "
    sed 's/^/[1,0]<stdout>:/; s/\$/\r/' shm.log >crlf.log &&
    printf '\033[1;31m[rank3]:node1:10:12 [0] x.cc:1 NCCL WARN Cuda failure '\''out of memory'\''\033[0m\r\n' >>crlf.log &&
    st=0; $X <crlf.log >out || st=\$?; test \$st -eq 2 &&
    grep -q '/dev/shm' out && grep -q 'out of memory' out &&
    st=0; $X - <crlf.log >out2 || st=\$?; test \$st -eq 2
"
test_expect_success '.gz input, and a truncated .gz reports and keeps going' "
    command -v gzip >/dev/null || { echo \"gzip not installed\"; exit 77; }
    gzip -c shm.log >shm.log.gz &&
    st=0; $X shm.log.gz >out || st=\$?; test \$st -eq 2 && grep -q sys.shm out &&
    head -c 60 shm.log.gz >trunc.gz &&
    st=0; $X trunc.gz >out 2>err || st=\$?; test \$st -eq 3 &&
    grep -q 'trunc.gz: .*truncated' err
"
test_expect_success 'directory of per-rank logs: earliest WARN first, consequences after' "
    mkdir ranks &&
    echo '[2026-01-01 10:00:30] node2:20:21 [0] misc/socket.cc:538 NCCL WARN socketProgress: Connection closed by remote peer node1<55426>' >ranks/rank10.log &&
    echo '[2026-01-01 10:00:05] node1:10:11 [0] misc/ibvwrap.cc:300 NCCL WARN Call to ibv_modify_qp failed with error Connection timed out' >ranks/rank2.log &&
    st=0; $X ranks >out || st=\$?; test \$st -eq 2 &&
    a=\$(grep -n ibv_modify_qp out | head -1 | cut -d: -f1) &&
    b=\$(grep -n 'Connection closed' out | head -1 | cut -d: -f1) &&
    test \"\$a\" -lt \"\$b\" && grep -q 'ranks/rank2.log:1:' out &&
    $X --json ranks | jq -e '.findings[0].first_seen.time == \"2026-01-01T10:00:05\"'
"
test_expect_success 'nested directories, .gz members, natural rank order' "
    command -v gzip >/dev/null || { echo \"gzip not installed\"; exit 77; }
    mkdir -p job/node1 job/node2 &&
    printf '%s\n' 'node2:20:21 [0] misc/socket.cc:538 NCCL WARN socketProgress: Connection closed by remote peer node1<5>' >job/node2/rank10.log &&
    printf '%s\n' 'node1:10:11 [0] x.cc:1 NCCL WARN Cuda failure '\''out of memory'\'' ' | gzip -c >job/node1/rank2.log.gz &&
    st=0; $X --json job >j || st=\$?; test \$st -eq 2 &&
    jq -e '.findings[0].id == \"cuda.out-of-memory\" and .input.inputs == 2' j &&
    jq -e '.findings[0].evidence[0] | startswith(\"job/node1/rank2.log.gz:1:\")' j
"
test_expect_success 'healthy log: exit 0, no finding (nothing found is not a category); --facts summary' "
    $X ok.log >out && grep -q '^No known failure' out &&
    $X --json ok.log >j && jq -e '.findings == []' j &&
    $X --facts ok.log >facts &&
    grep -q 2.21.5 facts && grep -q eth0 facts && grep -q 'P2P 1' facts
"
test_expect_success '--json: envelope, findings with roles, recommended_env, facts' "
    st=0; $X --json shm.log >j || st=\$?; test \$st -eq 2 &&
    jq -e '.tool == \"nccl-doctor\" and .schema_version == 1 and (.host|type) == \"string\"' j &&
    jq -e '.findings[0].category == \"sys.shm\" and .findings[0].role == \"root\"' j &&
    jq -e '(.recommended_env|type) == \"object\" and .facts.nccl_versions == [\"2.19.3\"]' j &&
    jq -e 'all(.findings[]; has(\"id\") and has(\"evidence\") and has(\"cause\") and has(\"fix\") and has(\"env\") and has(\"first_seen\"))' j
"
test_expect_success 'docker0 bootstrap + connect time-out: wrong interface, NCCL_SOCKET_IFNAME' "
    printf '%s\n' 'node1:1:1 [0] NCCL INFO Bootstrap : Using docker0:172.17.0.1<0>' \
        'node1:1:2 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.0.0.2<5000> failed : Connection timed out' \
        'node2:2:2 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>' >docker.log &&
    st=0; $X --json docker.log >j || st=\$?; test \$st -eq 2 &&
    jq -e '.findings[0].id == \"net.iface-wrong-connect\" and .recommended_env.NCCL_SOCKET_IFNAME == \"eth0\"' j
"
test_expect_success 'binary garbage and a 1 MB line do not crash' "
    head -c 300000 /dev/urandom >garbage.bin &&
    st=0; $X garbage.bin >/dev/null || st=\$?; test \$st -eq 0 -o \$st -eq 2 &&
    head -c 1000000 /dev/zero | tr '\\\\0' x >long.log && echo >>long.log &&
    cat shm.log >>long.log &&
    st=0; $X long.log >out || st=\$?; test \$st -eq 2 && grep -q 'long.log:5:' out
"
test_expect_success 'tool failures exit 3: missing file, bad option, no input' "
    st=0; $X does-not-exist.log 2>err || st=\$?; test \$st -eq 3 && grep -q does-not-exist err &&
    st=0; $X --no-such-option 2>/dev/null || st=\$?; test \$st -eq 3
"
test_expect_success 'malformed --rules YAML names the file and line, exit 3' "
    mkdir rules && printf 'rules:\n  - id: x\n    title: [oops\n' >rules/broken.yaml &&
    st=0; $X --rules rules ok.log 2>err || st=\$?; test \$st -eq 3 &&
    grep -q 'broken.yaml:4:' err
"
test_expect_success '--rules adds a site rule; --check-rules validates it' "
    mkdir site && cat >site/site.yaml <<'Y'
rules:
  - id: site.frobnicator
    category: net.ib
    severity: error
    title: \"Our frobnicator broke\"
    patterns: ['frobnicator (?<unit>[0-9]+) is down']
    cause: \"Unit {unit} is down.\"
    fix: \"Call the fabric team.\"
    nccl_versions: any
    source: \"site runbook\"
    examples: {match: ['frobnicator 3 is down'], no_match: ['frobnicator ok']}
Y
    echo 'frobnicator 7 is down' >site.log &&
    st=0; $X --rules site site.log >out || st=\$?; test \$st -eq 2 &&
    grep -q 'Unit 7 is down' out &&
    $X --rules site --check-rules >chk && grep -q ', 0 problems' chk &&
    $X --rules site --check-rules --json >chk.json && jq -e '.problems == 0 and .checked > 100' chk.json &&
    $X --rules site --list-rules --json >list.json &&
    jq -e '[.rules[] | select(.file | endswith(\"site/site.yaml\"))] | length == 1' list.json &&
    st=0; $X --list-rules shm.log >out 2>err || st=\$?; test \$st -eq 3 && grep -q 'read the rules, not logs' err &&
    st=0; $X --dump-patterns --json >out 2>err || st=\$?; test \$st -eq 3
"
test_expect_success 'c10d connect failure after a getaddrinfo error: name resolution first, the wrapper after' "
    printf '%s\n' '[W1008 23:40:22.836678340 socket.cpp:767] [c10d] The client socket has failed to connect to [node1.internal]:50745 (errno: 22 - Invalid argument).' \
        '[W1008 23:40:22.781961348 socket.cpp:767] [c10d] The IPv6 network addresses of (node1.internal, 50745) cannot be retrieved (gai error: -2 - Name or service not known).' \
        'torch.distributed.DistNetworkError: The client socket has timed out after 900s while trying to connect to (node1.internal, 50745).' >gai.log &&
    st=0; $X --json gai.log >j || st=\$?; test \$st -eq 2 &&
    jq -e '.findings[0].id == \"net.name-resolution\" and .findings[0].category == \"net.unreachable\"' j &&
    jq -e '[.findings[].id] | index(\"pytorch.store-timeout\") > 0' j
"
test_expect_success 'Gloo: loopback fallback first, connectFullMesh after it; the peer-closed trail is a consequence' "
    printf '%s\n' '[rank8]:[E ProcessGroupGloo.cpp:144] Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error' \
        '[rank8]:[W ProcessGroupGloo.cpp:721] Warning: Unable to resolve hostname to a (local) address. Using the loopback address as fallback. Manually set the network interface to bind to with GLOO_SOCKET_IFNAME. (function operator())' \
        '[rank1]:[W901 07:40:19.968570826 TCPStore.cpp:125] [c10d] recvValue failed on SocketImpl(fd=64, addr=[localhost]:35986, remote=[localhost]:45489): Failed to recv, got 0 bytes. Connection was likely closed. Did the remote server shutdown or crash?' >gloo.log &&
    st=0; $X --json gloo.log >j || st=\$?; test \$st -eq 2 &&
    jq -e '.findings[0].id == \"gloo.loopback-fallback\" and .findings[0].category == \"net.iface-choice\"' j &&
    jq -e '.findings[] | select(.id == \"gloo.connect-failed\") | .role == \"wrapper\"' j &&
    jq -e '.findings[] | select(.id == \"gloo.connect-failed\") | .category == \"net.iface-choice\"' j &&
    jq -e '.findings[] | select(.id == \"pytorch.store-connection-closed\") | .role == \"consequence\"' j
"
test_expect_success 'only a framework summary: general diagnosis pointing to check' "
    echo 'RuntimeError: NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:272, unhandled system error' >general.log &&
    st=0; $X general.log >out || st=\$?; test \$st -eq 2 &&
    grep -q 'Most likely cause' out && grep -q 'NCCL_DEBUG=INFO' out &&
    grep -q 'nccl-doctor check' out
"
# A progress bar redraws itself with '\r' and never ends its line, so the
# next message sticks to it; past 8192 bytes (NCD_LOG_MAX_LINE) only the
# line's start used to be read, and the failure was missed.
test_expect_success 'a failure stuck to a long progress bar (and to 9000 bytes of text) is read' "
    wd='[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600042 milliseconds before timing out.' &&
    i=0; : >bar.log; while [ \$i -lt 200 ]; do printf '\\rTraining:  %d%%|#####     | %d/10000 [10:00<10:00, 1.50it/s]' \$((i / 100)) \$i >>bar.log; i=\$((i + 1)); done &&
    printf '%s\\n' \"\$wd\" >>bar.log && test \$(wc -c <bar.log) -gt 9000 &&
    st=0; $X --json bar.log >j || st=\$?; test \$st -eq 2 &&
    jq -e '.findings[0].id == \"pytorch.watchdog-timeout\" and .input.lines == 1 and .input.long_lines == 1' j &&
    $X bar.log >out; grep -q '1 line longer than 8192 bytes' out &&
    { head -c 9000 /dev/zero | tr '\\0' z; printf ' %s\\r\\n' \"\$wd\"; } >text.log &&
    st=0; $X --json text.log >j || st=\$?; test \$st -eq 2 &&
    jq -e '.findings[0].id == \"pytorch.watchdog-timeout\"' j &&
    { head -c 20000 /dev/zero | tr '\\0' z; echo; } >plain.log &&
    st=0; $X --json plain.log >j || st=\$?; test \$st -eq 0 &&
    jq -e '.findings == [] and .input.long_lines == 1' j
"
test_expect_success 'a program, a core file or a log in a format explain does not open is not read as text' "
    cp $NCD_BIN prog && printf '\\375\\067zXZ\\000rest' >l.xz && printf 'BZh91AY&SY' >l.bz2 &&
    st=0; $X prog >out 2>err || st=\$?; test \$st -eq 3 &&
    grep -q 'prog: an ELF binary (program, library or core file), not a log' err &&
    ! grep -q 'Root cause' out &&
    st=0; $X l.xz >out 2>err || st=\$?; test \$st -eq 3 &&
    grep -q \"l.xz: xz-compressed, not read (decompress it first: xzcat 'l.xz' | nccl-doctor explain -)\" err &&
    mkdir d && mv prog l.bz2 d/ && cp shm.log d/ &&
    st=0; $X --json d >j 2>err || st=\$?; test \$st -eq 2 &&
    grep -q 'd/l.bz2: bzip2-compressed, not read (decompress it first: bzcat' err &&
    jq -e '.input.inputs == 1 and .findings[0].category == \"sys.shm\"' j &&
    jq -e '.input.problems | length == 2 and (.[0] | test(\"l.bz2: bzip2\")) and (.[1] | test(\"prog: an ELF\"))' j
"
test_expect_success 'corpus: every log_sufficient case names the confirmed cause first' "
    C=\$NCD_SHARED_DIR/corpus/cases; test -d \"\$C\" || { echo \"no shared corpus at \$C\"; exit 77; }
    for d in \$C/*/; do
        jq -e '.log_sufficient' \$d/case.json >/dev/null || continue
        st=0; $X --json \$d/log.txt >r.json || st=\$?; test \$st -eq 2 || { echo \"\$d exit \$st\"; exit 1; }
        jq -e --slurpfile c \$d/case.json '
            (.findings[0].category as \$f | \$c[0].expect_categories | index(\$f)) != null and
            ((\$c[0].env_fix | keys) - (.recommended_env | keys) == [])' r.json >/dev/null ||
            { echo \"\$d: \$(jq -c '[.findings[0].id, .recommended_env]' r.json)\"; exit 1; }
    done
"
test_expect_success 'corpus: the other cases get a diagnosis and point to check' "
    C=\$NCD_SHARED_DIR/corpus/cases; test -d \"\$C\" || { echo \"no shared corpus at \$C\"; exit 77; }
    for d in \$C/*/; do
        jq -e '.log_sufficient | not' \$d/case.json >/dev/null || continue
        st=0; $X \$d/log.txt >out || st=\$?; test \$st -le 2 &&
        grep -q 'nccl-doctor check' out && grep -q '^  [^ ]' out || { echo \$d; exit 1; }
    done
"
test_done
