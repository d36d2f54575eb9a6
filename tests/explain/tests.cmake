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

# The corpus gathered from public threads (tests/explain/corpus, see its
# SOURCES.md), run through the command line.  It fails below
# NCD_CORPUS_MIN_PCT percent of the log_sufficient cases, and when the corpus
# is missing or empty.  The floor is issue 9's target, 90 (58/62 = 93.5% of
# the log_sufficient cases at this commit; the four misses need a value the
# log does not give: explain never suggests exporting a placeholder).  Cases
# g70-g90 were a held-out batch: labelled and committed before explain ran on
# them, 5/14 log_sufficient passed before the rules they exposed were added;
# g91-g94, a second held-out batch labelled after those rules, passed 2/3
# before the framework-version fallback and known bug transport-memcpy-race-957.  A
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
set_tests_properties(explain.corpus_gathered PROPERTIES LABELS explain TIMEOUT 300)

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
# printed apart), nccl-tests, PyTorch and Paddle, filled with plausible
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
