#!/usr/bin/env bash
# In-order delivery and NAK-driven recovery on shaped links, on a fabric of
# its own (default 2-node config, $VFAB_FABRIC, "tord" from inorder.cmake):
#   shaped    both ports at 100 Gb/s with 2 us: bin/nccl_pattern in both
#             directions at once (NCCL's chains of WRITEs ended by a
#             WRITE_WITH_IMM, rounds of alternating sizes from 0 B to 1 MiB,
#             CTS FIFO writes the other way). A lossless link never lets a
#             later message of a QP overtake an earlier one: both pass, and
#             no port counts an ACK timeout, an out-of-sequence request or a
#             NAK.
#   lossy     node0's port also losing 2 % of message attempts, ib_write_bw
#             1 MiB with NCCL's default ACK timeout (-u 20: 4.3 s): every
#             lost attempt is retransmitted, each one after the NAK that the
#             packets behind it draw (packet_seq_err), none after the ACK
#             timer but possibly the very last (a lost last packet with
#             nothing behind it).
# Counts come from `vfab report --json` (the region's counters, exact).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

inorder_cleanup()
{
	vfab_cleanup
	"$VFAB" --fabric "$VFAB_FABRIC" down >/dev/null 2>&1 || true
}
trap inorder_cleanup EXIT

# counter REPORT NODE NAME: a counter of NODE's mlx5_0 port 1 in a REPORT.
counter()
{
	python3 -c '
import json, sys
for p in json.load(open(sys.argv[1]))["ports"]:
    if p["node"] == sys.argv[2] and p["hca"] == "mlx5_0" and p["port"] == 1:
        print(p["counters"][sys.argv[3]])' "$@"
}

# up_drops REPORT: attempts node0's up link lost.
up_drops()
{
	python3 -c '
import json, sys
for l in json.load(open(sys.argv[1]))["links"]:
    if l["name"] == "node0/mlx5_0/1/up":
        print(l["drops"])' "$1"
}

report() # FILE
{
	"$VFAB" --fabric "$VFAB_FABRIC" report --json -o "$1" || fail "vfab report exited $?"
}

# grew R0 R1 NODE NAME: how much a port counter grew between two reports.
grew()
{
	echo $(($(counter "$2" "$3" "$4") - $(counter "$1" "$3" "$4")))
}

if [ -e "/run/vfab/$VFAB_FABRIC" ] || [ -e "/dev/shm/vfab-$VFAB_FABRIC" ]; then
	note "a previous run left fabric $VFAB_FABRIC behind; taking it down first"
	"$VFAB" --fabric "$VFAB_FABRIC" down
fi
"$VFAB" --fabric "$VFAB_FABRIC" up >"$VFAB_TMP/up.log" 2>&1 || { show "$VFAB_TMP/up.log"; fail "vfab up"; }
for n in node0 node1; do
	"$VFAB" --fabric "$VFAB_FABRIC" shape "$n/mlx5_0" bw=100 lat=2 >/dev/null ||
		fail "vfab shape $n/mlx5_0"
done

# --- shaped: NCCL's traffic both ways at once
prog=$VFAB_BIN/nccl_pattern
[ -x "$prog" ] || fail "$prog missing (build it first)"
report "$VFAB_TMP/r0.json"
start_server node1 "$VFAB_TMP/recv1.log" "$prog" -d mlx5_0 --server -p 18601
pid1=$SERVER_PID
wait_listen node1 18601 30 || { show "$VFAB_TMP/recv1.log"; fail "node1's receiver did not listen"; }
start_server node0 "$VFAB_TMP/recv0.log" "$prog" -d mlx5_0 --server -p 18602
pid0=$SERVER_PID
wait_listen node0 18602 30 || { show "$VFAB_TMP/recv0.log"; fail "node0's receiver did not listen"; }
timeout 240 "$VFAB" --fabric "$VFAB_FABRIC" exec node0 -- "$prog" -d mlx5_0 --client "$NODE1_IP" \
	-p 18601 >"$VFAB_TMP/send0.log" 2>&1 &
spid0=$!
VFAB_SERVER_PIDS+=("$spid0")
rc1=0
timeout 240 "$VFAB" --fabric "$VFAB_FABRIC" exec node1 -- "$prog" -d mlx5_0 --client "$NODE0_IP" \
	-p 18602 >"$VFAB_TMP/send1.log" 2>&1 || rc1=$?
rc0=0 r0=0 r1=0
wait_pid "$spid0" 240 || rc0=$?
wait_pid "$pid1" 60 || r1=$?
wait_pid "$pid0" 60 || r0=$?
report "$VFAB_TMP/r1.json"
for log in send0 recv1 send1 recv0; do
	! grep -q '^FAIL' "$VFAB_TMP/$log.log" || { show "$VFAB_TMP/$log.log"; fail "$log: failed checks"; }
done
[ "$rc0$rc1$r0$r1" = 0000 ] ||
	{ show "$VFAB_TMP"/*.log; fail "nccl_pattern exited: senders $rc0 $rc1, receivers $r0 $r1"; }
for n in node0 node1; do
	for c in local_ack_timeout_err out_of_sequence packet_seq_err duplicate_request; do
		d=$(grew "$VFAB_TMP/r0.json" "$VFAB_TMP/r1.json" "$n" "$c")
		[ "$d" = 0 ] || fail "$n counted $d $c on a lossless shaped link"
	done
done
note "shaped 100 Gb/s, 2 us: nccl_pattern both ways passed; no ACK timeout, no PSN error"

# --- lossy: NAKs bring lost attempts back
"$VFAB" --fabric "$VFAB_FABRIC" shape node0/mlx5_0/1/up bw=25 loss=0.02 >/dev/null ||
	fail "vfab shape loss"
report "$VFAB_TMP/r2.json"
start_server node1 "$VFAB_TMP/bw.srv" ib_write_bw -d mlx5_0 -x 3 -F -s 1048576 -n 1500 -u 20 \
	-p 18603
wait_listen node1 18603 30 || { show "$VFAB_TMP/bw.srv"; fail "ib_write_bw server did not listen"; }
rc=0
timeout 200 "$VFAB" --fabric "$VFAB_FABRIC" exec node0 -- ib_write_bw -d mlx5_0 -x 3 -F \
	-s 1048576 -n 1500 -u 20 -p 18603 "$NODE1_IP" >"$VFAB_TMP/bw.cli" 2>&1 || rc=$?
wait_pid "$SERVER_PID" 60 || true
report "$VFAB_TMP/r3.json"
[ "$rc" = 0 ] || { show "$VFAB_TMP/bw.srv" "$VFAB_TMP/bw.cli"; fail "ib_write_bw over the lossy link exited $rc"; }
drops=$(($(up_drops "$VFAB_TMP/r3.json") - $(up_drops "$VFAB_TMP/r2.json")))
naks=$(grew "$VFAB_TMP/r2.json" "$VFAB_TMP/r3.json" node0 packet_seq_err)
tmos=$(grew "$VFAB_TMP/r2.json" "$VFAB_TMP/r3.json" node0 local_ack_timeout_err)
oos=$(grew "$VFAB_TMP/r2.json" "$VFAB_TMP/r3.json" node1 out_of_sequence)
[ "$drops" -gt 0 ] || fail "the link lost nothing at 2 % over 1500 messages"
[ $((naks + tmos)) = "$drops" ] ||
	fail "$drops attempts lost but $naks NAKs + $tmos timeouts retransmitted them"
[ "$tmos" -le 1 ] || fail "$tmos lost attempts waited for the ACK timer instead of a NAK"
[ "$oos" -ge "$naks" ] || fail "node1 counted $oos out-of-sequence requests for $naks NAKs"
note "lossy 2 %: $drops lost, $naks recovered by NAK, $tmos by timeout; node1 out_of_sequence $oos;" \
	"$(perftest_value "$VFAB_TMP/bw.cli" 'BW average[MB/sec]' 4) MB/s"
