#!/usr/bin/env bash
# raw_packet.sh PORT: raw packet QPs (issue 21) on the wire of the nodes'
# netdevs, judged by the kernel's own network stack and by perftest:
#  - frames a raw packet QP in node0 sends with IBV_SEND_IP_CSUM reach a
#    UDP socket in node1 (the HCA filled in the checksums the kernel checks);
#  - datagrams node0's kernel sends to node1 reach a raw packet QP whose flow
#    takes UDP to that port, with IBV_WC_IP_CSUM_OK; a datagram to another
#    port does not;
#  - RSS: an RSS QP spreads datagrams from 32 source ports over four WQs,
#    each where Toeplitz over their addresses and ports (computed by the
#    test) puts it;
#  - without CAP_NET_RAW a raw packet QP is EPERM, a flow on a UD QP EOPNOTSUPP;
#  - raw_ethernet_lat and raw_ethernet_bw between the nodes' MACs.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

port=$1
py=/usr/bin/python3
helper=$(cd "$(dirname "$0")" && pwd)/raw_packet.py
mac_of() { vx "$1" cat "/sys/class/net/$(vx "$1" cat /sys/class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/0)/address"; }
mac0=$(mac_of node0) mac1=$(mac_of node1)

# wait_line LOG PATTERN SECS: until LOG has a line matching PATTERN.
wait_line()
{
	for _ in $(seq $(($3 * 10))); do
		grep -q "$2" "$1" && return 0
		sleep 0.1
	done
	return 1
}

note "raw packet QP in node0 -> UDP socket in node1 (port $port)"
log=$VFAB_TMP/udp_recv.log
start_server node1 "$log" "$py" -c "
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(('$NODE1_IP', $port))
s.settimeout(20)
print('ready', flush=True)
for i in range(5):
    data, peer = s.recvfrom(2048)
    assert data == b'vfab raw frame %d' % i, data
    assert peer[0] == '$NODE0_IP', peer
print('kernel got 5', flush=True)"
wait_line "$log" ready 20 || { show "$log"; fail "UDP receiver did not start"; }
vx node0 "$py" "$helper" send "$mac1" "$NODE1_IP" "$port" 5 || fail "raw sends failed"
wait_pid "$SERVER_PID" 20 || { show "$log"; fail "node1's kernel did not take the raw frames"; }
show "$log"

note "node0's kernel -> raw packet QP in node1 (flow: UDP to port $((port + 1)))"
log=$VFAB_TMP/raw_recv.log
start_server node1 "$log" "$py" "$helper" recv $((port + 1)) 5 20
wait_line "$log" ready 20 || { show "$log"; fail "raw receiver did not start"; }
vx node0 "$py" -c "
import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.sendto(b'not for the flow', ('$NODE1_IP', $((port + 2))))
for i in range(5):
    s.sendto(b'kernel datagram %d' % i, ('$NODE1_IP', $((port + 1))))
    time.sleep(0.01)"
wait_pid "$SERVER_PID" 30 || { show "$log"; fail "the raw packet QP did not get the datagrams"; }
show "$log"
grep -q "got 5 csum_ok 5 " "$log" || fail "expected 5 frames, all with IBV_WC_IP_CSUM_OK"

note "RSS: node0's datagrams from 32 source ports spread over 4 WQs of an RSS QP in node1"
log=$VFAB_TMP/rss_recv.log
start_server node1 "$log" "$py" "$helper" rss $((port + 3)) 32 20
wait_line "$log" ready 20 || { show "$log"; fail "RSS receiver did not start"; }
vx node0 "$py" -c "
import socket, time
for i in range(32):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(b'spread %d' % i, ('$NODE1_IP', $((port + 3))))
    s.close()
    time.sleep(0.005)"
wait_pid "$SERVER_PID" 30 || { show "$log"; fail "RSS: frames missing or in the wrong WQ"; }
show "$log"

note "without CAP_NET_RAW"
vx node0 setpriv --reuid=65534 --regid=65534 --clear-groups "$py" "$helper" refused ||
	fail "a raw packet QP or a UD flow was not refused as the kernel refuses it"

# perf PROG ARGS...: server in node1, client in node0; the server's log in $srv.
perf()
{
	local prog=$1
	shift
	srv=$VFAB_TMP/$prog.server.log cli=$VFAB_TMP/$prog.client.log
	start_server node1 "$srv" timeout 60 stdbuf -oL "$prog" -d mlx5_0 -i 1 --server \
		-B "$mac1" -E "$mac0" -F "$@"
	wait_line "$srv" "#bytes" 30 || { show "$srv"; fail "$prog server did not start"; }
	timeout 60 "$VFAB" --fabric "$VFAB_FABRIC" exec node0 -- "$prog" -d mlx5_0 -i 1 \
		--client -B "$mac0" -E "$mac1" -F "$@" >"$cli" 2>&1 || { show "$srv" "$cli"; fail "$prog client failed"; }
	wait_pid "$SERVER_PID" 60 || { show "$srv" "$cli"; fail "$prog server failed"; }
	show "$cli" "$srv"
}

note "raw_ethernet_lat"
perf raw_ethernet_lat -n 2000
typical=$(awk '$1 == 64 && $2 == 2000 {print $5}' "$cli")
[ -n "$typical" ] || fail "raw_ethernet_lat printed no result"
note "raw_ethernet_lat 64 B: typical $typical us (one way)"

note "raw_ethernet_bw"
perf raw_ethernet_bw -D 2
sent=$(awk '$1 == 1518 {print $2}' "$cli") got=$(awk '$1 == 1518 {print $2}' "$srv")
[ -n "$sent" ] && [ -n "$got" ] && [ "$got" -gt 0 ] || fail "raw_ethernet_bw moved no frames"
note "raw_ethernet_bw 1518 B: $sent frames sent in 2 s, $got received (a receiver slower than its sender drops, as a NIC's does)"
