#!/usr/bin/env bash
# Two machines, one cluster (configs/two-hosts.yaml, README "Several hosts"),
# here two network namespaces standing for the machines, joined by a veth
# whose ends are each one's eth1 (nothing of this host's network is touched).
# `vfab up --host hosta` in one and `--host hostb` in the other bring up each
# machine's share as fabrics $F-a and $F-b. Shows:
#  - each machine runs its own nodes only; names, hostfile and /etc/hosts
#    span the cluster;
#  - each fabric's router owns a macvlan of eth1 ("uplink"), invisible in the
#    machine's namespace, and routes the other host's leaf through it;
#  - nodes reach each other across the machines: ping both ways, 8900-byte
#    datagrams unfragmented (MTU 9000 end to end), a TCP stream by name;
#  - RDMA across machines as RoCE v2 on eth1 (issue 25's wire): ibv_rc_pingpong
#    with its data checked, every packet decoded by tshark and its ICRC
#    verified (capture_check.py); perftest's WRITE, READ, SEND, atomics
#    and latency; UD datagrams (ibv_ud_pingpong with its data checked);
#    2 % loss on a0's link costs retransmissions, counted, and no message
#    nor byte (8 MiB WRITTEN with pyverbs, each MiB's SHA-256 compared);
#  - a process that fork()s: its child's own RC QP across (pyverbs, no
#    exec) and the parent's next one both move checked data;
#  - SEND with invalidate across: a type 2 window's R_Key invalidated by the
#    other machine's SEND (IBV_WC_WITH_INV), a WRITE through it refused after;
#  - the RDMA CM across machines as the kernel's CM speaks it, MADs to QP1
#    (decoded by tshark as IB CM): rping with its data verified, ib_write_bw
#    and ib_send_bw -R, UCX connecting by socket address (and ucx_perftest,
#    which trades its addresses over TCP); a connect to a
#    port nobody listens on is rejected by the other machine at once;
#  - vfab report counts the wire's packets (and no refused CM MAD);
#  - `vfab down` on each leaves the machines as they were;
#  - with IPv6 leaves, the /64s cross as well, and rping over them (CM MADs
#    and RC as RoCE v2 over IPv6).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

F=${VFAB_FABRIC_MULTIHOST:-tmh}
. "$(dirname "$0")/machines_lib.sh"

cleanup()
{
	machines_del
	vfab_cleanup
}
trap cleanup EXIT

note "two machines: namespaces $HA and $HB, eth1 <-> eth1 (MTU 9000)"
machines_add
before_a=$(machine "$HA")

note "vfab up --host hosta / hostb"
machines_up "$VFAB_REPO/configs/two-hosts.yaml"
show "$VFAB_TMP/upa"
grep -q '^fabric .* up in .*: 2 node(s)' "$VFAB_TMP/upa" || fail "hosta's share is not 2 nodes"
grep -q '^  host hostb  *2 node(s), via 198.19.255.2: 198.18.1.0/24$' "$VFAB_TMP/upa" ||
	fail "vfab up does not say how hostb is reached"
va status >"$VFAB_TMP/sta"
grep -q "^fabric $F-a: up" "$VFAB_TMP/sta" || { show "$VFAB_TMP/sta"; fail "fabric $F-a is not healthy"; }
grep -q '^  host    hosta ' "$VFAB_TMP/sta" || { show "$VFAB_TMP/sta"; fail "vfab status does not name host hosta"; }
grep -q '^  a1 ' "$VFAB_TMP/sta" || fail "a1 is not on hosta"
va status --json | grep '"host":"hosta"' >/dev/null || fail 'vfab status --json has no "host":"hosta"'
if va status | grep '^  b0 ' >/dev/null; then fail "hostb's b0 runs on hosta"; fi
va exec b0 -- true 2>/dev/null && fail "vfab exec reaches b0 from hosta"

note "the uplink: in the fabric's namespace, not the machine's"
ip -n "vfab-$F-a-fab" route | grep '^198.18.1.0/24 via 198.19.255.2 dev uplink' >/dev/null ||
	{ ip -n "vfab-$F-a-fab" route; fail "no route to hostb's leaf via its uplink"; }
ip -n "vfab-$F-a-fab" -d link show uplink | grep 'macvlan mode bridge' >/dev/null ||
	fail "the uplink is not a bridge-mode macvlan"
[ "$(ip -n "$HA" -o link | wc -l)" = 2 ] || { ip -n "$HA" link; fail "the machine's namespace gained a netdev"; }
[ "$(machine "$HA")" = "$before_a" ] ||
	fail "the machine's own addresses or routes changed"

note "names and launchers span the cluster"
[ "$(va exec a0 -- getent hosts b1 | awk '{ print $1 }')" = 198.18.1.2 ] ||
	fail "a0 does not resolve b1 to 198.18.1.2"
[ "$(tr '\n' ' ' <"/run/vfab/$F-b/hostfile")" = "a0 slots=1 a1 slots=1 b0 slots=1 b1 slots=1 " ] ||
	{ show "/run/vfab/$F-b/hostfile"; fail "hostb's hostfile is not the cluster's"; }

note "IP across machines: ping both ways, 8900 bytes unfragmented"
va exec a0 -- ping -c 3 -i 0.2 -W 2 b1 >"$VFAB_TMP/p1" || { show "$VFAB_TMP/p1"; fail "a0 cannot ping b1"; }
vb exec b0 -- ping -c 3 -i 0.2 -W 2 a1 >"$VFAB_TMP/p2" || { show "$VFAB_TMP/p2"; fail "b0 cannot ping a1"; }
va exec a1 -- ping -c 2 -i 0.2 -W 2 -M do -s 8900 b0 >"$VFAB_TMP/p3" ||
	{ show "$VFAB_TMP/p3"; fail "8900-byte datagrams do not cross unfragmented"; }
vb exec b1 -- ping -c 1 -W 2 198.19.255.1 >/dev/null || fail "b1 cannot reach hosta's uplink"

note "a TCP stream across, by name"
vb exec b1 -- python3 -c '
import hashlib, socket
s = socket.create_server(("0.0.0.0", 18601)); c, _ = s.accept(); h = hashlib.sha256(); n = 0
while True:
    b = c.recv(1 << 16)
    if not b: break
    h.update(b); n += len(b)
c.sendall(("%d %s" % (n, h.hexdigest())).encode()); c.close()' >"$VFAB_TMP/tcp.srv" 2>&1 &
VFAB_SERVER_PIDS+=("$!")
for _ in $(seq 100); do
	vb exec b1 -- ss -Hltn 'sport = :18601' 2>/dev/null | grep -q . && break
	sleep 0.1
done
got=$(va exec a0 -- python3 -c '
import hashlib, os, socket
d = os.urandom(32 << 20); c = socket.create_connection(("b1", 18601), timeout=20)
c.sendall(d); c.shutdown(socket.SHUT_WR); r = c.recv(200).decode()
print("ok" if r == "%d %s" % (len(d), hashlib.sha256(d).hexdigest()) else "bad " + r)') ||
	fail "the TCP client failed"
[ "$got" = ok ] || { show "$VFAB_TMP/tcp.srv"; fail "32 MiB over TCP a0 -> b1: $got"; }

# across PORT TOOL [ARGS...]: TOOL from a0 (hosta) to b1 (hostb).
across() { between "$1" b1 a0 "${@:2}"; }
perf=(-d mlx5_0 -x 3 -F)
# One of hosta's port counters, as a0 reads it.
counter() { va exec a0 -- cat "/sys/class/infiniband/mlx5_0/ports/1/hw_counters/$1"; }

# wire_capture FILE / wire_capture_end: dumpcap on hosta's eth1, RoCE v2 only.
wire_capture()
{
	ip netns exec "$HA" dumpcap -q -P -i eth1 -f "udp port 4791" -w "$1" \
		>"$VFAB_TMP/dumpcap.log" 2>&1 &
	tpid=$!
	VFAB_SERVER_PIDS+=("$tpid")
	for _ in $(seq 50); do grep -q Capturing "$VFAB_TMP/dumpcap.log" && break; sleep 0.1; done
}
wire_capture_end()
{
	sleep 1 # dumpcap writes what it still holds
	kill "$tpid"
	wait "$tpid" 2>/dev/null || true
}

note "RDMA across machines: RoCE v2 packets on eth1, as tshark decodes them"
wire_capture "$VFAB_TMP/wire.pcap"
across 18602 ibv_rc_pingpong -g 3 -n 50 -s 8192 -c
wire_capture_end
grep -q '819200 bytes in' "$VFAB_TMP/x.cli" || { show "$VFAB_TMP/x.cli"; fail "ibv_rc_pingpong did not move 50 x 8 KiB each way"; }
python3 "$VFAB_REPO/tests/integration/capture_check.py" "$VFAB_TMP/wire.pcap" send --msgs 100 --pkts 8 \
	>"$VFAB_TMP/wire.check" 2>&1 || { show "$VFAB_TMP/wire.check"; fail "the wire capture is not clean RoCE v2"; }
show "$VFAB_TMP/wire.check"

note "RDMA across machines: perftest's WRITE, READ and SEND (64 KiB), atomics, latency"
across 18603 ib_write_bw "${perf[@]}" -s 65536 -n 500
show "$VFAB_TMP/x.cli"
across 18604 ib_read_bw "${perf[@]}" -s 65536 -n 500
across 18605 ib_send_bw "${perf[@]}" -s 65536 -n 500
across 18609 ib_atomic_bw "${perf[@]}" -n 1000
across 18606 ib_write_lat "${perf[@]}" -s 8 -n 1000
show "$VFAB_TMP/x.cli"

# (Not ib_send_bw -c UD: its server waits for every datagram, and a sender
# faster than this VM's receiver loses some, as UD may.)
note "UD across machines: datagrams with their GRH, data checked"
across 18610 ibv_ud_pingpong -g 3 -n 100 -s 2048 -c
grep -q '409600 bytes in' "$VFAB_TMP/x.cli" || { show "$VFAB_TMP/x.cli"; fail "ibv_ud_pingpong did not move 100 x 2 KiB each way"; }

# pair tcp|cm PORT SERVER-CMD... -- CLIENT-CMD...: a server in b1, up once it
# listens on TCP PORT (tcp) or hostb's listener directory names a live RDMA CM
# listener on PORT (cm), then its client in a0; both must exit 0. Output:
# $VFAB_TMP/x.srv and x.cli.
pair()
{
	local how=$1 port=$2 rc=0 src=0 srv=()
	shift 2
	while [ "$1" != -- ]; do srv+=("$1"); shift; done
	shift
	on b1 timeout 60 "${srv[@]}" >"$VFAB_TMP/x.srv" 2>&1 &
	SERVER_PID=$!
	VFAB_SERVER_PIDS+=("$SERVER_PID")
	if [ "$how" = cm ]; then
		VFAB_RUN_DIR=/run/vfab/$F-b wait_cm_listen "$port" ||
			{ show "$VFAB_TMP/x.srv"; fail "${srv[0]} does not listen in b1"; }
	else
		# Python with pyverbs may take seconds to start the first time (cold caches, ASan).
		for _ in $(seq 300); do
			on b1 ss -Hltn "sport = :$port" 2>/dev/null | grep -q . && break
			kill -0 "$SERVER_PID" 2>/dev/null || break
			sleep 0.1
		done
		on b1 ss -Hltn "sport = :$port" 2>/dev/null | grep -q . ||
			{ show "$VFAB_TMP/x.srv"; fail "${srv[*]} does not listen on TCP $port in b1"; }
	fi
	on a0 timeout 60 "$@" >"$VFAB_TMP/x.cli" 2>&1 || rc=$?
	wait "$SERVER_PID" || src=$?
	[ "$rc" = 0 ] && [ "$src" = 0 ] ||
		{ show "$VFAB_TMP/x.srv" "$VFAB_TMP/x.cli"; fail "${srv[*]} a0 -> b1: client exited $rc, server $src"; }
}
verbs=(/usr/bin/python3 "$VFAB_REPO/tests/integration/wire_verbs.py")

note "fork(): a child's own RC QP to hostb (no exec), and the parent's after it"
pair tcp 18615 "${verbs[@]}" server 18615 3 -- "${verbs[@]}" client b1 18615
[ "$(grep -c 'out and back, checked' "$VFAB_TMP/x.cli")" = 3 ] ||
	{ show "$VFAB_TMP/x.cli"; fail "not 3 checked exchanges around fork()"; }

note "SEND with invalidate across: a type 2 window on b1, its R_Key invalidated by a0's SEND"
pair tcp 18616 "${verbs[@]}" inv-server 18616 -- "${verbs[@]}" inv-client b1 18616
show "$VFAB_TMP/x.cli" "$VFAB_TMP/x.srv"

note "the RDMA CM across machines: CM MADs on QP1 (rping, perftest -R, UCX by socket address)"
wire_capture "$VFAB_TMP/cm.pcap"
pair cm 18611 rping -s -a 198.18.1.2 -p 18611 -C 20 -S 4096 -V -- \
	rping -c -a 198.18.1.2 -p 18611 -C 20 -S 4096 -V
wire_capture_end
python3 "$VFAB_REPO/tests/integration/capture_check.py" "$VFAB_TMP/cm.pcap" cm \
	>"$VFAB_TMP/cm.check" 2>&1 || { show "$VFAB_TMP/cm.check"; fail "the CM's MADs are not what tshark decodes as IB CM"; }
show "$VFAB_TMP/cm.check"
pair cm 18612 ib_write_bw -R "${perf[@]}" -s 65536 -n 500 -p 18612 -- \
	ib_write_bw -R "${perf[@]}" -s 65536 -n 500 -p 18612 b1
pair cm 18613 ib_send_bw -R "${perf[@]}" -s 4096 -n 500 -p 18613 -- \
	ib_send_bw -R "${perf[@]}" -s 4096 -n 500 -p 18613 b1
pair cm 18614 env UCX_NET_DEVICES=mlx5_0:1 "$VFAB_BIN/ucx_sockaddr" server 18614 5 -- \
	env UCX_NET_DEVICES=mlx5_0:1 "$VFAB_BIN/ucx_sockaddr" client b1 18614 5
grep -q '^result role=client' "$VFAB_TMP/x.cli" || { show "$VFAB_TMP/x.cli"; fail "ucx_sockaddr: no client result"; }
# ucx_perftest trades UCX's worker addresses over TCP of its own, as between hosts.
pair tcp 18618 env UCX_NET_DEVICES=mlx5_0:1 ucx_perftest -p 18618 -- \
	env UCX_NET_DEVICES=mlx5_0:1 ucx_perftest b1 -p 18618 -t ucp_put_bw -s 65536 -n 2000
tail -2 "$VFAB_TMP/x.cli" | sed 's/^/    ucx_perftest: /'

note "the RDMA CM across machines: nobody listens, hostb's CM rejects at once"
t0=$(date +%s)
if on a0 timeout 30 rping -c -a 198.18.1.2 -p 18619 -C 1 >"$VFAB_TMP/rej" 2>&1; then
	fail "rping connected to a port nobody listens on"
fi
grep -q 'REJECTED' "$VFAB_TMP/rej" || { show "$VFAB_TMP/rej"; fail "rping to nobody: not rejected"; }
[ $(($(date +%s) - t0)) -lt 10 ] || fail "rping to nobody took $(($(date +%s) - t0)) s to be rejected"

note "vfab report counts the wire's packets, and no CM MAD was refused"
va report >"$VFAB_TMP/report"
grep '^wire to other machines: ' "$VFAB_TMP/report" >"$VFAB_TMP/wire.line" ||
	{ show "$VFAB_TMP/report"; fail "vfab report says nothing of the wire"; }
show "$VFAB_TMP/wire.line"
va report --json | python3 -c '
import json, sys
w = json.load(sys.stdin)["wire"]
assert w["open"] == 1 and w["sent"] > 1000 and w["delivered"] > 1000, w
assert w["dropped"]["gsi"] == 0 and w["dropped"]["parse"] == 0, w["dropped"]' ||
	fail "vfab report --json: the wire counters are not what the traffic above implies"

# Loss: vfab's own on a0's link (its IP side drops packets, netem or not;
# this kernel has no netem for eth1). perftest ends with a TCP handshake,
# so a lost last ACK is retried while the peer's QP still exists; a
# ping-pong's last ACK lost would find it destroyed, on hardware as here.
note "RDMA across machines through 2 % loss on a0's link: all complete, retransmissions counted"
va shape a0/mlx5_0 loss=0.02 >/dev/null || fail "vfab shape a0/mlx5_0 loss=0.02"
before=$(($(counter local_ack_timeout_err) + $(counter packet_seq_err)))
across 18607 ib_write_bw "${perf[@]}" -s 65536 -n 300
across 18608 ib_send_bw "${perf[@]}" -s 65536 -n 300
# perftest checks no data: 8 MiB of random bytes WRITTEN, each round's SHA-256 compared.
pair tcp 18620 "${verbs[@]}" bulk-server 18620 -- "${verbs[@]}" bulk-client b1 18620
show "$VFAB_TMP/x.srv"
retx=$(($(counter local_ack_timeout_err) + $(counter packet_seq_err) - before))
va shape a0/mlx5_0 loss=0 >/dev/null
note "a0's requester went back $retx time(s) for lost packets (local_ack_timeout_err + packet_seq_err)"
[ "$retx" -gt 0 ] || fail "2 % loss on 18000 packets, and no retransmission counted"

note "down: the machines are as they were"
machines_down "$before_a"

note "IPv6 too: each leaf's /64 routed via the other uplink's IPv6 address"
sed -e 's|\(198.19.255.\([12]\)/24\)\]|\1, "fd00:199::\2/64"]|' \
	"$VFAB_REPO/configs/two-hosts.yaml" >"$VFAB_TMP/two6.yaml"
printf 'fabric: {ipv6: true}\n' >>"$VFAB_TMP/two6.yaml"
va up --host hosta "$VFAB_TMP/two6.yaml" >"$VFAB_TMP/up6" 2>&1 || { show "$VFAB_TMP/up6"; fail "IPv6: up hosta"; }
vb up --host hostb "$VFAB_TMP/two6.yaml" >"$VFAB_TMP/up6b" 2>&1 || { show "$VFAB_TMP/up6b"; fail "IPv6: up hostb"; }
grep -q 'via 198.19.255.2: 198.18.1.0/24 fd00:198:18:1::/64$' "$VFAB_TMP/up6" ||
	{ show "$VFAB_TMP/up6"; fail "IPv6: no route to hostb's IPv6 leaf"; }
va exec a0 -- ping -6 -c 2 -i 0.2 -W 2 b1 >"$VFAB_TMP/p6" || { show "$VFAB_TMP/p6"; fail "IPv6: a0 cannot ping b1"; }
grep -q 'fd00:198:18:1::2' "$VFAB_TMP/p6" || fail "IPv6: b1 is not fd00:198:18:1::2"
note "IPv6 too: the RDMA CM and RC across as RoCE v2 over IPv6 (rping, data verified)"
pair cm 18617 rping -s -a fd00:198:18:1::2 -p 18617 -C 10 -S 1024 -V -- \
	rping -c -a fd00:198:18:1::2 -p 18617 -C 10 -S 1024 -V
va down >/dev/null || fail "IPv6: down hosta"
vb down >/dev/null || fail "IPv6: down hostb"
echo "PASS: multihost"
