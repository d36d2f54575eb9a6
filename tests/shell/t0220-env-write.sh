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
test_expect_success '--set/--unset change the recommendation; the written block sets them exactly' "
    $NCD env --set NCCL_SOCKET_IFNAME==ens3 --unset NCCL_IB_HCA --set \"MY_OPT=a'b \\\$c\\\"d\" >so &&
    grep -qx 'export NCCL_SOCKET_IFNAME==ens3' so && grep -qx 'unset NCCL_IB_HCA' so &&
    test \$(grep -c 'NCCL_SOCKET_IFNAME' so) -eq 1 &&
    $NCD env --write setrc --set NCCL_SOCKET_IFNAME==ens3 --unset NCCL_IB_HCA --set \"MY_OPT=a'b \\\$c\\\"d\" 2>/dev/null &&
    NCCL_IB_HCA=mlx5_0 sh -c '. ./setrc; printf \"%s|%s|%s\" \"\$NCCL_SOCKET_IFNAME\" \"\${NCCL_IB_HCA-unset}\" \"\$MY_OPT\"' >got &&
    printf '%s' \"=ens3|unset|a'b \\\$c\\\"d\" | cmp - got &&
    $NCD env --set A=1 --set A=2 | grep -qx 'export A=2' &&
    st=0; $NCD env --set NOEQUALS 2>err || st=\$?; test \$st -eq 3 && grep -q 'NAME=VALUE' err &&
    st=0; $NCD env --set 1BAD=x 2>err || st=\$?; test \$st -eq 3 && grep -q 'not a variable name' err &&
    st=0; $NCD env --unset 'A B' 2>err || st=\$?; test \$st -eq 3
"
test_expect_success 'a dangling symlink: the target is created, the link kept' "
    ln -s real-rc link-rc && $NCD env --write link-rc 2>/dev/null &&
    test -L link-rc && grep -q 'nccl-doctor >>>' real-rc
"
test_expect_success 'remove restores every byte: no final newline, CRLF, blank lines at the end' "
    for orig in 'a\nb' 'a\r\nb\r\n' 'a\r\nb' 'a\n\n\n' '\n' '#x'; do
        printf \"\$orig\" >ex && cp ex ex.orig &&
        $NCD env --write ex 2>/dev/null && ! cmp -s ex ex.orig &&
        $NCD env --remove ex 2>/dev/null && cmp ex ex.orig || return 1
    done
"
test_expect_success 'markers inside a here-document are not the block' "
    printf 'cat >>other <<\"EOF\"\n# >>> nccl-doctor >>>\nexport OLD=1\n# <<< nccl-doctor <<<\nEOF\n' >hd &&
    cp hd hd.orig &&
    $NCD env --write hd 2>/dev/null &&
    test \$(grep -c '^# >>> nccl-doctor >>>' hd) -eq 2 &&
    head -5 hd | cmp - hd.orig &&
    sh -n hd &&
    $NCD env --remove hd 2>/dev/null && cmp hd hd.orig
"
test_expect_success 'a file ending inside a here-document: refused, untouched' "
    printf 'cat <<EOF\nunfinished\n' >hd2 && cp hd2 hd2.orig &&
    st=0; $NCD env --write hd2 2>err || st=\$?
    test \$st -eq 3 && grep -q 'here-document' err && cmp hd2 hd2.orig
"
test_expect_success 'a hard-linked file is refused, both names untouched' "
    printf 'mine\n' >hl && ln hl hl2 &&
    st=0; $NCD env --write hl 2>err || st=\$?
    test \$st -eq 3 && grep -q 'hard links' err &&
    test \"\$(stat -c %h hl)\" = 2 && test \"\$(cat hl2)\" = mine &&
    test \$(ls -A | grep -c '^\.hl\.ncd-tmp') -eq 0 &&
    $NCD env --write hl --dry-run 2>/dev/null | grep -q '^mine'
"
test_expect_success 'a chain of symlinks is followed to its end' "
    mkdir dots && printf 'mine\n' >dots/real &&
    ln -s real dots/l2 && ln -s \$PWD/dots/l2 l1 && ln -s l1 l0 &&
    $NCD env --write l0 2>/dev/null &&
    test -L l0 && test -L l1 && test -L dots/l2 &&
    grep -q 'nccl-doctor >>>' dots/real &&
    ln -s m2 dl1 && ln -s missing m2 &&
    $NCD env --write dl1 2>/dev/null &&
    test -L dl1 && test -L m2 && test -f missing && grep -q 'nccl-doctor >>>' missing
"
test_expect_success 'a symlink loop is a clear error' "
    ln -s la lb && ln -s lb la &&
    st=0; $NCD env --write la 2>err || st=\$?
    test \$st -eq 3 && grep -q 'loop' err && test -L la && test -L lb
"
if [ "$(id -u)" -eq 0 ]; then
    test_expect_success 'a read-only file stays read-only for root' "
        printf 'keep\n' >ro && chmod 444 ro &&
        st=0; $NCD env --write ro 2>err || st=\$?
        test \$st -eq 3 && grep -q 'read-only' err &&
        test \"\$(cat ro)\" = keep && test \"\$(stat -c %a ro)\" = 444
    "
fi

# A write held at its last step (test-only NCD_TEST_RC_PAUSE): the file
# named by it receives the temporary file's name; removing it resumes.
wait_for() {
    n=0
    while [ ! -s "$1" ]; do
        n=$((n + 1)); [ $n -le 2400 ] || return 1 # 2 min: CI may be busy
        sleep 0.05
    done
}
start_paused() { # FILE PAUSEFILE [env args...]: starts the write, sets $pid
    f=$1 p=$2; shift 2
    rm -f "$p"
    NCD_TEST_RC_PAUSE=$PWD/$p env "$@" -u NCCL_SOCKET_IFNAME $NCD_BIN env --write "$f" 2>"$f.err" &
    pid=$!
    wait_for "$p" || { kill -9 $pid; cat "$f.err"; return 1; }
}
test_expect_success 'an edit made during --write is detected, nothing lost' "
    printf 'orig\n' >ce && start_paused ce pce &&
    test -f \"\$(cat pce)\" &&
    printf 'echo theirs\n' >>ce && rm pce &&
    st=0; wait \$pid || st=\$?
    test \$st -eq 3 && grep -q 're-run' ce.err &&
    printf 'orig\necho theirs\n' | cmp - ce &&
    test \$(ls -A | grep -c '^\.ce\.ncd-tmp') -eq 0
"
test_expect_success 'a file saved by an editor (renamed over) during --write is kept' "
    printf 'orig\n' >ce2 && start_paused ce2 pce2 &&
    printf 'saved\n' >ce2.new && mv ce2.new ce2 && rm pce2 &&
    st=0; wait \$pid || st=\$?
    test \$st -eq 3 && test \"\$(cat ce2)\" = saved
"
if env --default-signal=INT true 2>/dev/null; then
    signals='INT:2 TERM:15 HUP:1'
else
    signals='TERM:15 HUP:1'
    echo '# SIGINT case skipped: this env(1) has no --default-signal'
fi
for s in $signals; do
    test_expect_success "SIG${s%:*} during --write: temporary file removed, original intact" "
        printf 'orig\n' >sig && cp sig sig.orig &&
        start_paused sig psig --default-signal=${s%:*} &&
        tmp=\$(cat psig) && test -f \"\$tmp\" &&
        kill -${s%:*} \$pid &&
        st=0; wait \$pid || st=\$?
        test \$st -eq \$((128 + ${s#*:})) &&
        test ! -e \"\$tmp\" && test \$(ls -A | grep -c '^\.sig\.ncd-tmp') -eq 0 &&
        cmp sig sig.orig
    "
done
test_expect_success 'SIGKILL leaves a temporary file; the next run sweeps it' "
    printf 'orig\n' >kl && cp kl kl.orig &&
    start_paused kl pkl && tmp=\$(cat pkl) &&
    kill -KILL \$pid && { wait \$pid || true; } &&
    test -f \"\$tmp\" && cmp kl kl.orig &&
    $NCD env --write kl 2>/dev/null &&
    test ! -e \"\$tmp\" && grep -q 'nccl-doctor >>>' kl
"
test_expect_success 'four writers at once: one block, all succeed' "
    printf 'mine\n' >cw && pids= &&
    for i in 1 2 3 4; do $NCD env --write cw 2>cw.err.\$i & pids=\"\$pids \$!\"; done &&
    for p in \$pids; do wait \$p || { cat cw.err.*; return 1; }; done &&
    test \$(grep -c '^# >>> nccl-doctor >>>' cw) -eq 1 && test \"\$(head -1 cw)\" = mine &&
    test \$(ls -A | grep -c '^\.cw\.ncd-tmp') -eq 0
"
test_expect_success 'four writers creating the same file: one block, all succeed' "
    pids= &&
    for i in 1 2 3 4; do $NCD env --write cn 2>cn.err.\$i & pids=\"\$pids \$!\"; done &&
    for p in \$pids; do wait \$p || { cat cn.err.*; return 1; }; done &&
    test \$(grep -c '^# >>> nccl-doctor >>>' cn) -eq 1 &&
    test \$(ls -A | grep -c '^\.cn\.ncd-tmp') -eq 0
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
    test_expect_success 'full disk: --remove fails cleanly too, no partial backup' "
        rm -f small/fill && printf '# keep me\n' >small/rc2 &&
        $NCD env --write small/rc2 2>/dev/null && cp small/rc2 rc2.full &&
        rm -f small/rc2.nccl-doctor.bak &&
        dd if=/dev/zero of=small/fill bs=1k count=64 2>/dev/null; sync;
        st=0; $NCD env --remove small/rc2 2>err || st=\$?
        cat err
        test \$st -eq 3 && cmp small/rc2 rc2.full &&
        test \$(ls -A small | grep -c ncd-tmp) -eq 0 &&
        { test ! -e small/rc2.nccl-doctor.bak || cmp small/rc2.nccl-doctor.bak rc2.full; } &&
        grep -qi 'space' err
    "
    umount "$TEST_TMP/small"
else
    echo "# skipped full-disk case: cannot mount a small tmpfs here"
fi
test_done
