# The installed vfab (tests/integration/install.sh): cmake --install into a
# staging root, a fabric of its own ("tinst") run from there, uninstall, .deb.
add_test(NAME int_install COMMAND ${CMAKE_CURRENT_LIST_DIR}/install.sh)
set_tests_properties(int_install PROPERTIES
  LABELS integration RUN_SERIAL TRUE TIMEOUT 300
  ENVIRONMENT "VFAB_BUILD_DIR=${CMAKE_BINARY_DIR};VFAB_FABRIC=tinst")
