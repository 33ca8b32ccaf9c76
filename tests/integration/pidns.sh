#!/usr/bin/env bash
# pidns.sh PORT: an RDMA target in a PID namespace of its own (issue 10,
# finding 10): ib_write_bw's server runs in node1 under `unshare --pid
# --fork` (the host's /proc), the client in node0 writes into it. The server
# must register the pid its peers see, so the WRITEs land and both exit 0.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

port=$1
srv=$VFAB_TMP/server.log cli=$VFAB_TMP/client.log
start_server node1 "$srv" unshare --pid --fork ib_write_bw -d mlx5_0 -x 3 -F -n 2000 -p "$port"
wait_listen node1 "$port" 30 || { show "$srv"; fail "server did not start listening"; }
rc=0
timeout 60 "$VFAB" --fabric "$VFAB_FABRIC" exec node0 -- \
	ib_write_bw -d mlx5_0 -x 3 -F -n 2000 -p "$port" "$NODE1_IP" >"$cli" 2>&1 || rc=$?
src=0
wait_pid "$SERVER_PID" 20 || src=$?
show "$srv" "$cli"
[ "$rc" = 0 ] || fail "client exited $rc"
[ "$src" = 0 ] || fail "server (in its own PID namespace) exited $src"
bw=$(perftest_value "$cli" "BW average" 4)
num_between "${bw:-x}" 0 inf || fail "client printed no bandwidth"
note "ib_write_bw into a PID namespace: $bw MB/s"
