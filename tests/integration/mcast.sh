#!/usr/bin/env bash
# mcast.sh CASE: UD multicast between the nodes of the test fabric
# (provider/README.md "UD multicast"). CASE is one of
#   verbs    bin/verbs_mcast's own checks in node0 and node1 (attach/detach
#            errors, delivery in one node); then 100 datagrams from node0 to
#            an IPv4 group with a receiver in node1 and one in node0, all
#            arriving; with node1's port down the node0 receiver still gets
#            them and node1's none (a down port carries nothing); a process
#            holding a group's 240 places of node1's HCA keeps another from
#            attaching (ENOMEM); once it is killed and vfabd reaps it, the
#            other takes all 240
#   mckey4   librdmacm's mckey: receivers in node1 and node0 join 239.21.0.4,
#            the sender in node0 sends 100 messages, both receivers get all
#   mckey6   the same over an IPv6 group (ff0e::21:6) between addresses
#            fd21:6::1 and ::2 given to node0 and node1 for the test
#            (`vfab addr`, removed at the end)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ $# -ge 1 ] || fail "usage: mcast.sh verbs|mckey4|mckey6"
N=100
V() { "$VFAB" --fabric "$VFAB_FABRIC" "$@"; }

# wait_for LOG TEXT: until LOG holds TEXT (10 s).
wait_for()
{
	for _ in $(seq 100); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	show "$1"
	fail "no '$2' in $(basename "$1")"
}

# collect: every receiver started (RPIDS, RLOGS) ends with status 0.
collect()
{
	local pid log i=0 rc
	for pid in "${RPIDS[@]}"; do
		log=${RLOGS[$i]}
		rc=0
		wait_pid "$pid" 40 || rc=$?
		show "$log"
		[ "$rc" = 0 ] || fail "receiver $(basename "$log") exited $rc"
		i=$((i + 1))
	done
}

RPIDS=() RLOGS=()
receiver()
{
	local node=$1 log=$VFAB_TMP/recv.$1.$2.log
	shift 2
	start_server "$node" "$log" "$@"
	RPIDS+=("$SERVER_PID")
	RLOGS+=("$log")
}

verbs_case()
{
	local bin=$VFAB_BIN/verbs_mcast group=239.21.0.1 node log rc
	[ -x "$bin" ] || fail "$bin missing (build it first)"
	for node in node0 node1; do
		log=$VFAB_TMP/$node.log
		rc=0
		timeout 120 "$VFAB" --fabric "$VFAB_FABRIC" exec "$node" -- "$bin" -d mlx5_0 -g 3 >"$log" 2>&1 || rc=$?
		show "$log"
		[ "$rc" = 0 ] && ! grep -q '^FAIL' "$log" || fail "$node: verbs_mcast exited $rc"
		note "$node: $(grep -c '^ok ' "$log") checks ok"
	done

	receiver node1 a "$bin" -d mlx5_0 -g 3 --recv "$group" "$N"
	receiver node0 b "$bin" -d mlx5_0 -g 3 --recv "$group" "$N"
	wait_for "${RLOGS[0]}" '^ready'
	wait_for "${RLOGS[1]}" '^ready'
	rc=0
	timeout 60 "$VFAB" --fabric "$VFAB_FABRIC" exec node0 -- "$bin" -d mlx5_0 -g 3 --send "$group" "$N" \
		>"$VFAB_TMP/send.log" 2>&1 || rc=$?
	show "$VFAB_TMP/send.log"
	[ "$rc" = 0 ] || fail "sender exited $rc"
	collect
	note "node0 -> $group: $N datagrams at the receivers in node1 and node0"

	RPIDS=() RLOGS=()
	V link node1/mlx5_0 down >/dev/null || fail "vfab link node1/mlx5_0 down"
	trap 'V link node1/mlx5_0 up >/dev/null 2>&1 || true; vfab_cleanup' EXIT
	receiver node1 c "$bin" -d mlx5_0 -g 3 --recv "$group" 0
	receiver node0 d "$bin" -d mlx5_0 -g 3 --recv "$group" "$N"
	wait_for "${RLOGS[0]}" '^ready'
	wait_for "${RLOGS[1]}" '^ready'
	rc=0
	timeout 60 "$VFAB" --fabric "$VFAB_FABRIC" exec node0 -- "$bin" -d mlx5_0 -g 3 --send "$group" "$N" \
		>"$VFAB_TMP/send.log" 2>&1 || rc=$?
	[ "$rc" = 0 ] || { show "$VFAB_TMP/send.log"; fail "sender exited $rc"; }
	collect
	V link node1/mlx5_0 up >/dev/null || fail "vfab link node1/mlx5_0 up"
	note "node1's port down: node0's receiver got $N, node1's none"

	# A killed process's attachments go with its QPs when vfabd reaps them:
	# the group's 240 places of node1's HCA are free again.
	log=$VFAB_TMP/fill1.log
	start_server node1 "$log" "$bin" -d mlx5_0 -g 3 --fill 239.21.0.9 60
	wait_for "$log" '^ready'
	rc=0
	timeout 60 "$VFAB" --fabric "$VFAB_FABRIC" exec node1 -- "$bin" -d mlx5_0 -g 3 --fill 239.21.0.9 0 \
		>"$VFAB_TMP/fill2.log" 2>&1 || rc=$?
	[ "$rc" = 3 ] || { show "$VFAB_TMP/fill2.log"; fail "a second process filled a full group ($rc)"; }
	kill_tree "$SERVER_PID"
	for try in $(seq 40); do
		rc=0
		timeout 60 "$VFAB" --fabric "$VFAB_FABRIC" exec node1 -- "$bin" -d mlx5_0 -g 3 --fill 239.21.0.9 0 \
			>"$VFAB_TMP/fill2.log" 2>&1 || rc=$?
		[ "$rc" = 3 ] || break
		sleep 0.25
	done
	show "$log" "$VFAB_TMP/fill2.log"
	[ "$rc" = 0 ] || fail "a second process could not fill the group after the first was killed ($rc)"
	note "group full while its 240 QPs' process lives (ENOMEM); free once it is killed and reaped (attempt $try)"
}

# mckey_case GROUP ADDR0 ADDR1 MGID: receivers in node1 (ADDR1) and node0 (ADDR0), sender in
# node0; each reports MGID. stdbuf: mckey says it joined before it ends.
mckey_case()
{
	local group=$1 a0=$2 a1=$3 log rc=0
	receiver node1 a timeout 60 stdbuf -oL mckey -m "$group" -b "$a1" -C "$N"
	receiver node0 b timeout 60 stdbuf -oL mckey -m "$group" -b "$a0" -C "$N"
	for log in "${RLOGS[@]}"; do
		wait_for "$log" "^mckey: joined dgid: $4 "
		wait_for "$log" '^receiving data transfers'
	done
	timeout 60 "$VFAB" --fabric "$VFAB_FABRIC" exec node0 -- mckey -m "$group" -b "$a0" -s -C "$N" \
		>"$VFAB_TMP/send.log" 2>&1 || rc=$?
	show "$VFAB_TMP/send.log"
	[ "$rc" = 0 ] || fail "mckey sender exited $rc"
	grep -q "^mckey: joined dgid: $4 " "$VFAB_TMP/send.log" || fail "the sender's join reported no dgid $4"
	collect
	for log in "${RLOGS[@]}"; do
		grep -q '^data transfers complete' "$log" && grep -q '^return status 0' "$log" ||
			fail "$(basename "$log"): not every message arrived"
	done
	note "mckey $group: $N messages from node0 at the receivers in node1 and node0"
}

case $1 in
verbs) verbs_case ;;
mckey4) mckey_case 239.21.0.4 "$NODE0_IP" "$NODE1_IP" '::ffff:239.21.0.4' ;;
mckey6)
	trap 'V addr node0 del fd21:6::1/64 >/dev/null 2>&1 || true
	      V addr node1 del fd21:6::2/64 >/dev/null 2>&1 || true; vfab_cleanup' EXIT
	V addr node0 add fd21:6::1/64 >/dev/null || fail "vfab addr node0 add fd21:6::1/64"
	V addr node1 add fd21:6::2/64 >/dev/null || fail "vfab addr node1 add fd21:6::2/64"
	mckey_case ff0e::21:6 fd21:6::1 fd21:6::2 'ff0e::21:6'
	;;
*) fail "unknown case $1" ;;
esac
