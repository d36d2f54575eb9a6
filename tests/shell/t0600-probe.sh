#!/bin/sh
# probe on one host over loopback (-np), its JSON, usage errors, and the
# rendezvous failure message.  Multi-host behaviour: tests/netns/.
. "$(dirname "$0")/lib.sh"
command -v jq >/dev/null || skip_all "jq not installed"
P="env NCCL_SOCKET_IFNAME=lo $NCD_BIN probe"

test_expect_success '-np 3 over lo: every pair ok, exit 0, envelope' "
    $P -np 3 --json --burst 64K >p.json &&
    jq -e '.tool == \"nccl-doctor\" and .schema_version == 1' p.json &&
    jq -e '.ranks | length == 3' p.json &&
    jq -e '[.ranks[].nccl_interface] == [\"lo\",\"lo\",\"lo\"]' p.json &&
    jq -e '[.rank_matrix[][] | select(. != null) | .status] == [\"ok\",\"ok\",\"ok\",\"ok\",\"ok\",\"ok\"]' p.json &&
    jq -e '[.rank_matrix[][] | select(. != null) | .bw_gbps > 0 and .rtt_us > 0] | all' p.json &&
    jq -e '.matrix.hosts | length == 1' p.json &&
    jq -e '[.findings[] | select(.id == \"net.unreachable.none\")] | length == 1' p.json &&
    jq -e '.recommended_env | type == \"object\"' p.json
"
test_expect_success 'text report: rank table, matrix, pairs' "
    $P -np 2 --no-color --burst 0 --no-mtu >p.txt &&
    grep -q 'Probe: 2 ranks on 1 host' p.txt &&
    grep -q 'Reachability on NCCL' p.txt &&
    grep -q '0(.*) -> 1(.*) 127.0.0.1:[0-9]*  ok' p.txt
"
test_expect_success 'torchrun-style variables (RANK, WORLD_SIZE, MASTER_ADDR/PORT)' "
    port=\$(python3 -c 'import socket; s=socket.socket(); s.bind((\"127.0.0.1\",0)); print(s.getsockname()[1])')
    env RANK=1 LOCAL_RANK=1 WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=\$port $P --burst 0 --json >r1.json 2>r1.err &
    pid=\$!
    env RANK=0 LOCAL_RANK=0 WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=\$port $P --burst 0 --json >r0.json &&
    wait \$pid &&
    jq -e '.launcher == \"torchrun\" and (.ranks | length == 2)' r0.json &&
    jq -e '.rank_matrix[1][0].status == \"ok\"' r0.json &&
    test ! -s r1.json
"
test_expect_success '-np with --rendezvous is refused' "
    st=0; $P -np 2 --rendezvous 127.0.0.1:1 2>e.txt || st=\$?
    test \$st -eq 3 && grep -q 'give one of them' e.txt
"
test_expect_success 'a single rank works (nothing to connect)' "
    $P --json >p1.json &&
    jq -e '.ranks | length == 1' p1.json
"
test_expect_success 'bad options: exit 3 with a message' "
    st=0; $P --timeout 0 2>e.txt || st=\$?; test \$st -eq 3 && grep -q timeout e.txt &&
    st=0; $P --burst lots 2>e.txt || st=\$?; test \$st -eq 3 && grep -q burst e.txt &&
    st=0; $P -np 0 2>e.txt || st=\$?; test \$st -eq 3 &&
    st=0; $P --rendezvous nocolon 2>e.txt || st=\$?; test \$st -eq 3 && grep -q HOST:PORT e.txt &&
    st=0; $P --sysroot / --sysroot \"$NCD_SOURCE_DIR/tests/fixtures/sysroots/laptop-wifi\" 2>e.txt || st=\$?; test \$st -eq 3
"
test_expect_success 'WORLD_SIZE/RANK garbage is refused' "
    st=0; env WORLD_SIZE=two RANK=0 $P --rendezvous 127.0.0.1:1 2>e.txt || st=\$?
    test \$st -eq 3 && grep -q WORLD_SIZE e.txt
"
test_expect_success 'a rank that cannot reach the rendezvous names the address and the interface' "
    port=\$(python3 -c 'import socket; s=socket.socket(); s.bind((\"127.0.0.1\",0)); print(s.getsockname()[1])')
    st=0; env WORLD_SIZE=2 RANK=1 $P --rendezvous 127.0.0.1:\$port --rendezvous-timeout 2 2>e.txt || st=\$?
    test \$st -eq 3 &&
    grep -q \"process 1 cannot reach the rendezvous at 127.0.0.1:\$port\" e.txt &&
    grep -q 'from local interface lo (address 127.0.0.1)' e.txt
"
test_expect_success 'explain recognises that message' "
    $NCD_BIN explain --json e.txt >x.json || true
    jq -e '[.findings[] | select(.id == \"ncd.rendezvous.unreachable\")] | length == 1' x.json
"
test_expect_success 'a rank killed during the probe: the others stop naming it' "
    env NCCL_SOCKET_IFNAME=lo $NCD_BIN probe -np 3 --burst 1G --no-mtu >k.out 2>k.err &
    pp=\$!
    i=0; while [ \$(pgrep -P \$pp | wc -l) -lt 3 ] && [ \$i -lt 100 ]; do i=\$((i+1)); sleep 0.1; done
    sleep 0.5
    victim=\$(pgrep -P \$pp | sort -n | tail -1)
    test -n \"\$victim\" && kill -9 \$victim
    st=0; wait \$pp || st=\$?
    test \$st -eq 3 &&
    grep -q 'was killed by signal 9' k.err &&
    grep -Eq 'rank [01] .*stopped: .*process 2' k.err
"
test_done
