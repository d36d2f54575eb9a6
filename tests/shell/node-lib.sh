# Helpers for the node shell tests (t05NN): git-style test_expect_success,
# skip with exit 77.  Source it; NCD_BIN, NCD_SOURCE_DIR are set by ctest.
set -u
: "${NCD_BIN:?NCD_BIN must point at nccl-doctor}"
: "${NCD_SOURCE_DIR:?}"
NCD_SHARED_DIR=${NCD_SHARED_DIR:-$NCD_SOURCE_DIR/../shared}
# Unpacking captures with thousands of sysfs entries is 30x faster on a
# tmpfs than on an overlay /tmp: use /dev/shm when it is writable.
_base=${TMPDIR:-/tmp}
[ -w /dev/shm ] && [ -d /dev/shm ] && _base=/dev/shm
TEST_TMP=$(mktemp -d "$_base/ncd-test.XXXXXX")
trap 'rm -rf "$TEST_TMP"' EXIT
_fails=0
_count=0
test_expect_success() {
    _count=$((_count + 1))
    if (eval "$2") >"$TEST_TMP/out.$_count" 2>&1; then
        echo "ok $_count - $1"
    else
        echo "not ok $_count - $1"
        sed 's/^/#   /' "$TEST_TMP/out.$_count"
        _fails=$((_fails + 1))
    fi
}
test_cmp() { diff -u "$1" "$2"; }
test_done() {
    echo "1..$_count"
    [ "$_fails" -eq 0 ] || { echo "# $_fails failed"; exit 1; }
    exit 0
}
skip_all() { echo "1..0 # SKIP $*"; exit 77; }
# "severity id" lines of a check --json report on stdin.
findings_of() {
    awk '
        /"findings": \[/ { inf = 1 }
        inf && /^    \{/ { id = ""; sev = "" }
        inf && /^      "id": /       { id = $2; gsub(/[",]/, "", id) }
        inf && /^      "severity": / { sev = $2; gsub(/[",]/, "", sev); print sev, id }
        inf && /^  \],?$/ { inf = 0 }
    '
}
