#!/usr/bin/env bash
# The README demo's NCCL part: one all_reduce correctness check and a short
# bandwidth sweep across node0 and node1 of the default fabric, through NCCL's
# IB transport over vfab's emulated mlx5_0, with the NCCL log lines that prove it.
# Usage (root, repo root): tests/gpu/nccl_demo.sh
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp -d)
summary="$out/summary.md"
fabric=nccldemo
: >"$summary"
. "$repo/tests/gpu/lib.sh"
cleanup() { "$vfab" --fabric "$fabric" down >/dev/null 2>&1 || true; }
trap cleanup EXIT
"$vfab" --fabric "$fabric" up "${libdir_args[@]}"
rc=0
run_job demo 2 -- --max-bytes $((256 << 20)) || rc=$?
grep -E "^node0: (CHECK|RESULT| +size| +[0-9]+ +[0-9]+ )" "$out/demo.log" | sed "s/^node0: //" || true
prove_ib "$out/demo.log" 2 || rc=1
cat "$summary"
[ $rc = 0 ] && echo "NCCL demo: PASS (log: $out/demo.log)" || echo "NCCL demo: FAIL (log: $out/demo.log)"
exit $rc
