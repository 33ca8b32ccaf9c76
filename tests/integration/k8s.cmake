# GID tables as Kubernetes clusters and real hosts make them
# (tests/integration/k8s.sh), on fabrics of their own: "tk8ss"
# (configs/gid-sparse.yaml), "tk8s6" (configs/gid-ipv6only.yaml), "tk8sx"
# (configs/k8s-exclusive.yaml), "tk8sv" (configs/roce-vlan.yaml, where the
# kernel makes 802.1Q VLANs). show_gids, the seed's one-liner, fixed
# indices failing as on hardware, and the per-node index working.
add_test(NAME int_k8s COMMAND ${CMAKE_CURRENT_LIST_DIR}/k8s.sh)
set_tests_properties(int_k8s PROPERTIES
  LABELS integration RUN_SERIAL TRUE TIMEOUT 400
  ENVIRONMENT "VFAB_BUILD_DIR=${CMAKE_BINARY_DIR};VFAB_FABRIC_SPARSE=tk8ss;VFAB_FABRIC_V6=tk8s6;VFAB_FABRIC_EXCL=tk8sx;VFAB_FABRIC_VLAN=tk8sv")
