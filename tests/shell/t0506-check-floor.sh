#!/bin/sh
# `check` at its floor (issue 14.10) and bounded tarball input (14.7):
# listeners through sock_diag, nftables through netlink dumps, the NCCL
# version from the library file without dlopen, and a tarball of 100,000
# entries refused before anything is written.  Costs are measured by
# bench/check; these tests check what the process does (strace).
. "$NCD_SOURCE_DIR/tests/shell/node-lib.sh"
export TMPDIR=$TEST_TMP
# LeakSanitizer cannot run under ptrace (strace): the traces are what count
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"

HAVE_STRACE=
command -v strace >/dev/null 2>&1 && HAVE_STRACE=1
[ -n "$HAVE_STRACE" ] && strace -f -qq -e trace=openat,open,execve -o "$TEST_TMP/st" \
    "$NCD_BIN" check >"$TEST_TMP/out" 2>&1
opened() { grep 'openat(' "$TEST_TMP/st" | grep -v ENOENT | grep -c "$1" ; }

if [ -n "$HAVE_STRACE" ]; then
test_expect_success 'live check does not read /proc/net/tcp{,6} (sock_diag)' '
    test -s "$TEST_TMP/st" && test "$(opened "/proc/net/tcp")" -eq 0 &&
    test "$(opened "net/tcp")" -eq 0
'
test_expect_success 'live check starts no process (no nft subprocess)' '
    test "$(grep -c "execve(" "$TEST_TMP/st")" -eq 1
'
# Each file, directory and absent path is opened once per run (fs.c's read
# cache; libcuda/libnvidia-ml dlopen'ed by the path ld.so would pick, so
# ld.so does not read /etc/ld.so.cache a second time).  ASan's runtime
# reads /proc/self/maps on its own: not ours.
test_expect_success 'live check opens no path twice' '
    grep -o "open[a-z]*([^\"]*\"[^\"]*\"" "$TEST_TMP/st" |
        sed "s/^open[a-z]*(//" | grep -v "/proc/self/maps" |
        sort | uniq -c | sort -rn >"$TEST_TMP/opens" &&
    test -s "$TEST_TMP/opens" &&
    ! awk "\$1 > 1" "$TEST_TMP/opens" | grep .
'
else
test_expect_success 'strace is missing: skipped (install-deps installs it)' 'true'
fi

test_expect_success 'live: a listener on NCCL_COMM_ID port is seen (sock_diag)' '
    python3 -c "
import socket, sys, time
s = socket.socket(); s.bind((\"127.0.0.1\", 0)); s.listen(1)
print(s.getsockname()[1]); sys.stdout.flush(); time.sleep(60)" >"$TEST_TMP/port" &
    pid=$! ; i=0; while [ ! -s "$TEST_TMP/port" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    port=$(cat "$TEST_TMP/port") &&
    NCCL_COMM_ID=127.0.0.1:$port "$NCD_BIN" check --json >"$TEST_TMP/lj" 2>/dev/null ;
    kill $pid 2>/dev/null; wait $pid 2>/dev/null
    grep -q "net.ports.comm-id-busy" "$TEST_TMP/lj" &&
    grep -q "1 TCP listener(s) on port $port" "$TEST_TMP/lj"
'

# The real libnccl.so.2 of the machine, if any: its version without dlopen.
REAL=$(ls /usr/local/cuda*/lib*/libnccl.so.2 2>/dev/null | head -1)
if [ -n "$REAL" ] && [ -n "$HAVE_STRACE" ]; then
test_expect_success "the real $REAL: version from .rodata, never dlopened" '
    LD_LIBRARY_PATH=$(dirname "$REAL") strace -f -qq -e trace=openat -o "$TEST_TMP/nc" \
        "$NCD_BIN" check --json >"$TEST_TMP/nj" 2>/dev/null ;
    want=$(strings -n 8 "$REAL" | sed -n "s/^NCCL version \([0-9][0-9.]*\).*/\1/p" | head -1) &&
    test -n "$want" &&
    grep -q "resolves to $(dirname "$REAL")/libnccl.so.2 (NCCL $want" "$TEST_TMP/nj" &&
    # dlopen opens by absolute path from AT_FDCWD; the sysroot reads do not
    ! grep -q "openat(AT_FDCWD, \"/[^\"]*libnccl" "$TEST_TMP/nc" &&
    test "$(grep "openat(.*libnccl.so.2\"" "$TEST_TMP/nc" | grep -vc ENOENT)" -le 2
'
fi

test_expect_success 'a tarball of 100,000 entries is refused, nothing unpacked' '
    python3 -c "
import tarfile, io
t = tarfile.open(\"$TEST_TMP/many.tar.gz\", \"w:gz\")
for i in range(100000):
    ti = tarfile.TarInfo(\"f%06d\" % i); ti.size = 0
    t.addfile(ti, io.BytesIO(b\"\"))
t.close()" &&
    ! "$NCD_BIN" check --sysroot "$TEST_TMP/many.tar.gz" >"$TEST_TMP/mo" 2>"$TEST_TMP/me" &&
    grep -q "more than 50000 entries, refused" "$TEST_TMP/me" &&
    ! ls -d "$TEST_TMP"/ncd-sysroot-* 2>/dev/null
'
test_expect_success 'hwloc-gather-topology captures (up to 11,495 entries) still unpack' '
    f=$NCD_SHARED_DIR/fixtures/hwloc/40intel64-2g2n4c+pcilocality.tar.bz2 &&
    { test ! -f "$f" || "$NCD_BIN" topo --sysroot "$f" >/dev/null 2>"$TEST_TMP/he" ||
      ! grep -q "entries" "$TEST_TMP/he"; }
'
test_done
