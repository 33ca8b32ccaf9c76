# UD multicast between the nodes of the shared test fabric
# (tests/integration/mcast.sh): the verbs (attach/detach errors, delivery,
# a port down) and librdmacm's mckey over an IPv4 and an IPv6 group.
set(_vfab_mcast ${CMAKE_CURRENT_LIST_DIR}/mcast.sh)
vfab_integration_test(int_mcast_verbs 240 ${_vfab_mcast} verbs)
vfab_integration_test(int_mcast_mckey4 120 ${_vfab_mcast} mckey4)
vfab_integration_test(int_mcast_mckey6 120 ${_vfab_mcast} mckey6)
