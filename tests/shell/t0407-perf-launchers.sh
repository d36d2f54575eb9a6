#!/bin/sh
# perf under launcher variables (no real launcher needed): each case starts
# two processes with the variables torchrun, Slurm srun and
# paddle.distributed.launch set, and checks they find each other.
. "$(dirname "$0")/perf_lib.sh"

two() { # two "label" "env for rank 0" "env for rank 1"
    label=$1
    env $2 "$NCD_BIN" perf all_reduce -b 4K -e 64K -f 4 --backend socket \
        --peer-timeout 20 >"$TMP/r0.out" 2>"$TMP/r0.err" &
    p=$!
    env $3 "$NCD_BIN" perf all_reduce -b 4K -e 64K -f 4 --backend socket \
        --peer-timeout 20 >"$TMP/r1.out" 2>"$TMP/r1.err"
    r1=$?
    wait $p; r0=$?
    if [ $r0 -eq 0 ] && [ $r1 -eq 0 ] && [ ! -s "$TMP/r1.out" ] &&
       grep -qx '# Out of bounds values : 0 OK' "$TMP/r0.out" &&
       [ "$(grep -c '^#  Rank' "$TMP/r0.out")" -eq 2 ]; then
        ok "$label"
    else
        bad "$label (exit $r0/$r1)"; head -3 "$TMP/r0.err" "$TMP/r1.err"
    fi
}
P=$((23000 + $$ % 9000))
two "torchrun variables (RANK, WORLD_SIZE, MASTER_ADDR/PORT)" \
    "RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=$P" \
    "RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$P"
J=$(( $$ % 1400 + 1 ))   # port 20000 + 7 J: 20007-29800
two "Slurm srun variables (root = first node of SLURM_JOB_NODELIST)" \
    "SLURM_PROCID=0 SLURM_NTASKS=2 SLURM_LOCALID=0 SLURM_JOB_ID=$J SLURM_JOB_NODELIST=localhost" \
    "SLURM_PROCID=1 SLURM_NTASKS=2 SLURM_LOCALID=1 SLURM_JOB_ID=$J SLURM_JOB_NODELIST=localhost"
P=$((P + 1))
two "paddle.distributed.launch variables (PADDLE_TRAINER_ENDPOINTS)" \
    "PADDLE_TRAINER_ID=0 PADDLE_TRAINERS_NUM=2 PADDLE_LOCAL_RANK=0 PADDLE_TRAINER_ENDPOINTS=127.0.0.1:$P,127.0.0.1:$((P+1))" \
    "PADDLE_TRAINER_ID=1 PADDLE_TRAINERS_NUM=2 PADDLE_LOCAL_RANK=1 PADDLE_TRAINER_ENDPOINTS=127.0.0.1:$P,127.0.0.1:$((P+1))"
RANK=1 WORLD_SIZE=2 "$NCD_BIN" perf all_reduce -b 8 -e 8 -np 2 --backend socket >/dev/null 2>"$TMP/np.err"
check "-np under a launcher is refused (exit $?)" grep -q 'drop -np' "$TMP/np.err"
RANK=zero WORLD_SIZE=2 "$NCD_BIN" perf all_reduce -b 8 -e 8 --backend socket >/dev/null 2>"$TMP/g.err"
check "garbage launcher variable: clear error" grep -q "RANK='zero' is not a number" "$TMP/g.err"
finish
