# qperf on the shared test fabric (tests/integration/qperf.sh): its RC tests
# over the RDMA CM; UC and UD, which qperf addresses by LID, refused as on a
# RoCE port. Needs qperf (quickstart installs it).
find_program(VFAB_QPERF qperf)
if(VFAB_QPERF)
  vfab_integration_test(int_qperf 180 ${CMAKE_CURRENT_LIST_DIR}/qperf.sh 18995)
endif()
