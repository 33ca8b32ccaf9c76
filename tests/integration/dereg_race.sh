#!/usr/bin/env bash
# dereg_race.sh RUNS: bin/dereg_race in node0 (see dereg_race.c), bounded in
# time, racing WRITEs and then SENDs (-s) against ibv_dereg_mr; each exits 0
# only when nothing landed after ibv_dereg_mr returned.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

for mode in "" -s; do
	rc=0
	timeout 80 "$VFAB" --fabric "$VFAB_FABRIC" exec node0 -- \
		"$VFAB_BIN/dereg_race" -d mlx5_0 -g 3 -n "$1" $mode || rc=$?
	[ "$rc" = 0 ] || fail "dereg_race ${mode:-(WRITEs)} exited $rc (124: it ran out of time)"
done
