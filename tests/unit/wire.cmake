# vfabd's RoCE wire, one packet at a time (daemon/vfabd_wirepkt.c, pure
# functions: compiled in directly): what a process may send, the frame it
# becomes, and the message a received frame becomes.
vfab_unit_test(test_vfabd_wire SOURCES unit/test_vfabd_wire.c
  ${PROJECT_SOURCE_DIR}/daemon/vfabd_wirepkt.c LIBS vfab_fabric)
