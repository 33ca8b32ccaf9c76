#!/usr/bin/env bash
# perftest.sh PORT TOOL [ARGS...]: a perftest tool (ib_write_bw, ib_read_lat,
# ...) between the nodes on mlx5_0 with the IPv4 RoCE v2 GID (index 3):
# server in node1, client in node0, TCP port PORT for the set-up. Both sides
# must exit 0; the client's result must be sane: bandwidth tools > 100 MB/s
# (atomics, 8-byte operations: > 0), latency tools 0 < t_typical < 1000 us.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ $# -ge 2 ] || fail "usage: perftest.sh PORT TOOL [ARGS...]"
port=$1 tool=$2
shift
srv=$VFAB_TMP/server.log cli=$VFAB_TMP/client.log
# -F: the measurement must not fail on a CPU frequency governor warning.
common=(-d mlx5_0 -x 3 -F -p "$port")

start_server node1 "$srv" "$@" "${common[@]}"
wait_listen node1 "$port" 30 || { show "$srv"; fail "server did not start listening on $port"; }
rc=0
timeout 180 "$VFAB" --fabric "$VFAB_FABRIC" exec node0 -- "$@" "${common[@]}" "$NODE1_IP" \
	>"$cli" 2>&1 || rc=$?
src=0
wait_pid "$SERVER_PID" 30 || src=$?
show "$srv" "$cli"
[ "$rc" = 0 ] || fail "client exited $rc"
[ "$src" = 0 ] || fail "server exited $src"

case $tool in
*_bw)
	bw=$(perftest_value "$cli" 'BW average[MB/sec]' 4)
	rate=$(perftest_value "$cli" 'BW average[MB/sec]' 5)
	floor=100
	[[ $tool != ib_atomic_bw ]] || floor=0
	num_between "${bw:-x}" "$floor" inf || fail "BW average '${bw:-none}' MB/sec is not > $floor"
	num_between "${rate:-x}" 0 inf || fail "message rate '${rate:-none}' Mpps is not > 0"
	note "$tool: BW average $bw MB/sec, $rate Mpps"
	;;
*_lat)
	typ=$(perftest_value "$cli" 't_typical[usec]' 5)
	avg=$(perftest_value "$cli" 't_typical[usec]' 6)
	num_between "${typ:-x}" 0 1000 || fail "t_typical '${typ:-none}' usec is not in (0, 1000)"
	num_between "${avg:-x}" 0 1000 || fail "t_avg '${avg:-none}' usec is not in (0, 1000)"
	note "$tool: t_typical $typ usec, t_avg $avg usec"
	;;
*) fail "unknown perftest tool $tool" ;;
esac
