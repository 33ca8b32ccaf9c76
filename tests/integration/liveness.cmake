# Liveness and the control socket under hostile clients (issue 10).
vfab_integration_test(int_liveness_flood 180 ${_vfab_it}/liveness.sh 18601)
vfab_integration_test(int_pid_reuse 120 ${_vfab_it}/pid_reuse.sh)
set_tests_properties(int_pid_reuse PROPERTIES SKIP_RETURN_CODE 77)
# 200 runs of ibv_dereg_mr racing 1 MiB WRITEs, then SENDs, bounded by the timeout.
vfab_integration_test(int_dereg_race 120 ${_vfab_it}/dereg_race.sh 200)
# Non-root users (two test users, created and removed by the test).
vfab_integration_test(int_nonroot 240 ${_vfab_it}/nonroot.sh 18611)
# Exit 77 = skipped: the build is out of reach of other users (under /root).
set_tests_properties(int_nonroot PROPERTIES SKIP_RETURN_CODE 77)
# A process in a PID namespace of its own (with or without its own /proc)
# reaches and is reached by peers outside it.
vfab_integration_test(int_pidns 240 ${_vfab_it}/pidns.sh 18615)
