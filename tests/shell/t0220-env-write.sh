#!/bin/sh
# `env --write FILE`: one managed block, idempotent, user lines untouched,
# atomic (a full disk leaves the original intact), --remove restores it.
. "$(dirname "$0")/lib.sh"
NCD="env -u NCCL_SOCKET_IFNAME $NCD_BIN"

test_expect_success 'prints export lines' "
    $NCD env >out && grep -q '^export NCCL_SOCKET_IFNAME=' out ||
    grep -q 'nothing to recommend' out
"
test_expect_success 'write is idempotent and keeps user lines byte for byte' "
    printf '# before\nexport PATH=\$PATH:/opt/x\n' >rc &&
    $NCD env --write rc 2>err &&
    grep -q updated err &&
    cp rc rc.1 &&
    $NCD env --write rc 2>err &&
    grep -q 'already up to date' err &&
    test_cmp rc.1 rc &&
    test \$(grep -c '^# >>> nccl-doctor >>>' rc) -eq 1 &&
    head -2 rc >head && printf '# before\nexport PATH=\$PATH:/opt/x\n' >want &&
    test_cmp want head
"
test_expect_success 'lines after the block stay untouched on re-write' "
    printf 'echo after\n' >>rc && cp rc rc.2 &&
    NCCL_SOCKET_IFNAME=doesnotexist $NCD_BIN env --write rc 2>err &&
    tail -1 rc | grep -qx 'echo after' &&
    head -2 rc | cmp - want &&
    test \$(grep -c '^# >>> nccl-doctor >>>' rc) -eq 1 &&
    test -f rc.nccl-doctor.bak
"
test_expect_success 'the block is valid shell' "
    sh -n rc && (. ./rc >/dev/null 2>&1; true)
"
test_expect_success 'mode is preserved' "
    chmod 600 rc && $NCD env --write rc 2>/dev/null &&
    test \"\$(stat -c %a rc)\" = 600
"
test_expect_success 'remove restores the original bytes' "
    printf 'a\nb\n' >rc3 && cp rc3 rc3.orig &&
    $NCD env --write rc3 2>/dev/null && $NCD env --remove rc3 2>/dev/null &&
    test_cmp rc3.orig rc3
"
test_expect_success 'unbalanced markers: refused, file untouched' "
    printf 'x\n# >>> nccl-doctor >>>\nexport A=1\n' >bad && cp bad bad.orig &&
    st=0; $NCD env --write bad 2>err || st=\$?
    test \$st -eq 3 && grep -q 'never closed' err && test_cmp bad.orig bad
"
test_expect_success 'dry run writes nothing' "
    printf 'z\n' >dry && $NCD env --write dry --dry-run >preview 2>/dev/null &&
    test \"\$(cat dry)\" = z && grep -q 'nccl-doctor >>>' preview
"
test_expect_success 'formats: env, docker, k8s, slurm' "
    $NCD env --format env | grep -vq '^export' &&
    $NCD env --format k8s | grep -q '^env:' &&
    $NCD env --format slurm | grep -q '^#SBATCH --export=ALL' &&
    $NCD env --format docker --profile docker | grep -q 'shm-size' &&
    $NCD env --profile ethernet | grep -q 'NCCL_SOCKET_NTHREADS=4' &&
    st=0; $NCD env --format yaml 2>/dev/null || st=\$?; test \$st -eq 3
"
test_expect_success 'a dangling symlink: the target is created, the link kept' "
    ln -s real-rc link-rc && $NCD env --write link-rc 2>/dev/null &&
    test -L link-rc && grep -q 'nccl-doctor >>>' real-rc
"
if [ "$(id -u)" -eq 0 ] && id nobody >/dev/null 2>&1 &&
   su nobody -s /bin/sh -c "test -x '$NCD_BIN'" 2>/dev/null; then
    test_expect_success 'a read-only file is not replaced (as an ordinary user)' "
        chmod 755 . && mkdir -m 777 rodir && printf 'keep\n' >rodir/rc && chmod 444 rodir/rc &&
        st=0; su nobody -s /bin/sh -c \"$NCD env --write \$PWD/rodir/rc\" 2>err || st=\$?
        test \$st -eq 3 && grep -q 'not writable' err && test \"\$(cat rodir/rc)\" = keep
    "
fi
if [ "$(id -u)" -eq 0 ] && mkdir -p "$TEST_TMP/small" &&
   mount -t tmpfs -o size=16k tmpfs "$TEST_TMP/small" 2>/dev/null; then
    test_expect_success 'full disk: error, original intact, no temp file' "
        printf '# keep me\n' >small/rc &&
        dd if=/dev/zero of=small/fill bs=1k count=64 2>/dev/null; sync;
        st=0; $NCD env --write small/rc 2>err || st=\$?
        cat err; umount_ok=1
        test \$st -eq 3 &&
        test \"\$(cat small/rc)\" = '# keep me' &&
        test \$(ls -A small | grep -c ncd-) -eq 0 &&
        grep -qi 'space' err
    "
    umount "$TEST_TMP/small"
else
    echo "# skipped full-disk case: cannot mount a small tmpfs here"
fi
test_done
