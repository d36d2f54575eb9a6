#!/bin/sh
# Pictures: topo --format svg on every capture (tests/fixtures and
# ../shared/fixtures/hwloc), perf --plot and tune --plot, each rendered
# with rsvg-convert and checked not blank by counting the pixels that are
# not background (tests/helper/png_ink.c).
. "$NCD_SOURCE_DIR/tests/shell/node-lib.sh"
FIX=$NCD_SOURCE_DIR/tests/fixtures/sysroots
HW=$NCD_SHARED_DIR/fixtures/hwloc
INK=${NCD_BUILD_DIR:?}/tests/png_ink
command -v rsvg-convert >/dev/null ||
    skip_all "rsvg-convert missing: run scripts/install-deps.sh (librsvg2-bin)"
[ -x "$INK" ] || skip_all "$INK not built"

# render SVG MIN: the picture as PNG has at least MIN drawn pixels
render() {
    rsvg-convert "$1" -o "$1.png" || return 1
    set -- "$1" "$2" $("$INK" "$1.png")
    echo "$1: ${3}x$4, $5 drawn pixels"
    [ "$5" -ge "$2" ]
}

test_expect_success 'the blank check can fail: a white picture has no ink' '
    printf "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"50\" height=\"40\"><rect width=\"50\" height=\"40\" fill=\"#fff\"/></svg>\n" >"$TEST_TMP/white.svg" &&
    ! render "$TEST_TMP/white.svg" 1
'

# topo svg of one capture; the GPU boxes must match topo --json's GPUs
topo_pic() {
    name=$1; shift
    "$NCD_BIN" topo "$@" --format svg --output "$TEST_TMP/$name.svg" || return 1
    "$NCD_BIN" topo "$@" --json >"$TEST_TMP/$name.json" || return 1
    ngpu=$(jq ".topology.gpus | length" "$TEST_TMP/$name.json")
    nnic=$(jq ".topology.nics | length" "$TEST_TMP/$name.json")
    boxes=$(grep -c "font-size=\"12.5\" text-anchor=\"start\" font-weight=\"bold\" fill=\"#000000\">GPU[0-9]*<" "$TEST_TMP/$name.svg")
    nboxes=$(grep -c "font-size=\"12.5\" text-anchor=\"start\" font-weight=\"bold\" fill=\"#000000\">NIC[0-9]* " "$TEST_TMP/$name.svg")
    echo "$name: $ngpu GPUs, $nnic NICs; boxes $boxes, $nboxes"
    [ "$boxes" -eq "$ngpu" ] && [ "$nboxes" -eq "$nnic" ] || return 1
    render "$TEST_TMP/$name.svg" 2000
}

for s in "$FIX"/*/; do
    n=$(basename "$s")
    test_expect_success "topo svg: $n" "topo_pic $n --sysroot $s"
done
if [ -d "$HW" ]; then
    for f in "$HW"/*.xml; do
        n=$(basename "$f" .xml)
        test_expect_success "topo svg: hwloc $n" "topo_pic $n --topology $f"
    done
    for f in "$HW"/*.tar.bz2; do
        n=$(basename "$f" .tar.bz2)
        test_expect_success "topo svg: hwloc capture $n" "topo_pic $n --sysroot $f"
    done
else
    echo "# $HW absent: the shared hwloc captures are not drawn"
fi

test_expect_success 'topo svg: the DGX fixture shows NVLink, switches and NUMA nodes' '
    f=$TEST_TMP/dgx-8gpu-4hca.svg &&
    grep -q ">NUMA node 1<" "$f" && grep -q ">PCIe switch 0000:81:00.0<" "$f" &&
    grep -q ">NV12<" "$f" && grep -q ">NIC0 mlx5_0<" "$f" &&
    grep -q ">NVIDIA A100-SXM4-80GB<" "$f"
'

test_expect_success 'topo svg: names from a capture are escaped, the SVG stays XML' '
    grep -c "<svg " "$TEST_TMP/dgx-8gpu-4hca.svg" | grep -qx 1 &&
    tail -n 1 "$TEST_TMP/dgx-8gpu-4hca.svg" | grep -qx "</svg>" &&
    ! grep -q "&[^a-z#]" "$TEST_TMP/dgx-8gpu-4hca.svg"
'

test_expect_success 'perf --plot: this run and an earlier -J run overlaid' '
    cd "$TEST_TMP" &&
    "$NCD_BIN" perf all_reduce --backend socket -np 2 -b 4K -e 256K -f 4 -n 2 -w 1 -J run1.json >/dev/null &&
    "$NCD_BIN" perf all_reduce --backend socket -np 2 -b 4K -e 256K -f 4 -n 2 -w 1 -d all \
        --plot p.svg --plot-with run1.json >/dev/null &&
    grep -q ">run1.json float sum<" p.svg &&
    grep -q ">all_reduce_perf double sum in-place<" p.svg &&
    [ "$(grep -c "<polyline" p.svg)" -ge 4 ] &&
    render p.svg 5000
'

test_expect_success 'perf --plot-with: a file that is not an nccl-tests run stops perf first' '
    cd "$TEST_TMP" && echo "{}" >bad.json &&
    "$NCD_BIN" perf all_reduce --backend socket -np 2 -b 4K -e 4K --plot q.svg --plot-with bad.json >out 2>err
    [ $? -eq 6 ] && grep -q "bad.json: no \"results\"" err && [ ! -e q.svg ] && [ ! -s out ]
'

test_expect_success 'tune --plot: one line per candidate' '
    cd "$TEST_TMP" &&
    "$NCD_BIN" tune --backend socket -np 2 --reps 1 --families sockets --plot t.svg -- all_reduce -b 4K -e 64K -f 4 -n 2 -w 1 >tune.out &&
    grep -q ">(current) (1 run)<" t.svg &&
    [ "$(grep -c "<polyline" t.svg)" -eq 3 ] &&
    render t.svg 3000
'

test_done
