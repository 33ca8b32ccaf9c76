# Two machines, one cluster (tests/integration/multihost.sh,
# configs/two-hosts.yaml): two network namespaces as machines joined by a
# veth, `vfab up --host` in each, nodes reaching each other across.
add_test(NAME int_multihost COMMAND ${CMAKE_CURRENT_LIST_DIR}/multihost.sh)
set_tests_properties(int_multihost PROPERTIES
  LABELS integration RUN_SERIAL TRUE TIMEOUT 300
  ENVIRONMENT "VFAB_BUILD_DIR=${CMAKE_BINARY_DIR};VFAB_FABRIC_MULTIHOST=tmh")

# A leaf stretched over both machines (tests/integration/multihost_leaf.sh,
# configs/two-hosts-stretched.yaml): a VXLAN per spanning leaf, an anycast gateway.
add_test(NAME int_multihost_leaf COMMAND ${CMAKE_CURRENT_LIST_DIR}/multihost_leaf.sh)
set_tests_properties(int_multihost_leaf PROPERTIES
  LABELS integration RUN_SERIAL TRUE TIMEOUT 300
  ENVIRONMENT "VFAB_BUILD_DIR=${CMAKE_BINARY_DIR};VFAB_FABRIC_MULTIHOST=tml")
