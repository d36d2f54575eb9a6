#!/bin/sh
# nccl-doctor topo: the nvidia-smi style matrix from fixtures, hwloc XML
# and this machine.
. "$NCD_SOURCE_DIR/tests/shell/node-lib.sh"
FIX=$NCD_SOURCE_DIR/tests/fixtures/sysroots
HW=$NCD_SHARED_DIR/fixtures/hwloc

test_expect_success 'DGX-like fixture: matrix rows as nvidia-smi prints them' '
    "$NCD_BIN" topo --sysroot "$FIX/dgx-8gpu-4hca" >"$TEST_TMP/m" &&
    printf "GPU0\t X \tNV12\tNV12\tNV12\tNV12\tNV12\tNV12\tNV12\tPIX\tNODE\tSYS\tSYS\tNODE\t0-63,128-191\t0\n" >"$TEST_TMP/e0" &&
    grep "^GPU0	" "$TEST_TMP/m" >"$TEST_TMP/g0" && test_cmp "$TEST_TMP/e0" "$TEST_TMP/g0" &&
    printf "NIC2\tSYS\tSYS\tSYS\tSYS\tPIX\tPIX\tNODE\tNODE\tSYS\tSYS\t X \tNODE\tSYS\t\n" >"$TEST_TMP/e1" &&
    grep "^NIC2	" "$TEST_TMP/m" >"$TEST_TMP/g1" && test_cmp "$TEST_TMP/e1" "$TEST_TMP/g1" &&
    grep -q "^  NIC0: mlx5_0 (ib0)$" "$TEST_TMP/m" &&
    grep -q "^  NV#  = Connection traversing a bonded set of # NVLinks$" "$TEST_TMP/m"
'
test_expect_success 'PCIe-only box: NODE within a socket, SYS across' '
    "$NCD_BIN" topo --sysroot "$FIX/docker-shm64m" >"$TEST_TMP/d" &&
    grep -q "^GPU0	 X 	NODE	SYS	SYS	0-31	0$" "$TEST_TMP/d"
'
test_expect_success 'GPU name from /proc/driver/nvidia/gpus without NVML' '
    "$NCD_BIN" topo --sysroot "$FIX/laptop-dgpu" >"$TEST_TMP/l" &&
    grep -q "^  GPU0: 0000:01:00.0 NVIDIA GeForce RTX 4060 Laptop GPU$" "$TEST_TMP/l" &&
    grep -q "^NVLink: not visible in this capture" "$TEST_TMP/l"
'
test_expect_success 'topo --json has the same matrix' '
    "$NCD_BIN" topo --sysroot "$FIX/dgx-8gpu-4hca" --json >"$TEST_TMP/j" &&
    grep -q "\"nvlink_source\": \".ncd/nvml\"" "$TEST_TMP/j" &&
    tr -d " \n" <"$TEST_TMP/j" | grep -q "\"matrix\":\[\[\"X\",\"NV12\""
'
test_expect_success 'this machine: says when there is no GPU instead of guessing' '
    "$NCD_BIN" topo >"$TEST_TMP/live" ;
    if grep -q "No NVIDIA GPU found" "$TEST_TMP/live"; then
        ! grep -q "^GPU0" "$TEST_TMP/live"
    else
        grep -q "^GPU0" "$TEST_TMP/live"
    fi
'
test_expect_success 'bad --topology file: clear error, status 3' '
    echo "<nope/>" >"$TEST_TMP/bad.xml" ;
    "$NCD_BIN" topo --topology "$TEST_TMP/bad.xml" 2>"$TEST_TMP/err" ; rc=$? ;
    [ $rc -eq 3 ] && grep -q "bad.xml" "$TEST_TMP/err"
'
if [ -f "$HW/nvidiaDGX2.xml" ]; then
    test_expect_success 'hwloc XML of a DGX-2: 16 V100, NV6 everywhere' '
        "$NCD_BIN" topo --topology "$HW/nvidiaDGX2.xml" >"$TEST_TMP/x" &&
        grep -c "^GPU[0-9]*	" "$TEST_TMP/x" | grep -qx 16 &&
        grep "^GPU3	" "$TEST_TMP/x" | grep -q "NV6	NV6	 X 	NV6" &&
        grep -q "Tesla V100-SXM3-32GB-H" "$TEST_TMP/x"
    '
    test_expect_success 'hwloc XML of POWER8: NVLink pairs, SYS across sockets' '
        "$NCD_BIN" topo --topology "$HW/power8gpudistances.xml" >"$TEST_TMP/p" &&
        grep -q "^GPU0	 X 	NV2	SYS	SYS	" "$TEST_TMP/p"
    '
    test_expect_success 'hwloc XMLs without GPUs: NIC rows only, no failure' '
        for f in 96em64t-4n4d3ca2co-pci 16intel64-manyVFs; do
            "$NCD_BIN" topo --topology "$HW/$f.xml" >"$TEST_TMP/n" || exit 1
            grep -q "^NIC0	 X " "$TEST_TMP/n" || exit 1
        done
    '
else
    echo "# shared hwloc fixtures absent: XML cases skipped"
fi
test_done
