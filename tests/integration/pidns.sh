#!/usr/bin/env bash
# pidns.sh PORT: RDMA with a process in a PID namespace of its own (issue
# 10). Uses TCP ports PORT..PORT+4.
#  1. ib_write_bw's server in node1 under `unshare --pid --fork` (the host's
#     /proc), the client in node0 writes into it: the server must register
#     the pid its peers see.
#  2. The same tools with a /proc of the namespace's own (`--mount-proc`,
#     the host's then only at the node's <rundir>/proc) on either side:
#     ib_write_bw and ibv_rc_pingpong with the nested process as client
#     (requester), then as server. Its own copies must not go by the pids
#     of its namespace. Every tool runs under a KILL timeout in the
#     namespace, so a stall fails the test instead of hanging it.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

port=$1
srv=$VFAB_TMP/server.log cli=$VFAB_TMP/client.log

# pair SRV_WRAP CLI_WRAP PORT TOOL...: TOOL's server in node1, client in node0,
# each behind its wrapper (a word list, may be empty); fails unless both exit 0.
pair()
{
	local sw=$1 cw=$2 p=$3 rc=0 src=0
	shift 3
	# shellcheck disable=SC2086 # the wrappers are word lists
	start_server node1 "$srv" $sw timeout -s KILL 60 "$@" -p "$p"
	wait_listen node1 "$p" 30 || { show "$srv"; fail "server ($*) did not start listening"; }
	# shellcheck disable=SC2086
	"$VFAB" --fabric "$VFAB_FABRIC" exec node0 -- $cw timeout -s KILL 60 \
		"$@" -p "$p" "$NODE1_IP" >"$cli" 2>&1 || rc=$?
	wait_pid "$SERVER_PID" 20 || src=$?
	show "$srv" "$cli"
	[ "$rc" = 0 ] || fail "client (${cw:-host pids}) of $1 exited $rc"
	[ "$src" = 0 ] || fail "server (${sw:-host pids}) of $1 exited $src"
}

own="unshare --pid --fork"
mnt="unshare --pid --fork --mount-proc"
wbw=(ib_write_bw -d mlx5_0 -x 3 -F -n 2000)
rcpp=(ibv_rc_pingpong -d mlx5_0 -g 3 -n 200)

pair "$own" "" "$port" "${wbw[@]}"
bw=$(perftest_value "$cli" "BW average" 4)
num_between "${bw:-x}" 0 inf || fail "client printed no bandwidth"
note "ib_write_bw into a PID namespace: $bw MB/s"

pair "" "$mnt" $((port + 1)) "${wbw[@]}"
bw=$(perftest_value "$cli" "BW average" 4)
num_between "${bw:-x}" 0 inf || fail "client printed no bandwidth"
note "ib_write_bw from a PID namespace with its own /proc: $bw MB/s"
pair "$mnt" "" $((port + 2)) "${wbw[@]}"
note "ib_write_bw into a PID namespace with its own /proc: ok"
pair "" "$mnt" $((port + 3)) "${rcpp[@]}"
pair "$mnt" "" $((port + 4)) "${rcpp[@]}"
note "ibv_rc_pingpong both ways with a PID namespace with its own /proc: ok"
