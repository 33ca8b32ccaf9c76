# vfab capture (issue 24) on a fabric of its own with MTU 9000: pcaps that
# tshark decodes as RoCE, checked by capture_check.py.
add_test(NAME int_capture COMMAND ${CMAKE_CURRENT_LIST_DIR}/capture.sh)
set_tests_properties(int_capture PROPERTIES
  LABELS integration RUN_SERIAL TRUE TIMEOUT 300
  ENVIRONMENT "VFAB_BUILD_DIR=${CMAKE_BINARY_DIR};VFAB_FABRIC=${VFAB_IT_FABRIC}-cap")
