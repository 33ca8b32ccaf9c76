# In-order delivery and NAK recovery on shaped and lossy links
# (tests/integration/inorder.sh): on a fabric of its own ("tord"), because it
# shapes both ports and makes one lossy, which must not disturb the tests
# sharing "tint".
add_test(NAME int_inorder COMMAND ${CMAKE_CURRENT_LIST_DIR}/inorder.sh)
set_tests_properties(int_inorder PROPERTIES
  LABELS integration RUN_SERIAL TRUE TIMEOUT 480
  ENVIRONMENT "VFAB_BUILD_DIR=${CMAKE_BINARY_DIR};VFAB_FABRIC=tord")
