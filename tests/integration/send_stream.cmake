# Streams of SENDs posted one by one, held back and delivered in chains by
# the provider (issue 22), checked message by message for RC and UD
# (tests/integration/send_stream.sh).
vfab_integration_test(int_send_stream 240 ${CMAKE_CURRENT_LIST_DIR}/send_stream.sh 18980)
