# The shaping benchmark (issue 3 §3): configured link model vs what perftest
# and lossy_verify measure between nodes, in one run. It brings up its own
# fabrics (tshape*), takes about a minute and needs the whole machine, so it
# has a label of its own: `ctest -L bench_shaping` (quickstart test runs it
# last). A check that fails is measured twice more before it counts: the
# host is shared, and a neighbour can take the cores a measurement needs.
add_executable(lossy_verify ${CMAKE_CURRENT_LIST_DIR}/lossy_verify.c
                            ${CMAKE_CURRENT_LIST_DIR}/rc_endpoint.c
                            ${CMAKE_CURRENT_LIST_DIR}/bench_util.c)
target_link_libraries(lossy_verify PRIVATE ${IBVERBS_LIB})

add_test(NAME bench_shaping
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/shaping.sh --build ${CMAKE_BINARY_DIR}
                 --json ${CMAKE_BINARY_DIR}/bench_shaping.json --retries 2)
set_tests_properties(bench_shaping PROPERTIES LABELS bench_shaping RUN_SERIAL TRUE TIMEOUT 900)
