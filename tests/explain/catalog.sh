#!/bin/sh
# explain.catalog: every failure format of the message catalogue
# (data/nccl-messages.tsv: NCCL 2.4 .. the newest release, nccl-tests,
# PyTorch, Gloo, Horovod, vLLM, Ray, Paddle) is claimed by its catalogued rule or category, line by
# line (explain_catalog, through the library's per-line classifier; the
# figures for 2.18 .. newest are printed separately), and one batch
# `nccl-doctor explain --json` run over all those lines ends without the
# "no rule" fallback and with a finding for every catalogued rule id.
# Usage: catalog.sh EXPLAIN_CATALOG NCCL_DOCTOR CATALOGUE.tsv
set -u
CHECK=$1 NCD=$2 TSV=$3
[ -r "$TSV" ] || { echo "catalogue $TSV missing: skipped"; exit 77; }
command -v jq >/dev/null || { echo "jq not installed: skipped"; exit 77; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ncd-catalog.$$.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT INT TERM

st=0
"$CHECK" --since 2.18.0 "$TSV" | grep -E '^(catalogue|coverage|FAIL)' || st=1
"$CHECK" --since 2.4.0 --lines "$TMP/lines.log" --ids "$TMP/ids" "$TSV" >"$TMP/all.out" || {
    st=1; grep '^FAIL' "$TMP/all.out" | head -50; }
grep -E '^(catalogue|coverage|other)' "$TMP/all.out"
[ -s "$TMP/lines.log" ] || { echo "no lines generated"; exit 1; }

# One batch run.  Exit 2 = findings (expected), anything else is a failure.
rc=0
"$NCD" explain --json "$TMP/lines.log" >"$TMP/out.json" 2>"$TMP/err" || rc=$?
if [ "$rc" -ne 2 ]; then
    echo "explain exited $rc (want 2)"; cat "$TMP/err"; exit 1
fi
fallback=$(jq -r '.findings[] | select(.id == "nccl.warn.other" or .id == "explain.nothing-found")
                  | "\(.id): \(.evidence | join(" | "))"' "$TMP/out.json")
if [ -n "$fallback" ]; then
    echo "batch run fell back to 'no rule':"; echo "$fallback"; st=1
fi
# every rule id a line must be claimed by shows up as a finding (a derived
# finding may absorb some; those are listed by id too)
jq -r '.findings[].id' "$TMP/out.json" | sort -u >"$TMP/found"
sort -u "$TMP/ids" >"$TMP/expected"
missing=$(comm -23 "$TMP/expected" "$TMP/found")
if [ -n "$missing" ]; then
    echo "catalogued rule ids with no finding in the batch run:"; echo "$missing"; st=1
fi
echo "batch run: $(wc -l <"$TMP/lines.log") lines, $(wc -l <"$TMP/expected") rule ids expected," \
     "$(wc -l <"$TMP/found") findings"
exit $st
