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

# lsan_tracer_crashed: a file the case wrote under $TEST_TMP (or its
# output) holds LeakSanitizer's own crash at exit, "Tracer caught signal
# 11" / "LeakSanitizer has encountered a fatal error": the sanitizer's
# stop-the-world tracer failing intermittently on loaded CI machines
# (google/sanitizers#1353), not a leak ("detected memory leaks") and not
# the tool's failure.  Such a case is run once more, and says so.
lsan_tracer_crashed() {
    seen=$(find "$TEST_TMP" -type f -newer "$TEST_TMP/.start" -size -16M \
        -exec grep -ho -e "LeakSanitizer has encountered a fatal error" \
        -e "LeakSanitizer: detected memory leaks" {} + 2>/dev/null)
    case $seen in
    *"detected memory leaks"*) return 1 ;;
    *"fatal error"*) return 0 ;;
    esac
    return 1
}

test_expect_success() {
    test_count=$((test_count + 1))
    st=0
    : >"$TEST_TMP/.start"
    (set -e; cd "$TEST_TMP" && eval "$2") >"$TEST_TMP/.out" 2>&1 || st=$?
    if [ "$st" -ne 0 ] && [ "$st" -ne 77 ] && lsan_tracer_crashed; then
        echo "# $1: LeakSanitizer's tracer crashed at exit (not a leak); run again"
        sed -n 's/^/#   /; /Tracer caught\|LeakSanitizer/p' "$TEST_TMP/.out"
        st=0
        : >"$TEST_TMP/.start"
        (set -e; cd "$TEST_TMP" && eval "$2") >"$TEST_TMP/.out" 2>&1 || st=$?
    fi
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
