# Integration tests: real fabrics, unmodified rdma-core tools, perftest and
# pyverbs inside the nodes. All share one fabric ("tint", the default 2-node
# topology) brought up by the fixture fabric_up and taken down by fabric_down;
# each test is a script in this folder (see lib.sh) and needs root.
set(_vfab_it ${CMAKE_CURRENT_LIST_DIR})
# -DVFAB_IT_FABRIC=NAME: another name, for runs beside someone else's.
set(VFAB_IT_FABRIC tint CACHE STRING "fabric the shared integration tests bring up")
set(_vfab_it_env "VFAB_BUILD_DIR=${CMAKE_BINARY_DIR};VFAB_FABRIC=${VFAB_IT_FABRIC}")
set(_vfab_it_tests "")

# vfab_integration_test(NAME TIMEOUT COMMAND...)
function(vfab_integration_test name timeout)
  add_test(NAME ${name} COMMAND ${ARGN})
  set_tests_properties(${name} PROPERTIES
    LABELS integration RUN_SERIAL TRUE TIMEOUT ${timeout}
    FIXTURES_REQUIRED fabric_up ENVIRONMENT "${_vfab_it_env}")
  set(_vfab_it_tests ${_vfab_it_tests} ${name} PARENT_SCOPE)
endfunction()

add_test(NAME fabric_up COMMAND ${_vfab_it}/fabric_up.sh)
add_test(NAME fabric_down COMMAND ${_vfab_it}/fabric_down.sh)
set_tests_properties(fabric_up PROPERTIES FIXTURES_SETUP fabric_up)
set_tests_properties(fabric_down PROPERTIES FIXTURES_CLEANUP fabric_up)
set_tests_properties(fabric_up fabric_down PROPERTIES
  LABELS integration RUN_SERIAL TRUE TIMEOUT 120 ENVIRONMENT "${_vfab_it_env}")

vfab_integration_test(int_devinfo 60 ${_vfab_it}/devinfo.sh)
vfab_integration_test(int_rdma_tool 90 ${_vfab_it}/rdma_tool.sh)
vfab_integration_test(int_gid_oneliner 60 ${_vfab_it}/gid_oneliner.sh)

# rdma-core's examples; TCP ports for their set-up are distinct per test so
# that a TIME_WAIT of one never delays the next.
vfab_integration_test(int_rc_pingpong 120
  ${_vfab_it}/pingpong.sh 18531 ibv_rc_pingpong -d mlx5_0 -g 3)
vfab_integration_test(int_rc_pingpong_events 120
  ${_vfab_it}/pingpong.sh 18532 ibv_rc_pingpong -d mlx5_0 -g 3 -e)
vfab_integration_test(int_ud_pingpong 120
  ${_vfab_it}/pingpong.sh 18533 ibv_ud_pingpong -d mlx5_0 -g 3)
vfab_integration_test(int_srq_pingpong 120
  ${_vfab_it}/pingpong.sh 18534 ibv_srq_pingpong -d mlx5_0 -g 3)
vfab_integration_test(int_uc_pingpong 120
  ${_vfab_it}/pingpong.sh 18535 ibv_uc_pingpong -d mlx5_0 -g 3)
# XRC: an XRC domain, SRQ and XRC_SEND/XRC_RECV QPs; polling and with CQ events.
vfab_integration_test(int_xsrq_pingpong 120 ${_vfab_it}/xsrq.sh 18536 -n 200)
vfab_integration_test(int_xsrq_pingpong_events 120 ${_vfab_it}/xsrq.sh 18537 -n 200 -e)
# UD completions as middleware reads them (wc.sl = RoCE L3 type, the GRH area).
vfab_integration_test(int_ud_grh 180 ${_vfab_it}/ud_grh.sh)
vfab_integration_test(int_trace 180 ${_vfab_it}/trace.sh)
vfab_integration_test(int_report_html 120 ${_vfab_it}/report_html.sh)

# perftest, short runs (-n iterations).
set(_vfab_port 18521)
foreach(_tool write_bw write_lat read_bw read_lat send_bw send_lat atomic_bw atomic_lat)
  vfab_integration_test(int_ib_${_tool} 240
    ${_vfab_it}/perftest.sh ${_vfab_port} ib_${_tool} -n 2000)
  math(EXPR _vfab_port "${_vfab_port} + 1")
endforeach()
# Port counters exact at every read (vfabd's counters file system): TCP ports 18731-18736.
vfab_integration_test(int_counters_exact 300 ${_vfab_it}/counters_exact.sh 18731)
set_tests_properties(int_counters_exact PROPERTIES SKIP_RETURN_CODE 77)
# The unreliable connection (UC): the tools that have it.
set(_vfab_port 18541)
foreach(_tool write_bw write_lat send_bw send_lat)
  vfab_integration_test(int_ib_${_tool}_uc 240
    ${_vfab_it}/perftest.sh ${_vfab_port} ib_${_tool} -c UC -n 2000)
  math(EXPR _vfab_port "${_vfab_port} + 1")
endforeach()

# XRC: the tools that have it.
set(_vfab_port 18576)
foreach(_tool write_bw read_lat send_bw send_lat atomic_bw)
  vfab_integration_test(int_ib_${_tool}_xrc 240
    ${_vfab_it}/perftest.sh ${_vfab_port} ib_${_tool} -c XRC -n 2000)
  math(EXPR _vfab_port "${_vfab_port} + 1")
endforeach()

# The provider's own check programs (tests/integration/provider.cmake).
vfab_integration_test(int_abi_layout_probe 120 ${_vfab_it}/node_checks.sh abi_layout_probe mlx5_0)
vfab_integration_test(int_verbs_errors 600 ${_vfab_it}/node_checks.sh verbs_errors -d mlx5_0 -g 3)

vfab_integration_test(int_cleanup 240 ${_vfab_it}/cleanup.sh)

# Last: the longest, and the one whose failures are triaged by hand. It waits
# for every other integration test, those of other fragments included (hence
# the deferred call, made once all of tests/ has been read).
vfab_integration_test(int_pyverbs 1200 ${_vfab_it}/pyverbs.sh)
function(_vfab_pyverbs_runs_last)
  get_property(_all DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR} PROPERTY TESTS)
  set(_before "")
  foreach(_t IN LISTS _all)
    get_test_property(${_t} LABELS _labels)
    if("integration" IN_LIST _labels AND NOT _t MATCHES "^(int_pyverbs|fabric_down)$")
      list(APPEND _before ${_t})
    endif()
  endforeach()
  set_tests_properties(int_pyverbs PROPERTIES DEPENDS "${_before}")
endfunction()
if(CMAKE_VERSION VERSION_GREATER_EQUAL 3.19)
  cmake_language(DEFER CALL _vfab_pyverbs_runs_last)
else()
  list(REMOVE_ITEM _vfab_it_tests int_pyverbs)
  set_tests_properties(int_pyverbs PROPERTIES DEPENDS "${_vfab_it_tests}")
endif()
