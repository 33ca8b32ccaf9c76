# The frames of vfabd's IP delay line (daemon/vfabd_frame.c, pure functions:
# compiled in directly).
vfab_unit_test(test_vfabd_frame SOURCES unit/test_vfabd_frame.c
  ${PROJECT_SOURCE_DIR}/daemon/vfabd_frame.c)
