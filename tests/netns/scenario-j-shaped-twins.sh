#!/bin/sh
# Scenario (j): two identical shaped links between two hosts.
#   hostA and hostB are cabled twice, ens3 and ens4, both limited to
#   20 Mbit/s (tc tbf on both ends), no default route; the rendezvous runs
#   over a third, unshaped link (eth0).  NCCL_SOCKET_IFNAME=ens4, so NCCL's
#   path is ens4 and nccl-doctor's recommendation (the twins tie: the lower
#   ifindex, ens3) is tested too, each with a 2 MiB burst (0.8 s at
#   20 Mbit/s, both ways at once).
#   - The round trips of a pair are never timed while a burst fills the
#     link: the median stays far below the 100 ms the token bucket queues.
#   - The recommendation does not flip between the twins after the probe's
#     own bursts (traffic counters are no tie-break between close values).
. "$(dirname "$0")/lib.sh"
tb_init
tb_need_tc
for h in A B; do tb_host $h host$h; done
# in this order: ens3 gets the lowest ifindex; eth0, which carries the
# rendezvous, the highest (and the most packets before the first probe)
tb_link A ens3 10.10.0.1/24 B ens3 10.10.0.2/24 20mbit
tb_link A ens4 10.20.0.1/24 B ens4 10.20.0.2/24 20mbit
tb_link A eth0 10.30.0.1/24 B eth0 10.30.0.2/24
for h in A B; do
    tb_hosts_entry $h "10.30.0.1 hostA"
    tb_hosts_entry $h "10.30.0.2 hostB"
done
TB_RDV=10.30.0.1:29500
TB_ENV_A=NCCL_SOCKET_IFNAME=ens4 TB_ENV_B=NCCL_SOCKET_IFNAME=ens4
export TB_ENV_A TB_ENV_B
T=$TB_TMP
for run in 1 2 3; do
    st=0; tb_probe $T/p$run.json "A B" --timeout 2000 --burst 2M --no-mtu || st=$?
    echo "# run $run: exit $st, recommended $(jq -c '[.ranks[].recommended_interface]' $T/p$run.json 2>/dev/null)," \
        "rtt $(jq -c '[.rank_matrix[0][1].rtt_us, .rank_matrix[1][0].rtt_us] | map(floor)' $T/p$run.json 2>/dev/null) us," \
        "burst $(jq -c '[.rank_matrix[0][1].bw_gbps, .rank_matrix[1][0].bw_gbps, .rank_matrix[0][1].recommended_bw_gbps, .rank_matrix[1][0].recommended_bw_gbps]' $T/p$run.json 2>/dev/null) GB/s"
    tb_check "run $run: every pair ok on ens4 and on ens3, bursts near 20 Mbit/s" "
        jq -e '[.rank_matrix[0][1], .rank_matrix[1][0]] | all(.status == \"ok\" and .recommended_status == \"ok\")' $T/p$run.json &&
        jq -e '[.rank_matrix[0][1], .rank_matrix[1][0]] | all(.bw_gbps > 0.0012 and .bw_gbps < 0.004 and .recommended_bw_gbps > 0.0012 and .recommended_bw_gbps < 0.004)' $T/p$run.json" \
        $T/p$run.json $T/probe.A.log $T/probe.B.log $T/probe.status
    tb_check "run $run: round trips on the shaped link stay under 20 ms both ways" "
        jq -e '.rank_matrix[0][1].rtt_us > 0 and .rank_matrix[0][1].rtt_us < 20000 and .rank_matrix[1][0].rtt_us > 0 and .rank_matrix[1][0].rtt_us < 20000' $T/p$run.json" $T/p$run.json
    tb_check "run $run: both hosts recommend ens3 (the lower ifindex of the twins)" "
        jq -e '[.ranks[].recommended_interface] == [\"ens3\", \"ens3\"]' $T/p$run.json" $T/p$run.json
done
tb_done
