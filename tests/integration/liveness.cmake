# Liveness and the control socket under hostile clients (issue 10).
vfab_integration_test(int_liveness_flood 180 ${_vfab_it}/liveness.sh 18601)
