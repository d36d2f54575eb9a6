# A Debian package: `cpack -G DEB` in the build directory (or
# `cmake --build build --target package`).  It holds what `cmake --install`
# puts under /usr except the BINDIR *_perf links: dpkg would silently
# replace a file nobody registered, so the maintainer scripts
# (cmake/deb/postinst, prerm) make those links only where the name is free
# on the machine and remove only links that are still ours.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME nccl-doctor)
set(CPACK_PACKAGE_VENDOR "nccl-doctor")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "find why NCCL multi-GPU jobs fail or crawl, with evidence and fixes")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "nccl-doctor developers <nccl-doctor@localhost>")
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# dlopen'ed on first use (so dpkg-shlibdeps cannot see them) and needed by
# explain, verify and topo --topology: libyaml (src/lib/core/yaml.c),
# hwloc (src/lib/node/topo.c), zlib (src/lib/explain/input.c).
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libyaml-0-2, libhwloc15, zlib1g")
set(CPACK_STRIP_FILES OFF)
set(CPACK_PROJECT_CONFIG_FILE ${CMAKE_BINARY_DIR}/ncd-cpack-config.cmake)
file(WRITE ${CMAKE_BINARY_DIR}/ncd-cpack-config.cmake
  "set(ENV{NCD_NO_BIN_PERF_LINKS} 1)\n")
# Maintainer scripts with the link names filled in; DPKG_ROOT is honoured
# (dpkg --root ... --force-script-chrootless, as the test does).
list(JOIN NCD_PERF_NAMES " " NCD_DEB_PERF_NAMES)
foreach(s postinst prerm)
  configure_file(${CMAKE_SOURCE_DIR}/cmake/deb/${s}.in
                 ${CMAKE_BINARY_DIR}/deb-tmp/${s} @ONLY)
  file(COPY ${CMAKE_BINARY_DIR}/deb-tmp/${s} DESTINATION ${CMAKE_BINARY_DIR}/deb
       FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ
       GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
endforeach()
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
  ${CMAKE_BINARY_DIR}/deb/postinst ${CMAKE_BINARY_DIR}/deb/prerm)
include(CPack)
