# Runtime control, faults and observability (tests/integration/ops.sh): on a
# fabric of its own ("tops"), because it takes ports down, shapes links and
# kills node processes, which must not disturb the tests sharing "tint".
add_test(NAME int_ops COMMAND ${CMAKE_CURRENT_LIST_DIR}/ops.sh)
set_tests_properties(int_ops PROPERTIES
  LABELS integration RUN_SERIAL TRUE TIMEOUT 300
  ENVIRONMENT "VFAB_BUILD_DIR=${CMAKE_BINARY_DIR};VFAB_FABRIC=tops")
