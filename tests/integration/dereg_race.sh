#!/usr/bin/env bash
# dereg_race.sh RUNS: bin/dereg_race in node0 (see dereg_race.c), bounded in
# time; it exits 0 only when no WRITE landed after ibv_dereg_mr returned.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

rc=0
timeout 100 "$VFAB" --fabric "$VFAB_FABRIC" exec node0 -- \
	"$VFAB_BIN/dereg_race" -d mlx5_0 -g 3 -n "$1" || rc=$?
[ "$rc" = 0 ] || fail "dereg_race exited $rc (124: it ran out of time)"
