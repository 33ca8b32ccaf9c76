# RoCE over a VLAN (configs/roce-vlan.yaml): the config's `vlan`, the port's
# GID table with the upper's entries, gid_attrs/ndevs naming the upper, and
# vfabd's runtime index allocation telling netdevs apart.
vfab_unit_test(test_gid_vlan SOURCES unit/test_gid_vlan.c
  ${PROJECT_SOURCE_DIR}/daemon/vfabd_gidslots.c LIBS vfab_config vfab_netns)
target_compile_definitions(test_gid_vlan PRIVATE VFAB_CONFIGS_DIR="${PROJECT_SOURCE_DIR}/configs")
