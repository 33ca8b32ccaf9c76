#!/usr/bin/env bash
# nccl_pattern.sh PORT: bin/nccl_pattern across the nodes, as NCCL runs
# between two hosts: the receiver (--server) in node1, the sender (--client)
# in node0, their connection details exchanged over TCP port PORT. Both must
# exit 0 with no "FAIL" line and their full list of "ok" lines.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ $# -eq 1 ] || fail "usage: nccl_pattern.sh PORT"
port=$1
prog=$VFAB_BIN/nccl_pattern
[ -x "$prog" ] || fail "$prog missing (build it first)"
srv=$VFAB_TMP/receiver.log cli=$VFAB_TMP/sender.log

start_server node1 "$srv" "$prog" -d mlx5_0 --server -p "$port"
wait_listen node1 "$port" 30 || { show "$srv"; fail "the receiver did not listen on $port"; }
rc=0
timeout 240 "$VFAB" --fabric "$VFAB_FABRIC" exec node0 -- "$prog" -d mlx5_0 --client "$NODE1_IP" \
	-p "$port" >"$cli" 2>&1 || rc=$?
src=0
wait_pid "$SERVER_PID" 60 || src=$?
show "$srv" "$cli"
[ "$rc" = 0 ] || fail "the sender exited $rc"
[ "$src" = 0 ] || fail "the receiver exited $src"
for log in "$srv" "$cli"; do
	! grep -q '^FAIL' "$log" || fail "$(basename "$log" .log): failed checks although it exited 0"
	oks=$(grep -c '^ok ' "$log" || true)
	[ "$oks" -ge 20 ] || fail "$(basename "$log" .log): only $oks checks passed"
	note "$(basename "$log" .log): $oks checks ok; $(grep '^# ' "$log" | tail -1)"
done
