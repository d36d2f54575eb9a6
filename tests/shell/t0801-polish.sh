#!/bin/sh
# Smaller defects from a new-user trial (second batch): each case fails on
# the behaviour the user hit and checks the one now documented.
. "$(dirname "$0")/lib.sh"
NCD=$NCD_BIN

# 1. Files written at the end of a long run are checked before it starts:
# an unwritable -J/--plot path fails at once with the usage status and
# names the option, instead of failing with 1 after the whole benchmark.
test_expect_success 'perf -J/--plot: unwritable path fails before the run' '
    st=0; $NCD perf all_reduce -b 1K -e 1K --backend socket \
        -J "$TEST_TMP/no/such/dir/r.json" >out 2>err || st=$?
    test "$st" -eq 6 && grep -q "^nccl-doctor: -J .*/no/such/dir/r.json: cannot write there" err &&
    ! grep -q "Avg bus bandwidth" out || exit 1
    st=0; $NCD perf all_reduce -np 2 -b 1K -e 1K --backend socket \
        --plot "$TEST_TMP/no/p.svg" >out 2>err || st=$?
    test "$st" -eq 6 && grep -q "^nccl-doctor: --plot .*/no/p.svg: cannot write there: No such file" err &&
    ! grep -q "Avg bus bandwidth" out || exit 1
    mkdir d &&
    st=0; $NCD perf all_reduce -b 1K -e 1K --backend socket --plot d >out 2>err || st=$?
    test "$st" -eq 6 && grep -q "cannot write there: Is a directory" err &&
    test -z "$(ls -A d)"
'

test_expect_success 'perf -J/--plot: a writable path still gets the file, no temporary left' '
    mkdir w &&
    $NCD perf all_reduce -b 1K -e 1K -n 1 -w 0 --backend socket \
        -J w/r.json --plot w/p.svg >out 2>err &&
    test -s w/r.json && test -s w/p.svg &&
    test "$(ls -A w | wc -l)" -eq 2
'

test_expect_success 'tune --plot: unwritable path fails before any candidate runs' '
    st=0; timeout 60 $NCD tune -np 2 --backend socket --reps 1 --families sockets \
        --plot "$TEST_TMP/no/t.svg" >out 2>err || st=$?
    test "$st" -eq 3 && grep -q "tune: --plot .*/no/t.svg: cannot write there" err &&
    ! grep -q "^Tune:" out
'

# 4. --sysroot of something that is neither a directory nor a tarball
# says what it is and what is expected ("no such file" was wrong).
test_expect_success '--sysroot /dev/null: says what it is and what is expected' '
    st=0; $NCD check --sysroot /dev/null >out 2>err || st=$?
    test "$st" -eq 3 &&
    grep -q "/dev/null.: it is a character device; expected a capture directory or a capture tarball" err &&
    ! grep -q "no such file" err &&
    echo hello >plain &&
    st=0; $NCD check --sysroot plain >out 2>err || st=$?
    test "$st" -eq 3 && grep -q "plain: not a capture tarball" err
'

# 2. A WARN no rule knows: its category comes from what the line shows
# (source file, else subsystem tag, else the error code after it) and the
# cause says which; with none of them it says the category is a default
# instead of claiming it came from a source file.
test_expect_success 'explain: unknown WARN category comes from what the line shows' '
    echo "h1:1:1 [0] NCCL WARN Frobnicating the widget failed" >bare.log &&
    st=0; $NCD explain bare.log >out 2>err || st=$?
    test "$st" -eq 2 && grep -q "no rule for  \[net.unreachable\]" out &&
    tr "\n" " " <out | tr -s " " >flat &&
    grep -q "names no NCCL source file, no subsystem and no error code follows it; net.unreachable is only a default" flat &&
    ! grep -q "source file that printed it" flat || exit 1
    printf "%s\n" "h1:1:1 [0] NCCL WARN Frobnicating the widget failed" \
        "h1:1:1 [0] NCCL INFO init.cc:1500 -> 1" >code.log &&
    st=0; $NCD explain code.log >out 2>err || st=$?
    tr "\n" " " <out | tr -s " " >flat &&
    grep -q "no rule for  \[gpu.cuda\]" out &&
    grep -q "comes from the error code NCCL returned after it (ncclUnhandledCudaError)" flat || exit 1
    echo "h1:1:1 [0] NCCL WARN NET/IB : frobnicated the HCA" >tag.log &&
    st=0; $NCD explain tag.log >out 2>err || st=$?
    tr "\n" " " <out | tr -s " " >flat &&
    grep -q "no rule for  \[net.ib\]" out &&
    grep -q "comes from the subsystem its message names (.NET/IB.)" flat
'

# 9. A count of one is singular.
test_expect_success 'explain: "1 line", not "1 lines"' '
    echo "hello" >one.log &&
    $NCD explain one.log >out 2>err || :
    grep -q "1 input, 1 line (0 from NCCL)" out &&
    grep -q "None of the rules matches this 1 line" out &&
    ! grep -q "1 lines" out
'

# 7. --rendezvous-timeout bounds the whole rendezvous wait (it took the
# pair-test step time, 11 s, for 2 s before).
test_expect_success 'probe --rendezvous-timeout 2: the rendezvous gives up within 2 s' '
    port=$(( 20000 + $$ % 12000 )) # below the ephemeral ports (32768-60999)
    s=$(date +%s%N)
    st=0; WORLD_SIZE=2 RANK=0 timeout 60 $NCD probe --rendezvous 127.0.0.1:$port \
        --rendezvous-timeout 2 >out 2>err || st=$?
    ms=$(( ($(date +%s%N) - s) / 1000000 ))
    echo "took $ms ms, status $st"; cat err
    test "$st" -eq 3 && grep -q "before the timeout (2 s)" err && test "$ms" -lt 5000 || exit 1
    s=$(date +%s%N)
    st=0; WORLD_SIZE=2 RANK=1 timeout 60 $NCD probe --rendezvous 127.0.0.1:$port \
        --rendezvous-timeout 2 >out 2>err || st=$?
    ms=$(( ($(date +%s%N) - s) / 1000000 ))
    echo "took $ms ms, status $st"
    test "$st" -eq 3 && test "$ms" -lt 5000
'

# 8. A huge value is not echoed in full: findings keep its first 200
# bytes and say how long it was.
test_expect_success 'check: a 100 KB NCCL_SOCKET_IFNAME is echoed capped' '
    big=$(head -c 100000 /dev/zero | tr "\0" e) &&
    st=0; NCCL_SOCKET_IFNAME=$big $NCD check >out 2>err || st=$?
    grep -q "NCCL_SOCKET_IFNAME=.e*\.\.\.(100000 bytes)" out &&
    test "$(wc -c <out)" -lt 50000 &&
    ! grep -q "e\{201\}" out &&
    # --json: findings capped the same way; facts.nccl_env keeps the value
    st=0; NCCL_SOCKET_IFNAME=$big $NCD check --json >out 2>err || st=$?
    test "$(grep -c "e*\.\.\.(100000 bytes)" out)" -ge 2 &&
    test "$(wc -c <out)" -lt 120000
'

# 5. gather on a full disk names the cause (ENOSPC from the write, kept
# through libarchive), not "input/output error ... Write error".
test_expect_success 'gather: a full disk says no space left on device' '
    mkdir full &&
    { mount -t tmpfs -o size=4k tmpfs full 2>/dev/null ||
      { echo "cannot mount a tmpfs here (not root?)"; exit 77; }; } &&
    st=0; $NCD gather -o full/c.tar.gz >out 2>err || st=$?
    umount full
    cat err
    test "$st" -eq 3 && grep -q "gather: no space left on device: .*No space left on device" err &&
    ! grep -q "input/output error" err
'

# gather -o onto a device node (as root) used to rename the capture over
# it; an unwritable directory failed only after gathering.
test_expect_success 'gather -o: a device or an unwritable path is refused up front' '
    { mknod chr c 1 7 2>/dev/null || { echo "mknod needs root"; exit 77; }; } &&
    st=0; $NCD gather -o chr >out 2>err || st=$?
    test "$st" -eq 3 && test -c chr && grep -q "chr is a character device, not a file" err || exit 1
    st=0; $NCD gather -o no/such/c.tar.gz >out 2>err || st=$?
    test "$st" -eq 3 && grep -q "cannot write no/such/c.tar.gz" err
'

# 6. carrier/speed of a down interface read EINVAL: an answer (no
# carrier, unknown speed), not an unreadable file.
test_expect_success 'gather: sysfs EINVAL reads are not unreadable files' '
    ns=ncdpolish$$ &&
    { ip netns add $ns 2>/dev/null || { echo "cannot create a netns"; exit 77; }; } &&
    st=0; ip netns exec $ns $NCD gather -o c.tar.gz >out 2>err || st=$?
    ip netns del $ns
    cat err
    test "$st" -eq 0 && test -s c.tar.gz &&
    ! grep -q "carrier: Invalid argument\|speed: Invalid argument" err &&
    ! tar -xzOf c.tar.gz --wildcards "*/.ncd/unreadable" 2>/dev/null | grep -q "Invalid argument"
'

# 10. Shared options a command does nothing with are not taken: explain
# --strict (every finding exits 2 already), --nccl-version of explain and
# gather (explain reads the release from the logs; gather records).
test_expect_success 'explain --strict / gather --nccl-version: refused, not ignored' '
    echo hello >l.log &&
    st=0; $NCD explain --strict l.log >out 2>err || st=$?
    test "$st" -eq 3 && grep -q "unknown option .--strict." err || exit 1
    st=0; $NCD gather --nccl-version 2.21.5 -o v.tar.gz >out 2>err || st=$?
    test "$st" -eq 3 && grep -q "unknown option .--nccl-version." err && ! test -e v.tar.gz || exit 1
    ! $NCD help explain | grep -q -- "--strict" &&
    ! $NCD help gather | grep -q -- "--nccl-version" &&
    $NCD help check | grep -q -- "--strict"
'

test_done
