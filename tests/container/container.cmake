# The CI image (container/Containerfile) built and run with podman
# (tests/container/build_and_run.sh, docs/CONTAINER.md). Label "container"
# only: ./quickstart test and .ci/run select unit, integration, bench,
# bench_shaping and fuzz, never this one (minutes, podman, debootstrap or a
# debian:12 image). Run it with `ctest -L container`; 77 = skipped.
add_test(NAME ctr_build_and_run COMMAND ${CMAKE_CURRENT_LIST_DIR}/build_and_run.sh)
set_tests_properties(ctr_build_and_run PROPERTIES
  LABELS container RUN_SERIAL TRUE TIMEOUT 1800 SKIP_RETURN_CODE 77
  ENVIRONMENT "VFAB_FABRIC=${VFAB_IT_FABRIC}c")
