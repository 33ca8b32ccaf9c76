# Unit test of base/fsutil.c's vfab_path_public (vfab up warns when other
# users cannot reach the provider the nodes load).
vfab_unit_test(test_fsutil SOURCES unit/test_fsutil.c LIBS vfab_base)
