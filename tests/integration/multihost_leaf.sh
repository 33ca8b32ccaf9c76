#!/usr/bin/env bash
# A leaf stretched over two machines (configs/two-hosts-stretched.yaml,
# README "Several hosts"): a0 on hosta and b0 on hostb share leaf0, a1 and b1
# each have a leaf of their own machine. The machines are two network
# namespaces joined by a veth (machines_lib.sh). Shows:
#  - `vfab up` refuses an uplink that cannot carry leaf0's frames in a tunnel
#    (MTU 9000 for a 9000 leaf), and names the MTU it needs;
#  - with 9050, each fabric's leaf0 bridge has a VXLAN port (VNI 1) whose
#    tunnels go to the other machine's uplink, and both routers are leaf0's
#    gateway with one MAC; the other machine's leaf0 node is a host route
#    via its uplink;
#  - a0 and b0 are one L2 segment (TTL 64, each other's MAC in the
#    neighbour table, IPv4 and IPv6, 8900-byte datagrams whole), while a1
#    and b1 reach leaf0's nodes on the other machine through both routers
#    (TTL 62);
#  - RDMA within the stretched leaf: ibv_rc_pingpong with data checked, its
#    frames in the tunnel clean RoCE v2 (tshark, ICRC) and on the machines'
#    wire VXLAN with VNI 1 around RoCE; perftest WRITE and SEND; the RDMA CM
#    (rping -V) between a0 and b0;
#  - vfabd gives a user who is neither root nor its own 1024 connections of
#    each socket (control and wire): the 1025th is refused, and another
#    user still connects while the first holds its share;
#  - with latencies configured, each machine's delay line counts a0 -> b0 as
#    one leaf (the two ports' links) and a1 -> b0 across the spine;
#  - `vfab down` on each leaves the machines as they were.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

F=${VFAB_FABRIC_MULTIHOST:-tml}
. "$(dirname "$0")/machines_lib.sh"
CFG=$VFAB_REPO/configs/two-hosts-stretched.yaml

qu1=vfabq1 qu2=vfabq2
cleanup()
{
	machines_del
	userdel "$qu1" 2>/dev/null || true
	userdel "$qu2" 2>/dev/null || true
	vfab_cleanup
}
trap cleanup EXIT
for u in "$qu1" "$qu2"; do
	userdel "$u" 2>/dev/null || true
	useradd --system --no-create-home --shell /usr/sbin/nologin "$u" || fail "useradd $u"
done
asq1=(setpriv --reuid="$(id -u "$qu1")" --regid="$(id -g "$qu1")" --clear-groups)
asq2=(setpriv --reuid="$(id -u "$qu2")" --regid="$(id -g "$qu2")" --clear-groups)

note "two machines, eth1 <-> eth1 at MTU 9000: too small for leaf0 in a tunnel"
machines_add
before_a=$(machine "$HA")
if va up --host hosta "$CFG" >"$VFAB_TMP/up0" 2>&1; then
	fail "vfab up accepted an uplink of MTU 9000 for a stretched leaf of MTU 9000"
fi
grep -q 'leaf0 spans hosts over the uplink: its MTU 9000 needs 9050 on eth1 (it has 9000)' \
	"$VFAB_TMP/up0" || { show "$VFAB_TMP/up0"; fail "vfab up does not say what MTU the uplink needs"; }
if ls /run/netns | grep "^vfab-$F-" >/dev/null; then fail "the refused up left namespaces"; fi

note "eth1 at 9050: vfab up --host hosta / hostb"
ip -n "$HA" link set eth1 mtu 9050
ip -n "$HB" link set eth1 mtu 9050
before_a=$(machine "$HA")
machines_up "$CFG"
show "$VFAB_TMP/upa"
grep -q '^  leaf0 spans hosts: VXLAN 1 ' "$VFAB_TMP/upa" || fail "vfab up does not say that leaf0 spans hosts"

note "leaf0's tunnel, its anycast gateway, and host routes to the other machine's leaf0 node"
fa=vfab-$F-a-fab fb=vfab-$F-b-fab
ip -n "$fa" -d link show vfvx0 | grep 'vxlan id 1 local 198.19.255.1 .*dstport 4789' >/dev/null ||
	{ ip -n "$fa" -d link show vfvx0; fail "hosta's leaf0 has no VXLAN 1 from its uplink"; }
ip -n "$fa" link show vfvx0 | grep 'master vfbr0' >/dev/null || fail "hosta's VXLAN is no port of leaf0's bridge"
bridge -n "$fa" fdb show dev vfvx0 | grep '^00:00:00:00:00:00 dst 198.19.255.2 ' >/dev/null ||
	{ bridge -n "$fa" fdb show dev vfvx0; fail "hosta floods leaf0 to no tunnel to hostb"; }
gwa=$(ip -n "$fa" -br link show vfbr0 | awk '{ print $3 }')
gwb=$(ip -n "$fb" -br link show vfbr0 | awk '{ print $3 }')
[ "$gwa" = 02:76:66:00:01:ff ] && [ "$gwb" = "$gwa" ] ||
	fail "leaf0's gateway MACs: hosta $gwa, hostb $gwb (want 02:76:66:00:01:ff on both)"
b0ip=$(vb exec b0 -- ip -4 -o addr show eth0 | awk '{ sub("/.*", "", $4); print $4 }')
ip -n "$fa" route | grep "^$b0ip via 198.19.255.2 dev uplink" >/dev/null ||
	{ ip -n "$fa" route; fail "hosta's router has no host route to b0 ($b0ip) via hostb"; }
ip -n "$fa" -6 route | grep '^fd00:198:18::2 via fd00:199::2 dev uplink' >/dev/null ||
	{ ip -n "$fa" -6 route; fail "hosta's router has no IPv6 host route to b0"; }

note "a0 and b0 are one segment; a1 and b1 reach it through both routers"
ttl() { grep -o 'ttl=[0-9]*' "$1" | head -1; }
va exec a0 -- ping -c 3 -i 0.2 -W 2 "$b0ip" >"$VFAB_TMP/p1" || { show "$VFAB_TMP/p1"; fail "a0 cannot ping b0"; }
[ "$(ttl "$VFAB_TMP/p1")" = ttl=64 ] || { show "$VFAB_TMP/p1"; fail "a0 -> b0 is not one segment"; }
vb exec b0 -- ping -6 -c 2 -i 0.2 -W 2 fd00:198:18::1 >"$VFAB_TMP/p2" ||
	{ show "$VFAB_TMP/p2"; fail "b0 cannot ping a0 over IPv6"; }
[ "$(ttl "$VFAB_TMP/p2")" = ttl=64 ] || { show "$VFAB_TMP/p2"; fail "b0 -> a0 (IPv6) is not one segment"; }
va exec a0 -- ping -c 2 -i 0.2 -W 2 -M do -s 8900 "$b0ip" >"$VFAB_TMP/p3" ||
	{ show "$VFAB_TMP/p3"; fail "8900-byte datagrams do not cross the tunnel whole"; }
b0mac=$(vb exec b0 -- cat /sys/class/net/eth0/address)
va exec a0 -- ip neigh show dev eth0 | grep "^$b0ip lladdr $b0mac " >/dev/null ||
	{ va exec a0 -- ip neigh; fail "a0 does not hold b0's own MAC"; }
for pair in "a a1 b0" "b b1 a0" "a a0 b1" "b b0 a1"; do
	set -- $pair
	for fam in -4 -6; do
		"v$1" exec "$2" -- ping "$fam" -c 2 -i 0.2 -W 2 "$3" >"$VFAB_TMP/p4" ||
			{ show "$VFAB_TMP/p4"; fail "$2 cannot ping $3 ($fam)"; }
		[ "$(ttl "$VFAB_TMP/p4")" = ttl=62 ] ||
			{ show "$VFAB_TMP/p4"; fail "$2 -> $3 ($fam) does not pass two routers"; }
	done
done
# Each node's gateway is its own machine's router: the anycast MAC, never a
# frame of the other machine's router through the tunnel.
va exec a0 -- ip neigh show 198.18.0.254 | grep "lladdr $gwa " >/dev/null ||
	{ va exec a0 -- ip neigh; fail "a0's gateway is not leaf0's anycast MAC"; }
bridge -n "$fa" fdb show dev vfvx0 | grep -i "^$gwa" >/dev/null &&
	fail "hosta's bridge learned its own gateway MAC from the tunnel"

note "RDMA within the stretched leaf: RoCE v2 in the tunnel, VXLAN 1 on the wire"
perf=(-d mlx5_0 -x 3 -F)
ip netns exec "$fa" dumpcap -q -P -i vfvx0 -f "udp port 4791" -w "$VFAB_TMP/in.pcap" \
	>"$VFAB_TMP/dumpcap1.log" 2>&1 &
c1=$!
ip netns exec "$HA" dumpcap -q -P -i eth1 -f "udp port 4789" -w "$VFAB_TMP/out.pcap" \
	>"$VFAB_TMP/dumpcap2.log" 2>&1 &
c2=$!
VFAB_SERVER_PIDS+=("$c1" "$c2")
for _ in $(seq 50); do
	grep -q Capturing "$VFAB_TMP/dumpcap1.log" && grep -q Capturing "$VFAB_TMP/dumpcap2.log" && break
	sleep 0.1
done
between 18701 b0 a0 ibv_rc_pingpong -g 3 -n 50 -s 8192 -c
sleep 1 # dumpcap writes what it still holds
kill "$c1" "$c2"
wait "$c1" "$c2" 2>/dev/null || true
grep -q '819200 bytes in' "$VFAB_TMP/x.cli" || { show "$VFAB_TMP/x.cli"; fail "ibv_rc_pingpong did not move 50 x 8 KiB each way"; }
python3 "$VFAB_REPO/tests/integration/capture_check.py" "$VFAB_TMP/in.pcap" send --msgs 100 --pkts 8 \
	>"$VFAB_TMP/in.check" 2>&1 || { show "$VFAB_TMP/in.check"; fail "the tunnel's frames are not clean RoCE v2"; }
show "$VFAB_TMP/in.check"
outer=$(tshark -r "$VFAB_TMP/out.pcap" -Y 'vxlan.vni == 1 && infiniband' 2>/dev/null | wc -l)
other=$(tshark -r "$VFAB_TMP/out.pcap" -Y '!(vxlan.vni == 1)' 2>/dev/null | wc -l)
note "on eth1: $outer RoCE v2 frames inside VXLAN 1, $other other"
inner=$(grep -o '[0-9]* frames' "$VFAB_TMP/in.check" | head -1 | cut -d' ' -f1)
[ "$outer" = "$inner" ] && [ "$other" = 0 ] ||
	fail "eth1 carried $outer RoCE frames in VXLAN 1 and $other other; the tunnel $inner"
between 18702 b0 a0 ib_write_bw "${perf[@]}" -s 65536 -n 500
show "$VFAB_TMP/x.cli"
between 18703 b0 a0 ib_send_bw "${perf[@]}" -s 65536 -n 500

note "the RDMA CM within the stretched leaf: rping a0 -> b0, data verified"
SERVER_PID=
vb exec b0 -- timeout 60 rping -s -a "$b0ip" -p 18704 -C 20 -S 4096 -V >"$VFAB_TMP/r.srv" 2>&1 &
SERVER_PID=$!
VFAB_SERVER_PIDS+=("$SERVER_PID")
VFAB_RUN_DIR=/run/vfab/$F-b wait_cm_listen 18704 || { show "$VFAB_TMP/r.srv"; fail "rping does not listen in b0"; }
va exec a0 -- timeout 60 rping -c -a "$b0ip" -p 18704 -C 20 -S 4096 -V >"$VFAB_TMP/r.cli" 2>&1 ||
	{ show "$VFAB_TMP/r.srv" "$VFAB_TMP/r.cli"; fail "rping a0 -> b0 failed"; }
wait "$SERVER_PID" || { show "$VFAB_TMP/r.srv"; fail "rping's server in b0 failed"; }

# A user's share of vfabd's connections: VFABD_CONNS_PER_USER (1024) on the
# control socket and on the wire each, so that another user still gets one.
note "per-user quota: user $qu1 holds 1024 connections to each socket, the next is refused; $qu2 still connects"
quota_py='
import socket, sys, time
path, kind, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
wait = float(sys.argv[4]) if len(sys.argv) > 4 else 0.5
t = socket.SOCK_SEQPACKET if kind == "wire" else socket.SOCK_STREAM
held = []
for _ in range(n):
    s = socket.socket(socket.AF_UNIX, t)
    s.connect(path)
    held.append(s)
time.sleep(wait)
closed = []
for i, s in enumerate(held):
    s.setblocking(False)
    try:
        b = s.recv(200)
        closed.append((i, b.decode().strip()))
    except BlockingIOError:
        pass
print(len(held) - len(closed), "open;", "closed:", closed)
'
for kind in wire ctl; do
	sock=/run/vfab/$F-a/wire.sock
	[ "$kind" = ctl ] && sock=/run/vfab/$F-a/vfabd.sock
	got=$(ulimit -n 4096 && "${asq1[@]}" /usr/bin/python3 -c "$quota_py" "$sock" "$kind" 1025) ||
		fail "user $qu1 could not connect to $sock"
	note "  $kind, $qu1: $got"
	case $kind in
	wire) [ "$got" = "1024 open; closed: [(1024, '')]" ] ;;
	ctl) [ "$got" = "1024 open; closed: [(1024, 'ERR EMFILE vfabd has too many connections of this user (limit 1024)')]" ] ;;
	esac || fail "$kind: $qu1's 1025th connection was not the one refused"
done
# While one user holds its quota, another's connection is taken.
(ulimit -n 4096 && exec "${asq1[@]}" /usr/bin/python3 -c "$quota_py" /run/vfab/$F-a/wire.sock wire 1024 3 >/dev/null) &
hold=$!
VFAB_SERVER_PIDS+=("$hold")
sleep 1
got=$("${asq2[@]}" /usr/bin/python3 -c "$quota_py" /run/vfab/$F-a/wire.sock wire 1)
wait "$hold"
[ "$got" = "1 open; closed: []" ] || fail "user $qu2 was refused while $qu1 held its quota: $got"

note "down: the machines are as they were"
machines_down "$before_a"
note "latency: 200 us node to node on a leaf, 400 us more across the spine, as the delay lines count it"
sed 's/^  ipv6: true$/  ipv6: true\n  spine: {latency_us: 400}\n  inter_node: {latency_us: 200}/' \
	"$CFG" >"$VFAB_TMP/lat.yaml"
machines_up "$VFAB_TMP/lat.yaml"
# min_rtt NODE-OF-A DEST: the smallest of 10 round trips, in microseconds.
min_rtt() { va exec "$1" -- ping -4 -c 10 -i 0.1 -W 2 "$2" | awk '/^rtt/ { split($4, v, "/"); printf "%d", v[1] * 1000 }'; }
same=$(min_rtt a0 b0)
cross=$(min_rtt a1 b0)
note "round trips: a0 -> b0 (one leaf) $same us, a1 -> b0 (via the spine) $cross us; configured 400 and 1200"
[ "$same" -ge 400 ] && [ "$same" -lt 1000 ] || fail "a0 -> b0: $same us, not one leaf's 400 us"
[ "$cross" -ge 1200 ] || fail "a1 -> b0: $cross us, below the spine's 1200 us"
va down >/dev/null || fail "latency: vfab down on hosta failed"
vb down >/dev/null || fail "latency: vfab down on hostb failed"
echo "PASS: multihost_leaf"
