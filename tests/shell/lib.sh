# Shell test helpers (git's test-lib.sh in miniature).  Source it first:
#   . "$(dirname "$0")/lib.sh"
# Provides: test_expect_success TITLE 'commands', test_cmp EXPECTED ACTUAL,
# skip_all REASON (exit 77), test_done.  $NCD_BIN is the binary under test.
# A case that exits 77 is reported "ok N - TITLE # SKIP <its last line>"
# (it could not run here: a tool or an input missing), never as passed.
set -u
: "${NCD_BIN:?NCD_BIN must point at the nccl-doctor binary}"
: "${NCD_SOURCE_DIR:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${NCD_SHARED_DIR:=$NCD_SOURCE_DIR/../shared}"
TEST_TMP=$(mktemp -d "${TMPDIR:-/tmp}/ncd-test.XXXXXX")
trap 'rm -rf "$TEST_TMP"' EXIT
test_count=0
test_failed=0
test_skipped=0

test_expect_success() {
    test_count=$((test_count + 1))
    st=0
    (set -e; cd "$TEST_TMP" && eval "$2") >"$TEST_TMP/.out" 2>&1 || st=$?
    if [ "$st" -eq 0 ]; then
        echo "ok $test_count - $1"
    elif [ "$st" -eq 77 ]; then
        test_skipped=$((test_skipped + 1))
        echo "ok $test_count - $1 # SKIP $(tail -n 1 "$TEST_TMP/.out")"
    else
        test_failed=$((test_failed + 1))
        echo "not ok $test_count - $1"
        sed 's/^/#   /' "$TEST_TMP/.out"
    fi
}

test_cmp() {
    diff -u "$1" "$2"
}

skip_all() {
    echo "1..0 # SKIP $1"
    exit 77
}

test_done() {
    echo "1..$test_count"
    echo "$((test_count - test_failed - test_skipped)) passed," \
         "$test_skipped skipped, $test_failed failed"
    [ "$test_failed" -eq 0 ] || return 1
    # every case skipped: the whole test is a skip, not a pass
    [ "$test_count" -gt 0 ] && [ "$test_skipped" -eq "$test_count" ] && exit 77
    return 0
}
