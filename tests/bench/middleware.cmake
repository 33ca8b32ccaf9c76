# Benchmark of the RDMA middleware (ucx_perftest ucp_put_bw, Open MPI over
# UCX) next to ib_write_bw/ib_write_lat and the raw ceiling: `ctest -L
# '^bench$'` runs it beside bench_default, on a fabric of its own
# ("tbenchmw"). Needs the middleware judges' programs
# (tests/integration/middleware.cmake).
if(TARGET mpi_check)
  add_test(NAME bench_middleware
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/middleware.sh --fabric tbenchmw
                   --build ${CMAKE_BINARY_DIR}
                   --json ${CMAKE_BINARY_DIR}/bench_middleware.json)
  set_tests_properties(bench_middleware PROPERTIES LABELS bench RUN_SERIAL TRUE TIMEOUT 600)
endif()
