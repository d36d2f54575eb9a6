#!/bin/sh
# perf socket backend under faults: a rank killed with SIGKILL mid-run, a
# hung rank (SIGSTOP), stray connections to the rendezvous root.  The
# others must stop with an error naming the rank, host and address within
# the timeout, never hang.
. "$(dirname "$0")/perf_lib.sh"
command -v pgrep >/dev/null || skip "pgrep not installed"

wait_for() { # wait_for FILE PATTERN SECONDS
    i=0
    while ! grep -q "$2" "$1" 2>/dev/null; do
        i=$((i+1)); [ $i -gt $(($3*10)) ] && return 1; sleep 0.1
    done
}
wait_pid() { # wait_pid PID SECONDS -> 0 if it ended in time
    i=0
    while kill -0 "$1" 2>/dev/null; do
        i=$((i+1)); [ $i -gt $(($2*10)) ] && return 1; sleep 0.1
    done
}

# 1. kill -9 the process of rank 1 while a long sweep runs
"$NCD_BIN" perf all_reduce -b 4M -e 4M -n 1000000 -np 3 --backend socket \
    --peer-timeout 20 >"$TMP/k.out" 2>"$TMP/k.err" &
P=$!
wait_for "$TMP/k.out" '^#  Backend' 20
sleep 0.5
kids=$(pgrep -P $P | tr '\n' ' ')
victim=$(echo $kids | cut -d' ' -f2)
start=$(date +%s)
kill -9 "$victim"
if wait_pid $P 15; then ok "the job ends after rank 1 is killed (within 15 s, timeout 20 s)"
else bad "job still running 15 s after kill -9"; kill -9 $kids $P 2>/dev/null; fi
wait $P; rc=$?
end=$(date +%s)
check "non-zero exit status ($rc)" [ $rc -ne 0 ]
check "the parent reports the killed process" grep -q 'process 1 (pid [0-9]*, ranks 1-1) was killed by signal 9' "$TMP/k.err"
check "survivors name the dead rank, its host and address" \
    grep -Eq 'rank 1 \(host [^,]+, pid [0-9]+, [^ ]+ [0-9a-f.:]+:[0-9]+\) closed the connection' "$TMP/k.err"
check "error uses nccl-tests' failure line (stdout)" grep -q ': Test NCCL failure [a-z_]*\.cu:[0-9]* .remote process exited or there was a network error / ' "$TMP/k.out"
check "no process left behind" sh -c "! pgrep -P $P >/dev/null"
echo "# kill -9 -> exit after $((end-start)) s"; sed 's/^/#   /' "$TMP/k.err"

# 2. a hung rank (SIGSTOP): the others give up after --peer-timeout
"$NCD_BIN" perf all_reduce -b 1M -e 1M -n 1000000 -np 3 --backend socket \
    --peer-timeout 3 >"$TMP/s.out" 2>"$TMP/s.err" &
P=$!
wait_for "$TMP/s.out" '^#  Backend' 20
sleep 0.5
kids=$(pgrep -P $P | tr '\n' ' ')
victim=$(echo $kids | cut -d' ' -f3)
kill -STOP "$victim"
start=$(date +%s)
# the two live processes exit on their own; then release the stopped one
i=0; while [ $(pgrep -P $P | wc -l) -gt 1 ] && [ $i -lt 150 ]; do i=$((i+1)); sleep 0.1; done
end=$(date +%s)
check "live ranks stop within 15 s of a SIGSTOPped peer (timeout 3 s)" [ $((end-start)) -le 15 ]
kill -9 "$victim" 2>/dev/null; kill -CONT "$victim" 2>/dev/null
wait $P; rc=$?
check "timeout is reported (exit $rc) naming rank 2" sh -c "
    [ $rc -ne 0 ] && grep -Eq 'no progress for 3 s on the connection to rank 2 \(host [^,]+, pid [0-9]+, [^ ]+ [0-9a-f.:]+:[0-9]+\)|rank 2 .*closed the connection|process 2 .*(did not answer|closed)' '$TMP/s.err'"
sed 's/^/#   /' "$TMP/s.err" | head -6

# 3. stray connections to the rendezvous root are dropped without harm
PORT=$((20000 + $$ % 10000))
RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT \
    "$NCD_BIN" perf all_reduce -b 64K -e 64K --backend socket >"$TMP/r0.out" 2>"$TMP/r0.err" &
P0=$!
sleep 0.5
if command -v python3 >/dev/null; then
    python3 - "$PORT" <<'PY'
import socket, sys, time
port = int(sys.argv[1])
for payload in (b"GET / HTTP/1.0\r\n\r\n", b"\x50\x44\x43\x4e" + b"\xff" * 20, b""):
    for _ in range(50):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=2); break
        except OSError:
            time.sleep(0.1)
    s.sendall(payload); time.sleep(0.1); s.close()
PY
fi
RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT \
    "$NCD_BIN" perf all_reduce -b 64K -e 64K --backend socket >"$TMP/r1.out" 2>"$TMP/r1.err"
rc1=$?
wait $P0; rc0=$?
check "torchrun-style 2-process job runs despite stray connections" sh -c "
    [ $rc0 -eq 0 ] && [ $rc1 -eq 0 ] && grep -qx '# Out of bounds values : 0 OK' '$TMP/r0.out' && [ ! -s '$TMP/r1.out' ]"

# 4. a second job with a different world size on the same root is refused
PORT=$((PORT + 1))
RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT \
    "$NCD_BIN" perf all_reduce -b 64K -e 64K --backend socket --peer-timeout 10 >"$TMP/w0.out" 2>"$TMP/w0.err" &
P0=$!
sleep 0.3
RANK=1 WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT \
    "$NCD_BIN" perf all_reduce -b 64K -e 64K --backend socket --peer-timeout 10 >"$TMP/w1.out" 2>"$TMP/w1.err"
wait $P0; rc0=$?
check "mismatched job size: root says so and fails" sh -c "
    [ $rc0 -ne 0 ] && grep -q 'disagree on the job size' '$TMP/w0.err'"
# 5. a rank stopped for good: the launcher kills it once the others failed
"$NCD_BIN" perf all_reduce -b 1M -e 1M -n 1000000 -np 3 --backend socket \
    --peer-timeout 3 >"$TMP/s.out" 2>"$TMP/s.err" &
P=$!
wait_for "$TMP/s.out" '^#  Backend' 20
sleep 0.5
victim=$(pgrep -P $P | head -1)
kill -STOP "$victim"
start=$(date +%s)
wait_pid $P 30; ended=$?
took=$(( $(date +%s) - start ))
kill -CONT "$victim" 2>/dev/null; kill -9 "$victim" 2>/dev/null
check "stopped rank never resumed: launcher ends in time (${took}s)" sh -c "
    [ $ended -eq 0 ] && grep -q 'did not stop' '$TMP/s.err' &&
    grep -q 'no progress for 3 s' '$TMP/s.err'"

# 6. the launcher killed with SIGKILL: its ranks die with it
"$NCD_BIN" perf all_reduce -b 1M -e 1M -n 1000000 -np 2 --backend socket \
    >"$TMP/l.out" 2>"$TMP/l.err" &
P=$!
wait_for "$TMP/l.out" '^#  Backend' 20
kids=$(pgrep -P $P | tr '\n' ' ')
kill -9 $P
sleep 1
alive=0
# (a dead rank may stay a zombie until init reaps it: that is not alive)
for k in $kids; do
    st=$(ps -o stat= -p "$k" 2>/dev/null) || continue
    case $st in Z*) ;; *) alive=$((alive+1)) ;; esac
done
for k in $kids; do kill -9 "$k" 2>/dev/null; done
check "launcher killed: no orphaned ranks ($alive left)" [ "$alive" -eq 0 ]

# 7. a root that is not a rank is an NCCL invalid-argument failure, not
#    corrupted data
st=0; perf broadcast -b 1K -e 1K -r 5 -np 2 --backend socket >"$TMP/r.out" 2>"$TMP/r.err" || st=$?
check "root out of range: exit 3, invalid argument" sh -c "
    [ $st -eq 3 ] && grep -q 'invalid argument' '$TMP/r.err'"
finish
