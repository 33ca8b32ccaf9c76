# Each HCA as a PCIe function in the node's /sys (configs/dgx-2x8.yaml, then
# the same with gpu: placements) on a fabric of its own, named after
# VFAB_IT_FABRIC so that runs beside someone else's do not collide.
add_test(NAME int_pci COMMAND ${CMAKE_CURRENT_LIST_DIR}/pci.sh)
set_tests_properties(int_pci PROPERTIES
  LABELS integration RUN_SERIAL TRUE TIMEOUT 240
  ENVIRONMENT "VFAB_BUILD_DIR=${CMAKE_BINARY_DIR};VFAB_FABRIC=${VFAB_IT_FABRIC}pci")
