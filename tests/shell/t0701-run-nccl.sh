#!/bin/sh
# nccl-doctor run against the real libnccl.so.2: the oracle
# (tests/netns/nccl_oracle.c) loads it with dlopen and calls
# ncclGetUniqueId, which runs NCCL's bootstrap interface selection without
# a GPU and fails for real on a bad NCCL_SOCKET_IFNAME or NCCL_COMM_ID.
# run must keep NCCL's own log in DIR and explain must name the cause.
. "$(dirname "$0")/lib.sh"
ORACLE="${NCD_BUILD_DIR:-.}/tests/ncd-nccl-oracle"
[ -x "$ORACLE" ] || skip_all "the NCCL oracle is not built ($ORACLE)"
command -v jq >/dev/null || skip_all "jq is not installed"
lib=
for l in /usr/local/cuda*/lib*/libnccl.so.2; do [ -f "$l" ] && lib=$l; done
[ -n "$lib" ] || lib=libnccl.so.2
rc=0; NCCL_DEBUG= "$ORACLE" "$lib" >/dev/null 2>&1 || rc=$?
[ $rc -ne 77 ] || skip_all "no real libnccl.so.2 here ($lib cannot be loaded)"
R="$NCD_BIN run"
BAD=bogus$$

test_expect_success "bad NCCL_SOCKET_IFNAME: non-zero, NCCL's log kept, net.ifname with $BAD" '
    st=0; NCCL_SOCKET_IFNAME=$BAD $R --logs ifn -- "$ORACLE" "$lib" >out 2>err || st=$?
    [ $st -eq 1 ] &&
    ls ifn/nccl.*.log >logs && [ "$(wc -l <logs)" -eq 1 ] &&
    grep -q "NCCL WARN Bootstrap : no socket interface found" ifn/nccl.*.log &&
    grep -q "NCCL_SOCKET_IFNAME set by environment to $BAD" ifn/nccl.*.log &&
    grep -q "^oracle result 5 " ifn/stdout.log &&
    grep -q "NCCL_SOCKET_IFNAME=$BAD matches no interface .*\[net.ifname\]" err &&
    grep -q "$TEST_TMP/ifn/nccl\..*\.log:[0-9]*: .*no socket interface found" err
'

test_expect_success 'the same with --json: explain'"'"'s envelope and the status' '
    st=0; NCCL_SOCKET_IFNAME=$BAD $R --json --logs ifj -- "$ORACLE" "$lib" >doc 2>err || st=$?
    [ $st -eq 1 ] && jq -e ".run.exit_status == 1" doc &&
    jq -e ".findings[0].category == \"net.ifname\"" doc &&
    jq -r ".findings[0].title" doc | grep -q "$BAD" &&
    jq -e ".run.env_set.NCCL_DEBUG == \"INFO\"" doc
'

test_expect_success 'bad NCCL_COMM_ID: Invalid NCCL_COMM_ID in the log, env.invalid' '
    st=0; NCCL_COMM_ID=no-such-host-$$ $R --logs cid -- "$ORACLE" "$lib" >out 2>err || st=$?
    [ $st -eq 1 ] &&
    grep -q "NCCL WARN Invalid NCCL_COMM_ID" cid/nccl.*.log &&
    grep -q "NCCL_COMM_ID has an invalid value  \[env.invalid\]" err &&
    sed -n "/^Root cause/{n;p;}" err | grep -q "NCCL_COMM_ID has an invalid value"
'

# NCCL trims no blank in NCCL_SOCKET_IFNAME (src/misc/utils.cc
# parseStringList): " lo" names no interface.  explain exports the value
# without its blanks, and with it the real NCCL bootstraps on lo.
test_expect_success 'a blank in NCCL_SOCKET_IFNAME: explain exports the value without it, which the real NCCL takes' '
    st=0; NCCL_SOCKET_IFNAME="$BAD, lo" $R --json --logs blk -- "$ORACLE" "$lib" >doc 2>err || st=$?
    [ $st -eq 1 ] && jq -e ".findings[0].id == \"net.ifname-blank\"" doc &&
    fix=$(jq -r .recommended_env.NCCL_SOCKET_IFNAME doc) && [ "$fix" = "$BAD,lo" ] &&
    NCCL_SOCKET_IFNAME=$fix $R --logs blkok -- "$ORACLE" "$lib" >out 2>err &&
    grep -q "^oracle result 0 " out &&
    grep -q "NCCL INFO Bootstrap: *Using lo:" blkok/nccl.*.log
'

test_expect_success 'a good run: exit 0, the INFO log kept, nothing explained' '
    $R --logs ok -- "$ORACLE" "$lib" >out 2>err &&
    grep -q "^oracle result 0 " out &&
    grep -q "NCCL INFO Bootstrap: Using" ok/nccl.*.log &&
    ! grep -q "Root cause" err
'

test_done
