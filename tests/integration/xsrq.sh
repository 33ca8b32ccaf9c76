#!/usr/bin/env bash
# xsrq.sh PORT [ARGS...]: rdma-core's ibv_xsrq_pingpong (XRC: an XRC domain,
# an XRC SRQ, XRC_SEND and XRC_RECV QPs, SENDs naming the peer's SRQ)
# between the nodes, server in node1, client in node0, on TCP port PORT.
# Both sides must exit 0 and report success.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ $# -ge 1 ] || fail "usage: xsrq.sh PORT [ARGS...]"
port=$1
shift
srv=$VFAB_TMP/server.log cli=$VFAB_TMP/client.log
args=(-d mlx5_0 -g 3 -p "$port" "$@")

start_server node1 "$srv" ibv_xsrq_pingpong "${args[@]}"
wait_listen node1 "$port" 30 || { show "$srv"; fail "server did not start listening on $port"; }
rc=0
timeout 120 "$VFAB" --fabric "$VFAB_FABRIC" exec node0 -- ibv_xsrq_pingpong "${args[@]}" "$NODE1_IP" \
	>"$cli" 2>&1 || rc=$?
src=0
wait_pid "$SERVER_PID" 30 || src=$?
show "$srv" "$cli"
[ "$rc" = 0 ] || fail "client exited $rc"
[ "$src" = 0 ] || fail "server exited $src"
for log in "$srv" "$cli"; do
	grep -qx success "$log" || fail "$(basename "$log" .log) did not report success"
	grep -q 'SRQN' "$log" || fail "$(basename "$log" .log) printed no SRQ number"
done
note "ibv_xsrq_pingpong $*: both sides succeeded"
