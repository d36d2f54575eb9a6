#!/bin/sh
# perf's nccl backend: the dlopen loader and the backend end to end.
# Against the real libnccl.so.2/libcudart.so when present; always against
# the test-only host-memory stand-ins built from tests/perf/fake_*.c.
. "$(dirname "$0")/perf_lib.sh"
FAKE="${NCD_BUILD_DIR:-.}/tests/fakecuda"
[ -f "$FAKE/libnccl.so.2" ] || skip "fake NCCL not built ($FAKE)"

# Real libraries, when this machine has them
if ldconfig -p 2>/dev/null | grep -q 'libnccl\.so\.2 '; then
    perf all_reduce -b 8 -e 8 --backend nccl >"$TMP/real.out" 2>"$TMP/real.err"
    rc=$?
    check "real NCCL: runs, or reports the CUDA problem by name (exit $rc)" sh -c "
        [ $rc -eq 0 ] && grep -q 'nccl-library=[1-9]' '$TMP/real.out' ||
        grep -Eq 'cudaError[A-Za-z]* \\([0-9]+\\) .*NCCL 2\\.[0-9]+\\.[0-9]+ from /|Invalid number of GPUs' '$TMP/real.err' '$TMP/real.out'"
else
    echo "# libnccl.so.2 not installed here: real-library checks skipped"
fi

# No device: precise CUDA error, suggestion, exit 2 (testCudaError)
FAKE_CUDA_DEVICES=0 LD_LIBRARY_PATH="$FAKE" perf all_reduce -b 8 -e 8 --backend nccl \
    >"$TMP/nd.out" 2>"$TMP/nd.err"
rc=$?
check "no CUDA device: cudaErrorNoDevice (100), suggests --backend socket, exit 2" sh -c "
    [ $rc -eq 2 ] && grep -q 'cudaErrorNoDevice (100)' '$TMP/nd.err' && grep -q 'backend socket' '$TMP/nd.err'"

# The seed's verification step on a machine without a usable GPU: a plain
# invocation is NCCL's and fails as nccl-tests does; never a TCP "OK"
FAKE_CUDA_DEVICES=0 LD_LIBRARY_PATH="$FAKE" "$NCD_BIN" perf all_reduce -b 8 -e 128M -f 2 -g 2 \
    >"$TMP/plain.out" 2>"$TMP/plain.err"
rc=$?
H=$(hostname | cut -d. -f1)
check "plain all_reduce without a GPU: exit 2, nccl-tests' failure lines on stdout" sh -c "
    [ $rc -eq 2 ] &&
    grep -qx \"$H: Test CUDA failure util.cu:674 'no CUDA-capable device is detected'\" '$TMP/plain.out' &&
    grep -Eqx ' \\.\\. $H pid [0-9]+: Test failure common\\.cu:1454' '$TMP/plain.out' &&
    [ \$(grep -c 'Test failure' '$TMP/plain.out') -eq 1 ] &&
    tail -n1 '$TMP/plain.out' | grep -q 'Test failure'"
check "... after the preamble up to '# Using devices', as nccl-tests prints it" sh -c "
    sed -n 1p '$TMP/plain.out' | grep -q '^# nccl-tests version 2.19.6 nccl-headers=22805 nccl-library=22805\$' &&
    grep -B1 'Test CUDA failure' '$TMP/plain.out' | head -1 | grep -qx '# Using devices'"
check "... never a TCP run, never 'Out of bounds values : 0 OK'" sh -c "
    ! grep -q 'Backend: socket' '$TMP/plain.out' && ! grep -q 'Out of bounds' '$TMP/plain.out'"
check "... stderr says what is missing and what \`check\` finds" sh -c "
    grep -q 'cudaGetDeviceCount: cudaErrorNoDevice (100)' '$TMP/plain.err' &&
    grep -Eq '^nccl-doctor perf: check: \\[[a-z]+\\] (gpu|lib)\\.[a-z.-]+: ' '$TMP/plain.err'"
perf all_reduce -b 8 -e 8 --backend auto >"$TMP/auto.out" 2>&1
check "--backend auto is refused (exit 6): nothing falls back silently" sh -c "
    [ $? -eq 6 ] && grep -q 'takes nccl or socket' '$TMP/auto.out'"
perf all_reduce -b 8 -e 8 --backend nccl --nccl-lib /nonexistent/libnccl.so.2 >"$TMP/nl.out" 2>"$TMP/nl.err"
rc=$?
check "library missing: says which and where it looked (exit $rc)" sh -c "
    [ $rc -eq 3 ] && grep -q '/nonexistent/libnccl.so.2 could not be loaded' '$TMP/nl.err' &&
    grep -q 'looked in LD_LIBRARY_PATH=' '$TMP/nl.err'"
check "... and fails in nccl-tests' form on stdout" sh -c "
    grep -q \"^$H: Test NCCL failure common.cu:1550 'unhandled system error (run with NCCL_DEBUG=INFO for details) / /nonexistent/libnccl.so.2: cannot open shared object file\" '$TMP/nl.out' &&
    grep -q 'Test failure common.cu:1454' '$TMP/nl.out'"
LD_LIBRARY_PATH="$FAKE" perf all_reduce -b 8 -e 8 --backend nccl --cudart-lib /nonexistent/libcudart.so \
    >"$TMP/nc.out" 2>"$TMP/nc.err"
check "CUDA runtime missing: exit 2, the reason, a CUDA failure line" sh -c "
    [ $? -eq 2 ] && grep -q 'the CUDA runtime (/nonexistent/libcudart.so) could not be loaded' '$TMP/nc.err' &&
    grep -q \"Test CUDA failure util.cu:674 '/nonexistent/libcudart.so: cannot open shared object file\" '$TMP/nc.out'"

# End to end on 4 fake devices
export FAKE_CUDA_DEVICES=4 LD_LIBRARY_PATH="$FAKE"
perf all_reduce -b 8 -e 4K -f 8 -g 4 -d all -o all --backend nccl >"$TMP/ar.out" 2>&1
parse_table "$TMP/ar.out" >"$TMP/p"
check "all_reduce -g 4, every type and op: 0 wrong ($(cat $TMP/p))" sh -c "
    grep -q '^rows=240 wrong=0 bad=0' '$TMP/p' &&
    grep -q '^# nccl-tests version 2.19.6 nccl-headers=22805 nccl-library=22805\$' '$TMP/ar.out' &&
    grep -q '^#  Rank  3 Group  0 Pid .* device  3 \[0000:1e:00\] Fake GPU 3' '$TMP/ar.out' &&
    grep -q '^#  Backend: nccl (NCCL 2.28.5, 4 CUDA devices visible; .*fakecuda/libnccl.so.2, .*fakecuda/libcudart.so)' '$TMP/ar.out'"
for c in all_gather reduce_scatter broadcast reduce alltoall alltoallv sendrecv gather scatter hypercube; do
    perf $c -b 8 -e 10K -f 9 -t 2 -g 2 -r -1 -d all -m 2 -n 5 --backend nccl >"$TMP/c.out" 2>&1
    rc=$?
    parse_table "$TMP/c.out" >"$TMP/p"
    check "$c -t 2 -g 2 -m 2 (group calls): exit $rc, $(cat $TMP/p)" sh -c "
        [ $rc -eq 0 ] && grep -q 'wrong=0 bad=0' '$TMP/p' && ! grep -q '^rows=0 ' '$TMP/p'"
done
FAKE_NCCL_CORRUPT=1 perf all_reduce -b 64 -e 256 -f 2 -t 2 -g 2 --backend nccl >"$TMP/bad.out" 2>&1
rc=$?
check "a wrong element is counted: #wrong 1, 'Out of bounds values : 12 FAILED', exit 7 ($rc)" sh -c "
    [ $rc -eq 7 ] && grep -q '^ *64 *16 *float *sum *-1 .* 1 .* 1\$' '$TMP/bad.out' &&
    grep -qx '# Out of bounds values : 12 FAILED' '$TMP/bad.out' &&
    tail -n1 '$TMP/bad.out' | grep -Eq '^ \\.\\. .* pid [0-9]+: Test failure common\\.cu:1454\$'"
perf all_reduce -b 8 -e 8 -g 8 --backend nccl >"$TMP/ng.out" 2>"$TMP/ng.err"
check "more GPUs than devices: nccl-tests' message on stderr, exit 5" sh -c "
    [ $? -eq 5 ] && grep -qx 'Invalid number of GPUs: 8 requested but only 4 were found.' '$TMP/ng.err' &&
    grep -qx 'Please check the number of processes and GPUs per process.' '$TMP/ng.err' &&
    grep -q 'Test failure common.cu:1454' '$TMP/ng.out'"
NCCL_TESTS_DEVICE=2 perf broadcast -b 8 -e 8 -g 2 --backend nccl >"$TMP/d.out" 2>&1
check "NCCL_TESTS_DEVICE=2 -g 2 uses devices 2 and 3" sh -c "
    grep -q 'Rank  0 .* device  2 ' '$TMP/d.out' && grep -q 'Rank  1 .* device  3 ' '$TMP/d.out'"
# nccl-tests TimeTest: -w operations at every size from -b doubling to -e
# (whatever -f says), then per size and side one untimed operation and -n
# timed ones (BenchTime); -c 0: no check operation.
FAKE_CUDA_DEVICES=1 FAKE_NCCL_TRACE="$TMP/trace" \
    perf all_reduce -b 1K -e 64K -f 4 -w 2 -n 3 -c 0 --backend nccl >"$TMP/w.out" 2>&1
{ for c in 256 512 1024 2048 4096 8192 16384; do echo "AllReduce $c"; echo "AllReduce $c"; done
  for c in 256 1024 4096 16384; do i=0; while [ $i -lt 8 ]; do echo "AllReduce $c"; i=$((i+1)); done; done
} >"$TMP/trace.want"
check "warm-up over every size, then 1 + 3 operations per side" cmp -s "$TMP/trace.want" "$TMP/trace"
# -I on the nccl backend: CUDA events per iteration, JSON per iteration
perf all_reduce -b 8 -e 64 -f 8 -g 2 -n 4 -I 1 -J "$TMP/i.json" --backend nccl >"$TMP/i.out" 2>&1
check "-I: CUDA event timing, 21 fields a row, per-iteration JSON" sh -c "
    grep -q '^# Per-Iteration Report: CUDA event timing; i_\* uses max over process rows \$' '$TMP/i.out' &&
    [ \$(grep -v '^#' '$TMP/i.out' | awk 'NF==21' | wc -l) -eq 2 ] &&
    grep -q '\"out_of_place_per_iter\":{\"skipped_iterations\":0,\"min_us\":' '$TMP/i.json'"
finish
