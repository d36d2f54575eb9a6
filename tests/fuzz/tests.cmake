# Fuzz targets of parsers outside explain (cmake/fuzz.cmake): one
# fuzz_<name>.c each, seeds in fuzz-seeds/fuzz_<name>/.
include(${CMAKE_SOURCE_DIR}/cmake/fuzz.cmake)
foreach(t fuzz_rcfile fuzz_wire fuzz_ncclvars fuzz_probe_result fuzz_archive
          fuzz_nft)
  ncd_add_fuzz_target(${t} ${CMAKE_CURRENT_LIST_DIR}/${t}.c
                      ${CMAKE_CURRENT_LIST_DIR}/fuzz-seeds/${t} fuzz fuzz)
endforeach()
if(NCD_LIBFUZZER)
  add_test(NAME fuzz.instrumented
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/instrumented.sh
                   $<TARGET_FILE:fuzz_nft>
                   ${CMAKE_CURRENT_LIST_DIR}/fuzz-seeds/fuzz_nft)
  set_tests_properties(fuzz.instrumented PROPERTIES LABELS "fuzz" TIMEOUT 60)
endif()
