# One wire: the IP side of the HCA ports' netdevs follows their links
# (TCP rate, loss, latency where netem exists, carrier, RDMA + TCP sharing).
vfab_integration_test(int_wire 300 ${_vfab_it}/wire.sh 18681 18682)
