# Leaves and the spine (configs/leafspine-oversub.yaml) on a fabric of its own
# ("tleafspine"): routing through the spine, RoCE v2 across leaves, RoCE v1
# only within a leaf.
add_test(NAME int_leafspine COMMAND ${CMAKE_CURRENT_LIST_DIR}/leafspine.sh)
set_tests_properties(int_leafspine PROPERTIES
  LABELS integration RUN_SERIAL TRUE TIMEOUT 180
  ENVIRONMENT "VFAB_BUILD_DIR=${CMAKE_BINARY_DIR};VFAB_FABRIC=tleafspine")
