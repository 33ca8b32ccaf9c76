#!/usr/bin/env bash
# counters_exact.sh PORT: a node's port counters are exact at every read, as
# the kernel's are (it asks the HCA on each read). Three runs of
#   ib_write_bw -d mlx5_0 -x 3 -n 200 -s 1048576
# from node0 to node1 (TCP ports PORT, PORT+1, PORT+2 for the set-up):
# node0's counters/port_xmit_data read in the client's node as the client
# exits, and node1's port_rcv_data read right after, equal the values read
# 2 s later, and each grew by at least the run's 200 MiB (in 4-byte words).
# Then three streams (ports PORT+3..PORT+5) stopped mid-way with SIGSTOP:
# the read as the client stops equals the read 2 s later.
# The counter files are read-only (0444, root's; writing fails, creating
# fails) and counters/ and hw_counters/ list the names the view was written
# with, and `vfab doctor` says the fabric's counters are the FUSE ones. Exit 77 (skipped) where vfabd serves no counters file system (no
# /dev/fuse: its log says so): the tick writer then keeps the old behaviour.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ $# = 1 ] || fail "usage: counters_exact.sh PORT"
base_port=$1
rundir=/run/vfab/$VFAB_FABRIC
dir=/sys/class/infiniband/mlx5_0/ports/1
view=$rundir/nodes/node0/class/infiniband/mlx5_0/ports/1
size=1048576 iters=200
words=$((size * iters / 4))

if ! findmnt -rn -t fuse.vfab "$rundir/counters" >/dev/null; then
	grep counters "$rundir/vfabd.log" || true
	note "no counters file system on $rundir/counters: skipped"
	exit 77
fi

mode=$("$VFAB" --fabric "$VFAB_FABRIC" doctor --json | python3 -c \
	'import json, sys; print(json.load(sys.stdin).get("counters", {}).get("mode"))') || true
[ "$mode" = fuse ] || fail "vfab doctor says the counters are kept by '$mode', not 'fuse'"

counter() # NODE NAME
{
	vx "$1" cat "$dir/counters/$2"
}

for run in 1 2 3; do
	port=$((base_port + run - 1))
	srv=$VFAB_TMP/server$run.log cli=$VFAB_TMP/client$run.log
	args=(-d mlx5_0 -x 3 -n "$iters" -s "$size" -F -p "$port")
	xmit0=$(counter node0 port_xmit_data)
	rcv0=$(counter node1 port_rcv_data)
	start_server node1 "$srv" ib_write_bw "${args[@]}"
	wait_listen node1 "$port" 30 || { show "$srv"; fail "run $run: server did not listen on $port"; }
	# The first read in the client's own node, the moment it exits.
	rc=0
	timeout 180 "$VFAB" --fabric "$VFAB_FABRIC" exec node0 -- sh -c \
		'ib_write_bw "$@"; rc=$?; echo "xmit_now $(cat '"$dir"'/counters/port_xmit_data)"; exit $rc' \
		sh "${args[@]}" "$NODE1_IP" >"$cli" 2>&1 || rc=$?
	rcv_now=$(counter node1 port_rcv_data)
	xmit_now=$(awk '$1 == "xmit_now" { print $2 }' "$cli")
	src=0
	wait_pid "$SERVER_PID" 30 || src=$?
	[ "$rc" = 0 ] || { show "$srv" "$cli"; fail "run $run: client exited $rc"; }
	[ "$src" = 0 ] || { show "$srv" "$cli"; fail "run $run: server exited $src"; }
	sleep 2
	xmit_later=$(counter node0 port_xmit_data)
	rcv_later=$(counter node1 port_rcv_data)
	note "run $run: port_xmit_data $xmit0 -> $xmit_now (as the client exited) -> $xmit_later (2 s later);" \
		"port_rcv_data $rcv0 -> $rcv_now -> $rcv_later"
	[ "$xmit_now" = "$xmit_later" ] ||
		fail "run $run: port_xmit_data read as the client exited ($xmit_now) != 2 s later ($xmit_later)"
	[ "$rcv_now" = "$rcv_later" ] ||
		fail "run $run: port_rcv_data read as the client exited ($rcv_now) != 2 s later ($rcv_later)"
	[ $((xmit_now - xmit0)) -ge "$words" ] ||
		fail "run $run: port_xmit_data grew by $((xmit_now - xmit0)) words, < $words"
	[ $((rcv_now - rcv0)) -ge "$words" ] ||
		fail "run $run: port_rcv_data grew by $((rcv_now - rcv0)) words, < $words"
done
note "three runs: every read as the client exited equals the read 2 s later"

# The same in the middle of a stream, where no teardown separates the last
# bytes from the read: the client (ib_write_bw -D) is stopped with SIGSTOP
# once its bytes flow, and, as soon as every thread of it is stopped,
# port_xmit_data is read in its node, then again 2 s later: equal, and
# above the value before the stream (a file refreshed on a tick would show
# the last tick's value, up to 250 ms of traffic behind).
frozen='
	ib_write_bw "$@" >/dev/null 2>&1 & c=$!
	f=/sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_data
	before=$(cat $f)
	for _ in $(seq 200); do [ "$(cat $f)" -gt "$before" ] && break; sleep 0.05; done
	sleep 0.3
	kill -STOP $c
	for _ in $(seq 1000); do
		all=1
		for t in /proc/$c/task/*/stat; do
			[ "$(cut -d" " -f3 $t)" = T ] || all=0
		done
		[ $all = 1 ] && break
	done
	now=$(cat $f)
	sleep 2
	later=$(cat $f)
	kill -CONT $c
	kill $c
	wait $c
	echo "frozen $before $now $later"'
for run in 1 2 3; do
	port=$((base_port + 2 + run))
	srv=$VFAB_TMP/server-frozen$run.log
	args=(-d mlx5_0 -x 3 -s "$size" -D 5 -F -p "$port")
	start_server node1 "$srv" ib_write_bw "${args[@]}"
	wait_listen node1 "$port" 30 || { show "$srv"; fail "frozen $run: server did not listen on $port"; }
	read -r _ before now later < <(timeout 60 "$VFAB" --fabric "$VFAB_FABRIC" exec node0 -- \
		sh -c "$frozen" sh "${args[@]}" "$NODE1_IP" | grep '^frozen ') ||
		fail "frozen $run: no reading"
	kill_tree "$SERVER_PID"
	note "frozen $run: port_xmit_data $before before the stream, $now as the client stopped, $later 2 s later"
	[ "$now" -gt "$before" ] || fail "frozen $run: no bytes counted before the client was stopped"
	[ "$now" = "$later" ] || fail "frozen $run: read as the client stopped ($now) != 2 s later ($later)"
done
note "a stopped client: every read equals the read 2 s later"

# Read-only, root's 0444, as sysfs attributes.
for sub in counters hw_counters; do
	modes=$(vx node0 sh -c "stat -c '%a %U %G' $dir/$sub/*" | sort -u)
	[ "$modes" = "444 root root" ] || fail "$sub/: files are '$modes', not '444 root root'"
done
unwritten=$(counter node0 port_xmit_data)
vx node0 sh -c "echo 5 >$dir/counters/port_xmit_data" 2>/dev/null &&
	fail "writing counters/port_xmit_data succeeded"
vx node0 sh -c "echo 5 >$dir/hw_counters/lifespan" 2>/dev/null &&
	fail "writing hw_counters/lifespan succeeded"
vx node0 touch "$dir/counters/new" 2>/dev/null && fail "creating a file in counters/ succeeded"
[ "$(counter node0 port_xmit_data)" = "$unwritten" ] || fail "port_xmit_data changed on a write"
note "counter files: 0444 root's, writes and creation fail"

# The same names as the view vfab up wrote (what the nodes listed before).
for sub in counters hw_counters; do
	got=$(vx node0 ls "$dir/$sub")
	want=$(ls "$view/$sub")
	[ "$got" = "$want" ] || fail "$sub/ lists '$(echo $got)', the view '$(echo $want)'"
	[ "$(vx node0 ls "$dir/$sub" | wc -l)" -gt 10 ] || fail "$sub/ lists too few files"
done
note "counters/ and hw_counters/ list the view's names ($(vx node0 ls "$dir/counters" | wc -l) and $(vx node0 ls "$dir/hw_counters" | wc -l))"
