#!/bin/sh
# The layering of libncd: no dependency cycle between its modules (by the
# symbols their objects use) and no include cycle between headers.
. "$(dirname "$0")/lib.sh"
command -v nm >/dev/null && command -v tsort >/dev/null ||
    skip_all "nm or tsort missing (binutils, coreutils)"
[ -d "${NCD_BUILD_DIR:?}/CMakeFiles/ncd.dir/src/lib" ] ||
    skip_all "no libncd objects under $NCD_BUILD_DIR"

test_expect_success 'no cycle between libncd modules or headers' '
    sh "$NCD_SOURCE_DIR/scripts/check-layers.sh" "$NCD_BUILD_DIR"
'
test_expect_success 'an include cycle is found' '
    mkdir -p src/lib/a include/ncd &&
    printf "#include \"ncd/y.h\"\n" >include/ncd/x.h &&
    printf "#include \"a/z.h\"\n" >include/ncd/y.h &&
    printf "#include \"ncd/x.h\"\n" >src/lib/a/z.h &&
    ! sh "$NCD_SOURCE_DIR/scripts/check-layers.sh" "$NCD_BUILD_DIR" . \
        >out 2>&1 &&
    grep -q "include cycle" out
'
test_done
