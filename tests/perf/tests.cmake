# perf: an MPI-enabled twin of the CLI for the MPI-launched test
# (t0405-perf-mpi.sh).  Only the MPI process group (src/lib/pg/pg_mpi.c,
# the one file that changes with NCD_WITH_MPI) is recompiled; its objects
# replace libncd's copy, the rest comes from libncd.  Not built when the
# main build already has MPI (the test then uses nccl-doctor itself).
if(NOT NCD_WITH_MPI)
  find_package(MPI QUIET COMPONENTS C)
  if(MPI_C_FOUND)
    file(GLOB _ncd_cli_srcs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/cli/*.c)
    set_source_files_properties(${CMAKE_BINARY_DIR}/gen/cli_doc.c
      PROPERTIES GENERATED TRUE)
    add_executable(nccl-doctor-mpi ${_ncd_cli_srcs}
      ${CMAKE_BINARY_DIR}/gen/cli_doc.c
      ${CMAKE_SOURCE_DIR}/src/lib/pg/pg_mpi.c)
    add_dependencies(nccl-doctor-mpi cli-docs)
    target_compile_definitions(nccl-doctor-mpi PRIVATE NCD_WITH_MPI=1)
    target_include_directories(nccl-doctor-mpi PRIVATE
      ${CMAKE_SOURCE_DIR}/src/cli ${CMAKE_SOURCE_DIR}/src/lib
      ${CMAKE_BINARY_DIR}/gen)
    target_link_libraries(nccl-doctor-mpi PRIVATE ncd MPI::MPI_C)
    ncd_set_warnings(nccl-doctor-mpi)
  endif()
endif()

# TEST-ONLY host-memory stand-ins for libnccl.so.2 and libcudart.so, to
# exercise the nccl backend's dlopen loader end to end without a GPU
# (t0406-perf-nccl.sh).  Never installed.
foreach(_fake nccl cudart)
  add_library(fake_${_fake} SHARED ${CMAKE_CURRENT_LIST_DIR}/fake_${_fake}.c)
  set_target_properties(fake_${_fake} PROPERTIES
    OUTPUT_NAME ${_fake}
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/fakecuda)
  target_link_libraries(fake_${_fake} PRIVATE Threads::Threads)
  target_include_directories(fake_${_fake} PRIVATE ${CMAKE_SOURCE_DIR}/src/lib)
endforeach()
set_target_properties(fake_nccl PROPERTIES SUFFIX ".so.2")
set_target_properties(fake_cudart PROPERTIES SUFFIX ".so")
