#!/bin/sh
# explain.catalog: every NCCL failure format of the catalogue (2.18 .. the
# newest release) is claimed by its catalogued rule or category, line by
# line (explain_catalog, through the library's per-line classifier), and one
# batch `nccl-doctor explain --json` run over all those lines ends with no
# "no rule" fallback finding and with every catalogued rule id present.
# Usage: catalog.sh EXPLAIN_CATALOG NCCL_DOCTOR CATALOGUE.tsv
set -u
CHECK=$1 NCD=$2 TSV=$3
[ -r "$TSV" ] || { echo "catalogue $TSV missing: skipped"; exit 77; }
command -v jq >/dev/null || { echo "jq not installed: skipped"; exit 77; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ncd-catalog.$$.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT INT TERM

st=0
"$CHECK" --since 2.18.0 --lines "$TMP/lines.log" "$TSV" || st=1
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
# every catalogued rule id (not a category) of the selected releases shows
jq -r '.findings[].id' "$TMP/out.json" | sort -u >"$TMP/found"
awk -F'\t' '!/^#/ && $1 == "nccl" && $12 ~ /^[a-z0-9-]+\.[a-z0-9.-]+$/ { print $12 }' "$TSV" |
    sort -u >"$TMP/expected"
jq -r '.findings[].category' "$TMP/out.json" | sort -u >"$TMP/cats"
missing=$(comm -23 "$TMP/expected" "$TMP/found" | grep -vxFf "$TMP/cats" || true)
if [ -n "$missing" ]; then
    echo "catalogued ids with no finding in the batch run:"; echo "$missing"; st=1
fi
echo "batch run: $(wc -l <"$TMP/lines.log") lines, $(wc -l <"$TMP/found") distinct findings"
exit $st
