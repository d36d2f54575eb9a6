# explain: corpus run, fuzz targets.
add_executable(explain_corpus ${CMAKE_CURRENT_LIST_DIR}/corpus.c)
target_link_libraries(explain_corpus PRIVATE ncd)
ncd_set_warnings(explain_corpus)
add_test(NAME explain.corpus COMMAND explain_corpus ${CMAKE_SOURCE_DIR}/../shared/corpus/cases)
set_tests_properties(explain.corpus PROPERTIES LABELS explain SKIP_RETURN_CODE 77 TIMEOUT 120)

# Fuzz targets for the line parser and the rules loader (cmake/fuzz.cmake).
include(${CMAKE_SOURCE_DIR}/cmake/fuzz.cmake)
foreach(t fuzz_log_line fuzz_rules)
  ncd_add_fuzz_target(${t} ${CMAKE_CURRENT_LIST_DIR}/${t}.c
                      ${CMAKE_CURRENT_LIST_DIR}/fuzz-seeds/${t} explain "explain;fuzz")
endforeach()
