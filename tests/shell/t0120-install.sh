#!/bin/sh
# cmake --install: everything under --prefix (and DESTDIR), nothing of
# anyone else's replaced, the man page and completions installed, and the
# manifest removes exactly what was installed.
. "$(dirname "$0")/lib.sh"
: "${NCD_BUILD_DIR:?}"
command -v cmake >/dev/null || skip_all "cmake not installed"
B=$NCD_BUILD_DIR
inst() { cmake --install "$B" "$@" >log 2>&1 || { cat log; return 1; }; cp "$B/install_manifest.txt" manifest; }

test_expect_success 'into a scratch prefix: binary, man page, completions, links' "
    inst --prefix \$PWD/p &&
    test -x p/bin/nccl-doctor &&
    test -f p/share/man/man1/nccl-doctor.1 &&
    test -f p/share/bash-completion/completions/nccl-doctor &&
    test -f p/share/zsh/vendor-completions/_nccl-doctor &&
    test \"\$(readlink p/bin/all_reduce_perf)\" = nccl-doctor &&
    test \"\$(readlink p/libexec/nccl-doctor/all_reduce_perf)\" = ../../bin/nccl-doctor &&
    p/libexec/nccl-doctor/all_reduce_perf --version | grep -q '^nccl-doctor' &&
    p/bin/nccl-doctor --version | grep -q '^nccl-doctor'
"
test_expect_success 'nothing outside the prefix; the manifest lists every file and link' "
    grep -v \"^\$PWD/p/\" manifest >outside; ! test -s outside &&
    find \$PWD/p ! -type d | sort >found &&
    sort manifest >listed && test_cmp listed found
"
test_expect_success 'man -l renders the installed page' "
    command -v man >/dev/null || { echo \"man not installed\"; exit 77; }
    MANWIDTH=80 man -l p/share/man/man1/nccl-doctor.1 | grep -q 'SHARED OPTIONS'
"
test_expect_success 'a user all_reduce_perf is left alone, with a note; a re-install keeps our links' "
    mkdir -p q/bin && printf '#!/bin/sh\necho mine\n' >q/bin/all_reduce_perf &&
    ln -s /usr/bin/true q/bin/broadcast_perf && cp q/bin/all_reduce_perf before &&
    inst --prefix \$PWD/q &&
    test_cmp before q/bin/all_reduce_perf && test ! -L q/bin/all_reduce_perf &&
    test \"\$(readlink q/bin/broadcast_perf)\" = /usr/bin/true &&
    grep -q 'all_reduce_perf broadcast_perf: taken in .*/q/bin' log &&
    grep -q 'links of these names are in .*/q/libexec/nccl-doctor' log &&
    ! grep -q 'q/bin/all_reduce_perf\$' manifest &&
    grep -q 'q/libexec/nccl-doctor/all_reduce_perf\$' manifest &&
    test \"\$(readlink q/bin/all_gather_perf)\" = nccl-doctor &&
    inst --prefix \$PWD/q && grep -q 'q/bin/all_gather_perf\$' manifest &&
    test_cmp before q/bin/all_reduce_perf
"
test_expect_success 'DESTDIR with an absolute prefix stays below DESTDIR' "
    DESTDIR=\$PWD/stage inst --prefix /opt/ncd &&
    test -x stage/opt/ncd/bin/nccl-doctor &&
    test \"\$(readlink stage/opt/ncd/libexec/nccl-doctor/all_reduce_perf)\" = ../../bin/nccl-doctor &&
    grep -v '^/opt/ncd/' manifest >outside; ! test -s outside &&
    test ! -e /opt/ncd/bin/nccl-doctor &&
    DESTDIR=\$PWD/stage cmake -DMANIFEST=\$PWD/manifest -P \"$NCD_SOURCE_DIR/cmake/uninstall.cmake\" >ulog &&
    test -z \"\$(find stage ! -type d)\"
"
test_expect_success 'the manifest removes exactly what was installed' "
    inst --prefix \$PWD/q &&
    cmake -DMANIFEST=\$PWD/manifest -P \"$NCD_SOURCE_DIR/cmake/uninstall.cmake\" >ulog &&
    find q ! -type d | sort >left &&
    printf '%s\n' q/bin/all_reduce_perf q/bin/broadcast_perf >exp && test_cmp exp left &&
    test_cmp before q/bin/all_reduce_perf &&
    test ! -e q/libexec/nccl-doctor
"
test_done
