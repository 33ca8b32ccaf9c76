# A fabric without root (issue 26): a test user, created and removed by the
# test, brings up a fabric beside root's of the same name; traffic, shaping,
# and a down that leaves nothing.
vfab_integration_test(int_rootless 240 ${_vfab_it}/rootless.sh 18970)
# Exit 77 = skipped: the host allows no unprivileged user namespaces (a build
# other users cannot reach is installed into the test's temp dir first).
set_tests_properties(int_rootless PROPERTIES SKIP_RETURN_CODE 77)
