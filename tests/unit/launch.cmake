# Unit tests of launching across nodes: `vfab run`'s line and exit-status
# bookkeeping (tools/run_mux.c) and the launcher files (netns/launch_files.c).
vfab_unit_test(test_launch SOURCES unit/test_launch.c LIBS vfab_run_mux vfab_netns vfab_config)
