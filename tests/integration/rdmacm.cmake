# Unmodified librdmacm programs between node0 and node1 of the shared test
# fabric (tests/integration/rdmacm.sh): RC, several connections, UD, the
# rdma_getaddrinfo/rdma_create_ep API, perftest -R, and the failures
# (nobody listens, nobody has the address, the peer dies). RDMA CM ports
# are distinct per test so that no listener entry of one is seen by the next.
set(_vfab_rdmacm ${CMAKE_CURRENT_LIST_DIR}/rdmacm.sh)
vfab_integration_test(int_rdmacm_rping 120 ${_vfab_rdmacm} rping 7181)
vfab_integration_test(int_rdmacm_ucmatose 120 ${_vfab_rdmacm} ucmatose 7182)
vfab_integration_test(int_rdmacm_udaddy 120 ${_vfab_rdmacm} udaddy)
vfab_integration_test(int_rdmacm_rdma_server 120 ${_vfab_rdmacm} rdma_server 7183)
vfab_integration_test(int_rdmacm_xrc 120 ${_vfab_rdmacm} rdma_xserver 7189)
vfab_integration_test(int_rdmacm_ib_write_bw 240 ${_vfab_rdmacm} ib_write_bw 18641 -n 2000)
vfab_integration_test(int_rdmacm_ib_send_lat 240 ${_vfab_rdmacm} ib_send_lat 18642 -n 2000)
vfab_integration_test(int_rdmacm_ib_read_bw 240 ${_vfab_rdmacm} ib_read_bw 18643 -n 2000)
vfab_integration_test(int_rdmacm_reject 60 ${_vfab_rdmacm} reject 7184)
vfab_integration_test(int_rdmacm_unreachable 60 ${_vfab_rdmacm} unreachable 7185)
vfab_integration_test(int_rdmacm_deadpeer 120 ${_vfab_rdmacm} deadpeer 7186)
vfab_integration_test(int_rdmacm_loopback 60 ${_vfab_rdmacm} loopback 7187)
# 1000 connections at once: no dropped CM message, no resend (issue 28).
vfab_integration_test(int_rdmacm_burst 300 ${_vfab_rdmacm} burst 7250)
vfab_integration_test(int_rsockets 180 ${_vfab_rdmacm} rsockets 7188)

# libfabric's verbs provider (libfabric-bin): msg endpoints over the RDMA CM,
# ofi_rxm and ofi_rxd on top, dgram. Exit 77 = skipped: no libfabric-bin.
vfab_integration_test(int_libfabric 300 ${CMAKE_CURRENT_LIST_DIR}/libfabric.sh)
set_tests_properties(int_libfabric PROPERTIES SKIP_RETURN_CODE 77)

# Across the spine of configs/leafspine-oversub.yaml, on a fabric of its own
# ("tcmspine"), and a port taken down: UNREACHABLE after the CM's ~74 s of retries.
add_test(NAME int_rdmacm_leafspine COMMAND ${CMAKE_CURRENT_LIST_DIR}/rdmacm_leafspine.sh)
set_tests_properties(int_rdmacm_leafspine PROPERTIES
  LABELS integration RUN_SERIAL TRUE TIMEOUT 300
  ENVIRONMENT "VFAB_BUILD_DIR=${CMAKE_BINARY_DIR};VFAB_FABRIC=tcmspine")

# Event channels: O_NONBLOCK, epoll, rdma_migrate_id, destroy with an event
# outstanding, the connect private-data limit (in node0 and node1).
find_library(RDMACM_LIB rdmacm)
if(RDMACM_LIB)
  add_executable(cm_channel ${CMAKE_CURRENT_LIST_DIR}/cm_channel.c)
  target_link_libraries(cm_channel PRIVATE ${RDMACM_LIB})
  vfab_integration_test(int_rdmacm_channel 60
    ${CMAKE_CURRENT_LIST_DIR}/node_checks.sh cm_channel 198.18.0.2)
  # A peer that dies is answered as its kernel would (DREP, REJ) within 2 s:
  # DREQ to a dead peer, DREQ_SENT, REP_SENT, the MRA states.
  add_executable(cm_deadpeer ${CMAKE_CURRENT_LIST_DIR}/cm_deadpeer.c)
  target_link_libraries(cm_deadpeer PRIVATE ${RDMACM_LIB})
  vfab_integration_test(int_rdmacm_deadpeer_states 120
    ${CMAKE_CURRENT_LIST_DIR}/cm_deadpeer.sh 7230)
endif()
