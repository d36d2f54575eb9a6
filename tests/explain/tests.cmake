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

# Fuzz targets for the line parser and the rules loader.  With clang and
# NCD_FUZZ=ON (or a clang build: detected) they are libFuzzer binaries and
# ctest runs each for a few seconds; otherwise they are built with a small
# driver that replays the seed inputs, so the code keeps compiling and the
# seeds keep passing on gcc too.
set(NCD_FUZZ_SEEDS ${CMAKE_CURRENT_LIST_DIR}/fuzz-seeds)
if(CMAKE_C_COMPILER_ID MATCHES "Clang" AND NCD_FUZZ)
  set(_ncd_libfuzzer ON)
else()
  set(_ncd_libfuzzer OFF)
endif()
foreach(t fuzz_log_line fuzz_rules)
  if(_ncd_libfuzzer)
    add_executable(${t} ${CMAKE_CURRENT_LIST_DIR}/${t}.c)
    target_compile_options(${t} PRIVATE -fsanitize=fuzzer)
    target_link_options(${t} PRIVATE -fsanitize=fuzzer)
    # libFuzzer adds new inputs to the first directory: keep that one in
    # the build tree, the checked-in seeds stay read-only.
    file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fuzz-corpus/${t})
    # A fixed seed and run count make the CI run reproducible (a time limit
    # would explore differently on a faster or busier machine); the time
    # limit is only a safety cap.  Longer runs: run the target by hand.
    if(NOT DEFINED NCD_FUZZ_RUNS)
      set(NCD_FUZZ_RUNS 3000)
    endif()
    add_test(NAME explain.${t} COMMAND ${t} -seed=1 -runs=${NCD_FUZZ_RUNS}
             -max_total_time=120
             -rss_limit_mb=1024 -timeout=10
             -artifact_prefix=${CMAKE_CURRENT_BINARY_DIR}/fuzz-corpus/
             ${CMAKE_CURRENT_BINARY_DIR}/fuzz-corpus/${t} ${NCD_FUZZ_SEEDS}/${t})
  else()
    add_executable(${t} ${CMAKE_CURRENT_LIST_DIR}/${t}.c ${CMAKE_CURRENT_LIST_DIR}/fuzz_driver.c)
    add_test(NAME explain.${t} COMMAND ${t} ${NCD_FUZZ_SEEDS}/${t})
  endif()
  target_link_libraries(${t} PRIVATE ncd)
  target_include_directories(${t} PRIVATE ${CMAKE_SOURCE_DIR}/src/lib)
  ncd_set_warnings(${t})
  set_tests_properties(explain.${t} PROPERTIES LABELS "explain;fuzz" TIMEOUT 120)
endforeach()
if(_ncd_libfuzzer)
  # coverage feedback from the library too
  target_compile_options(ncd PRIVATE -fsanitize=fuzzer-no-link)
endif()
