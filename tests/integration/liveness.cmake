# Liveness and the control socket under hostile clients (issue 10).
vfab_integration_test(int_liveness_flood 180 ${_vfab_it}/liveness.sh 18601)
vfab_integration_test(int_pid_reuse 120 ${_vfab_it}/pid_reuse.sh)
set_tests_properties(int_pid_reuse PROPERTIES SKIP_RETURN_CODE 77)
