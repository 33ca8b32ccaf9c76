#!/usr/bin/env bash
# Two leaves under a spine (configs/leafspine-oversub.yaml), on a fabric of
# its own: IP between the leaves goes through the spine router (its gateway
# is the first hop), RoCE v2 crosses the spine, RoCE v1 and link-local GIDs
# stay on their leaf (a QP aimed across fails with the retry error, as on a
# real routed fabric), and inside a leaf RoCE v1 works. `down` leaves nothing.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

F=$VFAB_FABRIC
CONFIG=$VFAB_REPO/configs/leafspine-oversub.yaml
V() { "$VFAB" --fabric "$F" "$@"; }
# node0, node1 on leaf0 (198.18.0.0/24); node4 on leaf1 (198.18.1.0/24).
N0=198.18.0.1 N1=198.18.0.2 N4=198.18.1.1 GW0=198.18.0.254

leafspine_cleanup()
{
	vfab_cleanup
	V down >/dev/null 2>&1 || true
}
trap leafspine_cleanup EXIT

if [ -e "/run/vfab/$F" ] || [ -e "/dev/shm/vfab-$F" ]; then
	note "a previous run left fabric $F behind; taking it down first"
	V down || fail "could not take down the stale fabric $F"
fi

note "vfab up $(basename "$CONFIG")"
V up "$CONFIG" >"$VFAB_TMP/up.log" 2>&1 || { show "$VFAB_TMP/up.log"; fail "vfab up failed"; }

# --- IP through the spine ------------------------------------------------------------
note "routes and addresses"
V exec node0 -- ip -4 route show 198.18.0.0/15 >"$VFAB_TMP/route"
grep -E "^198\.18\.0\.0/15 via $GW0 dev eth0" "$VFAB_TMP/route" >/dev/null ||
	{ show "$VFAB_TMP/route"; fail "node0 has no route to 198.18.0.0/15 via $GW0"; }
V exec node4 -- ip -4 -o addr show dev eth0 | grep -F " $N4/24 " >/dev/null ||
	fail "node4's eth0 does not hold $N4/24"

note "ping within leaf0 and across the spine"
V exec node0 -- ping -c 2 -W 2 "$N1" >"$VFAB_TMP/ping1" 2>&1 || { show "$VFAB_TMP/ping1"; fail "node0 -> node1 (same leaf)"; }
V exec node0 -- ping -c 2 -W 2 "$N4" >"$VFAB_TMP/ping4" 2>&1 || { show "$VFAB_TMP/ping4"; fail "node0 -> node4 (across the spine)"; }
grep -E "from $N4: icmp_seq=[0-9]+ ttl=63 " "$VFAB_TMP/ping4" >/dev/null ||
	{ show "$VFAB_TMP/ping4"; fail "the reply from node4 did not cross one router (ttl 63)"; }
# TTL 1: the first hop answers "time to live exceeded", so it must be the gateway.
V exec node0 -- ping -c 1 -W 2 -t 1 "$N4" >"$VFAB_TMP/ttl1" 2>&1 || true
grep -E "^From $GW0 .*[Tt]ime to live exceeded" "$VFAB_TMP/ttl1" >/dev/null ||
	{ show "$VFAB_TMP/ttl1"; fail "the first hop to node4 is not the spine's gateway $GW0"; }

# --- RoCE across the spine -----------------------------------------------------------
# gid_index NODE TYPE: index of the node's IPv4-mapped GID of TYPE on mlx5_0
# ("RoCE v2" or "IB/RoCE v1"), read from its sysfs view as users do.
gid_index()
{
	V exec "$1" -- sh -c '
		p=/sys/class/infiniband/mlx5_0/ports/1
		for g in $p/gids/*; do
			n=${g##*/}
			case $(cat "$g") in 0000:0000:0000:0000:0000:ffff:*) ;; *) continue ;; esac
			[ "$(cat "$p/gid_attrs/types/$n")" = "$0" ] && echo "$n" && exit 0
		done
		exit 1' "$2"
}
V2=$(gid_index node0 "RoCE v2") || fail "node0 has no IPv4 RoCE v2 GID"
V1=$(gid_index node0 "IB/RoCE v1") || fail "node0 has no IPv4 RoCE v1 GID"
note "IPv4 GIDs: RoCE v1 index $V1, RoCE v2 index $V2"

port=18561
# pingpong SERVER_NODE SERVER_IP GID_INDEX NAME: ibv_rc_pingpong between node0
# (client) and SERVER_NODE; leaves the client's and server's status in RC/SRC.
pingpong()
{
	local node=$1 ip=$2 gid=$3 name=$4
	port=$((port + 1))
	start_server "$node" "$VFAB_TMP/$name.srv" ibv_rc_pingpong -d mlx5_0 -g "$gid" -p "$port"
	wait_listen "$node" "$port" 30 || { show "$VFAB_TMP/$name.srv"; fail "$name: server did not listen"; }
	RC=0
	timeout 60 "$VFAB" --fabric "$F" exec node0 -- \
		ibv_rc_pingpong -d mlx5_0 -g "$gid" -p "$port" "$ip" >"$VFAB_TMP/$name.cli" 2>&1 || RC=$?
	SRC=0
	if [ "$RC" = 0 ]; then
		wait_pid "$SERVER_PID" 30 || SRC=$?
	else
		# Nothing reaches the server: it would wait for ever, as on hardware.
		kill_tree "$SERVER_PID"
	fi
}

note "RoCE v2 (GID $V2) across the spine: node0 -> node4"
pingpong node4 "$N4" "$V2" v2-cross
[ "$RC" = 0 ] && [ "$SRC" = 0 ] ||
	{ show "$VFAB_TMP/v2-cross.srv" "$VFAB_TMP/v2-cross.cli"; fail "RoCE v2 across leaves: client $RC, server $SRC"; }
grep -E '^[0-9]+ iters in ' "$VFAB_TMP/v2-cross.cli" >/dev/null || fail "RoCE v2 across leaves: no result line"

note "RoCE v1 (GID $V1) within leaf0: node0 -> node1"
pingpong node1 "$N1" "$V1" v1-leaf
[ "$RC" = 0 ] && [ "$SRC" = 0 ] ||
	{ show "$VFAB_TMP/v1-leaf.srv" "$VFAB_TMP/v1-leaf.cli"; fail "RoCE v1 within a leaf: client $RC, server $SRC"; }

# The connection set-up (TCP) works across the spine, so a failure here is the
# RDMA path: it must be the transport retry error, not anything else.
for gid in "$V1" 0; do
	note "RoCE v1 / link-local (GID $gid) across the spine must fail: node0 -> node4"
	pingpong node4 "$N4" "$gid" "v1-cross-$gid"
	[ "$RC" != 0 ] ||
		{ show "$VFAB_TMP/v1-cross-$gid.cli"; fail "GID $gid (layer 2) reached another leaf"; }
	grep -F "remote address:" "$VFAB_TMP/v1-cross-$gid.cli" >/dev/null ||
		{ show "$VFAB_TMP/v1-cross-$gid.cli"; fail "GID $gid across leaves: the set-up did not even connect"; }
	grep -F "transport retry counter exceeded (12)" "$VFAB_TMP/v1-cross-$gid.cli" >/dev/null ||
		{ show "$VFAB_TMP/v1-cross-$gid.cli"; fail "GID $gid across leaves failed, but not with RETRY_EXC_ERR"; }
done

# --- down leaves nothing -------------------------------------------------------------
note "down"
V down >/dev/null || fail "vfab down"
[ ! -e "/run/vfab/$F" ] || fail "run dir left"
[ ! -e "/dev/shm/vfab-$F" ] || fail "region left"
[ -z "$(ip netns list | grep "vfab-$F-" || true)" ] || fail "namespaces left"
! grep -F "/run/vfab/$F/" /proc/mounts >/dev/null || fail "mounts left"
note "ok"
