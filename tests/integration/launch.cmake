# Launching across nodes (vfab run, up --libdir, up --ssh): a fabric of its
# own ("tlaunch"), since sshd needs `up --ssh`. Exit 77 = skipped (no sshd).
add_test(NAME int_launch COMMAND ${CMAKE_CURRENT_LIST_DIR}/launch.sh)
set_tests_properties(int_launch PROPERTIES
  LABELS integration RUN_SERIAL TRUE TIMEOUT 180 SKIP_RETURN_CODE 77
  ENVIRONMENT "VFAB_BUILD_DIR=${CMAKE_BINARY_DIR};VFAB_FABRIC=tlaunch")
