# Programs run inside a node by the integration tests (tests/integration/*.sh):
# abi_layout_probe proves the provider ABI declaration against the installed
# libibverbs, verbs_errors checks completion statuses and data movement.
add_executable(abi_layout_probe ${CMAKE_CURRENT_LIST_DIR}/abi_layout_probe.c)
target_include_directories(abi_layout_probe PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(abi_layout_probe PRIVATE vfab_fabric ${IBVERBS_LIB} ${CMAKE_DL_LIBS})

add_executable(verbs_errors ${CMAKE_CURRENT_LIST_DIR}/verbs_errors.c
  ${CMAKE_CURRENT_LIST_DIR}/verbs_errors_data.c ${CMAKE_CURRENT_LIST_DIR}/verbs_errors_peer.c
  ${CMAKE_CURRENT_LIST_DIR}/verbs_errors_chain.c ${CMAKE_CURRENT_LIST_DIR}/verbs_errors_port.c
  ${CMAKE_CURRENT_LIST_DIR}/verbs_errors_uc.c
  ${CMAKE_CURRENT_LIST_DIR}/verbs_errors_xrc.c
  ${CMAKE_CURRENT_LIST_DIR}/verbs_errors_dm.c
  ${CMAKE_CURRENT_LIST_DIR}/verbs_errors_raw.c
  ${CMAKE_CURRENT_LIST_DIR}/verbs_errors_tm.c
  ${CMAKE_CURRENT_LIST_DIR}/verbs_errors_counters.c
  ${CMAKE_CURRENT_LIST_DIR}/verbs_errors_ts.c
  ${CMAKE_CURRENT_LIST_DIR}/verbs_errors_cq.c
  ${CMAKE_CURRENT_LIST_DIR}/verbs_errors_mr.c
  ${CMAKE_CURRENT_LIST_DIR}/verbs_errors_mw.c
  ${CMAKE_CURRENT_LIST_DIR}/verbs_errors_odp.c
  ${CMAKE_CURRENT_LIST_DIR}/verbs_errors_pd.c
  ${CMAKE_CURRENT_LIST_DIR}/verbs_harness.c)
target_link_libraries(verbs_errors PRIVATE ${IBVERBS_LIB})

# UD multicast through the verbs API (attach/detach errors, delivery), run by mcast.sh.
add_executable(verbs_mcast ${CMAKE_CURRENT_LIST_DIR}/verbs_mcast.c
  ${CMAKE_CURRENT_LIST_DIR}/verbs_harness.c)
target_link_libraries(verbs_mcast PRIVATE ${IBVERBS_LIB})

# nccl_pattern: verbs as NCCL's net_ib uses them (see its header comment).
add_executable(nccl_pattern ${CMAKE_CURRENT_LIST_DIR}/nccl_pattern.c
  ${CMAKE_CURRENT_LIST_DIR}/nccl_pattern_ib.c ${CMAKE_CURRENT_LIST_DIR}/nccl_pattern_flow.c)
target_link_libraries(nccl_pattern PRIVATE ${IBVERBS_LIB} pthread)
# In one node (the sender a child process), then across the nodes.
vfab_integration_test(int_nccl_pattern 300 ${_vfab_it}/node_checks.sh nccl_pattern -d mlx5_0)
vfab_integration_test(int_nccl_pattern_nodes 300 ${_vfab_it}/nccl_pattern.sh 18590)

# pid reuse: a WRITE never lands in a process that inherited a dead peer's pid.
add_executable(pid_reuse ${CMAKE_CURRENT_LIST_DIR}/pid_reuse.c ${CMAKE_CURRENT_LIST_DIR}/verbs_harness.c)
target_link_libraries(pid_reuse PRIVATE ${IBVERBS_LIB})

# ibv_dereg_mr racing RDMA WRITEs of another process: nothing lands after it returns.
add_executable(dereg_race ${CMAKE_CURRENT_LIST_DIR}/dereg_race.c ${CMAKE_CURRENT_LIST_DIR}/verbs_harness.c)
target_link_libraries(dereg_race PRIVATE ${IBVERBS_LIB})

# Copy engines forced on (2 per process, ranges from 16 KiB, so that
# transfers from 32 KiB split) on the test fabric's one-CPU nodes: ordering
# (NCCL's last-bytes flags, the chain and error paths) and the bytes.
set(_vfab_engines_env "VFAB_COPY_ENGINES=2;VFAB_COPY_SPLIT_MIN=16384")
vfab_integration_test(int_nccl_pattern_engines 300
  ${_vfab_it}/node_checks.sh nccl_pattern -d mlx5_0)
vfab_integration_test(int_nccl_pattern_nodes_engines 300 ${_vfab_it}/nccl_pattern.sh 18593)
vfab_integration_test(int_verbs_errors_engines 600
  ${_vfab_it}/node_checks.sh verbs_errors -d mlx5_0 -g 3)
vfab_integration_test(int_lossy_verify_engines 300
  ${_vfab_it}/lossy_verify.sh 18594 --bytes 16777216 --sends 500)
foreach(_t nccl_pattern nccl_pattern_nodes verbs_errors lossy_verify)
  set_property(TEST int_${_t}_engines APPEND PROPERTY ENVIRONMENT ${_vfab_engines_env})
endforeach()
