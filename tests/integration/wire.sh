#!/usr/bin/env bash
# One wire (issue 19): the IP side of node0's and node1's eth0 follows the
# links of their mlx5_0 ports. TCP (iperf3) at 1, 2 and 10 Gb/s within
# +-10 %; 1 % loss shows as TCP retransmissions; ping's RTT grows by twice
# the one-way latency (netem, or vfabd's delay line); `vfab link down` takes the netdev's carrier (ping fails, port
# DOWN) and `up` brings both back; RDMA and TCP saturating one 10 Gb/s link
# together share it (sum <= 11 Gb/s, each >= 3.5 Gb/s).
# Everything is shaped back to the default (unshaped) fabric on exit.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

port=$1      # iperf3
rdma_port=$2 # ib_send_bw
ports=(node0/mlx5_0 node1/mlx5_0)

vf()
{
	"$VFAB" --fabric "$VFAB_FABRIC" "$@"
}

restore()
{
	for p in "${ports[@]}"; do
		vf link "$p" up >/dev/null 2>&1 || true
		vf shape "$p" bw=0 lat=0 loss=0 >/dev/null 2>&1 || true
	done
	vfab_cleanup
}
trap restore EXIT

shape_both()
{
	for p in "${ports[@]}"; do
		vf shape "$p" "$@" >/dev/null || fail "vfab shape $p $*"
	done
}

# iperf OUT SECONDS: node0 -> node1, JSON in OUT (a fresh one-off server).
iperf()
{
	local out=$1 secs=$2
	start_server node1 "$VFAB_TMP/iperf-server.log" iperf3 -s -1 -p "$port"
	wait_listen node1 "$port" 20 || { show "$VFAB_TMP/iperf-server.log"; fail "iperf3 server"; }
	vx node0 iperf3 -c "$NODE1_IP" -p "$port" -t "$secs" -J >"$out" 2>&1 ||
		{ show "$out"; fail "iperf3 client"; }
	wait_pid "$SERVER_PID" 10 || true
}

calc()
{
	awk "BEGIN { printf \"%.4f\n\", $1 }"
}

# json_field FILE EXPR: a value of iperf3's JSON (python expression on j).
json_field()
{
	python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($2)" "$1"
}

# The netdev's sysfs speed follows the port's rate (Mb/s).
# 1 and 2 Gb/s are far below what the host carries: +-10 %. At 10 Gb/s the
# host's 2 cores are near their TCP limit, so this test asks only that the
# rate is held (above 2, below 11); the shaping benchmark judges +-10 %.
for gbps in 1 2 10; do
	shape_both "bw=$gbps"
	iperf "$VFAB_TMP/rate$gbps.json" 3
	got=$(json_field "$VFAB_TMP/rate$gbps.json" "j['end']['sum_received']['bits_per_second']/1e9")
	note "shaped to $gbps Gb/s: TCP $got Gb/s"
	speed=$(vx node0 cat /sys/class/net/eth0/speed)
	[ "$speed" = "$((gbps * 1000))" ] || fail "/sys/class/net/eth0/speed is $speed at $gbps Gb/s"
	lo=$(calc "$gbps * 0.9")
	[ "$gbps" = 10 ] && lo=2
	num_between "$got" "$lo" "$(calc "$gbps * 1.1")" ||
		fail "TCP at $got Gb/s on a $gbps Gb/s link (want $lo .. $(calc "$gbps * 1.1"))"
done

shape_both bw=2 loss=0.01
iperf "$VFAB_TMP/loss.json" 3
retr=$(json_field "$VFAB_TMP/loss.json" "j['end']['sum_sent']['retransmits']")
note "1 % loss: $retr TCP retransmissions"
num_between "$retr" 0 inf || fail "1 % loss on the link, but TCP retransmitted nothing"
shape_both loss=0

# Latency: netem where the kernel has it, else vfabd's delay line. The
# judge is the added round trip: the shaped median less the unshaped one
# (this VM's own RTT, 20-150 us, is not the link's). A miss is measured once
# more before it fails (the host is shared, as for the sharing check below).
rtt_added()
{
	local base rtt
	shape_both lat=0
	base=$(ping_median_us node0 "$NODE1_IP")
	shape_both lat=200 # 200 us on each of the two hops: 400 us one way, 800 us RTT
	rtt=$(ping_median_us node0 "$NODE1_IP")
	note "latency 400 us one way: ping RTT median $rtt us, unshaped $base us"
	num_between "$((rtt - base))" "$((800 - 50 - 80))" "$((800 + 50 + 80))"
}
rtt_added || rtt_added || fail "ping RTT on a path of 400 us one way: see the medians above"
shape_both lat=0

vf link node1/mlx5_0 down >/dev/null || fail "vfab link down"
[ "$(vx node1 cat /sys/class/net/eth0/carrier 2>/dev/null || echo 0)" = 0 ] ||
	fail "node1's eth0 kept its carrier with its port down"
vx node0 ping -c 2 -W 1 -q "$NODE1_IP" >/dev/null 2>&1 && fail "ping answered across a port that is down"
vx node1 ibv_devinfo -d mlx5_0 | grep -q PORT_DOWN || fail "ibv_devinfo does not show the port down"
vf link node1/mlx5_0 up >/dev/null || fail "vfab link up"
for _ in $(seq 50); do
	[ "$(vx node1 cat /sys/class/net/eth0/carrier)" = 1 ] && break
	sleep 0.1
done
vx node0 ping -c 2 -W 2 -q "$NODE1_IP" >/dev/null || fail "ping does not answer after link up"
vx node1 ibv_devinfo -d mlx5_0 | grep -q PORT_ACTIVE || fail "the port is not ACTIVE after link up"
note "link down: carrier 0, ping fails, PORT_DOWN; up: both back"

# Converged: one 10 Gb/s port, TCP (iperf3, 8 s, 0.5 s intervals) running
# all along a fixed RDMA transfer (ib_send_bw, 2000 x 1 MiB, about 3.5 s at
# half the port); the TCP rate is taken over the intervals that lie inside
# RDMA's transfer, RDMA's is perftest's own over that transfer. RDMA waits
# for its completions on a channel (-e): the 2-core host is shared by four
# processes, and a busy-polling pair takes CPU time from TCP that a
# ConnectX's offload would not; the wire's sharing is what is judged. A
# shortfall is measured once more.
shared_once()
{
	local try=$1
	srv=$VFAB_TMP/rdma-server$try.log cli=$VFAB_TMP/rdma-client$try.log
	start_server node1 "$srv" ib_send_bw -d mlx5_0 -x 3 -F -e -s "$rdma_size" -n "$rdma_msgs" \
		-p "$rdma_port"
	rdma_srv=$SERVER_PID
	wait_listen node1 "$rdma_port" 20 || { show "$srv"; fail "ib_send_bw server"; }
	start_server node1 "$VFAB_TMP/iperf-server.log" iperf3 -s -1 -p "$port"
	wait_listen node1 "$port" 20 || fail "iperf3 server"
	t_ip=$(date +%s.%N)
	vx node0 iperf3 -c "$NODE1_IP" -p "$port" -t 8 -i 0.5 -J >"$VFAB_TMP/both$try.json" 2>&1 &
	ip_cli=$!
	VFAB_SERVER_PIDS+=("$ip_cli")
	sleep 1.5
	vx node0 ib_send_bw -d mlx5_0 -x 3 -F -e -s "$rdma_size" -n "$rdma_msgs" -p "$rdma_port" \
		"$NODE1_IP" >"$cli" 2>&1 || { show "$cli" "$srv"; fail "ib_send_bw client beside TCP"; }
	t_b=$(date +%s.%N)
	wait_pid "$ip_cli" 30 || { show "$VFAB_TMP/both$try.json"; fail "iperf3 client beside RDMA"; }
	wait_pid "$rdma_srv" 30 || true
	rdma_mb=$(perftest_bw "$cli" "$srv")
	rdma=$(calc "${rdma_mb:-0} * 8 * 1048576 / 1e9")
	num_between "$rdma" 0.1 inf || { show "$cli"; fail "no ib_send_bw rate beside TCP"; }
	# RDMA's transfer: its bytes at its rate, up to the client's exit. Its
	# start-up (registration, the TCP handshake) is no part of it: the
	# slower a host starts processes, the more of TCP's solo time a window
	# from the client's launch would count.
	t_a=$(calc "$t_b - $rdma_msgs * $rdma_size * 8 / ($rdma * 1e9)")
	tcp=$(python3 - "$VFAB_TMP/both$try.json" "$t_ip" "$t_a" "$t_b" <<-'PY'
	import json, sys
	j = json.load(open(sys.argv[1]))
	t_ip, a, b = (float(x) for x in sys.argv[2:5])
	bits = secs = 0.0
	for iv in j["intervals"]:
	    s = iv["sum"]
	    if t_ip + s["start"] >= a and t_ip + s["end"] <= b:
	        bits += s["bytes"] * 8
	        secs += s["seconds"]
	print("%.4f" % (bits / secs / 1e9) if secs else "none")
	PY
	)
	sum=$(calc "${tcp/none/0} + $rdma")
	note "10 Gb/s port shared: RDMA $rdma Gb/s + TCP $tcp Gb/s = $sum Gb/s"
	num_between "${tcp/none/x}" 0 inf || { echo "no TCP interval inside RDMA's window"; return 1; }
	num_between "$sum" 0 11 || { echo "RDMA and TCP together: $sum Gb/s on a 10 Gb/s port"; return 1; }
	num_between "$rdma" 3.5 inf || { echo "RDMA got $rdma Gb/s beside TCP (want >= 35 %)"; return 1; }
	num_between "$tcp" 3.5 inf || { echo "TCP got $tcp Gb/s beside RDMA (want >= 35 %)"; return 1; }
}

rdma_size=1048576 rdma_msgs=2000
shape_both bw=10
shared_once 1 || shared_once 2 || fail "RDMA and TCP do not share the 10 Gb/s port (twice)"
