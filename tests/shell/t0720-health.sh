#!/bin/sh
# check --format prometheus|slurm|npd: the README's wiring examples (taken
# from README.md, not copied here) run against recorded nodes; promtool and
# node_exporter read the textfile; the file is replaced atomically; the
# Slurm and NPD lines keep their limits and exit conventions.
. "$NCD_SOURCE_DIR/tests/shell/node-lib.sh"
FIX=$NCD_SOURCE_DIR/tests/fixtures/sysroots
README=$NCD_SOURCE_DIR/README.md
SICK=$FIX/docker-shm64m        # /dev/shm too small: an error finding
HEALTHY=$FIX/cloud-vm-ens5-docker  # warnings only

# The fenced block after "<!-- example: NAME -->" in the README.
example() {
    awk -v name="$1" '
        $0 == "<!-- example: " name " -->" { want = 1; next }
        want && /^```/ { if (inside) exit; inside = 1; next }
        inside { print }
    ' "$README"
}

# `nccl-doctor` on PATH, as the examples call it.
mkdir -p "$TEST_TMP/bin"
ln -s "$NCD_BIN" "$TEST_TMP/bin/nccl-doctor"
PATH=$TEST_TMP/bin:$PATH
export PATH

for ex in node-exporter slurm.conf slurm-health npd-config; do
    test_expect_success "README has the $ex example" "[ -n \"\$(example $ex)\" ]"
done

test_expect_success 'prometheus: promtool accepts the textfile of every capture' '
    command -v promtool >/dev/null || { echo "promtool missing: run scripts/install-deps.sh"; exit 1; }
    for s in "$FIX"/*/; do
        n=$(basename "$s")
        "$NCD_BIN" check --sysroot "$s" --format prometheus --output "$TEST_TMP/$n.prom"
        rc=$?
        [ $rc -le 2 ] || { echo "$n: status $rc"; exit 1; }
        promtool check metrics <"$TEST_TMP/$n.prom" || { echo "$n"; exit 1; }
        grep -qx "nccl_doctor_up 1" "$TEST_TMP/$n.prom" || exit 1
        [ "$(grep -c "^nccl_doctor_findings{" "$TEST_TMP/$n.prom")" -eq 63 ] || exit 1
        [ "$(grep -c "^nccl_doctor_check_up{" "$TEST_TMP/$n.prom")" -eq \
          "$(grep -c "^nccl_doctor_check_severity{" "$TEST_TMP/$n.prom")" ] || exit 1
    done
    grep -qx "nccl_doctor_findings{category=\"sys.shm\",severity=\"error\"} 1" "$TEST_TMP/docker-shm64m.prom" &&
    grep -qx "nccl_doctor_check_severity{check=\"shm\"} 3" "$TEST_TMP/docker-shm64m.prom" &&
    grep -qx "nccl_doctor_worst_severity 3" "$TEST_TMP/docker-shm64m.prom"
'

test_expect_success 'prometheus: written atomically (readers never see a part), mode 0644, no temporary left' '
    d=$TEST_TMP/atomic && mkdir "$d" &&
    "$NCD_BIN" check --sysroot "$SICK" --format prometheus --output "$d/n.prom"
    last=$(tail -n 1 "$d/n.prom")
    ( i=0; while [ $i -lt 8 ]; do
        "$NCD_BIN" check --sysroot "$SICK" --format prometheus --output "$d/n.prom"; i=$((i + 1)); done
      : >"$d/done" ) &
    w=$!
    reads=0
    while [ ! -e "$d/done" ]; do
        [ "$(tail -n 1 "$d/n.prom")" = "$last" ] || { echo "partial file seen"; kill $w; exit 1; }
        reads=$((reads + 1))
    done
    wait $w
    echo "$reads reads"
    [ "$reads" -gt 0 ] &&
    [ "$(stat -c %a "$d/n.prom")" = 644 ] &&
    [ "$(ls -A "$d" | sort | tr "\n" " ")" = "done n.prom " ]
'

test_expect_success 'prometheus: an unwritable --output is an error and leaves nothing' '
    "$NCD_BIN" check --sysroot "$SICK" --format prometheus --output "$TEST_TMP/nodir/x.prom" 2>"$TEST_TMP/err"
    [ $? -eq 3 ] && grep -q "nodir/x.prom" "$TEST_TMP/err" && [ ! -e "$TEST_TMP/nodir" ]
'

test_expect_success 'node_exporter: the README wiring, read back over HTTP' '
    ne=$(command -v node_exporter || command -v prometheus-node-exporter) ||
        { echo "node_exporter missing: run scripts/install-deps.sh"; exit 1; }
    tf=$TEST_TMP/textfile && mkdir "$tf" &&
    example node-exporter | sed "s|/var/lib/node_exporter/textfile|$tf|g" >"$TEST_TMP/ne.sh" &&
    head -n 1 "$TEST_TMP/ne.sh" >"$TEST_TMP/cron.sh" &&
    flag=$(sed -n 2p "$TEST_TMP/ne.sh" | grep -o -- "--collector.textfile.directory=[^ ]*") &&
    NCD_SYSROOT=$SICK sh "$TEST_TMP/cron.sh"; [ -s "$tf/nccl-doctor.prom" ] || exit 1
    port=$((20000 + $$ % 12000)) # below the ephemeral ports (32768-60999)
    "$ne" --collector.disable-defaults --collector.textfile "$flag" \
        --web.listen-address="127.0.0.1:$port" >"$TEST_TMP/ne.log" 2>&1 &
    pid=$!
    ok=1
    for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
        curl -fsS "http://127.0.0.1:$port/metrics" >"$TEST_TMP/scrape" 2>/dev/null && { ok=0; break; }
        sleep 0.5
    done
    kill $pid; wait $pid 2>/dev/null
    [ $ok -eq 0 ] || { cat "$TEST_TMP/ne.log"; exit 1; }
    grep -qx "nccl_doctor_up 1" "$TEST_TMP/scrape" &&
    grep -q "^node_textfile_scrape_error 0" "$TEST_TMP/scrape" &&
    grep -q "^nccl_doctor_check_severity{check=\"shm\"} 3" "$TEST_TMP/scrape"
'

test_expect_success 'slurm: the README wrapper drains a sick node with the reason, leaves a healthy one' '
    example slurm-health >"$TEST_TMP/nccl-doctor-health" &&
    prog=$(example slurm.conf | sed -n "s/^HealthCheckProgram=//p") &&
    grep -qx "# $prog" "$TEST_TMP/nccl-doctor-health" &&
    printf "#!/bin/sh\nprintf \"%%s\\\\n\" \"\$@\" >\"%s\"\n" "$TEST_TMP/scontrol.args" >"$TEST_TMP/bin/scontrol" &&
    chmod +x "$TEST_TMP/bin/scontrol" &&
    SLURMD_NODENAME=gpu07 NCD_SYSROOT=$SICK sh "$TEST_TMP/nccl-doctor-health"
    [ $? -eq 1 ] || exit 1
    cat "$TEST_TMP/scontrol.args"
    grep -qx "NodeName=gpu07" "$TEST_TMP/scontrol.args" &&
    grep -qx "State=DRAIN" "$TEST_TMP/scontrol.args" &&
    grep -qx "Reason=nccl-doctor: /dev/shm is .* \[sys.shm\]" "$TEST_TMP/scontrol.args" || exit 1
    rm "$TEST_TMP/scontrol.args"
    SLURMD_NODENAME=gpu08 NCD_SYSROOT=$HEALTHY sh "$TEST_TMP/nccl-doctor-health" &&
    [ ! -e "$TEST_TMP/scontrol.args" ]
'

test_expect_success 'slurm and npd: one line within 100 / 80 characters on every capture, statuses agree' '
    for s in "$FIX"/*/; do
        n=$(basename "$s")
        "$NCD_BIN" check --sysroot "$s" --format slurm >"$TEST_TMP/s"; st=$?
        "$NCD_BIN" check --sysroot "$s" --format npd >"$TEST_TMP/k"; kt=$?
        echo "$n: slurm $st npd $kt: $(cat "$TEST_TMP/k")"
        [ $st -eq $kt ] || exit 1
        if [ $st -eq 1 ]; then
            [ "$(wc -l <"$TEST_TMP/s")" -eq 1 ] && [ "$(wc -m <"$TEST_TMP/s")" -le 101 ] || exit 1
        else
            [ $st -eq 0 ] && [ ! -s "$TEST_TMP/s" ] || exit 1
        fi
        [ "$(wc -l <"$TEST_TMP/k")" -eq 1 ] && [ "$(wc -m <"$TEST_TMP/k")" -le 81 ] || exit 1
    done
'

test_expect_success 'npd: the README plugin config is valid and its rule runs as NPD runs it' '
    example npd-config >"$TEST_TMP/npd.json" &&
    jq -e ".plugin == \"custom\" and (.rules | length) > 0 and (.conditions | length) > 0" "$TEST_TMP/npd.json" >/dev/null &&
    max=$(jq -r ".pluginConfig.max_output_length" "$TEST_TMP/npd.json") &&
    [ "$(basename "$(jq -r ".rules[0].path" "$TEST_TMP/npd.json")")" = nccl-doctor ] &&
    [ "$(jq -r ".rules[0].condition" "$TEST_TMP/npd.json")" = "$(jq -r ".conditions[0].type" "$TEST_TMP/npd.json")" ] &&
    jq -r ".rules[0].args[]" "$TEST_TMP/npd.json" >"$TEST_TMP/args" || exit 1
    run_rule() {
        set --
        while IFS= read -r a; do set -- "$@" "$a"; done <"$TEST_TMP/args"
        "$NCD_BIN" "$@"
    }
    out=$(NCD_SYSROOT=$SICK run_rule); st=$?
    echo "sick: $st $out"
    [ $st -eq 1 ] && [ ${#out} -le "$max" ] || exit 1
    out=$(NCD_SYSROOT=$HEALTHY run_rule); st=$?
    echo "healthy: $st $out"
    [ $st -eq 0 ] && [ ${#out} -le "$max" ] || exit 1
    out=$(NCD_SYSROOT=$TEST_TMP/no-such-root run_rule 2>/dev/null); st=$?
    echo "unknown: $st $out"
    [ $st -eq 2 ] && [ ${#out} -le "$max" ] && [ -n "$out" ]
'

test_expect_success 'check --format: bad name and --json conflict are usage errors' '
    "$NCD_BIN" check --sysroot "$SICK" --format yaml 2>"$TEST_TMP/e1"; [ $? -eq 3 ] &&
    grep -q "prometheus" "$TEST_TMP/e1" &&
    "$NCD_BIN" check --sysroot "$SICK" --json --format slurm 2>/dev/null; [ $? -eq 3 ]
'

test_expect_success 'slurm and npd: a wrong option still answers in the health convention (a reason, never an empty drain)' '
    "$NCD_BIN" check --sysroot "$SICK" --format slurm --no-such-option >"$TEST_TMP/s" 2>"$TEST_TMP/e"; st=$?
    cat "$TEST_TMP/s"
    [ $st -eq 1 ] && [ "$(wc -l <"$TEST_TMP/s")" -eq 1 ] &&
    grep -q "could not check the node: bad usage" "$TEST_TMP/s" &&
    grep -q "no-such-option" "$TEST_TMP/e" || exit 1
    "$NCD_BIN" check --no-such-option --format=npd >"$TEST_TMP/k" 2>/dev/null; st=$?
    [ $st -eq 2 ] && [ -s "$TEST_TMP/k" ] || exit 1
    "$NCD_BIN" check --format prometheus --no-such-option >/dev/null 2>&1; [ $? -eq 3 ]
'

test_expect_success 'check --format json --output FILE: the same report, in a file' '
    "$NCD_BIN" check --sysroot "$SICK" --json >"$TEST_TMP/a.json"
    "$NCD_BIN" check --sysroot "$SICK" --format json --output "$TEST_TMP/b.json"
    jq -e ".findings | length > 0" "$TEST_TMP/b.json" >/dev/null &&
    [ "$(jq -c .findings "$TEST_TMP/a.json")" = "$(jq -c .findings "$TEST_TMP/b.json")" ]
'

test_done
