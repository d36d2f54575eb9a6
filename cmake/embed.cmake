# ncd_embed_files(OUT files...): generates OUT, a C file defining
#   const struct ncd_embedded_file ncd_embedded_files[]; (NULL-terminated)
# with each file's base name, bytes and size (see src/lib/core/embedded.h).
function(ncd_embed_files out)
  set(deps ${ARGN})
  add_custom_command(OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out} "-DFILES=${deps}"
            -P ${CMAKE_SOURCE_DIR}/cmake/embed_gen.cmake
    DEPENDS ${deps} ${CMAKE_SOURCE_DIR}/cmake/embed_gen.cmake
    COMMENT "Embedding data files" VERBATIM)
endfunction()
