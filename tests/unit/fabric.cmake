# Unit tests of fabric/, config/ and daemon/: config parsing, GID rules, the region, the topology
# fill and vfabd's control protocol and reaping.
vfab_unit_test(test_config SOURCES unit/test_config.c LIBS vfab_config)
target_compile_definitions(test_config PRIVATE
  VFAB_TEST_DATA="${CMAKE_CURRENT_SOURCE_DIR}/unit/data"
  VFAB_CONFIGS_DIR="${PROJECT_SOURCE_DIR}/configs")

vfab_unit_test(test_gid SOURCES unit/test_gid.c LIBS vfab_fabric)

vfab_unit_test(test_region SOURCES unit/test_region.c LIBS vfab_fabric)
# UD multicast groups (fabric/mcast.c): the attach/detach rules, limits, detach on free.
vfab_unit_test(test_mcast SOURCES unit/test_mcast.c LIBS vfab_fabric)
# The ring pool's buddy allocator: exhaustion then full reuse, forged lists.
vfab_unit_test(test_pool SOURCES unit/test_pool.c LIBS vfab_fabric)
vfab_unit_test(test_shard SOURCES unit/test_shard.c LIBS vfab_fabric)

vfab_unit_test(test_topology SOURCES unit/test_topology.c LIBS vfab_config)
target_compile_definitions(test_topology PRIVATE VFAB_CONFIGS_DIR="${PROJECT_SOURCE_DIR}/configs")

vfab_unit_test(test_vfabd SOURCES unit/test_vfabd.c LIBS vfab_config)
target_compile_definitions(test_vfabd PRIVATE VFAB_TEST_DATA="${CMAKE_CURRENT_SOURCE_DIR}/unit/data")
add_dependencies(test_vfabd vfabd)
set_tests_properties(test_vfabd PROPERTIES ENVIRONMENT "VFABD=$<TARGET_FILE:vfabd>")

# Leaves and the spine, reachability, the link model and the rehearsal configs.
vfab_unit_test(test_leaves SOURCES unit/test_leaves.c LIBS vfab_config)
vfab_unit_test(test_machines SOURCES unit/test_machines.c LIBS vfab_config)
vfab_unit_test(test_reach SOURCES unit/test_reach.c LIBS vfab_config)
vfab_unit_test(test_link_model SOURCES unit/test_link_model.c LIBS vfab_config)
vfab_unit_test(test_rehearsal SOURCES unit/test_rehearsal.c LIBS vfab_config)
target_compile_definitions(test_rehearsal PRIVATE VFAB_CONFIGS_DIR="${PROJECT_SOURCE_DIR}/configs")

# Node CPU sets (fabric/cpuset.c) and nodes[].cpus.
vfab_unit_test(test_cpuset SOURCES unit/test_cpuset.c LIBS vfab_config)

# The RoCE packet encoder (fabric/roce_pkt.c): header layouts, ICRC, opcode table.
# CRC-32 of the ICRC (fabric/crc32.c): folding and table against the definition.
vfab_unit_test(test_crc32 SOURCES unit/test_crc32.c LIBS vfab_fabric)
vfab_unit_test(test_roce_pkt SOURCES unit/test_roce_pkt.c LIBS vfab_fabric)
vfab_unit_test(test_roce_parse SOURCES unit/test_roce_parse.c LIBS vfab_fabric)
vfab_unit_test(test_roce_rc SOURCES unit/test_roce_rc.c LIBS vfab_fabric)

# Packet capture: the records' checks (fabric/capture.c) and the CM's messages
# as CM MADs (tools/capture_cm.c, cm/cm_mad.c).
vfab_unit_test(test_capture SOURCES unit/test_capture.c LIBS vfab_fabric vfab_capture)
