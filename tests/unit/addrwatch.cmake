# The GID index allocation vfabd applies to runtime address changes
# (daemon/vfabd_gidslots.c, a pure function: compiled in directly).
vfab_unit_test(test_addrwatch SOURCES unit/test_addrwatch.c
  ${PROJECT_SOURCE_DIR}/daemon/vfabd_gidslots.c LIBS vfab_fabric)
