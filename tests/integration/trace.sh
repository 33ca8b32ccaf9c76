#!/usr/bin/env bash
# vfab trace (issue 24): a hung job's QPs explained in one command. A pyverbs
# process in node0 (trace_qps.py) holds QPs A and B connected to each other
# with no receive posted, and QP D connected to QP C of its child. vfab trace
# must say that a SEND to A or B would wait for a receive (RNR), that D's
# peer is gone once the child is killed, that A's port is down while it is,
# and drop every QP once the process ends.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

vf()
{
	"$VFAB" --fabric "$VFAB_FABRIC" "$@"
}

# waits_of QPN: the "waits" of that QP in vfab trace --json ("absent" if none).
waits_of()
{
	vf trace --json | python3 -c '
import json, sys
q = [q for q in json.load(sys.stdin)["qps"] if q["qpn"] == int(sys.argv[1], 16)]
print(q[0]["waits"] if q else "absent")' "$1"
}

# until_waits QPN PATTERN: up to 5 s for QPN's waits to match PATTERN (grep -E).
until_waits()
{
	local got
	for _ in $(seq 50); do
		got=$(waits_of "$1")
		grep -Eq "$2" <<<"$got" && return 0
		sleep 0.1
	done
	fail "QP $1 waits '$got', want /$2/"
}

restore()
{
	touch "$VFAB_TMP/stop"
	vf link node0/mlx5_0 up >/dev/null 2>&1 || true
	vfab_cleanup
}
trap restore EXIT

/usr/bin/python3 -c 'import pyverbs' || fail "/usr/bin/python3 cannot import pyverbs"
start_server node0 "$VFAB_TMP/qps.log" /usr/bin/python3 "$VFAB_REPO/tests/integration/trace_qps.py" \
	mlx5_0 3 "$VFAB_TMP/qps" "$VFAB_TMP/stop"
holder=$SERVER_PID
for _ in $(seq 100); do
	[ -s "$VFAB_TMP/qps" ] && break
	sleep 0.1
done
[ -s "$VFAB_TMP/qps" ] || { show "$VFAB_TMP/qps.log"; fail "trace_qps.py did not set up its QPs"; }
read -r a b c d child <"$VFAB_TMP/qps"
note "QPs A $a, B $b (each other's peer), D $d (peer C $c of pid $child)"

vf trace >"$VFAB_TMP/trace.txt" || fail "vfab trace failed"
cat "$VFAB_TMP/trace.txt"
grep -q "^NODE .*WAITS$" "$VFAB_TMP/trace.txt" || fail "vfab trace printed no table header"
grep -q "$a .*python3 .*peer has no receive posted" "$VFAB_TMP/trace.txt" ||
	fail "vfab trace does not show A's owner and that its peer has no receive posted"
until_waits "$b" "^peer has no receive posted"
until_waits "$d" "^peer has no receive posted"

kill -9 "$child"
until_waits "$d" "^peer (process|QP) gone$"
note "after kill -9 of $child: D waits '$(waits_of "$d")'"

vf link node0/mlx5_0 down >/dev/null || fail "vfab link down"
until_waits "$a" "^its port is down$"
vf link node0/mlx5_0 up >/dev/null || fail "vfab link up"
until_waits "$a" "^peer has no receive posted"

touch "$VFAB_TMP/stop"
wait_pid "$holder" 20 || fail "trace_qps.py did not end"
for q in "$a" "$b" "$d"; do
	until_waits "$q" "^absent$"
done
note "vfab trace explained RNR, a dead peer and a port down, and dropped the QPs"
