#!/usr/bin/env bash
# The fault drill: an all_reduce loop runs in every node (nccl_check.py
# --loop), one HCA port goes down in the middle of it, and the job must end
# with an error, never hang silently. Prints one DRILL line: when the port
# went down, how long the ranks took to end and how, and the first error
# lines of the log. Exit 0 when the job ended with an error within HANG
# seconds, 1 otherwise (it worked on, hung, or never started).
#
# Usage: fault_drill.sh VFAB FABRIC NNODES N/HCA HANG LOG -- COMMAND...
#   COMMAND runs in every node (NNODES of them) through `vfab run`, as a
#   bash -c string.
set -uo pipefail
vfab=$1 fabric=$2 nn=$3 port=$4 hang=$5 log=$6
shift 6
[ "${1:-}" = "--" ] && shift

"$vfab" --fabric "$fabric" run -- bash -c "$*" >"$log" 2>&1 &
job=$!
# Every rank in its loop, with a second's progress behind it.
for _ in $(seq 600); do
	[ "$(grep -c 'LOOP rank [0-9]* [0-9]* all_reduces' "$log")" -ge "$nn" ] && break
	kill -0 "$job" 2>/dev/null || break
	sleep 0.1
done
if ! kill -0 "$job" 2>/dev/null; then
	echo "DRILL FAIL: the loop ended before the port went down (see $log)"
	exit 1
fi
down=$(date +%s.%N)
"$vfab" --fabric "$fabric" link "$port" down >>"$log" 2>&1
end=""
for _ in $(seq $((hang * 10))); do
	if ! kill -0 "$job" 2>/dev/null; then
		end=$(date +%s.%N)
		break
	fi
	sleep 0.1
done
"$vfab" --fabric "$fabric" link "$port" up >/dev/null 2>&1
if [ -z "$end" ]; then
	kill "$job" 2>/dev/null
	wait "$job" 2>/dev/null
	echo "DRILL FAIL: still running ${hang} s after $port went down: a silent hang (see $log)"
	exit 1
fi
wait "$job"
rc=$?
after=$(python3 -c "print(f'{$end - $down:.2f}')")
if grep -q 'LOOP rank [0-9]* done' "$log"; then
	echo "DRILL FAIL: a rank finished its loop although $port went down (see $log)"
	exit 1
fi
echo "DRILL $port down; the job ended ${after} s later with status $rc"
grep -E 'LOOP rank [0-9]* error|NCCL WARN|Got completion|watchdog|Signal|exitcode' "$log" | head -6
[ "$rc" != 0 ]
