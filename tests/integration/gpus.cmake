# GPUs per node (tests/integration/gpus.sh): in a private mount namespace with
# fake GPUs where the host has none, on a fabric of its own named after
# VFAB_IT_FABRIC ("gp" first, so that runs beside someone else's do not collide).
add_test(NAME int_gpus COMMAND ${CMAKE_CURRENT_LIST_DIR}/gpus.sh)
set_tests_properties(int_gpus PROPERTIES
  LABELS integration RUN_SERIAL TRUE TIMEOUT 240
  ENVIRONMENT "VFAB_BUILD_DIR=${CMAKE_BINARY_DIR};VFAB_FABRIC=gp${VFAB_IT_FABRIC}")
