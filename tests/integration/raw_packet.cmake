# Raw packet QPs and flow steering on the nodes' netdevs
# (tests/integration/raw_packet.sh): frames to and from the kernel's stack,
# checksum offloads, RSS over work queues, refusals, raw_ethernet_lat and
# raw_ethernet_bw.
vfab_integration_test(int_raw_packet 240 ${CMAKE_CURRENT_LIST_DIR}/raw_packet.sh 18990)
