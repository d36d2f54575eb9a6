# explain: corpus run, fuzz targets.
add_executable(explain_corpus ${CMAKE_CURRENT_LIST_DIR}/corpus.c)
target_link_libraries(explain_corpus PRIVATE ncd)
ncd_set_warnings(explain_corpus)
add_test(NAME explain.corpus COMMAND explain_corpus ${CMAKE_SOURCE_DIR}/../shared/corpus/cases)
set_tests_properties(explain.corpus PROPERTIES LABELS explain SKIP_RETURN_CODE 77 TIMEOUT 120)

# Several scan threads give the report of one (corpus + generated logs).
add_executable(explain_threads ${CMAKE_CURRENT_LIST_DIR}/threads.c)
target_link_libraries(explain_threads PRIVATE ncd)
target_include_directories(explain_threads PRIVATE ${CMAKE_SOURCE_DIR}/src/lib)
ncd_set_warnings(explain_threads)
add_test(NAME explain.threads COMMAND explain_threads ${CMAKE_SOURCE_DIR}/../shared/corpus/cases)
set_tests_properties(explain.threads PROPERTIES LABELS explain TIMEOUT 600)

# The lines the threaded reader hands over without their text (inert for
# facts) take no fact, on fixed lines and every line of both corpora.
add_executable(explain_facts_inert ${CMAKE_CURRENT_LIST_DIR}/facts_inert.c)
target_link_libraries(explain_facts_inert PRIVATE ncd)
target_include_directories(explain_facts_inert PRIVATE ${CMAKE_SOURCE_DIR}/src/lib)
ncd_set_warnings(explain_facts_inert)
add_executable(explain_gen_log ${CMAKE_SOURCE_DIR}/bench/explain/gen_log.c)
add_test(NAME explain.facts_inert COMMAND sh -c
         "set -e; \"$1\" 3000000 8 init >facts_inert_init.log; \"$1\" 3000000 8 coll >facts_inert_coll.log; \"$2\" facts_inert_init.log facts_inert_coll.log \"$3\" \"$4\" \"$5\""
         sh $<TARGET_FILE:explain_gen_log> $<TARGET_FILE:explain_facts_inert>
         ${CMAKE_SOURCE_DIR}/tests/explain/corpus ${CMAKE_SOURCE_DIR}/../shared/corpus/cases
         ${CMAKE_SOURCE_DIR}/tests/explain/fuzz-seeds)
set_tests_properties(explain.facts_inert PROPERTIES LABELS explain SKIP_RETURN_CODE 77 TIMEOUT 300
                     WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(explain.facts_inert PROPERTIES LABELS explain SKIP_RETURN_CODE 77 TIMEOUT 300)

# The corpus gathered from public threads (tests/explain/corpus, see its
# SOURCES.md), run through the command line.  It fails below
# NCD_CORPUS_MIN_PCT percent of the log_sufficient cases, and when the corpus
# is missing or empty.  The floor is issue 9's target, 90 (58/62 = 93.5% of
# the log_sufficient cases at this commit; the four misses need a value the
# log does not give: explain never suggests exporting a placeholder).  Cases
# g70-g90 were a held-out batch: labelled and committed before explain ran on
# them, 5/14 log_sufficient passed before the rules they exposed were added;
# g91-g94, a second held-out batch labelled after those rules, passed 2/3
# before the framework-version fallback and known bug transport-memcpy-race-957.
# g200-g212 (branch heldout2), a third held-out batch from repositories the
# first two had not mined, passed 1/12 before its rules (fused-NIC NET id 0,
# SHM cuMem host buffers, DMA-BUF, net plugin load, OFI, iWARP providers) and
# 9/12 after; 67/74 = 90.5% overall.  g209-g211 stay failing: an
# application's own GPU-assignment lines, a Gloo message, and a placeholder
# value (MASTER_ADDR).  g300-g315 (branch heldout3: SGLang, TensorRT-LLM,
# KServe, vLLM production-stack, returnn, DeepSpeed, transformers threads)
# passed 8/9 log_sufficient before its changes (general diagnosis 3/7) and
# 8/9 after (general 4/7): the changes corrected mechanisms, not scores
# (mixed nvidia-nccl-cu* wheels in environment reports; NVLS bind failures
# by release and CUDA error, the 2.27.3-2.28 INFO fallback no longer an
# error).  g303 stays failing: the thread quotes the CUDA message without
# its last letter.  75/83 = 90.4% overall.  g500-g510 (branch heldout5:
# single-node and process-side threads: /dev/shm in containers, duplicate GPU,
# more processes than visible GPUs, Fabric Manager error 802, a vGPU without
# UVM, mixed nvidia-nccl wheels, NCCL 2.18/2.19 release bugs) passed 6/7
# log_sufficient before its change (general diagnosis 3/4) and 7/7 after: a
# Cuda failure 'operation not supported' printed by init.cc is NCCL 2.23+'s
# cudaMemPoolCreate (memory pools unsupported, sys.virt), no longer the
# cuMem/NVLS rule.  g510 stays without a finding (only the mpirun command line
# was posted).  82/90 = 91.1% overall.
# g400-g410 (branch heldout4, the
# network side: aws-ofi-nccl/EFA, RoCE GIDs in pods, sockets, Kubernetes)
# passed 2/8 log_sufficient before its changes (general 2/3): OFI failures
# all fell to one lib.nccl rule (g400 g406 g407), libfabric's own lines were
# not catalogued (g401), a failed connect to 127.0.0.1 lost to the
# 'Software caused connection abort' known bug (g410), an IPv4 link-local
# (169.254/16) NET/Socket interface was not recognised (g405).  After: 8/8
# (general 3/3); 83/91 = 91.2% on its own; with heldout5's cases 90/98 (91.8%).  A
# build tree configured earlier keeps its cached value: reconfigure with
# -DNCD_CORPUS_MIN_PCT=<pct>.
set(NCD_CORPUS_MIN_PCT 90 CACHE STRING
    "minimum percentage of log_sufficient cases of tests/explain/corpus that explain must get right")
add_executable(explain_corpus_cli ${CMAKE_CURRENT_LIST_DIR}/corpus_cli.c)
target_link_libraries(explain_corpus_cli PRIVATE PkgConfig::JANSSON)
ncd_set_warnings(explain_corpus_cli)
add_test(NAME explain.corpus_gathered
         COMMAND explain_corpus_cli $<TARGET_FILE:nccl-doctor> ${CMAKE_CURRENT_LIST_DIR}/corpus
                 ${NCD_CORPUS_MIN_PCT})
set_tests_properties(explain.corpus_gathered PROPERTIES LABELS explain TIMEOUT 900)

# explain under valgrind memcheck (skips itself on an ASan build or without
# valgrind; CI's clang build runs it).
if(NCD_ASAN)
  set(_ncd_vg_asan 1)
else()
  set(_ncd_vg_asan 0)
endif()
add_test(NAME explain.valgrind
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/valgrind.sh $<TARGET_FILE:nccl-doctor>
                 ${CMAKE_SOURCE_DIR} ${_ncd_vg_asan})
set_tests_properties(explain.valgrind PROPERTIES LABELS "explain;valgrind"
                     TIMEOUT 600 SKIP_RETURN_CODE 77)

# Fuzz targets for the line parser and the rules loader (cmake/fuzz.cmake).
include(${CMAKE_SOURCE_DIR}/cmake/fuzz.cmake)
foreach(t fuzz_log_line fuzz_rules)
  ncd_add_fuzz_target(${t} ${CMAKE_CURRENT_LIST_DIR}/${t}.c
                      ${CMAKE_CURRENT_LIST_DIR}/fuzz-seeds/${t} explain "explain;fuzz")
endforeach()

# The message catalogue (data/nccl-messages.tsv, scripts/nccl-messages.py):
# every failure format NCCL 2.4..newest prints (figures for 2.18..newest
# printed apart), nccl-tests, PyTorch, Gloo, Horovod, vLLM, Ray and Paddle, filled with plausible
# values, must be claimed by the rule or category the catalogue names; one
# batch `explain --json` run over all of them must not fall back to
# "no rule".
add_executable(explain_catalog ${CMAKE_CURRENT_LIST_DIR}/catalog.c)
target_link_libraries(explain_catalog PRIVATE ncd)
ncd_set_warnings(explain_catalog)
add_test(NAME explain.catalog
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/catalog.sh
                 $<TARGET_FILE:explain_catalog> $<TARGET_FILE:nccl-doctor>
                 ${CMAKE_SOURCE_DIR}/data/nccl-messages.tsv)
set_tests_properties(explain.catalog PROPERTIES LABELS explain SKIP_RETURN_CODE 77 TIMEOUT 120)

# The CUDA error catalogue (data/cuda-errors.tsv, scripts/cuda-errors.py):
# every cudaError_t message and CUresult name, in the forms NCCL,
# nccl-tests, PyTorch, Paddle, cupy and JAX print, must be claimed by its
# class rule (rules/cuda-errors.yaml) or a hand rule of the same category;
# one batch `explain --json` run over all of them must not fall back to
# "no rule".
add_executable(explain_cuda_catalog ${CMAKE_CURRENT_LIST_DIR}/cuda_catalog.c)
target_link_libraries(explain_cuda_catalog PRIVATE ncd)
ncd_set_warnings(explain_cuda_catalog)
add_test(NAME explain.cuda_catalog
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/cuda_catalog.sh
                 $<TARGET_FILE:explain_cuda_catalog> $<TARGET_FILE:nccl-doctor>
                 ${CMAKE_SOURCE_DIR}/data/cuda-errors.tsv)
set_tests_properties(explain.cuda_catalog PROPERTIES LABELS explain SKIP_RETURN_CODE 77 TIMEOUT 120)

# data/cuda-errors.tsv and rules/cuda-errors.yaml are what
# scripts/cuda-errors.py makes of the installed CUDA toolkit and
# data/cuda-error-classes.yaml (skipped without CUDA 13.0's headers and
# libcudart, or without PyYAML: another toolkit would list other errors).
add_test(NAME explain.cuda_errors_fresh
         COMMAND sh -c "[ -r /usr/local/cuda-13.0/include/driver_types.h ] || { echo 'no CUDA 13.0 toolkit: skipped'; exit 77; }; python3 -c 'import yaml' 2>/dev/null || { echo 'no PyYAML: skipped'; exit 77; }; cd '${CMAKE_SOURCE_DIR}' && python3 scripts/cuda-errors.py --cuda /usr/local/cuda-13.0 --check")
set_tests_properties(explain.cuda_errors_fresh PROPERTIES LABELS explain SKIP_RETURN_CODE 77 TIMEOUT 60)
