#!/usr/bin/env bash
# `vfab down` cleans up after a crash, and `vfab up` rejects a bad config
# before creating anything. Uses its own fabric (tclean), not the fixture's:
#  1. up; leave processes running in the nodes (one idle, one holding a verbs
#     context); kill -9 vfabd; down must remove every netns, the region, the
#     run dir, every mount, the holders and the node processes.
#  2. up with a malformed YAML: exit status 2, an error naming FILE:LINE and
#     the field, and no trace of the fabric on the host.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
VFAB_FABRIC=tclean
run=/run/vfab/$VFAB_FABRIC

# traces: what of fabric tclean exists on the host, one word per kind.
traces()
{
	local t=""
	[ -z "$(ip netns list | grep "vfab-$VFAB_FABRIC-" || true)" ] || t="$t netns"
	[ ! -e "/dev/shm/vfab-$VFAB_FABRIC" ] || t="$t region"
	[ ! -e "/dev/shm/vfab-$VFAB_FABRIC.users" ] || t="$t shards"
	[ ! -e "$run" ] || t="$t rundir"
	! grep -q -e "$run/" -e "vfab-$VFAB_FABRIC-" /proc/mounts || t="$t mounts"
	echo "$t"
}

# Never leave tclean behind, whatever fails below.
down_on_exit()
{
	[ -z "$(traces)" ] || "$VFAB" --fabric "$VFAB_FABRIC" down >/dev/null 2>&1 || true
	vfab_cleanup
}
trap down_on_exit EXIT

[ -z "$(traces)" ] || "$VFAB" --fabric "$VFAB_FABRIC" down || fail "stale $VFAB_FABRIC"

note "1. down after kill -9 of vfabd, with processes left in the nodes"
"$VFAB" --fabric "$VFAB_FABRIC" up || fail "vfab up exited $?"
[ -z "$(traces)" ] && fail "vfab up left no trace at all?"
vfabd=$(cat "$run/vfabd.pid")
holders=$(cat "$run"/nodes/*/holder.pid)
[ "$(echo "$holders" | wc -w)" = 2 ] || fail "expected 2 holder pids, got '$holders'"

start_server node0 "$VFAB_TMP/idle.log" sleep 3600
idle=$SERVER_PID
# A server that opened mlx5_0 (region mapped, control-socket HELLO sent) and
# waits for a client that never comes.
start_server node1 "$VFAB_TMP/verbs.log" ibv_rc_pingpong -d mlx5_0 -g 3 -p 18690
verbs=$SERVER_PID
wait_listen node1 18690 30 || { show "$VFAB_TMP/verbs.log"; fail "verbs server did not start"; }
kill -0 "$idle" || fail "idle process in node0 is not running"
node_pids="$idle $verbs $(pgrep -P "$idle" || true) $(pgrep -P "$verbs" || true)"

kill -9 "$vfabd"
for _ in $(seq 50); do
	kill -0 "$vfabd" 2>/dev/null || break
	sleep 0.1
done
kill -0 "$vfabd" 2>/dev/null && fail "vfabd $vfabd survived kill -9"

rc=0
"$VFAB" --fabric "$VFAB_FABRIC" down || rc=$?
[ "$rc" = 0 ] || fail "vfab down after a vfabd crash exited $rc"
left=$(traces)
[ -z "$left" ] || fail "vfab down left behind:$left"
for pid in $holders $node_pids; do
	for _ in $(seq 30); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	# A zombie of ours (not yet waited for) is gone as far as the fabric goes.
	state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || true)
	[ -z "$state" ] || [ "$state" = Z ] || fail "process $pid ($(cat "/proc/$pid/comm" 2>/dev/null)) survived vfab down"
done
note "down removed netns, region, run dir, mounts, holders and node processes"

note "2. malformed config"
bad=$VFAB_TMP/bad.yaml
cat >"$bad" <<'YAML'
version: 1
cluster:
  name: broken
nodes:
  - id: node0
    hcas:
      - name: mlx5_0
        ports: lots
  - id: node1
YAML
rc=0
"$VFAB" --fabric "$VFAB_FABRIC" up "$bad" >"$VFAB_TMP/bad.out" 2>&1 || rc=$?
show "$VFAB_TMP/bad.out"
[ "$rc" = 2 ] || fail "vfab up with a malformed config exited $rc, expected 2"
grep -q "bad.yaml:8: .*ports" "$VFAB_TMP/bad.out" || fail "the error does not name bad.yaml:8 and ports"
left=$(traces)
[ -z "$left" ] || fail "vfab up with a bad config created:$left"

printf 'nodes: [\n  - id: node0\n' >"$bad"
rc=0
"$VFAB" --fabric "$VFAB_FABRIC" up "$bad" >"$VFAB_TMP/bad.out" 2>&1 || rc=$?
show "$VFAB_TMP/bad.out"
[ "$rc" = 2 ] || fail "vfab up with invalid YAML syntax exited $rc, expected 2"
grep -q "bad.yaml:[0-9]" "$VFAB_TMP/bad.out" || fail "the syntax error does not name bad.yaml:LINE"
left=$(traces)
[ -z "$left" ] || fail "vfab up with invalid YAML created:$left"
note "bad configs: exit 2, FILE:LINE: FIELD named, nothing created"
