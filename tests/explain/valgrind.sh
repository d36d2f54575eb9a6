#!/bin/sh
# explain under valgrind's memcheck, errors fatal: the shared and gathered
# corpora (text, --json, --facts; and concatenated into one file large
# enough for the threaded reader) and the rules' self-test.  PCRE2's JIT
# reads a few bytes past the subject; explain's line buffers are zeroed so
# that those reads see initialised memory (no suppression file needed).
# Usage: valgrind.sh <nccl-doctor> <source dir> <asan:0|1>
# Exit 77 (skipped) without valgrind or on an AddressSanitizer build (the
# two cannot run together; CI runs this in its clang build).
bin=$1 src=$2 asan=$3
[ "$asan" = 1 ] && { echo "skipped: AddressSanitizer build (valgrind cannot run it)"; exit 77; }
command -v valgrind >/dev/null 2>&1 || { echo "skipped: valgrind not installed"; exit 77; }
shared=$src/../shared/corpus/cases
gathered=$src/tests/explain/corpus
[ -d "$gathered" ] || { echo "FAIL: $gathered missing"; exit 1; }
set -- "$gathered"
[ -d "$shared" ] && set -- "$shared" "$gathered"
vg() {
    valgrind --error-exitcode=99 --quiet --track-origins=no "$@" >/dev/null
    st=$?
    # explain exits 0 or 2 (findings); 99 is valgrind's; anything else
    # (valgrind giving up, a crash) is a failure too
    if [ $st -ne 0 ] && [ $st -ne 2 ]; then echo "FAIL ($st): $*"; exit 1; fi
}
vg "$bin" explain "$@"
vg "$bin" explain --json --facts "$@"
vg "$bin" explain --check-rules
# the threaded block reader (files of 2 MiB and more): the corpora's logs
# concatenated past 3 MB, with 2 and 3 threads
big=$(mktemp "${TMPDIR:-/tmp}/ncd-vg.XXXXXX") || exit 1
trap 'rm -f "$big"' EXIT
while [ "$(wc -c <"$big")" -lt 3000000 ]; do
    for d in "$@"; do
        cat "$d"/*/log.txt >>"$big" || { echo "FAIL: cannot write $big"; exit 1; }
        printf '\n' >>"$big"
    done
done
vg "$bin" explain --threads 2 --json --facts "$big"
vg "$bin" explain --threads 3 "$big"
echo "ok: memcheck clean on explain over $* (also as one 3 MB file on 2 and 3 threads) and the rules' self-test"
