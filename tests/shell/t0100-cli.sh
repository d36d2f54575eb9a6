#!/bin/sh
# The command line: help, version, dispatch, exit statuses, bad input.
. "$(dirname "$0")/lib.sh"
command -v jq >/dev/null || skip_all "jq not installed"
FIX=$NCD_SOURCE_DIR/tests/fixtures/sysroots

test_expect_success '--version and version' "
    $NCD_BIN --version | grep -q '^nccl-doctor [0-9]' &&
    $NCD_BIN version | grep -q '^nccl-doctor [0-9]'
"
test_expect_success '--help lists the commands' "
    $NCD_BIN --help >h && grep -q '^  check' h && grep -q '^  ifaces' h &&
    grep -q '^  env' h
"
test_expect_success 'help CMD and CMD --help' "
    $NCD_BIN help check | grep -q 'usage: nccl-doctor check' &&
    $NCD_BIN env --help | grep -q 'usage: nccl-doctor env'
"
test_expect_success 'unknown command and option exit 3' "
    st=0; $NCD_BIN frobnicate 2>err || st=\$?; test \$st -eq 3 &&
    grep -q unknown err &&
    st=0; $NCD_BIN check --bogus 2>/dev/null || st=\$?; test \$st -eq 3 &&
    st=0; $NCD_BIN help nosuch 2>/dev/null || st=\$?; test \$st -eq 3
"
test_expect_success 'check is the default command' "
    st=0; $NCD_BIN --json >a.json || st=\$?; test \$st -le 2 &&
    jq -e '.tool == \"nccl-doctor\"' a.json
"
test_expect_success 'check --json envelope' "
    st=0; $NCD_BIN check --json >c.json || st=\$?; test \$st -le 2 &&
    jq -e '(.tool|type)==\"string\" and (.version|type)==\"string\" and
           (.host|type)==\"string\" and (.findings|type)==\"array\" and
           (.recommended_env|type)==\"object\"' c.json &&
    jq -e 'all(.findings[]; has(\"id\") and has(\"category\") and has(\"severity\")
           and has(\"title\") and has(\"evidence\") and has(\"cause\") and
           has(\"fix\") and has(\"env\"))' c.json
"
test_expect_success 'every category is from the fixed list' "
    for d in $FIX/*/; do $NCD_BIN check --sysroot \$d --json || true; done >all.json 2>/dev/null
    sed -n 's/^| \`\\([a-z0-9.-]*\\)\` |.*/\\1/p' \"$NCD_SHARED_DIR/reference/categories.md\" >cats
    if [ -s cats ]; then
        jq -r '.findings[].category' all.json | sort -u >used &&
        test -z \"\$(comm -23 used \$(sort -u cats >cs; echo cs))\"
    fi
"
test_expect_success 'ifaces --json shape' "
    $NCD_BIN ifaces --json --sysroot $FIX/cloud-vm-ens5-docker >i.json &&
    jq -e '.recommended == \"ens5\" and (.nccl.socket|type)==\"array\" and
           (.interfaces[0] | has(\"name\") and has(\"kind\") and has(\"flags\")
            and has(\"addresses\") and has(\"speed_mbps\") and has(\"rx_bytes\")
            and has(\"tx_bytes\") and has(\"rank\") and has(\"reasons\"))' i.json
"
test_expect_success 'colour: never with NO_COLOR or a pipe, always on request' "
    st=0; NO_COLOR=1 $NCD_BIN check --sysroot $FIX/laptop-wifi >t || st=\$?
    ! grep -q \"\$(printf '\\033')\" t &&
    st=0; $NCD_BIN check --sysroot $FIX/laptop-wifi --color=always >t || st=\$?
    grep -q \"\$(printf '\\033')\" t
"
test_expect_success '--strict: warnings give exit 1' "
    st=0; $NCD_BIN check --sysroot $FIX/cloud-vm-ens5-docker >/dev/null || st=\$?
    test \$st -eq 0 &&
    st=0; $NCD_BIN check --strict --sysroot $FIX/cloud-vm-ens5-docker >/dev/null || st=\$?
    test \$st -eq 1
"
test_expect_success 'missing sysroot: clear error, exit 3' "
    st=0; $NCD_BIN check --sysroot /nonexistent/x 2>err || st=\$?
    test \$st -eq 3 && grep -q 'cannot open sysroot' err
"
test_expect_success 'garbage in a capture: clear error, no crash' "
    cp -r $FIX/laptop-wifi cap && chmod -R u+w cap &&
    printf 'wlp0s20f3 inet not-an-ip 24 0x1\n' >cap/.ncd/ifaddrs &&
    st=0; $NCD_BIN check --sysroot cap --json >g.json 2>err || st=\$?
    test \$st -le 3 && cat err g.json | grep -q 'ifaddrs line 1'
"
test_expect_success 'garbage env values never crash' "
    st=0; env NCCL_SOCKET_IFNAME=\"\$(printf 'a\\001b,,^=,,=^')\" NCCL_IB_DISABLE=\$(head -c 300 /dev/zero | tr '\\0' 9) \
        NCCL_COMM_ID='[::1' NCCL_P2P_LEVEL= $NCD_BIN check --json >x.json || st=\$?
    test \$st -le 2 && jq -e . x.json >/dev/null
"
test_expect_success 'unreadable sysfs attributes are tolerated' "
    cp -r $FIX/cloud-vm-ens5-docker cap2 && chmod -R u+w cap2 &&
    for f in cap2/sys/devices/pci0000:00/0000:00:05.0/net/ens5/speed \
             cap2/sys/devices/pci0000:00/0000:00:05.0/net/ens5/flags; do
        printf 'garbage\n' >\$f; done &&
    st=0; $NCD_BIN ifaces --sysroot cap2 --json >i.json || st=\$?
    test \$st -eq 0 && jq -e '.interfaces[] | select(.name==\"ens5\") | .speed_mbps == null' i.json
"
test_expect_success 'non-UTF-8 and control bytes: findings kept, JSON valid' "
    st=0; NCCL_SOCKET_IFNAME=\"\$(printf 'e\\377\\376\\033[31m')\" $NCD_BIN check --json >u.json || st=\$?
    test \$st -eq 2 && jq -e '.findings | length > 0' u.json &&
    ! grep -q \"\$(printf '\\033')\" u.json &&
    st=0; NCCL_SOCKET_IFNAME=\"\$(printf 'e\\033]0;x\\007')\" $NCD_BIN check --no-color >u.txt || st=\$?
    ! grep -q \"\$(printf '\\033')\" u.txt
"
test_expect_success 'a FIFO where a file is expected never blocks' "
    mkfifo fifo.conf &&
    st=0; NCCL_CONF_FILE=\$PWD/fifo.conf timeout 20 $NCD_BIN check --json >f.json || st=\$?
    test \$st -le 2 &&
    jq -e '[.findings[] | select(.id==\"env.conf-file-unreadable\")] | length == 1' f.json &&
    st=0; timeout 20 $NCD_BIN env --write fifo.conf 2>err || st=\$?
    test \$st -eq 3 && grep -q 'not a regular file' err
"
# As the real NCCL parses it (tests/netns/nccl-differential.sh checks each
# against libnccl.so.2): a name that does not resolve, a value without a
# host and an empty value fail 'Invalid NCCL_COMM_ID'; the port is never
# checked, so a bad one is a warning and the subnet still picks the
# interface.
test_expect_success 'NCCL_COMM_ID: host names, bad ports, unbracketed IPv6' "
    st=0; NCCL_COMM_ID=localhost:29500 $NCD_BIN ifaces --json >l.json || st=\$?
    test \"\$(jq -r .nccl.bootstrap l.json)\" = lo &&
    for v in no-such-host.invalid:1234 ::1:1234 999.1.1.1:80 garbage.invalid ''; do
        st=0; NCCL_COMM_ID=\$v $NCD_BIN check --json >v.json || st=\$?
        test \$st -eq 2 || exit 1
        jq -e '[.findings[] | select(.id==\"env.comm-id.invalid\")] | length == 1' v.json || exit 1
        jq -e '[.findings[] | select(.category==\"env.invalid\")] | length == 1' v.json || exit 1
    done &&
    for v in 127.0.0.1:99999 127.0.0.1:0 127.0.0.1; do
        st=0; NCCL_COMM_ID=\$v $NCD_BIN check --json >p.json || st=\$?
        jq -e '[.findings[] | select(.id==\"env.comm-id.port\")] | length == 1' p.json || exit 1
        jq -e '[.findings[] | select(.id==\"env.comm-id.invalid\")] | length == 0' p.json || exit 1
        test \"\$(jq -r .facts.network.nccl.bootstrap p.json)\" = lo || exit 1
    done
"
test_expect_success 'a directory that is not a capture is refused' "
    mkdir -p empty && st=0; $NCD_BIN check --sysroot empty 2>err || st=\$?
    test \$st -eq 3 && grep -q 'not a capture' err &&
    st=0; $NCD_BIN check --sysroot '' 2>/dev/null || st=\$?; test \$st -eq 3
"
test_expect_success '--nccl-version is validated' "
    for v in 1.0.0 99.99.99 x; do
        st=0; $NCD_BIN ifaces --nccl-version \$v 2>/dev/null || st=\$?
        test \$st -eq 3 || exit 1
    done
"
test_done
