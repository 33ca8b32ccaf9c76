# Benchmark: raw ceilings (process_vm_writev, TCP over the fabric's veths) and
# the driver script that compares vfab with them. Not part of the default test
# labels: run it with `ctest -L bench` (it brings up its own fabric, "tbench").
foreach(_prog pvm_ceiling tcp_stream)
  add_executable(${_prog} ${CMAKE_CURRENT_LIST_DIR}/${_prog}.c
                          ${CMAKE_CURRENT_LIST_DIR}/bench_util.c)
endforeach()
# --threads: the ranges of the provider's copy engines (provider/vfab_split.c).
target_link_libraries(pvm_ceiling PRIVATE vfab_provider_checks pthread)
# ibv_reg_mr/ibv_dereg_mr cost next to mlock of the same pages.
add_executable(reg_cost ${CMAKE_CURRENT_LIST_DIR}/reg_cost.c)
target_link_libraries(reg_cost PRIVATE ${IBVERBS_LIB})

add_test(NAME bench_default
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/bench.sh --fabric tbench
                 --build ${CMAKE_BINARY_DIR}
                 --json ${CMAKE_BINARY_DIR}/bench_default.json)
set_tests_properties(bench_default PROPERTIES LABELS bench RUN_SERIAL TRUE TIMEOUT 600)

# RDMA between machines (two namespaces for two machines) against RDMA within
# one and against raw UDP over the same path: tests/bench/multihost.sh.
add_test(NAME bench_multihost
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/multihost.sh --fabric tbmh
                 --build ${CMAKE_BINARY_DIR}
                 --json ${CMAKE_BINARY_DIR}/bench_multihost.json)
set_tests_properties(bench_multihost PROPERTIES LABELS bench RUN_SERIAL TRUE TIMEOUT 600)
