#!/bin/sh
# gather -o FILE.tar.gz and --sysroot FILE.tar.gz: capture, replay, safety.
. "$NCD_SOURCE_DIR/tests/shell/node-lib.sh"
FIX=$NCD_SOURCE_DIR/tests/fixtures/sysroots
HW=$NCD_SHARED_DIR/fixtures/hwloc
export TMPDIR=$TEST_TMP   # unpacked sysroots land here: we can see leftovers

test_expect_success 'gather writes a tarball, no temporary file left' '
    MY_API_TOKEN=s3cr3t TORCH_HUB_TOKEN=s3cr3t NCCL_DEBUG=INFO "$NCD_BIN" gather -o "$TEST_TMP/cap.tar.gz" >"$TEST_TMP/g" &&
    test -s "$TEST_TMP/cap.tar.gz" && ! ls "$TEST_TMP"/cap.tar.gz.tmp.* 2>/dev/null &&
    grep -q "replay: nccl-doctor check --sysroot" "$TEST_TMP/g"
'
test_expect_success 'the capture holds the probed files and recorded answers' '
    tar tzf "$TEST_TMP/cap.tar.gz" >"$TEST_TMP/list" &&
    grep -qx ".ncd/env" "$TEST_TMP/list" && grep -qx ".ncd/dlopen" "$TEST_TMP/list" &&
    grep -qx ".ncd/statvfs" "$TEST_TMP/list" && grep -qx ".ncd/gather-info" "$TEST_TMP/list" &&
    grep -q "^sys/class/net/lo$" "$TEST_TMP/list" &&
    grep -q "^proc/sys/net/ipv4/ip_local_port_range$" "$TEST_TMP/list"
'
test_expect_success 'secrets are redacted, NCCL variables kept' '
    tar xzf "$TEST_TMP/cap.tar.gz" -O .ncd/env >"$TEST_TMP/env" &&
    grep -qx "TORCH_HUB_TOKEN=<redacted>" "$TEST_TMP/env" &&
    ! grep -q "^MY_API_TOKEN" "$TEST_TMP/env" &&
    grep -qx "NCCL_DEBUG=INFO" "$TEST_TMP/env" && ! grep -q s3cr3t "$TEST_TMP/env"
'
test_expect_success 'NCCL_CONF_FILE is captured with the rest' '
    echo NCCL_DEBUG=WARN >"$TEST_TMP/my.conf" &&
    NCCL_CONF_FILE="$TEST_TMP/my.conf" "$NCD_BIN" gather -o "$TEST_TMP/conf.tgz" >/dev/null &&
    tar tzf "$TEST_TMP/conf.tgz" | grep -q "my.conf$"
'
test_expect_success '/proc/net/tcp keeps listeners only (no peer addresses)' '
    tar xzf "$TEST_TMP/cap.tar.gz" -O --wildcards "proc/*/net/tcp" >"$TEST_TMP/tcp" 2>/dev/null ||
        tar xzf "$TEST_TMP/cap.tar.gz" -O --wildcards "proc/net/tcp" >"$TEST_TMP/tcp" ;
    head -1 "$TEST_TMP/tcp" | grep -q local_address &&
    ! awk "NR > 1 && \$4 != \"0A\"" "$TEST_TMP/tcp" | grep -q .
'
test_expect_success 'no file from /var/run/secrets is ever copied' '
    ! grep -q "secrets/.*/token" "$TEST_TMP/list"
'
test_expect_success 'replaying the tarball gives the live findings (minus live-only ones)' '
    "$NCD_BIN" check --json >"$TEST_TMP/live.json" ;
    "$NCD_BIN" check --sysroot "$TEST_TMP/cap.tar.gz" --json >"$TEST_TMP/rep.json" ;
    findings_of <"$TEST_TMP/live.json" | grep -v -e "net.ports.bind-ok" | sort >"$TEST_TMP/a" &&
    findings_of <"$TEST_TMP/rep.json" | sort >"$TEST_TMP/b" &&
    test_cmp "$TEST_TMP/a" "$TEST_TMP/b"
'
test_expect_success 'the unpacked tree is removed afterwards' '
    ! ls -d "$TEST_TMP"/ncd-sysroot-* 2>/dev/null
'
test_expect_success 'a directory sysroot can be re-gathered (same answers)' '
    "$NCD_BIN" gather --sysroot "$FIX/roce-cloud" -o "$TEST_TMP/rc.tgz" >/dev/null &&
    "$NCD_BIN" check --sysroot "$FIX/roce-cloud" --json | findings_of | sort >"$TEST_TMP/c" &&
    "$NCD_BIN" check --sysroot "$TEST_TMP/rc.tgz" --json | findings_of | sort >"$TEST_TMP/d" &&
    test_cmp "$TEST_TMP/c" "$TEST_TMP/d"
'
test_expect_success 'gather into a missing directory fails cleanly (status 3)' '
    "$NCD_BIN" gather -o "$TEST_TMP/no/such/dir/x.tgz" 2>"$TEST_TMP/e" ; rc=$? ;
    [ $rc -eq 3 ] && grep -q "no/such/dir" "$TEST_TMP/e"
'
test_expect_success 'gather without -o is a usage error' '
    "$NCD_BIN" gather 2>/dev/null ; [ $? -eq 3 ]
'
test_expect_success 'a corrupt tarball is refused with a reason' '
    echo garbage >"$TEST_TMP/bad.tar.gz" ;
    "$NCD_BIN" check --sysroot "$TEST_TMP/bad.tar.gz" 2>"$TEST_TMP/e" ; rc=$? ;
    [ $rc -eq 3 ] && grep -q "cannot open sysroot" "$TEST_TMP/e" &&
    ! ls -d "$TEST_TMP"/ncd-sysroot-* 2>/dev/null
'
if command -v python3 >/dev/null 2>&1; then
    test_expect_success 'unsafe archives are refused and leave nothing behind' '
        python3 - "$TEST_TMP" <<PY || exit 1
import io, sys, tarfile
d = sys.argv[1]
def mk(name, members):
    with tarfile.open(d + "/" + name, "w:gz") as t:
        for n, kind, target in members:
            ti = tarfile.TarInfo(n)
            if kind == "file":
                data = b"x"; ti.size = 1; t.addfile(ti, io.BytesIO(data))
            elif kind == "sym":
                ti.type = tarfile.SYMTYPE; ti.linkname = target; t.addfile(ti)
            elif kind == "hard":
                ti.type = tarfile.LNKTYPE; ti.linkname = target; t.addfile(ti)
mk("abs.tgz", [("/etc/evil", "file", None)])
mk("dotdot.tgz", [("sys/../../evil", "file", None)])
mk("symabs.tgz", [("sys/x", "sym", "/etc")])
mk("symup.tgz", [("sys/x", "sym", "../../..")])
mk("symmid.tgz", [("sys/a/x", "sym", "../b/../../..")])
mk("through.tgz", [("sys/l", "sym", "../proc"), ("sys/l/f", "file", None)])
mk("hard.tgz", [("a", "file", None), ("b", "hard", "a")])
# a 65 MiB file (over NCD_SYSROOT_MAX_FILE); zeros compress to ~64 KiB
with tarfile.open(d + "/big.tgz", "w:gz") as t:
    ti = tarfile.TarInfo("sys/big"); ti.size = 65 << 20
    class Zeros(io.RawIOBase):
        def __init__(self, n): self.n = n
        def readable(self): return True
        def readinto(self, b):
            k = min(len(b), self.n); b[:k] = bytes(k); self.n -= k; return k
    t.addfile(ti, io.BufferedReader(Zeros(ti.size)))
PY
        for t in abs dotdot symabs symup symmid through hard big; do
            "$NCD_BIN" check --sysroot "$TEST_TMP/$t.tgz" >/dev/null 2>"$TEST_TMP/e.$t"
            [ $? -eq 3 ] || { echo "$t accepted"; exit 1; }
        done
        ! ls -d "$TEST_TMP"/ncd-sysroot-* 2>/dev/null && [ ! -e "$TEST_TMP/../evil" ]
    '
fi
if [ -f "$HW/40intel64-2g2n4c+pcilocality.tar.bz2" ]; then
    test_expect_success 'hwloc-gather-topology tarballs replay (one top folder)' '
        for f in "$HW"/*.tar.bz2; do
            "$NCD_BIN" check --sysroot "$f" --json >"$TEST_TMP/h.json" ; rc=$? ;
            [ $rc -le 2 ] || { echo "$f: status $rc"; exit 1; }
            findings_of <"$TEST_TMP/h.json" >"$TEST_TMP/h" ;
            ! grep -q "^error " "$TEST_TMP/h" || { echo "$f:"; cat "$TEST_TMP/h"; exit 1; }
        done
    '
    test_expect_success 'hwloc capture with an InfiniBand HCA: HCA row, honest unknowns' '
        "$NCD_BIN" topo --sysroot "$HW/40intel64-2g2n4c+pcilocality.tar.bz2" >"$TEST_TMP/t" &&
        grep -q "qib0" "$TEST_TMP/t" &&
        "$NCD_BIN" check --sysroot "$HW/40intel64-2g2n4c+pcilocality.tar.bz2" --json | findings_of >"$TEST_TMP/f" &&
        grep -qx "info net.ib.uverbs-unknown" "$TEST_TMP/f" &&
        grep -qx "info lib.nccl.not-visible" "$TEST_TMP/f" &&
        "$NCD_BIN" check --sysroot "$HW/nvidiagpunumanodes.tar.bz2" --json | findings_of >"$TEST_TMP/p9" ;
        grep -qx "info gpu.vendor-not-visible" "$TEST_TMP/p9"
    '
fi
test_done
