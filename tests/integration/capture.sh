#!/usr/bin/env bash
# capture.sh: vfab capture (issue 24) on a fabric of its own ($VFAB_FABRIC,
# capture.cmake) whose netdevs have MTU 9000 (RoCE MTU 4096). Each case runs
# a perftest pair (or rping) from node0 to node1 while `vfab capture` records
# node1's port, then capture_check.py verifies the pcap: every whole frame's
# ICRC (its own CRC), tshark decodes every frame as InfiniBand without
# malformed packets or warnings, the opcodes and PSNs of every message are
# in the IBA's order and each is answered as it should be. Covers RDMA
# WRITE (64 KiB at MTU 1024, 1 MiB at MTU 4096), READ, atomics, SEND, UD
# SEND, RoCE v1 and RoCE v2 over IPv6, rping through the RDMA CM, and a
# snap length that cuts frames. Non-root users cannot capture.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

F=$VFAB_FABRIC
V() { "$VFAB" --fabric "$F" "$@"; }
CHECK="$VFAB_REPO/tests/integration/capture_check.py"
capture_cleanup()
{
	vfab_cleanup
	V down >/dev/null 2>&1 || true
}
trap capture_cleanup EXIT
command -v tshark >/dev/null || fail "tshark is not installed"
V down >/dev/null 2>&1 || true

cat >"$VFAB_TMP/cap.yaml" <<'EOF'
nodes:
  - {id: node0}
  - {id: node1}
fabric:
  subnet: 198.18.0.0/24
  mtu: 9000
EOF
V up "$VFAB_TMP/cap.yaml" >"$VFAB_TMP/up.log" 2>&1 || { show "$VFAB_TMP/up.log"; fail "vfab up"; }
ip1=$(V exec node1 -- ip -4 -o addr show eth0 | awk '{ sub("/.*", "", $4); print $4 }')
port=18790

# with_capture NAME KIND CHECK_ARGS -- SERVER_AND_CLIENT_COMMAND...: one case.
with_capture()
{
	local name=$1 kind=$2 cpid rc=0
	shift 2
	local args=()
	while [ "$1" != -- ]; do
		args+=("$1")
		shift
	done
	shift
	port=$((port + 1))
	"$VFAB" --fabric "$F" capture node1/mlx5_0 -w "$VFAB_TMP/$name.pcap" \
		${SNAP:+--snaplen "$SNAP"} >"$VFAB_TMP/$name.cap" 2>&1 &
	cpid=$!
	for _ in $(seq 50); do
		grep -q -- '->' "$VFAB_TMP/$name.cap" && break
		sleep 0.1
	done
	start_server node1 "$VFAB_TMP/$name.srv" "$@" -p "$port"
	wait_listen node1 "$port" 30 || { show "$VFAB_TMP/$name.srv"; fail "$name: no server"; }
	timeout 60 "$VFAB" --fabric "$F" exec node0 -- "$@" -p "$port" "$ip1" \
		>"$VFAB_TMP/$name.cli" 2>&1 || rc=$?
	wait_pid "$SERVER_PID" 30 || rc=1
	kill -TERM "$cpid"
	wait_pid "$cpid" 20 || { show "$VFAB_TMP/$name.cap"; fail "$name: vfab capture failed"; }
	[ "$rc" = 0 ] || { show "$VFAB_TMP/$name.srv" "$VFAB_TMP/$name.cli"; fail "$name: the pair failed"; }
	grep -q ' 0 dropped.* 0 malformed' "$VFAB_TMP/$name.cap" || { show "$VFAB_TMP/$name.cap"; fail "$name: drops"; }
	python3 "$CHECK" "$VFAB_TMP/$name.pcap" "$kind" "${args[@]}" || fail "$name: the capture is wrong"
}

P=(-d mlx5_0 -F)
with_capture write64k write --msgs 20 --pkts 64 -- ib_write_bw "${P[@]}" -x 3 -m 1024 -s 65536 -n 20
with_capture write1m write --msgs 10 --pkts 256 -- ib_write_bw "${P[@]}" -x 3 -m 4096 -s 1048576 -n 10
with_capture read read --msgs 20 -- ib_read_bw "${P[@]}" -x 3 -s 65536 -n 20
with_capture atomic atomic --msgs 20 -- ib_atomic_bw "${P[@]}" -x 3 -n 20
with_capture atomic_cs atomic --msgs 20 -- ib_atomic_bw "${P[@]}" -x 3 -A CMP_AND_SWAP -n 20
with_capture send send --msgs 20 -- ib_send_bw "${P[@]}" -x 3 -s 5000 -n 20
with_capture ud ud --msgs 20 -- ib_send_bw "${P[@]}" -x 3 -c UD -s 2048 -n 20
with_capture roce_v1 send --msgs 20 -- ib_send_bw "${P[@]}" -x 2 -s 100 -n 20
with_capture roce_v2_ipv6 write --msgs 20 -- ib_write_bw "${P[@]}" -x 1 -s 4096 -n 20
# Frames cut at 128 bytes: headers and the payload's start; no ICRC to check.
SNAP=128 with_capture snap write --msgs 10 -- ib_write_bw "${P[@]}" -x 3 -s 8192 -n 10
tshark -r "$VFAB_TMP/roce_v1.pcap" 2>/dev/null | head -1 | grep -q ' RoCE ' || fail "no RoCE v1 frames"
tshark -r "$VFAB_TMP/roce_v2_ipv6.pcap" 2>/dev/null | head -1 | grep -q 'fe80::.*RRoCE' ||
	fail "no RoCE v2 frames over IPv6"
python3 - "$VFAB_TMP/snap.pcap" <<'EOF' || fail "the snap length was not kept"
import struct, sys
d = open(sys.argv[1], "rb").read()
off, n = 24, 0
while off < len(d):
    incl, orig = struct.unpack_from("<II", d, off + 8)
    assert incl <= 128 and orig >= incl, (incl, orig)
    off += 16 + incl
    n += 1
print("snap: %d frames, none above 128 bytes" % n)
EOF

# rping through the RDMA CM: its SENDs, READs and WRITEs (the CM's own MADs are not shown).
port=$((port + 1))
"$VFAB" --fabric "$F" capture node1/mlx5_0 -w "$VFAB_TMP/rping.pcap" >"$VFAB_TMP/rping.cap" 2>&1 &
cpid=$!
sleep 0.5
start_server node1 "$VFAB_TMP/rping.srv" rping -s -a "$ip1" -p "$port" -C 5 -v
wait_cm_listen "$port" || { show "$VFAB_TMP/rping.srv"; fail "rping server did not listen"; }
timeout 60 "$VFAB" --fabric "$F" exec node0 -- rping -c -a "$ip1" -p "$port" -C 5 -v \
	>"$VFAB_TMP/rping.cli" 2>&1 || { show "$VFAB_TMP/rping.cli"; fail "rping client"; }
wait_pid "$SERVER_PID" 30 || fail "rping server did not end"
kill -TERM "$cpid"
wait_pid "$cpid" 20 || { show "$VFAB_TMP/rping.cap"; fail "vfab capture (rping) failed"; }
python3 "$CHECK" "$VFAB_TMP/rping.pcap" any --msgs 20 || fail "rping: the capture is wrong"
for op in "RDMA Read Request" "RDMA Write" "Send Only"; do
	tshark -r "$VFAB_TMP/rping.pcap" 2>/dev/null | grep "$op" >/dev/null || fail "rping: no '$op' frame"
done

# A capture is root's, as on a host.
if su nobody -s /bin/sh -c "'$VFAB' --fabric '$F' capture node1/mlx5_0 -w /tmp/x.pcap --for 1" \
	>"$VFAB_TMP/nobody.log" 2>&1; then
	fail "a non-root user could capture"
fi
grep -q "needs root" "$VFAB_TMP/nobody.log" || { show "$VFAB_TMP/nobody.log"; fail "no reason given"; }
note "capture: WRITE, READ, atomics, SEND, UD, RoCE v1, v2/IPv6, rping, snap length: all as on a wire"
