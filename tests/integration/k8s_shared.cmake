# Kubernetes pods sharing their host's HCA (tests/integration/k8s_shared.sh,
# configs/k8s-shared.yaml) on a fabric of its own, "tshk8s": every pod's
# entries in one table, per-pod indices, a global index failing in another
# pod, each pod's own index and UCX working across hosts.
add_test(NAME int_k8s_shared COMMAND ${CMAKE_CURRENT_LIST_DIR}/k8s_shared.sh)
set_tests_properties(int_k8s_shared PROPERTIES
  LABELS integration RUN_SERIAL TRUE TIMEOUT 300
  ENVIRONMENT "VFAB_BUILD_DIR=${CMAKE_BINARY_DIR};VFAB_FABRIC_SHARED=tshk8s")
