# Install and package tests share the build directory's install_manifest.txt
# and CPack staging: never at the same time.
set_tests_properties(shell.t0120-install shell.t0121-deb PROPERTIES
  RESOURCE_LOCK ncd-install-manifest)

# cli_doc_verify and cli_closest against this build's generated docs.
add_executable(test_cli_doc ${CMAKE_CURRENT_LIST_DIR}/test_cli_doc.c
  ${CMAKE_SOURCE_DIR}/src/cli/cli_opts.c ${CMAKE_BINARY_DIR}/gen/cli_doc.c)
set_source_files_properties(${CMAKE_BINARY_DIR}/gen/cli_doc.c PROPERTIES GENERATED TRUE)
add_dependencies(test_cli_doc cli-docs)
target_include_directories(test_cli_doc PRIVATE ${CMAKE_SOURCE_DIR}/src/cli
  ${CMAKE_BINARY_DIR}/gen)
target_link_libraries(test_cli_doc PRIVATE ncd PkgConfig::CMOCKA)
ncd_set_warnings(test_cli_doc)
add_test(NAME unit.test_cli_doc COMMAND test_cli_doc)
set_tests_properties(unit.test_cli_doc PROPERTIES LABELS unit TIMEOUT 60)
