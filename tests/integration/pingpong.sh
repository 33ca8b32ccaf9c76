#!/usr/bin/env bash
# pingpong.sh PORT TOOL [ARGS...]: one of rdma-core's ibv_*_pingpong examples
# between the nodes (server in node1, client in node0), on TCP port PORT for
# the connection set-up. Both sides must exit 0 and report a positive
# throughput ("N bytes in S seconds = X Mbit/sec") and latency.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ $# -ge 2 ] || fail "usage: pingpong.sh PORT TOOL [ARGS...]"
port=$1
shift
srv=$VFAB_TMP/server.log cli=$VFAB_TMP/client.log

start_server node1 "$srv" "$@" -p "$port"
wait_listen node1 "$port" 30 || { show "$srv"; fail "server did not start listening on $port"; }
rc=0
timeout 120 "$VFAB" --fabric "$VFAB_FABRIC" exec node0 -- "$@" -p "$port" "$NODE1_IP" >"$cli" 2>&1 ||
	rc=$?
src=0
wait_pid "$SERVER_PID" 30 || src=$?
show "$srv" "$cli"
[ "$rc" = 0 ] || fail "client exited $rc"
[ "$src" = 0 ] || fail "server exited $src"

for side in server client; do
	log=$VFAB_TMP/$side.log
	line=$(grep -E '^[0-9]+ bytes in [0-9.]+ seconds = [0-9.]+ Mbit/sec$' "$log" || true)
	[ -n "$line" ] || fail "$side printed no throughput line"
	bytes=${line%% *} mbit=$(echo "$line" | awk '{print $(NF-1)}')
	num_between "$bytes" 0 inf || fail "$side moved no bytes: $line"
	num_between "$mbit" 0 inf || fail "$side throughput is not positive: $line"
	usec=$(grep -E '^[0-9]+ iters in [0-9.]+ seconds = [0-9.]+ usec/iter$' "$log" | awk '{print $(NF-1)}')
	num_between "${usec:-x}" 0 100000 || fail "$side latency is not sane: '${usec:-none}' usec/iter"
	note "$*: $side $mbit Mbit/sec, $usec usec/iter"
done
