#!/usr/bin/env bash
# liveness.sh PORT: a SEND stream (ib_send_bw -D 8, node0 -> node1) starts
# while one client floods vfabd's control socket with 512 KiB of STATUS
# requests (~5 s of vfabd's time here) and reads nothing, and while vfabd is
# stopped for 3 s (SIGSTOP: the server's HELLO times out). The stream must
# finish in bounded time and keep its objects: vfabd must reap nothing of a
# process that is alive (it used to free the server's objects once it got to
# the abandoned HELLO, mid-stream, and the stream stalled).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

port=$1
rundir=/run/vfab/$VFAB_FABRIC
log=$rundir/vfabd.log
srv=$VFAB_TMP/server.log cli=$VFAB_TMP/client.log flood=$VFAB_TMP/flood.log
[ -S "$rundir/vfabd.sock" ] || fail "no control socket at $rundir/vfabd.sock"
mark=$(wc -l <"$log")

python3 "$(dirname "$0")/ctl_flood.py" "$rundir/vfabd.sock" 512 >"$flood" 2>&1 &
VFAB_SERVER_PIDS+=("$!")
for _ in $(seq 50); do grep -q flooding "$flood" && break; sleep 0.1; done
grep -q flooding "$flood" || { show "$flood"; fail "the flood client did not start"; }

vfabd=$(cat "$rundir/vfabd.pid")
trap 'kill -CONT "$vfabd" 2>/dev/null || true; vfab_cleanup' EXIT
kill -STOP "$vfabd"
start_server node1 "$srv" ib_send_bw -d mlx5_0 -x 3 -F -D 8 -p "$port"
sleep 3
kill -CONT "$vfabd"
wait_listen node1 "$port" 30 || { show "$srv" "$flood"; fail "server did not start listening"; }
# The server's FIFOs (async events, channels) are its user's alone.
modes=$(find "$rundir/fifo" -type p -printf '%m %u %p\n')
[ -n "$modes" ] || fail "no FIFO in $rundir/fifo while the server runs"
echo "$modes" | awk '$1 != "600" { bad = 1 } END { exit bad }' ||
	{ echo "$modes"; fail "a FIFO is not mode 0600"; }
rc=0
timeout 40 "$VFAB" --fabric "$VFAB_FABRIC" exec node0 -- \
	ib_send_bw -d mlx5_0 -x 3 -F -D 8 -p "$port" "$NODE1_IP" >"$cli" 2>&1 || rc=$?
src=0
wait_pid "$SERVER_PID" 30 || src=$?
new=$(tail -n +"$((mark + 1))" "$log")
show "$srv" "$cli"
echo "===== vfabd.log (this test)"
echo "$new" | grep -v 'counters' | tail -n 20 || true
[ "$rc" = 0 ] || fail "client exited $rc (124: stalled)"
[ "$src" = 0 ] || fail "server exited $src"
bw=$(perftest_bw "$cli" "$srv")
num_between "${bw:-x}" 0 inf || fail "client printed no bandwidth"
note "ib_send_bw: $bw MB/s"
if echo "$new" | grep -E 'reaped [1-9][0-9]* object' >/dev/null; then
	fail "vfabd reaped the objects of a process during the flood"
fi
note "stream finished under a STATUS flood; nothing reaped"
