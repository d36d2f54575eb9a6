# Removes what install_manifest.txt lists (cmake -DMANIFEST=... -P; the
# same DESTDIR as the install), and
# nothing else: a path that has meanwhile become something else (a link no
# longer pointing at nccl-doctor) is left with a note.  Empty directories
# of our own (LIBEXECDIR/nccl-doctor) go too.
if(NOT EXISTS "${MANIFEST}")
  message(FATAL_ERROR "no ${MANIFEST}: nothing was installed from this build")
endif()
file(STRINGS "${MANIFEST}" _files)
foreach(_f IN LISTS _files)
  set(_f "$ENV{DESTDIR}${_f}")   # the manifest lists paths without DESTDIR
  if(IS_SYMLINK "${_f}")
    file(READ_SYMLINK "${_f}" _t)
    if(NOT _t MATCHES "(^|/)nccl-doctor$")
      message(STATUS "Left alone (now points at ${_t}): ${_f}")
      continue()
    endif()
  elseif(NOT EXISTS "${_f}")
    continue()
  endif()
  message(STATUS "Removing: ${_f}")
  file(REMOVE "${_f}")
  get_filename_component(_d "${_f}" DIRECTORY)
  if(_d MATCHES "/nccl-doctor$")
    file(GLOB _left "${_d}/*")
    if(NOT _left)
      file(REMOVE_RECURSE "${_d}")
    endif()
  endif()
endforeach()
