#!/bin/sh
# Fails on a dependency cycle:
#  - between the modules of libncd (src/lib/<module>/): module A depends on
#    module B when an object of A uses a symbol an object of B defines
#    (nm on the built objects, so only real uses count);
#  - between headers (#include "..." in include/ncd/*.h and src/lib/**/*.h).
# Usage: scripts/check-layers.sh BUILD_DIR [SOURCE_DIR] [-v]
#   (-v prints the module graph; SOURCE_DIR defaults to this repository)
set -eu
BUILD=$(cd "${1:?usage: check-layers.sh BUILD_DIR [SOURCE_DIR] [-v]}" && pwd)
SRC=${2:-$(dirname "$0")/..}
VERBOSE=${3:-}
[ "$SRC" = -v ] && { VERBOSE=-v; SRC=$(dirname "$0")/..; }
cd "$SRC"
OBJ=$BUILD/CMakeFiles/ncd.dir/src/lib
# the sources the objects were built from (CMake's source directory)
SRCROOT=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$BUILD/CMakeCache.txt")
[ -d "$OBJ" ] || { echo "no objects under $OBJ (build first)"; exit 1; }
command -v nm >/dev/null || { echo "nm (binutils) is needed"; exit 1; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ncd-layers.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
st=0

# module <tab> symbol, for definitions and for uses (one nm for all objects)
: >"$TMP/objs"
for o in "$OBJ"/*/*.o; do
    # objects of sources removed since the last build do not count
    src=${o#"$BUILD"/CMakeFiles/ncd.dir/}
    if [ -f "$SRCROOT/${src%.o}" ]; then
        printf '%s\n' "$o" >>"$TMP/objs"
    fi
done
# nm -A: "FILE:VALUE TYPE SYMBOL", or "FILE: U SYMBOL" for a use
tr '\n' '\0' <"$TMP/objs" | xargs -0 nm -A | awk '
    { f = substr($1, 1, index($1, ":") - 1); n = split(f, p, "/"); m = p[n - 1]
      t = $(NF - 1); s = $NF }
    t == "U" { print m "\t" s > "/dev/stderr"; next }
    t ~ /^[TDBRCV]$/ { print m "\t" s }' >"$TMP/defs" 2>"$TMP/uses"
awk -F'\t' 'NR == FNR { def[$2] = $1; next }
            ($2 in def) && def[$2] != $1 { print $1, def[$2] }' \
    "$TMP/defs" "$TMP/uses" | sort -u >"$TMP/edges"
[ -n "$VERBOSE" ] && cat "$TMP/edges"
if ! tsort "$TMP/edges" >"$TMP/order" 2>"$TMP/err"; then
    echo "dependency cycle between libncd modules (A B = A uses B):"
    cat "$TMP/err"
    st=1
fi

# headers: file -> included file, resolved like the compiler's -I paths
for h in $(find include src/lib -name '*.h' 2>/dev/null); do
    d=$(dirname "$h")
    sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$h" |
    while read -r inc; do
        for cand in "include/$inc" "src/lib/$inc" "$d/$inc"; do
            if [ -f "$cand" ]; then
                echo "$h $cand"
                break
            fi
        done
    done
done | sort -u >"$TMP/hedges"
if ! tsort "$TMP/hedges" >/dev/null 2>"$TMP/herr"; then
    echo "include cycle between headers:"
    cat "$TMP/herr"
    st=1
fi
# checks are pure functions of the node: no file, no system call, no context
if grep -n -E '#include "ncd/(fs|sysops)\.h"|ncd_fs_|ncd_sys_|ncd_getenv\(|ncd_ctx_is_live' \
        src/lib/check/*.c src/lib/check/*.h >"$TMP/impure" 2>/dev/null; then
    echo "a check reads the system (checks read only struct ncd_node):"
    cat "$TMP/impure"
    st=1
fi
# live versus capture is decided in the system-operations layer (sys/, the
# sysroot in core/); the snapshot records it as a fact (sys.live)
if grep -n 'ncd_ctx_is_live' $(find src -name '*.c' ! -path 'src/lib/sys/*' \
        ! -path 'src/lib/core/*' ! -path src/lib/snapshot/comp_base.c) \
        >"$TMP/live" 2>/dev/null; then
    echo "a live-versus-capture branch outside sys/ (use the operations of sysops.h):"
    cat "$TMP/live"
    st=1
fi
[ $st -eq 0 ] && echo "no cycle: $(wc -l <"$TMP/edges") module edges, $(wc -l <"$TMP/hedges") include edges"
exit $st
