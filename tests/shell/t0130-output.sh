#!/bin/sh
# Output a new user hit (issue 13 item 6, issue 14 item 6): ifaces columns,
# env profiles and formats, explain --facts host count, topo --topology of
# a non-XML file, probe alone, gather's unreadable and skipped files and
# masked credentials, file names sanitised in error messages.
. "$(dirname "$0")/lib.sh"
FIX=$NCD_SOURCE_DIR/tests/fixtures/sysroots
VM=$FIX/cloud-vm-ens5-docker
ESC=$(printf '\033')

test_expect_success 'ifaces text: MTU, RX and TX in their own columns' "
    $NCD_BIN ifaces --sysroot $VM >o &&
    head -1 o | grep -q 'speed  *mtu  *rx  *tx  *addresses' &&
    grep -q '^  1  *ens5 .* 9001  *81.2 GB  *12.3 GB  *10.0.1.23/24' o
"
test_expect_success 'env --format docker: continued lines, no dangling backslash' "
    $NCD_BIN env --sysroot $VM --format docker >o &&
    test \$(grep -c '^-e ' o) -ge 2 &&
    tail -1 o | grep -q '^-e [A-Za-z_]*=[^ ]*\$' &&
    test \$(tr -cd '\\\\' <o | wc -c) -eq \$((\$(grep -c '^-e ' o) - 1))
"
test_expect_success 'env --profile kubernetes: NCCL_DEBUG only with --debug, and why' "
    $NCD_BIN env --sysroot $VM --profile kubernetes >o &&
    ! grep -q '^export NCCL_DEBUG' o && grep -q 'NCCL_DEBUG=INFO is left out (add --debug)' o &&
    $NCD_BIN env --sysroot $VM --profile kubernetes --debug --format k8s >k &&
    grep -A1 'name: NCCL_DEBUG\$' k | grep -q 'value: \"INFO\"' &&
    $NCD_BIN env --sysroot $VM --debug --json | jq -e '.recommended_env.NCCL_DEBUG == \"INFO\"' >/dev/null
"
test_expect_success 'explain --facts counts hosts as its header does' "
    printf '%s\n' 'node1:100:100 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>' \
        'node2:200:200 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>' \
        'NCCL INFO NET/Socket : Using [0]eth0:10.0.0.3<0>' >log &&
    $NCD_BIN explain log >r || true
    head -1 r | grep -q ', 2 hosts' &&
    $NCD_BIN explain --facts log >f || true
    grep -q '^  hosts:   2 (and processes whose lines name no host)' f &&
    $NCD_BIN explain --json log >j || true
    jq -e '.facts.hosts | length == 2' j >/dev/null
"
test_expect_success 'topo --topology of a file that is not XML says so' "
    echo 'GPU0 X NV4' >topo.txt &&
    st=0; $NCD_BIN topo --topology topo.txt 2>err || st=\$?; test \$st -eq 3 &&
    grep -q 'topo.txt is not XML: --topology reads an hwloc XML export' err &&
    : >empty.xml && st=0; $NCD_BIN topo --topology empty.xml 2>err || st=\$?;
    test \$st -eq 3 && grep -q 'empty.xml is empty' err
"
test_expect_success 'file names with escape sequences reach stderr escaped' "
    f=\$(printf 'bad\\033]0;owned\\007name') && echo x >\"\$f\" &&
    st=0; $NCD_BIN topo --topology \"\$f\" 2>err || st=\$?; test \$st -eq 3 &&
    ! grep -q \"\$ESC\" err && grep -q 'bad\\\\\\\\x1b\\]0;owned\\\\\\\\x07name' err &&
    st=0; $NCD_BIN explain \"nosuch\$f\" 2>err || st=\$?; test \$st -eq 3 &&
    ! grep -q \"\$ESC\" err && grep -q 'x1b' err &&
    st=0; $NCD_BIN env --remove \"\$f/x\" 2>err || st=\$?; ! grep -q \"\$ESC\" err &&
    st=0; $NCD_BIN check --sysroot \"\$f\" 2>err || st=\$?; test \$st -eq 3 &&
    ! grep -q \"\$ESC\" err && grep -q 'x1b' err
"
test_expect_success 'probe started alone says how to launch it across ranks' "
    st=0; timeout 60 $NCD_BIN probe >o 2>err || st=\$?; test \$st -le 2 &&
    grep -q 'started alone' err && grep -q 'probe -np 4' err &&
    grep -q -- '--rendezvous HOST0:PORT' err
"
test_expect_success 'gather: a file it cannot read is named (stderr, --json, .ncd/unreadable)' "
    cp -a $VM root && truncate -s 9M root/proc/meminfo &&
    $NCD_BIN gather --sysroot root -o g.tgz 2>err >o &&
    grep -q 'could not read .*/proc/meminfo' err &&
    tar xzf g.tgz .ncd/unreadable && grep -q '^/proc/meminfo' .ncd/unreadable &&
    $NCD_BIN gather --sysroot root -o g2.tgz --json 2>/dev/null >j &&
    jq -e '.gather.unreadable | any(startswith(\"/proc/meminfo\"))' j >/dev/null
"
test_expect_success 'gather masks user:password@ and copies only an nccl.conf' "
    printf '# ok\nNCCL_DEBUG=WARN\n' >good.conf &&
    printf 'AWS_SECRET_ACCESS_KEY=abc\n' >bad.conf &&
    NCCL_CONF_FILE=\$PWD/bad.conf MASTER_ADDR='https://bob:hunter2@h:1/x' \
        NCCL_NET_PLUGIN='u:p@q, x@y' $NCD_BIN gather -o live.tgz 2>err >o &&
    grep -q 'left out .*bad.conf: NCCL_CONF_FILE does not look like an nccl.conf' err &&
    mkdir x && tar xzf live.tgz -C x &&
    ! grep -rq hunter2 x && ! test -e \"x\$PWD/bad.conf\" &&
    grep -q '^MASTER_ADDR=https://<redacted>@h:1/x\$' x/.ncd/env &&
    grep -q '^NCCL_NET_PLUGIN=<redacted>@q, x@y\$' x/.ncd/env &&
    grep -q 'bad.conf' x/.ncd/skipped &&
    NCCL_CONF_FILE=\$PWD/good.conf $NCD_BIN gather -o live2.tgz 2>/dev/null >o &&
    mkdir y && tar xzf live2.tgz -C y && test_cmp good.conf \"y\$PWD/good.conf\"
"
test_done
