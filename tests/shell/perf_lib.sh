# Helpers for the perf shell tests (sourced; not a test itself).
# NCD_BIN is the nccl-doctor binary (set by ctest).
set -u
: "${NCD_BIN:?NCD_BIN must point at nccl-doctor}"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ncd-perf.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
fails=0
n=0
ok()   { n=$((n+1)); echo "ok $n - $*"; }
bad()  { n=$((n+1)); fails=$((fails+1)); echo "not ok $n - $*"; }
check() { # check "description" command...
    desc=$1; shift
    if "$@"; then ok "$desc"; else bad "$desc"; fi
}
skip() { echo "SKIP: $*"; exit 77; }
finish() {
    echo "1..$n"
    [ "$fails" -eq 0 ] || { echo "$fails failed"; exit 1; }
    exit 0
}
perf() { "$NCD_BIN" perf "$@"; }

# Parses an nccl-tests table the way health-check scripts do: data rows are
# lines not starting with '#', split on whitespace, 13 fields; prints
# "rows=N wrong=W bad=B avg=X" where bad counts malformed rows.  hypercube
# has an empty redop column, so its rows have 12 fields.
parse_table() {
    awk '
    /^#/ { if ($2=="Avg" && $3=="bus") avg=$6; next }
    NF==0 { next }
    { rows++; w1=9; w2=13
      if (NF==12 && $4 ~ /^-?[0-9]+$/) { w1=8; w2=12 }
      else if (NF!=13) { bad++; next }
      if ($w1!="N/A") wrong+=$w1; if ($w2!="N/A") wrong+=$w2
      for (i=1;i<=2;i++) if ($i !~ /^[0-9]+$/) bad++ }
    END { printf "rows=%d wrong=%d bad=%d avg=%s\n", rows, wrong, bad, avg }' "$1"
}
