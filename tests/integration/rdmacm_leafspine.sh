#!/usr/bin/env bash
# RDMA CM across the spine of configs/leafspine-oversub.yaml, on a fabric of
# its own: rping (RC, 100 verified pings) and ib_write_bw -R from node0
# (leaf0) to node4 (leaf1), routed through the spine; then node4's port is
# taken down (`vfab link`): the CM's REQs are dropped on the fabric and the
# client gets RDMA_CM_EVENT_UNREACHABLE (-ETIMEDOUT) after the CM's retries
# (16 tries of ~4.6 s). `down` leaves nothing.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

F=$VFAB_FABRIC
CONFIG=$VFAB_REPO/configs/leafspine-oversub.yaml
V() { "$VFAB" --fabric "$F" "$@"; }
N4=198.18.1.1
CM_DIR=/run/vfab/$F/cm
srv=$VFAB_TMP/server.log cli=$VFAB_TMP/client.log

spine_cleanup()
{
	vfab_cleanup
	V down >/dev/null 2>&1 || true
}
trap spine_cleanup EXIT

if [ -e "/run/vfab/$F" ] || [ -e "/dev/shm/vfab-$F" ]; then
	V down || fail "could not take down the stale fabric $F"
fi
V up "$CONFIG" >"$VFAB_TMP/up.log" 2>&1 || { show "$VFAB_TMP/up.log"; fail "vfab up failed"; }

# wait_cm_listen PORT: until a live process listens on RDMA CM port PORT.
wait_cm_listen()
{
	local f pid
	for _ in $(seq 300); do
		for f in "$CM_DIR"/*-"$1"; do
			[ -f "$f" ] || continue
			pid=$(awk '{print $2}' "$f" 2>/dev/null || true)
			[ -n "$pid" ] && [ -d "/proc/$pid" ] && return 0
		done
		kill -0 "$SERVER_PID" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

note "rping node0 -> node4 across the spine"
start_server node4 "$srv" rping -s -a "$N4" -p 7191 -v -V -C 100
wait_cm_listen 7191 || { show "$srv"; fail "rping server did not listen"; }
rc=0
timeout 60 "$VFAB" --fabric "$F" exec node0 -- rping -c -a "$N4" -p 7191 -v -V -C 100 >"$cli" 2>&1 || rc=$?
src=0
wait_pid "$SERVER_PID" 30 || src=$?
[ "$rc" = 0 ] && [ "$src" = 0 ] || { show "$srv" "$cli"; fail "rping across the spine: client $rc, server $src"; }
n=$(grep -c '^ping data: rdma-ping-' "$cli" || true)
[ "$n" = 100 ] || fail "client printed $n verified pings, not 100"

note "ib_write_bw -R node0 -> node4 across the spine"
start_server node4 "$srv" ib_write_bw -R -d mlx5_0 -F -p 18651 -n 2000
wait_cm_listen 18651 || { show "$srv"; fail "ib_write_bw server did not listen"; }
rc=0
timeout 120 "$VFAB" --fabric "$F" exec node0 -- ib_write_bw -R -d mlx5_0 -F -p 18651 -n 2000 "$N4" \
	>"$cli" 2>&1 || rc=$?
src=0
wait_pid "$SERVER_PID" 30 || src=$?
[ "$rc" = 0 ] && [ "$src" = 0 ] || { show "$srv" "$cli"; fail "ib_write_bw -R across the spine: client $rc, server $src"; }
bw=$(perftest_value "$cli" 'BW average[MB/sec]' 4)
num_between "${bw:-x}" 100 inf || fail "BW average '${bw:-none}' MB/sec is not > 100"
note "ib_write_bw -R across the spine: $bw MB/sec"

note "node4's port down: the client's REQs are lost, UNREACHABLE after the CM's retries"
start_server node4 "$srv" rping -s -a "$N4" -p 7192 -C 1
wait_cm_listen 7192 || { show "$srv"; fail "rping server did not listen"; }
V link node4/mlx5_0 down >/dev/null || fail "vfab link node4/mlx5_0 down failed"
t0=$(date +%s%N)
rc=0
timeout 150 "$VFAB" --fabric "$F" exec node0 -- rping -c -a "$N4" -p 7192 -C 1 >"$cli" 2>&1 || rc=$?
t1=$(date +%s%N)
show "$cli"
[ "$rc" != 124 ] || fail "the client was still waiting after 150 s"
grep -q 'RDMA_CM_EVENT_UNREACHABLE, error -110' "$cli" || fail "no UNREACHABLE -110"
note "link down: UNREACHABLE after $(((t1 - t0) / 1000000)) ms"
