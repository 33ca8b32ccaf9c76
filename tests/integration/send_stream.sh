#!/usr/bin/env bash
# send_stream.sh PORT: SENDs posted one by one in bursts with no poll in
# between (issue 22), which the provider holds back and delivers in chains,
# arrive whole and in order: RC and UD, 1 to 4096 bytes, every third with
# an immediate; the receiver checks each completion, each payload byte and,
# for UD, the sender's QP and the GRH (send_stream.py). Then RC again with
# most receives posted late: held SENDs meet RNR NAKs, wait and go again.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

port=$1
py=/usr/bin/python3
helper=$(cd "$(dirname "$0")" && pwd)/send_stream.py

for kind in rc ud rc-rnr; do
	note "$kind: 3000 SENDs in bursts of 48, node0 -> node1"
	srv=$VFAB_TMP/$kind.server.log
	start_server node1 "$srv" "$py" "$helper" server "$kind" "$port" 3000 4096
	for _ in $(seq 200); do
		grep -q ready "$srv" 2>/dev/null && break
		sleep 0.1
	done
	grep -q ready "$srv" || { show "$srv"; fail "$kind receiver did not start"; }
	vx node0 "$py" "$helper" client "$kind" "$NODE1_IP" "$port" 3000 4096 ||
		{ show "$srv"; fail "$kind sender failed"; }
	wait_pid "$SERVER_PID" 60 || { show "$srv"; fail "$kind receiver found a wrong message"; }
	show "$srv"
	port=$((port + 1))
done
