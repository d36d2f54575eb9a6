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

# Differential test against the real libnccl.so.2 (issue 14): one process
# per scenario loads NCCL through dlopen (tests/netns/nccl_oracle.c, never
# linked) and calls ncclGetUniqueId; its choice must equal `ifaces --json`.
# The oracle is built without sanitizers: it only hosts the foreign library.
add_executable(ncd-nccl-oracle ${CMAKE_CURRENT_LIST_DIR}/nccl_oracle.c)
set_target_properties(ncd-nccl-oracle PROPERTIES COMPILE_OPTIONS "" LINK_OPTIONS "")
target_link_libraries(ncd-nccl-oracle PRIVATE ${CMAKE_DL_LIBS})
ncd_set_warnings(ncd-nccl-oracle)
add_test(NAME netns.nccl-differential
  COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/nccl-differential.sh)
set_tests_properties(netns.nccl-differential PROPERTIES LABELS netns
  TIMEOUT 300 SKIP_RETURN_CODE 77
  ENVIRONMENT "NCD_BIN=$<TARGET_FILE:nccl-doctor>;NCD_NCCL_ORACLE=$<TARGET_FILE:ncd-nccl-oracle>;NCD_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
