# Unit tests of netns/: the node views written from a region into a temp dir.
vfab_unit_test(test_sysfs_view SOURCES unit/test_sysfs_view.c LIBS vfab_netns vfab_config)
# The PCI view (netns/pci_view.h) against a fake host /sys with GPUs in a temp dir.
vfab_unit_test(test_pci_view SOURCES unit/test_pci_view.c LIBS vfab_netns vfab_config)
# GPUs per node (netns/gpu_plan.h, node_gpus.h): the planner, the host scan against
# a fake /proc, /sys and /dev, the node's list, the mknod filter.
vfab_unit_test(test_gpu_plan SOURCES unit/test_gpu_plan.c LIBS vfab_netns vfab_config)
