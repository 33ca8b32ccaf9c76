# vfabd's RoCE wire, one packet at a time (daemon/vfabd_wirepkt.c, pure
# functions: compiled in directly): what a process may send, the frame it
# becomes, and the message a received frame becomes.
vfab_unit_test(test_vfabd_wire SOURCES unit/test_vfabd_wire.c
  ${PROJECT_SOURCE_DIR}/daemon/vfabd_wirepkt.c LIBS vfab_fabric)
# QP1 on the wire (daemon/vfabd_gsi.c, compiled in directly): which CM MADs
# a process may send, which process one that arrives reaches, ib_cm's REJ.
vfab_unit_test(test_vfabd_gsi SOURCES unit/test_vfabd_gsi.c
  ${PROJECT_SOURCE_DIR}/daemon/vfabd_gsi.c LIBS vfab_cm_pure vfab_cm_dir vfab_fabric)
