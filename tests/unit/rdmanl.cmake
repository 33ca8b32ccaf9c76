# RDMA netlink answered in the process (rdmanl/): messages, the devices read
# from a sysfs tree, and the commands' answers, against a scratch tree.
vfab_unit_test(test_rdmanl SOURCES unit/test_rdmanl.c LIBS vfab_rdmanl)
