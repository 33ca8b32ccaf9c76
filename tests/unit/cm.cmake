# Unit tests of cm/ (the RDMA CM): the wire format of the CM messages and
# what the kernel's CM derives for a RoCE connection (GIDs, MTU, path, QP
# attributes per state), the listener directory's checks.
vfab_unit_test(test_cm_wire SOURCES unit/test_cm_wire.c LIBS vfab_cm_pure)
vfab_unit_test(test_cm_path SOURCES unit/test_cm_path.c LIBS vfab_cm_pure)
# CM MADs on the wire (IBA 12.6, as ib_cm and rdma_cm format them for RoCE).
vfab_unit_test(test_cm_mad SOURCES unit/test_cm_mad.c LIBS vfab_cm_pure)
# The listener directory: what an entry must be for the CM to trust it.
vfab_unit_test(test_cm_dir SOURCES unit/test_cm_dir.c LIBS vfab_cm_dir)
