#!/bin/sh
# Regressions found by a new-user trial (hostile input, wrong usage): each
# case reproduces what a user hit and checks the behaviour now documented.
. "$(dirname "$0")/lib.sh"
NCD=$NCD_BIN

# tune: a mistake in perf's options is the command line's, not a
# candidate's: exit 3 with perf's message, no candidate table, no blame.
test_expect_success 'tune: perf rejecting its options stops tune (exit 3)' '
    st=0; $NCD tune -np 2 --backend socket --reps 1 --families sockets \
        -- all_reduce --bogus >out 2>err || st=$?
    test "$st" -eq 3 &&
    grep -q "perf rejected its options (exit status 6)" err &&
    grep -q "bogus" err &&
    ! grep -q "make the benchmark fail" out &&
    st=0; $NCD tune -np 2 --backend socket --reps 1 --families sockets \
        -- all_reduce -b 1M -e 1K >out 2>err || st=$?
    test "$st" -eq 3 && grep -q "exit status 255" err
'

test_expect_success 'tune: perf options without a collective run all_reduce' '
    $NCD tune -np 2 --backend socket --reps 1 --families sockets \
        -- -b 64K -e 64K -n 1 -w 0 >out 2>err &&
    grep -q "perf all_reduce -b 64K" out &&
    grep -q "(baseline)" out
'

test_done
