# Installs the nccl-tests style names (all_reduce_perf ...) as links to
# nccl-doctor; run by `cmake --install` (install(CODE) in CMakeLists.txt,
# which sets NCD_PERF_NAMES, NCD_BINDIR, NCD_LIBEXECDIR).
#
# * LIBEXECDIR/nccl-doctor/NAME always (a directory of our own);
# * BINDIR/NAME only where the name is free at install time, or is already
#   our own link; a file or link of someone else's is never replaced, and
#   a note says where the links are instead.
# Paths follow the prefix given at install time (--prefix) and DESTDIR.
# Every link made goes into install_manifest.txt (without DESTDIR, as
# CMake lists its own files).  Packages (cpack) set
# NCD_NO_BIN_PERF_LINKS: their maintainer scripts make the BINDIR links on
# the target machine, where the question can be answered.
foreach(_v BINDIR LIBEXECDIR)
  if(IS_ABSOLUTE "${NCD_${_v}}")
    set(_ncd_${_v} "${NCD_${_v}}")
  else()
    set(_ncd_${_v} "${CMAKE_INSTALL_PREFIX}/${NCD_${_v}}")
  endif()
endforeach()
set(_ncd_lx "${_ncd_LIBEXECDIR}/nccl-doctor")
file(RELATIVE_PATH _ncd_rel "${_ncd_lx}" "${_ncd_BINDIR}/nccl-doctor")
file(MAKE_DIRECTORY "$ENV{DESTDIR}${_ncd_lx}")
set(_ncd_taken "")
foreach(_n IN LISTS NCD_PERF_NAMES)
  set(_l "$ENV{DESTDIR}${_ncd_lx}/${_n}")
  if(IS_SYMLINK "${_l}" OR EXISTS "${_l}")
    file(REMOVE "${_l}")
  endif()
  file(CREATE_LINK "${_ncd_rel}" "${_l}" SYMBOLIC)
  list(APPEND CMAKE_INSTALL_MANIFEST_FILES "${_ncd_lx}/${_n}")
  if(NCD_NO_BIN_PERF_LINKS OR "$ENV{NCD_NO_BIN_PERF_LINKS}")
    continue()
  endif()
  set(_b "$ENV{DESTDIR}${_ncd_BINDIR}/${_n}")
  if(IS_SYMLINK "${_b}")
    file(READ_SYMLINK "${_b}" _t)
    if(_t STREQUAL "nccl-doctor")      # ours, from an earlier install
      list(APPEND CMAKE_INSTALL_MANIFEST_FILES "${_ncd_BINDIR}/${_n}")
    else()
      list(APPEND _ncd_taken "${_n}")
    endif()
  elseif(EXISTS "${_b}")
    list(APPEND _ncd_taken "${_n}")
  else()
    message(STATUS "Installing: ${_b} -> nccl-doctor")
    file(CREATE_LINK "nccl-doctor" "${_b}" SYMBOLIC)
    list(APPEND CMAKE_INSTALL_MANIFEST_FILES "${_ncd_BINDIR}/${_n}")
  endif()
endforeach()
if(_ncd_taken)
  list(JOIN _ncd_taken " " _ncd_taken)
  message(STATUS "nccl-doctor: ${_ncd_taken}: taken in ${_ncd_BINDIR} by "
    "another program, left alone; nccl-doctor's links of these names are in "
    "${_ncd_lx} (put it first in PATH to use them)")
endif()
