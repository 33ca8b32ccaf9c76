#!/usr/bin/env bash
# Fixture set-up of the integration tests: brings up the default 2-node fabric
# under the test fabric name and checks that both nodes answer.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

if [ -e "/run/vfab/$VFAB_FABRIC" ] || [ -e "/dev/shm/vfab-$VFAB_FABRIC" ]; then
	note "a previous run left fabric $VFAB_FABRIC behind; taking it down first"
	"$VFAB" --fabric "$VFAB_FABRIC" down || fail "could not take down the stale fabric"
fi

start=$(date +%s%N)
"$VFAB" --fabric "$VFAB_FABRIC" up || fail "vfab up exited $?"
note "vfab up took $((($(date +%s%N) - start) / 1000000)) ms"

for node in node0 node1; do
	[ "$(vx "$node" hostname)" = "$node" ] || fail "hostname in $node is not $node"
done
"$VFAB" --fabric "$VFAB_FABRIC" status
