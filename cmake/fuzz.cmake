# libFuzzer targets, one call per target:
#   ncd_add_fuzz_target(NAME SOURCE SEEDS_DIR TEST_PREFIX LABELS)
# With clang and NCD_FUZZ=ON they are libFuzzer binaries and ctest runs each
# for a fixed number of inputs; otherwise they are built with a small
# driver (tests/explain/fuzz_driver.c) that replays the seed inputs, so the
# code keeps compiling and the seeds keep passing on gcc too.  Every target
# is a dependency of the `fuzz` target (scripts/test.sh builds that).
include_guard(GLOBAL)

if(CMAKE_C_COMPILER_ID MATCHES "Clang" AND NCD_FUZZ)
  set(NCD_LIBFUZZER ON)
  # coverage feedback from the library too: its code is compiled in
  # ncd_objs (plus the *_builtin.c tables in ncd itself); catgen, which
  # links ncd_objs at build time, then needs the coverage runtime too
  target_compile_options(ncd_objs PRIVATE -fsanitize=fuzzer-no-link)
  target_compile_options(ncd PRIVATE -fsanitize=fuzzer-no-link)
  target_link_options(catgen PRIVATE -fsanitize=fuzzer-no-link)
else()
  set(NCD_LIBFUZZER OFF)
endif()
# A fixed seed and run count make the CI run reproducible (a time limit
# would explore differently on a faster or busier machine); the time limit
# is only a safety cap.  Longer runs: run the target by hand.
if(NOT DEFINED NCD_FUZZ_RUNS)
  set(NCD_FUZZ_RUNS 3000)
endif()
add_custom_target(fuzz)

function(ncd_add_fuzz_target t src seeds prefix labels)
  if(NCD_LIBFUZZER)
    add_executable(${t} ${src})
    target_compile_options(${t} PRIVATE -fsanitize=fuzzer)
    target_link_options(${t} PRIVATE -fsanitize=fuzzer)
    # libFuzzer adds new inputs to the first directory: keep that one in
    # the build tree, the checked-in seeds stay read-only.
    file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fuzz-corpus/${t})
    # A dictionary next to the source (NAME.dict) is used when there is one.
    get_filename_component(dict ${src} DIRECTORY)
    set(dict ${dict}/${t}.dict)
    set(dict_opt "")
    if(EXISTS ${dict})
      set(dict_opt -dict=${dict})
    endif()
    add_test(NAME ${prefix}.${t} COMMAND ${t} -seed=1 -runs=${NCD_FUZZ_RUNS}
             ${dict_opt} -max_total_time=120
             -rss_limit_mb=1024 -timeout=10
             -artifact_prefix=${CMAKE_CURRENT_BINARY_DIR}/fuzz-corpus/
             ${CMAKE_CURRENT_BINARY_DIR}/fuzz-corpus/${t} ${seeds})
  else()
    add_executable(${t} ${src} ${CMAKE_SOURCE_DIR}/tests/explain/fuzz_driver.c)
    add_test(NAME ${prefix}.${t} COMMAND ${t} ${seeds})
  endif()
  target_link_libraries(${t} PRIVATE ncd)
  target_include_directories(${t} PRIVATE ${CMAKE_SOURCE_DIR}/src/lib)
  ncd_set_warnings(${t})
  set_tests_properties(${prefix}.${t} PROPERTIES LABELS "${labels}" TIMEOUT 120)
  add_dependencies(fuzz ${t})
endfunction()
