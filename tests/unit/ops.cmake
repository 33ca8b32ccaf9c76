# Runtime control, faults and observability of vfabd (LINK, SHAPE, FAULT,
# live counters, REPORT against docs/REPORT_SCHEMA.md), on real daemons with
# private run dirs.
vfab_unit_test(test_vfabd_ops SOURCES unit/test_vfabd_ops.c LIBS vfab_fabric)
add_dependencies(test_vfabd_ops vfabd)
set_tests_properties(test_vfabd_ops PROPERTIES ENVIRONMENT "VFABD=$<TARGET_FILE:vfabd>")

vfab_unit_test(test_vfabd_report SOURCES unit/test_vfabd_report.c LIBS vfab_fabric vfab_json)
target_compile_definitions(test_vfabd_report PRIVATE
  VFAB_REPORT_SCHEMA="${PROJECT_SOURCE_DIR}/docs/REPORT_SCHEMA.md")
add_dependencies(test_vfabd_report vfabd)
set_tests_properties(test_vfabd_report PROPERTIES ENVIRONMENT "VFABD=$<TARGET_FILE:vfabd>")

# HISTORY: the ring of the links' counters (daemon/vfabd_history.c driven
# directly: no samples, wrap-around) and a live vfabd's answer, each against
# the history tables of docs/REPORT_SCHEMA.md.
vfab_unit_test(test_vfabd_history SOURCES unit/test_vfabd_history.c LIBS vfabd_core)
target_compile_definitions(test_vfabd_history PRIVATE
  VFAB_REPORT_SCHEMA="${PROJECT_SOURCE_DIR}/docs/REPORT_SCHEMA.md")
add_dependencies(test_vfabd_history vfabd)
set_tests_properties(test_vfabd_history PROPERTIES ENVIRONMENT "VFABD=$<TARGET_FILE:vfabd>")

# vfabd against a region a hostile user rewrote (names, run dir, pids) and
# links planted below the run dir: issue 27 High #1.
vfab_unit_test(test_vfabd_hostile SOURCES unit/test_vfabd_hostile.c LIBS vfab_fabric)
add_dependencies(test_vfabd_hostile vfabd)
set_tests_properties(test_vfabd_hostile PROPERTIES ENVIRONMENT "VFABD=$<TARGET_FILE:vfabd>")

# vfabd's counters file system (a FUSE mount computing each value when read):
# exact at every read, read-only, vfabd's own tree; skipped where it cannot mount.
vfab_unit_test(test_vfabd_countersfs SOURCES unit/test_vfabd_countersfs.c
  LIBS vfab_netns vfab_fabric)
add_dependencies(test_vfabd_countersfs vfabd)
set_tests_properties(test_vfabd_countersfs PROPERTIES ENVIRONMENT "VFABD=$<TARGET_FILE:vfabd>")
