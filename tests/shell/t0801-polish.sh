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

test_done
