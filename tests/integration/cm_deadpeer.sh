#!/usr/bin/env bash
# cm_deadpeer.sh PORT: tests/integration/cm_deadpeer.c in node1 and in node0,
# each against its own address (the program starts its peers itself): a
# dead peer of the RDMA CM is answered within 2 s in every state a kernel
# answers for it (DREQ to a dead peer, DREQ_SENT, REP_SENT, the MRA states).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

port=$1
prog=$VFAB_BIN/cm_deadpeer
[ -x "$prog" ] || fail "$prog missing (build it first)"
for pair in "node1 $NODE1_IP" "node0 $NODE0_IP"; do
	read -r node addr <<<"$pair"
	log=$VFAB_TMP/$node.log
	rc=0
	timeout 120 "$VFAB" --fabric "$VFAB_FABRIC" exec "$node" -- "$prog" "$addr" "$port" >"$log" 2>&1 || rc=$?
	show "$log"
	oks=$(grep -c '^ok ' "$log" || true)
	[ "$rc" = 0 ] || fail "$node: cm_deadpeer exited $rc"
	[ "$oks" = 5 ] || fail "$node: $oks of 5 cases passed"
	note "$node: a dead peer answered in all 5 states: $(awk '/^ok/ {printf "%s %s ms; ", $2, substr($3, 2)}' "$log")"
	port=$((port + 10))
done
