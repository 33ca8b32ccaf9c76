#!/usr/bin/env bash
# node_checks.sh PROGRAM [ARGS...]: runs one of the provider's check programs
# (bin/abi_layout_probe, bin/verbs_errors) inside node0 and node1 as its usage
# says. They print one "ok NAME" / "FAIL NAME: why" line per check; the test
# wants exit status 0, several "ok" lines and no "FAIL" line in both nodes.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ $# -ge 1 ] || fail "usage: node_checks.sh PROGRAM [ARGS...]"
prog=$VFAB_BIN/$1
shift
[ -x "$prog" ] || fail "$prog missing (build it first)"

for node in node0 node1; do
	log=$VFAB_TMP/$node.log
	rc=0
	timeout 300 "$VFAB" --fabric "$VFAB_FABRIC" exec "$node" -- "$prog" "$@" >"$log" 2>&1 || rc=$?
	show "$log"
	oks=$(grep -c '^ok ' "$log" || true)
	fails=$(grep -c '^FAIL' "$log" || true)
	[ "$rc" = 0 ] || fail "$node: $(basename "$prog") exited $rc ($fails failed checks)"
	[ "$fails" = 0 ] || fail "$node: $fails failed checks although the exit status was 0"
	[ "$oks" -ge 3 ] || fail "$node: only $oks checks passed; expected the program's full list"
	note "$node: $(basename "$prog"): $oks checks ok"
done
