# Install and package tests share the build directory's install_manifest.txt
# and CPack staging: never at the same time.
set_tests_properties(shell.t0120-install shell.t0121-deb PROPERTIES
  RESOURCE_LOCK ncd-install-manifest)
