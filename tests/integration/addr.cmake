# `vfab addr` (tests/integration/addr.sh) on a fabric of its own ("taddr",
# the default config): addresses added and removed from the host reach the
# GID table, raise GID_CHANGE and carry traffic; mistakes fail clearly.
add_test(NAME int_addr COMMAND ${CMAKE_CURRENT_LIST_DIR}/addr.sh)
set_tests_properties(int_addr PROPERTIES
  LABELS integration RUN_SERIAL TRUE TIMEOUT 240
  ENVIRONMENT "VFAB_BUILD_DIR=${CMAKE_BINARY_DIR};VFAB_FABRIC=taddr")
