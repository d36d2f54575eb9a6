# perf: an MPI-enabled twin of the CLI for the MPI-launched test
# (t0405-perf-mpi.sh).  Only the files that change with NCD_WITH_MPI are
# recompiled; the rest comes from libncd.  Not built when the main build
# already has MPI (the test then uses nccl-doctor itself).
if(NOT NCD_WITH_MPI)
  find_package(MPI QUIET COMPONENTS C)
  if(MPI_C_FOUND)
    file(GLOB _ncd_cli_srcs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/cli/*.c)
    add_executable(nccl-doctor-mpi ${_ncd_cli_srcs}
      ${CMAKE_SOURCE_DIR}/src/lib/perf/net.c
      ${CMAKE_SOURCE_DIR}/src/lib/perf/mpi.c)
    target_compile_definitions(nccl-doctor-mpi PRIVATE NCD_WITH_MPI=1)
    target_include_directories(nccl-doctor-mpi PRIVATE
      ${CMAKE_SOURCE_DIR}/src/cli ${CMAKE_SOURCE_DIR}/src/lib
      ${CMAKE_BINARY_DIR}/gen)
    target_link_libraries(nccl-doctor-mpi PRIVATE ncd MPI::MPI_C)
    ncd_set_warnings(nccl-doctor-mpi)
  endif()
endif()
