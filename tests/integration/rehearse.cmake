# Rehearsal scenarios (tests/integration/rehearse.sh) on fabrics of their own
# ("tgid" with the default config, "tgidr" with configs/runai-roce.yaml):
# runtime address changes reach the GID table and raise GID_CHANGE, the
# seed's NCCL_IB_GID_INDEX one-liners, wrong GID indices, PSNs and QPNs fail
# as on hardware (psn_check runs inside a node).
add_executable(psn_check ${CMAKE_CURRENT_LIST_DIR}/psn_check.c)
target_link_libraries(psn_check PRIVATE ${IBVERBS_LIB})

add_test(NAME int_rehearse COMMAND ${CMAKE_CURRENT_LIST_DIR}/rehearse.sh)
set_tests_properties(int_rehearse PROPERTIES
  LABELS integration RUN_SERIAL TRUE TIMEOUT 420
  ENVIRONMENT "VFAB_BUILD_DIR=${CMAKE_BINARY_DIR};VFAB_FABRIC=tgid;VFAB_FABRIC_RUNAI=tgidr")
