# Warnings and sanitizers for every target of the project.
function(ncd_set_warnings tgt)
  target_compile_options(${tgt} PRIVATE -Wall -Wextra -Wshadow -Wformat=2
    -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
    -Wvla -fno-common -Wno-format-truncation)
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
