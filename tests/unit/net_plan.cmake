# Unit test of netns/net_plan.c: each node's bridges, MTUs, MACs, addresses
# and spine routes, for the shipped configs.
vfab_unit_test(test_net_plan SOURCES unit/test_net_plan.c LIBS vfab_netns vfab_config)
target_compile_definitions(test_net_plan PRIVATE VFAB_CONFIGS_DIR="${PROJECT_SOURCE_DIR}/configs")
# Unit test of netns/ip_shape_plan.c: the IP side of a link (one wire).
vfab_unit_test(test_ip_shape SOURCES unit/test_ip_shape.c LIBS vfab_netns)
