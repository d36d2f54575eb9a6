# Warnings and sanitizers for every target of the project.
function(ncd_set_warnings tgt)
  target_compile_options(${tgt} PRIVATE -Wall -Wextra -Wshadow -Wformat=2
    -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
    -Wvla -fno-common)
  if(CMAKE_C_COMPILER_ID STREQUAL "GNU")
    # gcc's guesses about snprintf truncation (clang has no such warning)
    target_compile_options(${tgt} PRIVATE -Wno-format-truncation)
  endif()
  if(NCD_WERROR)
    target_compile_options(${tgt} PRIVATE -Werror)
  endif()
endfunction()

set(NCD_SAN_FLAGS "")
if(NCD_ASAN)
  list(APPEND NCD_SAN_FLAGS -fsanitize=address -fno-omit-frame-pointer)
endif()
if(NCD_UBSAN)
  list(APPEND NCD_SAN_FLAGS -fsanitize=undefined -fno-sanitize-recover=undefined)
endif()
if(NCD_SAN_FLAGS)
  add_compile_options(${NCD_SAN_FLAGS})
  add_link_options(${NCD_SAN_FLAGS})
endif()

# ncd_asan_defaults(): with NCD_ASAN, every executable target defined so
# far (in this directory and below) gets cmake/asan_defaults.c, the ASan
# runtime's default options.  Called once at the end of the top-level
# CMakeLists.txt.
function(ncd_asan_defaults)
  if(NOT NCD_ASAN)
    return()
  endif()
  set(dirs ${CMAKE_SOURCE_DIR})
  while(dirs)
    list(POP_FRONT dirs d)
    get_property(sub DIRECTORY ${d} PROPERTY SUBDIRECTORIES)
    list(APPEND dirs ${sub})
    get_property(tgts DIRECTORY ${d} PROPERTY BUILDSYSTEM_TARGETS)
    foreach(t ${tgts})
      get_target_property(type ${t} TYPE)
      if(type STREQUAL "EXECUTABLE")
        target_sources(${t} PRIVATE ${CMAKE_SOURCE_DIR}/cmake/asan_defaults.c)
      endif()
    endforeach()
  endwhile()
endfunction()
