# SPDX-License-Identifier: MIT
# Network-namespace test bed scenarios (tests/netns/scenario-*.sh): "hosts"
# as network namespaces; skipped (exit 77) where namespaces cannot be made.
# Label netns; run them alone with `ctest -L netns`.  RUN_SERIAL: they
# time links and must not share the 2 CI cores with other benchmarks.
file(GLOB NCD_NETNS_SCENARIOS CONFIGURE_DEPENDS
  ${CMAKE_CURRENT_LIST_DIR}/scenario-*.sh)
foreach(script ${NCD_NETNS_SCENARIOS})
  get_filename_component(name ${script} NAME_WE)
  add_test(NAME netns.${name} COMMAND sh ${script})
  set_tests_properties(netns.${name} PROPERTIES LABELS netns TIMEOUT 180
    SKIP_RETURN_CODE 77 RUN_SERIAL TRUE
    ENVIRONMENT "NCD_BIN=$<TARGET_FILE:nccl-doctor>;NCD_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
endforeach()
