#!/usr/bin/env bash
# qperf.sh PORT: qperf (issue 21) between node1 (server) and node0, as a RoCE
# port answers it. Its RC tests connect through the RDMA CM (-cm1) and must
# all report a result. qperf runs UC and UD without the CM whatever -cm says,
# addressing by LID alone, which a RoCE port refuses (an address vector or
# handle without a GRH is EINVAL in the kernel): those fail here as on a
# ConnectX's RoCE port, with qperf's own messages.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

port=$1
tests="rc_bw rc_bi_bw rc_lat rc_rdma_write_bw rc_rdma_write_lat rc_rdma_read_bw
	rc_rdma_read_lat rc_compare_swap_mr rc_fetch_add_mr"
srv=$VFAB_TMP/server.log cli=$VFAB_TMP/client.log

start_server node1 "$srv" qperf -lp "$port"
wait_listen node1 "$port" 20 || { show "$srv"; fail "qperf server did not listen"; }

note "RC over the RDMA CM, polling (-cp 1)"
# shellcheck disable=SC2086
timeout 120 "$VFAB" --fabric "$VFAB_FABRIC" exec node0 -- qperf -lp "$port" -cm1 -cp 1 -t 1 \
	"$NODE1_IP" $tests >"$cli" 2>&1 || { show "$srv" "$cli"; fail "qperf RC tests failed"; }
show "$cli"
for t in $tests; do
	awk -v t="$t:" '$1 == t {getline; if ($1 == "bw" || $1 == "latency" || $1 == "msg_rate") ok = 1}
		END {exit !ok}' "$cli" || fail "qperf $t reported no result"
done

# refused TEST MESSAGE: qperf TEST fails with MESSAGE, as on a RoCE port. Each
# against a server of its own: when both sides fail at once, qperf's server
# child can hang in exit() (the client's out-of-band error arrives, and its
# SIGURG handler calls exit() again), and the parent serves no one else
# until that child ends; kill_tree ends it.
refused()
{
	local rc=0
	kill_tree "$SERVER_PID"
	start_server node1 "$srv" qperf -lp "$port"
	wait_listen node1 "$port" 20 || { show "$srv"; fail "qperf server did not listen"; }
	timeout 60 "$VFAB" --fabric "$VFAB_FABRIC" exec node0 -- qperf -lp "$port" -t 1 \
		"$NODE1_IP" "$1" >"$cli" 2>&1 || rc=$?
	show "$cli"
	[ "$rc" != 0 ] && grep -q "$2" "$cli" || fail "$1: expected \"$2\" (no GRH on a RoCE port)"
}

note "UC and UD: LID addressing, refused as on a RoCE port"
refused uc_bw "failed to modify QP to RTR"
refused ud_bw "failed to create address handle: Invalid argument"
