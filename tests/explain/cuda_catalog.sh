#!/bin/sh
# explain.cuda_catalog: every CUDA error of data/cuda-errors.tsv, in each
# form a log shows it, is claimed by its class rule or a rule of its
# category (explain_cuda_catalog), and one batch `nccl-doctor explain
# --json` run over all those lines ends without the "no rule" fallback.
# Usage: cuda_catalog.sh EXPLAIN_CUDA_CATALOG NCCL_DOCTOR CUDA-ERRORS.tsv
set -u
CHECK=$1 NCD=$2 TSV=$3
[ -r "$TSV" ] || { echo "catalogue $TSV missing: skipped"; exit 77; }
command -v jq >/dev/null || { echo "jq not installed: skipped"; exit 77; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ncd-cudacat.$$.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT INT TERM

st=0
"$CHECK" --lines "$TMP/lines.log" "$TSV" || st=1
[ -s "$TMP/lines.log" ] || { echo "no lines generated"; exit 1; }
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
echo "batch run: $(wc -l <"$TMP/lines.log") lines, $(jq '.findings | length' "$TMP/out.json") findings"
exit $st
