# Per-HCA object limits on a 16-node fabric of its own (issue 27 Medium #6).
add_executable(qp_many ${CMAKE_CURRENT_LIST_DIR}/qp_many.c)
target_link_libraries(qp_many PRIVATE ${IBVERBS_LIB})
add_test(NAME int_limits COMMAND ${CMAKE_CURRENT_LIST_DIR}/limits.sh)
set_tests_properties(int_limits PROPERTIES
  LABELS integration RUN_SERIAL TRUE TIMEOUT 600
  ENVIRONMENT "VFAB_BUILD_DIR=${CMAKE_BINARY_DIR};VFAB_FABRIC=${VFAB_IT_FABRIC}-limits")
