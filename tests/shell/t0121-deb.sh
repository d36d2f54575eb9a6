#!/bin/sh
# The Debian package (cpack -G DEB): its contents, and a real dpkg install
# and removal into a private root (dpkg --root, maintainer scripts run
# with DPKG_ROOT): /usr/bin links only where the name is free, a user's
# file left alone, nothing of ours left after removal.
. "$(dirname "$0")/lib.sh"
: "${NCD_BUILD_DIR:?}"
for t in cpack dpkg-deb dpkg-shlibdeps; do
    command -v $t >/dev/null || skip_all "$t not installed"
done
[ "$(id -u)" -eq 0 ] || skip_all "dpkg --root needs root (file ownership)"
B=$NCD_BUILD_DIR

test_expect_success 'cpack builds a .deb' "
    T=\$PWD && (cd \"$B\" && cpack -G DEB -B \"\$T/pkg\" >\"\$T/cpack.log\" 2>&1) || { cat cpack.log; exit 1; }
    ls pkg/*.deb >debs && test \$(wc -l <debs) -eq 1
"
DEB=$TEST_TMP/pkg
test_expect_success 'contents: binary, man page, completions, libexec links; no /usr/bin *_perf' "
    dpkg-deb -c $DEB/*.deb >c &&
    grep -q ' ./usr/bin/nccl-doctor\$' c &&
    grep -q ' ./usr/share/man/man1/nccl-doctor.1' c &&
    grep -q ' ./usr/share/bash-completion/completions/nccl-doctor\$' c &&
    grep -q ' ./usr/share/zsh/vendor-completions/_nccl-doctor\$' c &&
    grep -q ' ./usr/libexec/nccl-doctor/all_reduce_perf -> ../../bin/nccl-doctor' c &&
    ! grep -q ' ./usr/bin/.*_perf' c &&
    ! grep -v ' ./usr/' c | grep -v ' ./\$' &&
    dpkg-deb -I $DEB/*.deb >i && grep -q 'Package: nccl-doctor' i &&
    grep -q 'postinst' i && grep -q 'prerm' i
"
test_expect_success 'dpkg -i into a private root: links where free, a user file kept' "
    R=\$PWD/root && mkdir -p \$R/var/lib/dpkg/info \$R/var/lib/dpkg/updates \$R/usr/bin &&
    touch \$R/var/lib/dpkg/status \$R/var/lib/dpkg/available &&
    printf '#!/bin/sh\necho mine\n' >\$R/usr/bin/all_gather_perf && cp \$R/usr/bin/all_gather_perf mine &&
    dpkg --root=\$R --force-script-chrootless --force-depends --force-not-root \
         --log=\$PWD/dpkg.log -i $DEB/*.deb >out 2>&1 || { cat out; exit 1; }
    test -x \$R/usr/bin/nccl-doctor &&
    test \"\$(readlink \$R/usr/bin/all_reduce_perf)\" = nccl-doctor &&
    test_cmp mine \$R/usr/bin/all_gather_perf &&
    grep -q 'all_gather_perf exists, left alone' out &&
    \$R/usr/bin/all_reduce_perf --version | grep -q '^nccl-doctor'
"
test_expect_success 'dpkg -r removes everything of ours, the user file stays' "
    R=\$PWD/root && test -x \$R/usr/bin/nccl-doctor &&
    dpkg --root=\$R --force-script-chrootless --force-not-root \
         --log=\$PWD/dpkg.log -r nccl-doctor >out 2>&1 || { cat out; exit 1; }
    find \$R/usr ! -type d >left &&
    printf '%s\n' \$R/usr/bin/all_gather_perf >exp && test_cmp exp left &&
    test_cmp mine \$R/usr/bin/all_gather_perf
"
test_done
