#!/usr/bin/env bash
# pid_reuse.sh: bin/pid_reuse in node0 (see pid_reuse.c) with the fabric's
# vfabd stopped meanwhile (resumed on any exit). Exit 77: skipped.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

vfabd=$(cat "/run/vfab/$VFAB_FABRIC/vfabd.pid")
trap 'kill -CONT "$vfabd" 2>/dev/null || true; vfab_cleanup' EXIT
rc=0
timeout 60 "$VFAB" --fabric "$VFAB_FABRIC" exec node0 -- \
	"$VFAB_BIN/pid_reuse" -d mlx5_0 -g 3 -s "$vfabd" || rc=$?
[ "$rc" = 77 ] && exit 77
[ "$rc" = 0 ] || fail "pid_reuse exited $rc"
