#!/bin/sh
# Every sysroot fixture: `check --sysroot DIR --json` must report every
# finding listed in DIR/expected ("<severity> <id>" lines) and no error
# finding that is not listed.
. "$(dirname "$0")/lib.sh"
command -v jq >/dev/null || skip_all "jq not installed (scripts/install-deps.sh)"
FIX=$NCD_SOURCE_DIR/tests/fixtures/sysroots

for dir in "$FIX"/*/; do
    name=$(basename "$dir")
    [ -f "$dir/expected" ] || continue
    test_expect_success "fixture $name: expected findings, no other errors" "
        st=0
        \"\$NCD_BIN\" check --sysroot '$dir' --json >out.json 2>err || st=\$?
        cat err
        [ \$st -le 2 ] || { echo \"exit status \$st\"; exit 1; }
        jq -r '.findings[] | .severity + \" \" + .id' out.json | sort -u >got
        grep -v '^#' '$dir/expected' | sed '/^\$/d' | sort -u >want
        missing=\$(comm -23 want got)
        [ -z \"\$missing\" ] || { echo \"missing: \$missing\"; cat got; exit 1; }
        extra=\$(grep '^error ' got | comm -23 - want)
        [ -z \"\$extra\" ] || { echo \"unexpected errors: \$extra\"; exit 1; }
        if grep -q '^error ' want; then [ \$st -eq 2 ]; else [ \$st -eq 0 ]; fi
    "
    # A node with an active RDMA port is never told to disable IB, and
    # its topology counts that HCA (issue 14).
    test_expect_success "fixture $name: active RDMA port never disabled" "
        \"\$NCD_BIN\" check --sysroot '$dir' --json >out.json 2>/dev/null
        n=\$(jq -e '.facts.network.rdma_active_ports' out.json) || exit 1
        [ \"\$n\" -gt 0 ] || { echo \"no active RDMA port in this fixture\"; exit 77; }
        jq -e '[.findings[].env // {} | .NCCL_IB_DISABLE // empty
                | select(. != null and . != \"0\")] | length == 0' out.json &&
        jq -e '(.recommended_env.NCCL_IB_DISABLE // \"0\") == \"0\"' out.json &&
        jq -r '.findings[] | select(.id == \"gpu.topo.summary\") | .title' out.json >sum &&
        ! grep -q '(0 RDMA)' sum
    "
    test_expect_success "fixture $name: text report renders" "
        st=0; \"\$NCD_BIN\" check --sysroot '$dir' --no-color >out.txt || st=\$?
        [ \$st -le 2 ] && grep -q 'Network interfaces' out.txt &&
        grep -q 'error' out.txt
    "
done
test_done
