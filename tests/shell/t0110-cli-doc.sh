#!/bin/sh
# One source per option (docs/cmdline/*.yaml): help, man page, completion
# and README's table agree with it and with every command's getopt table;
# "did you mean"; --version / -V anywhere; help help.
. "$(dirname "$0")/lib.sh"
: "${NCD_BUILD_DIR:?}"
GEN=$NCD_BUILD_DIR/gen
CMDS="check ifaces env explain topo gather perf probe tune"

test_expect_success 'every command takes exactly its documented options' "
    for c in $CMDS; do
        $NCD_BIN \$c --help >h 2>err || { cat err; exit 1; }
        ! grep -q 'internal error' err
        $NCD_BIN help \$c >h2 && test_cmp h h2
    done
"
test_expect_success 'README.md command table is generated (cmake --build build --target update-readme)' "
    test_cmp \"$NCD_SOURCE_DIR/README.md\" \"$GEN/README.md\"
"
test_expect_success 'a change to docs/cmdline shows as README drift' "
    mkdir d && cp \"$NCD_SOURCE_DIR\"/docs/cmdline/*.yaml d/ &&
    sed -i 's/^summary: rank network interfaces.*/summary: changed/; s/^readme: \"every interface.*/readme: changed/' d/ifaces.yaml &&
    \"$NCD_BUILD_DIR/cligen\" --readme \"$NCD_SOURCE_DIR/README.md\" -o . d/global.yaml \$(ls d/*.yaml | grep -v global) &&
    ! diff -q README.md \"$NCD_SOURCE_DIR/README.md\" >/dev/null &&
    grep -q '| \`ifaces\` | changed |' README.md
"
test_expect_success 'cligen refuses a command file global.yaml does not list' "
    mkdir e && cp \"$NCD_SOURCE_DIR\"/docs/cmdline/*.yaml e/ &&
    printf 'command: extra\nsummary: x\noptions: []\n' >e/extra.yaml &&
    ! \"$NCD_BUILD_DIR/cligen\" -o . e/global.yaml \$(ls e/*.yaml | grep -v global) 2>err &&
    grep -q 'does not list' err
"
test_expect_success 'every option of every command is in help, man page and completions' "
    MANWIDTH=120 man -l \"$GEN/nccl-doctor.1\" >page 2>/dev/null ||
        groff -man -Tascii -P-cbou \"$GEN/nccl-doctor.1\" >page
    for c in $CMDS; do
        $NCD_BIN help \$c | sed -n 's/^  \\(-., \\)\\{0,1\\}--\\([a-z_-]*\\).*/\\2/p' >opts
        test -s opts
        while read -r o; do
            grep -q -- \"--\$o\" page || { echo \"man: \$c --\$o\"; exit 1; }
            grep -q -- \"--\$o\" \"$GEN/nccl-doctor.bash\" || { echo \"bash: \$c --\$o\"; exit 1; }
            grep -q -- \"--\$o\" \"$GEN/_nccl-doctor\" || { echo \"zsh: \$c --\$o\"; exit 1; }
        done <opts
    done
"
test_expect_success 'help CMD lists the shared options' "
    $NCD_BIN help topo >h &&
    for o in --json --sysroot --color --verbose --nccl-version; do grep -q -- \"  \$o\" h; done
"
test_expect_success 'help that cannot be written (a full disk) exits 3, not 0' "
    test -w /dev/full || { echo 'no /dev/full here'; exit 77; }
    for a in '--help' 'help' 'help explain' 'explain --help' 'check --help' 'run --help' 'tune --help' 'probe --help'; do
        st=0; \$NCD_BIN \$a >/dev/full 2>/dev/null || st=\$?
        test \$st -eq 3 || { echo \"\$a: exit \$st\"; exit 1; }
        \$NCD_BIN \$a >/dev/null || { echo \"\$a to /dev/null failed\"; exit 1; }
    done
"
test_expect_success 'the man page renders (man -l) without groff warnings' "
    command -v man >/dev/null || { echo 'no man: skipped part'; exit 0; }
    MANWIDTH=80 man -l \"$GEN/nccl-doctor.1\" >page 2>err &&
    grep -q 'nccl-doctor - find why NCCL' page &&
    grep -q -- '--topology' page && ! test -s err &&
    groff -man -Tutf8 -ww -z \"$GEN/nccl-doctor.1\" 2>gw && ! test -s gw
"
test_expect_success 'bash completion: commands, options, values, files' "
    command -v bash >/dev/null || { echo \"bash not installed\"; exit 77; }
    cat >c.bash <<'EOS'
. \"\$1\"
comp() { COMP_WORDS=(\"\$@\"); COMP_CWORD=\$((\$# - 1)); COMPREPLY=(); _nccl_doctor; echo \"\${COMPREPLY[*]}\"; }
comp nccl-doctor ch
comp nccl-doctor check --js
comp nccl-doctor env --format ''
comp nccl-doctor --sysroot /tmp if
comp all_reduce_perf --data
comp nccl-doctor help pe
comp nccl-doctor check --color=n
comp nccl-doctor perf all_r
comp all_reduce_perf all_
EOS
    bash c.bash \"$GEN/nccl-doctor.bash\" >out &&
    printf '%s\n' check --json 'sh env docker k8s slurm' ifaces --datatype perf never all_reduce '' >exp &&
    test_cmp exp out
"
test_expect_success 'zsh completion parses' "
    command -v zsh >/dev/null || { echo 'no zsh: skipped part'; exit 0; }
    zsh -n \"$GEN/_nccl-doctor\" &&
    zsh -fc 'autoload -Uz compinit && compinit -u -D && source \"$GEN/_nccl-doctor\" 2>/dev/null; (( \$+functions[_nccl-doctor_env] ))'
"
test_expect_success 'a mistyped command or option: did you mean' "
    st=0; $NCD_BIN chek 2>err || st=\$?; test \$st -eq 3 &&
    grep -q \"did you mean 'check'\" err &&
    st=0; $NCD_BIN check --jsn 2>err || st=\$?; test \$st -eq 3 &&
    grep -q \"did you mean '--json'\" err &&
    st=0; $NCD_BIN ifaces -json 2>err || st=\$?; test \$st -eq 3 &&
    grep -q \"did you mean '--json'\" err &&
    st=0; $NCD_BIN env --formt docker 2>err || st=\$?; test \$st -eq 3 &&
    grep -q \"did you mean '--format'\" err &&
    st=0; $NCD_BIN help topp 2>err || st=\$?; test \$st -eq 3 &&
    grep -q \"did you mean 'topo'\" err &&
    st=0; $NCD_BIN frobnicate 2>err || st=\$?; test \$st -eq 3 &&
    ! grep -q 'did you mean' err &&
    st=0; $NCD_BIN topo --topology 2>err || st=\$?; test \$st -eq 3 &&
    grep -q \"'--topology' needs an argument\" err
"
test_expect_success '--version and -V anywhere' "
    for a in '--version' '-V' 'check --version' 'check -V' 'ifaces --json -V' \
             '--sysroot / --version' 'env --version' 'explain -V' 'topo -V' \
             'gather -V' 'probe --version' 'tune -V' 'perf --version' \
             'help --version' 'version'; do
        $NCD_BIN \$a >v 2>&1 || { echo \"\$a failed\"; exit 1; }
        grep -q '^nccl-doctor [0-9]' v || { echo \"\$a: \$(cat v)\"; exit 1; }
    done &&
    \"$NCD_BUILD_DIR/all_reduce_perf\" --version | grep -q '^nccl-doctor [0-9]'
"
test_expect_success 'help help, help --help and help of every command' "
    $NCD_BIN help help | grep -q 'usage: nccl-doctor help \\[COMMAND\\]' &&
    $NCD_BIN help --help | grep -q 'usage: nccl-doctor help' &&
    for c in $CMDS help; do $NCD_BIN help \$c | grep -q \"usage: nccl-doctor \$c\"; done
"
test_done
