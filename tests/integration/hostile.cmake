# An unprivileged user against the region and root processes (issue 27): on a fabric of its
# own, since it rewrites what it can reach of the region, named after the shared
# fixture's so that runs beside someone else's stay apart.
add_executable(region_scribble ${CMAKE_CURRENT_LIST_DIR}/region_scribble.c)
target_link_libraries(region_scribble PRIVATE vfab_fabric)
add_test(NAME int_hostile COMMAND ${CMAKE_CURRENT_LIST_DIR}/hostile.sh 18617)
set_tests_properties(int_hostile PROPERTIES
  LABELS integration RUN_SERIAL TRUE TIMEOUT 300 SKIP_RETURN_CODE 77
  ENVIRONMENT "VFAB_BUILD_DIR=${CMAKE_BINARY_DIR};VFAB_FABRIC=${VFAB_IT_FABRIC}-hostile")

# /dev/shm full, in a mount namespace of its own (issue 27 Medium #5).
add_executable(shm_fill ${CMAKE_CURRENT_LIST_DIR}/shm_fill.c)
target_link_libraries(shm_fill PRIVATE ${IBVERBS_LIB})
add_test(NAME int_shm_full COMMAND ${CMAKE_CURRENT_LIST_DIR}/shm_full.sh)
set_tests_properties(int_shm_full PROPERTIES
  LABELS integration RUN_SERIAL TRUE TIMEOUT 300 SKIP_RETURN_CODE 77
  ENVIRONMENT "VFAB_BUILD_DIR=${CMAKE_BINARY_DIR};VFAB_FABRIC=${VFAB_IT_FABRIC}-shm")
