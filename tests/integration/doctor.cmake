# vfab doctor (tests/integration/doctor.sh): the host probes, as root and as an
# unprivileged user; no fabric.
add_test(NAME int_doctor COMMAND ${CMAKE_CURRENT_LIST_DIR}/doctor.sh)
set_tests_properties(int_doctor PROPERTIES
  LABELS integration RUN_SERIAL TRUE TIMEOUT 60
  ENVIRONMENT "VFAB_BUILD_DIR=${CMAKE_BINARY_DIR}")
