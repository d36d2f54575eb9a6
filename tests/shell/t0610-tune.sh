#!/bin/sh
# tune on one host over loopback (-np 2, socket backend, tiny sweeps): the
# table, the JSON, candidate files, a candidate that fails, usage errors.
# The speed comparison itself: tests/netns/scenario-c-tune-speeds.sh.
. "$(dirname "$0")/lib.sh"
command -v jq >/dev/null || skip_all "jq not installed"
T="env NCCL_SOCKET_IFNAME==lo $NCD_BIN tune --run-timeout 30"
PERF="-- all_reduce --backend socket -b 4K -e 16K -f 4 -n 2 -w 0 --peer-timeout 5"

test_expect_success 'candidates file: every candidate runs R times, JSON envelope' "
    printf '# two candidates\nthreads: NCCL_SOCKET_NTHREADS=2 NCCL_NSOCKS_PERTHREAD=2\nNCCL_NSOCKS_PERTHREAD=3\n' >c.txt &&
    $T -np 2 --reps 2 --candidates c.txt --json $PERF >t.json &&
    jq -e '.tool == \"nccl-doctor\" and .repetitions == 2' t.json &&
    jq -e '[.candidates[].label] == [\"(current)\", \"threads\", \"NCCL_NSOCKS_PERTHREAD=3\"]' t.json &&
    { jq -e '[.candidates[].runs | length] == [2, 2, 2]' t.json ||
      { jq -c '.candidates[] | [.label, .failed, .error]' t.json; false; }; } &&
    jq -e '[.candidates[] | .median > 0 and .min <= .median and .median <= .max] | all' t.json &&
    jq -e '.candidates[0].ratio == 1' t.json &&
    jq -e '.candidates[1].env == {\"NCCL_SOCKET_NTHREADS\": \"2\", \"NCCL_NSOCKS_PERTHREAD\": \"2\"}' t.json &&
    jq -e '[.findings[] | select(.id == \"perf.config.tuned\")] | length == 1' t.json
"
test_expect_success 'text: table with spread and ratio, and a verdict' "
    $T -np 2 --reps 2 --candidates c.txt --no-color $PERF >t.txt &&
    grep -q 'median GB/s' t.txt && grep -q 'threads' t.txt &&
    grep -q '1.00x  (baseline)' t.txt &&
    (grep -q 'Keep the current settings.' t.txt || grep -q 'export NCCL_' t.txt)
"
test_expect_success 'a candidate that breaks the run is reported, the others still run' "
    printf 'broken: NCCL_SOCKET_IFNAME=nosuchif0\n' >b.txt &&
    $T -np 2 --reps 1 --candidates b.txt --json $PERF >b.json &&
    jq -e '.candidates[1].failed == 1 and (.candidates[1].error | test(\"nosuchif0\"))' b.json &&
    jq -e '.candidates[0].runs | length == 1' b.json &&
    jq -e '[.findings[] | select(.id == \"perf.config.candidate-failed\" and .severity == \"warning\")] | length == 1' b.json
"
test_expect_success 'the current settings failing is an error (exit 2)' "
    st=0; env NCCL_SOCKET_IFNAME=nosuchif0 $NCD_BIN tune --run-timeout 30 -np 2 --reps 1 --candidates b.txt --json $PERF >f.json || st=\$?
    test \$st -eq 2 &&
    jq -e '.candidates[0].failed == 1' f.json
"
test_expect_success 'default candidates from the node (sockets family)' "
    $T -np 2 --reps 1 --families sockets --json $PERF >d.json &&
    jq -e '[.candidates[].label] == [\"(current)\", \"NCCL_SOCKET_NTHREADS=2 NCCL_NSOCKS_PERTHREAD=2\", \"NCCL_SOCKET_NTHREADS=4 NCCL_NSOCKS_PERTHREAD=4\"]' d.json
"
test_expect_success 'bad input: exit 3 with a message' "
    printf 'NCCL_SOCKET_IFNAME\n' >bad.txt &&
    st=0; $T -np 2 --candidates bad.txt 2>e.txt || st=\$?; test \$st -eq 3 && grep -q 'line 1' e.txt &&
    st=0; $T -np 2 --candidates /nonexistent/c.txt 2>e.txt || st=\$?; test \$st -eq 3 && grep -q nonexistent e.txt &&
    st=0; $T --reps 0 2>e.txt || st=\$?; test \$st -eq 3 &&
    st=0; $T --families nope 2>e.txt || st=\$?; test \$st -eq 3 &&
    st=0; $T --metric best 2>e.txt || st=\$?; test \$st -eq 3 &&
    st=0; $T -np 2 -- all_reduce -np 2 2>e.txt || st=\$?; test \$st -eq 3 && grep -q 'to tune itself' e.txt &&
    st=0; $T stray 2>e.txt || st=\$?; test \$st -eq 3
"

test_done
