# SPDX-License-Identifier: MIT
# Node checks: stand-in libnccl.so.2 builds of two versions for the library
# scan tests (tests/shell/t0505-libs.sh), in ${CMAKE_BINARY_DIR}/fake/<v>/.
foreach(spec "2.19.3;21903;12.2" "2.21.5;22105;12.4")
  list(GET spec 0 ver)
  list(GET spec 1 code)
  list(GET spec 2 cuda)
  string(REPLACE "." "_" tag ${ver})
  add_library(ncd_fake_nccl_${tag} SHARED ${CMAKE_CURRENT_LIST_DIR}/fake_nccl.c)
  target_compile_definitions(ncd_fake_nccl_${tag} PRIVATE
    NCD_FAKE_VERSION="${ver}" NCD_FAKE_CODE=${code} NCD_FAKE_CUDA="${cuda}")
  set_target_properties(ncd_fake_nccl_${tag} PROPERTIES
    PREFIX "lib" OUTPUT_NAME "nccl" SUFFIX ".so.2"
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fake/${ver})
endforeach()
