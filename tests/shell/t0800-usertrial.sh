#!/bin/sh
# Regressions found by a new-user trial (hostile input, wrong usage): each
# case reproduces what a user hit and checks the behaviour now documented.
. "$(dirname "$0")/lib.sh"
NCD=$NCD_BIN

# tune: a mistake in perf's options is the command line's, not a
# candidate's: exit 3 with perf's message, no candidate table, no blame.
test_expect_success 'tune: perf rejecting its options stops tune (exit 3)' '
    st=0; $NCD tune -np 2 --backend socket --reps 1 --families sockets \
        -- all_reduce --bogus >out 2>err || st=$?
    test "$st" -eq 3 &&
    grep -q "perf rejected its options (exit status 6)" err &&
    grep -q "bogus" err &&
    ! grep -q "make the benchmark fail" out || exit 1
    st=0; $NCD tune -np 2 --backend socket --reps 1 --families sockets \
        -- all_reduce -b 1M -e 1K >out 2>err || st=$?
    test "$st" -eq 3 && grep -q "exit status 255" err
'

test_expect_success 'tune: perf options without a collective run all_reduce' '
    $NCD tune -np 2 --backend socket --reps 1 --families sockets \
        -- -b 64K -e 64K -n 1 -w 0 >out 2>err &&
    grep -q "perf all_reduce -b 64K" out &&
    grep -q "(baseline)" out
'

# explain DIR: a link to a directory inside it (here /proc, whose
# pagemap files never end) is not followed; a link to a log file is read.
test_expect_success 'explain DIR: links to directories are skipped' '
    mkdir logs real &&
    printf "%s\n" "h1:1:1 [0] include/shm.h:28 NCCL WARN Call to posix_fallocate failed: No space left on device" >real/rank0.log &&
    ln -s ../real/rank0.log logs/rank0.log && ln -s /proc logs/proc &&
    ln -s .. logs/up &&
    st=0; timeout 60 $NCD explain logs >out 2>err || st=$?
    test "$st" -eq 2 && grep -q "sys.shm" out && grep -q "rank0.log:1" out &&
    ! grep -q "/proc/" err && grep -q "2 links to directories not followed" err
'

# NCCL_IB_HCA of one character: NCCL reads it as a list (no
# NCCL_SOCKET_IFNAME-style one-character rule), so "x" selects no HCA and
# NCCL silently falls back to sockets; check must say so.
test_expect_success 'check: NCCL_IB_HCA=x selects no HCA' '
    cp -a "$NCD_SOURCE_DIR/tests/fixtures/sysroots/dgx-8gpu-4hca" dgx &&
    grep -v "^NCCL_IB_HCA=" dgx/.ncd/env >env.new &&
    echo "NCCL_IB_HCA=x" >>env.new && cp env.new dgx/.ncd/env &&
    st=0; $NCD check --sysroot dgx >out 2>err || st=$?
    test "$st" -eq 2 &&
    grep -q "NCCL_IB_HCA=.x. matches no active port" out
'

# env --format: values each format cannot hold as they are.  sbatch
# splits --export at commas (NCCL_IB_HCA=mlx5_0,mlx5_1 became two
# variables); a docker env file cannot hold a line break; YAML folds a
# raw line break into a space.
test_expect_success 'env --format slurm/env/k8s keep awkward values intact' '
    $NCD env --format slurm --set NCCL_IB_HCA=mlx5_0,mlx5_1 \
        --set "X_SP=a b" --unset OMPI_MCA_btl_tcp_if_include >out &&
    head -n 1 out >first && ! grep -q "mlx5_1" first && ! grep -q X_SP first &&
    grep -qx "export NCCL_IB_HCA=mlx5_0,mlx5_1" out &&
    grep -qx "export X_SP=.a b." out &&
    grep -qx "unset OMPI_MCA_btl_tcp_if_include" out &&
    $NCD env --format slurm --set NCCL_DEBUG=WARN >out &&
    test "$(wc -l <out)" -eq 1 && grep -q ",NCCL_DEBUG=WARN" out &&
    $NCD env --format env --set "X_NL=a
b" >out && ! grep -qx b out && grep -q "X_NL left out" out &&
    $NCD env --format k8s --set "X_NL=a
b	c" >out && grep -qF "value: \"a\\nb\\tc\"" out
'

# Secrets quoted by findings: check echoed NCCL_COMM_ID's password and a
# secret-named variable's value (gather masked both); NCCL_IB_PKEY is a
# setting, not a secret: replaying a capture must not warn about it.
test_expect_success 'check: no secret in findings; NCCL_IB_PKEY replays' '
    NCCL_COMM_ID=user:hunter2@10.0.0.1:1234 NCCL_X_TOKEN=s3cr3tz \
        $NCD check >out 2>&1 || true
    NCCL_COMM_ID=user:hunter2@10.0.0.1:1234 NCCL_X_TOKEN=s3cr3tz \
        $NCD check --json >>out 2>&1 || true
    grep -q "NCCL_COMM_ID" out && grep -q "NCCL_X_TOKEN" out &&
    ! grep -q "hunter2" out && ! grep -q "s3cr3tz" out &&
    NCCL_IB_PKEY=0x8001 $NCD gather -o pk.tgz >/dev/null 2>&1 &&
    { $NCD check --sysroot pk.tgz >out2 2>&1 || true; } &&
    grep -q "check of" out2 && ! grep -q "NCCL_IB_PKEY" out2
'

# run sets NCCL_DEBUG=INFO itself: when the command fails before NCCL
# logs anything, the advice must not be "re-run with NCCL_DEBUG=INFO".
test_expect_success 'run: no NCCL line although run set NCCL_DEBUG=INFO' '
    st=0; $NCD run --logs l1 -- sh -c "exit 1" >out 2>err || st=$?
    test "$st" -eq 1 && grep -q "NCCL_DEBUG=INFO was set, yet no NCCL line" err &&
    ! grep -q "re-run with NCCL_DEBUG=INFO" err || exit 1
    st=0; NCCL_DEBUG=WARN $NCD run --logs l2 -- sh -c "exit 1" >out 2>err ||
        st=$?
    test "$st" -eq 1 && grep -q "re-run with NCCL_DEBUG=INFO" err
'

test_done
