# The GPU check's CPU dry run (tests/gpu/dry_run.sh): the carried .debs in a
# prefix, the preflight, `vfab up --libdir`, the launch up to the first CUDA
# call; fabric "gdry" of its own.
add_test(NAME int_gpu_dry_run COMMAND ${PROJECT_SOURCE_DIR}/tests/gpu/dry_run.sh --fabric gdry)
set_tests_properties(int_gpu_dry_run PROPERTIES
  LABELS integration RUN_SERIAL TRUE TIMEOUT 300
  ENVIRONMENT "VFAB_BUILD_DIR=${CMAKE_BINARY_DIR}")
