# Unit test of base/fsutil.c's vfab_path_public (vfab up warns when other
# users cannot reach the provider the nodes load).
vfab_unit_test(test_fsutil SOURCES unit/test_fsutil.c LIBS vfab_base)
# base/paths.h: whose run root a process sees (root's, or a rootless user's
# from outside and from inside its user namespace).
vfab_unit_test(test_paths SOURCES unit/test_paths.c LIBS vfab_base)
